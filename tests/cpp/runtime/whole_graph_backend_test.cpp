// A whole-graph backend (Backend::Granularity::kWholeGraph, the granularity intel_npu uses;
// docs/backends/intel-npu.md) registered from the test suite. Placement works as for any
// backend: backend-lowering picks "test_whole_graph" for a node when a kernel is registered
// for (op, "test_whole_graph") and supports the node; the runtime then hands each maximal run
// of consecutive nodes placed on it to Backend::compile as one part. The test backend records
// every part it receives and runs it by interpreting the part's nodes by hand.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <vector>

#include "frame/ops/kernel_registry.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

constexpr std::string_view kName = "test_whole_graph";

// The kernels only declare what the backend runs (op and dtype) for placement; a whole-graph
// backend never calls them.
Status never_called(ops::KernelContext& ctx) {
  return internal_error("node '{}': test_whole_graph runs nodes only inside whole-graph parts",
                        ctx.node->node_name);
}
FRAME_REGISTER_KERNEL(add, "test_whole_graph", never_called).dtypes({DTypeCode::kFloat32});
FRAME_REGISTER_KERNEL(mul, "test_whole_graph", never_called).dtypes({DTypeCode::kFloat32});
FRAME_REGISTER_KERNEL(sub, "test_whole_graph", never_called).dtypes({DTypeCode::kFloat32});

// What one call of compile() received, as names.
struct ReceivedPart {
  std::vector<std::string> nodes;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

// One part: the nodes' ops and value ids, evaluated elementwise on f32 of equal shapes.
class InterpretedPart final : public CompiledPart {
 public:
  InterpretedPart(const PartSpec& spec, std::atomic<int>* runs) : runs_(runs) {
    const ir::Graph& g = *spec.graph;
    for (ir::NodeId id : spec.nodes) {
      const ir::Node& n = g.node(id);
      nodes_.push_back({n.op, n.inputs[0], n.inputs[1], n.outputs[0]});
    }
    inputs_ = spec.inputs;
    outputs_ = spec.outputs;
  }
  Status run(const PartIO& io) const override {
    ++*runs_;
    std::map<ir::ValueId, std::vector<float>> values;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Tensor& t = io.inputs[i];
      values[inputs_[i]].assign(t.data<float>(), t.data<float>() + t.numel());
    }
    for (const Node& n : nodes_) {
      const std::vector<float>& a = values.at(n.a);
      const std::vector<float>& b = values.at(n.b);
      std::vector<float> out(a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        out[i] = n.op == "add" ? a[i] + b[i] : n.op == "mul" ? a[i] * b[i] : a[i] - b[i];
      }
      values[n.out] = std::move(out);
    }
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const std::vector<float>& v = values.at(outputs_[i]);
      std::copy(v.begin(), v.end(), io.outputs[i].data<float>());
    }
    return Status();
  }

 private:
  struct Node {
    std::string op;
    ir::ValueId a, b, out;
  };
  std::vector<Node> nodes_;
  std::vector<ir::ValueId> inputs_, outputs_;
  std::atomic<int>* runs_;
};

class WholeGraphBackend final : public Backend {
 public:
  std::string_view name() const override { return kName; }
  Granularity granularity() const override { return Granularity::kWholeGraph; }
  Result<std::unique_ptr<CompiledPart>> compile(const PartSpec& part) const override {
    const ir::Graph& g = *part.graph;
    ReceivedPart r;
    for (ir::NodeId id : part.nodes) r.nodes.push_back(g.node(id).name);
    for (ir::ValueId v : part.inputs) r.inputs.push_back(g.value(v).name);
    for (ir::ValueId v : part.outputs) r.outputs.push_back(g.value(v).name);
    {
      std::lock_guard lock(mu_);
      received_.push_back(std::move(r));
    }
    return std::unique_ptr<CompiledPart>(std::make_unique<InterpretedPart>(part, &runs_));
  }
  std::vector<ReceivedPart> take_received() const {
    std::lock_guard lock(mu_);
    return std::exchange(received_, {});
  }
  int runs() const { return runs_; }

 private:
  mutable std::mutex mu_;
  mutable std::vector<ReceivedPart> received_;
  mutable std::atomic<int> runs_{0};
};

const WholeGraphBackend& backend() {
  static const std::shared_ptr<WholeGraphBackend> b = [] {
    auto made = std::make_shared<WholeGraphBackend>();
    const Status s = register_backend(made);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return made;
  }();
  return *b;
}

