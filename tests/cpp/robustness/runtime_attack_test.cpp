// Adversarial compile/run cases: in-place planning with repeated inputs, fusion with shared
// values, output copy-out, concurrency (runs and compiles), cache keys, pass corner cases.
// Expected values are computed here with plain loops, never by frame.

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "frame/ir/text.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

Result<Executable> compile_text(const std::string& text, CompileOptions o = {}) {
  Result<ir::Graph> g = ir::parse_text(text);
  if (!g.is_ok()) return g.status();
  o.use_cache = false;
  return compile(*g, o);
}

std::vector<CompileOptions> all_settings() {
  std::vector<CompileOptions> v;
  for (bool fuse : {true, false}) {
    for (bool inplace : {true, false}) {
      for (bool reuse : {true, false}) {
        CompileOptions o;
        if (!fuse) o.disabled_passes = {"operator-fusion"};
        o.allow_inplace = inplace;
        o.reuse_buffers = reuse;
        v.push_back(o);
      }
    }
  }
  return v;
}

std::string setting_name(const CompileOptions& o) {
  return std::string(o.disabled_passes.empty() ? "fuse" : "nofuse") +
         (o.allow_inplace ? ",inplace" : ",noinplace") + (o.reuse_buffers ? ",reuse" : ",noreuse");
}

// sum(t, b, t): the variadic kernel folds left to right into its output; with the output in
// place over input 0 (t), the third operand (t again) is read after it was overwritten.
TEST(RuntimeAttack, VariadicSumWithRepeatedInPlaceInput) {
  const std::string text = R"(graph g {
  %x = graph_input() : f32[4]
  %m = graph_input() : f32[4,4]
  %t = matmul(%x, %m) @t
  %b = neg(%x) @b
  %s = sum(%t, %b, %t) @s
  %mx = max(%t, %b, %t) @mx
  %mn = mean(%t, %b, %t) @mn
  %r = relu(%s) @r
  %r2 = relu(%mn) @r2
  graph_output(%r, %mx, %r2)
}
)";
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> m(16);
  for (int i = 0; i < 16; ++i) m[i] = (i % 5 == 0) ? 1.0F : 0.0F;  // diag-ish
  std::vector<float> t(4, 0.0F);
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k < 4; ++k) t[j] += x[k] * m[k * 4 + j];
  for (const CompileOptions& o : all_settings()) {
    auto exe = compile_text(text, o);
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    auto out = exe->run(
        {{"x", Tensor::from_vector<float>({4}, x)}, {"m", Tensor::from_vector<float>({4, 4}, m)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    for (int i = 0; i < 4; ++i) {
      const float s = 2 * t[i] - x[i];
      EXPECT_FLOAT_EQ(out->at("r").data<float>()[i], std::max(0.0F, s))
          << setting_name(o) << " sum at " << i;
      EXPECT_FLOAT_EQ(out->at("r2").data<float>()[i], std::max(0.0F, s / 3))
          << setting_name(o) << " mean at " << i;
    }
  }
}

// mul(x, x) in place, followed by add(x, y) on the same x: x must not be overwritten early.
TEST(RuntimeAttack, SquareThenAddSameValue) {
  const std::string text = R"(graph g {
  %in = graph_input() : f32[3]
  %y = graph_input() : f32[3]
  %x = softmax(%in) @x
  %sq = mul(%x, %x) @sq
  %a = add(%x, %y) @a
  %z = sub(%sq, %a) @z
  graph_output(%z)
}
)";
  std::vector<float> in = {0.5F, -1.0F, 2.0F}, y = {1.0F, 2.0F, 3.0F};
  double mx = 2.0, den = 0;
  for (float v : in) den += std::exp(v - mx);
  for (const CompileOptions& o : all_settings()) {
    auto exe = compile_text(text, o);
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    auto out = exe->run(
        {{"in", Tensor::from_vector<float>({3}, in)}, {"y", Tensor::from_vector<float>({3}, y)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    for (int i = 0; i < 3; ++i) {
      const double xv = std::exp(in[i] - mx) / den;
      EXPECT_NEAR(out->at("z").data<float>()[i], xv * xv - (xv + y[i]), 1e-6) << setting_name(o);
    }
  }
}

// Fusion: a value read by a graph output and by another node; outputs listed twice, a
// graph input and a constant as outputs. Returned tensors must not alias each other,
// the caller's input or the graph's constant.
TEST(RuntimeAttack, SharedValuesAndCopiedOutputs) {
  const std::string text = R"(graph g {
  %x = graph_input() : f32[3]
  %c = const tensor<f32[3]>[1, 2, 3]
  %e = exp(%x) @e
  %n = neg(%e) @n
  %v = add(%n, %c) @v
  graph_output(%e, %v, %e, %x, %c)
}
)";
  for (const CompileOptions& o : all_settings()) {
    auto exe = compile_text(text, o);
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    Tensor xin = Tensor::from_vector<float>({3}, {0.0F, 1.0F, -1.0F});
    auto out = exe->run({{"x", xin}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    for (int i = 0; i < 3; ++i) {
      const double ev = std::exp(xin.data<float>()[i]);
      EXPECT_NEAR(out->at("e").data<float>()[i], ev, 1e-6);
      EXPECT_NEAR(out->at("v").data<float>()[i], -ev + (i + 1), 1e-6);
    }
    EXPECT_NE(out->at("x").raw_data(), xin.raw_data()) << "graph input returned without copy";
    // Scribbling over the returned constant must not change later runs.
    out->at("c").data<float>()[0] = 42.0F;
    auto out2 = exe->run({{"x", xin}});
    ASSERT_TRUE(out2.is_ok());
    EXPECT_EQ(out2->at("c").data<float>()[0], 1.0F) << "returned constant aliases the graph";
    EXPECT_NEAR(out2->at("v").data<float>()[0], 0.0, 1e-6);
  }
}

TEST(RuntimeAttack, InputValidation) {
  auto exe = compile_text(R"(graph g {
  %x = graph_input() : f32[2,3]
  %y = relu(%x) @r
  graph_output(%y)
})");
  ASSERT_TRUE(exe.is_ok());
  auto good = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_FALSE(exe->run({}).is_ok());
  EXPECT_FALSE(exe->run({{"x", Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6})}}).is_ok());
  EXPECT_FALSE(exe->run({{"x", Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6})}}).is_ok());
  EXPECT_FALSE(exe->run({{"x", Tensor::from_vector<float>({6}, {1, 2, 3, 4, 5, 6})}}).is_ok());
  EXPECT_FALSE(exe->run({{"x", Tensor()}}).is_ok());
  auto extra = exe->run({{"x", good}, {"z", good}});
  EXPECT_FALSE(extra.is_ok()) << "an unknown input name was silently ignored";
  if (!extra.is_ok()) {
    EXPECT_NE(extra.status().message().find("unknown input 'z'"), std::string::npos)
        << extra.status().message();
  }
  // Scalar input: an undefined Tensor() is dtype f32 and shape [] like the signature.
  auto sc = compile_text(R"(graph g {
  %x = graph_input() : f32[]
  %y = relu(%x) @r
  graph_output(%y)
})");
  ASSERT_TRUE(sc.is_ok());
  EXPECT_FALSE(sc->run({{"x", Tensor()}}).is_ok());
  Executable empty;
  EXPECT_FALSE(empty.run({}).is_ok());
}

