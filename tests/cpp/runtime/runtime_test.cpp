// Runtime: input validation messages (golden), the compile cache, random ops drawing fresh
// values per run, graph-output edge cases, the report, and a small matmul + layer norm + gelu
// model against an independent reference.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/graph_builder.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

using test::kF32;
using test::node;

using ir::TensorType;
ir::Graph relu_graph(std::string name) {
  ir::Graph g(std::move(name));
  ir::ValueId x = g.add_input("x", TensorType{kF32, {1, 3, 32, 32}});
  g.add_output(node(g, "relu", "y", {x}));
  return g;
}

std::string run_error(const Executable& exe, const TensorMap& in) {
  auto r = exe.run(in);
  EXPECT_FALSE(r.is_ok());
  return r.is_ok() ? "ok" : r.status().to_string();
}

TEST(Runtime, InputValidationMessages) {
  auto exe = compile(relu_graph("validation"));
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  EXPECT_EQ(run_error(*exe, {{"x", *Tensor::zeros(kF32, {1, 3, 32})}}),
            "invalid_argument: input 'x': expected f32[1,3,32,32], got f32[1,3,32]");
  EXPECT_EQ(run_error(*exe, {{"x", *Tensor::zeros(DTypeCode::kInt64, {1, 3, 32, 32})}}),
            "invalid_argument: input 'x': expected f32[1,3,32,32], got i64[1,3,32,32]");
  EXPECT_EQ(run_error(*exe, {}), "invalid_argument: missing input 'x' (expected f32[1,3,32,32])");
  EXPECT_EQ(run_error(*exe, {{"x", *Tensor::zeros(kF32, {1, 3, 32, 32})},
                             {"z", *Tensor::zeros(kF32, {1})}}),
            "invalid_argument: unknown input 'z' (graph inputs: x)");
}

