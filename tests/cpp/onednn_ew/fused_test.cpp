// The compiled `fused_elementwise_internal` kernel and the plain elementwise kernels of the
// `onednn` backend, end to end through runtime::compile, against the same graphs on `cpu`
// (BUILD-011 op tolerance): same-shape chains, scalar, bias and general broadcasts, a body op
// without a vector form, a non-fp32 body, a bool intermediate, an output aliasing its input,
// 1 and 2 threads; placement asserts that the nodes ran on onednn.

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/tolerance.h"
#include "frame/ir/graph.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/runtime/compile.h"

namespace frame {
namespace {

using runtime::CompileOptions;
using runtime::TensorMap;

// A small graph builder: inputs with random values, nodes by op name.
struct Builder {
  ir::Graph g{"t"};
  TensorMap feeds;
  int next = 0;

  ir::ValueId input(Shape shape, DTypeCode dt = DTypeCode::kFloat32, float lo = -3.0f,
                    float hi = 3.0f) {
    const std::string name = "in" + std::to_string(next++);
    const ir::ValueId v = g.add_input(name, ir::TensorType{dt, shape});
    std::mt19937 rng(static_cast<uint32_t>(next));
    std::uniform_real_distribution<float> dist(lo, hi);
    const int64_t n = numel_of(shape);
    if (dt == DTypeCode::kFloat64) {
      std::vector<double> vals(static_cast<size_t>(n));
      for (double& x : vals) x = dist(rng);
      feeds[name] = Tensor::from_vector<double>(shape, vals);
    } else {
      std::vector<float> vals(static_cast<size_t>(n));
      for (float& x : vals) x = dist(rng);
      feeds[name] = Tensor::from_vector<float>(shape, vals);
    }
    return v;
  }
  ir::ValueId op(const std::string& type, std::vector<ir::ValueId> ins, ir::AttrMap attrs = {}) {
    const std::string name = type + std::to_string(next++);
    auto id = g.create_node(type, name, ins, 1, std::move(attrs), {name});
    EXPECT_TRUE(id.is_ok()) << id.status().to_string();
    return g.node(*id).outputs[0];
  }
  // A new input `x` of `shape` plus a new input bias over its last axis (broadcast).
  struct Biased {
    ir::ValueId x, sum;
  };
  Biased input_plus_bias(const Shape& shape) {
    const ir::ValueId x = input(shape);
    const ir::ValueId bias = input({shape.back()});
    return {x, op("add", {x, bias})};
  }
};

CompileOptions options(const std::string& backend, int threads) {
  CompileOptions o;
  o.backends = {backend};
  o.num_threads = threads;
  o.use_cache = false;
  return o;
}

// Compiles `b` on onednn and cpu, runs both, compares every output; returns the onednn
// executable's placements as "op@backend" strings.
std::vector<std::string> expect_same_as_cpu(Builder& b, ir::ValueId out, int threads = 2,
                                            CompileOptions base = {}) {
  b.g.add_output(out);
  CompileOptions fast_opt = base;
  fast_opt.backends = {"onednn"};
  fast_opt.num_threads = threads;
  fast_opt.use_cache = false;
  auto fast = runtime::compile(b.g, fast_opt);
  EXPECT_TRUE(fast.is_ok()) << fast.status().to_string();
  auto ref = runtime::compile(b.g, options("cpu", 1));
  EXPECT_TRUE(ref.is_ok()) << ref.status().to_string();
  if (!fast.is_ok() || !ref.is_ok()) return {};
  auto got = fast->run(b.feeds);
  EXPECT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = ref->run(b.feeds);
  EXPECT_TRUE(want.is_ok()) << want.status().to_string();
  if (!got.is_ok() || !want.is_ok()) return {};
  for (const auto& [name, t] : *want) {
    const test::CompareResult r =
        test::compare_tensors(got->at(name), t, test::tolerance_for(t.dtype()));
    EXPECT_TRUE(r.ok) << name << ": " << r.message;
  }
  std::vector<std::string> placed;
  for (const runtime::Placement& p : fast->report().placements) {
    placed.push_back(p.op + "@" + p.backend);
  }
  return placed;
}

bool fused_on_onednn(const std::vector<std::string>& placed) {
  return std::find(placed.begin(), placed.end(), "fused_elementwise_internal@onednn") !=
         placed.end();
}

TEST(FusedOnednn, EightOpChainSameShape) {
  for (int threads : {1, 2}) {
    Builder b;
    const ir::ValueId x = b.input({64, 1000});
    const ir::ValueId y = b.input({64, 1000}, DTypeCode::kFloat32, 0.5f, 2.0f);
    ir::ValueId t = b.op("add", {x, y});
    t = b.op("mul", {t, y});
    t = b.op("max", {t, x});
    t = b.op("relu", {t});
    t = b.op("sub", {t, x});
    t = b.op("div", {t, y});
    t = b.op("min", {t, y});
    t = b.op("abs", {t});
    const auto placed = expect_same_as_cpu(b, t, threads);
    EXPECT_TRUE(fused_on_onednn(placed)) << fmt::format("{}", fmt::join(placed, ", "));
  }
}

// A float16 or bfloat16 round trip inside a body (the rounding an fp16 model's widened graph
// keeps at its input): conversion steps, not the cpu kernel per tile; the same values as cpu.
TEST(FusedOnednn, NarrowingRoundTripsInsideABody) {
  for (int64_t to : {int64_t{10}, int64_t{16}}) {
    Builder b;
    const ir::ValueId x = b.input({3, 1001}, DTypeCode::kFloat32, -70000.0f, 70000.0f);
    const ir::ValueId y = b.input({3, 1001});
    ir::ValueId t = b.op("cast", {x}, {{"to", to}});
    t = b.op("cast", {t}, {{"to", int64_t{1}}});
    t = b.op("mul", {t, y});
    const auto placed = expect_same_as_cpu(b, t);
    EXPECT_TRUE(fused_on_onednn(placed))
        << to << ": " << fmt::format("{}", fmt::join(placed, ", "));
  }
}

TEST(FusedOnednn, ScalarInputsAreSplatted) {
  for (int64_t n : {1, 7, 1000, 100003}) {
    Builder b;
    const ir::ValueId x = b.input({n});
    const ir::ValueId s = b.input({});
    ir::ValueId t = b.op("mul", {x, s});
    t = b.op("add", {t, s});
    t = b.op("sigmoid", {t});
    EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, t))) << n;
  }
}