// 16 threads share one Executable (matmul + fused elementwise + reduction), each with its own
// inputs and an independent reference.
TEST(RuntimeAttack, SixteenThreadsOneExecutable) {
  const std::string text = R"(graph g {
  %x = graph_input() : f32[8,16]
  %w = graph_input() : f32[16,5]
  %b = const tensor<f32[5]>[0.5, -0.5, 1, 0, 2]
  %mm = matmul(%x, %w) @mm
  %h = add(%mm, %b) @h
  %t = tanh(%h) @t
  %sq = mul(%t, %t) @sq
  %s = reduce_sum(%sq) {axes = [1], keepdims = 0} @s
  %sm = softmax(%h) {axis = 1} @sm
  graph_output(%s, %sm)
}
)";
  for (const CompileOptions& o : all_settings()) {
    auto exe = compile_text(text, o);
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    constexpr int kThreads = 16;
    std::atomic<int> failures{0};
    std::vector<std::thread> th;
    for (int tid = 0; tid < kThreads; ++tid) {
      th.emplace_back([&, tid] {
        for (int r = 0; r < 20; ++r) {
          std::vector<float> x(128), w(80);
          for (int i = 0; i < 128; ++i) x[i] = std::sin(0.1F * i * (tid + 1) + r);
          for (int i = 0; i < 80; ++i) w[i] = std::cos(0.07F * i + tid - r);
          auto out = exe->run({{"x", Tensor::from_vector<float>({8, 16}, x)},
                               {"w", Tensor::from_vector<float>({16, 5}, w)}});
          if (!out.is_ok()) {
            ++failures;
            continue;
          }
          const float bias[5] = {0.5F, -0.5F, 1, 0, 2};
          for (int i = 0; i < 8; ++i) {
            double h[5], s = 0, mx = -1e30, den = 0;
            for (int j = 0; j < 5; ++j) {
              h[j] = bias[j];
              for (int k = 0; k < 16; ++k) h[j] += double(x[i * 16 + k]) * w[k * 5 + j];
              s += std::tanh(h[j]) * std::tanh(h[j]);
              mx = std::max(mx, h[j]);
            }
            for (int j = 0; j < 5; ++j) den += std::exp(h[j] - mx);
            if (std::fabs(out->at("s").data<float>()[i] - s) > 1e-4) ++failures;
            for (int j = 0; j < 5; ++j) {
              if (std::fabs(out->at("sm").data<float>()[i * 5 + j] - std::exp(h[j] - mx) / den) >
                  1e-5)
                ++failures;
            }
          }
        }
      });
    }
    for (auto& t : th) t.join();
    EXPECT_EQ(failures.load(), 0) << setting_name(o);
  }
}

