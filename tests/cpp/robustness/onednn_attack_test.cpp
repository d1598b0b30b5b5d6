// Adversarial cases for the onednn backend, its lowering patterns and the runtime features
// that came with it (run into caller buffers, profiling, concurrency). Every result is compared
// with an independent reference: the same graph compiled with backends={"cpu"}, or values
// computed here by hand.

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "common/tolerance.h"
#include "cpp/robustness/attack_test_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

using ints = std::vector<int64_t>;
using test::compare_tensors;
using test::CompareResult;
using test::grid;
using test::tolerance_for;
using test::ToleranceClass;

Result<Executable> compile_with(const ir::Graph& g, std::vector<std::string> backends) {
  CompileOptions o;
  o.backends = std::move(backends);
  o.use_cache = false;
  return compile(g, o);
}

// Compiles `g` with the default backends and with {"cpu"}, runs both on `in` and compares
// every output (BUILD-011 cross-backend class).
void expect_default_matches_cpu(const ir::Graph& g, const TensorMap& in) {
  CompileOptions fast_opts;
  fast_opts.use_cache = false;
  Result<Executable> fast = compile(g, fast_opts);
  ASSERT_TRUE(fast.is_ok()) << fast.status().message();
  Result<Executable> slow = compile_with(g, {"cpu"});
  ASSERT_TRUE(slow.is_ok()) << slow.status().message();
  Result<TensorMap> a = fast->run(in), e = slow->run(in);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  for (const auto& [name, t] : *e) {
    ASSERT_EQ(a->count(name), 1u) << name;
    const CompareResult c = compare_tensors(
        a->at(name), t, tolerance_for(DTypeCode::kFloat32, ToleranceClass::kCrossBackend));
    EXPECT_TRUE(c.ok) << name << ": " << c.message;
  }
}

ir::ValueId scalar_constant(ir::Graph& g, const std::string& name, float v) {
  return g.add_constant(name, Tensor::from_vector<float>({}, {v}));
}

// conv -> clip(min=1, max=-1): oneDNN rejects an eltwise_clip post-op whose alpha exceeds its
// beta by throwing dnnl::error; the lowering pattern's support check let it escape and
// terminate the process. The clip must stay a separate node (or the fused node be declined)
// and the result match the cpu reference.
TEST(OnednnAttack, ConvClipWithMinAboveMax) {
  ir::Graph g("conv_clip");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 2, 5, 5}});
  const ir::ValueId w = g.add_constant("w", grid({3, 2, 3, 3}, 1));
  const ir::NodeId c = *g.create_node("conv", "c0", {x, w}, 1, {{"pads", ints{1, 1, 1, 1}}});
  const ir::ValueId lo = scalar_constant(g, "lo", 1.0F), hi = scalar_constant(g, "hi", -1.0F);
  const ir::NodeId k = *g.create_node("clip", "k0", {g.node(c).outputs[0], lo, hi}, 1);
  g.add_output(g.node(k).outputs[0]);
  expect_default_matches_cpu(g, {{"x", grid({1, 2, 5, 5}, 2)}});
}

TEST(OnednnAttack, MatmulClipWithMinAboveMax) {
  ir::Graph g("mm_clip");
  const ir::ValueId a = g.add_input("a", ir::TensorType{DTypeCode::kFloat32, {4, 6}});
  const ir::ValueId b = g.add_constant("b", grid({6, 5}, 3));
  const ir::NodeId m = *g.create_node("matmul", "m0", {a, b}, 1);
  const ir::ValueId lo = scalar_constant(g, "lo", 0.5F), hi = scalar_constant(g, "hi", -0.5F);
  const ir::NodeId k = *g.create_node("clip", "k0", {g.node(m).outputs[0], lo, hi}, 1);
  g.add_output(g.node(k).outputs[0]);
  expect_default_matches_cpu(g, {{"a", grid({4, 6}, 4)}});
}

