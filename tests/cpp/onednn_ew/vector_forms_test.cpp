// Vector forms of the elementwise ops on the `onednn` backend (src/backends/onednn/kernels/
// ew_vec-inl.h) against the cpu kernels, i.e. the scalar functors of
// include/frame/ops/elementwise.h, within the BUILD-011 op tolerance: special values (inf, NaN,
// -0, denormals, overflow edges), random values, tails that are no multiple of the vector width
// and sizes 0/1/7/1000/100003. Also the max errors of erf/exp/tanh against double precision.

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backends/onednn/kernels/ew_vec.h"
#include "common/op_runner.h"
#include "common/tolerance.h"
#include "cpp/onednn_ew/ew_test_util.h"
#include "frame/ops/elementwise.h"
#include "frame/ops/kernel_registry.h"
// The Highway targets the onednn kernels compile and this CPU runs, and the switch between them.
#include "backends/onednn/kernels/hwy_targets.h"
#include "hwy/targets.h"  // hwy::TargetName (inline: nothing of libhwy.so is linked)

namespace frame {
namespace {

using test::expect_matches_cpu;
using test::OpCall;
using test::run_op;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Max |vector - double-precision function| the onednn kernels guarantee (docs/backends/
// onednn.md, "Compiled fused elementwise kernels"): erf absolute; exp and tanh relative.
constexpr double kErfMaxAbsError = 2e-7;
constexpr double kExpMaxRelError = 2.5e-7;  // 2 ulp
constexpr double kTanhMaxRelError = 5e-7;   // 4 ulp

std::vector<float> special_values() {
  return {0.0f,     -0.0f,    1.0f,    -1.0f,      0.5f,       -0.5f,  1.5f,    2.5f,
          -2.5f,    3.5f,     kInf,    -kInf,      kNaN,       1e-40f, -1e-40f, 1.17549435e-38f,
          3.0e38f,  -3.0e38f, 88.0f,   88.7f,      88.73f,     89.0f,  -87.0f,  -88.0f,
          -100.0f,  -104.0f,  -110.0f, 20.0f,      -20.0f,     4.0f,   -4.0f,   3.9f,
          1e-3f,    -1e-3f,   1e-7f,   6.0f,       -6.0f,      -3.0f,  3.0f,    38999.0f,
          39001.0f, -1e5f,    1e20f,   8388607.5f, 8388609.0f, 1e30f,  -17.5f,  0.1f};
}

// Special values first, then random values: half in [-10, 10], half spread over magnitudes.
std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v = special_values();
  v.resize(std::min(v.size(), n));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> small(-10.0f, 10.0f);
  std::uniform_real_distribution<float> expo(-30.0f, 30.0f);
  std::bernoulli_distribution sign;
  while (v.size() < n) {
    if (v.size() % 2 == 0) {
      v.push_back(small(rng));
    } else {
      const float m = std::pow(2.0f, expo(rng));
      v.push_back(sign(rng) ? m : -m);
    }
  }
  return v;
}

Tensor vec_tensor(Shape shape, uint32_t seed) {
  const int64_t n = numel_of(shape);
  return Tensor::from_vector<float>(std::move(shape), values(static_cast<size_t>(n), seed));
}

// Runs `call` on onednn and cpu and compares (BUILD-011 op class).
struct UnaryCase {
  std::string op;
  ir::AttrMap attrs;
};

std::vector<UnaryCase> unary_cases() {
  return {{"abs", {}},
          {"neg", {}},
          {"identity", {}},
          {"exp", {}},
          {"log", {}},
          {"sqrt", {}},
          {"reciprocal", {}},
          {"sin", {}},
          {"cos", {}},
          {"tanh", {}},
          {"tan", {}},
          {"asin", {}},
          {"acos", {}},
          {"atan", {}},
          {"sinh", {}},
          {"cosh", {}},
          {"asinh", {}},
          {"acosh", {}},
          {"atanh", {}},
          {"erf", {}},
          {"sigmoid", {}},
          {"relu", {}},
          {"leaky_relu", {{"alpha", 0.1}}},
          {"leaky_relu", {}},
          {"elu", {{"alpha", 0.5}}},
          {"selu", {}},
          {"celu", {{"alpha", 2.0}}},
          {"softplus", {}},
          {"softsign", {}},
          {"hard_sigmoid", {{"alpha", 0.3}, {"beta", 0.4}}},
          {"hard_swish", {}},
          {"gelu", {}},
          {"gelu", {{"approximate", std::string("tanh")}}},
          {"mish", {}},
          {"floor", {}},
          {"ceil", {}},
          {"round", {}},
          {"sign", {}}};
}

// The dispatch (hwy_targets.h) runs the target it reports: the loops' table of each supported
// target names that target, the best comes first and is what runs unforced, and the portable
// baseline is always there.
TEST(VectorForms, TheDispatchRunsTheChosenTarget) {
  const std::vector<int64_t> targets = backends::onednn::vec_targets_supported();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.front(), backends::onednn::vec_target());
  EXPECT_EQ(targets.back(), HWY_STATIC_TARGET);
  EXPECT_EQ(std::string(backends::onednn::vec_table().target), hwy::TargetName(targets.front()));
  for (int64_t target : targets) {
    backends::onednn::set_vec_target_for_test(target);
    EXPECT_EQ(backends::onednn::vec_target(), target);
    EXPECT_EQ(std::string(backends::onednn::vec_table().target), hwy::TargetName(target));
  }
  backends::onednn::set_vec_target_for_test(0);
  EXPECT_EQ(backends::onednn::vec_target(), targets.front());
}

// libframe.so needs none of libhwy.so (its load runs a ~4 ms static initializer in every
// process): after the kernels above ran, no Highway library is mapped into this process.
TEST(VectorForms, NoHighwayLibraryIsLoaded) {
  ASSERT_GT(backends::onednn::vec_table().gemm_strip, 0u);
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) GTEST_SKIP() << "no /proc/self/maps";
  std::array<char, 4096> line{};
  int mapped = 0;
  while (std::fgets(line.data(), static_cast<int>(line.size()), maps) != nullptr) {
    if (std::strstr(line.data(), "libhwy") != nullptr) {
      ++mapped;
      ADD_FAILURE() << "mapped: " << line.data();
    }
  }
  std::fclose(maps);
  EXPECT_EQ(mapped, 0);
}

