#pragma once
/// \file
/// Helpers shared by the onednn_ew tests: deterministic inputs and the onednn-vs-cpu checks
/// (bit for bit, or within the f32 tolerance).

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "common/tolerance.h"

namespace frame::test {

/// A tensor of `shape` holding i % 251 + i / 7 (element i, cast to T): every value distinct
/// enough to catch a misplaced element, none out of range for u8.
template <typename T>
Tensor iota_tensor(const Shape& shape) {
  std::vector<T> v(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(i % 251 + i / 7);
  return Tensor::from_vector<T>(shape, v);
}

/// iota_tensor of dtype `dt` (u8, i16, i64; f32 for every other dtype).
inline Tensor make(DTypeCode dt, const Shape& shape) {
  switch (dt) {
    case DTypeCode::kUInt8:
      return iota_tensor<uint8_t>(shape);
    case DTypeCode::kInt16:
      return iota_tensor<int16_t>(shape);
    case DTypeCode::kInt64:
      return iota_tensor<int64_t>(shape);
    default:
      return iota_tensor<float>(shape);
  }
}

/// Runs `call` on onednn and on cpu and expects every output identical, bit for bit; `what`
/// names the case in failures.
inline void expect_identical(const OpCall& call, const std::string& what) {
  auto fast = run_op(call, "onednn");
  ASSERT_TRUE(fast.is_ok()) << what << ": " << fast.status().to_string();
  auto ref = run_op(call, "cpu");
  ASSERT_TRUE(ref.is_ok()) << what << ": " << ref.status().to_string();
  ASSERT_EQ(fast->size(), ref->size()) << what;
  for (size_t i = 0; i < ref->size(); ++i) {
    const Tensor& a = (*fast)[i];
    const Tensor& b = (*ref)[i];
    ASSERT_EQ(a.shape(), b.shape()) << what;
    ASSERT_EQ(a.nbytes(), b.nbytes()) << what;
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0) << what << " output " << i;
  }
}

/// Runs `call` on onednn and on cpu and expects output 0 to match within the f32 tolerance.
inline void expect_matches_cpu(const OpCall& call, const std::string& what) {
  auto fast = run_op(call, "onednn");
  ASSERT_TRUE(fast.is_ok()) << what << ": " << fast.status().to_string();
  auto ref = run_op(call, "cpu");
  ASSERT_TRUE(ref.is_ok()) << what << ": " << ref.status().to_string();
  const CompareResult r =
      compare_tensors((*fast)[0], (*ref)[0], tolerance_for(DTypeCode::kFloat32));
  EXPECT_TRUE(r.ok) << what << ": " << r.message;
}

}  // namespace frame::test
