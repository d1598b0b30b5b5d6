// onednn kernels of matmul (ONNX MatMul opset 13, numpy semantics: 1-D operands promoted,
// batch dims broadcast) and gemm (ONNX Gemm opset 13: transA/transB as strided operands, alpha
// as the output scale, beta * C as a broadcast binary-add post-op): one oneDNN matmul
// primitive built in prepare, with constant B reordered once into the layout it prefers.
// docs/backends/onednn.md#convolution-matmul-and-gemm.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/ew_vec.h"
#include "backends/onednn/kernels/linear_kernels.h"
#include "backends/onednn/kernels/pd_cache.h"
#include "backends/onednn/kernels/primitive_util.h"
#include "frame/ops/lowering_pattern.h"
#include "frame/ops/parallel.h"

namespace frame::backends::onednn {
namespace {

using dnnl::memory;
using ops::KernelContext;
using ops::NodeContext;

// Bytes of constant B from which a one-row product takes the gemv instead of packing B for the
// own loops (16 MiB: ResNet-50's 2048 x 1000 classifier, 8 MB, keeps the own loops).
constexpr int64_t kOwnPackMaxOneRowBytes = int64_t{16} << 20;

// A compiled matmul on a gemm-based oneDNN (make_matmul) keeps oneDNN's product for fewer rows
// than kOwnMinRowsLargeB over more than kOwnLargeBBytes of constant B (8 MiB), unless its N
// exceeds a K above kOwnLargeBMinK.
constexpr int64_t kOwnMinRowsLargeB = 128;
constexpr int64_t kOwnLargeBBytes = int64_t{8} << 20;
constexpr int64_t kOwnLargeBMinK = 256;
// Rows per block of the own loops (four gemm tiles: a block's output stays in cache from its
// product through its post-ops), and the packed B (bytes) past which a thread's rows take one
// product call before their post-ops (MatmulPrimitive::run_own_share): the L2 of a core here.
constexpr int64_t kOwnRows = 24;
constexpr int64_t kOwnStreamBBytes = int64_t{1} << 20;

class MatmulPrimitive final : public LinearPrimitive {
 public:
  dnnl::primitive prim;
  memory::desc a_md, b_user, b_md, c_md, y_md, res_md, scratch_md;
  std::shared_ptr<const PackedWeights> b_packed;  // constant B in b_md's layout, or null
  int c_post = -1;                                // post-op index of gemm's C add, or -1
  int residual_post = -1;                         // post-op index of the residual add, or -1
  // One row over constant B (make_matmul): y = relu?(alpha * a op(B) + beta * C) by
  // dnnl_sgemm, B read as stored ([K, N], or [N, K] for gemm's transB).
  bool gemv = false, tb = false, relu = false;
  int64_t k = 0, n = 0, c_numel = 0;
  float alpha = 1.0F, beta = 1.0F;

  Status run_gemv(KernelContext& ctx) const {
    float* y = ctx.output(0).data<float>();
    if (dnnl_sgemm('N', tb ? 'T' : 'N', 1, n, k, alpha, ctx.input(0).data<float>(), k,
                   ctx.input(1).data<float>(), tb ? k : n, 0.0F, y, n) != dnnl_success) {
      return ctx.node->error("dnnl_sgemm failed ({} x {})", k, n);
    }
    if (c_numel > 0) {
      const float* c = ctx.input(2).data<float>();
      for (int64_t j = 0; j < n; ++j) y[j] += beta * c[c_numel == 1 ? 0 : j];
    }
    if (relu) {
      // ONNX Relu keeps NaN (max(x, 0) of the cpu kernel); oneDNN's eltwise_relu post-op of
      // the primitive path gives 0.
      for (int64_t j = 0; j < n; ++j) y[j] = y[j] < 0.0F ? 0.0F : y[j];
    }
    return Status();
  }

  // Own loops (own_matmul, a node prepared for a first-seen shape): y = alpha * A B (+ C) by
  // VecTable::gemm_packed over blocks of rows, then the post-ops on each block while it is in
  // cache. B (constant) packed once into gemm_packed's strips (b_own), transposed for transB.
  bool own = false;
  const VecTable* vt = nullptr;
  VecBinaryFn add = nullptr;  // vt's add loop
  std::shared_ptr<const OwnPackedWeights> b_own;
  std::vector<OwnPostOp> own_post;  // own_post_ops
  ops::ew::AddOp<float> add_functor{};

  // Rows [i0, i1) of the output: the product, C, then the post-ops in order.
  void run_own_rows(KernelContext& ctx, int64_t i0, int64_t i1) const {
    const auto rows = static_cast<size_t>(i1 - i0), kk = static_cast<size_t>(k),
               nn = static_cast<size_t>(n);
    float* y = ctx.output(0).data<float>() + i0 * n;
    vt->gemm_packed(rows, nn, kk, alpha, ctx.input(0).data<float>() + i0 * k, kk, b_own->data(), y,
                    nn);
    finish_rows(ctx, i0, i1);
  }

