// The interpreted tier's fusions (src/runtime/interpreter.h, fuse_interpreted; ADR 0007): the
// lowering patterns marked `interpreted` rewrite a first-seen key's graph before it runs node by
// node, matched on the first key and replayed on the next ones. Each interpreted result is
// checked against the same graph compiled for cpu alone (the unfused reduce_mean, sub, pow,
// add, sqrt, div, mul, matmul and relu cpu kernels: an independent reference).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cpp/onednn/linear_test_util.h"
#include "frame/passes/pass.h"
#include "runtime/interpreter.h"

namespace frame::test::linear {
namespace {

using ints = std::vector<int64_t>;
using ir::ValueId;

constexpr int64_t kWidth = 20;  // not a multiple of any vector width: the row loop's tail runs

// x [b, s, 20] -> torch's decomposed LayerNormalization (epsilon `eps`) -> x @ w [20, 8] + bias
// -> relu: what a re-typed encoder graph holds at key (b, s). Built the same way at every key,
// so node and value ids agree as a template's re-typed graphs do.
ir::Graph encoder(int64_t b, int64_t s, float eps) {
  ir::Graph g("encoder");
  const ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {b, s, kWidth}});
  const ir::AttrMap mean{{"axes", ints{-1}}, {"keepdims", int64_t{1}}};
  const ValueId m = add_op(g, "reduce_mean", "mean", {x}, mean);
  const ValueId d = add_op(g, "sub", "sub", {x, m});
  const ValueId sq = add_op(g, "pow", "square", {d, g.add_constant("two", Tensor::scalar(2.0F))});
  const ValueId var = add_op(g, "reduce_mean", "var", {sq}, mean);
  const ValueId e = add_op(g, "add", "add_eps", {var, g.add_constant("eps", Tensor::scalar(eps))});
  ValueId y = add_op(g, "div", "div", {d, add_op(g, "sqrt", "sqrt", {e})});
  y = add_op(g, "mul", "scale", {y, g.add_constant("gamma", grid_tensor({kWidth}, 2))});
  y = add_op(g, "add", "shift", {y, g.add_constant("beta", grid_tensor({kWidth}, 3))});
  y = add_op(g, "matmul", "proj", {y, g.add_constant("w", grid_tensor({kWidth, 8}, 4))});
  y = add_op(g, "add", "bias", {y, g.add_constant("b", grid_tensor({8}, 5))});
  g.add_output(add_op(g, "relu", "act", {y}));
  // Typed at every value, as a specialization's import leaves it.
  passes::PassContext ctx;
  const Status st = passes::run_pipeline(g, "shape-inference", ctx);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return g;
}

// Runs `g` (rewritten or not) through the interpreter and expects the cpu-only compile of
// `reference` (the unfused graph at the same key) within the cross-backend tolerance.
void expect_interpreted_matches_cpu(const ir::Graph& g, const ir::Graph& reference,
                                    const Tensor& x) {
  runtime::CompileOptions o;
  o.backends = {"onednn", "cpu"};
  o.num_threads = 1;
  const runtime::detail::Interpreted got = runtime::detail::interpret(g, {{"x", x}}, o, nullptr);
  ASSERT_TRUE(got.status.is_ok()) << got.status.message();
  Result<runtime::Executable> ref = runtime::compile(reference, uncached({"cpu"}));
  ASSERT_TRUE(ref.is_ok()) << ref.status().message();
  Result<runtime::TensorMap> want = ref->run({{"x", x}});
  ASSERT_TRUE(want.is_ok()) << want.status().message();
  for (const auto& [name, t] : *want) {
    const CompareResult c = compare_tensors(
        got.outputs.at(name), t, tolerance_for(DTypeCode::kFloat32, ToleranceClass::kCrossBackend));
    EXPECT_TRUE(c.ok) << name << ": " << c.message;
  }
}

