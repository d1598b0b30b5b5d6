// The intel_gpu tiled GEMM (gemm, matmul, conv as implicit GEMM), clip and the 4-wide fused
// kernels at sizes the op database does not reach: several 32x32 tiles with partial edge tiles,
// transposes, batch broadcasting, grouped/strided/dilated/padded convs, element counts that
// leave a tail. Every value is checked against a double-precision loop written here.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cpp/intel_gpu/intel_gpu_test_util.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

// Deterministic values in [-1, 1).
std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (float& x : v) {
    s = s * 1664525U + 1013904223U;
    x = static_cast<float>(s >> 8) / static_cast<float>(1U << 23) - 1.0F;
  }
  return v;
}

// Compiles `g` strictly on intel_gpu (no node elsewhere), runs it on `inputs`, returns "y".
std::vector<float> run_strict(const ir::Graph& g, const TensorMap& inputs) {
  CompileOptions o = test::strict_gpu_options();
  auto exe = compile(g, o);
  EXPECT_TRUE(exe.is_ok()) << exe.status().to_string();
  if (!exe.is_ok()) return {};
  for (const Placement& p : exe->report().placements) EXPECT_EQ(p.backend, "intel_gpu") << p.node;
  auto out = exe->run(inputs);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  if (!out.is_ok()) return {};
  const Tensor& y = out->at("y");
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::abs(want[i]))) << "element " << i;
  }
}

// sum_k a[k * a_step] * b[k * b_step] in double: one element of a reference matrix product,
// with each operand's layout (transposed or not) given by its step along k.
double dot(const float* a, int64_t a_step, const float* b, int64_t b_step, int64_t K) {
  double acc = 0;
  for (int64_t k = 0; k < K; ++k) acc += double(a[k * a_step]) * b[k * b_step];
  return acc;
}

struct Input {
  std::string name;
  Shape shape;
  std::vector<float> data;
};

// One node `op` over graph inputs, output "y".
ir::Graph one_node(const std::string& op, const std::vector<Input>& ins,
                   std::vector<std::pair<std::string, ir::AttrValue>> attrs) {
  ir::Graph g(op);
  std::vector<ir::ValueId> ids;
  for (const Input& in : ins) {
    ids.push_back(g.add_input(in.name, ir::TensorType{DTypeCode::kFloat32, in.shape}));
  }
  ir::AttrMap map;
  for (auto& [k, v] : attrs) map[k] = std::move(v);
  auto n = g.create_node(op, "n", ids, 1, map, {"y"});
  EXPECT_TRUE(n.is_ok());
  g.add_output(g.node(*n).outputs[0]);
  return g;
}

TensorMap feed(const std::vector<Input>& ins) {
  TensorMap m;
  for (const Input& in : ins) m.emplace(in.name, Tensor::from_vector<float>(in.shape, in.data));
  return m;
}

TEST(IntelGpuTiled, GemmTransposedWithRowC) {
  REQUIRE_INTEL_GPU();
  // A stored [K, M] (transA), B stored [N, K] (transB), C [N] broadcast over rows.
  const int64_t M = 70, N = 37, K = 45;
  const std::vector<Input> ins = {
      {"a", {K, M}, values(K * M, 1)}, {"b", {N, K}, values(N * K, 2)}, {"c", {N}, values(N, 3)}};
  const ir::Graph g = one_node(
      "gemm", ins, {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}});
  std::vector<double> want(M * N);
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t c = 0; c < N; ++c) {
      const double acc = dot(&ins[0].data[r], M, &ins[1].data[c * K], 1, K);
      want[r * N + c] = 0.5 * acc + 2.0 * ins[2].data[c];
    }
  }
  expect_close(run_strict(g, feed(ins)), want);
}

TEST(IntelGpuTiled, GemmPlainWithoutC) {
  REQUIRE_INTEL_GPU();
  const int64_t M = 33, N = 65, K = 17;
  const std::vector<Input> ins = {{"a", {M, K}, values(M * K, 4)}, {"b", {K, N}, values(K * N, 5)}};
  const ir::Graph g = one_node("gemm", ins, {});
  std::vector<double> want(M * N);
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t c = 0; c < N; ++c) {
      want[r * N + c] = dot(&ins[0].data[r * K], 1, &ins[1].data[c], N, K);
    }
  }
  expect_close(run_strict(g, feed(ins)), want);
}

