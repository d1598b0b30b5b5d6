/// \file
/// cpu reference kernels of the indexed ops: gather, gather_elements, gather_nd,
/// scatter_elements, scatter_nd, one_hot, and the data-dependent non_zero, unique and
/// non_max_suppression.
/// Indices are validated before anything is written; a bad index is an error naming the node.

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/kernels/data_movement_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/data_dependent.h"

namespace frame::backends::cpu {
namespace {

using ops::KernelContext;

constexpr DTypeSet kIndexDTypes{DTypeCode::kInt32, DTypeCode::kInt64};

int64_t normalized_axis(const KernelContext& ctx, int64_t rank, int64_t dflt = 0) {
  const int64_t a = ctx.node->attr_or<int64_t>("axis", dflt);
  return a < 0 ? a + rank : a;
}

// Checks every index in [-dim, dim) and returns them normalised to [0, dim).
template <typename I>
Result<std::vector<int64_t>> checked_indices(const KernelContext& ctx, const Tensor& idx,
                                             int64_t dim) {
  std::vector<int64_t> v(static_cast<size_t>(idx.numel()));
  const I* p = idx.data<I>();
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t x = static_cast<int64_t>(p[i]);
    if (x < -dim || x >= dim) {
      return ctx.node->error("input 1 (indices) value {} at {} out of range [{}, {}]", x, i, -dim,
                             dim - 1);
    }
    v[i] = x < 0 ? x + dim : x;
  }
  return v;
}

Status gather_cpu(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  Tensor& out = ctx.output(0);
  const int64_t axis = normalized_axis(ctx, data.rank());
  const int64_t dim = data.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= data.dim(i);
  for (int64_t i = axis + 1; i < data.rank(); ++i) inner *= data.dim(i);
  const size_t chunk = static_cast<size_t>(inner) * dtype_size(data.dtype());
  return dispatch_dtype<kIndexDTypes>(idx.dtype(), [&]<typename I>() -> Status {
    FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> ix, checked_indices<I>(ctx, idx, dim));
    const int64_t n = static_cast<int64_t>(ix.size());
    const char* src = static_cast<const char*>(data.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    const int nt = threads_for(out.numel(), ctx.num_threads);
    ops::parallel_for(outer * n, nt, [&](int64_t r) {
      const int64_t o = r / n, j = r % n;
      std::memcpy(dst + static_cast<size_t>(r) * chunk,
                  src + static_cast<size_t>(o * dim + ix[static_cast<size_t>(j)]) * chunk, chunk);
    });
    return Status();
  });
}

// Turns `ix` (one index along `axis` per element of an index tensor of shape `ishape`, in
// row-major order) into element offsets in a tensor of strides `dst_st`: the element's own
// coordinates on the other axes, its index on `axis`. An odometer walks the coordinates, so
// no element pays a division per axis.
void to_element_offsets(std::vector<int64_t>& ix, const Shape& ishape, int64_t axis,
                        const std::vector<int64_t>& dst_st) {
  const size_t r = ishape.size();
  std::vector<int64_t> c(r, 0);
  const int64_t step = dst_st[static_cast<size_t>(axis)];
  int64_t base = 0;  // offset of the current coordinates with the axis coordinate left out
  for (size_t e = 0; e < ix.size(); ++e) {
    ix[e] = base + ix[e] * step;
    for (size_t d = r; d-- > 0;) {
      const bool other = static_cast<int64_t>(d) != axis;
      if (++c[d] < ishape[d]) {
        if (other) base += dst_st[d];
        break;
      }
      if (other) base -= (ishape[d] - 1) * dst_st[d];
      c[d] = 0;
    }
  }
}

Status gather_elements_cpu(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  Tensor& out = ctx.output(0);
  const int64_t axis = normalized_axis(ctx, data.rank());
  const std::vector<int64_t> dst_st = strides_of(data.shape());
  return dispatch_dtype<kIndexDTypes>(idx.dtype(), [&]<typename I>() -> Status {
    FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> ix, checked_indices<I>(ctx, idx, data.dim(axis)));
    to_element_offsets(ix, idx.shape(), axis, dst_st);
    return dispatch_storage(data.dtype(), [&]<typename T>() {
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      for (int64_t e = 0; e < idx.numel(); ++e) dst[e] = src[ix[static_cast<size_t>(e)]];
    });
  });
}

