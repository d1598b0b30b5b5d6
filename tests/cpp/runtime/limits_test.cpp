// Resource limits of compile() (CompileOptions::max_tensor_bytes, max_memory_bytes;
// docs/security.md): a Pad whose pads ask for gigabytes (the fuzzed model of the hardening
// issue), a ConstantOfShape, an Expand and a Resize with huge shapes are refused at compile
// time with the node, the value, the bytes asked for and the limit, before any buffer is
// allocated; a Session refuses a stream of ever larger shapes by the same check. Byte counts
// in the expectations are computed by hand from the shapes.

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "frame/runtime/compile.h"
#include "frame/runtime/session.h"

namespace frame::runtime {
namespace {

// Expects `s` to fail with kOutOfRange and a message containing every one of `parts`.
void expect_refused(const Status& s, const std::vector<std::string>& parts) {
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.message();
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos)
        << "missing '" << p << "' in: " << s.message();
  }
}

CompileOptions cpu() {
  CompileOptions o;
  o.backends = {"cpu"};
  o.num_threads = 1;
  o.use_cache = false;
  return o;
}

// y = pad(x, pads) with x: f32[1,4] and constant pads.
ir::Graph pad_graph(const std::vector<int64_t>& pads) {
  ir::Graph g("pad");
  ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {1, 4}});
  ir::ValueId p = g.add_constant("pads", Tensor::from_vector<int64_t>({4}, pads));
  Result<ir::NodeId> n = g.create_node("pad", "pad", {x, p}, 1, {}, {"y"});
  EXPECT_TRUE(n.is_ok()) << n.status().message();
  g.add_output(g.node(*n).outputs[0]);
  return g;
}

TEST(CompileLimits, DefaultsAreFractionsOfPhysicalMemory) {
  const size_t phys =
      static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
  const CompileOptions o;
  EXPECT_EQ(o.max_memory_bytes, phys / 4 * 3);
  EXPECT_EQ(o.max_tensor_bytes, phys / 2);
}

TEST(CompileLimits, TheFuzzedPadIsRefusedAtCompile) {
  // The model: pads of 2,046,820,354 on both ends of axis 1 ask for
  // f32[1, 4 + 2 * 2046820354] = f32[1,4093640712]: 16,374,562,848 bytes.
  const ir::Graph g = pad_graph({0, 2046820354, 0, 2046820354});
  CompileOptions o = cpu();
  o.max_tensor_bytes = size_t{1} << 30;
  Result<Executable> exe = compile(g, o);
  expect_refused(exe.status(), {"node 'pad' (pad)", "output 0 'y'", "f32[1,4093640712]",
                                "16374562848 bytes", "limit of 1073741824", "max_tensor_bytes"});
  // Under the tensor limit, the run's memory (input + output in the arena) is refused next.
  o.max_tensor_bytes = size_t{32} << 30;
  o.max_memory_bytes = size_t{8} << 30;
  exe = compile(g, o);
  expect_refused(exe.status(), {"max_memory_bytes", "limit of 8589934592", "node 'pad' (pad)",
                                "'y'", "16374562848 bytes"});
  // The default limits refuse a pad beyond any machine's memory (4 TiB of f32).
  exe = compile(pad_graph({0, 0, 0, int64_t{1} << 40}), cpu());
  expect_refused(exe.status(), {"node 'pad' (pad)", "'y'", "max_tensor_bytes"});
  // Pads that overflow the element count are refused, not wrapped.
  exe = compile(pad_graph({0, int64_t{1} << 62, 0, int64_t{1} << 62}), cpu());
  ASSERT_FALSE(exe.is_ok());
  EXPECT_NE(exe.status().message().find("'pad'"), std::string::npos) << exe.status().message();
}