TEST(IntelGpuTiled, MatmulBroadcastsBatchDims) {
  REQUIRE_INTEL_GPU();
  // [2, 1, 40, 35] x [3, 35, 50] -> [2, 3, 40, 50].
  const int64_t M = 40, K = 35, N = 50;
  const std::vector<Input> ins = {{"a", {2, 1, M, K}, values(2 * M * K, 6)},
                                  {"b", {3, K, N}, values(3 * K * N, 7)}};
  const ir::Graph g = one_node("matmul", ins, {});
  std::vector<double> want;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t r = 0; r < M; ++r) {
        for (int64_t c = 0; c < N; ++c) {
          want.push_back(dot(&ins[0].data[(i * M + r) * K], 1, &ins[1].data[j * K * N + c], N, K));
        }
      }
    }
  }
  expect_close(run_strict(g, feed(ins)), want);
}

// Direct 2-D conv in double: x [n, C, H, W], w [M, C / group, KH, KW].
std::vector<double> conv_ref(const Input& x, const Input& w, const std::vector<float>* bias,
                             int64_t group, std::array<int64_t, 2> s, std::array<int64_t, 2> d,
                             std::array<int64_t, 2> pb, std::array<int64_t, 2> out) {
  const int64_t n = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t M = w.shape[0], cg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  const int64_t mg = M / group;
  std::vector<double> y;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t oc = 0; oc < M; ++oc) {
      const int64_t gi = oc / mg;
      for (int64_t oh = 0; oh < out[0]; ++oh) {
        for (int64_t ow = 0; ow < out[1]; ++ow) {
          double acc = bias == nullptr ? 0.0 : (*bias)[oc];
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t kh = 0; kh < KH; ++kh) {
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * s[0] - pb[0] + kh * d[0];
                const int64_t iw = ow * s[1] - pb[1] + kw * d[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += double(x.data[((b * C + gi * cg + c) * H + ih) * W + iw]) *
                       w.data[((oc * cg + c) * KH + kh) * KW + kw];
              }
            }
          }
          y.push_back(acc);
        }
      }
    }
  }
  return y;
}

TEST(IntelGpuTiled, ConvGroupedStridedDilatedPadded) {
  REQUIRE_INTEL_GPU();
  // x [2, 6, 13, 11], w [40, 3, 3, 3], group 2, strides [2, 1], dilations [1, 2],
  // pads [1, 0, 2, 1]: out [2, 40, 7, 8].
  const Input x{"x", {2, 6, 13, 11}, values(2 * 6 * 13 * 11, 8)};
  const Input w{"w", {40, 3, 3, 3}, values(40 * 27, 9)};
  const Input b{"b", {40}, values(40, 10)};
  const ir::Graph g = one_node("conv", {x, w, b},
                               {{"group", int64_t{2}},
                                {"strides", std::vector<int64_t>{2, 1}},
                                {"dilations", std::vector<int64_t>{1, 2}},
                                {"pads", std::vector<int64_t>{1, 0, 2, 1}}});
  const std::vector<double> want = conv_ref(x, w, &b.data, 2, {2, 1}, {1, 2}, {1, 0}, {7, 8});
  expect_close(run_strict(g, feed({x, w, b})), want);
}