// The same graph compiled from many threads at once through the cache, interleaved with
// distinct graphs that churn the 64-entry cache, while the first results are run.
TEST(RuntimeAttack, ConcurrentCompileThroughCache) {
  auto make = [](int k) {
    return "graph g" + std::to_string(k) +
           " {\n  %x = graph_input() : f32[4]\n  %c = const tensor<f32[1]>[" +
           std::to_string(k % 10) +
           "]\n  %a = add(%x, %c) @a\n  %b = exp(%a) @b\n  graph_output(%b)\n}\n";
  };
  std::atomic<int> failures{0};
  std::vector<std::thread> th;
  for (int tid = 0; tid < 16; ++tid) {
    th.emplace_back([&, tid] {
      for (int r = 0; r < 30; ++r) {
        const int k = (tid % 2 == 0) ? 1 : (tid * 100 + r);  // even threads share one graph
        auto g = ir::parse_text(make(k));
        if (!g.is_ok()) {
          ++failures;
          continue;
        }
        auto exe = compile(*g);
        if (!exe.is_ok()) {
          ++failures;
          continue;
        }
        auto out = exe->run({{"x", Tensor::from_vector<float>({4}, {0, 1, 2, 3})}});
        if (!out.is_ok()) {
          ++failures;
          continue;
        }
        for (int i = 0; i < 4; ++i) {
          if (std::fabs(out->at("b").data<float>()[i] - std::exp(double(i + k % 10))) >
              1e-5 * std::exp(double(i + k % 10)))
            ++failures;
        }
      }
    });
  }
  for (auto& t : th) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// Integer division by zero in a dead branch must not make compile fail; in a live branch it is
// a run-time error naming the node.
TEST(RuntimeAttack, FoldingIntegerDivisionByZero) {
  auto dead = compile_text(R"(graph g {
  %x = graph_input() : i64[2]
  %a = const tensor<i64[2]>[4, 5]
  %z = const tensor<i64[2]>[0, 1]
  %d = div(%a, %z) @d
  %y = neg(%x) @y
  graph_output(%y)
})");
  ASSERT_TRUE(dead.is_ok()) << dead.status().to_string();
  auto live = compile_text(R"(graph g {
  %x = graph_input() : i64[2]
  %a = const tensor<i64[2]>[4, 5]
  %z = const tensor<i64[2]>[0, 1]
  %d = div(%a, %z) @d
  %y = add(%x, %d) @y
  graph_output(%y)
})");
  ASSERT_TRUE(live.is_ok()) << live.status().to_string();
  auto out = live->run({{"x", Tensor::from_vector<int64_t>({2}, {1, 2})}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("node 'd' (div)"), std::string::npos)
      << out.status().message();
}