TEST(FusedOnednn, BiasBroadcastGeluRelu) {
  // Short rows (replicated per run) and long rows (tiles wrap across a row).
  for (const Shape& shape : {Shape{128, 300}, Shape{3, 2500}, Shape{2, 5, 4096}}) {
    Builder b;
    ir::ValueId t = b.input_plus_bias(shape).sum;
    t = b.op("gelu", {t}, {{"approximate", std::string("tanh")}});
    t = b.op("relu", {t});
    EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, t))) << fmt::format("{}", shape);
  }
}

// Outputs of 16 MiB and more are written with non-temporal stores; an odd size leaves a tail.
TEST(FusedOnednn, LargeOutputStreamedPastTheCaches) {
  Builder b;
  ir::ValueId t = b.input_plus_bias({2049, 2051}).sum;
  t = b.op("gelu", {t}, {{"approximate", std::string("tanh")}});
  t = b.op("relu", {t});
  EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, t)));
}

// tanh-GELU as torch 1.13 exports it (Pow(x, 3) and the constants as scalar inputs), + ReLU.
TEST(FusedOnednn, ExportedTanhGeluWithPowAndPRelu) {
  Builder b;
  const ir::ValueId x = b.input({64, 1000});
  const ir::ValueId three = b.input({}, DTypeCode::kFloat32, 3.0f, 3.0f);
  const ir::ValueId c = b.input({}, DTypeCode::kFloat32, 0.044715f, 0.044715f);
  const ir::ValueId k = b.input({}, DTypeCode::kFloat32, 0.7978845f, 0.7978845f);
  const ir::ValueId half = b.input({}, DTypeCode::kFloat32, 0.5f, 0.5f);
  const ir::ValueId one = b.input({}, DTypeCode::kFloat32, 1.0f, 1.0f);
  const ir::ValueId slope = b.input({1000}, DTypeCode::kFloat32, 0.0f, 0.3f);
  ir::ValueId cube = b.op("pow", {x, three});
  ir::ValueId inner = b.op("mul", {b.op("add", {x, b.op("mul", {cube, c})}), k});
  ir::ValueId t = b.op("mul", {b.op("mul", {x, half}), b.op("add", {b.op("tanh", {inner}), one})});
  t = b.op("prelu", {t, slope});
  EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, t)));
}

TEST(FusedOnednn, GeneralBroadcastIsGathered) {
  Builder b;
  const ir::ValueId x = b.input({4, 8, 16, 17});
  const ir::ValueId scale = b.input({8, 1, 1});
  const ir::ValueId shift = b.input({1, 8, 1, 1});
  const ir::ValueId col = b.input({4, 1, 16, 1});
  ir::ValueId t = b.op("mul", {x, scale});
  t = b.op("add", {t, shift});
  t = b.op("sub", {t, col});
  t = b.op("tanh", {t});
  t = b.op("gelu", {t});
  EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, t)));
}