// gemm with a tiny beta: y = A*B + 1e-39*C is about A*B, but the kernel computed
// beta * ((alpha / beta) * A*B + C) with alpha / beta = 1e39 overflowing f32 to inf.
TEST(OnednnAttack, GemmWithTinyBetaStaysFinite) {
  for (double beta : {1e-39, 1e-30}) {
    ir::Graph g("gemm_beta");
    const ir::ValueId a = g.add_input("a", ir::TensorType{DTypeCode::kFloat32, {4, 5}});
    const ir::ValueId b = g.add_constant("b", grid({5, 3}, 5));
    const ir::ValueId cc = g.add_constant("c", grid({3}, 6));
    const ir::NodeId n = *g.create_node("gemm", "g0", {a, b, cc}, 1, {{"beta", beta}});
    g.add_output(g.node(n).outputs[0]);
    // A large A*B: with beta = 1e-30 the scaled accumulator (1e30 * A*B) overflows too.
    Tensor in = grid({4, 5}, 7);
    for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] *= 1e9F;
    SCOPED_TRACE(beta);
    expect_default_matches_cpu(g, {{"a", in}});
  }
}

// conv (+ residual add + relu, fused into one oneDNN node) whose conv output is also a graph
// output read by the add: the pattern must leave the conv alone; outputs y and o.
ir::Graph residual_graph() {
  ir::Graph g("res");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 16, 6, 6}});
  const ir::ValueId q = g.add_input("q", ir::TensorType{DTypeCode::kFloat32, {1, 16, 6, 6}});
  const ir::ValueId w = g.add_constant("w", grid({16, 16, 3, 3}, 8));
  const ir::NodeId c1 = *g.create_node("conv", "c1", {x, w}, 1, {{"pads", ints{1, 1, 1, 1}}});
  const ir::NodeId c2 = *g.create_node("conv", "c2", {q, w}, 1, {{"pads", ints{1, 1, 1, 1}}});
  const ir::ValueId y = g.node(c1).outputs[0];
  const ir::NodeId a = *g.create_node("add", "a", {g.node(c2).outputs[0], y}, 1);
  const ir::NodeId r = *g.create_node("relu", "r", {g.node(a).outputs[0]}, 1);
  g.add_output(y);
  g.add_output(g.node(r).outputs[0]);
  return g;
}