  // Rows [i0, i1) of the computed product in the output: C (one value, a row of N or the
  // output's shape), then the post-ops in order.
  void finish_rows(KernelContext& ctx, int64_t i0, int64_t i1) const {
    const auto rows = static_cast<size_t>(i1 - i0), nn = static_cast<size_t>(n);
    float* y = ctx.output(0).data<float>() + i0 * n;
    if (c_numel > n) {
      add(y, ctx.input(2).data<float>() + i0 * n, y, rows * nn, &add_functor);
    } else if (c_numel > 0) {
      const float* c = ctx.input(2).data<float>();
      for (size_t r = 0; r < rows; ++r) {
        float* yr = y + r * nn;
        if (c_numel == 1) {
          for (size_t j = 0; j < nn; ++j) yr[j] += c[0];
        } else {
          add(yr, c, yr, nn, &add_functor);
        }
      }
    }
    for (const OwnPostOp& o : own_post) {
      if (o.kind != ops::fused::PostOpKind::kAdd) {
        o.unary(y, y, rows * nn, o.arg());
        continue;
      }
      const Tensor& res = ctx.input(ops::fused::kResidualInput);
      const float* r = res.data<float>();
      if (res.numel() == n) {  // a row, broadcast along the rows
        for (size_t i = 0; i < rows; ++i) add(y + i * nn, r, y + i * nn, nn, &add_functor);
      } else {
        add(y, r + i0 * n, y, rows * nn, &add_functor);
      }
    }
  }

  Status run_own(KernelContext& ctx) const {
    const int64_t m = ctx.output(0).numel() / n;
    // Blocks of kOwnRows rows, one thread each; one thread below kOwnSerialMacs multiply-adds.
    constexpr int64_t kOwnSerialMacs = int64_t{1} << 16;
    const int64_t blocks = (m + kOwnRows - 1) / kOwnRows;
    const int threads = m * n * k < kOwnSerialMacs ? 1 : ctx.num_threads;
    const auto strip = static_cast<int64_t>(vt->gemm_strip);
    const int64_t strips = (n + strip - 1) / strip;
    // Few row blocks for the threads (an MLP's 64 rows: three blocks over two threads) and
    // many strips of B: each thread its own range of strips (columns) over every row, so the
    // threads share the work evenly and each reads only its part of B; C and the post-ops
    // then run by row blocks.
    if (threads > 1 && blocks < 4 * threads && strips >= 4 * threads) {
      const float* a = ctx.input(0).data<float>();
      float* y = ctx.output(0).data<float>();
      ops::parallel_ranges(strips, threads, [&](int64_t s0, int64_t s1) {
        const int64_t j0 = s0 * strip, j1 = std::min(n, s1 * strip);
        vt->gemm_packed(static_cast<size_t>(m), static_cast<size_t>(j1 - j0),
                        static_cast<size_t>(k), alpha, a, static_cast<size_t>(k),
                        b_own->data() + s0 * k * strip, y + j0, static_cast<size_t>(n));
      });
      if (c_numel > 0 || !own_post.empty()) {
        ops::parallel_for(blocks, threads, [&](int64_t t) {
          finish_rows(ctx, t * kOwnRows, std::min(m, (t + 1) * kOwnRows));
        });
      }
      return Status();
    }
    if (threads <= 1) {
      run_own_share(ctx, 0, m);
      return Status();
    }
    // Each thread an equal share of the rows, in whole tiles of the product (kTileRows): ViT-S's
    // 197 rows in blocks of 24 had gone 5 blocks (120 rows) to one thread and 4 (77) to the
    // other.
    constexpr int64_t kTileRows = 6;  // VecTable::gemm's rows per tile (kGemmRows)
    ops::parallel_ranges((m + kTileRows - 1) / kTileRows, threads, [&](int64_t t0, int64_t t1) {
      run_own_share(ctx, t0 * kTileRows, std::min(m, t1 * kTileRows));
    });
    return Status();
  }

  // Rows [i0, i1) of the output on one thread. Where packed B is past kOwnStreamBBytes, the
  // product of the whole share in one VecTable::gemm_packed call (B read once per 96 rows, its
  // row blocks), then C and the post-ops by blocks of kOwnRows; else by blocks of kOwnRows
  // rows, each product finished while in cache. Blocks of 24 rows had streamed BERT-base's
  // 9 MiB feed-forward weights from memory six times per product at 128 rows: its
  // [128, 3072] x [3072, 768] 10.5 -> 7.5 ms in the model (1 thread, 2-core AVX2 EPYC).
  void run_own_share(KernelContext& ctx, int64_t i0, int64_t i1) const {
    const auto strip = static_cast<int64_t>(vt->gemm_strip);
    const int64_t b_bytes =
        (n + strip - 1) / strip * strip * k * static_cast<int64_t>(sizeof(float));
    if (b_bytes > kOwnStreamBBytes) {
      vt->gemm_packed(static_cast<size_t>(i1 - i0), static_cast<size_t>(n), static_cast<size_t>(k),
                      alpha, ctx.input(0).data<float>() + i0 * k, static_cast<size_t>(k),
                      b_own->data(), ctx.output(0).data<float>() + i0 * n, static_cast<size_t>(n));
      for (int64_t i = i0; i < i1; i += kOwnRows) finish_rows(ctx, i, std::min(i1, i + kOwnRows));
      return;
    }
    for (int64_t i = i0; i < i1; i += kOwnRows) run_own_rows(ctx, i, std::min(i1, i + kOwnRows));
  }

