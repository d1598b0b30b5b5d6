// CompileOptions edge cases and fused_elementwise_internal bodies that disagree with the node.

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "frame/ir/text.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

const char* kSmall = R"(graph g {
  %x = graph_input() : f32[4]
  %c = const tensor<f32[4]>[1, 2, 3, 4]
  %a = add(%x, %c) @a
  %e = exp(%a) @e
  %n = neg(%e) @n
  graph_output(%n)
}
)";

Result<TensorMap> compile_and_run(const std::string& text, CompileOptions o) {
  Result<ir::Graph> g = ir::parse_text(text);
  if (!g.is_ok()) return g.status();
  o.use_cache = false;
  FRAME_ASSIGN_OR_RETURN(Executable exe, compile(*g, o));
  return exe.run({{"x", Tensor::from_vector<float>({4}, {0, 0, 0, 0})}});
}

void expect_ok_or_clean_error(const CompileOptions& o, const std::string& what) {
  auto out = compile_and_run(kSmall, o);
  if (out.is_ok()) {
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(out->at("n").data<float>()[i], -std::exp(double(i + 1)), 1e-4) << what;
    }
  } else {
    EXPECT_FALSE(out.status().message().empty()) << what;
  }
}

TEST(OptionsAttack, OddOptionsNeverCrash) {
  CompileOptions o;
  o.backends = {};
  EXPECT_FALSE(compile_and_run(kSmall, o).is_ok());
  o = {};
  o.backends = {"no_such_backend"};
  expect_ok_or_clean_error(o, "unknown backend");
  o.strict = true;
  expect_ok_or_clean_error(o, "unknown backend strict");
  o = {};
  o.backends = {"cpu", "cpu"};
  expect_ok_or_clean_error(o, "cpu twice");
  o = {};
  o.num_threads = -5;
  expect_ok_or_clean_error(o, "negative threads");
  o = {};
  o.fold_size_limit = 0;
  expect_ok_or_clean_error(o, "fold limit 0");
  o = {};
  o.pipeline = "memory-planning,backend-lowering";
  expect_ok_or_clean_error(o, "reversed tail");
  o = {};
  o.pipeline = "dce";
  expect_ok_or_clean_error(o, "no shape inference");
  o = {};
  o.pipeline = ",,, ,";
  expect_ok_or_clean_error(o, "empty pipeline items");
  o = {};
  o.pipeline = "shape-inference,shape-inference,cse,cse,operator-fusion,operator-fusion";
  expect_ok_or_clean_error(o, "repeated passes");
  o = {};
  o.pipeline = "nope";
  EXPECT_FALSE(compile_and_run(kSmall, o).is_ok());
  o = {};
  o.disabled_passes = {"shape-inference"};
  expect_ok_or_clean_error(o, "shape inference disabled");
  o = {};
  o.disabled_passes = {"memory-planning", "backend-lowering"};
  expect_ok_or_clean_error(o, "tail disabled");
  o = {};
  o.allow_inplace = true;
  o.reuse_buffers = false;
  expect_ok_or_clean_error(o, "inplace without reuse");
}

// The fused kernel takes dtypes/shapes from the body's declared value types while shape
// inference re-derives them from the node inputs: a body that disagrees with its node must be
// rejected at compile time (observed: heap corruption "free(): invalid pointer").
TEST(OptionsAttack, FusedBodyTypeDisagreesWithNode) {
  const char* f64_body = R"(graph g {
  %x = graph_input() : f32[4000]
  %z = fused_elementwise_internal(%x) {body = graph inner {
    %in0 = graph_input() : f64[4000]
    %b = relu(%in0) : f64[4000] @b
    %c = neg(%b) : f64[4000] @c
    graph_output(%c)
  }} @f
  graph_output(%z)
}
)";
  const char* shape_body = R"(graph g {
  %x = graph_input() : f32[2]
  %z = fused_elementwise_internal(%x) {body = graph inner {
    %in0 = graph_input() : f32[4000]
    %b = relu(%in0) : f32[4000] @b
    %c = neg(%b) : f32[4000] @c
    graph_output(%c)
  }} @f
  graph_output(%z)
}
)";
  for (const char* t : {shape_body, f64_body}) {
    auto g = ir::parse_text(t);
    ASSERT_TRUE(g.is_ok());
    CompileOptions o;
    o.use_cache = false;
    auto exe = compile(*g, o);
    EXPECT_FALSE(exe.is_ok()) << "body types disagree with the node but it compiled:\n" << t;
  }
}

// A body whose output is its input: the kernel returns zeros instead of the identity.
TEST(OptionsAttack, FusedBodyOutputIsBodyInput) {
  auto g = ir::parse_text(R"(graph g {
  %x = graph_input() : f32[3]
  %z = fused_elementwise_internal(%x) {body = graph inner {
    %in0 = graph_input() : f32[3]
    graph_output(%in0)
  }} @f
  graph_output(%z)
}
)");
  ASSERT_TRUE(g.is_ok());
  CompileOptions o;
  o.use_cache = false;
  auto exe = compile(*g, o);
  if (!exe.is_ok()) return;  // a clear compile error is acceptable
  auto out = exe->run({{"x", Tensor::from_vector<float>({3}, {1.5F, -2.0F, 3.0F})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->at("z").data<float>()[0], 1.5F);
  EXPECT_EQ(out->at("z").data<float>()[1], -2.0F);
  EXPECT_EQ(out->at("z").data<float>()[2], 3.0F);
}

}  // namespace
}  // namespace frame::runtime
