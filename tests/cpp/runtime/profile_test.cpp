// Profiling: per-node records (names, placement, types, fused body of both fused kinds), totals
// and calls summed over runs, the JSON / Chrome trace form, and one Profile shared by concurrent
// runs; RunOptions::terminate.

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "../../../src/runtime/plan.h"
#include "common/graph_builder.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

using test::node;

constexpr int64_t kN = 4096;

// y = neg(relu(x)), z = exp(y) over f32[4096].
ir::Graph chain(std::string name) {
  ir::Graph g(std::move(name));
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {kN}});
  ir::ValueId y = node(g, "neg", "n", {node(g, "relu", "r", {x})});
  g.add_output(node(g, "exp", "e", {y}));
  return g;
}

CompileOptions unfused() {
  CompileOptions o;
  o.backends = {"cpu"};
  o.disabled_passes = {"operator-fusion"};
  o.use_cache = false;
  return o;
}

Tensor input(float scale) {
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[i] = std::sin(static_cast<float>(i)) * scale;
  return Tensor::from_vector<float>({kN}, v);
}

void check_output(const Tensor& x, const Tensor& z) {
  for (int64_t i = 0; i < kN; ++i) {
    const double want = std::exp(-std::max(0.0, static_cast<double>(x.data<float>()[i])));
    ASSERT_NEAR(z.data<float>()[i], want, 1e-6 * want) << i;
  }
}

TEST(Profile, PerNodeRecordsTotalsAndCalls) {
  auto exe = compile(chain("profile_nodes"), unfused());
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  Profile prof;
  RunOptions ro;
  ro.profile = &prof;
  const Tensor x = input(1.0F);
  for (int i = 0; i < 3; ++i) {
    auto out = exe->run({{"x", x}}, ro);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    check_output(x, out->at("e"));
  }
  ASSERT_TRUE(exe->run({{"x", x}}).is_ok());  // not profiled: changes nothing
  EXPECT_EQ(prof.runs, 3);
  ASSERT_EQ(prof.nodes.size(), 3U);
  const char* names[] = {"r", "n", "e"};
  const char* ops[] = {"relu", "neg", "exp"};
  int64_t sum = 0;
  for (size_t i = 0; i < 3; ++i) {
    const NodeProfile& n = prof.nodes[i];
    EXPECT_EQ(n.node, names[i]);
    EXPECT_EQ(n.op, ops[i]);
    EXPECT_EQ(n.backend, "cpu");
    EXPECT_EQ(n.path, "kernel");
    EXPECT_EQ(n.input_types, std::vector<std::string>{"f32[4096]"});
    EXPECT_EQ(n.output_types, std::vector<std::string>{"f32[4096]"});
    EXPECT_TRUE(n.fused_ops.empty());
    EXPECT_EQ(n.calls, 3);
    EXPECT_GE(n.total_ns, 0);
    sum += n.total_ns;
  }
  EXPECT_LE(sum, prof.run_ns);  // node times lie inside the run
  ASSERT_EQ(prof.events.size(), 9U);
  for (size_t k = 0; k < prof.events.size(); ++k) {
    EXPECT_EQ(prof.events[k].node, k % 3);
    EXPECT_EQ(prof.events[k].thread, 0);
    if (k % 3 != 0) {  // steps of one run start in order, each after the previous ended
      EXPECT_GE(prof.events[k].start_ns, prof.events[k - 1].start_ns + prof.events[k - 1].dur_ns);
    }
  }
  const std::vector<size_t> order = prof.by_time();
  ASSERT_EQ(order.size(), 3U);
  EXPECT_GE(prof.nodes[order[0]].total_ns, prof.nodes[order[1]].total_ns);
  EXPECT_GE(prof.nodes[order[1]].total_ns, prof.nodes[order[2]].total_ns);
  Profile copy = prof;
  EXPECT_EQ(copy.runs, 3);
  prof.clear();
  EXPECT_EQ(prof.runs, 0);
  EXPECT_TRUE(prof.nodes.empty());
  EXPECT_EQ(copy.nodes.size(), 3U);
}

