/// \file
/// non_zero and unique: output shapes depend on input values, so shape inference computes
/// them from constant inputs and rejects anything else (ARCH-044).

#include "ops/schemas/data_dependent.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "frame/ops/op_schema.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using ir::TensorType;
using Types = Result<std::vector<TensorType>>;

// Total order used by unique: NaNs compare equal to each other and greater than numbers.
template <typename T>
int compare_values(T a, T b) {
  const auto x = to_compute(a), y = to_compute(b);
  if constexpr (kIsFloating<T>) {
    const bool nx = std::isnan(x), ny = std::isnan(y);
    if (nx || ny) return nx == ny ? 0 : (nx ? 1 : -1);
  }
  return x < y ? -1 : (y < x ? 1 : 0);
}

template <typename T>
Result<UniqueResult> unique_typed(const Tensor& x, std::optional<int64_t> axis, bool sorted) {
  const Shape& s = x.shape();
  int64_t outer = 1, dim = x.numel(), inner = 1;
  if (axis) {
    const size_t a = static_cast<size_t>(*axis);
    dim = s[a];
    for (size_t i = 0; i < a; ++i) outer *= s[i];
    for (size_t i = a + 1; i < s.size(); ++i) inner *= s[i];
  }
  const T* p = x.data<T>();
  // Item j is the slice x[:, j, :] of the [outer, dim, inner] view, compared in row-major
  // order of the remaining axes (numpy.unique with axis).
  auto cmp = [&](int64_t i, int64_t j) {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t k = 0; k < inner; ++k) {
        int c = compare_values(p[(o * dim + i) * inner + k], p[(o * dim + j) * inner + k]);
        if (c != 0) return c;
      }
    }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(dim));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return cmp(i, j) < 0; });
  // Groups of equal items; the first of each group is its first occurrence (stable sort).
  std::vector<int64_t> first, count, group_of(static_cast<size_t>(dim));
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || cmp(order[k - 1], order[k]) != 0) {
      first.push_back(order[k]);
      count.push_back(0);
    }
    group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(first.size() - 1);
    ++count.back();
  }
  const size_t u = first.size();
  std::vector<int64_t> rank(u);  // output position of each group
  std::iota(rank.begin(), rank.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(u);
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    for (size_t k = 0; k < u; ++k) rank[static_cast<size_t>(by_first[k])] = static_cast<int64_t>(k);
  }
  Shape ys = axis ? s : Shape{static_cast<int64_t>(u)};
  if (axis) ys[static_cast<size_t>(*axis)] = static_cast<int64_t>(u);
  UniqueResult r;
  FRAME_ASSIGN_OR_RETURN(r.y, Tensor::empty(x.dtype(), ys));
  FRAME_ASSIGN_OR_RETURN(r.indices, Tensor::empty(DTypeCode::kInt64, {static_cast<int64_t>(u)}));
  FRAME_ASSIGN_OR_RETURN(r.inverse, Tensor::empty(DTypeCode::kInt64, {dim}));
  FRAME_ASSIGN_OR_RETURN(r.counts, Tensor::empty(DTypeCode::kInt64, {static_cast<int64_t>(u)}));
  T* y = r.y.data<T>();
  for (size_t g = 0; g < u; ++g) {
    const int64_t pos = rank[g];
    r.indices.data<int64_t>()[pos] = first[g];
    r.counts.data<int64_t>()[pos] = count[g];
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(y + (o * static_cast<int64_t>(u) + pos) * inner, p + (o * dim + first[g]) * inner,
                  static_cast<size_t>(inner) * sizeof(T));
    }
  }
  for (int64_t j = 0; j < dim; ++j) {
    r.inverse.data<int64_t>()[j] = rank[static_cast<size_t>(group_of[static_cast<size_t>(j)])];
  }
  return r;
}

Types non_zero_infer(const NodeContext& ctx) {
  const Tensor* x = ctx.constant_input(0);
  if (x == nullptr) {
    return ctx.error(
        "input 0 (X) must be a constant: the output shape depends on its values "
        "(ARCH-044: output shape must be static)");
  }
  FRAME_ASSIGN_OR_RETURN(Tensor out, compute_non_zero(*x));
  return std::vector<TensorType>{{DTypeCode::kInt64, out.shape()}};
}

