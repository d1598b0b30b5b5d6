// read_npy_bytes: the in-memory .npy reader the fuzzers drive (docs/fuzzing.md). Headers that
// declare more data than present, or dims that overflow, are refused before any allocation.

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "frame/core/npy.h"

namespace frame {
namespace {

// A format 1.0 .npy image with `header` (padded as numpy does) followed by `data`.
std::string npy(const std::string& header, const std::string& data) {
  std::string h = header;
  h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}

TEST(NpyBytes, ReadsValuesWrittenByHand) {
  const float v[3] = {1.5F, -2.0F, 0.25F};
  const std::string data(reinterpret_cast<const char*>(v), sizeof(v));
  Result<Tensor> t =
      read_npy_bytes(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", data));
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ASSERT_EQ(t->shape(), Shape({3}));
  EXPECT_EQ(t->data<float>()[0], 1.5F);
  EXPECT_EQ(t->data<float>()[1], -2.0F);
  EXPECT_EQ(t->data<float>()[2], 0.25F);
}

TEST(NpyBytes, HugeShapeIsRefusedBeforeAllocating) {
  // 2^40 floats declared, 4 bytes present: an error naming the expected size, no 4 TB alloc.
  Result<Tensor> t = read_npy_bytes(
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", "abcd"));
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), StatusCode::kIo);
  EXPECT_NE(t.status().message().find("4398046511104 bytes"), std::string::npos)
      << t.status().message();
}

TEST(NpyBytes, OverflowingDimsAreErrors) {
  Result<Tensor> big = read_npy_bytes(
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", ""));
  ASSERT_FALSE(big.is_ok());
  EXPECT_NE(big.status().message().find("overflows"), std::string::npos) << big.status().message();
  Result<Tensor> product = read_npy_bytes(
      npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""));
  ASSERT_FALSE(product.is_ok());
}

TEST(NpyBytes, TruncatedHeaderAndBadMagic) {
  EXPECT_FALSE(read_npy_bytes("").is_ok());
  EXPECT_FALSE(read_npy_bytes("\x93NUMPY").is_ok());
  EXPECT_FALSE(read_npy_bytes(std::string("\x93NUMPX\x01\x00\x00\x00", 10)).is_ok());
  const std::string whole =
      npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0'));
  EXPECT_TRUE(read_npy_bytes(whole).is_ok());
  EXPECT_FALSE(read_npy_bytes(whole.substr(0, whole.size() - 1)).is_ok());
  EXPECT_FALSE(read_npy_bytes(whole.substr(0, 20)).is_ok());
}

}  // namespace
}  // namespace frame
