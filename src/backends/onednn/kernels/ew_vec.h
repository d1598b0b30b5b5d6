#pragma once
/// \file
/// Target-independent face of the vector forms of the elementwise ops (ew_vec-inl.h): loops
/// over contiguous fp32 arrays, one per op of FRAME_EW_UNARY_OPS / FRAME_EW_BINARY_OPS /
/// FRAME_EW_VARIADIC_OPS that has a vector form, plus clip, prelu, pow with a scalar exponent
/// and mean's final division. The
/// formulas live once, in the scalar functors of include/frame/ops/elementwise.h; a loop reads
/// the functor (and so its attributes) through `functor`, an `ew::F<float>` built at prepare.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frame/core/dtype.h"
#include "frame/ops/elementwise.h"

namespace frame::backends::onednn {

/// The dtypes the vector forms compute in (fp32).
inline constexpr DTypeSet kVecDTypes{DTypeCode::kFloat32};

/// y[i] = f(x[i]) for i < n; `functor` points at the op's `ew::F<float>`. x may equal y.
using VecUnaryFn = void (*)(const float* x, float* y, size_t n, const void* functor);
/// y[i] = f(a[i], b[i]) for i < n; a or b may equal y.
using VecBinaryFn = void (*)(const float* a, const float* b, float* y, size_t n,
                             const void* functor);

#define FRAME_EW_VEC_COUNT(name, F, types, traits, doc) +1
/// Number of ops in each list (table sizes).
inline constexpr size_t kNumUnaryOps = 0 FRAME_EW_UNARY_OPS(FRAME_EW_VEC_COUNT);
inline constexpr size_t kNumBinaryOps = 0 FRAME_EW_BINARY_OPS(FRAME_EW_VEC_COUNT);
inline constexpr size_t kNumVariadicOps = 0 FRAME_EW_VARIADIC_OPS(FRAME_EW_VEC_COUNT);
#undef FRAME_EW_VEC_COUNT

/// Argument of the mean-finish loop: the scalar functor and the input count it divides by.
struct MeanFinishArgs {
  ops::ew::MeanFinish<float> finish;
  int64_t count = 1;
};

/// Geometry of one depthwise conv plane (VecTable::dw_plane): input h x w, output oh x ow,
/// kernel kh x kw, strides, dilations (ONNX steps: 1 = dense) and leading pads.
struct DwPlane {
  int64_t h = 0, w = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
};

/// Geometry of a 2-d max or average pool over one image stored nhwc (VecTable::pool_nhwc_rows):
/// input h x w x c, output oh x ow x c, window kh x kw, strides, dilations (ONNX steps: 1 =
/// dense) and leading pads. An average divides by `divisor` where it is positive (ONNX
/// count_include_pad with explicit pads: every tap of the window counts), else by the taps
/// that lie inside the input. An image stored channel-blocked (nChw8c, nChw16c) is `groups`
/// channels-last planes of c channels each (c = the block), `x_group` / `y_group` elements
/// apart in x and y; nhwc is one group.
struct PoolNhwc {
  int64_t h = 0, w = 0, c = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  bool max = true;
  int64_t divisor = 0;
  int64_t groups = 1, x_group = 0, y_group = 0;
};

/// Geometry of a Winograd F(2x2, 3x3) conv over one image (conv_winograd.cpp; Lavin and Gray,
/// "Fast Algorithms for Convolutional Neural Networks", 2016): 3x3 taps, stride 1, no
/// dilation, one group. The output is cut into tiles of 2x2 pixels, `tw` per row of tiles,
/// numbered row by row: tile t reads the 4x4 input pixels at rows 2 * (t / tw) - pt + [0, 4)
/// and columns 2 * (t % tw) - pl + [0, 4), zeros outside [0, h) x [0, w) (the padding).
/// Channels come in groups of 8: channel 8 * q + e of input pixel p (p = row * w + column) is
/// at x_groups[q] + p * x_pixel + e * x_channel (x_channel 1 where they are contiguous, as in
/// nhwc, nChw8c and nChw16c; h * w in plain NCHW).
struct WinoTiles {
  int64_t h = 0, w = 0, pt = 0, pl = 0, tw = 0;
  int64_t c = 0;                      ///< input channels, a multiple of 8
  int64_t x_pixel = 0;                ///< floats between adjacent pixels of x
  int64_t x_channel = 1;              ///< floats between adjacent channels of a group
  const int64_t* x_groups = nullptr;  ///< c / 8 offsets, in floats
};

/// Argument of the pow loops: ONNX Pow with an fp32 scalar exponent (ew::PowOp<float, float>).
struct PowArgs {
  float e = 1.0f;
  int64_t ie = 1;  ///< e as an integer (pow_int only)
};

/// y[i] = x[i] converted between two floating dtypes (ONNX Cast; x and y are arrays of the
/// source and target dtypes' storage types, never aliased).
using VecConvertFn = void (*)(const void* x, void* y, size_t n);

/// out[i] = f(a[i], b[i]) as bool (one byte, 0 or 1) for the comparison ops.
using VecCompareFn = void (*)(const float* a, const float* b, uint8_t* out, size_t n);

/// Rows per panel of VecTable::panel_gemv (one AVX-512 vector of fp32).
inline constexpr size_t kPanelWidth = 16;

/// The vector loops of one Highway target, indexed like the X-macro lists; nullptr where an
/// op has no vector form (it then runs through its cpu kernel, see fused.cpp).
struct VecTable {
  std::array<VecUnaryFn, kNumUnaryOps> unary{};
  std::array<VecBinaryFn, kNumBinaryOps> binary{};
  /// The comparisons among the binary ops (fp32 in, bool out); nullptr for the others.
  std::array<VecCompareFn, kNumBinaryOps> compare{};
  /// The pairwise fold of each variadic op (sum/mean: add, max, min).
  std::array<VecBinaryFn, kNumVariadicOps> variadic{};
  /// ONNX Clip with scalar bounds; functor is ew::ClipOp<float>.
  VecUnaryFn clip = nullptr;
  /// ONNX PRelu x < 0 ? slope * x : x; functor is ew::PReluOp<float>.
  VecBinaryFn prelu = nullptr;
  /// Pow with a scalar exponent (functor PowArgs): integer exponents by repeated squaring,
  /// 0.5 by sqrt, any other by std::pow lane by lane (no per-element indirection).
  VecUnaryFn pow_int = nullptr;
  VecUnaryFn pow_half = nullptr;
  VecUnaryFn pow_any = nullptr;
  /// ONNX Where on a bool condition and fp32 values: out[i] = cond[i] ? x[i] : y[i].
  void (*where)(const uint8_t* cond, const float* x, const float* y, float* out,
                size_t n) = nullptr;
  /// y = softmax(x) over each of `rows` contiguous rows of n elements (y may be x: in place):
  /// e^(x - max) / sum, the row step of the attention kernel and of a first-seen shape's
  /// Softmax (a row whose max is -inf or NaN gives NaN, as ONNX Softmax's formula does). Rows
  /// are interleaved a few at a time (short rows are latency-bound); each row's result is the
  /// same as if it ran alone.
  void (*softmax_rows)(const float* x, float* y, size_t n, size_t rows) = nullptr;
  /// ONNX LayerNormalization (stash_type 1) of one row of n floats (y may be x): y = (x - mean)
  /// / sqrt(var + eps) * gamma + beta (beta may be null), gamma and beta dense rows of n; the
  /// row loop of a first-seen shape's layer_normalization (norm.cpp), where a oneDNN primitive
  /// would be JIT code for one size.
  void (*layer_norm_row)(const float* x, float* y, size_t n, float eps, const float* gamma,
                         const float* beta) = nullptr;
  /// One plane of a depthwise conv (conv_agnostic.cpp): y[r][o] = bias + sum over taps (i, j)
  /// of w[i * kw + j] * x[r * sh - ph + i * dh][o * sw - pw + j * dw], taps outside x
  /// read as the zeros of the padding (w * 0 is added, as the cpu kernel does). Strides 1 and
  /// 2 run as plain vector loads, others gathered. Thread-safe (a per-thread copy of the
  /// padded plane).
  void (*dw_plane)(const float* x, const float* w, float bias, float* y,
                   const DwPlane& g) = nullptr;
  /// Output rows [r0, r1) of a 2-d pool of one nhwc or channel-blocked image (PoolNhwc;
  /// pool.cpp): each output pixel's channels (c per group, every group) are the max (or the
  /// mean) over the window's taps inside x, a vector of channels at a time; taps in the
  /// padding are skipped. oneDNN 2.6's nhwc pooling on AVX2
  /// transposes to a blocked layout and back around its kernel (ResNet-18's stem max pool 1.1
  /// ms per run on a 2-core AVX2 EPYC).
  void (*pool_nhwc_rows)(const float* x, float* y, const PoolNhwc& g, int64_t r0,
                         int64_t r1) = nullptr;
  /// Matrix-vector product over panels (the recurrence of recurrent.cpp's LSTM): for
  /// p < npanels and r < kPanelWidth, y[p * kPanelWidth + r] += sum over i < k of
  /// panels[(p * k + i) * kPanelWidth + r] * x[i]. A panel holds kPanelWidth rows of a matrix
  /// transposed, so a step reads each weight once, in order, as whole vectors.
  void (*panel_gemv)(const float* panels, size_t npanels, size_t k, const float* x,
                     float* y) = nullptr;
  /// c[i][j] = alpha * sum over p < k of a[i][p] * b[p][j] for i < m, j < n: fp32, row-major,
  /// rows lda / ldb / ldc floats apart, c overwritten (not read), k = 0 gives zeros. One
  /// thread; the products of each c[i][j] are summed in order of p, then scaled. For the
  /// small products of a first-seen shape (attention's scores and output, an interpreted
  /// matmul over constant weights), where dnnl_sgemm's first call in a process JITs its whole
  /// kernel set (25-80 ms here) and a primitive per size would JIT too.
  void (*gemm)(size_t m, size_t n, size_t k, float alpha, const float* a, size_t lda,
               const float* b, size_t ldb, float* c, size_t ldc) = nullptr;
  /// gemm with B packed by gemm_pack: strips of gemm_strip columns (the last padded with
  /// zeros), each k rows of gemm_strip contiguous floats. Constant weights packed once: each
  /// strip is read in order, where a strip of row-major B strides a page per row at large N.
  void (*gemm_packed)(size_t m, size_t n, size_t k, float alpha, const float* a, size_t lda,
                      const float* panels, float* c, size_t ldc) = nullptr;
  /// Packs row-major b [k, n] (rows ldb floats apart) for gemm_packed into `panels`
  /// (ceil(n / gemm_strip) * k * gemm_strip floats).
  void (*gemm_pack)(const float* b, size_t ldb, size_t k, size_t n, float* panels) = nullptr;
  /// Columns per strip of gemm and gemm_packed (two vectors of this target).
  size_t gemm_strip = 0;
  /// ONNX Cast between float32 and float16 / bfloat16, indexed [from][to] by DTypeCode:
  /// rounding to nearest even, NaN stays NaN, float16 overflow to infinity and subnormals as
  /// IEEE 754 (the same results as Half / BFloat16 in frame/core/dtype.h, which the cpu cast
  /// kernel uses). float16 entries only on targets with F16C (AVX2, AVX-512); nullptr
  /// elsewhere and for every other pair (the cast then runs its cpu kernel).
  std::array<std::array<VecConvertFn, kNumDTypes>, kNumDTypes> convert{};
  /// Mean's final step y = x / count; functor is MeanFinishArgs.
  VecUnaryFn mean_finish = nullptr;
  /// dst[i] = src[i] with non-temporal stores (outputs too large to stay in cache).
  void (*stream_copy)(const float* src, float* dst, size_t n) = nullptr;
  /// Store fence after a thread's last stream_copy.
  void (*stream_fence)() = nullptr;
  /// dst[o] = src[2 * o] for o < n (every second element: a stride-2 conv's im2col), reading
  /// src[0, 2n - 1) only.
  void (*even_copy)(const float* src, float* dst, size_t n) = nullptr;
  /// dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols (strides in
  /// elements): a 2-D transpose of 4-byte elements, moved bit for bit (any 4-byte dtype). One
  /// thread; src and dst do not overlap.
  void (*transpose32)(const void* src, size_t src_stride, void* dst, size_t dst_stride, size_t rows,
                      size_t cols) = nullptr;
  /// Winograd F(2x2, 3x3) input transform (WinoTiles) of tiles [t0, t0 + count) of one image:
  /// V = B^T d B for each tile's 4x4 pixels d and each channel, written as 16 matrices
  /// [count][c], matrix k = 4 * row + column of V at v + k * plane (plane >= count * c).
  void (*wino23_input)(const float* x, const WinoTiles& g, int64_t t0, int64_t count, float* v,
                       size_t plane) = nullptr;
  /// Winograd F(2x2, 3x3) output transform: for tile i < count and channel j < m (m a multiple
  /// of 8), Y = A^T M A of the 4x4 products mm[k * plane + i * m + j] (k = 4 * row + column),
  /// plus bias[j] (bias may be null), written as out[(4 * i + 2 * r + s) * m + j] for the
  /// tile's output pixel (r, s).
  void (*wino23_output)(const float* mm, size_t plane, int64_t m, int64_t count, const float* bias,
                        float* out) = nullptr;
  /// Name of the Highway target these loops were compiled for (e.g. "AVX2").
  const char* target = "";
};

/// Loops of the best target this CPU supports (FRAME_HWY_DISPATCH, hwy_targets.h; call at
/// prepare).
const VecTable& vec_table();

/// Index of `op` in FRAME_EW_UNARY_OPS / _BINARY_OPS / _VARIADIC_OPS, or -1.
int unary_index(std::string_view op);
int binary_index(std::string_view op);
int variadic_index(std::string_view op);

/// True when `op` (an elementwise list op, clip, prelu, pow or where) has a vector form. Known at
/// compile time (the VecOf specializations of ew_vec-inl.h); same answer on every target.
bool has_vec_form(std::string_view op);

}  // namespace frame::backends::onednn