Types unique_infer(const NodeContext& ctx) {
  const Tensor* x = ctx.constant_input(0);
  if (x == nullptr) {
    return ctx.error(
        "input 0 (X) must be a constant: the output shape depends on its values "
        "(ARCH-044: output shape must be static)");
  }
  std::optional<int64_t> axis;
  if (const int64_t* a = ctx.attr<int64_t>("axis")) {
    const int64_t r = x->rank();
    if (*a < -r || *a >= r) return ctx.error("axis {} out of range [{}, {}]", *a, -r, r - 1);
    axis = *a < 0 ? *a + r : *a;
  }
  FRAME_ASSIGN_OR_RETURN(UniqueResult u,
                         compute_unique(*x, axis, ctx.attr_or<int64_t>("sorted", 1) != 0));
  std::vector<TensorType> all = {{u.y.dtype(), u.y.shape()},
                                 {DTypeCode::kInt64, u.indices.shape()},
                                 {DTypeCode::kInt64, u.inverse.shape()},
                                 {DTypeCode::kInt64, u.counts.shape()}};
  all.resize(std::min(all.size(), ctx.num_outputs));
  return all;
}

}  // namespace

Result<Tensor> compute_non_zero(const Tensor& x) {
  const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
  const int64_t n = x.numel();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < n; ++i) {
    if (x.element_as_double(i) != 0.0) hits.push_back(i);
  }
  const int64_t r = static_cast<int64_t>(shape.size()), nnz = static_cast<int64_t>(hits.size());
  FRAME_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(DTypeCode::kInt64, {r, nnz}));
  int64_t* o = out.data<int64_t>();
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t rem = hits[static_cast<size_t>(k)];
    for (int64_t d = r - 1; d >= 0; --d) {
      o[d * nnz + k] = rem % shape[static_cast<size_t>(d)];
      rem /= shape[static_cast<size_t>(d)];
    }
  }
  return out;
}

Result<UniqueResult> compute_unique(const Tensor& x, std::optional<int64_t> axis, bool sorted) {
  Result<UniqueResult> r = Status(StatusCode::kInternal, "unique: no dtype matched");
  Status st =
      dispatch_dtype(x.dtype(), [&]<typename T>() { r = unique_typed<T>(x, axis, sorted); });
  if (!st.is_ok()) return st;
  return r;
}

FRAME_REGISTER_OP(non_zero)
    .doc(
        "ONNX NonZero (opset 13): int64 [rank, nnz] indices of the non-zero elements. The "
        "output shape depends on values, so input 0 must be a constant (ARCH-044).")
    .input("X", "input tensor", kAllDTypes)
    .shape_determining()
    .output("Y", "int64 coordinates, one column per non-zero", DTypeSet{DTypeCode::kInt64})
    .shape_infer(non_zero_infer);

FRAME_REGISTER_OP(unique)
    .doc(
        "ONNX Unique (opset 11): unique elements (or slices along axis), sorted or in order of "
        "first occurrence, with first indices, inverse indices and counts. Input 0 must be a "
        "constant (ARCH-044).")
    .input("X", "input tensor", kAllDTypes, "T")
    .shape_determining()
    .output("Y", "unique values", kAllDTypes, "T")
    .optional_output("indices", "int64 first occurrences", DTypeSet{DTypeCode::kInt64})
    .optional_output("inverse_indices", "int64 position in Y of each input item",
                     DTypeSet{DTypeCode::kInt64})
    .optional_output("counts", "int64 occurrences", DTypeSet{DTypeCode::kInt64})
    .optional_attr("axis", AttrType::kInt, "axis of the slices; absent: flatten")
    .attr("sorted", AttrType::kInt, "1: ascending, 0: first-occurrence order", int64_t{1})
    .shape_infer(unique_infer);

}  // namespace frame::ops
