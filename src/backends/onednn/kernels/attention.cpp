// onednn kernel of attention_internal (src/ops/schemas/attention_internal.h): scaled dot-product
// attention that keeps the scores in tiles. Work items are (batch index, block of query rows);
// each computes its block's scores S = scale * Q_rows x KT (VecTable::gemm), adds the bias,
// applies the mask row by row, the softmax over the block's rows (VecTable::softmax_rows) and
// multiplies by V straight into the output (VecTable::gemm), all Highway loops on the item's
// thread. The scores never leave a per-thread buffer of rows x Sk floats, so the node's arena
// holds its output only, where the unfused chain held two [..., Sq, Sk] tensors
// (docs/backends/onednn.md#attention).

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "backends/onednn/kernels/ew_vec.h"
#include "core/aligned_memory.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/attention_internal.h"

namespace frame::backends::onednn {
namespace {

using ops::KernelContext;
using ops::NodeContext;
using namespace ops::attention;

// Query rows per work item: as many as keep one block's scores within kTileBytes (in L2 with
// the V panel it multiplies), between 8 and 64.
constexpr int64_t kTileBytes = int64_t{1} << 19;
// Work items a node is split into at least, where it has the query rows (8 per item at least).
constexpr int64_t kMinItems = 8;

struct AttentionState {
  AttentionSpec spec;
  BroadcastIndex bias, mask;
  BroadcastIndex q, kt, v, o;  // where Q, KT, V and O's elements are (the *_perm attributes)
  int64_t rows = 1;            // query rows per work item
  int64_t blocks = 1;          // work items per batch index
  const VecTable* vt = nullptr;
  VecBinaryFn add = nullptr;
  ops::ew::AddOp<float> add_functor{};
};

Result<std::shared_ptr<void>> attention_prepare(const NodeContext& node) {
  auto st = std::make_shared<AttentionState>();
  FRAME_ASSIGN_OR_RETURN(st->spec, decode_attention(node));
  const AttentionSpec& s = st->spec;
  if (s.has_bias) st->bias = broadcast_index(node.input_types[kBias].shape, s.scores);
  if (s.has_mask) st->mask = broadcast_index(node.input_types[kMask].shape, s.scores);
  st->q = strided_index(s.q_strides, s.scores);
  st->kt = strided_index(s.kt_strides, s.scores);
  st->v = strided_index(s.v_strides, s.scores);
  st->o = strided_index(s.o_strides, s.scores);
  const int64_t fit = kTileBytes / static_cast<int64_t>(sizeof(float) * std::max<int64_t>(s.sk, 1));
  st->rows = std::clamp<int64_t>(fit, 8, 256);
  // At least kMinItems items where the rows allow, so every thread gets one (an item runs on
  // one thread).
  const int64_t want_blocks =
      (kMinItems + std::max<int64_t>(s.batch, 1) - 1) / std::max<int64_t>(s.batch, 1);
  if (want_blocks > 1) {
    st->rows = std::clamp<int64_t>((s.sq + want_blocks - 1) / want_blocks, 8, st->rows);
  }
  st->blocks = (s.sq + st->rows - 1) / st->rows;
  st->vt = &vec_table();
  st->add = st->vt->binary[static_cast<size_t>(binary_index("add"))];
  if (st->vt->softmax_rows == nullptr || st->vt->gemm == nullptr || st->add == nullptr) {
    return node.error("no vector softmax or gemm loop on this target ({})", st->vt->target);
  }
  return std::shared_ptr<void>(std::move(st));
}

// A thread's score buffer, grown to the largest block it has held (no allocation per run once
// warm).
float* scores_buffer(size_t floats) {
  thread_local frame::detail::GrowBuffer buf;
  return buf.get_as<float>(floats);
}

// Numbers the kernel's calls, for KtPanel.
std::atomic<uint64_t> g_calls{0};

// A thread's KT panel (k_perm: K's rows copied into [D, Sk]), made once per (kernel call, batch
// index): a thread's work items are consecutive, so the row blocks of one batch index share it.
// The call number keeps a later call from reusing a panel when its K lands at the same address.
struct KtPanel {
  std::vector<float> buf;
  uint64_t call = 0;
  int64_t batch = -1;
};

// KT of batch index `b` as [D, Sk] rows Sk apart: `kt` (its elements kt[c * row + j * col])
// copied into this thread's panel unless the panel holds it already.
const float* kt_panel(const AttentionSpec& s, const float* kt, int64_t row, int64_t col,
                      uint64_t call, int64_t b) {
  thread_local KtPanel p;
  if (p.call == call && p.batch == b) return p.buf.data();
  const auto n = static_cast<size_t>(s.d * s.sk);
  if (p.buf.size() < n) p.buf.resize(n);
  for (int64_t j = 0; j < s.sk; ++j) {
    for (int64_t c = 0; c < s.d; ++c) {
      p.buf[static_cast<size_t>(c * s.sk + j)] = kt[c * row + j * col];
    }
  }
  p.call = call;
  p.batch = b;
  return p.buf.data();
}

// Work item `t`: batch index t / blocks, query rows [r0, r0 + rows) of it.
void run_item(const AttentionState& st, const KernelContext& ctx, int64_t t, uint64_t call) {
  const AttentionSpec& s = st.spec;
  const int64_t b = t / st.blocks, r0 = (t % st.blocks) * st.rows;
  const int64_t rows = std::min(st.rows, s.sq - r0);
  // Q, V and O rows lie row_stride apart (a head of an [S, B*H, D] tensor where the pattern took
  // a transpose in).
  const float* q = ctx.input(kQ).data<float>() + st.q.batch_offset[b] + r0 * st.q.row_stride;
  const float* kt = ctx.input(kKT).data<float>() + st.kt.batch_offset[b];
  size_t ldk = static_cast<size_t>(st.kt.row_stride);
  if (st.kt.col_stride != 1 && s.d > 0 && s.sk > 0) {
    // KT's columns are K's rows (k_perm): read from a [D, Sk] panel of them.
    kt = kt_panel(s, kt, st.kt.row_stride, st.kt.col_stride, call, b);
    ldk = static_cast<size_t>(s.sk);
  }
  const float* v = ctx.input(kV).data<float>() + st.v.batch_offset[b];
  float* o = ctx.outputs[0].data<float>() + st.o.batch_offset[b] + r0 * st.o.row_stride;
  float* sc = scores_buffer(static_cast<size_t>(rows * s.sk));
  const auto m = static_cast<size_t>(rows), sk = static_cast<size_t>(s.sk);
  const auto d = static_cast<size_t>(s.d), dv = static_cast<size_t>(s.dv);
  // Empty dot products (d = 0) give scores of 0.
  st.vt->gemm(m, sk, d, s.scale, q, static_cast<size_t>(st.q.row_stride), kt, ldk, sc, sk);
  const size_t n = sk;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = sc + r * s.sk;
    const int64_t i = r0 + r;
    if (s.has_bias) {
      const float* br =
          ctx.input(kBias).data<float>() + st.bias.batch_offset[b] + i * st.bias.row_stride;
      if (st.bias.col_stride == 1) {
        st.add(row, br, row, n, &st.add_functor);
      } else {
        for (size_t j = 0; j < n; ++j) row[j] += br[0];
      }
    }
    if (s.has_mask) {
      const uint8_t* mr =
          ctx.input(kMask).data<uint8_t>() + st.mask.batch_offset[b] + i * st.mask.row_stride;
      const int64_t cs = st.mask.col_stride;
      for (size_t j = 0; j < n; ++j) {
        if ((mr[static_cast<int64_t>(j) * cs] != 0) == s.fill_when) row[j] = s.mask_fill;
      }
    }
  }
  st.vt->softmax_rows(sc, sc, n, static_cast<size_t>(rows));
  st.vt->gemm(m, dv, sk, 1.0F, sc, sk, v, static_cast<size_t>(st.v.row_stride), o,
              static_cast<size_t>(st.o.row_stride));
}

Status attention_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const AttentionState*>(ctx.state);
  const int64_t items = st.spec.batch * st.blocks;
  const uint64_t call = g_calls.fetch_add(1, std::memory_order_relaxed) + 1;
  if (items == 0 || st.spec.dv == 0) return Status();  // an empty output
  if (st.spec.sk == 0) {
    // No keys: P is [..., Sq, 0], and P x V sums nothing (the unfused MatMul gives zeros).
    std::fill_n(ctx.output(0).data<float>(), ctx.output(0).numel(), 0.0F);  // any o_perm
    return Status();
  }
  // Items across threads.
  const int nt = static_cast<int>(std::min<int64_t>(ctx.num_threads, items));
  if (nt <= 1) {
    for (int64_t t = 0; t < items; ++t) run_item(st, ctx, t, call);
    return Status();
  }
#pragma omp parallel num_threads(nt)
  {
    const int id = omp_get_thread_num(), team = omp_get_num_threads();
    for (int64_t t = items * id / team; t < items * (id + 1) / team; ++t)
      run_item(st, ctx, t, call);
  }
  return Status();
}

FRAME_REGISTER_KERNEL(attention_internal, "onednn", attention_kernel)
    .dtypes(DTypeSet{DTypeCode::kFloat32})
    .prepare(attention_prepare);

}  // namespace
}  // namespace frame::backends::onednn