TEST(CompileLimits, ASmallPadStillCompilesAndRuns) {
  CompileOptions o = cpu();
  o.max_tensor_bytes = 64;   // y: f32[1,6] = 24 bytes
  o.max_memory_bytes = 256;  // x (16 bytes), y (24) and the pads (32)
  Result<Executable> exe = compile(pad_graph({0, 1, 0, 1}), o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  Result<TensorMap> out = exe->run({{"x", Tensor::from_vector<float>({1, 4}, {1, 2, 3, 4})}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const Tensor& y = out->at("y");
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 6),
            (std::vector<float>{0, 1, 2, 3, 4, 0}));
  // The same graph with one byte less than its constants and arena.
  o.max_memory_bytes = 32 + 16;  // constants (pads) + x, without room for y
  expect_refused(compile(pad_graph({0, 1, 0, 1}), o).status(), {"a run needs", "max_memory_bytes"});
}

TEST(CompileLimits, ConstantOfShapeExpandAndResizeWithHugeShapes) {
  CompileOptions o = cpu();
  o.max_tensor_bytes = size_t{1} << 30;
  {
    // f32[100000,100000]: 40,000,000,000 bytes; its input is a constant, so folding would
    // try to build it if the limit came later.
    ir::Graph g("cos");
    ir::ValueId s = g.add_constant("shape", Tensor::from_vector<int64_t>({2}, {100000, 100000}));
    Result<ir::NodeId> n = g.create_node("constant_of_shape", "fill", {s}, 1, {}, {"y"});
    ASSERT_TRUE(n.is_ok()) << n.status().message();
    g.add_output(g.node(*n).outputs[0]);
    expect_refused(compile(g, o).status(), {"node 'fill' (constant_of_shape)", "'y'",
                                            "40000000000 bytes", "max_tensor_bytes"});
  }
  {
    // x: f32[1] expanded to [1<<20, 1<<20]: 2^42 bytes.
    ir::Graph g("expand");
    ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {1}});
    ir::ValueId s = g.add_constant(
        "shape", Tensor::from_vector<int64_t>({2}, {int64_t{1} << 20, int64_t{1} << 20}));
    Result<ir::NodeId> n = g.create_node("expand", "grow", {x, s}, 1, {}, {"y"});
    ASSERT_TRUE(n.is_ok()) << n.status().message();
    g.add_output(g.node(*n).outputs[0]);
    expect_refused(compile(g, o).status(),
                   {"node 'grow' (expand)", "'y'", "4398046511104 bytes", "max_tensor_bytes"});
  }
  {
    // x: f32[1,1,2,2] resized to [1,1,100000,100000]: 40,000,000,000 bytes.
    ir::Graph g("resize");
    ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {1, 1, 2, 2}});
    ir::ValueId s =
        g.add_constant("sizes", Tensor::from_vector<int64_t>({4}, {1, 1, 100000, 100000}));
    Result<ir::NodeId> n =
        g.create_node("resize", "up", {x, ir::kNoValue, ir::kNoValue, s}, 1, {}, {"y"});
    ASSERT_TRUE(n.is_ok()) << n.status().message();
    g.add_output(g.node(*n).outputs[0]);
    expect_refused(compile(g, o).status(),
                   {"node 'up' (resize)", "'y'", "40000000000 bytes", "max_tensor_bytes"});
  }
}

TEST(CompileLimits, FoldingSkipsResultsOverItsCap) {
  // y = constant_of_shape([1000]): f32[1000], 4000 bytes, all inputs constant.
  ir::Graph g("fold");
  ir::ValueId s = g.add_constant("shape", Tensor::from_vector<int64_t>({1}, {1000}));
  Result<ir::NodeId> n = g.create_node("constant_of_shape", "fill", {s}, 1, {}, {"y"});
  ASSERT_TRUE(n.is_ok());
  g.add_output(g.node(*n).outputs[0]);
  CompileOptions o = cpu();
  o.fold_size_limit = 3999;
  Result<Executable> exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  EXPECT_EQ(exe->report().op_counts_after.count("constant_of_shape"), 1u);
  o.fold_size_limit = 4000;
  exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  EXPECT_EQ(exe->report().op_counts_after.count("constant_of_shape"), 0u);
  // The tensor limit caps folding too: under it the node is refused, never folded.
  o.fold_size_limit = size_t{1} << 24;
  o.max_tensor_bytes = 3999;
  expect_refused(compile(g, o).status(), {"node 'fill' (constant_of_shape)", "4000 bytes"});
}

