// Helpers of the onednn primitive kernels (see primitive_util.h).

#include "backends/onednn/kernels/primitive_util.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <mutex>
#include <new>
#include <unordered_map>

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

// The live packed weights, found by their source's address: a source address names one
// constant while an object packed from it lives (the object holds the source). Entries whose
// object died are dropped on the next insert into their bucket and in a periodic sweep.
class PackedWeightCache {
 public:
  // A layout: oneDNN's (`user` -> `md`, `own` empty) or a kernel's own arrangement (`own`,
  // pack_weights_own; the descs default).
  struct Layout {
    dnnl::memory::desc user, md;
    std::string own;
    bool operator==(const Layout&) const = default;
  };
  struct Entry {  // keyed by the source's data address
    size_t nbytes;
    Layout layout;
    std::weak_ptr<const void> packed;  // a PackedWeights or an OwnPackedWeights, by layout
  };

  template <typename T>
  std::shared_ptr<const T> find(const Tensor& w, const Layout& layout) {
    std::lock_guard lock(mu_);
    auto [lo, hi] = map_.equal_range(w.raw_data());
    for (auto it = lo; it != hi; ++it) {
      const Entry& e = it->second;
      if (e.nbytes != w.nbytes() || !(e.layout == layout)) continue;
      if (std::shared_ptr<const void> p = e.packed.lock()) {
        ++stats_.reuses;
        return std::static_pointer_cast<const T>(p);
      }
    }
    return nullptr;
  }

  void insert(const Tensor& w, Layout layout, const std::shared_ptr<const void>& p) {
    std::lock_guard lock(mu_);
    ++stats_.packs;
    auto [lo, hi] = map_.equal_range(w.raw_data());
    for (auto it = lo; it != hi;) it = it->second.packed.expired() ? map_.erase(it) : std::next(it);
    map_.emplace(w.raw_data(), Entry{w.nbytes(), std::move(layout), p});
    if (++inserts_ % 256 == 0) {
      for (auto it = map_.begin(); it != map_.end();) {
        it = it->second.packed.expired() ? map_.erase(it) : std::next(it);
      }
    }
  }

  PackedWeightStats stats() {
    std::lock_guard lock(mu_);
    PackedWeightStats s = stats_;
    s.live = 0;
    for (const auto& [k, e] : map_) s.live += e.packed.expired() ? 0 : 1;
    return s;
  }

 private:
  std::mutex mu_;
  std::unordered_multimap<const void*, Entry> map_;
  PackedWeightStats stats_;
  uint64_t inserts_ = 0;
};

PackedWeightCache& packed_cache() {
  static PackedWeightCache* cache = new PackedWeightCache();  // never destroyed: used at exit
  return *cache;
}

}  // namespace

Result<std::shared_ptr<const PackedWeights>> pack_weights(const ops::NodeContext& ctx,
                                                          const dnnl::memory::desc& user,
                                                          const dnnl::memory::desc& md,
                                                          const Tensor& w) {
  if (std::shared_ptr<const PackedWeights> p =
          packed_cache().find<PackedWeights>(w, {user, md, {}})) {
    return p;
  }
  auto p = std::make_shared<PackedWeights>();
  p->source = w;
  try {
    if (md == user) {
      // Already in the primitive's layout: read the constant in place (held by `source`).
      p->mem = dnnl::memory(md, engine(), const_cast<void*>(w.raw_data()));
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
  packed_cache().insert(w, {user, md, {}}, shared);
  return shared;
}

std::shared_ptr<const OwnPackedWeights> pack_weights_own(const Tensor& w, const std::string& layout,
                                                         size_t count,
                                                         const std::function<void(float*)>& fill) {
  PackedWeightCache::Layout key{{}, {}, layout};
  if (std::shared_ptr<const OwnPackedWeights> p = packed_cache().find<OwnPackedWeights>(w, key)) {
    return p;
  }
  auto p = std::make_shared<OwnPackedWeights>();
  p->source = w;
  Result<Tensor> data = Tensor::empty(DTypeCode::kFloat32, {static_cast<int64_t>(count)});
  if (!data.is_ok()) throw std::bad_alloc();  // as the std::vector it replaced would
  p->data = std::move(data).value();
  fill(p->data.data<float>());
  std::shared_ptr<const OwnPackedWeights> shared = std::move(p);
  packed_cache().insert(w, std::move(key), shared);
  return shared;
}

PackedWeightStats packed_weight_stats() { return packed_cache().stats(); }

}  // namespace frame::backends::onednn