TEST(Profile, FusedNodeListsItsBody) {
  CompileOptions o = unfused();
  o.disabled_passes.clear();
  auto exe = compile(chain("profile_fused"), o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  Profile prof;
  auto out = exe->run({{"x", input(1.0F)}}, RunOptions{&prof});
  ASSERT_TRUE(out.is_ok());
  ASSERT_EQ(prof.nodes.size(), 1U);
  EXPECT_EQ(prof.nodes[0].op, "fused_elementwise_internal");
  EXPECT_EQ(prof.nodes[0].fused_ops, (std::vector<std::string>{"relu", "neg", "exp"}));
}

// relu(A x B) as the fused_post_ops_internal node a lowering pattern makes (made by hand so
// the test does not depend on which backends this build has): A f32[2,3] input, B constant.
ir::Graph post_ops_graph() {
  ir::Graph g("profile_post_ops");
  ir::ValueId a = g.add_input("a", ir::TensorType{DTypeCode::kFloat32, {2, 3}});
  ir::ValueId b = g.add_constant("b", Tensor::from_vector<float>({3, 2}, {1, -1, 2, 0, -1, 1}));
  auto id = g.create_node("fused_post_ops_internal", "mm", {a, b}, 1,
                          {{"base_op", std::string("matmul")},
                           {"post_ops", std::vector<std::string>{"relu"}},
                           {"post_op_params", std::vector<double>{0.0, 0.0}}},
                          {"y"});
  EXPECT_TRUE(id.is_ok()) << id.status().to_string();
  g.add_output(g.node(*id).outputs[0]);
  return g;
}

TEST(Profile, PostOpNodeListsBaseOpAndPostOps) {
  CompileOptions o;
  o.backends = {"cpu"};
  o.use_cache = false;
  auto exe = compile(post_ops_graph(), o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  // The compile report lists it with the lowering-pattern fusions, not operator-fusion's.
  const CompileReport& r = exe->report();
  EXPECT_TRUE(r.fused_groups.empty());
  ASSERT_EQ(r.lowering_fused.size(), 1U);
  EXPECT_EQ(r.lowering_fused[0].first, "mm");
  EXPECT_EQ(r.lowering_fused[0].second, (std::vector<std::string>{"matmul", "relu"}));
  const nlohmann::json rj = nlohmann::json::parse(r.to_json());
  EXPECT_EQ(rj["lowering_fused"][0]["node"], "mm");
  EXPECT_EQ(rj["lowering_fused"][0]["ops"], (std::vector<std::string>{"matmul", "relu"}));

  Profile prof;
  auto out =
      exe->run({{"a", Tensor::from_vector<float>({2, 3}, {1, 2, 3, -1, 0, 1})}}, RunOptions{&prof});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  // By hand: [1,2,3] x B = [2, 2] and [-1,0,1] x B = [-2, 2]; relu gives [2, 2, 0, 2].
  const float* y = out->at("y").data<float>();
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{2, 2, 0, 2}));
  ASSERT_EQ(prof.nodes.size(), 1U);
  EXPECT_EQ(prof.nodes[0].op, "fused_post_ops_internal");
  EXPECT_EQ(prof.nodes[0].fused_ops, (std::vector<std::string>{"matmul", "relu"}));
  const nlohmann::json pj = nlohmann::json::parse(prof.to_json());
  EXPECT_EQ(pj["nodes"][0]["fused_ops"], (std::vector<std::string>{"matmul", "relu"}));
}

TEST(Profile, FusedNodeOpsReadsBothFusedKinds) {
  ir::Graph g("fused_kinds");
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {2, 2}});
  ir::ValueId w = g.add_input("w", ir::TensorType{DTypeCode::kFloat32, {2, 2}});
  ir::ValueId r = g.add_input("r", ir::TensorType{DTypeCode::kFloat32, {2, 2}});
  auto post = g.create_node("fused_post_ops_internal", "p", {x, w, ir::kNoValue, r}, 1,
                            {{"base_op", std::string("gemm")},
                             {"post_ops", std::vector<std::string>{"add", "leaky_relu"}},
                             {"post_op_params", std::vector<double>{0, 0, 0.1, 0}}});
  ASSERT_TRUE(post.is_ok()) << post.status().to_string();
  EXPECT_EQ(detail::fused_node_ops(g.node(*post)),
            (std::vector<std::string>{"gemm", "add", "leaky_relu"}));
  auto missing = g.create_node("fused_post_ops_internal", "q", {x, w}, 1,
                               {{"post_ops", std::vector<std::string>{"relu"}}});
  ASSERT_TRUE(missing.is_ok());
  EXPECT_TRUE(detail::fused_node_ops(g.node(*missing)).empty());  // no base_op: nothing
  auto plain = g.create_node("relu", "n", {x}, 1);
  ASSERT_TRUE(plain.is_ok());
  EXPECT_TRUE(detail::fused_node_ops(g.node(*plain)).empty());
}

