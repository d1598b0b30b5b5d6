// Adversarial cases for zero-copy view ops (memory-planning hands the input's slot to
// reshape / flatten / squeeze / unsqueeze), activation layouts kept between onednn convs, the
// onednn matmul's batch folding, the read-only mapped model file and the compile report. Every
// result is compared with an independent reference: the cpu-only compile, the same graph
// compiled without buffer sharing, or values written here by hand.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/tolerance.h"
#include "cpp/onnx/model_builder.h"
#include "cpp/robustness/attack_test_util.h"
#include "frame/onnx/onnx.h"
#include "frame/ops/kernel_registry.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

using ints = std::vector<int64_t>;
using test::grid;
using test::ToleranceClass;
constexpr DTypeCode kF32 = DTypeCode::kFloat32;

bool have_onednn() { return ops::KernelRegistry::global().find("conv", "onednn") != nullptr; }

Executable compile_or_die(const ir::Graph& g, std::vector<std::string> backends, int threads = 0,
                          bool share = true) {
  CompileOptions o;
  o.backends = std::move(backends);
  o.use_cache = false;
  o.num_threads = threads;
  o.allow_inplace = share;
  o.reuse_buffers = share;
  Result<Executable> e = compile(g, o);
  EXPECT_TRUE(e.is_ok()) << e.status().message();
  return std::move(*e);
}

TensorMap run_or_die(const Executable& e, const TensorMap& in) {
  Result<TensorMap> r = e.run(in);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? std::move(*r) : TensorMap{};
}

// Byte-identical outputs: the same kernels with and without buffer sharing.
void expect_identical(const TensorMap& got, const TensorMap& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    ASSERT_EQ(got.count(name), 1U) << name;
    const Tensor& a = got.at(name);
    ASSERT_EQ(a.shape(), t.shape()) << name;
    EXPECT_EQ(std::memcmp(a.raw_data(), t.raw_data(), t.nbytes()), 0) << name;
  }
}

void expect_same(const TensorMap& got, const TensorMap& want, ToleranceClass cls) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    ASSERT_EQ(got.count(name), 1U) << name;
    const test::CompareResult c =
        test::compare_tensors(got.at(name), t, test::tolerance_for(kF32, cls));
    EXPECT_TRUE(c.ok) << name << ": " << c.message;
  }
}

// Compiles `g` with onednn first (1 and 2 threads, and strict) and cpu only; every output must
// agree.
void expect_onednn_matches_cpu(const ir::Graph& g, const TensorMap& in) {
  const TensorMap want = run_or_die(compile_or_die(g, {"cpu"}), in);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    expect_same(run_or_die(compile_or_die(g, {"onednn", "cpu"}, threads), in), want,
                ToleranceClass::kCrossBackend);
  }
  // Strict mode: every node on a kernel of the chain, the same layouts.
  CompileOptions o;
  o.backends = {"onednn", "cpu"};
  o.use_cache = false;
  o.strict = true;
  Result<Executable> strict = compile(g, o);
  ASSERT_TRUE(strict.is_ok()) << strict.status().message();
  expect_same(run_or_die(*strict, in), want, ToleranceClass::kCrossBackend);
}

ir::ValueId node(ir::Graph& g, const std::string& op, const std::string& name,
                 std::vector<ir::ValueId> ins, ir::AttrMap attrs = {}) {
  Result<ir::NodeId> id = g.create_node(op, name, std::move(ins), 1, std::move(attrs));
  EXPECT_TRUE(id.is_ok()) << id.status().message();
  return g.node(*id).outputs[0];
}

ir::ValueId conv(ir::Graph& g, const std::string& name, ir::ValueId x, ir::ValueId w,
                 ir::AttrMap attrs = {{"pads", ints{1, 1, 1, 1}}}) {
  return node(g, "conv", name, {x, w}, std::move(attrs));
}

// ---------------------------------------------------------------------------------------------
// Compile report

