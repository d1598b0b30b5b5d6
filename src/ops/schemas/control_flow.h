#pragma once
// Shared by the control-flow schemas (control_flow.cpp), their cpu kernels and the ONNX
// importer: attribute names and the split of a node's inputs into formal inputs and values
// captured from the enclosing scope (docs/architecture/ir-design.md "Subgraph attributes").

#include <cstdint>

namespace frame::ops::cf {

/// Most outputs an if/loop/scan node may have (declared as optional outputs, like split).
inline constexpr int kMaxOutputs = 64;
/// Number of trailing node inputs that are values captured from the enclosing scope; each
/// body lists them, in the same order, after its formal inputs.
inline constexpr const char* kNumCaptured = "num_captured";
/// A loop trip count that means "no bound" (ONNX Loop with the M input omitted).
inline constexpr int64_t kNoTripCount = INT64_MAX;

}  // namespace frame::ops::cf