  std::string_view implementation() const override { return own ? "frame:gemm" : ""; }

  // What the own loops were chosen for besides K, N, alpha, C and the post-ops (make_matmul):
  // A's rank, B (constant: its storage and shape), C's shape, whether a residual is read.
  size_t a_rank = 0;
  Shape b_shape, c_shape;
  const void* b_data = nullptr;
  bool c_present = false, res_present = false;

  // The own loops depend on the row count M only through the output's size, read per run
  // (run_own), so they serve the same node at another M: A of the same rank with K columns
  // and no empty dim, the same constant B (its storage and shape) and C, and a residual of N
  // or M x N elements (own_matmul's rule). Not one row over large weights (make_matmul gives
  // that the gemv instead), nor a primitive (built for its sizes).
  bool serves(const NodeContext& ctx) const override {
    // dtypes are the node's at every key (an in-place re-typing changes shapes only).
    if (!own || ctx.input_types.size() < 2) return false;
    const Shape& as = ctx.input_types[0].shape;
    if (as.size() != a_rank || as.empty() || as.back() != k) return false;
    for (int64_t d : as) {
      if (d <= 0) return false;
    }
    const Tensor* b = ctx.constant_input(1);
    if (b == nullptr || b->raw_data() != b_data || b->shape() != b_shape) return false;
    if (as.size() == 2 && as[0] == 1 &&
        numel_of(b_shape) * static_cast<int64_t>(sizeof(float)) >= kOwnPackMaxOneRowBytes) {
      return false;
    }
    if (ctx.has_input(2) != c_present || (c_present && ctx.input_types[2].shape != c_shape)) {
      return false;
    }
    const size_t ri = ops::fused::kResidualInput;
    if (ctx.has_input(ri) != res_present) return false;
    if (res_present) {
      const int64_t r = numel_of(ctx.input_types[ri].shape);
      if (r != n && r != numel_of(as) / k * n) return false;
    }
    return true;
  }

  // The primitive computes alpha * A B alone and frame's own loops add C and apply the
  // post-ops (own_post, finish_rows) on blocks of rows afterwards: where oneDNN's matmul is its
  // gemm-based one (AVX2), which applies binary and eltwise post-ops in a slow pass of its own
  // (make_matmul, post_after_fits).
  bool post_after = false;

  Status run_post_after(KernelContext& ctx) const {
    const int64_t m = ctx.output(0).numel() / n;
    constexpr int64_t kRows = 16;
    const int64_t blocks = (m + kRows - 1) / kRows;
    ops::parallel_for(blocks, m * n >= (int64_t{1} << 15) ? ctx.num_threads : 1, [&](int64_t t) {
      finish_rows(ctx, t * kRows, std::min(m, (t + 1) * kRows));
    });
    return Status();
  }