// Every Highway target this machine supports (the kernels pick one at prepare), so an AVX-512
// machine also checks the AVX2, SSE4 and portable code.
TEST(VectorForms, EveryUnaryFormMatchesItsScalarFunctorOnEveryTarget) {
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    const std::string t = hwy::TargetName(target);
    for (const UnaryCase& c : unary_cases()) {
      for (int64_t n : {0, 1, 7, 1000, 100003}) {
        OpCall call{c.op, {vec_tensor({n}, 7)}, c.attrs};
        call.num_threads = 2;
        expect_matches_cpu(call, t + " " + c.op + " n=" + std::to_string(n));
      }
    }
    backends::onednn::set_vec_target_for_test(0);
  }
}

// Ops whose vector form only holds on part of the line (other lanes take std): inputs inside
// that part, so the vector path itself is checked on every target.
TEST(VectorForms, RangedFormsInsideTheirValidRange) {
  struct Domain {
    const char* op;
    float lo, hi;
  };
  const std::vector<Domain> domains = {
      {"asin", -1.0f, 1.0f},    {"acos", -1.0f, 1.0f},   {"atanh", -0.999f, 0.999f},
      {"acosh", 1.0f, 1000.0f}, {"sinh", -87.0f, 87.0f}, {"cosh", -87.0f, 87.0f},
      {"tan", -100.0f, 100.0f}, {"sin", -3e4f, 3e4f},    {"cos", -3e4f, 3e4f},
      {"atan", -1e4f, 1e4f},    {"asinh", -1e6f, 1e6f},  {"log", 1e-30f, 1e30f}};
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    for (const Domain& dom : domains) {
      std::mt19937 rng(11);
      std::uniform_real_distribution<float> dist(dom.lo, dom.hi);
      std::vector<float> v(4099);
      for (float& x : v) x = dist(rng);
      expect_matches_cpu({dom.op, {Tensor::from_vector<float>({4099}, v)}},
                         std::string(hwy::TargetName(target)) + " " + dom.op + " in range");
    }
    backends::onednn::set_vec_target_for_test(0);
  }
}

TEST(VectorForms, BinaryFormsOnEveryTarget) {
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    for (const char* op : {"add", "sub", "mul", "div", "min", "max", "equal", "less", "less_equal",
                           "greater", "greater_equal"}) {
      for (int64_t n : {1, 7, 1000}) {
        expect_matches_cpu({op, {vec_tensor({n}, 3), vec_tensor({n}, 4)}},
                           std::string(hwy::TargetName(target)) + " " + op);
      }
    }
    backends::onednn::set_vec_target_for_test(0);
  }
}