TEST(Profile, JsonIsAChromeTraceWithTheSummary) {
  auto exe = compile(chain("profile_json"), unfused());
  ASSERT_TRUE(exe.is_ok());
  Profile prof;
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(exe->run({{"x", input(1.0F)}}, RunOptions{&prof}).is_ok());
  const nlohmann::json j = nlohmann::json::parse(prof.to_json());
  ASSERT_TRUE(j["traceEvents"].is_array());
  ASSERT_EQ(j["traceEvents"].size(), 6U);
  std::set<std::string> names;
  for (const auto& e : j["traceEvents"]) {
    EXPECT_EQ(e["ph"], "X");
    EXPECT_TRUE(e["ts"].is_number());
    EXPECT_TRUE(e["dur"].is_number());
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_EQ(e["pid"], 1);
    EXPECT_EQ(e["tid"], 0);
    EXPECT_EQ(e["args"]["backend"], "cpu");
    names.insert(e["name"].get<std::string>());
  }
  EXPECT_EQ(names, (std::set<std::string>{"r", "n", "e"}));
  EXPECT_EQ(j["runs"], 2);
  ASSERT_EQ(j["nodes"].size(), 3U);
  double percent = 0;
  double prev = 1e300;
  for (const auto& n : j["nodes"]) {
    EXPECT_EQ(n["calls"], 2);
    EXPECT_LE(n["ms"].get<double>(), prev);  // largest first
    prev = n["ms"].get<double>();
    percent += n["percent"].get<double>();
    EXPECT_EQ(n["inputs"][0], "f32[4096]");
  }
  EXPECT_LE(percent, 100.0 + 1e-9);
  EXPECT_NEAR(j["run_ms"].get<double>(), static_cast<double>(prof.run_ns) / 1e6, 1e-9);
}

TEST(Profile, ConcurrentRunsShareOneProfile) {
  auto exe = compile(chain("profile_concurrent"), unfused());
  ASSERT_TRUE(exe.is_ok());
  Profile prof;
  constexpr int kThreads = 4;
  constexpr int kRuns = 10;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Tensor x = input(static_cast<float>(t + 1));
      for (int r = 0; r < kRuns; ++r) {
        auto out = exe->run({{"x", x}}, RunOptions{&prof});
        if (!out.is_ok()) {
          ++failures[t];
          continue;
        }
        for (int64_t i = 0; i < kN; ++i) {
          const double want = std::exp(-std::max(0.0, static_cast<double>(x.data<float>()[i])));
          if (std::fabs(out->at("e").data<float>()[i] - want) > 1e-6 * want) {
            ++failures[t];
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_EQ(prof.runs, kThreads * kRuns);
  ASSERT_EQ(prof.nodes.size(), 3U);
  for (const NodeProfile& n : prof.nodes) EXPECT_EQ(n.calls, kThreads * kRuns);
  EXPECT_EQ(prof.events.size(), 3U * kThreads * kRuns);
  std::set<int> tids;
  for (const TraceEvent& e : prof.events) tids.insert(e.thread);
  EXPECT_EQ(tids.size(), static_cast<size_t>(kThreads));
}

// RunOptions::terminate: a set flag stops the run before its first node, naming it, profiled
// or not; a cleared one runs to the end and gives the right result.
TEST(RunTerminate, StopsBeforeTheNextNode) {
  auto exe = compile(chain("terminate"), unfused());
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  std::atomic<bool> stop{true};
  Profile prof;
  for (Profile* p : {static_cast<Profile*>(nullptr), &prof}) {
    RunOptions ro;
    ro.terminate = &stop;
    ro.profile = p;
    auto out = exe->run({{"x", input(1.0F)}}, ro);
    ASSERT_FALSE(out.is_ok());
    EXPECT_EQ(out.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(out.status().message().find("terminated"), std::string::npos);
    EXPECT_NE(out.status().message().find("'r'"), std::string::npos) << out.status().message();
  }
  stop = false;
  RunOptions ro;
  ro.terminate = &stop;
  const Tensor x = input(1.0F);
  auto out = exe->run({{"x", x}}, ro);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  check_output(x, out->at("e"));
}

TEST(RunObserver, SeesEveryNodesOutputsInOrder) {
  // Values computed by hand from x: r = relu(x), n = -r, e = exp(n); timed and untimed runs.
  auto exe = compile(chain("observer"), unfused());
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const Tensor x = input(1.0F);
  Profile prof;
  for (Profile* p : {static_cast<Profile*>(nullptr), &prof}) {
    std::vector<std::string> seen;
    std::vector<std::string> nodes;
    const NodeObserver observer = [&](const NodeProfile& node, std::span<const std::string> names,
                                      std::span<const Tensor> outputs) {
      ASSERT_EQ(names.size(), 1U);
      ASSERT_EQ(outputs.size(), 1U);
      seen.push_back(names[0]);
      nodes.push_back(node.node);
      for (int64_t i = 0; i < kN; ++i) {
        const double r = std::max(0.0, static_cast<double>(x.data<float>()[i]));
        const double want = names[0] == "r" ? r : names[0] == "n" ? -r : std::exp(-r);
        ASSERT_NEAR(outputs[0].data<float>()[i], want, 1e-6) << names[0] << " " << i;
      }
    };
    RunOptions ro;
    ro.observer = &observer;
    ro.profile = p;
    auto out = exe->run({{"x", x}}, ro);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(nodes, (std::vector<std::string>{"r", "n", "e"}));
    EXPECT_EQ(seen, nodes);  // node() names each output after its node
  }
}

}  // namespace
}  // namespace frame::runtime