  Status run(KernelContext& ctx) const override {
    const NodeContext& node = *ctx.node;
    if (own) return run_own(ctx);
    if (gemv) return run_gemv(ctx);
    try {
      const memory a = wrap(a_md, ctx.input(0));
      const memory b = b_packed != nullptr ? b_packed->mem : wrap(b_user, ctx.input(1));
      const memory y = wrap(y_md, ctx.output(0));
      const memory c = c_post >= 0 ? wrap(c_md, ctx.input(2)) : memory();
      const memory res =
          residual_post >= 0 ? wrap(res_md, ctx.input(ops::fused::kResidualInput)) : memory();
      const memory scratch = scratchpad(scratch_md);
      const ExecArg args[] = {
          {DNNL_ARG_SRC, &a},
          {DNNL_ARG_WEIGHTS, &b},
          {DNNL_ARG_DST, &y},
          {DNNL_ARG_SCRATCHPAD, &scratch},
          {DNNL_ARG_ATTR_MULTIPLE_POST_OP(c_post) | DNNL_ARG_SRC_1, c_post >= 0 ? &c : nullptr},
          {DNNL_ARG_ATTR_MULTIPLE_POST_OP(residual_post) | DNNL_ARG_SRC_1,
           residual_post >= 0 ? &res : nullptr},
      };
      FRAME_RETURN_IF_ERROR(execute(node, prim, args));
    } catch (const dnnl::error& e) {
      return dnnl_failure(node, "matmul", e);
    }
    return post_after ? run_post_after(ctx) : Status();
  }
};

// Matmul descriptors and primitives by operand descriptors, scales, post-ops and thread
// count (pd_cache.h). With runtime M (a node compiled with NodeContext::prefer_shape_agnostic)
// one entry serves every row count.
struct MatmulEntry {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;       // empty until a prepare() needs it
  int c_post = -1;         // post-op index of gemm's C add, or -1
  int residual_post = -1;  // post-op index of the residual add, or -1
};
using MatmulCache = PdCache<MatmulEntry>;

}  // namespace

namespace {

// VecTable::gemm_pack's strips of B = src^T for transB (src [n, k] row-major) without a
// transposed copy: within a strip, blocks of 64 rows of B (64 columns of src) are filled one
// source row after another, so a block's writes stay in L1 (64 lines of one strip each) while
// every source row is read in order; the padding columns of the last strip are zeros.
void pack_transposed(const float* src, int64_t n, int64_t k, int64_t strip, float* out) {
  constexpr int64_t kBlock = 64;
  for (int64_t j = 0; j < n; j += strip) {
    const int64_t w = std::min(strip, n - j);
    float* panel = out + (j / strip) * k * strip;
    for (int64_t p0 = 0; p0 < k; p0 += kBlock) {
      const int64_t p1 = std::min(k, p0 + kBlock);
      for (int64_t c = 0; c < w; ++c) {
        const float* row = src + (j + c) * k;
        for (int64_t p = p0; p < p1; ++p) panel[p * strip + c] = row[p];
      }
      for (int64_t p = p0; p < p1 && w < strip; ++p) {
        std::fill(panel + p * strip + w, panel + (p + 1) * strip, 0.0F);
      }
    }
  }
}

// Sets `p` up for its own loops (MatmulPrimitive::run_own): y [M, N] = alpha * A [M, K] B [K, N]
// (+ C: one value or a row of N) then `post`; B is `b` ([N, K] where `tb`, transposed once),
// packed only where `pack` (make_matmul's reorder_weights: a state that will run). False,
// leaving `p` to the primitive, where a post-op or C has no own form.
bool own_matmul(MatmulPrimitive& p, const NodeContext& ctx,
                std::span<const ops::fused::PostOp> post, bool tb, const Tensor& b, int64_t k,
                int64_t n, bool use_c, float alpha, bool pack) {
  using ops::fused::PostOpKind;
  const VecTable& vt = vec_table();
  const int add = binary_index("add");
  if (vt.gemm_packed == nullptr || vt.gemm_strip == 0 || add < 0 ||
      vt.binary[static_cast<size_t>(add)] == nullptr || k <= 0 || n <= 0) {
    return false;
  }
  const int64_t c_numel = use_c ? numel_of(ctx.input_types[2].shape) : 0;
  // C as one value or a row of N ([N], [1, N]); a column [M, 1] may have N elements too (M = N)
  // and is not a row.
  if (use_c && c_numel != 1 && (c_numel != n || ctx.input_types[2].shape.back() != n)) {
    return false;
  }
  std::optional<std::vector<OwnPostOp>> chain = own_post_ops(post);
  if (!chain) return false;
  for (const OwnPostOp& o : *chain) {
    if (o.kind != PostOpKind::kAdd) continue;
    // The residual as a row of N (broadcast along the rows) or of the output's shape.
    const int64_t r = numel_of(ctx.input_types[ops::fused::kResidualInput].shape);
    if (r != n && r != numel_of(ctx.input_types[0].shape) / k * n) return false;
  }
  // B in VecTable::gemm_packed's strips, once per weights (shared while a state holds them).
  // Not where the caller only asks whether the node runs (accepts, or a lowering pattern's
  // onednn_runs, whose primitive is dropped): packing there was a copy of every weight matrix
  // of the model that nothing kept (BERT-base: 340 MB of fresh pages per compile).
  const auto strip = static_cast<int64_t>(vt.gemm_strip);
  const int64_t strips = (n + strip - 1) / strip;
  if (pack) {
    p.b_own = pack_weights_own(b, fmt::format("gemm_panels {} {} {} {}", strip, k, n, tb),
                               static_cast<size_t>(strips * k * strip), [&](float* out) {
                                 const float* src = b.data<float>();
                                 if (!tb)
                                   return vt.gemm_pack(src, static_cast<size_t>(n),
                                                       static_cast<size_t>(k),
                                                       static_cast<size_t>(n), out);
                                 pack_transposed(src, n, k, strip, out);
                               });
  }
  p.own = true;
  p.vt = &vt;
  p.add = vt.binary[static_cast<size_t>(add)];
  p.own_post = std::move(*chain);
  p.k = k;
  p.n = n;
  p.c_numel = c_numel;
  p.alpha = alpha;
  return true;
}

}  // namespace

PdCacheStats matmul_cache_stats() { return MatmulCache::global().stats(); }

namespace {

// Sets `p` up to finish a bare product with its own loops (MatmulPrimitive::post_after): C (one
// value, a row of N or the output's shape, beta 1) and `post` as own_post_ops, whose residual
// is a row of N or the output's shape. False, leaving the post-ops to oneDNN, where one has no
// own form.
bool post_after_fits(MatmulPrimitive& p, const NodeContext& ctx,
                     std::span<const ops::fused::PostOp> post, bool use_c, double beta, int64_t n) {
  const VecTable& vt = vec_table();
  const int add = binary_index("add");
  if (add < 0 || vt.binary[static_cast<size_t>(add)] == nullptr || n <= 0) return false;
  int64_t y_numel = 1;
  for (int64_t d : p.y_md.dims()) y_numel *= d;
  int64_t c_numel = 0;
  if (use_c) {
    const Shape& cs = ctx.input_types[2].shape;
    c_numel = numel_of(cs);
    const bool row = c_numel == n && !cs.empty() && cs.back() == n;
    if (beta != 1.0 || (c_numel != 1 && !row && c_numel != y_numel)) return false;
  }
  std::optional<std::vector<OwnPostOp>> chain = own_post_ops(post);
  if (!chain) return false;
  for (const OwnPostOp& o : *chain) {
    if (o.kind != ops::fused::PostOpKind::kAdd) continue;
    const Shape& rs = ctx.input_types[ops::fused::kResidualInput].shape;
    const int64_t r = numel_of(rs);
    if (r != y_numel && (r != n || rs.empty() || rs.back() != n)) return false;
  }
  p.vt = &vt;
  p.add = vt.binary[static_cast<size_t>(add)];
  p.own_post = std::move(*chain);
  p.n = n;
  p.c_numel = c_numel;
  return true;
}

}  // namespace

Result<std::shared_ptr<LinearPrimitive>> make_matmul(const NodeContext& ctx, bool gemm,
                                                     std::span<const ops::fused::PostOp> post,
                                                     bool reorder_weights) {
  const ir::TensorType& at = ctx.input_types[0];
  // The kernels register f32 only (KernelDef::dtypes), so supports() has checked it.
  const memory::data_type dt = memory::data_type::f32;
  Shape as = at.shape, bs = ctx.input_types[1].shape;
  for (const Shape* s : {&as, &bs}) {
    for (int64_t d : *s) {
      if (d == 0) return unimplemented("an empty operand {}", shape_to_string(*s));
    }
  }
  auto p = std::make_shared<MatmulPrimitive>();
  // A node prepared for a first-seen shape (NodeContext::prefer_shape_agnostic: a Session's
  // interpreted tier and first-seen compile) over a constant [K, N] B with a 2-D A (after
  // folding A's batch dims into M): own loops (MatmulPrimitive::run_own) instead of a
  // primitive, decided from the shapes before any descriptor is built. oneDNN would run
  // runtime M on its gemm, whose first call in a process JITs every gemm kernel (25-80 ms
  // here), and it took 1.4x (2.5x for a [128, 64] x [64, 64] gemm) the time of the own loops at
  // a BERT-style encoder's sizes. A recurring shape's compile keeps the static primitive.
  // One row over large weights (a classifier's batch-1 Gemm) skips them for the one-row gemv
  // below, which reads B as stored: the own loops' strips are a copy of B that only more rows
  // pay for (VGG-11's 102 M classifier weights: 411 MB more memory and about half a second of
  // each first compile in fresh pages and the copy).
  const bool one_row_large =
      as.size() == 2 && as[0] == 1 &&
      numel_of(bs) * static_cast<int64_t>(sizeof(float)) >= kOwnPackMaxOneRowBytes;
  // The own loops over constant B where the shapes fit them (a 2-D A after folding batch dims
  // into M, gemm without transA and with C of beta 1), their state in `p`.
  const auto try_own = [&]() {
    const Tensor* w = ctx.constant_input(1);
    if (w == nullptr || one_row_large) return false;
    bool fits = false, tb = false, use_c = false;
    int64_t k = 0, n = 0;
    double alpha = 1.0;
    if (!gemm) {
      const MatmulDims md = matmul_dims(as, bs);
      fits = md.a.size() == 2 && md.b.size() == 2;
      k = md.a.back();
      n = md.y.back();
    } else {
      tb = ctx.attr_or<int64_t>("transB", 0) != 0;
      const double b = ctx.attr_or<double>("beta", 1.0);
      use_c = ctx.has_input(2) && b != 0.0;
      fits = ctx.attr_or<int64_t>("transA", 0) == 0 && as.size() == 2 && bs.size() == 2 &&
             (!use_c || b == 1.0);
      k = as.back();
      n = tb ? bs.front() : bs.back();
      alpha = ctx.attr_or<double>("alpha", 1.0);
    }
    if (!fits || !own_matmul(*p, ctx, post, tb, *w, k, n, use_c, static_cast<float>(alpha),
                             reorder_weights)) {
      return false;
    }
    p->a_rank = as.size();
    p->b_shape = bs;
    p->b_data = w->raw_data();
    p->c_present = ctx.has_input(2);
    if (p->c_present) p->c_shape = ctx.input_types[2].shape;
    p->res_present = ctx.has_input(ops::fused::kResidualInput);
    return true;
  };
  if (ctx.prefer_shape_agnostic && try_own()) return std::shared_ptr<LinearPrimitive>(p);
  memory::desc b_user, a_md, y_md;
  bool ta = false;
  double scale = 1.0, beta = 1.0;
  bool use_c = false;
  if (!gemm) {
    const MatmulDims md = matmul_dims(as, bs);
    a_md = plain_desc(md.a, dt);
    b_user = plain_desc(md.b, dt);
    y_md = plain_desc(md.y, dt);
  } else {
    ta = ctx.attr_or<int64_t>("transA", 0) != 0;
    const bool tb = ctx.attr_or<int64_t>("transB", 0) != 0;
    const int64_t m = ta ? as[1] : as[0], k = ta ? as[0] : as[1], n = tb ? bs[0] : bs[1];
    // op(A) and op(B) read through strides: no transposed copy.
    a_md = memory::desc({m, k}, dt, ta ? memory::dims{1, m} : memory::dims{k, 1});
    b_user = memory::desc({k, n}, dt, tb ? memory::dims{1, k} : memory::dims{n, 1});
    y_md = plain_desc(std::vector<int64_t>{m, n}, dt);
    const double alpha = ctx.attr_or<double>("alpha", 1.0);
    beta = ctx.attr_or<double>("beta", 1.0);
    use_c = ctx.has_input(2) && beta != 0.0;
    // The 1/beta factor below would overflow f32 (inf, then inf * beta) for a tiny beta.
    if (use_c && std::abs(beta) < 0x1p-20) {
      return unimplemented("gemm with |beta| {} below 2^-20 (alpha / beta overflows)", beta);
    }
    // y = alpha*AB + beta*C as beta * ((alpha/beta)*AB + C) when beta != 1: output scales act
    // on the accumulator before the post-ops.
    scale = use_c ? alpha / beta : alpha;
    if (use_c) p->c_md = plain_desc(padded(ctx.input_types[2].shape, 2), dt);
  }
  p->a_md = a_md;
  p->b_user = b_user;
  p->y_md = y_md;
  // R (the residual add's operand): the output's shape, or a row broadcast along its rows (a
  // bias of the last dim, ops::fused::broadcasts_along_rows), given as y's rank with leading 1s.
  p->res_md = y_md;
  if (ctx.has_input(ops::fused::kResidualInput)) {
    const Shape& rs = ctx.input_types[ops::fused::kResidualInput].shape;
    int64_t y_numel = 1;
    for (memory::dim d : y_md.dims()) y_numel *= d;
    if (numel_of(rs) != y_numel) {
      // A row (decode_fused checked it): [1, ..., 1, N] at y_md's rank, which folds batch dims
      // into M where it can (matmul_dims), so R's own rank may be larger.
      memory::dims row(y_md.dims().size(), 1);
      row.back() = rs.back();
      p->res_md = plain_desc(row, dt);
    }
  }
  const Tensor* bc = ctx.constant_input(1);
  const bool residual = std::any_of(post.begin(), post.end(), [](const ops::fused::PostOp& o) {
    return o.kind == ops::fused::PostOpKind::kAdd;
  });
  // Runtime M (ADR 0007): a 2-D A over constant weights, read row by row, gets a primitive
  // built for any row count, so a new sequence length or batch re-uses it (no JIT). oneDNN
  // 2.6 takes runtime dims only on its gemm-based matmul and not in a binary post-op operand,
  // hence not with a residual add or a C that has M rows (a bias row is fine).
  const bool residual_row = residual && p->res_md.dims().size() == 2 && p->res_md.dims()[0] == 1;
  const bool runtime_m = ctx.prefer_shape_agnostic && bc != nullptr && a_md.dims().size() == 2 &&
                         !ta && (!residual || residual_row) && (!use_c || p->c_md.dims()[0] == 1);
  // Two activations (attention's Q x K^T and P x V): every dim at run time, where no batch
  // dim broadcasts (runtime dims must agree between the operands).
  const bool runtime_all = ctx.prefer_shape_agnostic && !gemm && bc == nullptr && !residual &&
                           a_md.dims().size() >= 3 && a_md.dims().size() <= 5 && [&] {
                             const memory::dims ad = a_md.dims(), bd = b_user.dims();
                             return std::equal(ad.begin(), ad.end() - 2, bd.begin());
                           }();
  // One row of A over a constant B (a classifier's batch-1 Gemm, + bias, + relu): a
  // matrix-vector product bound by reading B once. dnnl_sgemm streams B as stored (6.95 ms for
  // AlexNet's [1, 9216] x [9216, 4096] on one thread here) where the matmul primitive over
  // packed B took 10.97 ms (and 10.4 ms over plain B).
  const bool relu_only = std::all_of(post.begin(), post.end(), [](const ops::fused::PostOp& o) {
    return o.kind == ops::fused::PostOpKind::kRelu;
  });
  const int64_t n_out = y_md.dims().back();
  const int64_t c_numel = use_c ? numel_of(ctx.input_types[2].shape) : 0;
  if (bc != nullptr && a_md.dims().size() == 2 && a_md.dims()[0] == 1 && !ta && !residual &&
      relu_only && (!use_c || c_numel == 1 || c_numel == n_out)) {
    p->gemv = true;
    p->k = a_md.dims()[1];
    p->n = n_out;
    p->tb = gemm && ctx.attr_or<int64_t>("transB", 0) != 0;
    p->alpha = static_cast<float>(gemm ? ctx.attr_or<double>("alpha", 1.0) : 1.0);
    p->beta = static_cast<float>(beta);
    p->c_numel = c_numel;
    p->relu = !post.empty();
    return std::shared_ptr<LinearPrimitive>(p);
  }
  // Asked by the interpreted tier's fuse_post_ops (ops::OneRunLoweringScope): fused only where
  // the primitive has runtime dims. Otherwise it would be JIT code for this size, where the plain
  // matmul and its post-op nodes share one primitive across sizes (a residual add of M rows
  // rules runtime M out). A node fused already (a compile's) is still prepared.
  if (ops::OneRunLoweringScope::active() && ctx.run_once && !post.empty() && !runtime_m &&
      !runtime_all) {
    return unimplemented("a fused matmul prepared for one run without runtime dims");
  }
  memory::desc a_pd = a_md, b_rt = b_user, y_pd = y_md;
  if (runtime_m) {
    const memory::dim k = a_md.dims()[1], n = y_md.dims()[1];
    a_pd = memory::desc({DNNL_RUNTIME_DIM_VAL, k}, dt, memory::dims{k, 1});
    y_pd = memory::desc({DNNL_RUNTIME_DIM_VAL, n}, dt, memory::dims{n, 1});
  } else if (runtime_all) {
    const size_t rank = a_md.dims().size();
    const memory::dims any_dims(rank, DNNL_RUNTIME_DIM_VAL);
    const memory::format_tag tag = rank == 3   ? memory::format_tag::abc
                                   : rank == 4 ? memory::format_tag::abcd
                                               : memory::format_tag::abcde;
    a_pd = memory::desc(any_dims, dt, tag);
    b_rt = memory::desc(any_dims, dt, tag);
    y_pd = memory::desc(any_dims, dt, tag);
  }
  // A constant B lets oneDNN pick its layout (packed once, pack_weights); runtime M runs on
  // the gemm-based implementation, which reads B as it is.
  const memory::desc b_pd =
      bc != nullptr && !runtime_m ? memory::desc(b_user.dims(), dt, memory::format_tag::any) : b_rt;
  // The descriptor (cached) with `post` and C as oneDNN post-ops, or (`bare`) of alpha * A B
  // alone, for frame's own loops to finish (MatmulPrimitive::post_after).
  const auto entry_for = [&](bool bare) -> Result<MatmulEntry> {
    const double e_scale = bare ? (gemm ? ctx.attr_or<double>("alpha", 1.0) : 1.0) : scale;
    const bool e_c = use_c && !bare, e_residual = residual && !bare;
    const std::span<const ops::fused::PostOp> e_post =
        bare ? std::span<const ops::fused::PostOp>() : post;
    std::string key;
    key.reserve(512);
    append_desc_key(key, a_pd);
    append_desc_key(key, b_pd);
    append_desc_key(key, y_pd);
    key_append(key, omp_get_max_threads());
    key_append(key, e_scale);
    key_append(key, beta);
    key_append(key, e_c);
    if (e_c) append_desc_key(key, p->c_md);
    key_append(key, e_residual);
    if (e_residual) append_desc_key(key, p->res_md);
    for (const ops::fused::PostOp& o : e_post) {
      key_append(key, static_cast<int>(o.kind));
      key_append(key, o.alpha);
      key_append(key, o.beta);
    }
    try {
      return MatmulCache::global().get(
          key, reorder_weights,
          [&] {
            MatmulEntry made;
            dnnl::primitive_attr attr = default_attr();
            dnnl::post_ops pops;
            if (e_scale != 1.0) attr.set_output_scales(0, {static_cast<float>(e_scale)});
            if (e_c) {
              made.c_post = pops.len();
              pops.append_binary(dnnl::algorithm::binary_add, p->c_md);
              if (beta != 1.0) {
                pops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, static_cast<float>(beta),
                                    0.f);
              }
            }
            // Inside the try: oneDNN throws on post-ops it rejects (e.g. a clip with min > max).
            made.residual_post = append_post_ops(pops, e_post, &p->res_md);
            if (pops.len() > 0) attr.set_post_ops(pops);
            made.pd =
                dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_pd, b_pd, y_pd), attr, engine());
            return made;
          },
          [](MatmulEntry& m) { m.prim = dnnl::matmul(m.pd); });
    } catch (const dnnl::error& e) {
      return dnnl_declines("matmul", e);
    }
  };
  FRAME_ASSIGN_OR_RETURN(MatmulEntry e, entry_for(false));
  // oneDNN 2.6's only f32 matmul on AVX2 is its gemm-based one: there the own loops over packed
  // B (VecTable::gemm_packed, 6 x 16 tiles) run constant-B products faster (one thread, 2-core
  // AVX2 EPYC: a GPT-2 block's [128, 512] x [512, 2048] 5.84 -> about 3.0 ms, the block 15.4 ->
  // 10.4 ms; an MLP 784-512-512-10 at batch 64 1.34 -> 0.94 ms), and apply post-ops as own loops
  // (oneDNN's gemm-based post-op pass is slow; see post_after below). With AVX-512 oneDNN runs
  // its brgemm matmul, which stays.
  // Except few rows over large weights (a language model's [64, 256] x [256, 10000] output
  // layer: B streamed from memory, little work per byte), where oneDNN's sgemm was faster in the
  // model (GRU LM 7.0 against 5.9 ms per run), though not with B in cache.
  const bool gemm_impl =
      std::string_view(e.pd.impl_info_str()).find("gemm") != std::string_view::npos;
  const int64_t m_rows = numel_of(as) / std::max<int64_t>(as.back(), 1);
  // Not where the output is wider than a K past one of the own loops' K blocks: oneDNN's
  // matmul took 6.2 ms for ConvNeXt-T's last-stage [49, 768] x [768, 3072] (its [49, 3072] x
  // [3072, 768] 3.0), the own loops 3.6 with the GELU after (3.35 for the other shape):
  // ConvNeXt-T 131-132 -> 127 ms at 1 thread, 75-76 -> 71-73 at 2, the GRU LM's [64, 256] x
  // [256, 10000] head keeping oneDNN.
  const int64_t k_in = a_md.dims().back();  // a_md is [..., M, K] (transA in its strides)
  const bool wide_deep = n_out > k_in && k_in > kOwnLargeBMinK;
  const bool streams_b = m_rows < kOwnMinRowsLargeB && !wide_deep &&
                         numel_of(bs) * static_cast<int64_t>(sizeof(float)) > kOwnLargeBBytes;
  if (gemm_impl && !streams_b && !runtime_m && !runtime_all && try_own()) {
    return std::shared_ptr<LinearPrimitive>(p);
  }
  // oneDNN 2.6's gemm-based matmul (its only f32 matmul on AVX2) applies binary and eltwise
  // post-ops in a slow pass after the product: a GPT-2 block's [128, 512] x [512, 2048] with
  // its bias add and tanh-GELU took 7.0 ms where the bare product took 4.3 (2-core AVX2 EPYC,
  // 1 thread). There the primitive computes the bare product and frame's own loops finish it.
  if (!runtime_m && !runtime_all && (!post.empty() || use_c) && gemm_impl &&
      post_after_fits(*p, ctx, post, use_c, beta, n_out)) {
    FRAME_ASSIGN_OR_RETURN(e, entry_for(true));
    p->post_after = true;
  }
  p->c_post = e.c_post;
  p->residual_post = e.residual_post;
  p->scratch_md = e.pd.scratchpad_desc();
  p->b_md = e.pd.weights_desc();
  if (!reorder_weights) return std::shared_ptr<LinearPrimitive>(p);
  p->prim = e.prim;
  if (bc != nullptr) {
    // Constant B: packed once per process and layout, shared by every specialization.
    FRAME_ASSIGN_OR_RETURN(p->b_packed, pack_weights(ctx, b_user, p->b_md, *bc));
  }
  return std::shared_ptr<LinearPrimitive>(p);
}