// INT64_MIN / -1 and INT64_MIN % -1 at run time (x86 idiv traps on these).
TEST(RuntimeAttack, IntMinDividedByMinusOne) {
  auto exe = compile_text(R"(graph g {
  %x = graph_input() : i64[2]
  %y = graph_input() : i64[2]
  %d = div(%x, %y) @d
  %m = mod(%x, %y) @m
  %x32 = graph_input() : i32[2]
  %y32 = graph_input() : i32[2]
  %d32 = div(%x32, %y32) @d32
  %m32 = mod(%x32, %y32) @m32
  graph_output(%d, %m, %d32, %m32)
})");
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const int64_t mn = std::numeric_limits<int64_t>::min();
  const int32_t mn32 = std::numeric_limits<int32_t>::min();
  auto out = exe->run({{"x", Tensor::from_vector<int64_t>({2}, {mn, 7})},
                       {"y", Tensor::from_vector<int64_t>({2}, {-1, -1})},
                       {"x32", Tensor::from_vector<int32_t>({2}, {mn32, 7})},
                       {"y32", Tensor::from_vector<int32_t>({2}, {-1, -1})}});
  // Either a clear error or a defined result; reaching this line means no SIGFPE.
  if (out.is_ok()) {
    EXPECT_EQ(out->at("m").data<int64_t>()[0], 0);
    EXPECT_EQ(out->at("m32").data<int32_t>()[0], 0);
  }
}

// Random ops must never be merged by CSE or folded: two identical unseeded generators differ.
TEST(RuntimeAttack, CseKeepsRandomOps) {
  auto exe = compile_text(R"(graph g {
  %x = graph_input() : f32[1]
  %a = random_uniform() {shape = [64]} @a
  %b = random_uniform() {shape = [64]} @b
  %ra = relu(%a) @ra
  %rb = relu(%b) @rb
  graph_output(%ra, %rb, %x)
})");
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  auto out = exe->run({{"x", Tensor::from_vector<float>({1}, {0})}});
  ASSERT_TRUE(out.is_ok());
  EXPECT_FALSE(out->at("ra").bitwise_equal(out->at("rb"))) << "two random ops merged";
}

// DCE keeps print (side effect) even when its output is unused.
TEST(RuntimeAttack, DceKeepsPrint) {
  auto exe = compile_text(R"(graph g {
  %x = graph_input() : f32[2]
  %p = print(%x) @p
  %y = neg(%x) @y
  graph_output(%y)
})");
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  EXPECT_EQ(exe->report().op_counts_after.count("print"), 1U);
}

// Graph input type whose element count overflows int64 must be rejected at compile time.
TEST(RuntimeAttack, OverflowingShapesRejectedAtCompile) {
  for (const char* t : {// Input type overflows.
                        R"(graph g {
  %x = graph_input() : f32[4611686018427387904,4]
  %y = relu(%x) @r
  graph_output(%y)
})",
                        // Broadcast result overflows (add's shape inference).
                        R"(graph g {
  %x = graph_input() : f32[3037000500]
  %y = graph_input() : f32[3037000500,1]
  %a = add(%x, %y) @n
  graph_output(%a)
})",
                        // range with 2^63-1 int64 elements (bytes overflow).
                        R"(graph g {
  %x = graph_input() : f32[2]
  %s = const tensor<i64[]>[0]
  %l = const tensor<i64[]>[9223372036854775807]
  %d = const tensor<i64[]>[1]
  %a = range(%s, %l, %d) @n
  graph_output(%a, %x)
})"}) {
    auto exe = compile_text(t);
    EXPECT_FALSE(exe.is_ok()) << "compiled:\n" << t;
  }
}

// int64 overflow in pad / conv / pool shape inference wraps to small positive sizes.
TEST(RuntimeAttack, PadAndConvPadOverflow) {
  for (const char* t : {R"(graph g {
  %x = graph_input() : f32[3]
  %p = const tensor<i64[2]>[9223372036854775807, 9223372036854775807]
  %a = pad(%x, %p) {mode = "reflect"} @n
  graph_output(%a)
})",
                        R"(graph g {
  %x = graph_input() : f32[3]
  %p = const tensor<i64[2]>[-9223372036854775807, -9223372036854775807]
  %a = pad(%x, %p) {mode = "edge"} @n
  graph_output(%a)
})",
                        R"(graph g {
  %x = graph_input() : f32[1,1,3,3]
  %w = graph_input() : f32[1,1,1,1]
  %a = conv(%x, %w) {pads = [9223372036854775807, 0, 9223372036854775807, 0]} @n
  graph_output(%a)
})",
                        R"(graph g {
  %x = graph_input() : f32[1,1,3,3]
  %a, %i = max_pool(%x) {kernel_shape = [1, 1], pads = [9223372036854775807, 0, 9223372036854775807, 0]} @n
  graph_output(%a, %i)
})"}) {
    auto exe = compile_text(t);
    EXPECT_FALSE(exe.is_ok()) << "compiled (shape arithmetic wrapped):\n"
                              << (exe.is_ok() ? ir::print_text(exe->compiled_graph()) : "");
  }
}

}  // namespace
}  // namespace frame::runtime