// x -> c1 -> c2 -> y: no post-op anywhere. keep_blocked_activations turns both convs into
// fused_post_ops_internal nodes only to carry the layout attributes; the report listed them
// as "fused by lowering patterns" (ops {"conv"}), although CompileReport::lowering_fused holds
// only nodes with post-ops, and the profile said "[fused: conv]".
TEST(LatestAttack, LayoutOnlyConvsAreNotReportedAsFused) {
  if (!have_onednn()) GTEST_SKIP() << "onednn backend not built";
  ir::Graph g("conv_chain");
  const ir::ValueId x = g.add_input("x", ir::TensorType{kF32, {1, 16, 8, 8}});
  const ir::ValueId w = g.add_constant("w", grid({16, 16, 3, 3}, 1, 0.1F));
  g.add_output(conv(g, "c2", conv(g, "c1", x, w), w));
  const Executable e = compile_or_die(g, {"onednn", "cpu"});
  const CompileReport& r = e.report();
  bool kept = false;
  for (const std::string& s : r.lowering_rewrites) {
    kept = kept || s.find("keep_blocked_activations") != std::string::npos;
  }
  if (!kept) GTEST_SKIP() << "oneDNN keeps the plain layout on this CPU";
  EXPECT_TRUE(r.lowering_fused.empty())
      << r.lowering_fused.size() << " nodes, first " << r.lowering_fused[0].first;
  Profile prof;
  RunOptions ro;
  ro.profile = &prof;
  ASSERT_TRUE(e.run({{"x", grid({1, 16, 8, 8}, 2)}}, ro).is_ok());
  for (const NodeProfile& n : prof.nodes) EXPECT_TRUE(n.fused_ops.empty()) << n.node;
  expect_onednn_matches_cpu(g, {{"x", grid({1, 16, 8, 8}, 2)}});
}

// ---------------------------------------------------------------------------------------------
// Activation layouts between onednn convs: values a non-conv also reads stay plain.

// x [n, c, h, w] -> a = conv(x) -> b = conv(a) (+ a as the residual of b's conv: src and
// residual of one node) -> depthwise / dilated / strided convs -> y; `a` is also a graph output
// when `a_out`, and read by a max_pool (a cpu-only reader) when `pool`.
ir::Graph layout_graph(int64_t n, int64_t c, int64_t hw, bool a_out, bool pool, bool w_input) {
  ir::Graph g("layouts");
  const ir::ValueId x = g.add_input("x", ir::TensorType{kF32, {n, c, hw, hw}});
  const ir::ValueId w1 = w_input ? g.add_input("w1", ir::TensorType{kF32, {c, c, 3, 3}})
                                 : g.add_constant("w1", grid({c, c, 3, 3}, 3, 0.1F));
  const ir::ValueId w2 = g.add_constant("w2", grid({c, c, 3, 3}, 4, 0.1F));
  const ir::ValueId wd = g.add_constant("wd", grid({c, 1, 3, 3}, 5, 0.3F));
  const ir::ValueId w3 = g.add_constant("w3", grid({c, c, 3, 3}, 6, 0.1F));
  const ir::ValueId a = conv(g, "ca", x, w1);
  const ir::ValueId b = node(g, "add", "add_b", {conv(g, "cb", a, w2), a});
  const ir::ValueId d = conv(g, "cd", b, wd, {{"pads", ints{1, 1, 1, 1}}, {"group", c}});
  const ir::ValueId e =
      conv(g, "ce", d, w3,
           {{"pads", ints{2, 2, 2, 2}}, {"dilations", ints{2, 2}}, {"strides", ints{2, 2}}});
  g.add_output(conv(g, "cf", e, w2));
  if (a_out) g.add_output(a);
  if (pool) g.add_output(node(g, "max_pool", "mp", {b}, {{"kernel_shape", ints{2, 2}}}));
  return g;
}