// Per-channel operands ([C,1,1] over NCHW: each element repeated over a plane, InMode::kRepeat)
// of 4-byte elements feeding a comparison and a where, and of 8-byte ones through the cpu
// kernels, with planes longer and shorter than a tile.
TEST(FusedOnednn, PerChannelOperandsRepeatedInEveryElementSize) {
  {
    Builder b;
    const ir::ValueId x = b.input({2, 3, 40, 41});
    const ir::ValueId s = b.input({3, 1, 1});
    const ir::ValueId lo = b.input({1, 3, 1, 1});
    const ir::ValueId c = b.op("less", {b.op("mul", {x, s}), lo});
    ir::ValueId t = b.op("where", {c, x, s});
    t = b.op("add", {t, lo});
    EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, t)));
  }
  {
    Builder b;
    const ir::ValueId x = b.input({2, 3, 17, 19}, DTypeCode::kFloat64);
    const ir::ValueId s = b.input({3, 1, 1}, DTypeCode::kFloat64);
    ir::ValueId t = b.op("mul", {x, s});
    t = b.op("add", {t, s});
    EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, t)));
  }
}

TEST(FusedOnednn, BodyOpWithoutVectorFormRunsItsCpuKernel) {
  // mod has no vector form: it runs through its cpu kernel on each tile, between vector steps.
  Builder b;
  const ir::ValueId x = b.input({2000});
  const ir::ValueId y = b.input({2000}, DTypeCode::kFloat32, 0.5f, 2.0f);
  ir::ValueId t = b.op("add", {x, y});
  t = b.op("mod", {t, y});
  t = b.op("mul", {t, y});
  t = b.op("mod", {t, y}, {{"fmod", int64_t{1}}});
  t = b.op("exp", {t});
  const auto placed = expect_same_as_cpu(b, t);
  EXPECT_TRUE(fused_on_onednn(placed)) << fmt::format("{}", fmt::join(placed, ", "));
}

TEST(FusedOnednn, BoolIntermediateAndWhere) {
  Builder b;
  const ir::ValueId x = b.input({3000});
  const ir::ValueId y = b.input({3000});
  const ir::ValueId c = b.op("less", {x, y});
  ir::ValueId t = b.op("where", {c, x, y});
  t = b.op("relu", {t});
  t = b.op("mul", {t, x});
  EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, t)));
}

TEST(FusedOnednn, BoolOutputOfAComparisonSink) {
  Builder b;
  const ir::ValueId x = b.input({3001});
  const ir::ValueId y = b.input({3001});
  const ir::ValueId t = b.op("exp", {b.op("add", {x, y})});
  EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, b.op("less", {t, y}))));
}

TEST(FusedOnednn, Float64BodyRunsThroughCpuKernels) {
  Builder b;
  const ir::ValueId x = b.input({5000}, DTypeCode::kFloat64);
  const ir::ValueId y = b.input({5000}, DTypeCode::kFloat64);
  ir::ValueId t = b.op("add", {x, y});
  t = b.op("mul", {t, x});
  t = b.op("relu", {t});
  EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, t)));
}

TEST(FusedOnednn, VariadicAndClipInsideABody) {
  Builder b;
  const ir::ValueId x = b.input({50, 70});
  const ir::ValueId y = b.input({70});
  const ir::ValueId lo = b.input({});
  ir::ValueId t = b.op("exp", {x});
  t = b.op("sum", {x, t, y});
  t = b.op("clip", {t, lo});
  t = b.op("mean", {t, x, y});
  t = b.op("max", {t, x, y});
  EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, t)));
}

TEST(FusedOnednn, OutputAliasingItsInputInPlace) {
  // softmax is not fusable: its output feeds the group and dies there, so memory planning may
  // give the fused output the same buffer.
  Builder b;
  const ir::ValueId x = b.input({64, 500});
  const ir::ValueId y = b.input({64, 500});
  const ir::ValueId s = b.op("softmax", {x});
  ir::ValueId t = b.op("add", {s, y});
  t = b.op("exp", {t});
  t = b.op("sum", {t, s, s});
  CompileOptions base;
  base.allow_inplace = true;
  EXPECT_TRUE(fused_on_onednn(expect_same_as_cpu(b, t, 2, base)));
}

