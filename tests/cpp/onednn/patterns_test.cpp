// onednn lowering patterns (src/backends/onednn/patterns.cpp): batch-norm folding into conv and
// post-op fusion into fused_post_ops_internal. Each rewritten graph is checked against the
// unrewritten graph run on cpu (BUILD-011), for its node count, for V1-V4 after every pass, and
// for not firing with backends {"cpu"} or when an intermediate value has a second use.

#include <gtest/gtest.h>

#include <cmath>

#include "cpp/onednn/linear_test_util.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/pass.h"

namespace frame::test::linear {
namespace {

using ints = std::vector<int64_t>;

// Compiles `g` with onednn first and with cpu only, runs both on `inputs` and compares.
// `tol` is the BUILD-011 class: rewrites that reassociate (folded weights) use kDeepNetwork.
void expect_same_as_cpu(const ir::Graph& g, const runtime::TensorMap& inputs,
                        ToleranceClass tol = ToleranceClass::kOp,
                        const std::vector<std::string>& skip = {}) {
  runtime::CompileOptions on = uncached({"onednn", "cpu"});
  on.disabled_passes = skip;
  runtime::CompileOptions ref = uncached({"cpu"});
  Result<runtime::Executable> fast = runtime::compile(g, on);
  Result<runtime::Executable> slow = runtime::compile(g, ref);
  ASSERT_TRUE(fast.is_ok()) << fast.status().message();
  ASSERT_TRUE(slow.is_ok()) << slow.status().message();
  for (const runtime::Placement& p : fast->report().placements) {
    if (p.op == "fused_post_ops_internal" || p.op == "conv") {
      EXPECT_EQ(p.backend, "onednn") << p.node;
      EXPECT_EQ(p.path, "kernel") << p.node;
    }
  }
  Result<runtime::TensorMap> a = fast->run(inputs), e = slow->run(inputs);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  for (const auto& [name, t] : *e) {
    const CompareResult c =
        compare_tensors(a->at(name), t, tolerance_for(DTypeCode::kFloat32, tol));
    EXPECT_TRUE(c.ok) << name << ": " << c.message;
  }
}

Tensor positive(Shape s, uint32_t seed) {
  Tensor t = grid_tensor(std::move(s), seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::fabs(t.data<float>()[i]) + 0.5F;
  return t;
}

// x -> conv(W, B) -> batch_normalization -> [relu] -> output.
ir::Graph conv_bn(bool relu, bool conv_bias) {
  ir::Graph g("conv_bn");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 6, 10, 9}});
  const ir::ValueId w = g.add_constant("w", grid_tensor({8, 6, 3, 3}, 1));
  std::vector<ir::ValueId> in{x, w};
  if (conv_bias) in.push_back(g.add_constant("b", grid_tensor({8}, 2)));
  const ir::NodeId c = *g.create_node("conv", "conv0", in, 1, {{"pads", ints{1, 1, 1, 1}}});
  const ir::ValueId bn_in[] = {g.node(c).outputs[0], g.add_constant("scale", positive({8}, 3)),
                               g.add_constant("shift", grid_tensor({8}, 4)),
                               g.add_constant("mean", grid_tensor({8}, 5)),
                               g.add_constant("var", positive({8}, 6))};
  const ir::NodeId bn = *g.create_node("batch_normalization", "bn0",
                                       std::vector<ir::ValueId>(std::begin(bn_in), std::end(bn_in)),
                                       1, {{"epsilon", 1e-3}});
  ir::ValueId out = g.node(bn).outputs[0];
  if (relu) out = add_op(g, "relu", "relu0", {out});
  g.add_output(out);
  return g;
}

