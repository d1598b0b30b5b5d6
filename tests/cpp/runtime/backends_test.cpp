// Backend chains: "auto" expansion (M10), comma-separated lists, unknown-backend errors, the
// placement that auto yields, and the compile-cache key holding the expanded chain.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "common/graph_builder.h"
#include "frame/ops/kernel_registry.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

using test::kF32;
using test::node;

std::atomic<int> g_rt_add_calls{0};

// f32 add of same-shape operands (all this test needs).
Status rt_add(ops::KernelContext& ctx) {
  ++g_rt_add_calls;
  const float* a = ctx.input(0).data<float>();
  const float* b = ctx.input(1).data<float>();
  float* o = ctx.output(0).data<float>();
  for (int64_t i = 0; i < ctx.output(0).numel(); ++i) o[i] = a[i] + b[i];
  return Status();
}
FRAME_REGISTER_KERNEL(add, "rt_chain_backend", rt_add).dtypes({kF32});

// y = sigmoid(x + x'); add has a kernel on rt_chain_backend, sigmoid does not.
ir::Graph add_sigmoid(std::string name) {
  ir::Graph g(std::move(name));
  ir::ValueId x = g.add_input("x", ir::TensorType{kF32, {4}});
  ir::ValueId y = g.add_input("y", ir::TensorType{kF32, {4}});
  g.add_output(node(g, "sigmoid", "s", {node(g, "add", "a", {x, y})}));
  return g;
}

// The chain "auto" must give in this build, computed from the registry directly.
std::vector<std::string> expected_auto() {
  std::vector<std::string> out;
  for (std::string_view b : kAutoBackends) {
    if (find_backend(b) != nullptr) out.emplace_back(b);
  }
  out.emplace_back("cpu");
  return out;
}

TEST(Backends, ParseCommaSeparatedLists) {
  auto one = parse_backend_list("cpu");
  ASSERT_TRUE(one.is_ok());
  EXPECT_EQ(*one, (std::vector<std::string>{"cpu"}));
  auto two = parse_backend_list("onednn, cpu");
  ASSERT_TRUE(two.is_ok());
  EXPECT_EQ(*two, (std::vector<std::string>{"onednn", "cpu"}));
  for (const char* bad : {"", ",cpu", "cpu,", "onednn,,cpu", " "}) {
    auto r = parse_backend_list(bad);
    ASSERT_FALSE(r.is_ok()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("empty item"), std::string::npos);
  }
}

// The one splitter of backend lists and pass pipelines: spaces dropped, empty items dropped or
// kept as "".
TEST(Backends, SplitListDropsSpacesAndEmptyItems) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_list("a, b ,c"), (V{"a", "b", "c"}));
  EXPECT_EQ(split_list(",a,,b c,"), (V{"a", "bc"}));
  EXPECT_EQ(split_list(""), V{});
  EXPECT_EQ(split_list(" , "), V{});
  EXPECT_EQ(split_list(",a,,b,", EmptyItems::kKeep), (V{"", "a", "", "b", ""}));
  EXPECT_EQ(split_list("", EmptyItems::kKeep), V{""});
}

TEST(Backends, AutoIsTheDefaultAndExpandsToPresentOptimizedBackendsThenCpu) {
  EXPECT_EQ(CompileOptions().backends, (std::vector<std::string>{"auto"}));
  auto chain = resolve_backends({"auto"});
  ASSERT_TRUE(chain.is_ok()) << chain.status().to_string();
  EXPECT_EQ(*chain, expected_auto());
  EXPECT_EQ(chain->back(), "cpu");
  // Names are kept in order and duplicates dropped.
  auto mixed = resolve_backends({"rt_chain_backend", "auto", "cpu"});
  ASSERT_TRUE(mixed.is_ok());
  std::vector<std::string> want = {"rt_chain_backend"};
  for (const std::string& b : expected_auto()) want.push_back(b);
  EXPECT_EQ(*mixed, want);
  auto cpu_only = resolve_backends({"cpu"});
  ASSERT_TRUE(cpu_only.is_ok());
  EXPECT_EQ(*cpu_only, (std::vector<std::string>{"cpu"}));
}