// The loops a first-seen shape's softmax and depthwise conv run (VecTable::softmax_rows and
// dw_plane; prefer_shape_agnostic, run_once) on every target: their masked tails go through a stack
// buffer below AVX-512, a path this machine's own target never takes.
TEST(VectorForms, SoftmaxRowsAndDepthwisePlanesOnEveryTarget) {
  using ints = std::vector<int64_t>;
  struct Dw {
    Shape x;
    int64_t k, stride, pad, dilation;
  };
  const std::vector<Dw> dws = {{{1, 3, 9, 37}, 3, 1, 1, 1},  {{2, 2, 11, 21}, 5, 2, 2, 1},
                               {{1, 2, 7, 40}, 3, 3, 1, 1},  {{1, 4, 6, 5}, 3, 1, 2, 2},
                               {{1, 2, 18, 33}, 3, 2, 1, 1}, {{1, 1, 3, 3}, 3, 2, 0, 1}};
  // Finite values of one scale for the conv: it sums in another order than the cpu kernel
  // (values spread over 2^+-30 cancel differently).
  const auto finite = [](Shape shape, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<float> v(static_cast<size_t>(numel_of(shape)));
    for (float& e : v) e = dist(rng);
    return Tensor::from_vector<float>(std::move(shape), v);
  };
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    const std::string t = hwy::TargetName(target);
    for (int64_t n : {1, 3, 9, 16, 17, 40}) {
      // 7 rows: one block of four interleaved rows and three alone.
      OpCall call{"softmax", {vec_tensor({7, n}, 5)}, {{"axis", int64_t{-1}}}};
      call.prefer_shape_agnostic = true;
      expect_matches_cpu(call, t + " softmax n=" + std::to_string(n));
    }
    for (const Dw& c : dws) {
      const int64_t ch = c.x[1];
      OpCall call{"conv",
                  {finite(c.x, 6), finite({ch, 1, c.k, c.k}, 7), finite({ch}, 8)},
                  {{"group", ch},
                   {"strides", ints{c.stride, c.stride}},
                   {"pads", ints{c.pad, c.pad, c.pad, c.pad}},
                   {"dilations", ints{c.dilation, c.dilation}}}};
      call.prefer_shape_agnostic = true;
      call.run_once = true;
      expect_matches_cpu(call, t + " depthwise " + shape_to_string(c.x) + " k" +
                                   std::to_string(c.k) + " s" + std::to_string(c.stride));
    }
    backends::onednn::set_vec_target_for_test(0);
  }
}

// VecTable::gemm (row-major B, attention's products) and gemm_packed over gemm_pack's strips
// (constant weights) on every target, against a double-precision sum: row tails of the 6-row
// tile and of the 96-row block, column tails of one and two vectors, K of 0 (zeros), within
// one 256-deep block and over three, alpha, and leading dims wider than the rows.
TEST(VectorForms, GemmLoopsOnEveryTarget) {
  struct Case {
    size_t m, n, k;
  };
  const std::vector<Case> cases = {{1, 1, 1},     {5, 3, 7},     {6, 16, 64}, {7, 17, 33},
                                   {13, 40, 256}, {97, 33, 300}, {3, 8, 0},   {100, 65, 600}};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    const backends::onednn::VecTable& vt = backends::onednn::vec_table();
    ASSERT_NE(vt.gemm, nullptr);
    ASSERT_NE(vt.gemm_packed, nullptr);
    ASSERT_GT(vt.gemm_strip, 0u);
    for (const Case& c : cases) {
      const size_t lda = c.k + 3, ldb = c.n + 5, ldc = c.n + 2;
      std::vector<float> a(c.m * lda), b(std::max<size_t>(c.k, 1) * ldb);
      for (float& v : a) v = dist(rng);
      for (float& v : b) v = dist(rng);
      const float alpha = 0.75f;
      std::vector<double> want(c.m * c.n, 0.0);
      for (size_t i = 0; i < c.m; ++i) {
        for (size_t j = 0; j < c.n; ++j) {
          double sum = 0.0;
          for (size_t p = 0; p < c.k; ++p) sum += double(a[i * lda + p]) * b[p * ldb + j];
          want[i * c.n + j] = alpha * sum;
        }
      }
      const size_t strips = (c.n + vt.gemm_strip - 1) / vt.gemm_strip;
      std::vector<float> panels(strips * c.k * vt.gemm_strip);
      vt.gemm_pack(b.data(), ldb, c.k, c.n, panels.data());
      for (bool packed : {false, true}) {
        std::vector<float> got(c.m * ldc, 42.0f);  // overwritten, never read (k = 0 too)
        if (packed) {
          vt.gemm_packed(c.m, c.n, c.k, alpha, a.data(), lda, panels.data(), got.data(), ldc);
        } else {
          vt.gemm(c.m, c.n, c.k, alpha, a.data(), lda, b.data(), ldb, got.data(), ldc);
        }
        double worst = 0.0;
        for (size_t i = 0; i < c.m; ++i) {
          for (size_t j = 0; j < c.n; ++j) {
            worst = std::max(worst, std::abs(got[i * ldc + j] - want[i * c.n + j]));
          }
          for (size_t j = c.n; j < ldc; ++j) {
            EXPECT_EQ(got[i * ldc + j], 42.0f) << "wrote past column " << c.n;
          }
        }
        // Sums of k products of |x| <= 1 in f32: within k * 2^-23 of the exact sum, and more.
        EXPECT_LE(worst, 1e-6 * (double(c.k) + 1.0) * 4.0)
            << hwy::TargetName(target) << " " << c.m << "x" << c.n << "x" << c.k
            << (packed ? " packed" : "");
      }
    }
    backends::onednn::set_vec_target_for_test(0);
  }
}