TEST(LatestAttack, LayoutsNeverLeakToNonConvReaders) {
  if (!have_onednn()) GTEST_SKIP() << "onednn backend not built";
  for (int64_t c : {16, 5}) {
    for (int64_t n : {1, 3}) {
      for (int mask : {0, 3, 5, 6}) {
        const bool a_out = (mask & 1) != 0, pool = (mask & 2) != 0, w_in = (mask & 4) != 0;
        SCOPED_TRACE(testing::Message() << "c " << c << " n " << n << " mask " << mask);
        const int64_t hw = n == 1 ? 8 : 7;
        const ir::Graph g = layout_graph(n, c, hw, a_out, pool, w_in);
        TensorMap in{{"x", grid({n, c, hw, hw}, 7)}};
        if (w_in) in["w1"] = grid({c, c, 3, 3}, 3, 0.1F);
        expect_onednn_matches_cpu(g, in);
      }
    }
  }
}

// Several threads run one Executable holding laid-out activations and views at once.
TEST(LatestAttack, ConcurrentRunsWithLayoutsAndViews) {
  if (!have_onednn()) GTEST_SKIP() << "onednn backend not built";
  ir::Graph g = layout_graph(2, 16, 6, false, false, false);
  const ir::ValueId y = g.outputs()[0];
  const ir::ValueId shape = g.add_constant("shape", Tensor::from_vector<int64_t>({2}, {2, -1}));
  const ir::ValueId f = node(g, "reshape", "rs", {node(g, "relu", "ry", {y}), shape});
  g.add_output(node(g, "exp", "ex", {node(g, "flatten", "fl", {f})}));
  const Executable e = compile_or_die(g, {"onednn", "cpu"}, 1);
  const Executable ref = compile_or_die(g, {"cpu"}, 1, false);
  std::vector<TensorMap> ins, want;
  for (int t = 0; t < 6; ++t) {
    ins.push_back({{"x", grid({2, 16, 6, 6}, 10 + t)}});
    want.push_back(run_or_die(ref, ins.back()));
  }
  std::vector<TensorMap> got(ins.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < ins.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) got[t] = run_or_die(e, ins[t]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < ins.size(); ++t)
    expect_same(got[t], want[t], ToleranceClass::kCrossBackend);
}

// ---------------------------------------------------------------------------------------------
// Views: random chains of elementwise ops and views give what the graph gives with no buffer
// sharing at all.