// Many threads run one Executable into their own caller buffers, half of them profiled into
// one shared Profile; every result must equal the cpu compile's.
TEST(OnednnAttack, ConcurrentRunsIntoBuffersWithSharedProfile) {
  const ir::Graph g = residual_graph();
  CompileOptions o;
  o.use_cache = false;
  o.num_threads = 1;
  Result<Executable> exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  Result<Executable> ref = compile_with(g, {"cpu"});
  ASSERT_TRUE(ref.is_ok()) << ref.status().message();
  constexpr int kThreads = 6;
  constexpr int kReps = 20;
  std::vector<TensorMap> in(kThreads), expect(kThreads), out(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    const auto i = static_cast<size_t>(t);
    in[i] = {{"x", grid({1, 16, 6, 6}, 10 + t)}, {"q", grid({1, 16, 6, 6}, 40 + t)}};
    Result<TensorMap> e = ref->run(in[i]);
    ASSERT_TRUE(e.is_ok()) << e.status().message();
    expect[i] = *e;
    for (const auto& [name, type] : exe->output_signature()) {
      out[i][name] = *Tensor::empty(type.dtype, type.shape);
    }
  }
  Profile profile;
  std::atomic<int> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      const auto i = static_cast<size_t>(t);
      RunOptions ro;
      if (t % 2 == 0) ro.profile = &profile;
      for (int rep = 0; rep < kReps; ++rep) {
        if (!exe->run(in[i], out[i], ro).is_ok()) ++failures;
        for (const auto& [name, e] : expect[i]) {
          const CompareResult c =
              compare_tensors(out[i].at(name), e,
                              tolerance_for(DTypeCode::kFloat32, ToleranceClass::kCrossBackend));
          if (!c.ok) ++failures;
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(profile.runs, (kThreads / 2) * kReps);
  int64_t calls = 0;
  for (const NodeProfile& n : profile.nodes) calls += n.calls;
  EXPECT_EQ(calls, profile.runs * static_cast<int64_t>(profile.nodes.size()));
}

// Caller buffers that alias each other or an input, or have the wrong type, are refused
// before anything is written.
TEST(OnednnAttack, RunIntoBuffersRefusesAliasingAndWrongTypes) {
  Result<Executable> exe = compile_with(residual_graph(), {"onednn", "cpu"});
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  const TensorMap in{{"x", grid({1, 16, 6, 6}, 1)}, {"q", grid({1, 16, 6, 6}, 2)}};
  std::vector<float> mem(2 * 16 * 36 + 1, 7.0F);
  const Shape s{1, 16, 6, 6};
  const std::string y = exe->output_signature()[0].first, o = exe->output_signature()[1].first;
  auto view = [&](size_t off) { return *Tensor::view(DTypeCode::kFloat32, s, mem.data() + off); };
  {
    TensorMap out{{y, view(0)}, {o, view(0)}};  // both outputs in one buffer
    EXPECT_FALSE(exe->run(in, out).is_ok());
  }
  {
    TensorMap out{{y, view(0)}, {o, view(16 * 36 - 1)}};  // overlapping by one element
    EXPECT_FALSE(exe->run(in, out).is_ok());
  }
  {
    TensorMap out{{y, in.at("x")}, {o, view(0)}};  // an output over an input
    EXPECT_FALSE(exe->run(in, out).is_ok());
  }
  {
    TensorMap out{{y, view(0)}, {o, *Tensor::empty(DTypeCode::kFloat32, Shape{16, 36})}};
    EXPECT_FALSE(exe->run(in, out).is_ok());
    TensorMap out2{{y, view(0)}, {o, Tensor()}};
    EXPECT_FALSE(exe->run(in, out2).is_ok());
    TensorMap out3{{y, view(0)}, {o, *Tensor::empty(DTypeCode::kFloat64, s)}};
    EXPECT_FALSE(exe->run(in, out3).is_ok());
  }
  for (float v : mem) ASSERT_EQ(v, 7.0F);  // refused runs wrote nothing
  // Adjacent, non-overlapping views are fine and give the cpu compile's values.
  TensorMap out{{y, view(0)}, {o, view(16 * 36)}};
  ASSERT_TRUE(exe->run(in, out).is_ok());
  Result<Executable> ref = compile_with(residual_graph(), {"cpu"});
  ASSERT_TRUE(ref.is_ok());
  Result<TensorMap> e = ref->run(in);
  ASSERT_TRUE(e.is_ok());
  for (const auto& [name, t] : *e) {
    const CompareResult c = compare_tensors(
        out.at(name), t, tolerance_for(DTypeCode::kFloat32, ToleranceClass::kCrossBackend));
    EXPECT_TRUE(c.ok) << name << ": " << c.message;
  }
  EXPECT_EQ(mem.back(), 7.0F);
}

// Executables compiled concurrently (lowering patterns, primitive creation and weight packing
// on several threads at once) give the cpu compile's values.
TEST(OnednnAttack, ConcurrentCompilesAgree) {
  const ir::Graph g = residual_graph();
  Result<Executable> ref = compile_with(g, {"cpu"});
  ASSERT_TRUE(ref.is_ok()) << ref.status().message();
  const TensorMap in{{"x", grid({1, 16, 6, 6}, 3)}, {"q", grid({1, 16, 6, 6}, 4)}};
  Result<TensorMap> e = ref->run(in);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  constexpr int kThreads = 6;
  std::atomic<int> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&] {
      for (int rep = 0; rep < 3; ++rep) {
        CompileOptions o;
        o.use_cache = false;
        Result<Executable> exe = compile(g, o);
        if (!exe.is_ok()) {
          ++failures;
          continue;
        }
        Result<TensorMap> a = exe->run(in);
        if (!a.is_ok()) {
          ++failures;
          continue;
        }
        for (const auto& [name, t] : *e) {
          if (!compare_tensors(a->at(name), t,
                               tolerance_for(DTypeCode::kFloat32, ToleranceClass::kCrossBackend))
                   .ok) {
            ++failures;
          }
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(failures.load(), 0);
}

std::atomic<int> g_prepare_icv{-1};

// relu whose prepare step records the OpenMP nthreads ICV it runs under.
Result<std::shared_ptr<void>> probe_prepare(const ops::NodeContext&) {
  g_prepare_icv = omp_get_max_threads();
  return std::shared_ptr<void>();
}
Status probe_relu(ops::KernelContext& ctx) {
  const float* x = ctx.input(0).data<float>();
  float* y = ctx.output(0).data<float>();
  for (int64_t i = 0; i < ctx.output(0).numel(); ++i) y[i] = x[i] > 0 ? x[i] : 0.0F;
  return Status();
}
FRAME_REGISTER_KERNEL(relu, "onednn_attack_probe", probe_relu)
    .dtypes({DTypeCode::kFloat32})
    .prepare(probe_prepare);

// oneDNN's JIT convolutions fix their thread count when the primitive is created (in the
// kernel's prepare step, at compile time) from the ICV of the creating thread: prepared under
// the compiling thread's default, `--threads 1` still ran every conv on all cores (measured:
// both threads of the 2-core machine busy). Prepare must see CompileOptions::num_threads, and
// the caller's ICV must be back afterwards.
TEST(OnednnAttack, PrepareRunsUnderTheCompiledThreadCount) {
  const int caller = omp_get_max_threads();
  for (int n : {1, 3, 5}) {
    ir::Graph g("probe");
    // 2 x 1 MiB: a node too large to run on one thread (src/runtime/node_threads.h).
    const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {int64_t{1} << 18}});
    const ir::NodeId r = *g.create_node("relu", "r", {x}, 1);
    g.add_output(g.node(r).outputs[0]);
    CompileOptions o;
    o.backends = {"onednn_attack_probe"};
    o.num_threads = n;
    o.use_cache = false;
    g_prepare_icv = -1;
    Result<Executable> exe = compile(g, o);
    ASSERT_TRUE(exe.is_ok()) << exe.status().message();
    EXPECT_EQ(g_prepare_icv.load(), n);
    EXPECT_EQ(omp_get_max_threads(), caller);
  }
}

// One Profile given to runs of two different Executables with the same number of steps: the
// second executable's times must not be added under the first one's node names (the contract:
// another executable's steps go to the rows of their own node, op, backend and path).
TEST(OnednnAttack, ProfileSharedByTwoExecutablesKeepsTheirStepsApart) {
  ir::Graph ga("a");
  const ir::ValueId xa = ga.add_input("x", ir::TensorType{DTypeCode::kFloat32, {4, 6}});
  const ir::ValueId wa = ga.add_constant("w", grid({6, 5}, 1));
  const ir::NodeId ma = *ga.create_node("matmul", "a_matmul", {xa, wa}, 1);
  const ir::NodeId sa = *ga.create_node("softmax", "a_softmax", {ga.node(ma).outputs[0]}, 1);
  ga.add_output(ga.node(sa).outputs[0]);
  ir::Graph gb("b");
  const ir::ValueId xb = gb.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 2, 6, 6}});
  const ir::ValueId wb = gb.add_constant("w", grid({3, 2, 3, 3}, 2));
  const ir::NodeId cb = *gb.create_node("conv", "b_conv", {xb, wb}, 1);
  const ir::NodeId pb = *gb.create_node("max_pool", "b_pool", {gb.node(cb).outputs[0]}, 1,
                                        {{"kernel_shape", ints{2, 2}}});
  gb.add_output(gb.node(pb).outputs[0]);
  Result<Executable> a = compile_with(ga, {"onednn", "cpu"});
  Result<Executable> b = compile_with(gb, {"onednn", "cpu"});
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  Profile profile;
  RunOptions ro;
  ro.profile = &profile;
  ASSERT_TRUE(a->run({{"x", grid({4, 6}, 3)}}, ro).is_ok());
  ASSERT_TRUE(b->run({{"x", grid({1, 2, 6, 6}, 4)}}, ro).is_ok());
  ASSERT_TRUE(a->run({{"x", grid({4, 6}, 5)}}, ro).is_ok());
  EXPECT_EQ(profile.runs, 3);
  ASSERT_EQ(profile.nodes.size(), 4u);
  EXPECT_EQ(profile.nodes[0].node, "a_matmul");
  for (const NodeProfile& n : profile.nodes) {
    EXPECT_EQ(n.calls, n.node.rfind("a_", 0) == 0 ? 2 : 1) << n.node;
  }
  EXPECT_EQ(profile.events.size(), 6u);
}

