#pragma once
/// \file
/// The smallest graph with a shape-determining input, shared by the session tests
/// (tests/cpp/runtime/session_test.cpp) and the compile cache on disk tests
/// (tests/cpp/onnx/disk_cache_test.cpp): y = reshape(x, target), x: f32[2,6] holding 0..11,
/// target: i64[2] a graph input, so a session binds each target value as a constant (ADR 0006).

#include <gtest/gtest.h>

#include "frame/ir/graph.h"

namespace frame::test {

/// y = reshape(x, target): x f32[2,6], target i64[2] (graph inputs), node "r", output "y".
inline ir::Graph reshape_graph() {
  ir::Graph g("reshape_by_input");
  ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {2, 6}});
  ir::ValueId target = g.add_input("target", {DTypeCode::kInt64, {2}});
  Result<ir::NodeId> n = g.create_node("reshape", "r", {x, target}, 1, {}, {"y"});
  EXPECT_TRUE(n.is_ok());
  g.add_output(g.node(*n).outputs[0]);
  return g;
}

/// The x every test feeds: 0..11.
inline Tensor reshape_input() {
  return Tensor::from_vector<float>({2, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
}

/// Reshape's definition: the same 12 values in `shape`.
inline void expect_reshape(const Tensor& y, const Shape& shape) {
  ASSERT_EQ(y.shape(), shape);
  for (int64_t i = 0; i < 12; ++i) ASSERT_EQ(y.data<float>()[i], static_cast<float>(i));
}

}  // namespace frame::test
