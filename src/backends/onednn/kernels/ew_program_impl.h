#pragma once
/// \file
/// Internals of compiled elementwise programs (ew_program.h), shared by their compiler
/// (ew_program.cpp) and their runner (ew_program_run.cpp). Not part of any public interface.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/onednn/kernels/ew_program.h"
#include "backends/onednn/kernels/ew_vec.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_schema.h"

namespace frame::backends::onednn {

namespace program_detail {

/// Widest element a scratch slot holds (cpu-kernel steps on f64/i64 tiles).
inline constexpr size_t kMaxElemBytes = 8;
/// Bytes per scratch slot; slots are spaced by a non-multiple of 4 KiB so a step reading one slot
/// and writing another at the same offset does not hit 4K aliasing.
inline constexpr size_t kSlotBytes = static_cast<size_t>(kTile) * kMaxElemBytes + 320;
/// Work units (about one cheap vector op on one element) below which a program runs on the
/// calling thread, and per extra thread: a thread's share must outweigh its wake-up.
inline constexpr double kGrainUnits = 1 << 16;
/// fp32 outputs from this size on are written with non-temporal stores (half the 32 MiB L3 of
/// the machines we measure on): they cannot stay cached for the next node anyway, and streaming
/// saves the read-for-ownership of every output line.
inline constexpr int64_t kStreamBytes = int64_t{16} << 20;

/// What a step runs: a vector loop of one kind, a dtype conversion (Cast), a same-index copy,
/// or the op's cpu kernel.
enum class StepKind : uint8_t {
  kUnary,
  kBinary,
  kCompare,
  kClip,
  kPow,
  kWhere,
  kConvert,
  kCopy,
  kGeneric
};

/// One step of a program: reads up to three values (or `inputs` for a cpu-kernel step), writes
/// `out`, over one tile.
struct Step {
  StepKind kind = StepKind::kCopy;
  VecUnaryFn unary = nullptr;
  VecBinaryFn binary = nullptr;
  VecCompareFn compare = nullptr;
  VecConvertFn convert = nullptr;
  std::shared_ptr<void> functor;  // ew::F<float> or MeanFinishArgs, read by the loop
  std::array<int32_t, 3> in{-1, -1, -1};
  int32_t out = -1;
  // kGeneric: the op's cpu kernel on tile views.
  const ops::KernelDef* kernel = nullptr;
  ops::NodeContext ctx;
  std::shared_ptr<void> state;
  std::vector<int32_t> inputs;
};

/// How a program input is read per tile: in place, splatted scalar, replicated/wrapped row
/// (broadcast along leading dims), each element repeated over trailing dims (a per-channel
/// operand of an NCHW tensor), or gathered by an odometer.
enum class InMode : uint8_t { kSame, kScalar, kPeriodic, kRepeat, kGather };

/// How one program input is read for a tile, decided at prepare.
struct InputPlan {
  InMode mode = InMode::kSame;
  DTypeCode dtype = DTypeCode::kFloat32;
  size_t elem = 4;
  int64_t numel = 1;
  int64_t period = 1;            // kPeriodic: input index = output index mod period
  int64_t inner = 1;             // kRepeat: input index = (output index / inner) mod numel
  std::vector<int64_t> strides;  // kGather: per output dim (0 = broadcast)
  size_t buf_offset = 0;         // scratch bytes for its tile buffer (not kSame)
  size_t buf_bytes = 0;
};

}  // namespace program_detail

/// A compiled program: steps, value dtypes and scratch slots, input plans, scratch layout.
/// Read-only after compilation (shared by concurrent runs).
struct Program {
  std::shared_ptr<const ir::Graph> body;  // keeps the generic steps' borrowed attrs alive
  std::vector<program_detail::Step> steps;
  std::vector<DTypeCode> dtype;  // per program value
  std::vector<int32_t> slot;     // per value: scratch slot, or -1 (input / output)
  size_t num_inputs = 0;
  int32_t output = -1;
  Shape out_shape;
  int64_t total = 0;
  std::vector<program_detail::InputPlan> inputs;
  size_t slots_offset = 0;  // scratch layout: input buffers, then slots
  size_t scratch_bytes = 0;
  double cost_per_elem = 0;
  // Last step writes a scratch slot, then stream_copy moves the tile to the output.
  void (*stream_copy)(const float*, float*, size_t) = nullptr;
  const VecTable* table = nullptr;  // the target chosen at prepare (pow picks a loop per tile)
};

}  // namespace frame::backends::onednn
