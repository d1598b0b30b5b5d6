// Adversarial inputs for ir::parse_text: truncations, byte mutations, huge numbers, deep
// nesting. Every input must give a Status (never crash, hang or allocate absurdly).

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "frame/ir/text.h"
#include "frame/runtime/compile.h"

namespace frame::ir {
namespace {

const char* kValid = R"(graph main {
  %x = graph_input() : f32[1,3]
  %w = const tensor<f32[3]>[0.5, -1, 2]
  %y = add(%x, %w) {alpha = 1.0, names = ["a", "b\x41"], f = floats[], t = tensor<i64[2]>[1, 2]} : f32[1,3] @add_0
  %lo, %hi = split(%y, _) {axis = 1, split = [1, 2]} : f32[1,1], f32[1,2] @split_0
  %z = fused_elementwise_internal(%lo) {body = graph inner {
    %in0 = graph_input() : f32[1,1]
    %r = relu(%in0) : f32[1,1] @r
    graph_output(%r)
  }} : f32[1,1] @f
  graph_output(%z, %hi)
}
)";

TEST(ParserAttack, EveryTruncationIsAnErrorOrOk) {
  const std::string s = kValid;
  ASSERT_TRUE(parse_text(s).is_ok()) << parse_text(s).status().to_string();
  const size_t last_brace = s.rfind('}');
  for (size_t n = 0; n < last_brace; ++n) {
    Result<Graph> g = parse_text(std::string_view(s).substr(0, n));
    EXPECT_FALSE(g.is_ok()) << "prefix of length " << n << " parsed";
  }
}

TEST(ParserAttack, RandomByteMutationsNeverCrash) {
  const std::string s = kValid;
  std::mt19937 rng(1234);
  const std::string alphabet = "%@{}[]()<>,:=_\"\\#-.0123456789eEinfa \n\t\x80\xff";
  for (int it = 0; it < 20000; ++it) {
    std::string m = s;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % m.size();
      switch (rng() % 3) {
        case 0:
          m[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          m.erase(pos, 1 + rng() % 3);
          break;
        default:
          m.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
      }
      if (m.empty()) m = "x";
    }
    Result<Graph> g = parse_text(m);
    if (g.is_ok()) {
      // Whatever parses must also print and compile without crashing.
      (void)print_text(*g);
      (void)g->verify(nullptr);
    }
  }
}

std::string parse_err(std::string_view t) {
  Result<Graph> g = parse_text(t);
  return g.is_ok() ? std::string("OK") : g.status().to_string();
}

TEST(ParserAttack, HugeNumbers) {
  EXPECT_NE(
      parse_err("graph g { %x = graph_input() : f32[99999999999999999999] graph_output(%x) }"),
      "OK");
  EXPECT_NE(parse_err("graph g { %c = const tensor<i8[1]>[300] graph_output(%c) }"), "OK");
  EXPECT_NE(parse_err("graph g { %c = const tensor<u8[1]>[-1] graph_output(%c) }"), "OK");
  EXPECT_NE(
      parse_err("graph g { %c = const tensor<i64[1]>[9223372036854775808] graph_output(%c) }"),
      "OK");
  // A float that overflows float32.
  std::string f = parse_err("graph g { %c = const tensor<f32[1]>[1e999] graph_output(%c) }");
  EXPECT_NE(f, "OK") << "1e999 accepted into an f32 constant";
  std::string f2 = parse_err("graph g { %c = const tensor<f32[1]>[1e39] graph_output(%c) }");
  EXPECT_NE(f2, "OK") << "1e39 (beyond float32 max) silently accepted";
}

TEST(ParserAttack, HugeConstantShapeDoesNotAllocate) {
  // Element count mismatch must be detected without allocating 2^40 floats first.
  EXPECT_NE(parse_err("graph g { %c = const tensor<f32[1099511627776]>[1] graph_output(%c) }"),
            "OK");
  EXPECT_NE(
      parse_err("graph g { %c = const tensor<f32[4611686018427387904,4]>[1] graph_output(%c) }"),
      "OK");
  EXPECT_NE(parse_err("graph g { %c = const tensor<f32[-1]>[] graph_output(%c) }"), "OK");
}

TEST(ParserAttack, NegativeAndOverflowingInputTypes) {
  // parse_text may accept these, but compile must reject them.
  for (const char* t : {"graph g { %x = graph_input() : f32[-1] %y = relu(%x) graph_output(%y) }",
                        "graph g { %x = graph_input() : f32[4611686018427387904,4] %y = relu(%x) "
                        "graph_output(%y) }",
                        "graph g { %x = graph_input() : f32[2305843009213693952] %y = relu(%x) "
                        "graph_output(%y) }"}) {
    Result<Graph> g = parse_text(t);
    if (!g.is_ok()) continue;
    auto exe = runtime::compile(*g);
    EXPECT_FALSE(exe.is_ok()) << "compiled: " << t;
  }
}

TEST(ParserAttack, DeepNesting) {
  std::string open, close;
  for (int i = 0; i < 200; ++i) {
    open += "%o" + std::to_string(i) + " = relu(%x) {g = graph n {\n%x = graph_input() : f32[1]\n";
    close = "graph_output(%x)\n}} @n" + std::to_string(i) + "\n" + close;
  }
  std::string t = "graph g {\n%x = graph_input() : f32[1]\n" + open + close + "graph_output(%x)\n}";
  EXPECT_NE(parse_err(t), "OK");
  // Pathological: 100000 nested '{' must not blow the stack.
  std::string deep = "graph g { %a = relu(%x) ";
  for (int i = 0; i < 100000; ++i) deep += "{g = graph h ";
  EXPECT_NE(parse_err(deep), "OK");
}

TEST(ParserAttack, OddTokens) {
  for (const char* t :
       {"",
        "graph",
        "graph g",
        "graph g {",
        "graph g { } }",
        "graph g { graph_output() }",
        "graph g { graph_output(%x) graph_output(%x) }",
        "graph \"\" { }",
        "graph g { %x = graph_input() : f32[1] : f32[1] }",
        "graph g { %x = graph_input(%y) }",
        "graph g { %\"\" = graph_input() : f32[1] graph_output(%\"\") }",
        "graph g { %x = graph_input() : q99[1] }",
        "graph g { %x = const tensor<f32[]>[] }",
        "graph g { %x = const tensor<bool[1]>[2] graph_output(%x) }",
        "graph g { %x = const tensor<f32[1]>[\"a\"] graph_output(%x) }",
        "graph g { %x = graph_input() : f32[1] %y = relu(%x) {a = [1, \"s\"]} graph_output(%y) }",
        "graph g { %x = graph_input() : f32[1] %y = relu(%x) {a = 1, a = 2} graph_output(%y) }",
        "graph g { %x = graph_input() : f32[1] %y = Relu(%x) graph_output(%y) }",
        "graph g { %x = graph_input() : f32[1] %y = graph_input(%x) graph_output(%y) }",
        "graph g { %x = graph_input() : f32[1] %x = graph_input() : f32[1] graph_output(%x) }",
        "graph g { %s = \"\\xZZ\" }",
        "graph g { # comment without newline"}) {
    Result<Graph> g = parse_text(t);
    if (g.is_ok()) {
      auto exe = runtime::compile(*g);
      (void)exe;
    }
  }
  SUCCEED();
}

}  // namespace
}  // namespace frame::ir