TEST(OnednnPatterns, BatchNormFoldedIntoConv) {
  for (bool bias : {false, true}) {
    ir::Graph g = conv_bn(false, bias);
    ir::Graph lowered = g;
    const std::vector<std::string> rw = lower(lowered, {"onednn", "cpu"});
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_NE(rw[0].find("fold_batch_norm_into_conv"), std::string::npos) << rw[0];
    EXPECT_EQ(lowered.num_nodes(), 1u);
    EXPECT_EQ(count_op(lowered, "batch_normalization"), 0);
    // Folding rounds W*s once instead of conv then normalize: deep-network class (BUILD-011).
    expect_same_as_cpu(g, {{"x", grid_tensor({1, 6, 10, 9}, 9)}}, ToleranceClass::kDeepNetwork);
  }
}

TEST(OnednnPatterns, CompileReportListsTheRewrites) {
  runtime::CompileOptions o = uncached({"onednn", "cpu"});
  Result<runtime::Executable> exe = runtime::compile(conv_bn(false, true), o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  ASSERT_EQ(exe->report().lowering_rewrites.size(), 1u);
  EXPECT_NE(exe->report().lowering_rewrites[0].find("onednn/fold_batch_norm_into_conv"),
            std::string::npos);
  EXPECT_NE(exe->report().to_json().find("fold_batch_norm_into_conv"), std::string::npos);
  o.backends = {"cpu"};
  Result<runtime::Executable> ref = runtime::compile(conv_bn(false, true), o);
  ASSERT_TRUE(ref.is_ok()) << ref.status().message();
  EXPECT_TRUE(ref->report().lowering_rewrites.empty());
}

TEST(OnednnPatterns, BatchNormThenReluBecomesOneFusedConv) {
  ir::Graph g = conv_bn(true, true);
  ir::Graph lowered = g;
  const std::vector<std::string> rw = lower(lowered, {"onednn", "cpu"});
  EXPECT_EQ(rw.size(), 2u);
  EXPECT_EQ(lowered.num_nodes(), 1u);
  EXPECT_EQ(count_op(lowered, "fused_post_ops_internal"), 1);
  expect_same_as_cpu(g, {{"x", grid_tensor({1, 6, 10, 9}, 9)}}, ToleranceClass::kDeepNetwork);
}

TEST(OnednnPatterns, NothingFiresWithCpuOnly) {
  ir::Graph g = conv_bn(true, true);
  const std::vector<std::string> rw = lower(g, {"cpu"});
  EXPECT_TRUE(rw.empty());
  EXPECT_EQ(g.num_nodes(), 3u);
}

TEST(OnednnPatterns, NoFoldWhenConvOutputHasASecondUse) {
  ir::Graph g = conv_bn(false, true);
  g.add_output(g.node(g.find_node("conv0")).outputs[0]);
  ir::Graph lowered = g;
  const std::vector<std::string> rw = lower(lowered, {"onednn", "cpu"});
  EXPECT_TRUE(rw.empty());
  EXPECT_EQ(count_op(lowered, "batch_normalization"), 1);
  expect_same_as_cpu(g, {{"x", grid_tensor({1, 6, 10, 9}, 9)}});
}

// x -> conv -> add(residual r) -> relu -> output.
TEST(OnednnPatterns, ConvResidualAddReluFused) {
  ir::Graph g("res");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {2, 8, 7, 7}});
  const ir::ValueId r = g.add_input("r", ir::TensorType{DTypeCode::kFloat32, {2, 8, 7, 7}});
  const ir::ValueId w = g.add_constant("w", grid_tensor({8, 8, 3, 3}, 1));
  const ir::ValueId b = g.add_constant("b", grid_tensor({8}, 2));
  const ir::ValueId c = add_op(g, "conv", "c", {x, w, b}, {{"pads", ints{1, 1, 1, 1}}});
  g.add_output(add_op(g, "relu", "y", {add_op(g, "add", "a", {r, c})}));
  ir::Graph lowered = g;
  const std::vector<std::string> rw = lower(lowered, {"onednn", "cpu"});
  EXPECT_EQ(rw.size(), 1u);
  EXPECT_EQ(lowered.num_nodes(), 1u);
  expect_same_as_cpu(g, {{"x", grid_tensor({2, 8, 7, 7}, 3)}, {"r", grid_tensor({2, 8, 7, 7}, 4)}});
}

