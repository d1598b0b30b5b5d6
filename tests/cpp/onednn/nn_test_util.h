#pragma once
/// \file
/// Helpers of the onednn pooling / softmax / normalization tests: random inputs, onednn vs the
/// cpu reference kernel under the BUILD-011 cross-backend class, decline checks through
/// KernelDef::supports, and one-node graphs compiled with backends = {"onednn"} to check the
/// placement (M10).

#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.h>

#include <random>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "common/tolerance.h"
#include "frame/runtime/compile.h"

namespace frame::test::onednn {

/// True when oneDNN runs bf16 on this CPU (AVX-512 and later); on older CPUs the onednn
/// kernels decline bf16 nodes and the bf16 tests skip.
inline bool onednn_has_bf16() {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const auto need = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
  return (isa & need) == need;
}

/// Skips the calling test when oneDNN has no bf16 support on this CPU.
#define FRAME_SKIP_WITHOUT_ONEDNN_BF16() \
  if (!::frame::test::onednn::onednn_has_bf16()) GTEST_SKIP() << "oneDNN has no bf16 on this CPU"

/// Normal(0, scale) values of `shape` in dtype `dt` (f32 or bf16), from `seed`.
inline Tensor random_tensor(Shape shape, uint32_t seed, double scale = 1.0,
                            DTypeCode dt = DTypeCode::kFloat32) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<float> v(static_cast<size_t>(numel_of(shape)));
  for (float& x : v) x = static_cast<float>(dist(rng));
  Tensor t = Tensor::from_vector<float>(shape, v);
  if (dt == DTypeCode::kBFloat16) {
    std::vector<BFloat16> b(v.size());
    for (size_t i = 0; i < v.size(); ++i) b[i] = BFloat16(v[i]);
    t = Tensor::from_vector<BFloat16>(shape, b);
  }
  return t;
}

/// Uniform [lo, hi) f32 values (positive variances).
inline Tensor uniform_tensor(Shape shape, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(numel_of(shape)));
  for (float& x : v) x = dist(rng);
  return Tensor::from_vector<float>(shape, v);
}

/// Runs `call` on onednn (which must accept it) and on cpu, and compares every output under
/// the BUILD-011 cross-backend tolerance of its dtype.
inline void expect_matches_cpu(const OpCall& call) {
  Result<KernelSupport> sup = kernel_supports(call, "onednn");
  ASSERT_TRUE(sup.is_ok()) << sup.status().to_string();
  ASSERT_TRUE(sup->supported) << "onednn declines: " << sup->reason;
  Result<std::vector<Tensor>> got = run_op(call, "onednn");
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  Result<std::vector<Tensor>> want = run_op(call, "cpu");
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    const Tensor& e = (*want)[i];
    CompareResult r =
        compare_tensors((*got)[i], e, tolerance_for(e.dtype(), ToleranceClass::kCrossBackend));
    EXPECT_TRUE(r.ok) << call.op << " output " << i << ": " << r.message;
  }
}

/// Expects the onednn kernel to decline `call` with a reason containing `why`.
inline void expect_declined(const OpCall& call, const std::string& why) {
  Result<KernelSupport> sup = kernel_supports(call, "onednn");
  ASSERT_TRUE(sup.is_ok()) << sup.status().to_string();
  EXPECT_FALSE(sup->supported);
  EXPECT_NE(sup->reason.find(why), std::string::npos) << sup->reason;
}

/// `call` as a one-node graph (inputs listed in `constant_inputs` become constants, the rest
/// graph inputs), compiled with backends = {"onednn"}; returns the executable.
inline Result<runtime::Executable> compile_on_onednn(const OpCall& call) {
  ir::Graph g("onednn_test");
  std::vector<ir::ValueId> ins;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& t = call.inputs[i];
    if (!t.defined()) {
      ins.push_back(ir::kNoValue);
      continue;
    }
    bool constant = false;
    for (size_t c : call.constant_inputs) constant = constant || c == i;
    const std::string name = "in" + std::to_string(i);
    ins.push_back(constant ? g.add_constant(name, t)
                           : g.add_input(name, ir::TensorType{t.dtype(), t.shape()}));
  }
  std::vector<std::string> outs;
  for (size_t i = 0; i < call.num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  FRAME_ASSIGN_OR_RETURN(
      ir::NodeId n, g.create_node(call.op, call.node_name, ins, static_cast<int>(call.num_outputs),
                                  call.attrs, outs));
  for (ir::ValueId v : g.node(n).outputs) g.add_output(v);
  runtime::CompileOptions o;
  o.backends = {"onednn"};
  o.use_cache = false;
  return runtime::compile(g, o);
}

/// The placement of node `node` in `exe`'s report (fails the test when absent).
inline runtime::Placement placement_of(const runtime::Executable& exe, const std::string& node) {
  for (const runtime::Placement& p : exe.report().placements) {
    if (p.node == node) return p;
  }
  ADD_FAILURE() << "no placement for node '" << node << "'";
  return {};
}

/// Graph inputs of `call` (the non-constant, present inputs) by name, as compile_on_onednn
/// names them.
inline runtime::TensorMap graph_inputs(const OpCall& call) {
  runtime::TensorMap m;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    bool constant = false;
    for (size_t c : call.constant_inputs) constant = constant || c == i;
    if (call.inputs[i].defined() && !constant) m["in" + std::to_string(i)] = call.inputs[i];
  }
  return m;
}

/// Compiles `call` on onednn, expects it placed on onednn with path "kernel", runs it and
/// compares output 0 with the cpu kernel under the cross-backend class.
inline void expect_runs_on_onednn(const OpCall& call) {
  Result<runtime::Executable> exe = compile_on_onednn(call);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const runtime::Placement p = placement_of(*exe, call.node_name);
  EXPECT_EQ(p.backend, "onednn");
  EXPECT_EQ(p.path, "kernel");
  Result<runtime::TensorMap> out = exe->run(graph_inputs(call));
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  Result<std::vector<Tensor>> want = run_op(call, "cpu");
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  const Tensor& e = (*want)[0];
  CompareResult r =
      compare_tensors(out->at("out0"), e, tolerance_for(e.dtype(), ToleranceClass::kCrossBackend));
  EXPECT_TRUE(r.ok) << r.message;
}

/// Compiles `call` on onednn and expects the node to fall back to cpu (path "cpu-fallback"),
/// with onednn's rejection naming `why`; runs it and compares every output with the cpu kernel.
inline void expect_falls_back_to_cpu(const OpCall& call, const std::string& why) {
  Result<runtime::Executable> exe = compile_on_onednn(call);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const runtime::Placement p = placement_of(*exe, call.node_name);
  EXPECT_EQ(p.backend, "cpu");
  EXPECT_EQ(p.path, "cpu-fallback");
  bool named = false;
  for (const std::string& r : p.rejected) {
    named = named || (r.rfind("onednn:", 0) == 0 && r.find(why) != std::string::npos);
  }
  EXPECT_TRUE(named) << "no onednn rejection naming '" << why << "'";
  Result<runtime::TensorMap> out = exe->run(graph_inputs(call));
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  Result<std::vector<Tensor>> want = run_op(call, "cpu");
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  for (size_t i = 0; i < want->size(); ++i) {
    CompareResult r = compare_tensors(out->at("out" + std::to_string(i)), (*want)[i],
                                      tolerance_for((*want)[i].dtype()));
    EXPECT_TRUE(r.ok) << "output " << i << ": " << r.message;
  }
}

}  // namespace frame::test::onednn