TEST(IntelGpuTiled, ConvPointwiseAndDepthwise) {
  REQUIRE_INTEL_GPU();
  {  // 1x1: the input plane read directly
    const Input x{"x", {1, 20, 9, 7}, values(20 * 63, 11)};
    const Input w{"w", {40, 20, 1, 1}, values(800, 12)};
    const ir::Graph g = one_node("conv", {x, w}, {});
    expect_close(run_strict(g, feed({x, w})),
                 conv_ref(x, w, nullptr, 1, {1, 1}, {1, 1}, {0, 0}, {9, 7}));
  }
  {  // depthwise (group = channels): the direct kernel
    const Input x{"x", {1, 8, 10, 10}, values(800, 13)};
    const Input w{"w", {8, 1, 3, 3}, values(72, 14)};
    const ir::Graph g = one_node(
        "conv", {x, w}, {{"group", int64_t{8}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    expect_close(run_strict(g, feed({x, w})),
                 conv_ref(x, w, nullptr, 8, {1, 1}, {1, 1}, {1, 1}, {10, 10}));
  }
}

TEST(IntelGpuTiled, Conv1dAsTwoD) {
  REQUIRE_INTEL_GPU();
  // x [1, 5, 70], w [36, 5, 4], stride 3, pads [2, 1]: out [1, 36, (70 + 3 - 4) / 3 + 1 = 24].
  const Input x{"x", {1, 5, 70}, values(350, 15)};
  const Input w{"w", {36, 5, 4}, values(720, 16)};
  const ir::Graph g = one_node(
      "conv", {x, w}, {{"strides", std::vector<int64_t>{3}}, {"pads", std::vector<int64_t>{2, 1}}});
  const Input x2{"x", {1, 5, 1, 70}, x.data};
  const Input w2{"w", {36, 5, 1, 4}, w.data};
  expect_close(run_strict(g, feed({x, w})),
               conv_ref(x2, w2, nullptr, 1, {1, 3}, {1, 1}, {0, 2}, {1, 24}));
}

TEST(IntelGpuTiled, ClipWithOneBound) {
  REQUIRE_INTEL_GPU();
  ir::Graph g("clip");
  const Shape shape{3, 7};
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, shape});
  ir::ValueId hi = g.add_constant("hi", Tensor::from_vector<float>({}, {0.25F}));
  auto n = g.create_node("clip", "n", {x, ir::kNoValue, hi}, 1, {}, {"y"});
  ASSERT_TRUE(n.is_ok());
  g.add_output(g.node(*n).outputs[0]);
  std::vector<float> xs = values(21, 17);
  xs[5] = std::nanf("");
  const std::vector<float> got = run_strict(g, {{"x", Tensor::from_vector<float>(shape, xs)}});
  ASSERT_EQ(got.size(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i == 5) {
      EXPECT_TRUE(std::isnan(got[i])) << "NaN passes through";
    } else {
      EXPECT_EQ(got[i], std::min(xs[i], 0.25F)) << i;
    }
  }
}

TEST(IntelGpuTiled, FusedGroupFourWideWithTail) {
  REQUIRE_INTEL_GPU();
  // y = relu(a * b + a) - 0.5 over 1027 elements: 256 work-items of 4 and a tail of 3.
  const Shape shape{1027};
  ir::Graph g("fused4");
  ir::ValueId a = g.add_input("a", ir::TensorType{DTypeCode::kFloat32, shape});
  ir::ValueId b = g.add_input("b", ir::TensorType{DTypeCode::kFloat32, shape});
  ir::ValueId h = g.add_constant("h", Tensor::from_vector<float>({}, {0.5F}));
  auto m = g.create_node("mul", "m", {a, b}, 1, {}, {"m"});
  auto s = g.create_node("add", "s", {g.node(*m).outputs[0], a}, 1, {}, {"s"});
  auto r = g.create_node("relu", "r", {g.node(*s).outputs[0]}, 1, {}, {"r"});
  auto y = g.create_node("sub", "y", {g.node(*r).outputs[0], h}, 1, {}, {"y"});
  g.add_output(g.node(*y).outputs[0]);
  CompileOptions o = test::strict_gpu_options();
  auto exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  ASSERT_EQ(exe->report().placements.size(), 1U);
  EXPECT_EQ(exe->report().placements[0].op, "fused_elementwise_internal");
  const std::vector<float> as = values(1027, 18), bs = values(1027, 19);
  auto out = exe->run(
      {{"a", Tensor::from_vector<float>(shape, as)}, {"b", Tensor::from_vector<float>(shape, bs)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const float* got = out->at("y").data<float>();
  for (size_t i = 0; i < as.size(); ++i) {
    const float v = as[i] * bs[i] + as[i];
    EXPECT_NEAR(got[i], std::max(v, 0.0F) - 0.5F, 1e-6) << i;
  }
}

}  // namespace
}  // namespace frame::runtime