// operator-fusion runs before lowering and may have grouped add + relu already: the group's
// body is taken as the post-op chain.
TEST(OnednnPatterns, FusedElementwiseGroupTakenAsPostOps) {
  auto body = std::make_shared<ir::Graph>("body");
  const ir::TensorType t{DTypeCode::kFloat32, {1, 4, 5, 5}};
  const ir::ValueId b0 = body->add_input("in0", t);
  const ir::ValueId b1 = body->add_input("in1", t);
  const ir::NodeId ba = *body->create_node("add", "ba", {b1, b0}, 1);
  body->value(body->node(ba).outputs[0]).type = t;
  const ir::NodeId br = *body->create_node("relu", "br", {body->node(ba).outputs[0]}, 1);
  body->value(body->node(br).outputs[0]).type = t;
  body->add_output(body->node(br).outputs[0]);
  ir::Graph g("grouped");
  const ir::ValueId x = g.add_input("x", t);
  const ir::ValueId r = g.add_input("r", t);
  const ir::ValueId c =
      add_op(g, "conv", "c", {x, g.add_constant("w", grid_tensor({4, 4, 3, 3}, 1))},
             {{"pads", ints{1, 1, 1, 1}}});
  g.add_output(add_op(g, "fused_elementwise_internal", "f", {c, r},
                      {{"body", std::shared_ptr<const ir::Graph>(body)}}));
  ir::Graph lowered = g;
  EXPECT_EQ(lower(lowered, {"onednn", "cpu"}).size(), 1u);
  EXPECT_EQ(lowered.num_nodes(), 1u);
  EXPECT_EQ(count_op(lowered, "fused_post_ops_internal"), 1);
  expect_same_as_cpu(g, {{"x", grid_tensor({1, 4, 5, 5}, 3)}, {"r", grid_tensor({1, 4, 5, 5}, 4)}});
}

// matmul (batched, binary-add residual) and gemm (C and residual both binary adds).
TEST(OnednnPatterns, MatmulAndGemmResidualFused) {
  for (const char* base : {"matmul", "gemm"}) {
    const bool gemm = std::string(base) == "gemm";
    const Shape xs = gemm ? Shape{6, 10} : Shape{2, 6, 10};
    const Shape ys = gemm ? Shape{6, 5} : Shape{2, 6, 5};
    ir::Graph g("res");
    const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, xs});
    const ir::ValueId r = g.add_input("r", ir::TensorType{DTypeCode::kFloat32, ys});
    std::vector<ir::ValueId> in{x, g.add_constant("w", grid_tensor({10, 5}, 1))};
    if (gemm) in.push_back(g.add_constant("c", grid_tensor({5}, 2)));
    const ir::ValueId t = add_op(g, "tanh", "t", {add_op(g, base, "m", in)});
    g.add_output(add_op(g, "add", "a", {t, r}));
    ir::Graph lowered = g;
    EXPECT_EQ(lower(lowered, {"onednn", "cpu"}).size(), 1u) << base;
    EXPECT_EQ(lowered.num_nodes(), 1u) << base;
    expect_same_as_cpu(g, {{"x", grid_tensor(xs, 3)}, {"r", grid_tensor(ys, 4)}});
  }
}