// Offsets (in elements of data) of the slices addressed by gather_nd/scatter_nd index tuples.
Result<std::vector<int64_t>> nd_offsets(const KernelContext& ctx, const Shape& data,
                                        const Tensor& idx, int64_t batch_dims) {
  const int64_t k = idx.dim(idx.rank() - 1);
  const std::vector<int64_t> st = strides_of(data);
  int64_t batch = 1;
  for (int64_t i = 0; i < batch_dims; ++i) batch *= data[static_cast<size_t>(i)];
  const int64_t tuples = idx.numel() / std::max<int64_t>(k, 1);
  const int64_t per_batch = batch == 0 ? 0 : tuples / batch;
  const int64_t batch_stride = batch_dims == 0 ? 0 : st[static_cast<size_t>(batch_dims - 1)];
  const int64_t* p = idx.data<int64_t>();
  std::vector<int64_t> offs(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = per_batch == 0 ? 0 : (t / per_batch) * batch_stride;
    for (int64_t j = 0; j < k; ++j) {
      const size_t d = static_cast<size_t>(batch_dims + j);
      int64_t v = p[t * k + j];
      if (v < -data[d] || v >= data[d]) {
        return ctx.node->error("input 1 (indices) value {} out of range [{}, {}] for data dim {}",
                               v, -data[d], data[d] - 1, d);
      }
      off += (v < 0 ? v + data[d] : v) * st[d];
    }
    offs[static_cast<size_t>(t)] = off;
  }
  return offs;
}

Status gather_nd_cpu(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  Tensor& out = ctx.output(0);
  const int64_t b = ctx.node->attr_or<int64_t>("batch_dims", 0);
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> offs, nd_offsets(ctx, data.shape(), idx, b));
  int64_t slice = 1;
  for (int64_t d = b + idx.dim(idx.rank() - 1); d < data.rank(); ++d) slice *= data.dim(d);
  const size_t es = dtype_size(data.dtype());
  const char* src = static_cast<const char*>(data.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (size_t t = 0; t < offs.size(); ++t) {
    std::memcpy(dst + t * static_cast<size_t>(slice) * es, src + static_cast<size_t>(offs[t]) * es,
                static_cast<size_t>(slice) * es);
  }
  return Status();
}

// Scatter reductions; arithmetic in compute_t with the result rounded to T (bool: or / and).
struct RedNone {
  template <typename T>
  static T apply(T, T u) {
    return u;
  }
};
struct RedAdd {
  template <typename T>
  static T apply(T a, T u) {
    if constexpr (std::is_same_v<T, bool>)
      return a || u;
    else
      return from_compute<T>(to_compute(a) + to_compute(u));
  }
};
struct RedMul {
  template <typename T>
  static T apply(T a, T u) {
    if constexpr (std::is_same_v<T, bool>)
      return a && u;
    else
      return from_compute<T>(to_compute(a) * to_compute(u));
  }
};
struct RedMax {
  template <typename T>
  static T apply(T a, T u) {
    return to_compute(u) > to_compute(a) ? u : a;
  }
};
struct RedMin {
  template <typename T>
  static T apply(T a, T u) {
    return to_compute(u) < to_compute(a) ? u : a;
  }
};

// Calls f.template operator()<Red>() for the node's reduction attribute (chosen once).
template <typename F>
Status with_reduction(const KernelContext& ctx, F&& f) {
  const std::string r = ctx.node->attr_or<std::string>("reduction", "none");
  if (r == "none") return f.template operator()<RedNone>();
  if (r == "add") return f.template operator()<RedAdd>();
  if (r == "mul") return f.template operator()<RedMul>();
  if (r == "max") return f.template operator()<RedMax>();
  if (r == "min") return f.template operator()<RedMin>();
  return ctx.node->error("attribute 'reduction' is '{}', expected none, add, mul, max or min", r);
}

Status scatter_elements_cpu(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  Tensor& out = ctx.output(0);
  const int64_t axis = normalized_axis(ctx, data.rank());
  const std::vector<int64_t> dst_st = strides_of(data.shape());
  if (out.raw_data() != data.raw_data() && data.nbytes() > 0) {
    std::memcpy(out.raw_data(), data.raw_data(), data.nbytes());
  }
  return dispatch_dtype<kIndexDTypes>(idx.dtype(), [&]<typename I>() -> Status {
    FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> ix, checked_indices<I>(ctx, idx, data.dim(axis)));
    to_element_offsets(ix, idx.shape(), axis, dst_st);
    return with_reduction(ctx, [&]<typename Red>() {
      return dispatch_dtype(data.dtype(), [&]<typename T>() {
        const T* u = upd.data<T>();
        T* dst = out.data<T>();
        // Sequential on purpose: duplicate indices reduce in index order.
        for (int64_t e = 0; e < idx.numel(); ++e) {
          const int64_t off = ix[static_cast<size_t>(e)];
          dst[off] = Red::apply(dst[off], u[e]);
        }
      });
    });
  });
}

