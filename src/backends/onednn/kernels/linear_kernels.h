#pragma once
/// \file
/// Prepared oneDNN conv / conv_transpose / matmul / gemm primitives, shared by their own
/// kernels (conv.cpp, matmul.cpp) and by the fused_post_ops_internal kernel, which builds the
/// same primitive with oneDNN post-ops attached.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "backends/onednn/kernels/ew_vec.h"
#include "frame/core/status.h"
#include "frame/ops/elementwise.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::backends::onednn {

/// Prepared, read-only state of one node: primitive(s), reordered constant weights. `run` is
/// re-entrant (per-thread buffers, per-thread stream).
class LinearPrimitive {
 public:
  virtual ~LinearPrimitive() = default;
  /// Runs the node: inputs/outputs as in the frame op (residual R at input 3 when fused).
  virtual Status run(ops::KernelContext& ctx) const = 0;
  /// Layout reorders one run performs (ops::ReordersFn): activations to and from the
  /// primitive's layout, and weights given at run time. 0 unless a subclass reorders.
  virtual int reorders_per_run() const { return 0; }
  /// oneDNN's name of the implementation the primitive runs (primitive_desc::impl_info_str(),
  /// e.g. "brgconv:avx512_core"), for tests and reports; empty where no oneDNN primitive runs.
  virtual std::string_view implementation() const { return {}; }
  /// Whether this state, prepared for an earlier run of the node, serves node `ctx` exactly as
  /// a state prepared for `ctx` would (ops::ReuseStateFn): false unless a subclass knows.
  virtual bool serves(const ops::NodeContext& /*ctx*/) const { return false; }
};

/// Memory order of the activations of a conv (fused_post_ops_internal's src_layout,
/// dst_layout, residual_layout); plain for every other node.
struct ConvLayouts {
  ops::fused::ActivationLayout src = ops::fused::ActivationLayout::kPlain;
  ops::fused::ActivationLayout dst = ops::fused::ActivationLayout::kPlain;
  ops::fused::ActivationLayout residual = ops::fused::ActivationLayout::kPlain;
};

/// Builds the conv (or, with `transpose`, conv_transpose) primitive of `ctx` with `post`
/// attached, its activations stored as `layouts` says (an nhwc / nChw16c side is handed to
/// oneDNN with that explicit tag, so no reorder runs for it). With `reorder_weights` false only the
/// primitive descriptor is created (the accepts() check). Errors: kUnimplemented when oneDNN
/// cannot run the node (dtype, rank, geometry), or has no fast (not reference, not gemm)
/// implementation for the explicit layouts, naming why.
Result<std::shared_ptr<LinearPrimitive>> make_conv(const ops::NodeContext& ctx, bool transpose,
                                                   std::span<const ops::fused::PostOp> post,
                                                   bool reorder_weights,
                                                   const ConvLayouts& layouts = {});

/// One post-op of a fused_post_ops_internal chain run by frame's own loops instead of oneDNN's
/// post-ops (a first-seen shape's matmul and gemm, MatmulPrimitive::run_own, and its conv,
/// make_shape_agnostic_conv): an activation as its VecTable loop with that loop's functor, which
/// computes what the op's cpu kernel computes (the same ops::ew functor), or the residual add
/// (kAdd: `unary` null; the caller adds R, whose layout it knows).
struct OwnPostOp {
  ops::fused::PostOpKind kind = ops::fused::PostOpKind::kAdd;
  VecUnaryFn unary = nullptr;
  std::variant<std::monostate, ops::ew::ReluOp<float>, ops::ew::LeakyReluOp<float>,
               ops::ew::ClipOp<float>, ops::ew::SigmoidOp<float>, ops::ew::TanhOp<float>,
               ops::ew::EluOp<float>, ops::ew::HardSwishOp<float>, ops::ew::GeluOp<float>,
               ops::ew::HardSigmoidOp<float>>
      functor;
  /// The functor's address, as `unary` takes it (null for kAdd).
  const void* arg() const {
    return std::visit(
        [](const auto& f) -> const void* {
          if constexpr (std::is_same_v<std::decay_t<decltype(f)>, std::monostate>) {
            return nullptr;
          } else {
            return &f;
          }
        },
        functor);
  }
};