TEST(VectorForms, RegisteredForExactlyTheOpsWithAVectorForm) {
  const auto& kr = ops::KernelRegistry::global();
  for (const UnaryCase& c : unary_cases()) {
    EXPECT_NE(kr.find(c.op, "onednn"), nullptr) << c.op;
  }
  for (const char* op :
       {"add", "sub", "mul", "div", "sum", "mean", "max", "min", "clip", "prelu", "pow", "where",
        "equal", "less", "less_equal", "greater", "greater_equal"}) {
    EXPECT_NE(kr.find(op, "onednn"), nullptr) << op;
  }
  // No vector form (yet): these stay on the cpu kernels.
  for (const char* op : {"mod", "is_nan", "not", "and", "bit_shift"}) {
    EXPECT_EQ(kr.find(op, "onednn"), nullptr) << op;
  }
}

TEST(VectorForms, NonFp32IsDeclinedSoTheChainFallsBack) {
  OpCall call{
      "add",
      {Tensor::from_vector<double>({2}, {1.0, 2.0}), Tensor::from_vector<double>({2}, {3.0, 4.0})}};
  auto r = run_op(call, "onednn");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << r.status().to_string();
}

struct BroadcastCase {
  Shape a, b;
};

TEST(VectorForms, BinaryOpsWithEveryBroadcastKind) {
  const std::vector<BroadcastCase> shapes = {
      {{1000}, {1000}},             // same shape
      {{7}, {}},                    // scalar right
      {{}, {100003}},               // scalar left
      {{64, 300}, {300}},           // bias over the last dim (short row)
      {{3, 2500}, {1, 2500}},       // long row, tiles wrap across rows
      {{64, 33}, {64, 1}},          // column broadcast: each element repeated 33 times
      {{2, 3, 17, 19}, {3, 1, 1}},  // per-channel: each repeated over a plane, wrapping per image
      {{1, 5, 40, 41}, {1, 5, 1, 1}},  // planes longer than a tile (1640 > 512 elements)
      {{3, 700}, {3, 1}},              // rows across tile boundaries
      {{2, 4, 6, 8}, {4, 6, 1}},       // a run of two dims, repeated over the last
      {{5, 1, 7}, {1, 6, 1}},          // both sides broadcast (the left one gathered)
      {{4, 3, 5}, {4, 1, 5}},          // a broadcast dim inside: gathered
  };
  for (const char* op : {"add", "sub", "mul", "div", "min", "max", "equal", "less", "less_equal",
                         "greater", "greater_equal"}) {
    for (const BroadcastCase& s : shapes) {
      OpCall call{op, {vec_tensor(s.a, 1), vec_tensor(s.b, 2)}};
      call.num_threads = 2;
      expect_matches_cpu(call, std::string(op) + " " + fmt::format("{} vs {}", s.a, s.b));
    }
  }
}

TEST(VectorForms, PReluWithBroadcastSlopes) {
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    for (const Shape& slope : {Shape{}, Shape{3, 1, 1}, Shape{17}, Shape{2, 3, 5, 17}}) {
      OpCall call{"prelu", {vec_tensor({2, 3, 5, 17}, 1), vec_tensor(slope, 2)}};
      call.num_threads = 2;
      expect_matches_cpu(
          call, std::string(hwy::TargetName(target)) + fmt::format(" prelu slope {}", slope));
    }
    backends::onednn::set_vec_target_for_test(0);
  }
}

// Pow with a scalar exponent: integer exponents (repeated squaring), 0.5 (sqrt) and others
// (std::pow per lane), over special bases; a tensor exponent is declined (cpu runs it).
TEST(VectorForms, PowWithScalarExponent) {
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    for (float e : {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, -1.0f, -2.0f, -3.0f, 7.0f, 0.5f, 1.7f, -2.5f,
                    kNaN, kInf, -kInf}) {
      for (int64_t n : {7, 1000}) {
        OpCall call{"pow", {vec_tensor({n}, 9), Tensor::scalar<float>(e)}};
        expect_matches_cpu(call, std::string(hwy::TargetName(target)) +
                                     " pow e=" + std::to_string(e) + " n=" + std::to_string(n));
      }
    }
    backends::onednn::set_vec_target_for_test(0);
  }
  auto r = run_op({"pow", {vec_tensor({8}, 1), vec_tensor({8}, 2)}}, "onednn");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << r.status().to_string();
}

