// Helpers of the onednn primitive kernels (see primitive_util.h).

#include "backends/onednn/kernels/primitive_util.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <string>

#include "core/packed_constants.h"

namespace frame::backends::onednn {

int append_post_ops(dnnl::post_ops& ops, std::span<const ops::fused::PostOp> post,
                    const dnnl::memory::desc* residual) {
  using dnnl::algorithm;
  using ops::fused::PostOpKind;
  int add_index = -1;
  for (const ops::fused::PostOp& p : post) {
    const auto a = static_cast<float>(p.alpha), b = static_cast<float>(p.beta);
    switch (p.kind) {
      case PostOpKind::kAdd:
        add_index = ops.len();
        if (residual != nullptr) {
          ops.append_binary(algorithm::binary_add, *residual);
        } else {
          ops.append_sum(1.f);
        }
        break;
      case PostOpKind::kRelu:
        ops.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
        break;
      case PostOpKind::kLeakyRelu:
        ops.append_eltwise(1.f, algorithm::eltwise_relu, a, 0.f);
        break;
      case PostOpKind::kClip:
        ops.append_eltwise(1.f, algorithm::eltwise_clip, a, b);
        break;
      case PostOpKind::kSigmoid:
        ops.append_eltwise(1.f, algorithm::eltwise_logistic, 0.f, 0.f);
        break;
      case PostOpKind::kTanh:
        ops.append_eltwise(1.f, algorithm::eltwise_tanh, 0.f, 0.f);
        break;
      case PostOpKind::kElu:
        ops.append_eltwise(1.f, algorithm::eltwise_elu, a, 0.f);
        break;
      case PostOpKind::kHardSwish:
        // x * clip(x / 6 + 0.5, 0, 1); releases that read alpha/beta take the ONNX ones.
        ops.append_eltwise(1.f, algorithm::eltwise_hardswish, 1.f / 6.f, 0.5f);
        break;
      case PostOpKind::kGelu:
        ops.append_eltwise(1.f, algorithm::eltwise_gelu_erf, 0.f, 0.f);
        break;
      case PostOpKind::kGeluTanh:
        ops.append_eltwise(1.f, algorithm::eltwise_gelu_tanh, 0.f, 0.f);
        break;
      case PostOpKind::kHardSigmoid:
        // clip(alpha * x + beta, 0, 1): oneDNN 2.6 has no eltwise_hardsigmoid.
        ops.append_eltwise(1.f, algorithm::eltwise_linear, a, b);
        ops.append_eltwise(1.f, algorithm::eltwise_clip, 0.f, 1.f);
        break;
      case PostOpKind::kSwish:
        ops.append_eltwise(1.f, algorithm::eltwise_swish, 1.f, 0.f);
        break;
    }
  }
  return add_index;
}

Reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  Reorder r;
  if (from == to) return r;
  dnnl::reorder::primitive_desc pd(engine(), from, engine(), to, default_attr());
  r.prim = dnnl::reorder(pd);
  r.scratch = pd.scratchpad_desc();
  r.active = true;
  return r;
}

Status run_reorder(const ops::NodeContext& node, const Reorder& r, const dnnl::memory& from,
                   const dnnl::memory& to) {
  const dnnl::memory scratch = scratchpad(r.scratch);
  const ExecArg args[] = {
      {DNNL_ARG_FROM, &from}, {DNNL_ARG_TO, &to}, {DNNL_ARG_SCRATCHPAD, &scratch}};
  return execute(node, r.prim, args);
}

Result<dnnl::memory> in_layout(const ops::NodeContext& node, const Reorder& r, BufferSlot slot,
                               const dnnl::memory::desc& md, const dnnl::memory& user) {
  if (!r.active) return user;
  const dnnl::memory buf = thread_buffer(slot, md);
  FRAME_RETURN_IF_ERROR(run_reorder(node, r, user, buf));
  return buf;
}

dnnl::memory::dims padded(const Shape& s, size_t rank) {
  dnnl::memory::dims d(rank - std::min(rank, s.size()), 1);
  d.insert(d.end(), s.begin(), s.end());
  return d;
}

MatmulDims matmul_dims(Shape as, Shape bs) {
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  // A 2-D B (a weight) is shared by every batch of A: fold A's batch dims into M, one GEMM
  // [prod(batch) * M, K] x [K, N] instead of many small ones (a [128, 1, 256] x [256, 768]
  // attention projection ran as 128 GEMVs, 3x slower). Same bytes for A and Y.
  if (bs.size() == 2 && as.size() > 2) {
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < as.size(); ++i) rows *= as[i];
    as = Shape{rows, as.back()};
  }
  const size_t rank = std::max(as.size(), bs.size());
  MatmulDims d{padded(as, rank), padded(bs, rank), dnnl::memory::dims(rank)};
  for (size_t i = 0; i + 2 < rank; ++i) d.y[i] = std::max(d.a[i], d.b[i]);
  d.y[rank - 2] = d.a[rank - 2];
  d.y[rank - 1] = d.b[rank - 1];
  return d;
}