/// `post` (ops::fused::PostOp, parameters as PostOpKind documents them) as own loops of the
/// running target (vec_table()), in order; nullopt where a post-op has none (kSwish, which
/// reads x twice, or a target without the loop).
std::optional<std::vector<OwnPostOp>> own_post_ops(std::span<const ops::fused::PostOp> post);

/// Applies `chain` in order to y[0, n) in place; a kAdd adds r[0, n) (the residual's elements
/// at y's positions; `add` is the running target's add loop). Not for a broadcast residual.
void apply_own_post_ops(std::span<const OwnPostOp> chain, VecBinaryFn add, float* y, const float* r,
                        size_t n);

/// What make_shape_agnostic_conv is asked for: a conv prepared for one run (the interpreted
/// tier), or, in a compiled plan, a conv that computes only the taps reading the input where
/// some read only padding at these sizes (kSkipsPaddingTaps; conv.cpp asks where oneDNN's
/// choice is its im2col gemm).
enum class AgnosticConvUse : uint8_t { kOneRun, kSkipsPaddingTaps };

/// The conv of `ctx` prepared for one run of a first-seen shape (NodeContext::run_once, ADR
/// 0007) without a oneDNN convolution primitive (conv_agnostic.cpp): 1x1 convs as matrix
/// products over the NCHW tensors, depthwise convs as direct loops, others through im2col;
/// f32, plain NCHW in and out, 1-d and 2-d, any group, stride, dilation and padding (ONNX
/// Conv). `post` (a fused_post_ops_internal node's chain, whose residual R at input 3 has the
/// output's shape) runs on each plane or group of output channels as soon as it is computed
/// (own_post_ops). With `build` false (the accepts() check) the state is not complete: no
/// weights are copied and it must not run. Errors: kUnimplemented where it does not apply (no
/// run_once, other ranks, inconsistent groups, a post-op without an own loop, a residual of
/// another shape), resolve_window's errors for bad attributes. With `use` kSkipsPaddingTaps,
/// also without run_once, but only for constant weights, not depthwise, and where some tap
/// reads only padding or the taps' rectangles cover well under the im2col columns (else
/// kUnimplemented).
Result<std::shared_ptr<LinearPrimitive>> make_shape_agnostic_conv(
    const ops::NodeContext& ctx, bool build = true, std::span<const ops::fused::PostOp> post = {},
    AgnosticConvUse use = AgnosticConvUse::kOneRun);

/// The conv of `ctx` (a compiled plan's plain f32 conv, `post` its fused chain) as the
/// shape-agnostic conv that computes only the taps reading the input, where oneDNN's choice
/// for it is its im2col gemm (which multiplies every tap's columns, padding included) and some
/// taps read only padding at these sizes or cover little of the output: DeepLabV3's ASPP convs
/// (3x3, dilation 12 to 36 over a 16x16 map) on AVX2, where oneDNN has no direct dilated conv.
/// `build` as make_shape_agnostic_conv. Errors: kUnimplemented where it does not apply
/// (run_once, oneDNN's other implementations, make_shape_agnostic_conv's kSkipsPaddingTaps
/// refusals), make_conv's errors.
Result<std::shared_ptr<LinearPrimitive>> padding_taps_conv(const ops::NodeContext& ctx,
                                                           std::span<const ops::fused::PostOp> post,
                                                           bool build);

/// Input and output channels a conv needs at least for make_winograd_conv.
inline constexpr int64_t kWinogradMinChannels = 32;