// a = x + y; m = a * y; s = sigmoid(m) (no test_whole_graph kernel: cpu); d = s - x;
// e = d * d. Outputs m (produced inside the first run) and e.
ir::Graph chain_graph() {
  ir::Graph g("whole_graph");
  const ir::TensorType t{DTypeCode::kFloat32, {4}};
  ir::ValueId x = g.add_input("x", t);
  ir::ValueId y = g.add_input("y", t);
  auto a = g.create_node("add", "a", {x, y}, 1, {}, {"a"});
  auto m = g.create_node("mul", "m", {g.node(*a).outputs[0], y}, 1, {}, {"m"});
  auto s = g.create_node("sigmoid", "s", {g.node(*m).outputs[0]}, 1, {}, {"s"});
  auto d = g.create_node("sub", "d", {g.node(*s).outputs[0], x}, 1, {}, {"d"});
  auto e = g.create_node("mul", "e", {g.node(*d).outputs[0], g.node(*d).outputs[0]}, 1, {}, {"e"});
  g.add_output(g.node(*m).outputs[0]);
  g.add_output(g.node(*e).outputs[0]);
  return g;
}

CompileOptions whole_graph_options() {
  CompileOptions o;
  o.backends = {std::string(kName), "cpu"};
  // Fusion would merge the elementwise chain into one fused node (which the test backend has
  // no kernel for); the test is about partitioning plain nodes.
  o.disabled_passes = {"operator-fusion"};
  o.use_cache = false;
  return o;
}

TEST(WholeGraphBackend, RegisteredObjectIsFoundWithItsGranularity) {
  const Backend* b = find_backend(backend().name());
  ASSERT_EQ(b, &backend());
  EXPECT_EQ(b->granularity(), Backend::Granularity::kWholeGraph);
  EXPECT_TRUE(b->unavailable_reason().empty());
}

TEST(WholeGraphBackend, ReceivesMaximalRunsAndRunsThem) {
  backend().take_received();
  auto exe = compile(chain_graph(), whole_graph_options());
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  std::string placed;
  for (const Placement& p : exe->report().placements) {
    placed += fmt::format("{}:{} ", p.node, p.backend);
  }
  EXPECT_EQ(placed,
            "a:test_whole_graph m:test_whole_graph s:cpu d:test_whole_graph "
            "e:test_whole_graph ");

  const std::vector<ReceivedPart> parts = backend().take_received();
  ASSERT_EQ(parts.size(), 2U);
  EXPECT_EQ(parts[0].nodes, (std::vector<std::string>{"a", "m"}));
  EXPECT_EQ(parts[0].inputs, (std::vector<std::string>{"x", "y"}));
  // a is read only inside the part; m leaves it (sigmoid, graph output).
  EXPECT_EQ(parts[0].outputs, (std::vector<std::string>{"m"}));
  EXPECT_EQ(parts[1].nodes, (std::vector<std::string>{"d", "e"}));
  EXPECT_EQ(parts[1].inputs, (std::vector<std::string>{"s", "x"}));
  EXPECT_EQ(parts[1].outputs, (std::vector<std::string>{"e"}));

  const std::vector<float> xs = {-2.0F, -0.5F, 0.25F, 1.5F};
  const std::vector<float> ys = {1.0F, 2.0F, -1.0F, 0.5F};
  const int runs0 = backend().runs();
  auto out = exe->run(
      {{"x", Tensor::from_vector<float>({4}, xs)}, {"y", Tensor::from_vector<float>({4}, ys)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(backend().runs() - runs0, 2);
  for (size_t i = 0; i < xs.size(); ++i) {
    const double m = (static_cast<double>(xs[i]) + ys[i]) * ys[i];
    const double d = 1.0 / (1.0 + std::exp(-m)) - xs[i];
    EXPECT_NEAR(out->at("m").data<float>()[i], m, 1e-6) << i;
    EXPECT_NEAR(out->at("e").data<float>()[i], d * d, 1e-5) << i;
  }
}

TEST(WholeGraphBackend, DtypeItDoesNotDeclareLeavesTheRun) {
  // The same chain in f64: no test_whole_graph kernel supports it, so every node goes to cpu
  // and the whole-graph backend receives nothing.
  backend().take_received();
  ir::Graph g("f64");
  const ir::TensorType t{DTypeCode::kFloat64, {2}};
  ir::ValueId x = g.add_input("x", t);
  auto a = g.create_node("add", "a", {x, x}, 1, {}, {"a"});
  g.add_output(g.node(*a).outputs[0]);
  auto exe = compile(g, whole_graph_options());
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  EXPECT_TRUE(backend().take_received().empty());
  ASSERT_EQ(exe->report().placements.size(), 1U);
  EXPECT_EQ(exe->report().placements[0].backend, "cpu");
}

}  // namespace
}  // namespace frame::runtime