TEST(LatestAttack, RandomGraphsWithViewsMatchUnsharedBuffers) {
  const char* unary[] = {"relu", "neg", "exp", "sigmoid", "tanh", "abs"};
  const char* binary[] = {"add", "mul", "sub"};
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    ir::Graph g("views");
    const ir::ValueId x = g.add_input("x", ir::TensorType{kF32, {2, 3, 4}});
    const ir::ValueId s24 = g.add_constant("s24", Tensor::from_vector<int64_t>({2}, {2, 12}));
    const ir::ValueId s234 = g.add_constant("s234", Tensor::from_vector<int64_t>({3}, {2, 3, 4}));
    const ir::ValueId ax = g.add_constant("ax", Tensor::from_vector<int64_t>({1}, {0}));
    // pool[k] holds values of shape [2,3,4]; views go out to [2,12] / [1,2,3,4] and back.
    std::vector<ir::ValueId> pool{x};
    auto pick = [&] {
      const size_t back =
          std::min<size_t>(pool.size() - 1, std::geometric_distribution<size_t>(0.4)(rng));
      return pool[pool.size() - 1 - back];
    };
    for (int i = 0; i < 14; ++i) {
      const std::string nm = "n" + std::to_string(i);
      const int kind = std::uniform_int_distribution<int>(0, 3)(rng);
      ir::ValueId v;
      if (kind == 0) {
        v = node(g, unary[rng() % 6], nm, {pick()});
      } else if (kind == 1) {
        v = node(g, binary[rng() % 3], nm, {pick(), pick()});
      } else if (kind == 2) {
        // reshape -> op -> reshape back (a view of a view when the op is another view)
        const ir::ValueId r = node(g, "reshape", nm + "_r", {pick(), s24});
        const ir::ValueId m =
            rng() % 2 ? node(g, "flatten", nm + "_f", {r}) : node(g, "relu", nm + "_u", {r});
        v = node(g, "reshape", nm, {m, s234});
      } else {
        const ir::ValueId u = node(g, "unsqueeze", nm + "_q", {pick(), ax});
        v = node(g, "squeeze", nm, {rng() % 2 ? node(g, "exp", nm + "_e", {u}) : u, ax});
      }
      pool.push_back(v);
    }
    g.add_output(pool.back());
    for (int k = 0; k < 2; ++k) {
      const ir::ValueId v = pool[1 + rng() % (pool.size() - 2)];
      if (!g.is_output(v)) g.add_output(v);
    }
    SCOPED_TRACE(seed);
    Tensor in = grid({2, 3, 4}, static_cast<int>(seed), 0.5F);
    const TensorMap want = run_or_die(compile_or_die(g, {"cpu"}, 1, false), {{"x", in}});
    for (bool dnn : {false, true}) {
      if (dnn && !have_onednn()) continue;
      const std::vector<std::string> be =
          dnn ? std::vector<std::string>{"onednn", "cpu"} : std::vector<std::string>{"cpu"};
      const TensorMap got = run_or_die(compile_or_die(g, be, 1), {{"x", in}});
      if (dnn) {
        expect_same(got, want, ToleranceClass::kCrossBackend);
      } else {
        expect_identical(got, want);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// onednn matmul with A's batch dims folded into M.

TEST(LatestAttack, MatmulBatchFoldingMatchesCpu) {
  if (!have_onednn()) GTEST_SKIP() << "onednn backend not built";
  struct Case {
    Shape a, b;
    bool b_input, residual;
  };
  const Case cases[] = {{{2, 1, 3, 8}, {8, 5}, false, true}, {{64, 7, 1, 8}, {8, 5}, true, true},
                        {{4, 1, 3, 8}, {8}, false, false},   {{300, 2, 16}, {16, 33}, false, true},
                        {{1, 1, 1, 8}, {8, 3}, true, false}, {{3, 4, 8}, {1, 8, 5}, false, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_to_string(c.a) + " x " + shape_to_string(c.b));
    ir::Graph g("mm");
    const ir::ValueId a = g.add_input("a", ir::TensorType{kF32, c.a});
    const ir::ValueId b = c.b_input ? g.add_input("b", ir::TensorType{kF32, c.b})
                                    : g.add_constant("b", grid(c.b, 2, 0.3F));
    ir::ValueId y = node(g, "matmul", "mm", {a, b});
    TensorMap in{{"a", grid(c.a, 1)}};
    if (c.b_input) in["b"] = grid(c.b, 2, 0.3F);
    if (c.residual) {
      Shape ys = c.a;
      ys.back() = c.b.back();
      if (c.b.size() > c.a.size()) ys.insert(ys.begin(), c.b[0]);
      const ir::ValueId r = g.add_input("r", ir::TensorType{kF32, ys});
      in["r"] = grid(ys, 3);
      y = node(g, "relu", "relu", {node(g, "add", "add", {r, y})});
    }
    g.add_output(y);
    expect_onednn_matches_cpu(g, in);
  }
}

// ---------------------------------------------------------------------------------------------
// The model file is mapped read-only: special files are refused before any read (a FIFO would
// block forever, /dev/zero never ends), tiny and empty files are parse errors.

TEST(LatestAttack, SpecialModelPathsAreErrorsNotHangs) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("frame_latest_attack_" + std::to_string(getpid()));
  fs::remove_all(dir);
  ASSERT_TRUE(fs::create_directories(dir));
  const fs::path empty = dir / "empty.onnx", one = dir / "one.onnx", fifo = dir / "fifo.onnx";
  std::ofstream(empty).close();
  std::ofstream(one) << '\x0a';  // a length-delimited field with no length
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& p : {empty.string(), one.string(), fifo.string(), dir.string(),
                               std::string("/dev/zero"), (dir / "missing.onnx").string()}) {
    SCOPED_TRACE(p);
    Result<ir::Graph> g = onnx::load(p);
    EXPECT_FALSE(g.is_ok());
    Result<Tensor> t = onnx::read_tensor_proto(p);
    EXPECT_TRUE(!t.is_ok() || p == empty.string());  // an empty TensorProto is a valid message
  }
  fs::remove_all(dir);
}

// A bool initializer whose raw_data or external data holds bytes other than 0 and 1 (ONNX
// stores bool as one byte, any nonzero byte true). raw_data was normalised, external data was
// copied as is: And(true, c) gave false for the byte 2, Not(c) gave 3 and 254.
TEST(LatestAttack, BoolInitializerBytesAreNormalised) {
  namespace fs = std::filesystem;
  using onnx::testing::ModelBuilder;
  using onnx::testing::node;
  const fs::path dir =
      fs::temp_directory_path() / ("frame_latest_bool_" + std::to_string(getpid()));
  fs::remove_all(dir);
  ASSERT_TRUE(fs::create_directories(dir));
  const std::string bytes("\x02\x00\x01\xff", 4);
  std::ofstream(dir / "c.bin", std::ios::binary) << bytes;
  for (bool external : {false, true}) {
    SCOPED_TRACE(external ? "external" : "raw_data");
    ModelBuilder m(13);
    m.input("x", {4}, ::onnx::TensorProto::BOOL).output("y", ::onnx::TensorProto::INT32);
    ::onnx::TensorProto c;
    c.set_name("c");
    c.set_data_type(::onnx::TensorProto::BOOL);
    c.add_dims(4);
    if (external) {
      c.set_data_location(::onnx::TensorProto::EXTERNAL);
      auto* e = c.add_external_data();
      e->set_key("location");
      e->set_value("c.bin");
    } else {
      c.set_raw_data(bytes);
    }
    m.init(c);
    m.add(node("And", {"x", "c"}, {"a"}, "and"));
    m.add(node("Cast", {"a"}, {"y"}, "cast", {onnx::testing::attr_i("to", 6)}));
    const fs::path model = dir / "m.onnx";
    std::ofstream(model, std::ios::binary) << m.bytes();
    Result<ir::Graph> g = onnx::load(model.string());
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    Tensor x = Tensor::zeros(DTypeCode::kBool, {4}).value();
    std::memset(x.raw_data(), 1, 4);
    const TensorMap out = run_or_die(compile_or_die(*g, {"cpu"}), {{"x", x}});
    ASSERT_EQ(out.count("y"), 1U);
    const int32_t* y = out.at("y").data<int32_t>();
    EXPECT_EQ(std::vector<int32_t>(y, y + 4), (std::vector<int32_t>{1, 0, 1, 1}));
  }
  fs::remove_all(dir);
}

// External data whose location is a FIFO (or a directory): the model file itself is refused
// unless regular, but the external data file was opened as is, and opening a FIFO with no
// writer blocks forever. Loading must fail at once, naming the tensor.
TEST(LatestAttack, ExternalDataMustBeARegularFile) {
  namespace fs = std::filesystem;
  using onnx::testing::ModelBuilder;
  using onnx::testing::node;
  const fs::path dir =
      fs::temp_directory_path() / ("frame_latest_fifo_" + std::to_string(getpid()));
  fs::remove_all(dir);
  ASSERT_TRUE(fs::create_directories(dir / "sub"));
  ASSERT_EQ(mkfifo((dir / "w.bin").c_str(), 0600), 0);
  for (const std::string location : {"w.bin", "sub"}) {
    SCOPED_TRACE(location);
    ModelBuilder m(13);
    m.input("x", {4}).output("y");
    m.init(onnx::testing::external_tensor("w", {4}, {{"location", location}}));
    m.add(node("Add", {"x", "w"}, {"y"}, "add"));
    const fs::path model = dir / "m.onnx";
    std::ofstream(model, std::ios::binary) << m.bytes();
    std::atomic<bool> done{false};
    Status st;
    std::thread loader([&] {
      st = onnx::load(model.string()).status();
      done = true;
    });
    for (int i = 0; i < 500 && !done; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!done) {
      ADD_FAILURE() << "loading blocked on the external data file";
      const int fd = ::open((dir / location).c_str(), O_WRONLY | O_NONBLOCK);  // unblock it
      if (fd >= 0) ::close(fd);
    }
    loader.join();
    EXPECT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("'w'"), std::string::npos) << st.message();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace frame::runtime