// Runs `g` (fused) through the interpreter on 1 and 2 threads and expects, for its first
// output, the cpu-only compile of `unfused` (the graph before the patterns) on the same inputs
// within the f32 tolerance; `what` names the case in failures.
void expect_interpreted_threads_match_cpu(const ir::Graph& g, const ir::Graph& unfused,
                                          const runtime::TensorMap& in, const std::string& what) {
  Result<runtime::Executable> ref = runtime::compile(unfused, uncached({"cpu"}));
  ASSERT_TRUE(ref.is_ok()) << ref.status().message();
  Result<runtime::TensorMap> want = ref->run(in);
  ASSERT_TRUE(want.is_ok()) << want.status().message();
  const std::string name = g.value(g.outputs()[0]).name;
  for (int threads : {1, 2}) {
    runtime::CompileOptions o;
    o.backends = {"onednn", "cpu"};
    o.num_threads = threads;
    const runtime::detail::Interpreted got = runtime::detail::interpret(g, in, o, nullptr);
    ASSERT_TRUE(got.status.is_ok()) << got.status.message();
    const CompareResult cmp =
        compare_tensors(got.outputs.at(name), want->at(name), tolerance_for(DTypeCode::kFloat32));
    EXPECT_TRUE(cmp.ok) << what << ", " << threads << " threads: " << cmp.message;
  }
}

// Makes `y` and `r` (through an identity, which keeps r a graph input where no chain step reads
// it) the outputs of `g`, types every value, keeps the graph as it is then in `unfused` and
// applies the interpreted tier's fusions to `g` (fuse_interpreted, first key).
void finish_and_fuse(ir::Graph& g, ValueId y, ValueId r, ir::Graph& unfused) {
  g.add_output(y);
  g.add_output(add_op(g, "identity", "keep_r", {r}));
  passes::PassContext ctx;
  ASSERT_TRUE(passes::run_pipeline(g, "shape-inference", ctx).is_ok());
  unfused = g;
  Result<std::optional<runtime::detail::InterpretedFusions>> learned =
      runtime::detail::fuse_interpreted(g, {"onednn", "cpu"}, nullptr);
  ASSERT_TRUE(learned.is_ok()) << learned.status().message();
}

// The fused graph: one layer_normalization and one matmul with its bias and relu as post-ops.
void expect_fused(const ir::Graph& g) {
  EXPECT_EQ(count_op(g, "layer_normalization"), 1);
  EXPECT_EQ(count_op(g, "reduce_mean"), 0);
  EXPECT_EQ(count_op(g, "fused_post_ops_internal"), 1);
  EXPECT_EQ(count_op(g, "matmul"), 0);
  EXPECT_EQ(count_op(g, "relu"), 0);
}

TEST(InterpretedFusions, MatchedOnTheFirstKeyAndReplayedOnTheNext) {
  const std::vector<std::string> backends{"onednn", "cpu"};
  ir::Graph first = encoder(2, 5, 1e-5F);
  Result<std::optional<runtime::detail::InterpretedFusions>> learned =
      runtime::detail::fuse_interpreted(first, backends, nullptr);
  ASSERT_TRUE(learned.is_ok()) << learned.status().message();
  ASSERT_TRUE(learned->has_value());
  const runtime::detail::InterpretedFusions known = **learned;
  ASSERT_TRUE(known.rewrite.has_value());  // no constant was added: replayable
  EXPECT_EQ(known.sites.size(), 2u);       // the first reduce_mean and the matmul
  expect_fused(first);
  expect_interpreted_matches_cpu(first, encoder(2, 5, 1e-5F), grid_tensor({2, 5, kWidth}, 1));

  // Another key: replayed (its output types inferred at [3, 7, ...]), nothing learned.
  ir::Graph next = encoder(3, 7, 1e-5F);
  Result<std::optional<runtime::detail::InterpretedFusions>> again =
      runtime::detail::fuse_interpreted(next, backends, &known);
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_FALSE(again->has_value());
  expect_fused(next);
  EXPECT_EQ(next.value(next.outputs()[0]).type->shape, (Shape{3, 7, 8}));
  expect_interpreted_matches_cpu(next, encoder(3, 7, 1e-5F), grid_tensor({3, 7, kWidth}, 6));
}

// An epsilon that differs from the first key's (a small constant a removed node read, as a
// shape-derived constant can): the recorded layer_normalization holds the old one, so the rewrite
// does not fit and the patterns are matched again, taking the new epsilon. Replaying regardless
// would normalise with 1e-5 instead of 0.25.
TEST(InterpretedFusions, AChangedConstantIsMatchedAgainNotReplayed) {
  const std::vector<std::string> backends{"onednn", "cpu"};
  ir::Graph first = encoder(2, 5, 1e-5F);
  Result<std::optional<runtime::detail::InterpretedFusions>> learned =
      runtime::detail::fuse_interpreted(first, backends, nullptr);
  ASSERT_TRUE(learned.is_ok() && learned->has_value());
  ir::Graph other = encoder(2, 5, 0.25F);
  Result<std::optional<runtime::detail::InterpretedFusions>> again =
      runtime::detail::fuse_interpreted(other, backends, &**learned);
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  expect_fused(other);
  expect_interpreted_matches_cpu(other, encoder(2, 5, 0.25F), grid_tensor({2, 5, kWidth}, 7));
}