// Two post-ops of the same kind with different parameters (conv -> clip -> clip, matmul ->
// leaky_relu(0.1) -> leaky_relu(0.5)): the fused node must apply both, each with its own
// parameters.
TEST(OnednnAttack, RepeatedPostOpKindsKeepTheirOwnParameters) {
  {
    ir::Graph g("conv_clip_clip");
    const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 8, 5, 5}});
    const ir::ValueId w = g.add_constant("w", grid({8, 8, 3, 3}, 1));
    const ir::NodeId c = *g.create_node("conv", "c0", {x, w}, 1, {{"pads", ints{1, 1, 1, 1}}});
    const ir::NodeId k1 = *g.create_node(
        "clip", "k1",
        {g.node(c).outputs[0], scalar_constant(g, "a", -0.1F), scalar_constant(g, "b", 1.7F)}, 1);
    const ir::NodeId k2 = *g.create_node(
        "clip", "k2",
        {g.node(k1).outputs[0], scalar_constant(g, "c", -1.0F), scalar_constant(g, "d", 0.5F)}, 1);
    g.add_output(g.node(k2).outputs[0]);
    expect_default_matches_cpu(g, {{"x", grid({1, 8, 5, 5}, 2)}});
  }
  {
    ir::Graph g("mm_leaky_leaky");
    const ir::ValueId a = g.add_input("a", ir::TensorType{DTypeCode::kFloat32, {4, 16}});
    const ir::ValueId b = g.add_constant("b", grid({16, 16}, 3));
    const ir::NodeId m = *g.create_node("matmul", "m0", {a, b}, 1);
    const ir::NodeId l1 =
        *g.create_node("leaky_relu", "l1", {g.node(m).outputs[0]}, 1, {{"alpha", 0.1}});
    const ir::NodeId l2 =
        *g.create_node("leaky_relu", "l2", {g.node(l1).outputs[0]}, 1, {{"alpha", 0.5}});
    g.add_output(g.node(l2).outputs[0]);
    expect_default_matches_cpu(g, {{"a", grid({4, 16}, 4)}});
  }
  {
    // Not adjacent, and relu after leaky_relu (both oneDNN eltwise_relu): gemm -> leaky_relu
    // (0.1) -> sigmoid -> relu would have run the relu with slope 0.1.
    ir::Graph g("gemm_leaky_tanh_relu");
    const ir::ValueId a = g.add_input("a", ir::TensorType{DTypeCode::kFloat32, {4, 16}});
    const ir::ValueId b = g.add_constant("b", grid({16, 16}, 5));
    const ir::NodeId m = *g.create_node("gemm", "m0", {a, b}, 1);
    const ir::NodeId l1 =
        *g.create_node("leaky_relu", "l1", {g.node(m).outputs[0]}, 1, {{"alpha", 0.1}});
    const ir::NodeId t = *g.create_node("tanh", "t", {g.node(l1).outputs[0]}, 1);
    const ir::NodeId r = *g.create_node("relu", "r", {g.node(t).outputs[0]}, 1);
    g.add_output(g.node(r).outputs[0]);
    expect_default_matches_cpu(g, {{"a", grid({4, 16}, 6)}});
  }
}

}  // namespace
}  // namespace frame::runtime
