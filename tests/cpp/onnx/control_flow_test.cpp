// Control flow end to end (ONNX If, Loop, Scan; ADR 0006 decision 5): models and expected
// outputs come from tests/onnx_models/gen_control_flow.py (numpy computations of each model's
// ONNX semantics, never frame's output), imported, compiled and run on the cpu chain and the
// default chain.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/tolerance.h"
#include "frame/core/npy.h"
#include "frame/onnx/onnx.h"
#include "frame/passes/shape_determining.h"
#include "frame/runtime/compile.h"
#include "model_builder.h"

namespace frame::onnx {
namespace {

namespace fs = std::filesystem;

std::string case_dir(const std::string& name) {
  return std::string(FRAME_CF_MODELS_DIR) + "/" + name;
}

// Every in_<name>.npy / out_<name>.npy of one run.
std::map<std::string, Tensor> read_prefixed(const std::string& dir, const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string file = e.path().filename().string();
    if (file.rfind(prefix, 0) != 0 || e.path().extension() != ".npy") continue;
    const std::string name = file.substr(prefix.size(), file.size() - prefix.size() - 4);
    Result<Tensor> t = read_npy(e.path().string());
    EXPECT_TRUE(t.is_ok()) << t.status().message();
    if (t.is_ok()) out[name] = *t;
  }
  return out;
}

Result<ir::Graph> load_case(const std::string& name, const std::string& run = "",
                            const std::vector<std::string>& bind = {}) {
  LoadOptions o;
  if (!bind.empty()) {
    std::map<std::string, Tensor> ins = read_prefixed(case_dir(name) + "/" + run, "in_");
    for (const std::string& b : bind) o.constant_inputs[b] = ins.at(b);
  }
  return load(case_dir(name) + "/model.onnx", o);
}

// Runs `exe` on the run's inputs (minus the bound ones) and compares every output.
void expect_run(const runtime::Executable& exe, const std::string& name, const std::string& run,
                const std::vector<std::string>& bound = {}) {
  const std::string dir = case_dir(name) + "/" + run;
  std::map<std::string, Tensor> ins = read_prefixed(dir, "in_");
  for (const std::string& b : bound) ins.erase(b);
  const std::map<std::string, Tensor> want = read_prefixed(dir, "out_");
  Result<runtime::TensorMap> got = exe.run(ins);
  ASSERT_TRUE(got.is_ok()) << name << "/" << run << ": " << got.status().message();
  ASSERT_EQ(got->size(), want.size());
  for (const auto& [k, e] : want) {
    ASSERT_TRUE(got->count(k)) << k;
    const test::CompareResult r =
        test::compare_tensors(got->at(k), e, test::tolerance_for(e.dtype()));
    EXPECT_TRUE(r.ok) << name << "/" << run << " output " << k << ": " << r.message;
  }
}

runtime::Executable compile_ok(const ir::Graph& g, std::vector<std::string> backends) {
  runtime::CompileOptions o;
  o.backends = std::move(backends);
  o.use_cache = false;
  Result<runtime::Executable> exe = runtime::compile(g, o);
  EXPECT_TRUE(exe.is_ok()) << exe.status().message();
  return std::move(exe).value();
}

const std::vector<std::vector<std::string>> kChains = {{"cpu"}, {"auto"}};

TEST(ControlFlow, IfWithRuntimeConditionRunsEitherBranch) {
  Result<ir::Graph> g = load_case("if_runtime");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  // The else branch reads `y` from the outer graph: an explicit input of the node.
  bool found = false;
  for (ir::NodeId id : g->node_ids()) {
    const ir::Node& n = g->node(id);
    if (n.op != "if") continue;
    found = true;
    ASSERT_EQ(n.inputs.size(), 3u);  // cond, then the captured x and y
    EXPECT_EQ(g->value(n.inputs[1]).name, "x");
    EXPECT_EQ(g->value(n.inputs[2]).name, "y");
  }
  EXPECT_TRUE(found);
  for (const auto& chain : kChains) {
    runtime::Executable exe = compile_ok(*g, chain);
    EXPECT_EQ(exe.report().op_counts_after.count("if"), 1u);
    expect_run(exe, "if_runtime", "true");
    expect_run(exe, "if_runtime", "false");
    expect_run(exe, "if_runtime", "true");  // the run slot's body arenas are reused
  }
}

TEST(ControlFlow, IfWithConstantConditionIsInlinedOnEveryChain) {
  Result<ir::Graph> g = load_case("if_const");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  for (const auto& chain : kChains) {
    runtime::Executable exe = compile_ok(*g, chain);
    EXPECT_EQ(exe.report().op_counts_after.count("if"), 0u) << chain[0];
    for (const auto& p : exe.report().placements) EXPECT_NE(p.op, "if");
    expect_run(exe, "if_const", "run");
  }
  // The selected branch returns a captured value unchanged, and it is the graph output.
  Result<ir::Graph> pass = load_case("if_const_passthrough");
  ASSERT_TRUE(pass.is_ok()) << pass.status().message();
  for (const auto& chain : kChains) {
    runtime::Executable exe = compile_ok(*pass, chain);
    EXPECT_EQ(exe.report().op_counts_after.count("if"), 0u) << chain[0];
    expect_run(exe, "if_const_passthrough", "run");
  }
}

TEST(ControlFlow, IfWithBranchesOfDifferentShapesNeedsABoundCondition) {
  for (const std::string run : {"true", "false"}) {
    Result<ir::Graph> g = load_case("if_shapes", run, {"cond"});
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    for (const auto& chain : kChains) {
      runtime::Executable exe = compile_ok(*g, chain);
      EXPECT_EQ(exe.report().op_counts_after.count("if"), 0u);
      expect_run(exe, "if_shapes", run, {"cond"});
    }
  }
  Result<ir::Graph> g = load_case("if_shapes");
  ASSERT_FALSE(g.is_ok());
  const std::string msg = g.status().message();
  EXPECT_NE(msg.find("input 0 (cond) must be a constant"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the condition decides the output shape"), std::string::npos) << msg;
  EXPECT_NE(msg.find("then_branch (f32[3,2]), else_branch (f32[2,3])"), std::string::npos) << msg;
}

TEST(ControlFlow, LoopWithTripCountAndScanOutputs) {
  Result<ir::Graph> g = load_case("loop_scan", "run", {"M", "cond"});
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  for (const auto& chain : kChains) {
    runtime::Executable exe = compile_ok(*g, chain);
    expect_run(exe, "loop_scan", "run", {"M", "cond"});
    expect_run(exe, "loop_scan", "run", {"M", "cond"});
  }
  // Unbound, the trip count decides the scan output's leading dim (ARCH-044).
  Result<ir::Graph> unbound = load_case("loop_scan");
  ASSERT_FALSE(unbound.is_ok());
  EXPECT_NE(unbound.status().message().find("input 0 (M) must be a constant"), std::string::npos)
      << unbound.status().message();
}

TEST(ControlFlow, NestedIfAndLoopCaptureOuterValuesAtEveryDepth) {
  // No scan outputs: the trip count stays a run-time input.
  Result<ir::Graph> g = load_case("loop_nested");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  for (ir::NodeId id : g->node_ids()) {
    const ir::Node& n = g->node(id);
    if (n.op != "loop") continue;
    // M, cond, acc0, then x (read two bodies down, by the inner Loop).
    ASSERT_EQ(n.inputs.size(), 4u);
    EXPECT_EQ(g->value(n.inputs[3]).name, "x");
    EXPECT_EQ(std::get<int64_t>(n.attrs.at("num_captured")), 1);
  }
  for (const auto& chain : kChains) {
    runtime::Executable exe = compile_ok(*g, chain);
    expect_run(exe, "loop_nested", "m3");
    expect_run(exe, "loop_nested", "m0");
    expect_run(exe, "loop_nested", "m3");
  }
}

TEST(ControlFlow, LoopWhoseBodyDecidesWhenToStop) {
  Result<ir::Graph> g = load_case("loop_while");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  for (const auto& chain : kChains) {
    runtime::Executable exe = compile_ok(*g, chain);
    expect_run(exe, "loop_while", "run");
    expect_run(exe, "loop_while", "skip");
  }
  // With scan outputs the iteration count would be a dim decided by data (ARCH-044), even
  // with a constant trip count.
  std::map<std::string, Tensor> m = {{"M", Tensor::scalar<int64_t>(5)}};
  LoadOptions o;
  o.constant_inputs = m;
  Result<ir::Graph> scan = load(case_dir("loop_while_scan") + "/model.onnx", o);
  ASSERT_FALSE(scan.is_ok());
  EXPECT_NE(scan.status().message().find(
                "body 'while_body' computes the loop condition, so the number of iterations"),
            std::string::npos)
      << scan.status().message();
}

TEST(ControlFlow, LoopWhoseBodyNeedsAConstantIterationIsUnrolled) {
  Result<ir::Graph> g = load_case("loop_unroll", "run", {"M", "cond"});
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  for (const auto& chain : kChains) {
    runtime::Executable exe = compile_ok(*g, chain);
    // Each iteration became an if with a constant condition, which the decomposition inlined.
    EXPECT_EQ(exe.report().op_counts_after.count("if"), 0u);
    EXPECT_EQ(exe.report().op_counts_after.count("loop"), 0u);
    expect_run(exe, "loop_unroll", "run", {"M", "cond"});
  }
  // With a run-time trip count the Slice inside the body has no static shape (ARCH-044).
  Result<ir::Graph> unbound = load_case("loop_unroll");
  ASSERT_FALSE(unbound.is_ok());
  EXPECT_NE(unbound.status().message().find("input 1 (starts) must be a constant"),
            std::string::npos)
      << unbound.status().message();
}

TEST(ControlFlow, ConcurrentRunsUseTheirOwnBodyRunners) {
  // Each run slot owns its body runners (arena + carried buffers): four threads running the
  // nested loop with different trip counts all get their own answers.
  Result<ir::Graph> g = load_case("loop_nested");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  runtime::Executable exe = compile_ok(*g, {"cpu"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&exe, t] {
      for (int k = 0; k < 20; ++k) expect_run(exe, "loop_nested", (t + k) % 2 == 0 ? "m3" : "m0");
    });
  }
  for (std::thread& t : threads) t.join();
}

// If nodes nested `depth` deep along their then branches; the leaves read `c` from the top
// graph.
std::string nested_ifs(int depth) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  ::onnx::GraphProto inner;
  inner.set_name("leaf");
  auto* id = inner.add_node();
  id->set_op_type("Not");
  id->add_input("c");
  id->add_output("leaf_out");
  *inner.add_output() = testing::value_info("leaf_out", ::onnx::TensorProto::BOOL, {});
  const ::onnx::GraphProto leaf = inner;
  for (int d = 0; d < depth; ++d) {
    ::onnx::GraphProto outer;
    outer.set_name("level" + std::to_string(d));
    auto* n = outer.add_node();
    n->set_op_type("If");
    n->add_input("c");
    n->add_output("out" + std::to_string(d));
    for (const char* name : {"then_branch", "else_branch"}) {
      auto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(::onnx::AttributeProto::GRAPH);
      // The else branch is the leaf, so the model grows linearly with depth.
      *a->mutable_g() = std::string_view(name) == "then_branch" ? inner : leaf;
    }
    *outer.add_output() =
        testing::value_info("out" + std::to_string(d), ::onnx::TensorProto::BOOL, {});
    inner = outer;
  }
  *inner.add_input() = testing::value_info("c", ::onnx::TensorProto::BOOL, {});
  *m.mutable_graph() = inner;
  return m.SerializeAsString();
}

TEST(ControlFlow, NestingIsBoundedAndCapturesReachEveryLevel) {
  // Three levels: c is read by the leaf only and captured through each If on the way.
  Result<ir::Graph> g = load_from_bytes(nested_ifs(3));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  runtime::Executable exe = compile_ok(*g, {"cpu"});
  for (bool c : {true, false}) {
    Result<runtime::TensorMap> out = exe.run({{"c", Tensor::scalar<bool>(c)}});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(*out->at("out2").data<bool>(), !c);
  }
  Result<ir::Graph> deep = load_from_bytes(nested_ifs(20));
  ASSERT_FALSE(deep.is_ok());
  EXPECT_NE(deep.status().message().find("nested deeper than 16 levels"), std::string::npos)
      << deep.status().message();
}

TEST(ControlFlow, AValueCapturedIntoABodyCanBeShapeDetermining) {
  // `shape` reaches a Reshape shape inside the Loop body; M only bounds the iterations (no
  // scan outputs), so it is not shape-determining.
  LoadOptions o;
  o.keep_untyped = true;
  Result<ir::Graph> g = load(case_dir("loop_capture_shape") + "/model.onnx", o);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const std::vector<passes::ShapeDeterminingInput> sdi = passes::shape_determining_inputs(*g);
  ASSERT_EQ(sdi.size(), 1u);
  EXPECT_EQ(sdi[0].name, "shape");
  ASSERT_EQ(sdi[0].uses.size(), 1u);
  EXPECT_EQ(sdi[0].uses[0].op, "loop");
  EXPECT_EQ(sdi[0].uses[0].input, 3u);  // M, cond, y0, then the captured shape
  // Bound, the model compiles and runs (relu over the reshaped carried value).
  LoadOptions b;
  b.constant_inputs["shape"] = Tensor::from_vector<int64_t>({2}, {2, 3});
  Result<ir::Graph> bound = load(case_dir("loop_capture_shape") + "/model.onnx", b);
  ASSERT_TRUE(bound.is_ok()) << bound.status().message();
  runtime::Executable exe = compile_ok(*bound, {"cpu"});
  Result<runtime::TensorMap> out =
      exe.run({{"M", Tensor::scalar<int64_t>(2)},
               {"y0", Tensor::from_vector<float>({6}, {-1, 2, -3, 4, -5, 6})}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const std::vector<float> want = {0, 2, 0, 4, 0, 6};  // relu, by hand
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(out->at("y").data<float>()[k], want[k]);
}

TEST(ControlFlow, LoopCarriedValueMustKeepItsShape) {
  Result<ir::Graph> g = load_case("loop_carried_change");
  ASSERT_FALSE(g.is_ok());
  const std::string msg = g.status().message();
  // M is a graph input here: the loop cannot be unrolled, so the growing value is an error.
  EXPECT_NE(msg.find("body 'grow_body': loop-carried value 'v_in' enters as f32[2] but leaves an "
                     "iteration as f32[4]"),
            std::string::npos)
      << msg;
}

TEST(ControlFlow, ScanOpset9AxesAndDirections) {
  Result<ir::Graph> g = load_case("scan9");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  for (const auto& chain : kChains) expect_run(compile_ok(*g, chain), "scan9", "run");
}

TEST(ControlFlow, ScanOpset11NegativeAxesAndCapture) {
  Result<ir::Graph> g = load_case("scan11");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  for (const auto& chain : kChains) expect_run(compile_ok(*g, chain), "scan11", "run");
}

TEST(ControlFlow, ScanOpset8BatchedForm) {
  Result<ir::Graph> g = load_case("scan8");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  for (const auto& chain : kChains) expect_run(compile_ok(*g, chain), "scan8", "run");
}

}  // namespace
}  // namespace frame::onnx
