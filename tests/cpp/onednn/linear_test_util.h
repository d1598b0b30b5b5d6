#pragma once
// Helpers of the onednn conv / matmul / pattern tests: exactly representable inputs and
// onednn-vs-cpu comparison of one op (the cpu kernel is the reference, BUILD-011 op class).

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/op_runner.h"
#include "common/tolerance.h"
#include "frame/ir/graph.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/pass.h"
#include "frame/runtime/compile.h"

namespace frame::test::linear {

/// Compile options for `backends` (in preference order) with the compile cache off, so every
/// test compiles its graph afresh.
inline runtime::CompileOptions uncached(std::vector<std::string> backends) {
  runtime::CompileOptions o;
  o.backends = std::move(backends);
  o.use_cache = false;
  return o;
}

/// True when the CPU has VNNI (AVX512_VNNI or AVX_VNNI, read from cpuid by the compiler's
/// builtin, apart from the backend): only then do the onednn int8 kernels run; without it
/// oneDNN's int8 sums saturate and they decline (docs/backends/onednn.md, "int8 without VNNI").
inline bool cpu_has_vnni() {
  return __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
}

/// f32 tensor of multiples of 1/8 in [-2, 2]: products and sums of a few thousand terms are
/// exact in f32, so a mismatch is a wrong element, not a summation order.
inline Tensor grid_tensor(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-16, 16);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(dist(rng)) / 8.0F;
  return Tensor::from_vector(std::move(shape), v);
}

/// Adds a one-output node `op` named `name` reading `ins`, its output named `<name>:0`;
/// returns the output. A failed create_node is a test failure.
inline ir::ValueId add_op(ir::Graph& g, std::string_view op, std::string name,
                          std::vector<ir::ValueId> ins, ir::AttrMap attrs = {}) {
  auto id = g.create_node(op, std::move(name), std::move(ins), 1, std::move(attrs));
  EXPECT_TRUE(id.is_ok()) << id.status().to_string();
  return g.node(*id).outputs[0];
}

/// Runs `call` on onednn and on cpu, with the weight inputs `constant` shown as constants
/// (prepare reorders them once) and without, each with and without
/// NodeContext::prefer_shape_agnostic (ADR 0007: e.g. matmul primitives with runtime dims),
/// and expects equal outputs (BUILD-011 op class).
inline void expect_onednn_matches_cpu(OpCall call, const std::vector<size_t>& constant) {
  Result<std::vector<Tensor>> ref = run_op(call, "cpu");
  ASSERT_TRUE(ref.is_ok()) << ref.status().message();
  for (int pass = 0; pass < 2; ++pass) {
    call.constant_inputs = pass == 0 ? std::vector<size_t>{} : constant;
    for (bool agnostic : {false, true}) {
      call.prefer_shape_agnostic = agnostic;
      call.run_once = agnostic;  // the interpreted tier's conv (conv_agnostic.cpp)
      for (int threads : {1, 2}) {
        call.num_threads = threads;
        Result<std::vector<Tensor>> got = run_op(call, "onednn");
        ASSERT_TRUE(got.is_ok()) << got.status().message();
        CompareResult c = compare_tensors((*got)[0], (*ref)[0], tolerance_for(DTypeCode::kFloat32));
        EXPECT_TRUE(c.ok) << call.op << " (constant weights: " << pass
                          << ", shape-agnostic: " << agnostic << "): " << c.message;
      }
    }
  }
}

/// Live nodes of op `op` in `g`.
// Plain [N, C, H, W] -> nhwc (`layout` 1), nChw8c (8) or nChw16c (16), by index arithmetic
// independent of the kernels' helpers (the layouts of ops::fused::ActivationLayout); 0: `t`.
inline Tensor to_layout(const Tensor& t, int64_t layout) {
  if (layout == 0) return t;
  const int64_t n = t.dim(0), c = t.dim(1), hw = t.dim(2) * t.dim(3);
  std::vector<float> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t s = 0; s < hw; ++s) {
        const int64_t b = layout;  // channels per block of nChw8c / nChw16c
        const int64_t at =
            layout == 1 ? (i * hw + s) * c + ch : (((i * (c / b)) + ch / b) * hw + s) * b + ch % b;
        out[static_cast<size_t>(at)] = t.data<float>()[(i * c + ch) * hw + s];
      }
    }
  }
  return Tensor::from_vector(t.shape(), out);
}

inline int count_op(const ir::Graph& g, std::string_view op) {
  int n = 0;
  for (ir::NodeId id : g.node_ids()) n += g.node(id).op == op ? 1 : 0;
  return n;
}

/// Runs the standard pipeline on `g` in place with `backends`, skipping the passes named in
/// `skip`, verified after every pass; returns the lowering rewrites it applied (their labels).
/// A failing pipeline or an unverifiable result is a test failure.
inline std::vector<std::string> lower(ir::Graph& g, std::vector<std::string> backends,
                                      const std::vector<std::string>& skip = {}) {
  passes::PassContext ctx;
  ctx.backends = std::move(backends);
  ctx.verify_after_each = true;
  Status s = passes::run_pipeline(g, passes::kStandardPipeline, ctx, skip);
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_TRUE(g.verify(ops::make_op_query()).is_ok());
  return ctx.lowering_rewrites;
}

/// `g` after the standard pipeline with `backends`, verified after every pass (a failing
/// pipeline is a test failure).
inline ir::Graph lowered(const ir::Graph& g, std::vector<std::string> backends) {
  ir::Graph out = g;
  lower(out, std::move(backends));
  return out;
}

/// The placement of node `name` in a compiled executable's report.
inline runtime::Placement placement_of(const runtime::Executable& exe, const std::string& name) {
  for (const runtime::Placement& p : exe.report().placements) {
    if (p.node == name) return p;
  }
  return runtime::Placement{};
}

/// Compiles `g` for onednn,cpu and for cpu alone, runs both on `inputs` at 1 and 2 threads and
/// compares every output within BUILD-011 class `tol` (by default cross-backend: a fused kernel
/// reassociates sums); each node named in `onednn_nodes` must run on an onednn kernel. The cpu-only
/// compile runs each op's own reference kernel: an independent reference.
inline void expect_same_as_unfused(const ir::Graph& g, const runtime::TensorMap& inputs,
                                   ToleranceClass tol = ToleranceClass::kCrossBackend,
                                   const std::vector<std::string>& onednn_nodes = {}) {
  Result<runtime::Executable> ref = runtime::compile(g, uncached({"cpu"}));
  ASSERT_TRUE(ref.is_ok()) << ref.status().message();
  Result<runtime::TensorMap> want = ref->run(inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().message();
  for (int threads : {1, 2}) {
    runtime::CompileOptions o = uncached({"onednn", "cpu"});
    o.num_threads = threads;
    Result<runtime::Executable> fast = runtime::compile(g, o);
    ASSERT_TRUE(fast.is_ok()) << fast.status().message();
    for (const std::string& n : onednn_nodes) {
      const runtime::Placement p = placement_of(*fast, n);
      EXPECT_EQ(p.backend, "onednn") << n;
      EXPECT_EQ(p.path, "kernel") << n;
    }
    Result<runtime::TensorMap> got = fast->run(inputs);
    ASSERT_TRUE(got.is_ok()) << got.status().message();
    ASSERT_EQ(got->size(), want->size());
    for (const auto& [name, t] : *want) {
      const CompareResult c =
          compare_tensors(got->at(name), t, tolerance_for(DTypeCode::kFloat32, tol));
      EXPECT_TRUE(c.ok) << name << " at " << threads << " thread(s): " << c.message;
    }
  }
}

}  // namespace frame::test::linear
