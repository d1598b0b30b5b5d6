#pragma once
/// \file
/// A compiled elementwise program (docs/backends/onednn.md, "Compiled fused elementwise
/// kernels"): the body of a `fused_elementwise_internal` node, or a single elementwise node,
/// turned at prepare time into a straight-line list of steps over tiles of kTile output
/// elements. A step is one vector loop over the tile (ew_vec.h), or, for a body op without a
/// vector form or a non-fp32 value, that op's own cpu kernel run on the tile. Inputs are read
/// per tile without materializing their broadcast: same-shape in place, scalars splatted,
/// trailing-dim broadcasts (a bias) through a replicated row, anything else gathered with an
/// odometer. Tiles are split over OpenMP threads by a cost estimate.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_schema.h"

namespace frame::backends::onednn {

/// Output elements per tile: 512 fp32 = 2 KiB per live value, so a chain's intermediates stay
/// in L1/L2 while the inputs and output stream through once.
inline constexpr int64_t kTile = 512;
/// Highest output rank a program handles (the odometer's fixed-size index).
inline constexpr size_t kMaxProgramRank = 12;

struct Program;

/// Compiles the `body` graph of a fused_elementwise_internal node (`ctx`). Errors name the node
/// and the body node that cannot be evaluated tile by tile.
Result<std::shared_ptr<const Program>> compile_body(const ops::NodeContext& ctx);

/// Compiles one elementwise node (an op with a vector form, fp32) into a one-step program.
Result<std::shared_ptr<const Program>> compile_single(const ops::NodeContext& ctx);

/// Runs `p` over `out`'s positions. Inputs must have the shapes the program was compiled for.
Status run_program(const Program& p, const ops::KernelContext& ctx, Tensor& out);

}  // namespace frame::backends::onednn