Tensor bool_tensor(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(static_cast<size_t>(numel_of(shape)));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng() % 2);
  Tensor t = *Tensor::empty(DTypeCode::kBool, shape);
  if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  return t;
}

TEST(VectorForms, WhereWithBroadcastConditionAndValues) {
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    const std::vector<std::array<Shape, 3>> shapes = {
        {Shape{1001}, Shape{1001}, Shape{1001}},
        {Shape{40, 1}, Shape{40, 33}, Shape{}},
        {Shape{1, 4, 1, 9}, Shape{2, 4, 9, 9}, Shape{9}}};
    for (const auto& s : shapes) {
      OpCall call{"where", {bool_tensor(s[0], 4), vec_tensor(s[1], 5), vec_tensor(s[2], 6)}};
      call.num_threads = 2;
      expect_matches_cpu(call, std::string(hwy::TargetName(target)) +
                                   fmt::format(" where {} {} {}", s[0], s[1], s[2]));
    }
    backends::onednn::set_vec_target_for_test(0);
  }
  // f64 values: declined, the cpu kernel runs it.
  auto r = run_op({"where",
                   {bool_tensor({4}, 1), Tensor::from_vector<double>({4}, {1, 2, 3, 4}),
                    Tensor::from_vector<double>({4}, {5, 6, 7, 8})}},
                  "onednn");
  EXPECT_FALSE(r.is_ok());
}

TEST(VectorForms, MinMaxPropagateNaNAndKeepSignedZeros) {
  const Tensor a = Tensor::from_vector<float>({6}, {kNaN, 1.0f, kNaN, 0.0f, -0.0f, 2.0f});
  const Tensor b = Tensor::from_vector<float>({6}, {1.0f, kNaN, kNaN, -0.0f, 0.0f, -kInf});
  for (const char* op : {"min", "max"}) {
    auto fast = run_op({op, {a, b}}, "onednn");
    ASSERT_TRUE(fast.is_ok()) << fast.status().to_string();
    const float* y = (*fast)[0].data<float>();
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]) && std::isnan(y[2])) << op;
    // Equal zeros: the first operand wins, as in the scalar functor.
    EXPECT_TRUE(std::signbit(y[3]) == false && std::signbit(y[4]) == true) << op;
  }
}

TEST(VectorForms, VariadicFoldsAndMean) {
  for (const char* op : {"sum", "mean", "max", "min"}) {
    for (size_t k : {1, 2, 3, 5}) {
      std::vector<Tensor> ins;
      for (size_t i = 0; i < k; ++i) {
        ins.push_back(i % 2 == 0 ? vec_tensor({33, 77}, static_cast<uint32_t>(i))
                                 : vec_tensor({77}, static_cast<uint32_t>(i)));
      }
      OpCall call{op, ins};
      call.num_threads = 2;
      expect_matches_cpu(call, std::string(op) + " k=" + std::to_string(k));
    }
  }
}

TEST(VectorForms, ClipWithPresentAndAbsentBounds) {
  const Tensor x = vec_tensor({1003}, 5);
  const Tensor lo = Tensor::scalar<float>(-2.0f);
  const Tensor hi = Tensor::scalar<float>(3.0f);
  expect_matches_cpu({"clip", {x, lo, hi}}, "clip both");
  expect_matches_cpu({"clip", {x, lo}}, "clip min");
  expect_matches_cpu({"clip", {x, Tensor(), hi}}, "clip max");
  expect_matches_cpu({"clip", {x}}, "clip none");
  expect_matches_cpu({"clip", {x, hi, lo}}, "clip min > max");
}

TEST(VectorForms, AttributeDefaultsComeFromTheScalarFunctor) {
  // leaky_relu without alpha: the functor's default 0.01, by hand.
  auto r = run_op({"leaky_relu", {Tensor::from_vector<float>({2}, {-2.0f, 3.0f})}}, "onednn");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_FLOAT_EQ((*r)[0].data<float>()[0], -0.02f);
  EXPECT_FLOAT_EQ((*r)[0].data<float>()[1], 3.0f);
}

// Dense sweep of [-lim, lim] plus every special value; returns max abs and rel error vs `ref`.
template <typename Ref>
std::pair<double, double> max_error(const std::string& op, float lim, Ref ref) {
  std::vector<float> xs;
  const int n = 400001;
  for (int i = 0; i < n; ++i) xs.push_back(-lim + 2.0f * lim * static_cast<float>(i) / (n - 1));
  for (float s : special_values()) {
    if (std::isfinite(s) && std::fabs(s) <= lim) xs.push_back(s);
  }
  const auto count = static_cast<int64_t>(xs.size());
  auto r = run_op({op, {Tensor::from_vector<float>({count}, xs)}}, "onednn");
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return {1e9, 1e9};
  double abs_err = 0, rel_err = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double e = ref(static_cast<double>(xs[i]));
    const double a = (*r)[0].data<float>()[i];
    abs_err = std::max(abs_err, std::fabs(a - e));
    if (e != 0 && std::isfinite(e)) rel_err = std::max(rel_err, std::fabs(a - e) / std::fabs(e));
  }
  return {abs_err, rel_err};
}

