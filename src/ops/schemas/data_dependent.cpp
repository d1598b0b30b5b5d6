/// \file
/// non_zero, unique and non_max_suppression: output shapes depend on input values, so shape
/// inference computes them from constant inputs and rejects anything else (ARCH-044). A session
/// runs such a node between static stages with its inputs known (ADR 0008).

#include "ops/schemas/data_dependent.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>
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

// A scalar (or one-element) input of non_max_suppression, when given.
template <typename T>
Result<std::optional<T>> nms_scalar(const Tensor* t, const char* name) {
  if (t == nullptr) return std::optional<T>();
  if (t->numel() != 1) {
    return invalid_argument("input '{}' must hold one value, got shape {}", name,
                            shape_to_string(t->shape()));
  }
  // int64 read as such: INT64_MAX ("no limit", as exporters write it) has no double form.
  if constexpr (std::is_same_v<T, int64_t>) {
    if (t->dtype() == DTypeCode::kInt64) return std::optional<T>(t->data<int64_t>()[0]);
  }
  return std::optional<T>(static_cast<T>(t->element_as_double(0)));
}

Types non_max_suppression_infer(const NodeContext& ctx) {
  // Every present input decides the number of rows (ARCH-044).
  for (size_t i = 0; i < ctx.input_types.size(); ++i) {
    if (ctx.has_input(i) && ctx.constant_input(i) == nullptr) {
      return ctx.error(
          "input {} must be a constant: the number of selected boxes depends on the values "
          "(ARCH-044: output shape must be static)",
          i);
    }
  }
  FRAME_ASSIGN_OR_RETURN(
      Tensor out,
      non_max_suppression_of(ctx.constant_input(0), ctx.constant_input(1), ctx.constant_input(2),
                             ctx.constant_input(3), ctx.constant_input(4),
                             ctx.attr_or<int64_t>("center_point_box", 0)));
  return std::vector<TensorType>{{DTypeCode::kInt64, out.shape()}};
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

Result<Tensor> compute_non_max_suppression(const Tensor& boxes, const Tensor& scores,
                                           int64_t max_per_class, float iou_threshold,
                                           std::optional<float> score_threshold,
                                           bool center_point_box) {
  if (boxes.rank() != 3 || boxes.shape()[2] != 4) {
    return invalid_argument("input 0 (boxes) must be [batches, boxes, 4], got {}",
                            shape_to_string(boxes.shape()));
  }
  if (scores.rank() != 3 || scores.shape()[0] != boxes.shape()[0] ||
      scores.shape()[2] != boxes.shape()[1]) {
    return invalid_argument(
        "input 1 (scores) must be [batches, classes, boxes] = [{}, C, {}], got {}",
        boxes.shape()[0], boxes.shape()[1], shape_to_string(scores.shape()));
  }
  if (boxes.dtype() != DTypeCode::kFloat32 || scores.dtype() != DTypeCode::kFloat32) {
    return invalid_argument("boxes and scores must be f32, got {} and {}",
                            dtype_name(boxes.dtype()), dtype_name(scores.dtype()));
  }
  const int64_t nb = boxes.shape()[0], n = boxes.shape()[1], nc = scores.shape()[1];
  std::vector<int64_t> rows;  // (batch, class, box) triples
  std::vector<int64_t> cand;
  // Kept boxes of the current class as corners and areas, contiguous for the IoU loop.
  std::vector<float> ky1, kx1, ky2, kx2, karea;
  std::vector<float> y1(static_cast<size_t>(n)), x1(y1.size()), y2(y1.size()), x2(y1.size()),
      area(y1.size());
  for (int64_t b = 0; b < nb && max_per_class > 0; ++b) {
    const float* bx = boxes.data<float>() + b * n * 4;
    for (int64_t i = 0; i < n; ++i) {
      const float* p = bx + i * 4;
      if (center_point_box) {
        x1[i] = p[0] - p[2] / 2, x2[i] = p[0] + p[2] / 2;
        y1[i] = p[1] - p[3] / 2, y2[i] = p[1] + p[3] / 2;
      } else {
        y1[i] = std::min(p[0], p[2]), y2[i] = std::max(p[0], p[2]);
        x1[i] = std::min(p[1], p[3]), x2[i] = std::max(p[1], p[3]);
      }
      area[i] = (y2[i] - y1[i]) * (x2[i] - x1[i]);
    }
    for (int64_t c = 0; c < nc; ++c) {
      const float* sc = scores.data<float>() + (b * nc + c) * n;
      cand.clear();
      for (int64_t i = 0; i < n; ++i) {
        if (!score_threshold || sc[i] > *score_threshold) cand.push_back(i);
      }
      std::stable_sort(cand.begin(), cand.end(),
                       [&](int64_t a, int64_t d) { return sc[a] > sc[d]; });
      ky1.clear(), kx1.clear(), ky2.clear(), kx2.clear(), karea.clear();
      for (int64_t i : cand) {
        if (static_cast<int64_t>(karea.size()) >= max_per_class) break;
        bool keep = true;
        for (size_t k = 0; k < karea.size() && keep; ++k) {
          const float ih = std::min(y2[i], ky2[k]) - std::max(y1[i], ky1[k]);
          const float iw = std::min(x2[i], kx2[k]) - std::max(x1[i], kx1[k]);
          if (ih <= 0 || iw <= 0 || area[i] <= 0 || karea[k] <= 0) continue;
          const float inter = ih * iw, uni = area[i] + karea[k] - inter;
          if (uni > 0 && inter / uni > iou_threshold) keep = false;
        }
        if (!keep) continue;
        ky1.push_back(y1[i]), kx1.push_back(x1[i]), ky2.push_back(y2[i]), kx2.push_back(x2[i]);
        karea.push_back(area[i]);
        rows.insert(rows.end(), {b, c, i});
      }
    }
  }
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(rows.size() / 3), 3}, rows);
}