Status scatter_nd_cpu(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  Tensor& out = ctx.output(0);
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> offs, nd_offsets(ctx, data.shape(), idx, 0));
  int64_t slice = 1;
  for (int64_t d = idx.dim(idx.rank() - 1); d < data.rank(); ++d) slice *= data.dim(d);
  if (out.raw_data() != data.raw_data() && data.nbytes() > 0) {
    std::memcpy(out.raw_data(), data.raw_data(), data.nbytes());
  }
  return with_reduction(ctx, [&]<typename Red>() {
    return dispatch_dtype(data.dtype(), [&]<typename T>() {
      const T* u = upd.data<T>();
      T* dst = out.data<T>();
      for (size_t t = 0; t < offs.size(); ++t) {
        T* d = dst + offs[t];
        const T* s = u + static_cast<int64_t>(t) * slice;
        for (int64_t j = 0; j < slice; ++j) d[j] = Red::apply(d[j], s[j]);
      }
    });
  });
}

Status one_hot_cpu(KernelContext& ctx) {
  const Tensor& idx = ctx.input(0);
  const Tensor& vals = ctx.input(2);
  Tensor& out = ctx.output(0);
  const int64_t r = out.rank();
  const int64_t axis = normalized_axis(ctx, r, -1);
  const int64_t depth = out.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= out.dim(i);
  for (int64_t i = axis + 1; i < r; ++i) inner *= out.dim(i);
  return dispatch_dtype<kNumericDTypes>(idx.dtype(), [&]<typename I>() {
    return dispatch_storage(vals.dtype(), [&]<typename T>() {
      const T off = vals.data<T>()[0], on = vals.data<T>()[1];
      const I* ip = idx.data<I>();
      T* dst = out.data<T>();
      std::fill(dst, dst + out.numel(), off);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          int64_t v = static_cast<int64_t>(to_compute(ip[o * inner + i]));
          if (v < 0) v += depth;
          if (v >= 0 && v < depth) dst[(o * depth + v) * inner + i] = on;
        }
      }
    });
  });
}

// Copies a computed tensor into the preallocated output after checking the inferred shape.
Status copy_result(const KernelContext& ctx, const Tensor& src, Tensor& dst, size_t i) {
  if (src.shape() != dst.shape()) {
    return ctx.node->error("output {} computed shape {} differs from inferred {}", i,
                           shape_to_string(src.shape()), shape_to_string(dst.shape()));
  }
  if (src.nbytes() > 0) std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
  return Status();
}

Status non_zero_cpu(KernelContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(Tensor y, ops::compute_non_zero(ctx.input(0)));
  return copy_result(ctx, y, ctx.output(0), 0);
}

Status unique_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::optional<int64_t> axis;
  if (const int64_t* a = ctx.node->attr<int64_t>("axis")) axis = *a < 0 ? *a + x.rank() : *a;
  FRAME_ASSIGN_OR_RETURN(
      ops::UniqueResult u,
      ops::compute_unique(x, axis, ctx.node->attr_or<int64_t>("sorted", 1) != 0));
  const Tensor* parts[4] = {&u.y, &u.indices, &u.inverse, &u.counts};
  for (size_t i = 0; i < ctx.outputs.size() && i < 4; ++i) {
    FRAME_RETURN_IF_ERROR(copy_result(ctx, *parts[i], ctx.outputs[i], i));
  }
  return Status();
}

Status non_max_suppression_cpu(KernelContext& ctx) {
  auto in = [&](size_t i) {
    return i < ctx.inputs.size() && ctx.input(i).defined() ? &ctx.input(i) : nullptr;
  };
  FRAME_ASSIGN_OR_RETURN(
      Tensor y, ops::non_max_suppression_of(in(0), in(1), in(2), in(3), in(4),
                                            ctx.node->attr_or<int64_t>("center_point_box", 0)));
  return copy_result(ctx, y, ctx.output(0), 0);
}

}  // namespace

FRAME_REGISTER_KERNEL(gather, "cpu", gather_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(gather_elements, "cpu", gather_elements_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(gather_nd, "cpu", gather_nd_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(scatter_elements, "cpu", scatter_elements_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(scatter_nd, "cpu", scatter_nd_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(one_hot, "cpu", one_hot_cpu).dtypes(kNumericDTypes);
FRAME_REGISTER_KERNEL(non_zero, "cpu", non_zero_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(unique, "cpu", unique_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(non_max_suppression, "cpu", non_max_suppression_cpu)
    .dtypes({DTypeCode::kFloat32});

}  // namespace frame::backends::cpu
