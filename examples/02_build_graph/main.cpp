// Build a graph with the C++ API, verify it, compile it and run it:
//   y = relu(matmul(x, w) + b)   x f32[2,3], w f32[3,2] and b f32[2] constants.
// The output is checked against values computed by hand in this file.
#include <cstdio>

#include "frame/ir/graph.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/pass.h"
#include "frame/runtime/compile.h"

using frame::DTypeCode;
using frame::Tensor;

int main() {
  frame::ir::Graph g;
  const frame::ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {2, 3}});
  const frame::ir::ValueId w =
      g.add_constant("w", Tensor::from_vector<float>({3, 2}, {1, -1, 2, 0, -1, 1}));
  const frame::ir::ValueId b = g.add_constant("b", Tensor::from_vector<float>({2}, {0.5F, -4}));
  // create_node(op, name, inputs, output count): ops by their registry names (frame ops).
  const frame::ir::ValueId xw = g.node(*g.create_node("matmul", "xw", {x, w}, 1)).outputs[0];
  const frame::ir::ValueId s = g.node(*g.create_node("add", "bias", {xw, b}, 1)).outputs[0];
  const frame::ir::ValueId y = g.node(*g.create_node("relu", "act", {s}, 1)).outputs[0];
  g.add_output(y);
  // Shape inference types every value from the op schemas; Graph::verify then checks the
  // structure, the types and every node against its op schema (V1-V4).
  frame::passes::PassContext ctx;
  if (frame::Status s = frame::passes::run_pipeline(g, "shape-inference", ctx); !s.is_ok()) {
    std::fprintf(stderr, "shape inference: %s\n", s.message().c_str());
    return 1;
  }
  if (frame::Status v = g.verify(frame::ops::make_op_query()); !v.is_ok()) {
    std::fprintf(stderr, "verify: %s\n", v.message().c_str());
    return 1;
  }
  frame::Result<frame::runtime::Executable> exe = frame::runtime::compile(g);
  if (!exe.is_ok()) return std::fprintf(stderr, "%s\n", exe.status().message().c_str()), 1;
  const Tensor in = Tensor::from_vector<float>({2, 3}, {1, 2, 3, -1, 0, 2});
  frame::Result<frame::runtime::TensorMap> out = exe->run({{"x", in}});
  if (!out.is_ok()) return std::fprintf(stderr, "%s\n", out.status().message().c_str()), 1;
  // By hand: x @ w = [[1+4-3, -1+0+3], [-1+0-2, 1+0+2]] = [[2, 2], [-3, 3]];
  // + b = [[2.5, -2], [-2.5, -1]]; relu = [[2.5, 0], [0, 0]].
  const float expected[4] = {2.5F, 0, 0, 0};
  const float* got = out->begin()->second.data<float>();
  int bad = 0;
  for (int i = 0; i < 4; ++i) {
    std::printf("y[%d] = %g (expected %g)\n", i, got[i], expected[i]);
    bad += got[i] != expected[i];
  }
  return bad == 0 ? 0 : 1;
}