namespace {

// A oneDNN memory desc as a packed constant's layout name: every field the bytes of a blocked
// layout depend on ("oneDNN layouts" in docs/backends/onednn.md). A desc of another format
// kind (Winograd, RNN-packed) is named by its raw bytes, marked so that the compile cache on
// disk never stores it.
void append_desc(std::string& out, const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  auto put = [&out](int64_t v) { out += std::to_string(v) + ','; };
  if (d.format_kind != dnnl_blocked) {
    out += "raw:";
    out.append(reinterpret_cast<const char*>(&d), sizeof d);
    return;
  }
  const int n = d.ndims;
  put(n);
  put(d.data_type);
  put(d.offset0);
  for (int i = 0; i < n; ++i) {
    put(d.dims[i]);
    put(d.padded_dims[i]);
    put(d.padded_offsets[i]);
    put(d.format_desc.blocking.strides[i]);
  }
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  put(b.inner_nblks);
  for (int i = 0; i < b.inner_nblks; ++i) {
    put(b.inner_blks[i]);
    put(b.inner_idxs[i]);
  }
  uint32_t scale_bits = 0;
  static_assert(sizeof scale_bits == sizeof d.extra.scale_adjust);
  std::memcpy(&scale_bits, &d.extra.scale_adjust, sizeof scale_bits);
  put(static_cast<int64_t>(d.extra.flags));
  put(d.extra.compensation_mask);
  put(scale_bits);
  put(d.extra.asymm_compensation_mask);
}

std::string dnnl_layout_name(const dnnl::memory::desc& user, const dnnl::memory::desc& md) {
  std::string name = "dnnl:";
  append_desc(name, user);
  name += ">";
  append_desc(name, md);
  return name;
}

}  // namespace

Result<std::shared_ptr<const PackedWeights>> pack_weights(const ops::NodeContext& ctx,
                                                          const dnnl::memory::desc& user,
                                                          const dnnl::memory::desc& md,
                                                          const Tensor& w) {
  const std::string layout = dnnl_layout_name(user, md);
  if (std::shared_ptr<const frame::detail::PackedConstant> p =
          frame::detail::find_packed(w, layout)) {
    return std::static_pointer_cast<const PackedWeights>(p);
  }
  auto p = std::make_shared<PackedWeights>();
  p->source = w;
  try {
    if (md == user) {
      // Already in the primitive's layout: read the constant in place (held by `source`).
      p->mem = dnnl::memory(md, engine(), const_cast<void*>(w.raw_data()));
    } else if (Tensor read = frame::detail::offered_packed(w, layout, md.get_size());
               read.raw_data() != nullptr) {
      // Packed by an earlier process and read back from the compile cache on disk.
      p->storage = std::move(read);
      p->mem = dnnl::memory(md, engine(), p->storage.raw_data());
    } else {
      FRAME_ASSIGN_OR_RETURN(
          p->storage, Tensor::empty(DTypeCode::kUInt8,
                                    {static_cast<int64_t>(std::max<size_t>(md.get_size(), 1))}));
      p->mem = dnnl::memory(md, engine(), p->storage.raw_data());
      const dnnl::memory w_in = wrap(user, w);
      dnnl::reorder::primitive_desc rpd(engine(), user, engine(), md, default_attr());
      const dnnl::memory scratch = scratchpad(rpd.scratchpad_desc());
      const ExecArg args[] = {
          {DNNL_ARG_FROM, &w_in}, {DNNL_ARG_TO, &p->mem}, {DNNL_ARG_SCRATCHPAD, &scratch}};
      FRAME_RETURN_IF_ERROR(execute(ctx, dnnl::reorder(rpd), args));
    }
  } catch (const dnnl::error& e) {
    return dnnl_failure(ctx, "weight reorder", e);
  }
  std::shared_ptr<const PackedWeights> shared = std::move(p);
  frame::detail::record_packed(w, layout, shared);
  return shared;
}

std::shared_ptr<const OwnPackedWeights> pack_weights_own(const Tensor& w, const std::string& layout,
                                                         size_t count,
                                                         const std::function<void(float*)>& fill) {
  const std::string name = "own:" + layout;
  if (std::shared_ptr<const frame::detail::PackedConstant> p =
          frame::detail::find_packed(w, name)) {
    return std::static_pointer_cast<const OwnPackedWeights>(p);
  }
  auto p = std::make_shared<OwnPackedWeights>();
  p->source = w;
  if (Tensor read = frame::detail::offered_packed(w, name, count * sizeof(float));
      read.raw_data() != nullptr) {
    p->storage = std::move(read);  // packed by an earlier process (the compile cache on disk)
  } else {
    Result<Tensor> data = Tensor::empty(DTypeCode::kFloat32, {static_cast<int64_t>(count)});
    if (!data.is_ok()) throw std::bad_alloc();  // as the std::vector it replaced would
    p->storage = std::move(data).value();
    fill(static_cast<float*>(p->storage.raw_data()));
  }
  std::shared_ptr<const OwnPackedWeights> shared = std::move(p);
  frame::detail::record_packed(w, name, shared);
  return shared;
}

PackedWeightStats packed_weight_stats() {
  const frame::detail::PackedConstantStats s = frame::detail::packed_constant_stats();
  return PackedWeightStats{s.packs, s.reuses, s.live};
}

}  // namespace frame::backends::onednn