Result<Tensor> non_max_suppression_of(const Tensor* boxes, const Tensor* scores,
                                      const Tensor* max_per_class, const Tensor* iou,
                                      const Tensor* score_threshold, int64_t center_point_box) {
  if (boxes == nullptr || scores == nullptr)
    return invalid_argument("boxes and scores are required");
  FRAME_ASSIGN_OR_RETURN(std::optional<int64_t> m,
                         nms_scalar<int64_t>(max_per_class, "max_output_boxes_per_class"));
  FRAME_ASSIGN_OR_RETURN(std::optional<float> t, nms_scalar<float>(iou, "iou_threshold"));
  FRAME_ASSIGN_OR_RETURN(std::optional<float> s,
                         nms_scalar<float>(score_threshold, "score_threshold"));
  if (center_point_box != 0 && center_point_box != 1) {
    return invalid_argument("attribute center_point_box must be 0 or 1, got {}", center_point_box);
  }
  return compute_non_max_suppression(*boxes, *scores, m.value_or(0), t.value_or(0.0f), s,
                                     center_point_box == 1);
}

FRAME_REGISTER_OP(non_zero)
    .doc(
        "ONNX NonZero (opset 13): int64 [rank, nnz] indices of the non-zero elements. The "
        "output shape depends on values, so input 0 must be a constant (ARCH-044); sessions run "
        "it between static stages (ADR 0008).")
    .input("X", "input tensor", kAllDTypes)
    .output("Y", "int64 coordinates, one column per non-zero", DTypeSet{DTypeCode::kInt64})
    .shape_infer(non_zero_infer);

FRAME_REGISTER_OP(unique)
    .doc(
        "ONNX Unique (opset 11): unique elements (or slices along axis), sorted or in order of "
        "first occurrence, with first indices, inverse indices and counts. Input 0 must be a "
        "constant (ARCH-044).")
    .input("X", "input tensor", kAllDTypes, "T")
    .output("Y", "unique values", kAllDTypes, "T")
    .optional_output("indices", "int64 first occurrences", DTypeSet{DTypeCode::kInt64})
    .optional_output("inverse_indices", "int64 position in Y of each input item",
                     DTypeSet{DTypeCode::kInt64})
    .optional_output("counts", "int64 occurrences", DTypeSet{DTypeCode::kInt64})
    .optional_attr("axis", AttrType::kInt, "axis of the slices; absent: flatten")
    .attr("sorted", AttrType::kInt, "1: ascending, 0: first-occurrence order", int64_t{1})
    .shape_infer(unique_infer);

FRAME_REGISTER_OP(non_max_suppression)
    .doc(
        "ONNX NonMaxSuppression (opsets 10, 11): int64 [num_selected, 3] rows (batch, class, "
        "box) of the boxes kept per batch and class by greedy IoU suppression in descending "
        "score order. The output shape depends on values, so every input must be a constant "
        "(ARCH-044); sessions run it between static stages (ADR 0008).")
    .input("boxes", "f32 [batches, boxes, 4]", DTypeSet{DTypeCode::kFloat32})
    .input("scores", "f32 [batches, classes, boxes]", DTypeSet{DTypeCode::kFloat32})
    .optional_input("max_output_boxes_per_class", "int64 scalar; absent or 0: none kept",
                    DTypeSet{DTypeCode::kInt64})
    .optional_input("iou_threshold", "f32 scalar; a box overlapping a kept one by more is dropped",
                    DTypeSet{DTypeCode::kFloat32})
    .optional_input("score_threshold", "f32 scalar; only boxes scoring above it are candidates",
                    DTypeSet{DTypeCode::kFloat32})
    .output("selected_indices", "int64 [num_selected, 3]", DTypeSet{DTypeCode::kInt64})
    .attr("center_point_box", AttrType::kInt,
          "0: [y1, x1, y2, x2] corners; 1: [x_center, y_center, width, height]", int64_t{0})
    .shape_infer(non_max_suppression_infer);

}  // namespace frame::ops