TEST(VectorForms, ErfExpTanhMaxErrorAgainstDouble) {
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    const std::string t = hwy::TargetName(target);
    const auto [erf_abs, erf_rel] = max_error("erf", 6.0f, [](double x) { return std::erf(x); });
    EXPECT_LE(erf_abs, kErfMaxAbsError) << t << " rel " << erf_rel;
    const auto [exp_abs, exp_rel] = max_error("exp", 88.0f, [](double x) { return std::exp(x); });
    EXPECT_LE(exp_rel, kExpMaxRelError) << t << " abs " << exp_abs;
    const auto [tanh_abs, tanh_rel] =
        max_error("tanh", 20.0f, [](double x) { return std::tanh(x); });
    EXPECT_LE(tanh_rel, kTanhMaxRelError) << t << " abs " << tanh_abs;
    std::printf("%s: erf max abs %.3g, exp max rel %.3g, tanh max rel %.3g\n", t.c_str(), erf_abs,
                exp_rel, tanh_rel);
    backends::onednn::set_vec_target_for_test(0);
  }
}

// erf-GELU's negative side is 0.5 x (1 + erf(x / sqrt 2)): 1 + erf must keep the relative
// accuracy of erfc(|x|) where erf nears -1, up to the float spacing below 1 (2^-24: erfc(4) =
// 1.5e-8 rounds erf to -1), a far tighter bound there than kErfMaxAbsError. Over [-4, -1] on
// every target, against std::erfc in double.
TEST(VectorForms, ErfTailKeepsOnePlusErfRelativeAccuracy) {
  constexpr double kTailMaxRelError = 1.5e-6;
  std::vector<float> xs;
  const int n = 300001;
  for (int i = 0; i < n; ++i) xs.push_back(-4.0f + 3.0f * static_cast<float>(i) / (n - 1));
  const Tensor x = Tensor::from_vector<float>({static_cast<int64_t>(xs.size())}, xs);
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    auto r = run_op({"erf", {x}}, "onednn");
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    double worst = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double e = std::erfc(-static_cast<double>(xs[i]));
      const double got = 1.0 + static_cast<double>((*r)[0].data<float>()[i]);
      worst = std::max(worst, (std::fabs(got - e) - std::ldexp(1.0, -24)) / e);
    }
    EXPECT_LE(worst, kTailMaxRelError) << hwy::TargetName(target);
    backends::onednn::set_vec_target_for_test(0);
  }
}

// ---- Transpose of 4-byte elements (VecTable::transpose32) ----