/// Whether the own Winograd conv may be used: true unless FRAME_WINOGRAD=0 in the environment
/// (read once).
bool winograd_conv_enabled();

/// The conv of `ctx` (a compiled plan's conv with `post` its fused chain, activations laid out
/// as `layouts` says) as the backend's own Winograd F(2x2, 3x3) conv (conv_winograd.cpp): f32,
/// 2-d, 3x3, stride 1, no dilation, one group, constant weights, at least
/// kWinogradMinChannels input and output channels, each a multiple of 8, X, Y and a residual R
/// plain NCHW or laid out (nhwc, nChw8c, nChw16c; for a plain `conv` node `layouts` is all
/// plain); every post-op with an own loop (own_post_ops). The
/// weights are transformed once per model (pack_weights_own, "wino23"). With `build` false
/// only the checks run. Errors: kUnimplemented naming what does not apply; resolve_window's
/// errors for bad attributes.
Result<std::shared_ptr<LinearPrimitive>> make_winograd_conv(
    const ops::NodeContext& ctx, std::span<const ops::fused::PostOp> post,
    const ConvLayouts& layouts, bool build);

/// The layout oneDNN picks for the output of conv node `ctx` (a `conv`, or a
/// fused_post_ops_internal with base_op "conv", built with its post-ops and `any` layouts):
/// kNhwc, kNChw8c or kNChw16c, else kPlain (other layouts, other ops). Errors: as make_conv.
Result<ops::fused::ActivationLayout> preferred_conv_layout(const ops::NodeContext& ctx);

/// Builds the matmul (`gemm` false) or gemm primitive of `ctx` with `post` attached; as
/// make_conv otherwise.
Result<std::shared_ptr<LinearPrimitive>> make_matmul(const ops::NodeContext& ctx, bool gemm,
                                                     std::span<const ops::fused::PostOp> post,
                                                     bool reorder_weights);

/// Counters of a process-wide descriptor cache (pd_cache.h), for tests and reports:
/// descriptors created (oneDNN primitive descriptors; each new one is a cache miss), lookups
/// served by a held one, and entries held now.
struct PdCacheStats {
  uint64_t created = 0;
  uint64_t hits = 0;
  size_t entries = 0;
};
using MatmulCacheStats = PdCacheStats;
/// A snapshot of the matmul (and gemm) descriptor cache's counters. Thread-safe.
PdCacheStats matmul_cache_stats();
/// A snapshot of the convolution and deconvolution descriptor caches' counters, summed.
/// Thread-safe.
PdCacheStats conv_cache_stats();

/// Kernel function of every LinearPrimitive-based kernel: runs the prepared state.
Status run_linear(ops::KernelContext& ctx);

/// ops::ReordersFn of the LinearPrimitive kernels: the state's reorders_per_run().
int linear_reorders(const void* state);

/// ops::ReuseStateFn of the kernels run by run_linear: the state's LinearPrimitive::serves.
bool linear_reuse_state(const ops::NodeContext& ctx, const void* state);

/// accepts() of a LinearPrimitive kernel whose state `kMake(ctx, kArg, build)` creates: only
/// the primitive descriptor is built (`build` false). Errors: kMake's (kUnimplemented where
/// oneDNN cannot run the node).
template <auto kMake, const auto& kArg>
Status accepts_linear(const ops::NodeContext& ctx) {
  return kMake(ctx, kArg, false).status();
}

/// prepare() of the same kernel: the built state, run by run_linear. Errors: kMake's.
template <auto kMake, const auto& kArg>
Result<std::shared_ptr<void>> prepare_linear(const ops::NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<LinearPrimitive> p, kMake(ctx, kArg, true));
  return std::shared_ptr<void>(std::move(p));
}

/// The dtypes of the int8 kernels' quantized operands (u8 or s8).
inline constexpr DTypeSet kQ8DTypes{DTypeCode::kInt8, DTypeCode::kUInt8};

}  // namespace frame::backends::onednn