// matmul [2,6,10] x [10,5] (and gemm [6,10] x [10,5]) + a bias row ([5] or [1,1,5], either
// operand order of the add, then relu): one fused node whose add reads the row (oneDNN
// broadcasts it over the rows), equal to the unfused cpu run.
TEST(OnednnPatterns, MatmulBiasRowFused) {
  for (const char* base : {"matmul", "gemm"}) {
    for (const Shape& bias_shape : {Shape{5}, Shape{1, 5}, Shape{1, 1, 5}}) {
      const bool gemm = std::string(base) == "gemm";
      if (gemm && bias_shape.size() > 2) continue;
      for (bool bias_first : {false, true}) {
        const Shape xs = gemm ? Shape{6, 10} : Shape{2, 6, 10};
        SCOPED_TRACE(
            fmt::format("{} bias {} first {}", base, shape_to_string(bias_shape), bias_first));
        ir::Graph g("bias");
        const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, xs});
        const ir::ValueId m =
            add_op(g, base, "m", {x, g.add_constant("w", grid_tensor({10, 5}, 1))});
        const ir::ValueId bias = g.add_constant("bias", grid_tensor(bias_shape, 2));
        const ir::ValueId a =
            add_op(g, "add", "a", bias_first ? std::vector{bias, m} : std::vector{m, bias});
        g.add_output(add_op(g, "relu", "r", {a}));
        ir::Graph lowered = g;
        lower(lowered, {"onednn", "cpu"});
        EXPECT_EQ(lowered.num_nodes(), 1u) << base << " " << shape_to_string(bias_shape);
        EXPECT_EQ(count_op(lowered, "fused_post_ops_internal"), 1);
        expect_same_as_cpu(g, {{"x", grid_tensor(xs, 3)}});
      }
    }
  }
  // A bias along another dim ([6, 1]) is not a row: the add stays apart.
  ir::Graph g("column");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {6, 10}});
  const ir::ValueId m = add_op(g, "matmul", "m", {x, g.add_constant("w", grid_tensor({10, 5}, 1))});
  g.add_output(add_op(g, "add", "a", {m, g.add_constant("col", grid_tensor({6, 1}, 2))}));
  ir::Graph lowered = g;
  lower(lowered, {"onednn", "cpu"});
  EXPECT_EQ(count_op(lowered, "add"), 1);
  expect_same_as_cpu(g, {{"x", grid_tensor({6, 10}, 3)}});
}

TEST(OnednnPatterns, NoFusionWhenIntermediateHasASecondUse) {
  ir::Graph g("two_uses");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {4, 16}});
  const ir::ValueId w = g.add_constant("w", grid_tensor({16, 8}, 1));
  const ir::ValueId m = add_op(g, "matmul", "m", {x, w});
  g.add_output(add_op(g, "relu", "y", {m}));
  g.add_output(add_op(g, "sigmoid", "z", {m}));
  ir::Graph lowered = g;
  EXPECT_TRUE(lower(lowered, {"onednn", "cpu"}).empty());
  EXPECT_EQ(lowered.num_nodes(), 3u);
}

// matmul / gemm followed by each activation of the list; outputs against the cpu run. The
// decomposition pass is skipped: it expands elu, hard_swish and gelu into primitive ops when
// the preferred backend has no kernel for them, and then there is no activation to fuse.
TEST(OnednnPatterns, MatmulAndGemmActivationsFused) {
  struct Act {
    std::string op;
    ir::AttrMap attrs;
  };
  const std::vector<Act> acts = {{"relu", {}},
                                 {"leaky_relu", {{"alpha", 0.125}}},
                                 {"sigmoid", {}},
                                 {"tanh", {}},
                                 {"elu", {{"alpha", 0.5}}},
                                 {"hard_swish", {}},
                                 {"gelu", {}},
                                 {"gelu", {{"approximate", std::string("tanh")}}},
                                 {"clip", {}}};
  for (const Act& act : acts) {
    for (const char* base : {"matmul", "gemm"}) {
      ir::Graph g("act");
      const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {5, 12}});
      const ir::ValueId w = g.add_constant("w", grid_tensor({12, 7}, 1));
      std::vector<ir::ValueId> in{x, w};
      ir::AttrMap battrs;
      if (std::string(base) == "gemm") {
        in.push_back(g.add_constant("c", grid_tensor({7}, 2)));
        battrs = {{"alpha", 0.5}};
      }
      std::vector<ir::ValueId> ain{add_op(g, base, "m", in, battrs)};
      if (act.op == "clip") {
        ain.push_back(g.add_constant("lo", Tensor::from_vector<float>({}, {-0.75F})));
        ain.push_back(g.add_constant("hi", Tensor::from_vector<float>({}, {1.5F})));
      }
      g.add_output(add_op(g, act.op, "y", ain, act.attrs));
      ir::Graph lowered = g;
      const std::vector<std::string> skip{"decomposition"};
      const std::vector<std::string> rw = lower(lowered, {"onednn", "cpu"}, skip);
      EXPECT_EQ(rw.size(), 1u) << base << " + " << act.op;
      EXPECT_EQ(count_op(lowered, "fused_post_ops_internal"), 1) << base << " + " << act.op;
      SCOPED_TRACE(std::string(base) + " + " + act.op);
      expect_same_as_cpu(g, {{"x", grid_tensor({5, 12}, 3)}}, ToleranceClass::kOp, skip);
    }
  }
}