TEST(Runtime, SignaturesAndValues) {
  auto exe = compile(relu_graph("signature"));
  ASSERT_TRUE(exe.is_ok());
  ASSERT_EQ(exe->input_signature().size(), 1U);
  EXPECT_EQ(exe->input_signature()[0].first, "x");
  EXPECT_EQ(exe->output_signature()[0].second.to_string(), "f32[1,3,32,32]");
  std::vector<float> v(3 * 32 * 32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) - 3.0F;
  auto out = exe->run({{"x", Tensor::from_vector<float>({1, 3, 32, 32}, v)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const float* y = out->at("y").data<float>();
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(y[i], v[i] > 0 ? v[i] : 0.0F);
}

// y = x + constant_of_shape([3], value = v): graphs that differ only in the tensor attribute
// `value` print the same text (tensor data is elided) and must still compile separately:
// x = 0 gives y = v for each v.
ir::Graph fill_graph(float v) {
  ir::Graph g("fill_by_attr");
  ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {3}});
  ir::ValueId shape = g.add_constant("shape", Tensor::from_vector<int64_t>({1}, {3}));
  ir::AttrMap attrs;
  attrs["value"] = Tensor::from_vector<float>({1}, {v});
  Result<ir::NodeId> fill = g.create_node("constant_of_shape", "fill", {shape}, 1, attrs, {"f"});
  EXPECT_TRUE(fill.is_ok());
  Result<ir::NodeId> add = g.create_node("add", "add", {x, g.node(*fill).outputs[0]}, 1, {}, {"y"});
  EXPECT_TRUE(add.is_ok());
  g.add_output(g.node(*add).outputs[0]);
  return g;
}

TEST(Runtime, CompileCacheTellsTensorAttributesApart) {
  for (float v : {1.0f, 4.0f, 1.0f}) {
    Result<Executable> exe = compile(fill_graph(v));
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    auto out = exe->run({{"x", Tensor::zeros(DTypeCode::kFloat32, {3}).value()}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(out->at("y").data<float>()[i], v);
  }
}

TEST(Runtime, CompileCacheHitOnSecondCompile) {
  ir::Graph g = relu_graph("cache_hit_graph");
  auto first = compile(g);
  ASSERT_TRUE(first.is_ok());
  EXPECT_FALSE(first->report().cache_hit);
  auto second = compile(g);
  ASSERT_TRUE(second.is_ok());
  EXPECT_TRUE(second->report().cache_hit);
  EXPECT_EQ(&first->compiled_graph(), &second->compiled_graph());  // the same compiled core
  CompileOptions other;
  other.allow_inplace = false;  // options are part of the key
  auto third = compile(g, other);
  ASSERT_TRUE(third.is_ok());
  EXPECT_FALSE(third->report().cache_hit);
  CompileOptions no_cache;
  no_cache.use_cache = false;
  auto fourth = compile(g, no_cache);
  ASSERT_TRUE(fourth.is_ok());
  EXPECT_FALSE(fourth->report().cache_hit);
}

TEST(Runtime, RandomOpsDrawFreshValuesEveryRun) {
  ir::Graph g("random");
  ir::ValueId x = g.add_input("x", TensorType{kF32, {64}});
  ir::ValueId r = node(g, "random_uniform", "r", {},
                       {{"shape", std::vector<int64_t>{64}}, {"low", 2.0}, {"high", 3.0}});
  g.add_output(node(g, "add", "y", {x, r}));
  auto exe = compile(g);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const TensorMap in = {{"x", *Tensor::zeros(kF32, {64})}};
  auto a = exe->run(in);
  auto b = exe->run(in);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  int differ = 0;
  for (int i = 0; i < 64; ++i) {
    const float va = a->at("y").data<float>()[i];
    EXPECT_GE(va, 2.0F);
    EXPECT_LT(va, 3.0F);
    differ += va != b->at("y").data<float>()[i] ? 1 : 0;
  }
  EXPECT_GT(differ, 60);
}

TEST(Runtime, OutputsThatAreInputsOrRepeatedAreCopiedOut) {
  ir::Graph g("passthrough");
  ir::ValueId x = g.add_input("x", TensorType{kF32, {3}});
  ir::ValueId n = node(g, "neg", "n", {x});
  g.add_output(x);
  g.add_output(n);
  g.add_output(n);
  auto exe = compile(g);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const Tensor in = Tensor::from_vector<float>({3}, {1.0F, -2.0F, 3.0F});
  auto out = exe->run({{"x", in}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_NE(out->at("x").raw_data(), in.raw_data());
  EXPECT_EQ(out->at("x").data<float>()[1], -2.0F);
  EXPECT_EQ(out->at("n").data<float>()[2], -3.0F);
}

// The stages of one compile, in order, add up to at most the compile's wall time (measured
// here around the call), and the `passes` stage holds every pass the pipeline timed. A cache
// hit runs no pass. About 0.1 s.
TEST(Runtime, ReportTimesEveryCompileStage) {
  ir::Graph g("stages");
  ir::ValueId x = g.add_input("x", TensorType{kF32, {4, 8}});
  g.add_output(node(g, "relu", "r", {node(g, "neg", "n", {x})}));
  for (const bool cached : {false, true}) {
    CompileOptions o;
    o.use_cache = cached;
    const auto t0 = std::chrono::steady_clock::now();
    auto exe = compile(g, o);
    const std::chrono::duration<double, std::milli> wall = std::chrono::steady_clock::now() - t0;
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    const CompileReport& r = exe->report();
    std::vector<std::string> names;
    double sum = 0, passes = 0, pass_sum = 0;
    for (const auto& [stage, ms] : r.stage_times_ms) {
      names.push_back(stage);
      EXPECT_GE(ms, 0.0) << stage;
      sum += ms;
      if (stage == "passes") passes = ms;
    }
    for (const auto& [pass, ms] : r.pass_times_ms) pass_sum += ms;
    const std::vector<std::string> want =
        r.cache_hit ? std::vector<std::string>{"verify", "cache_key"}
        : cached    ? std::vector<std::string>{"verify", "cache_key", "passes", "check", "prepare"}
                    : std::vector<std::string>{"verify", "passes", "check", "prepare"};
    EXPECT_EQ(names, want);
    EXPECT_LE(sum, wall.count());
    if (!r.cache_hit) {
      EXPECT_GE(passes, pass_sum);
    }
    auto j = nlohmann::json::parse(r.to_json());
    ASSERT_EQ(j["stage_times_ms"].size(), want.size());
    EXPECT_EQ(j["stage_times_ms"][0]["stage"], "verify");
  }
  // The same graph once more with the cache: a hit, verify and key only.
  CompileOptions o;
  auto again = compile(g, o);
  ASSERT_TRUE(again.is_ok());
  ASSERT_TRUE(again->report().cache_hit);
  ASSERT_EQ(again->report().stage_times_ms.size(), 2U);
  EXPECT_EQ(again->report().stage_times_ms[1].first, "cache_key");
}

TEST(Runtime, ReportCountsFusionAndJson) {
  ir::Graph g("report");
  ir::ValueId x = g.add_input("x", TensorType{kF32, {4, 8}});
  ir::ValueId b = g.add_constant("b", Tensor::from_vector<float>({8}, std::vector<float>(8, 0.5F)));
  ir::ValueId a = node(g, "add", "a", {x, b});
  ir::ValueId s = node(g, "sigmoid", "s", {a});
  g.add_output(node(g, "mul", "m", {a, s}));
  auto exe = compile(g);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const CompileReport& r = exe->report();
  EXPECT_EQ(r.op_counts_before.at("add"), 1);
  EXPECT_EQ(r.op_counts_after.at("fused_elementwise_internal"), 1);
  ASSERT_EQ(r.fused_groups.size(), 1U);
  EXPECT_EQ(r.fused_groups[0], (std::vector<std::string>{"add", "sigmoid", "mul"}));
  auto j = nlohmann::json::parse(r.to_json());
  EXPECT_EQ(j["placements"][0]["path"], "kernel");
  EXPECT_EQ(j["fused_groups"][0][1], "sigmoid");
  EXPECT_EQ(j["cache_hit"], false);
  EXPECT_TRUE(j.contains("pass_times_ms"));
  EXPECT_TRUE(j.contains("peak_arena_bytes"));
  std::vector<float> xv(32);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i) / 8.0F - 2.0F;
  auto out = exe->run({{"x", Tensor::from_vector<float>({4, 8}, xv)}});
  ASSERT_TRUE(out.is_ok());
  for (size_t i = 0; i < xv.size(); ++i) {
    const double av = xv[i] + 0.5;
    EXPECT_NEAR(out->at("m").data<float>()[i], av / (1.0 + std::exp(-av)), 1e-6);
  }
}

// y = gelu(layer_norm(x @ w + bias)), checked against plain double loops.
TEST(Runtime, MatmulLayerNormGeluModel) {
  const int64_t m = 3, k = 4, n = 5;
  std::vector<float> xv(m * k), wv(k * n), bv(n), gv(n), betav(n);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(static_cast<float>(i));
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(static_cast<float>(i) * 0.7F);
  for (int64_t i = 0; i < n; ++i) {
    bv[i] = 0.1F * static_cast<float>(i);
    gv[i] = 1.0F + 0.05F * static_cast<float>(i);
    betav[i] = -0.2F + 0.1F * static_cast<float>(i);
  }
  ir::Graph g("mlp");
  ir::ValueId x = g.add_input("x", TensorType{kF32, {m, k}});
  ir::ValueId w = g.add_constant("w", Tensor::from_vector<float>({k, n}, wv));
  ir::ValueId bias = g.add_constant("bias", Tensor::from_vector<float>({n}, bv));
  ir::ValueId gamma = g.add_constant("gamma", Tensor::from_vector<float>({n}, gv));
  ir::ValueId beta = g.add_constant("beta", Tensor::from_vector<float>({n}, betav));
  ir::ValueId h = node(g, "add", "h", {node(g, "matmul", "mm", {x, w}), bias});
  ir::ValueId ln = node(g, "layer_normalization", "ln", {h, gamma, beta}, {{"epsilon", 1e-5}});
  g.add_output(node(g, "gelu", "y", {ln}));
  for (bool fuse : {true, false}) {
    CompileOptions o;
    if (!fuse) o.disabled_passes = {"operator-fusion", "decomposition"};
    auto exe = compile(g, o);
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    auto out = exe->run({{"x", Tensor::from_vector<float>({m, k}, xv)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const float* y = out->at("y").data<float>();
    for (int64_t r = 0; r < m; ++r) {
      std::vector<double> row(n);
      double mean = 0;
      for (int64_t c = 0; c < n; ++c) {
        double acc = bv[c];
        for (int64_t t = 0; t < k; ++t) acc += double(xv[r * k + t]) * wv[t * n + c];
        row[c] = acc;
        mean += acc / n;
      }
      double var = 0;
      for (double v : row) var += (v - mean) * (v - mean) / n;
      for (int64_t c = 0; c < n; ++c) {
        const double z = (row[c] - mean) / std::sqrt(var + 1e-5) * gv[c] + betav[c];
        const double want = 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0)));
        EXPECT_NEAR(y[r * n + c], want, 1e-4) << "fuse=" << fuse << " r=" << r << " c=" << c;
      }
    }
  }
}

TEST(Runtime, CompileErrorsNameTheProblem) {
  ir::Graph g("bad");
  ir::ValueId x = g.add_input("x", TensorType{kF32, {2, 3}});
  ir::ValueId y = g.add_input("y", TensorType{kF32, {4}});
  g.add_output(node(g, "add", "a", {x, y}));
  auto exe = compile(g);
  ASSERT_FALSE(exe.is_ok());
  EXPECT_NE(exe.status().message().find("node 'a' (add)"), std::string::npos)
      << exe.status().message();
}

}  // namespace
}  // namespace frame::runtime
