// Tests for the core layer: Status/Result, dtypes and dispatch_dtype, Half/BFloat16, Tensor,
// npy round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "frame/core/dtype.h"
#include "frame/core/npy.h"
#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/core/tolerance.h"

namespace frame {
namespace {

Result<int> half_of(int x) {
  if (x % 2) return invalid_argument("{} is odd", x);
  return x / 2;
}
Result<int> quarter_of(int x) {
  FRAME_ASSIGN_OR_RETURN(int h, half_of(x));
  return half_of(h);
}

TEST(Status, ResultPropagatesErrors) {
  EXPECT_EQ(*quarter_of(8), 2);
  Result<int> r = quarter_of(6);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "3 is odd");
  EXPECT_EQ(r.status().to_string(), "invalid_argument: 3 is odd");
}

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto d = static_cast<DTypeCode>(i);
    Result<DTypeCode> back = parse_dtype(dtype_name(d));
    ASSERT_TRUE(back.is_ok());
    EXPECT_EQ(*back, d);
  }
  EXPECT_FALSE(parse_dtype("f128").is_ok());
  EXPECT_EQ(dtype_set_to_string(kFloatDTypes), "{f32, f64, f16, bf16}");
}

// dispatch_dtype must reach every dtype with the matching C++ type and size.
TEST(DType, DispatchCoversEveryDType) {
  std::set<int> seen;
  for (int i = 0; i < kNumDTypes; ++i) {
    auto d = static_cast<DTypeCode>(i);
    Status s = dispatch_dtype(d, [&]<typename T>() {
      EXPECT_EQ(kDTypeOf<T>, d);
      EXPECT_EQ(sizeof(T), dtype_size(d));
      seen.insert(i);
    });
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kNumDTypes));
}

TEST(DType, DispatchRejectsDTypeOutsideSet) {
  int calls = 0;
  Status s = dispatch_dtype<kFloatDTypes>(DTypeCode::kInt32, [&]<typename T>() { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "dtype i32 is not supported here (supported: {f32, f64, f16, bf16})");
  // A functor returning Status passes its error through.
  Status e = dispatch_dtype(
      DTypeCode::kInt8, [&]<typename T>() -> Status { return invalid_argument("from functor"); });
  EXPECT_EQ(e.message(), "from functor");
}

// Reference bit patterns from IEEE 754 binary16 tables (numpy.float16(x).view(uint16)).
TEST(DType, HalfConversions) {
  struct Case {
    float f;
    uint16_t bits;
  };
  const Case cases[] = {{0.0f, 0x0000},
                        {-0.0f, 0x8000},
                        {1.0f, 0x3c00},
                        {-2.0f, 0xc000},
                        {65504.0f, 0x7bff},
                        {65520.0f, 0x7c00},
                        {1e-8f, 0x0000},
                        {5.9604645e-08f, 0x0001},
                        {6.1035156e-05f, 0x0400},
                        {0.1f, 0x2e66},
                        {std::numeric_limits<float>::infinity(), 0x7c00},
                        {1.0009765625f, 0x3c01},
                        {1.00048828125f, 0x3c00} /* tie to even */};
  for (const Case& c : cases) {
    EXPECT_EQ(Half(c.f).bits, c.bits) << c.f;
  }
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::nanf("")))));
  EXPECT_EQ(static_cast<float>(Half(0.1f)), 0.0999755859375f);
  Half sub;
  sub.bits = 0x0001;
  EXPECT_EQ(static_cast<float>(sub), 5.9604644775390625e-08f);
}

TEST(DType, BFloat16Conversions) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(3.140625f).bits, 0x4049);
  EXPECT_EQ(static_cast<float>(BFloat16(1.00390625f)), 1.0f);  // tie -> even
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
}

