#pragma once
/// \file
/// conv and matmul through oneDNN's OpenCL GPU engine on Intel GPUs (docs/backends/intel-gpu.md,
/// "What runs where on Intel and non-Intel devices"). Untested on real hardware (no Intel GPU
/// is reachable in CI), so the path is small and sits behind a device check: every other
/// device, and every node it does not cover, keeps our own kernels.

#include <memory>

#include "backends/intel_gpu/kernels/launch.h"
#include "frame/core/status.h"
#include "frame/ops/op_schema.h"

namespace frame::backends::intel_gpu {

/// Environment variable: "0" disables the oneDNN path (our own kernels on Intel GPUs too);
/// "force" tries it on any device (tests only: oneDNN declines non-Intel devices); unset or
/// anything else: on Intel GPUs only. Read at each prepare.
inline constexpr const char* kOnednnEnv = "FRAME_INTEL_GPU_ONEDNN";

/// The oneDNN primitive of a `conv` (f32, 2-D, bias, strides, pads, dilations, groups) or
/// `matmul` (f32, numpy batch broadcasting, 1-D operands) node, built once, as a Launch whose
/// `custom` hook executes it on the run's queue. Value nullptr: not applicable (the device is
/// not an Intel GPU, kOnednnEnv is "0", another op or dtype or rank, a build whose oneDNN has
/// no OpenCL GPU runtime). Error kUnimplemented: oneDNN declined (no GPU engine for the
/// device, no primitive for the node), naming oneDNN's message; other errors name the node.
Result<std::shared_ptr<Launch>> onednn_gpu_launch(const ops::NodeContext& ctx);

/// The prepare hook of the conv and matmul kernels: onednn_gpu_launch's Launch, or nullptr
/// when it is not applicable or oneDNN declined (the caller builds its own kernel).
std::shared_ptr<void> onednn_gpu_prepare(const ops::NodeContext& ctx);

}  // namespace frame::backends::intel_gpu