// The interpreted tier's matmul and gemm over constant weights run the own loops
// (VecTable::gemm_packed, no oneDNN primitive), fused post-op chains included (a residual add of
// the output's rows too, which a primitive would need static dims for): row counts around the
// 6-row tile, the 24-row thread block and the 96-row cache block, column counts around one
// and two vectors, K from 1 to 300 (two 256-deep blocks), gemm's alpha, transB and C (a row, one
// value), each chain on 1 and 2 threads, against the cpu kernels' unfused result. A gemm with beta
// 0.5, or with a C column [M, 1] where M = N (as many values as a row), has no own form: oneDNN
// runs it.
TEST(InterpretedFusions, OwnMatmulLoopsMatchTheReference) {
  struct Case {
    int64_t m, n, k;
  };
  const std::vector<Case> cases = {{1, 3, 1},    {5, 16, 20}, {6, 17, 70},   {7, 40, 20},
                                   {25, 33, 64}, {50, 40, 3}, {100, 9, 300}, {16, 16, 20}};
  const std::vector<std::vector<std::string>> chains = {
      {},           {"bias", "relu"}, {"bias", "gelu"}, {"residual", "relu"},
      {"residual"}, {"tanh"},         {"sigmoid"},      {"gelu_tanh"}};
  // kGemmColumn: C [M, 1], one value per row, where M = N: as many values as a row has, not a
  // row (the own loops leave it to oneDNN).
  enum class Base { kMatmul, kGemmRow, kGemmScalar, kGemmHalfBeta, kGemmColumn };
  uint32_t seed = 20;
  for (const Case& c : cases) {
    for (Base base : {Base::kMatmul, Base::kGemmRow, Base::kGemmScalar, Base::kGemmHalfBeta,
                      Base::kGemmColumn}) {
      if (base == Base::kGemmColumn && c.m != c.n) continue;
      for (const std::vector<std::string>& chain : chains) {
        ir::Graph g("own");
        const ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {c.m, c.k}});
        const ValueId r = g.add_input("r", ir::TensorType{DTypeCode::kFloat32, {c.m, c.n}});
        ValueId y;
        if (base == Base::kMatmul) {
          y = add_op(g, "matmul", "mm", {x, g.add_constant("w", grid_tensor({c.k, c.n}, seed++))});
        } else {
          const Tensor cv = base == Base::kGemmScalar   ? Tensor::scalar(0.75F)
                            : base == Base::kGemmColumn ? grid_tensor({c.m, 1}, seed++)
                                                        : grid_tensor({c.n}, seed++);
          ir::AttrMap a{{"transB", int64_t{1}}, {"alpha", 0.5}};
          if (base == Base::kGemmHalfBeta) a["beta"] = 0.5;
          y = add_op(
              g, "gemm", "mm",
              {x, g.add_constant("w", grid_tensor({c.n, c.k}, seed++)), g.add_constant("c", cv)},
              a);
        }
        for (const std::string& step : chain) {
          if (step == "bias") {
            y = add_op(g, "add", "bias", {y, g.add_constant("b", grid_tensor({c.n}, seed++))});
          } else if (step == "residual") {
            y = add_op(g, "add", "residual", {y, r});
          } else if (step == "gelu_tanh") {
            y = add_op(g, "gelu", step, {y}, {{"approximate", std::string("tanh")}});
          } else {
            y = add_op(g, step, step, {y});
          }
        }
        ir::Graph unfused("unfused");
        ASSERT_NO_FATAL_FAILURE(finish_and_fuse(g, y, r, unfused));
        if (base == Base::kMatmul && !chain.empty() && chain[0] == "residual") {
          EXPECT_EQ(count_op(g, "fused_post_ops_internal"), 1);  // residual included
          EXPECT_EQ(count_op(g, "add"), 0);
        }
        const runtime::TensorMap in{{"x", grid_tensor({c.m, c.k}, seed++)},
                                    {"r", grid_tensor({c.m, c.n}, seed++)}};
        expect_interpreted_threads_match_cpu(
            g, unfused, in,
            std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + " base " +
                std::to_string(static_cast<int>(base)) + " chain " + std::to_string(chain.size()) +
                " (" + (chain.empty() ? "" : chain.back()) + ")");
      }
    }
  }
}