namespace {

template <bool kGemm>
Status accepts_matmul(const NodeContext& ctx) {
  // Where prepare follows at once (NodeContext::accepted_state), the state it would build:
  // with weights reordered, so prepare can take it as it is.
  const bool keep = ctx.accepted_state != nullptr;
  Result<std::shared_ptr<LinearPrimitive>> p = make_matmul(ctx, kGemm, {}, keep);
  if (keep && p.is_ok()) *ctx.accepted_state = std::shared_ptr<void>(std::move(*p));
  return p.status();
}

template <bool kGemm>
Result<std::shared_ptr<void>> prepare_matmul(const NodeContext& ctx) {
  if (ctx.accepted_state != nullptr && *ctx.accepted_state != nullptr) {
    return std::exchange(*ctx.accepted_state, nullptr);
  }
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<LinearPrimitive> p, make_matmul(ctx, kGemm, {}, true));
  return std::shared_ptr<void>(std::move(p));
}

FRAME_REGISTER_KERNEL(matmul, "onednn", run_linear)
    .dtypes(DTypeSet{DTypeCode::kFloat32})
    .accepts(accepts_matmul<false>)
    .prepare(prepare_matmul<false>)
    .reuse_state(linear_reuse_state);

FRAME_REGISTER_KERNEL(gemm, "onednn", run_linear)
    .dtypes(DTypeSet{DTypeCode::kFloat32})
    .accepts(accepts_matmul<true>)
    .prepare(prepare_matmul<true>)
    .reuse_state(linear_reuse_state);

}  // namespace
}  // namespace frame::backends::onednn