// Squeeze-excitation and EfficientNet activations on a conv: hard_sigmoid (torch's alpha 1/6,
// as eltwise_linear + eltwise_clip), SiLU exported as x * sigmoid(x) (one swish post-op), also
// after a relu, and a SiLU whose sigmoid has a second reader (not fused). With and without
// operator-fusion, which groups sigmoid + mul into one fused_elementwise_internal first.
TEST(OnednnPatterns, ConvHardSigmoidAndSiluFused) {
  const ir::TensorType t{DTypeCode::kFloat32, {1, 16, 6, 6}};
  for (const std::string act : {"hard_sigmoid", "silu", "relu_silu", "silu_shared"}) {
    for (const bool fusion : {true, false}) {
      SCOPED_TRACE(act + (fusion ? " after operator-fusion" : " unfused"));
      ir::Graph g("act");
      const ir::ValueId x = g.add_input("x", t);
      ir::ValueId c = add_op(g, "conv", "c",
                             {x, g.add_constant("w", grid_tensor({16, 16, 3, 3}, 1)),
                              g.add_constant("b", grid_tensor({16}, 2))},
                             {{"pads", ints{1, 1, 1, 1}}});
      if (act == "hard_sigmoid") {
        g.add_output(add_op(g, "hard_sigmoid", "y", {c}, {{"alpha", 1.0 / 6.0}, {"beta", 0.5}}));
      } else {
        if (act == "relu_silu") c = add_op(g, "relu", "r", {c});
        const ir::ValueId sg = add_op(g, "sigmoid", "s", {c});
        g.add_output(add_op(g, "mul", "y", {sg, c}));
        if (act == "silu_shared") g.add_output(sg);
      }
      std::vector<std::string> skip;
      if (!fusion) skip.push_back("operator-fusion");
      ir::Graph lowered = g;
      lower(lowered, {"onednn", "cpu"}, skip);
      const size_t want = act == "silu_shared" ? 3u : 1u;
      EXPECT_EQ(lowered.num_nodes(), want);
      expect_same_as_cpu(g, {{"x", grid_tensor(t.shape, 3)}}, ToleranceClass::kOp, skip);
    }
  }
}

