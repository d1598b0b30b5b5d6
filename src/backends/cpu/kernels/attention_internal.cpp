// cpu reference kernel of attention_internal (src/ops/schemas/attention_internal.h), the
// fallback for a node the onednn pattern created (ARCH-041): each score row is computed whole,
// in float, in the order the unfused MatMul, Mul, Add, Where and Softmax cpu kernels use.

#include "ops/schemas/attention_internal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "frame/ops/kernel_registry.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;
using namespace ops::attention;

struct AttentionState {
  AttentionSpec spec;
  BroadcastIndex bias, mask;
  BroadcastIndex q, kt, v, o;  // where Q, KT, V and O's elements are (the *_perm attributes)
};

Result<std::shared_ptr<void>> prepare_attention(const ops::NodeContext& ctx) {
  auto st = std::make_shared<AttentionState>();
  FRAME_ASSIGN_OR_RETURN(st->spec, decode_attention(ctx));
  if (st->spec.has_bias) {
    st->bias = broadcast_index(ctx.input_types[kBias].shape, st->spec.scores);
  }
  if (st->spec.has_mask) {
    st->mask = broadcast_index(ctx.input_types[kMask].shape, st->spec.scores);
  }
  st->q = strided_index(st->spec.q_strides, st->spec.scores);
  st->kt = strided_index(st->spec.kt_strides, st->spec.scores);
  st->v = strided_index(st->spec.v_strides, st->spec.scores);
  st->o = strided_index(st->spec.o_strides, st->spec.scores);
  return std::shared_ptr<void>(std::move(st));
}

Status attention_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const AttentionState*>(ctx.state);
  const AttentionSpec& s = st.spec;
  const float* q = ctx.input(kQ).data<float>();
  const float* kt = ctx.input(kKT).data<float>();
  const float* v = ctx.input(kV).data<float>();
  const float* bias = s.has_bias ? ctx.input(kBias).data<float>() : nullptr;
  const auto* mask = s.has_mask ? ctx.input(kMask).data<uint8_t>() : nullptr;
  float* o = ctx.output(0).data<float>();
  std::vector<float> row(static_cast<size_t>(s.sk));
  for (int64_t b = 0; b < s.batch; ++b) {
    const float* qb = q + st.q.batch_offset[b];
    const float* kb = kt + st.kt.batch_offset[b];
    const float* vb = v + st.v.batch_offset[b];
    for (int64_t i = 0; i < s.sq; ++i) {
      for (int64_t j = 0; j < s.sk; ++j) {
        float acc = 0.0F;
        for (int64_t k = 0; k < s.d; ++k) {
          acc += qb[i * st.q.row_stride + k] * kb[k * st.kt.row_stride + j * st.kt.col_stride];
        }
        row[j] = acc * s.scale;
      }
      if (bias != nullptr) {
        const float* br = bias + st.bias.batch_offset[b] + i * st.bias.row_stride;
        for (int64_t j = 0; j < s.sk; ++j) row[j] += br[j * st.bias.col_stride];
      }
      if (mask != nullptr) {
        const uint8_t* mr = mask + st.mask.batch_offset[b] + i * st.mask.row_stride;
        for (int64_t j = 0; j < s.sk; ++j) {
          if ((mr[j * st.mask.col_stride] != 0) == s.fill_when) row[j] = s.mask_fill;
        }
      }
      float mx = -std::numeric_limits<float>::infinity();
      for (float x : row) mx = std::max(mx, x);
      float sum = 0.0F;
      for (float& x : row) {
        x = std::exp(x - mx);
        sum += x;
      }
      float* ob = o + st.o.batch_offset[b] + i * st.o.row_stride;
      std::fill_n(ob, s.dv, 0.0F);
      for (int64_t j = 0; j < s.sk; ++j) {
        const float p = row[j] / sum;
        for (int64_t c = 0; c < s.dv; ++c) ob[c] += p * vb[j * st.v.row_stride + c];
      }
    }
  }
  return Status();
}

FRAME_REGISTER_KERNEL(attention_internal, "cpu", attention_kernel)
    .dtypes(DTypeSet{DTypeCode::kFloat32})
    .prepare(prepare_attention);

}  // namespace
}  // namespace frame::cpu