// onednn's transpose moves every 4-byte element bit for bit, through the 8 x 8 (4 x 4) register
// blocks and the scalar edges, on every target: shapes with and without whole blocks, a K past
// the kernel's 128-column chunks, a source dim split over several 128-element items, and 1
// and 2 threads. Expected values by index arithmetic; the bits are compared, so a signalling
// NaN, -0 and a denormal must come through unchanged.
TEST(VectorForms, TransposeMovesEveryElementBitForBitOnEveryTarget) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {{{1, 96, 56, 56}, {0, 2, 3, 1}}, {{1, 56, 56, 96}, {0, 3, 1, 2}},
                                   {{1, 37, 13, 11}, {0, 2, 3, 1}}, {{2, 5, 7, 3}, {0, 3, 1, 2}},
                                   {{3, 200, 9}, {0, 2, 1}},        {{1, 130, 300}, {0, 2, 1}},
                                   {{4, 8, 8}, {2, 1, 0}},          {{6, 4, 5, 8}, {3, 0, 2, 1}}};
  for (DTypeCode dt : {DTypeCode::kFloat32, DTypeCode::kInt32}) {
    for (const Case& c : cases) {
      int64_t numel = 1;
      for (int64_t d : c.shape) numel *= d;
      Tensor x = Tensor::zeros(dt, c.shape).value();
      auto* bits = static_cast<uint32_t*>(x.raw_data());
      for (int64_t i = 0; i < numel; ++i) bits[i] = static_cast<uint32_t>(i) * 2654435761U;
      bits[0] = 0x7f800001U;          // a signalling NaN
      bits[numel / 2] = 0x80000000U;  // -0
      bits[numel - 1] = 0x00000003U;  // a denormal
      // Expected: output position o (row-major over the permuted shape) reads the source
      // position whose dim perm[k] is o's index k.
      const size_t rank = c.shape.size();
      Shape out_shape(rank), src_strides(rank, 1);
      for (size_t k = rank - 1; k-- > 0;) src_strides[k] = src_strides[k + 1] * c.shape[k + 1];
      for (size_t k = 0; k < rank; ++k) out_shape[k] = c.shape[static_cast<size_t>(c.perm[k])];
      std::vector<uint32_t> expected(static_cast<size_t>(numel));
      for (int64_t o = 0; o < numel; ++o) {
        int64_t rem = o, src = 0;
        for (size_t k = rank; k-- > 0;) {
          src += rem % out_shape[k] * src_strides[static_cast<size_t>(c.perm[k])];
          rem /= out_shape[k];
        }
        expected[static_cast<size_t>(o)] = bits[src];
      }
      for (int64_t target : backends::onednn::vec_targets_supported()) {
        backends::onednn::set_vec_target_for_test(target);
        for (int threads : {1, 2}) {
          OpCall call{"transpose", {x}, {{"perm", c.perm}}};
          call.num_threads = threads;
          auto r = run_op(call, "onednn");
          ASSERT_TRUE(r.is_ok()) << r.status().to_string();
          ASSERT_EQ((*r)[0].shape(), out_shape);
          const auto* got = static_cast<const uint32_t*>((*r)[0].raw_data());
          int64_t wrong = 0;
          for (int64_t o = 0; o < numel; ++o) wrong += got[o] != expected[static_cast<size_t>(o)];
          EXPECT_EQ(wrong, 0) << hwy::TargetName(target) << " " << dtype_name(dt) << " "
                              << shape_to_string(c.shape) << " perm " << fmt::format("{}", c.perm)
                              << " threads " << threads;
        }
        backends::onednn::set_vec_target_for_test(0);
      }
    }
  }
}

// ---- Cast between float32 and float16 / bfloat16 (VecTable::convert) ----

// A 16-bit float pattern with `mant` mantissa bits and the rest exponent, decoded by the IEEE
// formula (independent of frame's Half and BFloat16): float16 has 10, bfloat16 7.
double decode16(uint16_t h, int mant) {
  const int emax = (1 << (15 - mant)) - 1, bias = emax / 2;
  const int e = (h >> mant) & emax, m = h & ((1 << mant) - 1);
  double v = e == 0      ? std::ldexp(m, 1 - bias - mant)
             : e == emax ? (m != 0 ? std::nan("") : std::numeric_limits<double>::infinity())
                         : std::ldexp((1 << mant) + m, e - bias - mant);
  return (h >> 15) != 0 ? -v : v;
}
double decode_f16(uint16_t h) { return decode16(h, 10); }
double decode_bf16(uint16_t h) { return decode16(h, 7); }

// The 16-bit pattern nearest to x, ties to the even pattern, by binary search over the positive
// finite patterns [0, max_finite] (ordered by value); above the largest finite value the next
// step up is `overflow` (the value that rounds to infinity at a tie), so larger values give
// infinity. NaN gives a NaN (any payload).
uint16_t round_by_search(float x, double (*decode)(uint16_t), uint16_t max_finite, double overflow,
                         uint16_t inf_bits, uint16_t sign_bit) {
  if (std::isnan(x)) return static_cast<uint16_t>(inf_bits | 1);
  const uint16_t sign = std::signbit(x) ? sign_bit : 0;
  const double a = std::fabs(static_cast<double>(x));
  uint32_t lo = 0, hi = max_finite;  // largest pattern with decode <= a
  if (a >= decode(max_finite)) {
    lo = max_finite;
  } else {
    while (lo < hi) {
      const uint32_t mid = (lo + hi + 1) / 2;
      if (decode(static_cast<uint16_t>(mid)) <= a) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
  }
  const double below = decode(static_cast<uint16_t>(lo));
  const double above = lo == max_finite ? overflow : decode(static_cast<uint16_t>(lo + 1));
  uint32_t r = lo;
  if (a - below > above - a || (a - below == above - a && lo % 2 == 1)) r = lo + 1;
  if (r > max_finite) r = inf_bits;
  return static_cast<uint16_t>(r | sign);
}

uint16_t pattern(const Tensor& t, size_t i) {
  uint16_t b = 0;
  std::memcpy(&b, static_cast<const std::byte*>(t.raw_data()) + 2 * i, 2);
  return b;
}

struct Narrow16 {
  DTypeCode dtype;
  int64_t onnx_to;
  double (*decode)(uint16_t);
  uint16_t max_finite, inf_bits;
  double overflow;
};

// Whether the onednn kernel ran the cast; where it declines, it must say so (kUnimplemented:
// float16 on a target without F16C), so the chain gives the node to the cpu kernel.
bool ran_or_declined(const Result<std::vector<Tensor>>& r, const std::string& what) {
  if (r.is_ok()) return true;
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented)
      << what << ": " << r.status().to_string();
  return false;
}