// The interpreted tier's conv with its post-ops (fuse_post_ops at conv, run by the shape-agnostic
// conv's own loops, make_shape_agnostic_conv): each way it computes (a 1x1 conv as one product,
// a depthwise conv over padded planes, im2col, a grouped conv, a dilated conv whose taps read
// rectangles of a small map, a conv of few columns a row at a time), each activation with an own
// loop and a residual add before an activation, on 1 and 2 threads, against the cpu kernels'
// unfused result. Swish (x * sigmoid(x)) has no own loop: the conv is not fused and the chain runs
// as its nodes.
TEST(InterpretedFusions, OwnConvPostOpsMatchTheReference) {
  struct Case {
    Shape x;
    int64_t m, k, group, stride, pad, dilation;
  };
  const std::vector<Case> cases = {{{1, 8, 9, 13}, 12, 1, 1, 1, 0, 1},
                                   {{2, 24, 11, 20}, 24, 3, 24, 2, 1, 1},
                                   {{1, 5, 10, 9}, 7, 3, 1, 1, 1, 1},
                                   {{1, 6, 7, 8}, 4, 3, 2, 1, 1, 1},
                                   {{1, 8, 9, 9}, 6, 3, 1, 1, 6, 6},
                                   // A first conv over 3 channels, a batch of 2 (by_rows), and
                                   // a 7 x 7 one (147 columns, the most by_rows takes: 160).
                                   {{2, 3, 17, 14}, 8, 3, 1, 2, 1, 1},
                                   {{1, 3, 20, 18}, 16, 7, 1, 2, 3, 1},
                                   {{1, 4, 11, 10}, 5, 7, 1, 1, 3, 1},
                                   // 1x1 convs whose bias joins the post-ops' pass: planes of
                                   // more than one 4096-value chunk, and a grouped batch of 2.
                                   {{1, 4, 70, 65}, 3, 1, 1, 1, 0, 1},
                                   {{2, 6, 9, 10}, 4, 1, 2, 1, 0, 1},
                                   // A 1x1 conv whose output channels split over 2 threads
                                   // (by_channels), two images.
                                   {{2, 32, 20, 21}, 40, 1, 1, 1, 0, 1}};
  const std::vector<std::vector<std::string>> chains = {
      {"relu"}, {"hard_swish"}, {"residual", "relu"}, {"clip"}, {"leaky_relu"},
      {"elu"},  {"sigmoid"},    {"hard_sigmoid"},     {"tanh"}, {"swish"}};
  uint32_t seed = 40;
  for (const Case& c : cases) {
    const int64_t oh = (c.x[2] + 2 * c.pad - c.dilation * (c.k - 1) - 1) / c.stride + 1;
    const int64_t ow = (c.x[3] + 2 * c.pad - c.dilation * (c.k - 1) - 1) / c.stride + 1;
    const Shape yshape = {c.x[0], c.m, oh, ow};
    for (const std::vector<std::string>& chain : chains) {
      ir::Graph g("own_conv");
      const ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, c.x});
      const ValueId r = g.add_input("r", ir::TensorType{DTypeCode::kFloat32, yshape});
      ValueId y =
          add_op(g, "conv", "conv",
                 {x, g.add_constant("w", grid_tensor({c.m, c.x[1] / c.group, c.k, c.k}, seed++)),
                  g.add_constant("b", grid_tensor({c.m}, seed++))},
                 {{"group", c.group},
                  {"strides", ints{c.stride, c.stride}},
                  {"pads", ints{c.pad, c.pad, c.pad, c.pad}},
                  {"dilations", ints{c.dilation, c.dilation}}});
      for (const std::string& step : chain) {
        if (step == "residual") {
          y = add_op(g, "add", "residual", {y, r});
        } else if (step == "clip") {
          y = add_op(g, "clip", "clip",
                     {y, g.add_constant("lo", Tensor::scalar(0.0F)),
                      g.add_constant("hi", Tensor::scalar(0.5F))});
        } else if (step == "leaky_relu") {
          y = add_op(g, step, step, {y}, {{"alpha", 0.2}});
        } else if (step == "elu") {
          y = add_op(g, step, step, {y}, {{"alpha", 0.7}});
        } else if (step == "hard_sigmoid") {
          y = add_op(g, step, step, {y}, {{"alpha", 0.3}, {"beta", 0.4}});
        } else if (step == "swish") {
          y = add_op(g, "mul", "swish", {y, add_op(g, "sigmoid", "gate", {y})});
        } else {
          y = add_op(g, step, step, {y});
        }
      }
      ir::Graph unfused("unfused");
      ASSERT_NO_FATAL_FAILURE(finish_and_fuse(g, y, r, unfused));
      const std::string what = shape_to_string(c.x) + " k" + std::to_string(c.k) + " group " +
                               std::to_string(c.group) + " chain " + chain.back();
      const bool swish = chain.back() == "swish";
      EXPECT_EQ(count_op(g, "fused_post_ops_internal"), swish ? 0 : 1) << what;
      EXPECT_EQ(count_op(g, "conv"), swish ? 1 : 0) << what;
      EXPECT_EQ(count_op(g, "add"), 0) << what;  // the residual add is fused
      const runtime::TensorMap in{{"x", grid_tensor(c.x, seed++)},
                                  {"r", grid_tensor(yshape, seed++)}};
      expect_interpreted_threads_match_cpu(g, unfused, in, what);
    }
  }
}