TEST(CompileLimits, GraphInputsAndConstantsCount) {
  CompileOptions o = cpu();
  o.max_tensor_bytes = 1000;
  {
    ir::Graph g("big_input");
    ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {1000}});  // 4000 bytes
    Result<ir::NodeId> n = g.create_node("relu", "relu", {x}, 1, {}, {"y"});
    ASSERT_TRUE(n.is_ok());
    g.add_output(g.node(*n).outputs[0]);
    expect_refused(compile(g, o).status(), {"'x'", "4000 bytes", "limit of 1000"});
  }
  {
    // Constants: 2 x 400 bytes, each under the tensor limit, together over the memory limit.
    ir::Graph g("weights");
    ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {100}});
    ir::ValueId a =
        g.add_constant("a", Tensor::from_vector<float>({100}, std::vector<float>(100, 1)));
    ir::ValueId b =
        g.add_constant("b", Tensor::from_vector<float>({100}, std::vector<float>(100, 2)));
    Result<ir::NodeId> n1 = g.create_node("add", "add", {x, a}, 1, {}, {"t"});
    ASSERT_TRUE(n1.is_ok());
    Result<ir::NodeId> n2 = g.create_node("mul", "mul", {g.node(*n1).outputs[0], b}, 1, {}, {"y"});
    ASSERT_TRUE(n2.is_ok());
    g.add_output(g.node(*n2).outputs[0]);
    o.max_memory_bytes = 700;
    expect_refused(compile(g, o).status(),
                   {"constants hold 800 bytes", "limit of 700", "max_memory_bytes"});
    o.max_memory_bytes = 4096;
    EXPECT_TRUE(compile(g, o).is_ok());
  }
}

// y = constant_of_shape(shape), shape: i64[2] a graph input (shape-determining, ADR 0006).
ir::Graph fill_by_input() {
  ir::Graph g("fill_by_input");
  ir::ValueId s = g.add_input("shape", {DTypeCode::kInt64, {2}});
  Result<ir::NodeId> n = g.create_node("constant_of_shape", "fill", {s}, 1, {}, {"y"});
  EXPECT_TRUE(n.is_ok());
  g.add_output(g.node(*n).outputs[0]);
  return g;
}

TEST(CompileLimits, SessionRefusesEverLargerShapesBeforeCompiling) {
  SessionOptions so;
  so.compile = cpu();
  so.compile.max_tensor_bytes = size_t{1} << 20;  // 1 MiB
  Result<Session> s = Session::from_graph(fill_by_input(), so);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  size_t accepted = 0;
  // 16 x 2^k f32 for k = 0..39: 64 bytes up to 2^45 bytes; 1 MiB is f32[16,16384] (k = 14).
  for (int k = 0; k < 40; ++k) {
    const int64_t cols = int64_t{1} << k;
    Result<TensorMap> out = s->run({{"shape", Tensor::from_vector<int64_t>({2}, {16, cols})}});
    const size_t bytes = size_t{16} * static_cast<size_t>(cols) * 4;
    if (bytes <= (size_t{1} << 20)) {
      ASSERT_TRUE(out.is_ok()) << k << ": " << out.status().message();
      EXPECT_EQ(out->at("y").shape(), (Shape{16, cols}));
      ++accepted;
    } else {
      expect_refused(out.status(), {"node 'fill' (constant_of_shape)", "'y'",
                                    fmt::format("{} bytes", bytes), "max_tensor_bytes"});
    }
  }
  EXPECT_EQ(accepted, 15u);
  // Refused keys are never held: only the accepted specializations are cached.
  EXPECT_EQ(s->cache_stats().entries, 15u);
}

}  // namespace
}  // namespace frame::runtime