TEST(VectorForms, CastToFloat16AndBFloat16RoundsToNearestEvenOnEveryTarget) {
  const std::vector<Narrow16> kinds = {
      {DTypeCode::kFloat16, 10, &decode_f16, 0x7bff, 0x7c00, 65536.0},
      {DTypeCode::kBFloat16, 16, &decode_bf16, 0x7f7f, 0x7f80, std::ldexp(1.0, 128)}};
  // Rounding edges: ties to even (1 + 2^-11 -> 1, 1 + 3 * 2^-11 -> up), the largest float16,
  // the overflow tie 65520, subnormals and their ties, the same for bfloat16's 2^-8 step.
  std::vector<float> edges = {1.0f + 0x1p-11f,
                              1.0f + 0x3p-11f,
                              -(1.0f + 0x1p-11f),
                              65504.0f,
                              65519.99f,
                              65520.0f,
                              65536.0f,
                              0x1p-14f,
                              0x1p-24f,
                              0x1p-25f,
                              0x3p-26f,
                              0x1.8p-24f,
                              1.0f + 0x1p-8f,
                              1.0f + 0x3p-8f,
                              3.0e38f,
                              -0.0f};
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    const std::string t = hwy::TargetName(target);
    const bool f16c = t == "AVX2" || t.rfind("AVX3", 0) == 0;
    for (const Narrow16& k : kinds) {
      for (int64_t n : {0, 1, 7, 1000, 100003}) {
        std::vector<float> xs = edges;
        const std::vector<float> more = values(static_cast<size_t>(n), 11);
        xs.insert(xs.end(), more.begin(), more.end());
        xs.resize(static_cast<size_t>(n));
        OpCall call{"cast", {Tensor::from_vector<float>({n}, xs)}, {{"to", k.onnx_to}}};
        call.num_threads = 2;
        const std::string what = fmt::format("{} {} n={}", t, dtype_name(k.dtype), n);
        auto r = run_op(call, "onednn");
        if (!ran_or_declined(r, what)) {
          EXPECT_FALSE(f16c && k.dtype == DTypeCode::kFloat16) << what;
          EXPECT_NE(k.dtype, DTypeCode::kBFloat16) << what << ": every target converts bfloat16";
          continue;
        }
        const Tensor& y = (*r)[0];
        ASSERT_EQ(y.dtype(), k.dtype) << what;
        for (size_t i = 0; i < xs.size(); ++i) {
          const uint16_t want =
              round_by_search(xs[i], k.decode, k.max_finite, k.overflow, k.inf_bits, 0x8000);
          const uint16_t got = pattern(y, i);
          if (std::isnan(xs[i])) {
            EXPECT_TRUE(std::isnan(k.decode(got))) << what << " at " << i;
          } else {
            ASSERT_EQ(got, want) << what << " at " << i << ": x = " << xs[i];
          }
        }
      }
    }
    backends::onednn::set_vec_target_for_test(0);
  }
}

TEST(VectorForms, CastFromFloat16AndBFloat16IsExactForEveryPattern) {
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    const std::string t = hwy::TargetName(target);
    for (const auto& [dt, decode] : {std::pair{DTypeCode::kFloat16, &decode_f16},
                                     std::pair{DTypeCode::kBFloat16, &decode_bf16}}) {
      // Every 16-bit pattern once, plus a tail that is no multiple of the vector width.
      const int64_t n = 65536 + 5;
      Result<Tensor> x = Tensor::empty(dt, {n});
      ASSERT_TRUE(x.is_ok());
      auto* bits = static_cast<uint16_t*>(x->raw_data());
      for (int64_t i = 0; i < n; ++i) bits[i] = static_cast<uint16_t>(i);
      OpCall call{"cast", {*x}, {{"to", int64_t{1}}}};
      call.num_threads = 2;
      const std::string what = fmt::format("{} {}", t, dtype_name(dt));
      auto r = run_op(call, "onednn");
      if (!ran_or_declined(r, what)) continue;
      const float* y = (*r)[0].data<float>();
      for (int64_t i = 0; i < n; ++i) {
        const double want = decode(static_cast<uint16_t>(i));
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(y[i])) << what << " pattern " << i;
        } else {
          ASSERT_EQ(static_cast<double>(y[i]), want) << what << " pattern " << i;
          ASSERT_EQ(std::signbit(y[i]), std::signbit(want)) << what << " pattern " << i;
        }
      }
    }
    backends::onednn::set_vec_target_for_test(0);
  }
}

}  // namespace
}  // namespace frame