// GELU spelled as elementwise nodes after a matmul + bias row (match_gelu): torch's erf export
// (div by sqrt 2, erf, + 1, * x, * 0.5), the same with the reciprocal and the halving first,
// GPT-2's tanh export (x * x * x, * 0.044715, + x, * sqrt(2 / pi), tanh, + 1, * x, * 0.5) and
// the tanh form with pow(x, 3): each one fused_post_ops_internal node whose post-ops end in
// gelu / gelu_tanh, with and without operator-fusion, equal to the unfused cpu run. Not
// fused: a wrong constant (x / 2 inside erf is another function), an inner value that is also
// a graph output, and gelu(x) + 100 * (erf(10x) - erf(20x)), which equals GELU at every integer
// (a break test found it taken when the check probed the integers of [-6, 6]).
TEST(OnednnPatterns, MatmulGeluSpelledAsElementwiseNodesFused) {
  const ir::TensorType t{DTypeCode::kFloat32, {6, 16}};
  const auto scalar = [](ir::Graph& g, const std::string& name, float v) {
    return g.add_constant(name, Tensor::from_vector<float>({}, {v}));
  };
  for (const std::string form : {"erf", "erf_rcp_half_first", "tanh", "tanh_pow", "wrong_const",
                                 "inner_output", "erf_bump"}) {
    for (const bool fusion : {true, false}) {
      SCOPED_TRACE(form + (fusion ? " after operator-fusion" : " unfused"));
      ir::Graph g("gelu");
      const ir::ValueId a = g.add_input("a", t);
      const ir::ValueId mm =
          add_op(g, "matmul", "mm", {a, g.add_constant("w", grid_tensor({16, 8}, 11))});
      const ir::ValueId x =
          add_op(g, "add", "bias", {mm, g.add_constant("b", grid_tensor({8}, 12))});
      ir::ValueId y;
      if (form == "erf" || form == "wrong_const" || form == "inner_output" || form == "erf_bump") {
        const float d = form == "wrong_const" ? 2.0F : 1.41421354F;
        const ir::ValueId e =
            add_op(g, "erf", "erf", {add_op(g, "div", "d", {x, scalar(g, "s2", d)})});
        const ir::ValueId p1 = add_op(g, "add", "p1", {e, scalar(g, "one", 1.0F)});
        y = add_op(g, "mul", "h", {add_op(g, "mul", "xm", {x, p1}), scalar(g, "half", 0.5F)});
        if (form == "inner_output") g.add_output(e);
        if (form == "erf_bump") {
          const ir::ValueId e10 =
              add_op(g, "erf", "e10", {add_op(g, "mul", "m10", {x, scalar(g, "ten", 10.0F)})});
          const ir::ValueId e20 =
              add_op(g, "erf", "e20", {add_op(g, "mul", "m20", {x, scalar(g, "twenty", 20.0F)})});
          const ir::ValueId bump = add_op(
              g, "mul", "bump", {add_op(g, "sub", "de", {e10, e20}), scalar(g, "c", 100.0F)});
          y = add_op(g, "add", "yb", {y, bump});
        }
      } else if (form == "erf_rcp_half_first") {
        const ir::ValueId h = add_op(g, "mul", "h", {scalar(g, "half", 0.5F), x});
        const ir::ValueId e =
            add_op(g, "erf", "erf", {add_op(g, "mul", "d", {x, scalar(g, "r2", 0.707106769F)})});
        y = add_op(g, "mul", "y", {h, add_op(g, "add", "p1", {scalar(g, "one", 1.0F), e})});
      } else {
        const ir::ValueId cube = form == "tanh"
                                     ? add_op(g, "mul", "c3", {x, add_op(g, "mul", "c2", {x, x})})
                                     : add_op(g, "pow", "c3", {x, scalar(g, "three", 3.0F)});
        const ir::ValueId inner = add_op(
            g, "add", "in", {x, add_op(g, "mul", "k", {scalar(g, "kappa", 0.044715F), cube})});
        const ir::ValueId th = add_op(
            g, "tanh", "th", {add_op(g, "mul", "bt", {scalar(g, "beta", 0.797884583F), inner})});
        const ir::ValueId p1 = add_op(g, "add", "p1", {scalar(g, "one", 1.0F), th});
        y = add_op(g, "mul", "h", {scalar(g, "half", 0.5F), add_op(g, "mul", "xm", {x, p1})});
      }
      g.add_output(y);
      std::vector<std::string> skip;
      if (!fusion) skip.push_back("operator-fusion");
      ir::Graph lowered = g;
      lower(lowered, {"onednn", "cpu"}, skip);
      const bool fused = form != "wrong_const" && form != "inner_output" && form != "erf_bump";
      std::vector<std::string> post;
      for (ir::NodeId id : lowered.node_ids()) {
        const ir::Node& n = lowered.node(id);
        if (n.op != "fused_post_ops_internal") continue;
        post = std::get<std::vector<std::string>>(n.attrs.at("post_ops"));
      }
      if (fused) {
        EXPECT_EQ(lowered.num_nodes(), 1u);
        ASSERT_FALSE(post.empty());
        EXPECT_EQ(post.back(), form.starts_with("tanh") ? "gelu_tanh" : "gelu");
      } else {
        EXPECT_GT(lowered.num_nodes(), 1u);
        EXPECT_TRUE(post.empty() || (post.back() != "gelu" && post.back() != "gelu_tanh"));
      }
      expect_same_as_cpu(g, {{"a", grid_tensor(t.shape, 13)}}, ToleranceClass::kOp, skip);
    }
  }
}