// x [b, s, 20] @ w [20, 8] + bias -> relu, w the given constant: the same node ids at every
// key, as a graph re-typed in place keeps them.
ir::Graph projection(int64_t b, int64_t s, const Tensor& w) {
  ir::Graph g("projection");
  const ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {b, s, kWidth}});
  ValueId y = add_op(g, "matmul", "proj", {x, g.add_constant("w", w)});
  y = add_op(g, "add", "bias", {y, g.add_constant("b", grid_tensor({8}, 5))});
  g.add_output(add_op(g, "relu", "act", {y}));
  passes::PassContext ctx;
  EXPECT_TRUE(passes::run_pipeline(g, "shape-inference", ctx).is_ok());
  return g;
}

// KernelDef::reuse_state through interpret()'s `prior` (ADR 0007, "Revisited (2026-12-07,
// later)"): the onednn matmul's own loops, prepared at one row count, run the next key's rows
// from the same state object; over other weights (another constant, same shape) the state is
// not taken and the kernel prepares anew. Every output against the cpu-only compile. A few ms.
TEST(InterpretedFusions, AMatmulStateServesOtherRowCountsButNotOtherWeights) {
  runtime::CompileOptions o;
  o.backends = {"onednn", "cpu"};
  o.num_threads = 1;
  const Tensor w1 = grid_tensor({kWidth, 8}, 4), w2 = grid_tensor({kWidth, 8}, 9);
  const auto run = [&](int64_t b, int64_t s, const Tensor& w,
                       const std::vector<runtime::detail::NodeState>* prior) {
    const ir::Graph g = projection(b, s, w);
    const Tensor x = grid_tensor({b, s, kWidth}, static_cast<uint32_t>(b * 10 + s));
    runtime::detail::Interpreted got =
        runtime::detail::interpret(g, {{"x", x}}, o, nullptr, nullptr, prior);
    EXPECT_TRUE(got.status.is_ok()) << got.status.message();
    Result<runtime::Executable> ref = runtime::compile(g, uncached({"cpu"}));
    EXPECT_TRUE(ref.is_ok());
    if (got.status.is_ok() && ref.is_ok()) {
      Result<runtime::TensorMap> want = ref->run({{"x", x}});
      EXPECT_TRUE(want.is_ok());
      const CompareResult c =
          compare_tensors(got.outputs.begin()->second, want->begin()->second,
                          tolerance_for(DTypeCode::kFloat32, ToleranceClass::kCrossBackend));
      EXPECT_TRUE(c.ok) << b << "x" << s << ": " << c.message;
    }
    return got;
  };
  const ir::Graph g = projection(1, 1, w1);
  const auto proj = static_cast<size_t>(g.find_node("proj"));
  const runtime::detail::Interpreted first = run(2, 3, w1, nullptr);
  ASSERT_GT(first.node_states.size(), proj);
  ASSERT_NE(first.node_states[proj].state, nullptr);  // the onednn matmul, own loops
  const runtime::detail::Interpreted second = run(4, 5, w1, &first.node_states);
  ASSERT_GT(second.node_states.size(), proj);
  EXPECT_EQ(second.node_states[proj].state, first.node_states[proj].state);  // taken again
  const runtime::detail::Interpreted third = run(3, 2, w2, &second.node_states);
  ASSERT_GT(third.node_states.size(), proj);
  EXPECT_NE(third.node_states[proj].state, second.node_states[proj].state);  // prepared anew
}

}  // namespace
}  // namespace frame::test::linear
