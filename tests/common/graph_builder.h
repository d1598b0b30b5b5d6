#pragma once
/// \file
/// Small builders shared by the C++ tests that make IR graphs by hand and register test
/// kernels (tests/cpp/ir, runtime, ops). Each test binary compiles its sources in unity
/// batches (tests/CMakeLists.txt), so a helper two test files need lives here, once.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frame/ir/graph.h"
#include "frame/ops/kernel_registry.h"

namespace frame::test {

/// The float32 dtype code, spelled as the tests spell it.
inline constexpr DTypeCode kF32 = DTypeCode::kFloat32;

/// A float32 tensor type of `shape`.
inline ir::TensorType f32(Shape shape) { return ir::TensorType{kF32, std::move(shape)}; }

/// Adds a one-output node `op` named `name` reading `ins` (output value also named `name`) and
/// returns its output. A refused node is a test failure (the graph's message is shown).
inline ir::ValueId node(ir::Graph& g, std::string_view op, std::string name,
                        std::vector<ir::ValueId> ins, ir::AttrMap attrs = {}) {
  Result<ir::NodeId> id = g.create_node(op, name, std::move(ins), 1, std::move(attrs), {name});
  EXPECT_TRUE(id.is_ok()) << id.status().to_string();
  return id.is_ok() ? g.node(*id).outputs[0] : ir::ValueId{-1};
}

/// A kernel body that copies input 0's bytes to output 0 (same dtype and shape): Y = X.
inline Status copy_kernel(ops::KernelContext& ctx) {
  std::memcpy(ctx.output(0).raw_data(), ctx.input(0).raw_data(), ctx.input(0).nbytes());
  return Status();
}

}  // namespace frame::test