TEST(Tensor, NumelAndBytesRejectBadShapes) {
  EXPECT_EQ(*checked_numel(std::vector<int64_t>{2, 3, 4}), 24);
  EXPECT_EQ(*checked_numel(std::vector<int64_t>{}), 1);
  EXPECT_EQ(*checked_numel(std::vector<int64_t>{5, 0}), 0);
  Result<int64_t> neg = checked_numel(std::vector<int64_t>{2, -1});
  EXPECT_EQ(neg.status().message(), "shape [2,-1] has negative dim -1 at axis 1");
  Result<int64_t> big = checked_numel(std::vector<int64_t>{1LL << 40, 1LL << 40});
  EXPECT_EQ(big.status().code(), StatusCode::kOutOfRange);
  Result<size_t> bytes = checked_nbytes(DTypeCode::kFloat64, std::vector<int64_t>{1LL << 61});
  EXPECT_EQ(bytes.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(*checked_nbytes(DTypeCode::kFloat16, std::vector<int64_t>{3, 5}), 30u);
  EXPECT_FALSE(Tensor::empty(DTypeCode::kFloat32, {-3}).is_ok());
}

TEST(Tensor, StorageIsAlignedAndShared) {
  Tensor t = *Tensor::zeros(DTypeCode::kFloat32, {3, 5});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment, 0u);
  EXPECT_EQ(t.nbytes(), 60u);
  Tensor alias = t;
  alias.data<float>()[7] = 2.5f;
  EXPECT_EQ(t.data<float>()[7], 2.5f);
  Tensor copy = t.clone();
  copy.data<float>()[7] = 1.0f;
  EXPECT_EQ(t.data<float>()[7], 2.5f);
  float buf[4] = {1, 2, 3, 4};
  Tensor v = *Tensor::view(DTypeCode::kFloat32, {2, 2}, buf);
  EXPECT_FALSE(v.owns_storage());
  EXPECT_EQ(v.element_as_double(3), 4.0);
  EXPECT_FALSE(v.reshaped({3}).is_ok());
  EXPECT_EQ(v.reshaped({4})->shape(), (Shape{4}));
}

TEST(Tensor, BroadcastShapes) {
  EXPECT_EQ(*broadcast_shapes(std::vector<int64_t>{2, 1, 4}, std::vector<int64_t>{3, 1}),
            (Shape{2, 3, 4}));
  EXPECT_EQ(*broadcast_shapes(std::vector<int64_t>{}, std::vector<int64_t>{5}), (Shape{5}));
  EXPECT_EQ(*broadcast_shapes(std::vector<int64_t>{0, 1}, std::vector<int64_t>{1, 3}),
            (Shape{0, 3}));
  Result<Shape> bad = broadcast_shapes(std::vector<int64_t>{2, 3}, std::vector<int64_t>{4});
  EXPECT_EQ(bad.status().message(),
            "shapes [2,3] and [4] do not broadcast: dim 1 of the result is 3 vs 4");
}

TEST(Npy, RoundTripEveryDType) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto d = static_cast<DTypeCode>(i);
    Tensor t = *Tensor::empty(d, {2, 3});
    auto* bytes = static_cast<uint8_t*>(t.raw_data());
    for (size_t b = 0; b < t.nbytes(); ++b) bytes[b] = static_cast<uint8_t>(b * 7 % 2);
    std::string path = ::testing::TempDir() + "/rt_" + std::string(dtype_name(d)) + ".npy";
    ASSERT_TRUE(write_npy(path, t).is_ok());
    Result<Tensor> back =
        read_npy(path, d == DTypeCode::kBFloat16 ? std::optional(d) : std::nullopt);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_TRUE(back->bitwise_equal(t)) << dtype_name(d);
  }
  EXPECT_EQ(read_npy("/nonexistent.npy").status().code(), StatusCode::kIo);
}

TEST(Npy, TruncatedFileIsAnError) {
  std::string path = ::testing::TempDir() + "/trunc.npy";
  Tensor t = *Tensor::zeros(DTypeCode::kFloat32, {100});
  ASSERT_TRUE(write_npy(path, t).is_ok());
  ASSERT_EQ(truncate(path.c_str(), 200), 0);
  Result<Tensor> r = read_npy(path);
  EXPECT_EQ(r.status().code(), StatusCode::kIo);
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos);
}