TEST(Backends, UnknownBackendIsAnErrorListingTheAvailableOnes) {
  auto r = resolve_backends({"cpu", "no_such_backend"});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("unknown backend 'no_such_backend'"), std::string::npos);
  EXPECT_NE(r.status().message().find("available: auto, "), std::string::npos);
  EXPECT_NE(r.status().message().find("cpu"), std::string::npos);
  CompileOptions o;
  o.backends = {"no_such_backend"};
  auto exe = compile(add_sigmoid("unknown_backend"), o);
  ASSERT_FALSE(exe.is_ok());
  EXPECT_NE(exe.status().message().find("unknown backend 'no_such_backend'"), std::string::npos);
  o.backends = {};
  EXPECT_EQ(compile(add_sigmoid("empty_backends"), o).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(Backends, DefaultCompilePlacesEveryNodeOnTheAutoChain) {
  CompileOptions o;
  o.use_cache = false;
  o.disabled_passes = {"operator-fusion"};  // keep both nodes visible
  auto exe = compile(add_sigmoid("auto_placement"), o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const CompileReport& r = exe->report();
  EXPECT_EQ(r.backends, expected_auto());
  ASSERT_EQ(r.placements.size(), 2U);
  for (const Placement& p : r.placements) {
    EXPECT_NE(std::find(r.backends.begin(), r.backends.end(), p.backend), r.backends.end())
        << p.node << " on " << p.backend;
    EXPECT_EQ(p.path, "kernel") << p.node;
  }
}

TEST(Backends, ExplicitChainWithAutoPlacesPreferredFirstAndFallsBack) {
  CompileOptions o;
  o.backends = {"rt_chain_backend", "auto"};
  o.use_cache = false;
  auto exe = compile(add_sigmoid("chain_placement"), o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const CompileReport& r = exe->report();
  ASSERT_EQ(r.placements.size(), 2U);
  EXPECT_EQ(r.placements[0].node, "a");
  EXPECT_EQ(r.placements[0].backend, "rt_chain_backend");
  EXPECT_EQ(r.placements[1].node, "s");
  EXPECT_NE(r.placements[1].backend, "rt_chain_backend");
  EXPECT_EQ(r.placements[1].path, "kernel");  // auto's backends are in the chain
  const int before = g_rt_add_calls.load();
  auto out = exe->run({{"x", Tensor::from_vector<float>({4}, {0, 1, -1, 2})},
                       {"y", Tensor::from_vector<float>({4}, {0, 1, 1, -4})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(g_rt_add_calls.load(), before + 1);
  const float want[] = {0.5F, 0.880797F, 0.5F, 0.119203F};  // sigmoid(0), (2), (0), (-2)
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out->at("s").data<float>()[i], want[i], 1e-6);
}

TEST(Backends, CacheKeyHoldsTheExpandedChain) {
  static int round = 0;  // a fresh graph per call, so --gtest_repeat does not hit old entries
  ir::Graph g = add_sigmoid("auto_cache_key_" + std::to_string(round++));
  auto first = compile(g);  // {"auto"}
  ASSERT_TRUE(first.is_ok());
  EXPECT_FALSE(first->report().cache_hit);
  CompileOptions o;
  o.backends = expected_auto();  // the same chain spelled out: the same compilation
  auto second = compile(g, o);
  ASSERT_TRUE(second.is_ok());
  EXPECT_TRUE(second->report().cache_hit);
  o.backends = {"rt_chain_backend", "cpu"};
  auto third = compile(g, o);
  ASSERT_TRUE(third.is_ok());
  EXPECT_FALSE(third->report().cache_hit);
}

}  // namespace
}  // namespace frame::runtime