// The kernel called directly with its output on the input's memory: (x + e^y) + x.
TEST(FusedOnednn, DirectCallWithOutputOnInputMemory) {
  auto body = std::make_shared<ir::Graph>("body");
  const ir::TensorType type{DTypeCode::kFloat32, {4099}};
  const ir::ValueId in0 = body->add_input("in0", type);
  const ir::ValueId in1 = body->add_input("in1", type);
  auto e = body->create_node("exp", "e", {in1}, 1, {}, {"e"});
  ASSERT_TRUE(e.is_ok());
  const ir::ValueId ev = body->node(*e).outputs[0];
  body->value(ev).type = type;
  auto s = body->create_node("sum", "s", {in0, ev, in0}, 1, {}, {"s"});
  ASSERT_TRUE(s.is_ok());
  const ir::ValueId sv = body->node(*s).outputs[0];
  body->value(sv).type = type;
  body->add_output(sv);

  ir::AttrMap attrs{{"body", std::shared_ptr<const ir::Graph>(body)}};
  ops::NodeContext ctx;
  ctx.op = "fused_elementwise_internal";
  ctx.node_name = "f";
  ctx.attrs = &attrs;
  ctx.schema = ops::OpRegistry::global().find(ctx.op);
  ctx.num_outputs = 1;
  ctx.input_types = {type, type};
  ctx.input_present = {true, true};
  ctx.input_constants = {nullptr, nullptr};
  const ops::KernelDef* k = ops::KernelRegistry::global().find(ctx.op, "onednn");
  ASSERT_NE(k, nullptr);
  auto state = k->prepare(ctx);
  ASSERT_TRUE(state.is_ok()) << state.status().to_string();

  std::vector<float> xs(4099), ys(4099);
  for (size_t i = 0; i < xs.size(); ++i) {
    xs[i] = static_cast<float>(i % 97) * 0.25f - 12.0f;
    ys[i] = static_cast<float>(i % 13) * 0.5f - 3.0f;
  }
  Tensor x = Tensor::from_vector<float>({4099}, xs);
  const Tensor y = Tensor::from_vector<float>({4099}, ys);
  std::vector<Tensor> ins = {x, y};
  std::vector<Tensor> outs = {*Tensor::view(DTypeCode::kFloat32, {4099}, x.raw_data())};
  ops::KernelContext kc;
  kc.node = &ctx;
  kc.inputs = ins;
  kc.outputs = outs;
  kc.state = state->get();
  kc.num_threads = 2;
  ASSERT_TRUE(k->fn(kc).is_ok());
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = (static_cast<double>(xs[i]) + std::exp(static_cast<double>(ys[i]))) + xs[i];
    ASSERT_NEAR(x.data<float>()[i], want, 1e-5 * std::fabs(want) + 1e-6) << i;
  }
}

// Executable::run is re-entrant: the compiled programs are read-only and the tile scratch is
// per thread, so concurrent runs of one executable agree with a sequential one.
TEST(FusedOnednn, ConcurrentRunsOfOneExecutable) {
  Builder b;
  ir::ValueId t = b.input_plus_bias({257, 300}).sum;
  t = b.op("gelu", {t});
  t = b.op("reduce_mean", {t}, {{"axes", std::vector<int64_t>{1}}});
  b.g.add_output(t);
  auto exe = runtime::compile(b.g, options("onednn", 2));
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  auto want = exe->run(b.feeds);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  const Tensor& ref = want->begin()->second;
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&] {
      for (int r = 0; r < 20; ++r) {
        auto got = exe->run(b.feeds);
        if (!got.is_ok() || got->begin()->second.nbytes() != ref.nbytes() ||
            std::memcmp(got->begin()->second.raw_data(), ref.raw_data(), ref.nbytes()) != 0) {
          ++mismatches;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(PlainOnednn, UnfusedOpsRunOnOnednn) {
  Builder b;
  const auto [x, sum] = b.input_plus_bias({300, 301});
  ir::ValueId t = sum;
  t = b.op("relu", {t});
  t = b.op("mul", {t, x});
  CompileOptions base;
  base.disabled_passes = {"operator-fusion"};
  const auto placed = expect_same_as_cpu(b, t, 2, base);
  EXPECT_EQ(placed, (std::vector<std::string>{"add@onednn", "relu@onednn", "mul@onednn"}));
}

TEST(PlainOnednn, ThreadCountDoesNotChangeResults) {
  std::vector<Tensor> results;
  for (int threads : {1, 2}) {
    Builder b;
    const ir::ValueId x = b.input({1 << 18});
    const ir::ValueId y = b.input({1 << 18});
    ir::ValueId t = b.op("mul", {x, y});
    t = b.op("erf", {t});
    b.g.add_output(t);
    auto exe = runtime::compile(b.g, options("onednn", threads));
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    auto out = exe->run(b.feeds);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    results.push_back(out->begin()->second);
  }
  ASSERT_EQ(results[0].nbytes(), results[1].nbytes());
  EXPECT_EQ(std::memcmp(results[0].raw_data(), results[1].raw_data(), results[0].nbytes()), 0);
}

}  // namespace
}  // namespace frame