// numpy writes a Fortran-order (column-major) array when saving e.g. `a.T` or an
// np.asfortranarray: the first index varies fastest in the file. Values are 100*i + 10*j + k
// at index (i, j, k), so the expected row-major order is known by hand.
TEST(Npy, FortranOrderIsReadRowMajor) {
  const std::string path = ::testing::TempDir() + "/fortran.npy";
  {
    std::string header = "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 2), }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    const uint16_t hlen = static_cast<uint16_t>(header.size());
    std::fwrite(&hlen, 2, 1, f);
    std::fwrite(header.data(), 1, header.size(), f);
    for (int k = 0; k < 2; ++k) {
      for (int j = 0; j < 3; ++j) {
        for (int i = 0; i < 2; ++i) {
          const int32_t v = 100 * i + 10 * j + k;
          std::fwrite(&v, 4, 1, f);
        }
      }
    }
    std::fclose(f);
  }
  Result<Tensor> r = read_npy(path);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->shape(), (Shape{2, 3, 2}));
  const auto* d = r->data<int32_t>();
  const std::vector<int32_t> expected = {0, 1, 10, 11, 20, 21, 100, 101, 110, 111, 120, 121};
  EXPECT_EQ(std::vector<int32_t>(d, d + 12), expected);
}

// A header longer than 65535 bytes (a rank-25000 shape) does not fit format 1.0's 16-bit
// length: the writer must switch to format 2.0 (4-byte length), keep the data 64-byte aligned,
// and the reader must take it back.
TEST(Npy, VeryLongHeaderUsesFormat2) {
  const std::string path = ::testing::TempDir() + "/high_rank.npy";
  Result<Tensor> t = Tensor::zeros(DTypeCode::kFloat32, Shape(25000, 1));
  ASSERT_TRUE(t.is_ok());
  t->data<float>()[0] = 2.5f;
  ASSERT_TRUE(write_npy(path, *t).is_ok());
  std::FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  unsigned char head[12];
  ASSERT_EQ(std::fread(head, 1, 12, f), 12u);
  std::fclose(f);
  EXPECT_EQ(head[6], 2);  // major version
  const uint32_t hlen = head[8] | (head[9] << 8) | (head[10] << 16) | (uint32_t{head[11]} << 24);
  EXPECT_GT(hlen, 65535u);
  EXPECT_EQ((12 + hlen) % 64, 0u);
  Result<Tensor> r = read_npy(path);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->rank(), 25000);
  EXPECT_EQ(r->data<float>()[0], 2.5f);
}

}  // namespace

// BUILD-011's comparison (frame/core/tolerance.h): integers exactly in their own width, a NaN or
// infinity on one side only reported with an infinite error, the worst error / tolerance ratio.
TEST(CompareTensors, IntegersExactlyAndNonFiniteErrors) {
  const Tolerance exact{};
  const int64_t big = (int64_t{1} << 62) + 1;  // differs from 2^62 only beyond double's 53 bits
  CompareResult r = compare_tensors(Tensor::from_vector<int64_t>({2}, {big, 0}),
                                    Tensor::from_vector<int64_t>({2}, {big - 1, 0}), exact);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.max_abs_error, 1.0);
  EXPECT_EQ(r.first_mismatch, 0);
  const uint64_t top = ~uint64_t{0};
  r = compare_tensors(Tensor::from_vector<uint64_t>({1}, {top}),
                      Tensor::from_vector<uint64_t>({1}, {top - 1}), Tolerance{0.0, 1.0});
  EXPECT_TRUE(r.ok);  // one step apart, atol 1
  EXPECT_EQ(r.worst_ratio, 1.0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  r = compare_tensors(Tensor::from_vector<float>({2}, {nan, 1.0F}),
                      Tensor::from_vector<float>({2}, {1.0F, 1.0F}), Tolerance{1e-3, 1e-4});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(std::isinf(r.max_abs_error));
  r = compare_tensors(Tensor::from_vector<float>({2}, {nan, 2.0F}),
                      Tensor::from_vector<float>({2}, {nan, 2.001F}), Tolerance{1e-3, 1e-4});
  EXPECT_TRUE(r.ok);  // NaN == NaN; |2 - 2.001| = 1e-3 <= 1e-4 + 1e-3 * 2.001
  EXPECT_NEAR(r.worst_ratio, 0.001 / (1e-4 + 1e-3 * 2.001), 1e-3);
}

}  // namespace frame