// The cpu reference kernel of the fused op against the unfused ops (the pattern never
// creates a cpu-placed fused node, so it is checked directly through run_op).
TEST(OnednnPatterns, FusedOpCpuKernelMatchesTheChain) {
  OpCall fused{"fused_post_ops_internal"};
  fused.inputs = {grid_tensor({1, 4, 6, 6}, 1), grid_tensor({4, 2, 3, 3}, 2), grid_tensor({4}, 3),
                  grid_tensor({1, 4, 6, 6}, 4)};
  fused.attrs = {{"base_op", std::string("conv")},
                 {"group", int64_t{2}},
                 {"pads", ints{1, 1, 1, 1}},
                 {"post_ops", std::vector<std::string>{"add", "leaky_relu"}},
                 {"post_op_params", std::vector<double>{0, 0, 0.25, 0}}};
  Result<std::vector<Tensor>> got = run_op(fused, "cpu");
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  Result<std::vector<Tensor>> onednn = run_op(fused, "onednn");
  ASSERT_TRUE(onednn.is_ok()) << onednn.status().message();
  OpCall conv{"conv"};
  conv.inputs = {fused.inputs[0], fused.inputs[1], fused.inputs[2]};
  conv.attrs = {{"group", int64_t{2}}, {"pads", ints{1, 1, 1, 1}}};
  Result<std::vector<Tensor>> c = run_op(conv, "cpu");
  ASSERT_TRUE(c.is_ok());
  OpCall add{"add"};
  add.inputs = {(*c)[0], fused.inputs[3]};
  Result<std::vector<Tensor>> a = run_op(add, "cpu");
  ASSERT_TRUE(a.is_ok());
  OpCall lr{"leaky_relu"};
  lr.inputs = {(*a)[0]};
  lr.attrs = {{"alpha", 0.25}};
  Result<std::vector<Tensor>> e = run_op(lr, "cpu");
  ASSERT_TRUE(e.is_ok());
  const Tolerance tol = tolerance_for(DTypeCode::kFloat32);
  EXPECT_TRUE(compare_tensors((*got)[0], (*e)[0], tol).ok);
  EXPECT_TRUE(compare_tensors((*onednn)[0], (*e)[0], tol).ok);

  // hard_sigmoid(alpha 0.25, beta 0.5) then swish, against the ops one by one on cpu.
  fused.inputs.pop_back();
  fused.attrs["post_ops"] = std::vector<std::string>{"hard_sigmoid", "swish"};
  fused.attrs["post_op_params"] = std::vector<double>{0.25, 0.5, 0, 0};
  OpCall hs{"hard_sigmoid", {(*c)[0]}};
  hs.attrs = {{"alpha", 0.25}, {"beta", 0.5}};
  Result<std::vector<Tensor>> h = run_op(hs, "cpu");
  ASSERT_TRUE(h.is_ok());
  Result<std::vector<Tensor>> sg = run_op(OpCall{"sigmoid", {(*h)[0]}}, "cpu");
  ASSERT_TRUE(sg.is_ok());
  Result<std::vector<Tensor>> sw = run_op(OpCall{"mul", {(*h)[0], (*sg)[0]}}, "cpu");
  ASSERT_TRUE(sw.is_ok());
  for (const char* backend : {"cpu", "onednn"}) {
    Result<std::vector<Tensor>> f = run_op(fused, backend);
    ASSERT_TRUE(f.is_ok()) << f.status().message();
    const CompareResult r = compare_tensors((*f)[0], (*sw)[0], tol);
    EXPECT_TRUE(r.ok) << backend << ": " << r.message;
  }
}

TEST(OnednnPatterns, RegistrySelfCheckStaysClean) {
  EXPECT_TRUE(ops::registry_self_check().empty());
}

}  // namespace
}  // namespace frame::test::linear
