// The ONNX op table: the only place ONNX op names live (docs/onnx.md: "ONNX support is one table
// line"). A row maps (domain, op type, opset range) to a frame op and an optional converter
// that rewrites older-opset attributes into the latest form the frame schemas follow.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <mutex>

#include "frame/ops/op_registry.h"
#include "onnx_internal.h"
#include "ops/schemas/control_flow.h"

namespace frame::onnx::detail {
namespace {

using ir::AttrMap;
using ir::AttrValue;
using ir::ValueId;

// A rank-0 tensor of dtype `d` holding `v` (attribute values converted to the input dtype).
Tensor scalar_of(DTypeCode d, double v) {
  Tensor t = Tensor::zeros(d, {}).value();
  (void)dispatch_dtype(d, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      *t.data<T>() = v != 0.0;
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      *t.data<T>() = T(static_cast<float>(v));
    } else {
      *t.data<T>() = static_cast<T>(v);
    }
  });
  return t;
}

// scalar_of for an attribute's value: an integer input dtype must hold it (a float attribute
// of a model is not trusted; the cast of an out-of-range or NaN value is undefined).
Result<Tensor> attr_scalar(NodeImporter& n, DTypeCode d, double v, std::string_view attr) {
  Status fits;
  (void)dispatch_dtype(d, [&]<typename T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // [-2^digits, 2^digits) for signed T, [0, 2^digits) for unsigned: exact doubles.
      const double hi = std::ldexp(1.0, std::numeric_limits<T>::digits);
      const double lo = std::is_signed_v<T> ? -hi : 0.0;
      if (!(v >= lo && v < hi)) {
        fits =
            n.error("attribute '{}' = {} does not fit the input dtype {} (range {} to {})", attr, v,
                    dtype_name(d), std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max());
      }
    }
  });
  FRAME_RETURN_IF_ERROR(fits);
  return scalar_of(d, v);
}

template <typename T>
const T* get(const AttrMap& a, const char* name) {
  auto it = a.find(name);
  return it == a.end() ? nullptr : std::get_if<T>(&it->second);
}

Status expect_type(NodeImporter& n, size_t i) {
  if (n.input_type(i) == nullptr) return n.error("input {} is required", i);
  return Status();
}

// Moves an ints attribute into a constant int64 input at position `pos`.
Status ints_attr_to_input(NodeImporter& n, const char* attr, size_t pos,
                          std::vector<ValueId>& inputs, bool required) {
  std::optional<AttrValue> a = n.take_attr(attr);
  if (!a) {
    if (required) return n.error("attribute '{}' is required", attr);
    return Status();
  }
  const auto* v = std::get_if<std::vector<int64_t>>(&*a);
  if (v == nullptr) return n.error("attribute '{}' must be ints", attr);
  if (inputs.size() <= pos) inputs.resize(pos + 1, ir::kNoValue);
  inputs[pos] = n.const_i64(*v);
  return Status();
}

}  // namespace

std::vector<int64_t> shape_slice(const Shape& s, int64_t start, int64_t end) {
  const auto r = static_cast<int64_t>(s.size());
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  return std::vector<int64_t>(s.begin() + start, s.begin() + std::max(start, end));
}

Status convert_default(NodeImporter& n, std::string_view frame_op) {
  // consumed_inputs (opset < 6) only described in-place buffer reuse.
  n.take_attr("consumed_inputs");
  return n.emit(frame_op, n.inputs(), n.attrs());
}

namespace {

Status convert_constant(NodeImporter& n, std::string_view) {
  AttrMap& a = n.attrs();
  if (a.size() != 1) return n.error("expects exactly one value attribute, got {}", a.size());
  const auto& [key, val] = *a.begin();
  Tensor t;
  if (key == "value") {
    t = std::get<Tensor>(val);
  } else if (key == "value_float") {
    t = Tensor::scalar<float>(static_cast<float>(std::get<double>(val)));
  } else if (key == "value_int") {
    t = Tensor::scalar<int64_t>(std::get<int64_t>(val));
  } else if (key == "value_floats") {
    const auto& v = std::get<std::vector<double>>(val);
    std::vector<float> f(v.begin(), v.end());
    t = Tensor::from_vector<float>({static_cast<int64_t>(f.size())}, f);
  } else if (key == "value_ints") {
    const auto& v = std::get<std::vector<int64_t>>(val);
    t = Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  } else {
    return Status(
        StatusCode::kUnimplemented,
        n.error("attribute '{}' is not supported (no string or sparse tensors)", key).message());
  }
  n.add_output_constant(std::move(t));
  return Status();
}

// Clip-6: min/max attributes -> constant inputs of the input dtype.
Status convert_clip_v6(NodeImporter& n, std::string_view op) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  const DTypeCode d = n.input_type(0)->dtype;
  std::vector<ValueId> in = {n.input(0), ir::kNoValue, ir::kNoValue};
  for (const auto& [k, name] : {std::pair{1, "min"}, std::pair{2, "max"}}) {
    if (auto v = n.take_attr(name)) {
      FRAME_ASSIGN_OR_RETURN(Tensor t, attr_scalar(n, d, std::get<double>(*v), name));
      in[static_cast<size_t>(k)] = n.constant(std::move(t), name);
    }
  }
  return n.emit(op, in, n.attrs());
}

// DFT-20: the `axis` input (a constant scalar; default -2, the last signal dim) -> the opset-17
// attribute the frame schema follows.
Status convert_dft_v20(NodeImporter& n, std::string_view op) {
  int64_t axis = -2;
  if (n.input(2) != ir::kNoValue) {
    const Tensor* a = n.input_constant(2);
    if (a == nullptr) return n.error("input 2 (axis) must be a constant (ARCH-044)");
    if (a->numel() != 1)
      return n.error("input 2 (axis) must be a scalar, got {} values", a->numel());
    axis = a->element_as_int64(0);
  }
  std::vector<ValueId> in = {n.input(0)};
  if (n.input(1) != ir::kNoValue) in.push_back(n.input(1));
  AttrMap attrs = n.attrs();
  attrs["axis"] = axis;
  return n.emit(op, in, attrs);
}

// An optional ints attribute `kAttr` -> input 1 (Split-2/11 `split`, Squeeze/Unsqueeze-1..12
// `axes`).
template <const char* kAttr>
Status convert_ints_attr_v1(NodeImporter& n, std::string_view op) {
  std::vector<ValueId> in = {n.input(0)};
  FRAME_RETURN_IF_ERROR(ints_attr_to_input(n, kAttr, 1, in, false));
  return n.emit(op, in, n.attrs());
}
constexpr char kSplitAttr[] = "split";
constexpr char kAxesAttr[] = "axes";

// Slice-1: starts/ends/axes attributes -> inputs.
Status convert_slice_v1(NodeImporter& n, std::string_view op) {
  std::vector<ValueId> in = {n.input(0)};
  FRAME_RETURN_IF_ERROR(ints_attr_to_input(n, "starts", 1, in, true));
  FRAME_RETURN_IF_ERROR(ints_attr_to_input(n, "ends", 2, in, true));
  FRAME_RETURN_IF_ERROR(ints_attr_to_input(n, "axes", 3, in, false));
  return n.emit(op, in, n.attrs());
}

// Pad-2 (pads, value attrs) and Pad-1 (paddings) -> inputs.
Status convert_pad_v2(NodeImporter& n, std::string_view op) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  std::vector<ValueId> in = {n.input(0)};
  const char* key = n.has_attr("paddings") ? "paddings" : "pads";
  FRAME_RETURN_IF_ERROR(ints_attr_to_input(n, key, 1, in, true));
  if (auto v = n.take_attr("value")) {
    FRAME_ASSIGN_OR_RETURN(Tensor t,
                           attr_scalar(n, n.input_type(0)->dtype, std::get<double>(*v), "value"));
    in.push_back(n.constant(std::move(t), "value"));
  }
  return n.emit(op, in, n.attrs());
}

// Softmax/LogSoftmax-1..12: coerce to 2-D at `axis` (default 1).
Status convert_softmax_v1(NodeImporter& n, std::string_view op) {
  AttrMap a = n.attrs();
  if (a.count("axis") == 0) a["axis"] = int64_t{1};
  a["legacy_flatten"] = int64_t{1};
  return n.emit(op, n.inputs(), a);
}

// Upsample-7 (scales attr) / Upsample-9 and Resize-10 (scales input): asymmetric coordinates,
// floor rounding for nearest (the pre-Resize-11 semantics).
Status convert_upsample(NodeImporter& n, std::string_view op) {
  std::vector<ValueId> in = {n.input(0), ir::kNoValue, n.input(1)};
  if (auto v = n.take_attr("scales")) {
    const auto& s = std::get<std::vector<double>>(*v);
    std::vector<float> f(s.begin(), s.end());
    in[2] = n.constant(Tensor::from_vector<float>({static_cast<int64_t>(f.size())}, f), "scales");
  }
  AttrMap a;
  std::string mode = "nearest";
  if (const auto* m = get<std::string>(n.attrs(), "mode")) mode = *m;
  if (mode == "bilinear" || mode == "trilinear") mode = "linear";
  a["mode"] = mode;
  a["coordinate_transformation_mode"] = std::string("asymmetric");
  a["nearest_mode"] = std::string("floor");
  return n.emit(op, in, a);
}

// Dropout-1..11: ratio attribute -> input; is_test (opset < 7) is implied by inference.
Status convert_dropout_v1(NodeImporter& n, std::string_view op) {
  n.take_attr("is_test");
  n.take_attr("consumed_inputs");
  std::vector<ValueId> in = {n.input(0)};
  if (auto v = n.take_attr("ratio")) {
    in.push_back(
        n.constant(Tensor::scalar<float>(static_cast<float>(std::get<double>(*v))), "ratio"));
  }
  return n.emit(op, in, n.attrs());
}

// BatchNormalization-1..8: drop legacy flags that do not change inference results.
Status convert_batchnorm_v1(NodeImporter& n, std::string_view op) {
  n.take_attr("consumed_inputs");
  n.take_attr("is_test");
  if (auto v = n.take_attr("spatial"); v && std::get<int64_t>(*v) != 1) {
    return n.error("spatial=0 (per-activation statistics) is not supported");
  }
  if (n.num_outputs() > 3) {
    return n.error("training outputs saved_mean/saved_var are not supported ({} outputs)",
                   n.num_outputs());
  }
  return n.emit(op, n.inputs(), n.attrs());
}

Status convert_batchnorm_v9(NodeImporter& n, std::string_view op) {
  if (n.num_outputs() > 3) {
    return n.error("training outputs saved_mean/saved_var are not supported ({} outputs)",
                   n.num_outputs());
  }
  return n.emit(op, n.inputs(), n.attrs());
}

Status convert_cast_like(NodeImporter& n, std::string_view op) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 1));
  AttrMap a = n.attrs();
  a["to"] = static_cast<int64_t>(onnx_type_from_dtype(n.input_type(1)->dtype));
  return n.emit(op, {n.input(0)}, a);
}

// Shape and Size depend only on the (concrete) input type: they become constants.
Status convert_shape(NodeImporter& n, std::string_view) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  int64_t start = 0;
  int64_t end = INT64_MAX;
  if (const auto* v = get<int64_t>(n.attrs(), "start")) start = *v;
  if (const auto* v = get<int64_t>(n.attrs(), "end")) end = *v;
  return n.bind_output(0, n.const_i64(shape_slice(n.input_type(0)->shape, start, end)));
}

Status convert_size(NodeImporter& n, std::string_view) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  return n.bind_output(0, n.constant(Tensor::scalar<int64_t>(numel_of(n.input_type(0)->shape))));
}

// EyeLike: ones on diagonal k of a 2-D tensor shaped like the input; a constant.
Status convert_eye_like(NodeImporter& n, std::string_view) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  const ir::TensorType& t = *n.input_type(0);
  if (t.rank() != 2) return n.error("input 0 must be 2-D, got {}", t.to_string());
  DTypeCode d = t.dtype;
  if (const auto* v = get<int64_t>(n.attrs(), "dtype")) {
    Result<DTypeCode> r = dtype_from_onnx(static_cast<int32_t>(*v));
    if (!r.is_ok()) return n.error("attribute 'dtype': {}", r.status().message());
    d = *r;
  }
  const int64_t k = get<int64_t>(n.attrs(), "k") ? *get<int64_t>(n.attrs(), "k") : 0;
  FRAME_RETURN_IF_ERROR(n.check_constant_size(d, t.shape, "the identity constant"));
  FRAME_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(d, t.shape));
  const Tensor one = scalar_of(d, 1.0);
  const size_t es = dtype_size(d);
  for (int64_t i = 0; i < t.shape[0]; ++i) {
    const int64_t j = i + k;
    if (j < 0 || j >= t.shape[1]) continue;
    std::memcpy(static_cast<char*>(out.raw_data()) + (i * t.shape[1] + j) * es, one.raw_data(), es);
  }
  return n.bind_output(0, n.constant(std::move(out)));
}

// Reshape-1..4: shape attribute -> input.
Status convert_reshape_v1(NodeImporter& n, std::string_view op) {
  n.take_attr("consumed_inputs");
  std::vector<ValueId> in = {n.input(0)};
  FRAME_RETURN_IF_ERROR(ints_attr_to_input(n, "shape", 1, in, true));
  return n.emit(op, in, n.attrs());
}

// TopK-1..9: k attribute -> input.
Status convert_topk_v1(NodeImporter& n, std::string_view op) {
  auto k = n.take_attr("k");
  if (!k) return n.error("attribute 'k' is required");
  std::vector<ValueId> in = {n.input(0), n.const_i64({std::get<int64_t>(*k)})};
  return n.emit(op, in, n.attrs());
}

// Gemm-1..6: `broadcast` only permitted what later opsets always allow.
Status convert_gemm_v1(NodeImporter& n, std::string_view op) {
  n.take_attr("broadcast");
  return n.emit(op, n.inputs(), n.attrs());
}

// ThresholdedRelu: y = x > alpha ? x : 0 (ONNX function body).
Status convert_thresholded_relu(NodeImporter& n, std::string_view) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  const DTypeCode d = n.input_type(0)->dtype;
  double alpha = 1.0;
  if (const auto* v = get<double>(n.attrs(), "alpha")) alpha = *v;
  FRAME_ASSIGN_OR_RETURN(Tensor at, attr_scalar(n, d, alpha, "alpha"));
  const ValueId a = n.constant(std::move(at), "alpha");
  const ValueId zero = n.constant(scalar_of(d, 0.0), "zero");
  FRAME_ASSIGN_OR_RETURN(auto gt, n.emit_tmp("greater", {n.input(0), a}, {}));
  return n.emit("where", {gt[0], n.input(0), zero}, {});
}

// Shrink: x < -lambd ? x + bias : (x > lambd ? x - bias : 0).
Status convert_shrink(NodeImporter& n, std::string_view) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  const DTypeCode d = n.input_type(0)->dtype;
  double lambd = 0.5;
  double bias = 0.0;
  if (const auto* v = get<double>(n.attrs(), "lambd")) lambd = *v;
  if (const auto* v = get<double>(n.attrs(), "bias")) bias = *v;
  const ValueId x = n.input(0);
  FRAME_ASSIGN_OR_RETURN(Tensor lt, attr_scalar(n, d, lambd, "lambd"));
  FRAME_ASSIGN_OR_RETURN(Tensor nlt, attr_scalar(n, d, -lambd, "lambd"));
  FRAME_ASSIGN_OR_RETURN(Tensor bt, attr_scalar(n, d, bias, "bias"));
  const ValueId pl = n.constant(std::move(lt), "lambd");
  const ValueId nl = n.constant(std::move(nlt), "neg_lambd");
  const ValueId b = n.constant(std::move(bt), "bias");
  const ValueId zero = n.constant(scalar_of(d, 0.0), "zero");
  FRAME_ASSIGN_OR_RETURN(auto lo, n.emit_tmp("less", {x, nl}, {}));
  FRAME_ASSIGN_OR_RETURN(auto hi, n.emit_tmp("greater", {x, pl}, {}));
  FRAME_ASSIGN_OR_RETURN(auto xpb, n.emit_tmp("add", {x, b}, {}));
  FRAME_ASSIGN_OR_RETURN(auto xmb, n.emit_tmp("sub", {x, b}, {}));
  FRAME_ASSIGN_OR_RETURN(auto inner, n.emit_tmp("where", {hi[0], xmb[0], zero}, {}));
  return n.emit("where", {lo[0], xpb[0], inner[0]}, {});
}

// MeanVarianceNormalization (ONNX function body): (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9).
Status convert_mvn(NodeImporter& n, std::string_view) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  const DTypeCode d = n.input_type(0)->dtype;
  std::vector<int64_t> axes = {0, 2, 3};
  if (const auto* v = get<std::vector<int64_t>>(n.attrs(), "axes")) axes = *v;
  const ValueId x = n.input(0);
  AttrMap red = {{"axes", axes}, {"keepdims", int64_t{1}}};
  FRAME_ASSIGN_OR_RETURN(auto mean, n.emit_tmp("reduce_mean", {x}, red));
  FRAME_ASSIGN_OR_RETURN(auto x2, n.emit_tmp("mul", {x, x}, {}));
  FRAME_ASSIGN_OR_RETURN(auto ex2, n.emit_tmp("reduce_mean", {x2[0]}, red));
  FRAME_ASSIGN_OR_RETURN(auto m2, n.emit_tmp("mul", {mean[0], mean[0]}, {}));
  FRAME_ASSIGN_OR_RETURN(auto var, n.emit_tmp("sub", {ex2[0], m2[0]}, {}));
  FRAME_ASSIGN_OR_RETURN(auto sd, n.emit_tmp("sqrt", {var[0]}, {}));
  const ValueId eps = n.constant(scalar_of(d, 1e-9), "epsilon");
  FRAME_ASSIGN_OR_RETURN(auto den, n.emit_tmp("add", {sd[0], eps}, {}));
  FRAME_ASSIGN_OR_RETURN(auto num, n.emit_tmp("sub", {x, mean[0]}, {}));
  return n.emit("div", {num[0], den[0]}, {});
}

// Hardmax: one_hot(argmax(x, axis)) in x's dtype; opset < 13 works on the 2-D coercion.
Status convert_hardmax(NodeImporter& n, std::string_view) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  const ir::TensorType t = *n.input_type(0);
  const int64_t r = t.rank();
  int64_t axis = n.opset() < 13 ? 1 : -1;
  if (const auto* v = get<int64_t>(n.attrs(), "axis")) axis = *v;
  if (axis < -r || axis >= std::max<int64_t>(r, 1)) return n.error("axis {} out of range", axis);
  if (axis < 0) axis += r;
  ValueId x = n.input(0);
  // No element: the output is the (empty) input, with no maximum to take over an empty axis.
  if (numel_of(t.shape) == 0) return n.emit("identity", {x}, {});
  // The coercion to 2-D reshapes to [outer, -1], or to [outer, inner] where every dim is known.
  if (n.opset() < 13) {
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < r; ++i) {
      const int64_t d = t.shape[static_cast<size_t>(i)];
      int64_t& part = i < axis ? outer : inner;
      part = d < 0 || part < 0 ? -1 : part * d;
    }
    if (outer < 0) return n.error("input 0 has an unknown dim before axis {}", axis);
    FRAME_ASSIGN_OR_RETURN(auto flat, n.emit_tmp("reshape", {x, n.const_i64({outer, inner})}, {}));
    x = flat[0];
    axis = 1;
  }
  const std::optional<ir::TensorType>& xt = n.graph().value(x).type;
  if (!xt || xt->rank() <= axis) {
    return n.error("input 0 has no axis {} to take the maximum over", axis);
  }
  const int64_t depth = xt->shape[static_cast<size_t>(axis)];
  FRAME_ASSIGN_OR_RETURN(auto idx,
                         n.emit_tmp("arg_max", {x}, {{"axis", axis}, {"keepdims", int64_t{0}}}));
  Tensor values = Tensor::zeros(t.dtype, {2}).value();
  std::memcpy(static_cast<char*>(values.raw_data()) + dtype_size(t.dtype),
              scalar_of(t.dtype, 1.0).raw_data(), dtype_size(t.dtype));
  const ValueId vals = n.constant(std::move(values), "values");
  const ValueId dep = n.constant(Tensor::scalar<int64_t>(depth), "depth");
  if (n.opset() >= 13) return n.emit("one_hot", {idx[0], dep, vals}, {{"axis", axis}});
  FRAME_ASSIGN_OR_RETURN(auto oh, n.emit_tmp("one_hot", {idx[0], dep, vals}, {{"axis", axis}}));
  return n.emit("reshape", {oh[0], n.const_i64(t.shape)}, {});
}

}  // namespace

bool needs_constant_at_import(std::string_view domain, std::string_view op_type, int opset,
                              size_t input) {
  if (!domain.empty() && domain != "ai.onnx") return false;
  return (op_type == "ReverseSequence" && input == 1) || (op_type == "MaxUnpool" && input == 2) ||
         (op_type == "Scan" && opset < 9 && input == 0);
}

bool reads_only_type_at_import(std::string_view domain, std::string_view op_type, size_t input) {
  if (!domain.empty() && domain != "ai.onnx") return false;
  return input == 0 && (op_type == "Shape" || op_type == "Size" || op_type == "EyeLike" ||
                        op_type == "RandomNormalLike" || op_type == "RandomUniformLike");
}

namespace {

// ReverseSequence: gather_elements along time_axis with an index tensor built from the
// (constant) sequence_lens: index t < len[b] ? len[b] - 1 - t : t.
// Compress-9/11: the kept indices are non_zero(condition); the result is a gather of them
// along `axis` (of the flattened input when absent). A session runs Compress eagerly with its
// inputs known (ADR 0008), so every emitted node folds.
Status convert_compress(NodeImporter& n, std::string_view) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  FRAME_RETURN_IF_ERROR(expect_type(n, 1));
  // Copies: emitting nodes may move the graph's value table.
  const ir::TensorType x = *n.input_type(0);
  const ir::TensorType c = *n.input_type(1);
  if (c.shape.size() != 1) {
    return n.error("input 1 (condition) must be 1-D, got {}", shape_to_string(c.shape));
  }
  ir::ValueId data = n.input(0);
  int64_t axis = 0;
  int64_t dim = 1;
  if (const int64_t* a = get<int64_t>(n.attrs(), "axis")) {
    const int64_t r = static_cast<int64_t>(x.shape.size());
    if (*a < -r || *a >= r) return n.error("axis {} out of range for rank {}", *a, r);
    axis = *a < 0 ? *a + r : *a;
    dim = x.shape[static_cast<size_t>(axis)];
  } else {
    for (int64_t d : x.shape) dim *= d;
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::ValueId> flat,
                           n.emit_tmp("reshape", {data, n.const_i64({-1})}, {}));
    data = flat[0];
  }
  ir::ValueId cond = n.input(1);
  if (c.shape[0] > dim) {
    // Entries past the last slice select nothing that exists: dropped (as ONNX Runtime does).
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::ValueId> cut,
                           n.emit_tmp("slice", {cond, n.const_i64({0}), n.const_i64({dim})}, {}));
    cond = cut[0];
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::ValueId> nz, n.emit_tmp("non_zero", {cond}, {}));
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::ValueId> idx,
                         n.emit_tmp("reshape", {nz[0], n.const_i64({-1})}, {}));
  ir::AttrMap attrs;
  attrs["axis"] = axis;
  n.attrs().clear();
  return n.emit("gather", {data, idx[0]}, std::move(attrs));
}

Status convert_reverse_sequence(NodeImporter& n, std::string_view) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  const Tensor* lens = n.input_constant(1);
  if (lens == nullptr) {
    return n.error(
        "input 1 (sequence_lens) must be a constant (ARCH-044: the gather index is "
        "built at import)");
  }
  const Shape& s = n.input_type(0)->shape;
  const int64_t r = static_cast<int64_t>(s.size());
  const int64_t batch_axis =
      get<int64_t>(n.attrs(), "batch_axis") ? *get<int64_t>(n.attrs(), "batch_axis") : 1;
  const int64_t time_axis =
      get<int64_t>(n.attrs(), "time_axis") ? *get<int64_t>(n.attrs(), "time_axis") : 0;
  if (r < 2 || batch_axis < 0 || batch_axis > 1 || time_axis < 0 || time_axis > 1 ||
      batch_axis == time_axis) {
    return n.error(
        "batch_axis {} / time_axis {} must be 0 and 1 (in either order) of a rank >= 2 "
        "input",
        batch_axis, time_axis);
  }
  const std::vector<int64_t> len = lens->to_int64_vector();
  if (static_cast<int64_t>(len.size()) != s[static_cast<size_t>(batch_axis)]) {
    return n.error("sequence_lens has {} values, batch dim is {}", len.size(),
                   s[static_cast<size_t>(batch_axis)]);
  }
  FRAME_RETURN_IF_ERROR(n.check_constant_size(DTypeCode::kInt64, s, "the index constant"));
  FRAME_ASSIGN_OR_RETURN(Tensor idx, Tensor::zeros(DTypeCode::kInt64, s));
  const std::vector<int64_t> strides = contiguous_strides(s);
  int64_t* p = idx.data<int64_t>();
  for (int64_t i = 0; i < idx.numel(); ++i) {
    const int64_t b =
        (i / strides[static_cast<size_t>(batch_axis)]) % s[static_cast<size_t>(batch_axis)];
    const int64_t t =
        (i / strides[static_cast<size_t>(time_axis)]) % s[static_cast<size_t>(time_axis)];
    const int64_t l =
        std::clamp<int64_t>(len[static_cast<size_t>(b)], 0, s[static_cast<size_t>(time_axis)]);
    p[i] = t < l ? l - 1 - t : t;
  }
  return n.emit("gather_elements", {n.input(0), n.constant(std::move(idx), "index")},
                {{"axis", time_axis}});
}

// LSTM/GRU/RNN-1: `output_sequence` only said whether Y was wanted; Y is always computed.
Status convert_recurrent_v1(NodeImporter& n, std::string_view op) {
  n.take_attr("output_sequence");
  return n.emit(op, n.inputs(), n.attrs());
}

// RoiAlign-10: no coordinate_transformation_mode attribute; it behaves as output_half_pixel.
Status convert_roi_align_v10(NodeImporter& n, std::string_view op) {
  n.attrs()["coordinate_transformation_mode"] = std::string("output_half_pixel");
  return n.emit(op, n.inputs(), n.attrs());
}

// MaxUnpool: scatter X into zeros at the flat indices I (MaxPool's Indices, relative to the
// default unpooled shape); a larger output_shape pads zeros at the end of each dim.
Status convert_max_unpool(NodeImporter& n, std::string_view) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  const ir::TensorType& x = *n.input_type(0);
  const auto* ks = get<std::vector<int64_t>>(n.attrs(), "kernel_shape");
  if (ks == nullptr) return n.error("attribute 'kernel_shape' is required");
  const size_t k = ks->size();
  std::vector<int64_t> strides(k, 1);
  std::vector<int64_t> pads(2 * k, 0);
  if (const auto* v = get<std::vector<int64_t>>(n.attrs(), "strides")) strides = *v;
  if (const auto* v = get<std::vector<int64_t>>(n.attrs(), "pads")) pads = *v;
  if (x.rank() != static_cast<int64_t>(k) + 2 || strides.size() != k || pads.size() != 2 * k) {
    return n.error("kernel_shape/strides/pads do not match input {}", x.to_string());
  }
  Shape def = {x.shape[0], x.shape[1]};
  for (size_t i = 0; i < k; ++i) {
    def.push_back((x.shape[i + 2] - 1) * strides[i] - pads[i] - pads[i + k] + (*ks)[i]);
  }
  Shape out = def;
  if (const Tensor* os = n.input_constant(2)) {
    out = os->to_int64_vector();
  } else if (n.input(2) != ir::kNoValue) {
    return n.error("input 2 (output_shape) must be a constant (ARCH-044)");
  }
  if (out.size() != def.size()) return n.error("output_shape has rank {}", out.size());
  std::vector<int64_t> extra(2 * def.size(), 0);
  bool padded = false;
  for (size_t i = 0; i < def.size(); ++i) {
    if (out[i] < def[i]) {
      return n.error("output_shape {} is smaller than the unpooled shape {}", shape_to_string(out),
                     shape_to_string(def));
    }
    extra[def.size() + i] = out[i] - def[i];
    padded |= out[i] != def[i];
  }
  Result<int64_t> total = checked_numel(def);
  if (!total.is_ok()) return n.error("bad output shape {}", shape_to_string(def));
  Tensor zero = Tensor::zeros(x.dtype, {1}).value();
  FRAME_ASSIGN_OR_RETURN(
      auto zeros, n.emit_tmp("constant_of_shape", {n.const_i64({*total})}, {{"value", zero}}));
  FRAME_ASSIGN_OR_RETURN(auto flat_x, n.emit_tmp("reshape", {n.input(0), n.const_i64({-1})}, {}));
  FRAME_ASSIGN_OR_RETURN(auto flat_i, n.emit_tmp("reshape", {n.input(1), n.const_i64({-1})}, {}));
  FRAME_ASSIGN_OR_RETURN(auto scat, n.emit_tmp("scatter_elements", {zeros[0], flat_i[0], flat_x[0]},
                                               {{"axis", int64_t{0}}}));
  if (!padded) return n.emit("reshape", {scat[0], n.const_i64(def)}, {});
  FRAME_ASSIGN_OR_RETURN(auto y, n.emit_tmp("reshape", {scat[0], n.const_i64(def)}, {}));
  return n.emit("pad", {y[0], n.const_i64(extra)}, {});
}

// ---- control flow (ADR 0006 decision 5) ----------------------------------------------------
// Bodies are imported with their formal inputs typed from the node's inputs; values they read
// from enclosing scopes become trailing node inputs (docs/architecture/ir-design.md).

AttrMap with_body(AttrMap a, const char* name, std::shared_ptr<ir::Graph> body) {
  a[name] = AttrValue(std::shared_ptr<const ir::Graph>(std::move(body)));
  return a;
}

// If-1..21: cond, then the captured values both branches read.
Status convert_if(NodeImporter& n, std::string_view op) {
  FRAME_RETURN_IF_ERROR(expect_type(n, 0));
  std::vector<ValueId> caps;
  FRAME_ASSIGN_OR_RETURN(auto then_b, n.import_body("then_branch", {}, caps));
  const size_t then_caps = caps.size();
  FRAME_ASSIGN_OR_RETURN(auto else_b, n.import_body("else_branch", {}, caps));
  n.add_capture_inputs(*then_b, caps, then_caps);
  std::vector<ValueId> in = {n.input(0)};
  in.insert(in.end(), caps.begin(), caps.end());
  AttrMap a = with_body(n.attrs(), "then_branch", std::move(then_b));
  a = with_body(std::move(a), "else_branch", std::move(else_b));
  return n.emit(op, in, std::move(a));
}

// Most iterations a Loop is unrolled into at import (see unroll_loop).
constexpr int64_t kMaxUnrolledIterations = 256;

// A Loop whose body is static only for a known iteration number (e.g. Slice starts computed
// from it, ONNX test_loop11) cannot be one `loop` node (ARCH-044). With constant M and cond it
// is unrolled instead: iteration i is the body imported with i and cond as constants, emitted
// as an `if` with a constant true condition (the body as branch, carried and captured values
// as its inputs), which the If decomposition inlines (ARCH-021). Each iteration's condition
// output must fold to a constant: true continues, false stops. Scan outputs are the slices
// unsqueezed and concatenated. Zero iterations (M <= 0 or cond false) leave the carried values
// as they enter and give empty scan outputs, their slice types taken from the body imported
// for iteration 0. A carried value may change shape between iterations: each iteration is
// imported with the types it starts with. `why` is the error of the ordinary import, returned when
// the loop does not qualify.
Status unroll_loop(NodeImporter& n, const std::vector<ValueId>& in,
                   const std::vector<ir::TensorType>& formal, const Status& why) {
  const auto& mv = n.graph().value(in[0]).constant;
  const auto& cv = n.graph().value(in[1]).constant;
  const Tensor* m = mv ? &*mv : nullptr;
  const Tensor* c = cv ? &*cv : nullptr;
  if (m == nullptr || c == nullptr || m->numel() != 1 || c->numel() != 1) return why;
  // Read now: emitting nodes below may move the graph's value table (and these constants).
  const int64_t m_value = m->element_as_int64(0);
  const int64_t trips = c->element_as_int64(0) == 0 ? 0 : std::max<int64_t>(0, m_value);
  const size_t n_carried = formal.size() - 2;
  std::vector<std::optional<Tensor>> values(formal.size());
  std::vector<ValueId> caps;
  std::vector<ValueId> carried(in.begin() + 2, in.end());
  // Each iteration is imported with the types its carried values have when it starts: a value
  // may change shape from one iteration to the next (ONNX allows it; torchvision's mask paste
  // concatenates one mask per iteration), and every unrolled iteration is static on its own.
  std::vector<ir::TensorType> types = formal;
  std::vector<std::vector<ValueId>> slices;
  std::shared_ptr<ir::Graph> first_body;
  const ValueId yes = n.constant(Tensor::scalar<bool>(true), "unrolled_cond");
  bool stopped = false;
  // Iteration 0 is imported even for zero trips: its outputs give the scan slice types.
  for (int64_t i = 0; i < std::max<int64_t>(trips, 1) && !stopped; ++i) {
    if (i == kMaxUnrolledIterations) {
      return n.error(
          "the body is static only for a known iteration number, so the loop is unrolled at "
          "import, at most {} iterations (the unroll limit); the trip count M is {} and the "
          "condition is still true after {} iterations (the body needed: {})",
          kMaxUnrolledIterations, m_value, kMaxUnrolledIterations, why.message());
    }
    values[0] = Tensor::scalar<int64_t>(i);
    values[1] = Tensor::scalar<bool>(true);
    Result<std::shared_ptr<ir::Graph>> b = n.import_body("body", types, caps, values);
    if (!b.is_ok() && trips == 0 && n.num_outputs() <= n_carried) {
      // Zero iterations and no scan outputs: the carried values pass through. The body may
      // not even import for iteration 0 (it indexes per-detection values, and there are none).
      for (size_t j = 0; j < n_carried; ++j) FRAME_RETURN_IF_ERROR(n.bind_output(j, carried[j]));
      return Status();
    }
    if (!b.is_ok()) return why;
    const ir::Graph& g = **b;
    if (g.outputs().empty() || g.outputs().size() < 1 + n_carried) return why;
    const ir::Value& cond_out = g.value(g.outputs()[0]);
    const bool known = cond_out.constant && cond_out.constant->numel() == 1;
    if (!known && trips > 0) return why;  // zero trips never read it
    stopped = known && cond_out.constant->element_as_int64(0) == 0;
    const size_t n_out = g.outputs().size();
    if (i == 0) {
      first_body = *b;
      slices.resize(n_out - 1 - n_carried);
    }
    if (trips == 0) break;
    std::vector<ValueId> ins = {yes};
    ins.insert(ins.end(), carried.begin(), carried.end());
    ins.insert(ins.end(), caps.begin(), caps.end());
    std::shared_ptr<const ir::Graph> body = std::move(b).value();
    FRAME_ASSIGN_OR_RETURN(std::vector<ValueId> outs,
                           n.emit_tmp("if", ins, {{"then_branch", body}, {"else_branch", body}},
                                      static_cast<int>(n_out)));
    for (size_t j = 0; j < n_carried; ++j) {
      carried[j] = outs[1 + j];
      types[2 + j] = *n.graph().value(outs[1 + j]).type;
    }
    for (size_t j = 0; j < slices.size(); ++j) slices[j].push_back(outs[1 + n_carried + j]);
  }
  if (trips == 0) {
    for (size_t j = 0; j < n_carried; ++j) FRAME_RETURN_IF_ERROR(n.bind_output(j, carried[j]));
    const ir::Graph& b0 = *first_body;
    for (size_t j = 0; j < slices.size(); ++j) {
      const auto& t = b0.value(b0.outputs()[1 + n_carried + j]).type;
      if (!t) return why;
      Shape s = t->shape;
      s.insert(s.begin(), 0);
      FRAME_ASSIGN_OR_RETURN(Tensor empty, Tensor::zeros(t->dtype, s));
      FRAME_RETURN_IF_ERROR(
          n.bind_output(n_carried + j, n.constant(std::move(empty), "empty_scan")));
    }
    return Status();
  }
  for (size_t j = 0; j < n_carried; ++j) FRAME_RETURN_IF_ERROR(n.bind_output(j, carried[j]));
  for (size_t j = 0; j < slices.size(); ++j) {
    std::vector<ValueId> parts;
    for (ValueId s : slices[j]) {
      FRAME_ASSIGN_OR_RETURN(auto u, n.emit_tmp("unsqueeze", {s, n.const_i64({0})}, {}));
      parts.push_back(u[0]);
    }
    FRAME_ASSIGN_OR_RETURN(auto cat, n.emit_tmp("concat", parts, {{"axis", int64_t{0}}}));
    FRAME_RETURN_IF_ERROR(n.bind_output(n_carried + j, cat[0]));
  }
  return Status();
}

// Loop-1..21: an omitted M is "no bound" (ops::cf::kNoTripCount), an omitted cond is true.
Status convert_loop(NodeImporter& n, std::string_view op) {
  std::vector<ValueId> in = {n.input(0), n.input(1)};
  if (in[0] == ir::kNoValue)
    in[0] = n.constant(Tensor::scalar<int64_t>(ops::cf::kNoTripCount), "M");
  if (in[1] == ir::kNoValue) in[1] = n.constant(Tensor::scalar<bool>(true), "cond");
  std::vector<ir::TensorType> formal = {ir::TensorType{DTypeCode::kInt64, {}},
                                        ir::TensorType{DTypeCode::kBool, {}}};
  for (size_t i = 2; i < n.num_inputs(); ++i) {
    FRAME_RETURN_IF_ERROR(expect_type(n, i));
    formal.push_back(*n.input_type(i));
    in.push_back(n.input(i));
  }
  std::vector<ValueId> caps;
  Result<std::shared_ptr<ir::Graph>> body = n.import_body("body", formal, caps);
  if (!body.is_ok()) {
    if (body.status().message().find("must be a constant") == std::string::npos) {
      return body.status();
    }
    return unroll_loop(n, in, formal, body.status());
  }
  // A carried value that changes shape between iterations (a tensor grown by Concat per
  // iteration) has no single static type: such a loop is unrolled too, when M and cond are
  // known.
  {
    const ir::Graph& b = **body;
    for (size_t j = 2; j < formal.size() && j - 1 < b.outputs().size(); ++j) {
      const auto& t = b.value(b.outputs()[j - 1]).type;
      if (t && *t != formal[j]) {
        const Status grows = n.error(
            "body '{}': loop-carried value '{}' enters as {} but leaves an iteration as {} "
            "(ARCH-044: a loop-carried value must keep its shape across iterations, unless the "
            "loop is unrolled: its trip count and condition must then be constants)",
            b.name(), b.value(b.inputs()[j]).name, formal[j].to_string(), t->to_string());
        return unroll_loop(n, in, formal, grows);
      }
    }
  }
  std::vector<ValueId> all = in;
  all.insert(all.end(), caps.begin(), caps.end());
  AttrMap a = with_body(n.attrs(), "body", std::move(body).value());
  a[ops::cf::kNumCaptured] = static_cast<int64_t>(caps.size());
  return n.emit(op, all, std::move(a));
}

// Scan-8 (batch axis 0, sequence axis 1, optional sequence_lens first) and Scan-9..21
// (scan_input_axes and directions).
Status convert_scan(NodeImporter& n, std::string_view op) {
  const bool v8 = n.opset() < 9;
  const auto* m = get<int64_t>(n.attrs(), "num_scan_inputs");
  if (m == nullptr) return n.error("attribute 'num_scan_inputs' is required");
  const size_t first = v8 ? 1 : 0;
  if (*m < 1) return n.error("attribute 'num_scan_inputs' is {}, expected at least 1", *m);
  if (n.num_inputs() < first + static_cast<size_t>(*m)) {
    return n.error("has {} inputs, fewer than {}num_scan_inputs ({})", n.num_inputs(),
                   v8 ? "1 (sequence_lens) + " : "", *m);
  }
  const size_t n_state = n.num_inputs() - first - static_cast<size_t>(*m);
  std::vector<int64_t> axes;
  if (const auto* v = get<std::vector<int64_t>>(n.attrs(), "scan_input_axes")) axes = *v;
  std::vector<ValueId> in;
  std::vector<ir::TensorType> formal;
  for (size_t i = first; i < n.num_inputs(); ++i) {
    FRAME_RETURN_IF_ERROR(expect_type(n, i));
    ir::TensorType t = *n.input_type(i);
    const size_t k = i - first;
    if (v8) {
      if (t.rank() < (k < n_state ? 1 : 2)) return n.error("input {} lacks batch/sequence axes", i);
      if (k >= n_state) t.shape.erase(t.shape.begin() + 1);
      t.shape.erase(t.shape.begin());
    } else if (k >= n_state) {
      const int64_t given = axes.size() > k - n_state ? axes[k - n_state] : 0;
      const int64_t axis = given < 0 ? given + t.rank() : given;
      if (axis < 0 || axis >= t.rank()) {
        return n.error(
            "attribute 'scan_input_axes' entry {} is {}, expected -{}..{} for scan input {} "
            "(node input {}, {})",
            k - n_state, given, t.rank(), t.rank() - 1, k - n_state, i, t.to_string());
      }
      t.shape.erase(t.shape.begin() + axis);
    }
    formal.push_back(std::move(t));
    in.push_back(n.input(i));
  }
  if (v8 && n.input(0) != ir::kNoValue) {
    // Per-row lengths shorter than the sequence would make the output depend on data.
    const Tensor* lens = n.input_constant(0);
    const ir::TensorType& x = *n.input_type(1 + n_state);
    bool full = lens != nullptr && lens->numel() == x.shape[0];
    for (int64_t b = 0; full && b < lens->numel(); ++b) {
      full = lens->element_as_int64(b) == x.shape[1];
    }
    if (!full) {
      return n.error(
          "input 0 (sequence_lens) is supported only as a constant equal to the "
          "sequence length of every batch row ({} rows of length {}, got {}; a session binds "
          "it as a shape-determining input, ADR 0006)",
          x.shape[0], x.shape[1],
          lens != nullptr ? shape_to_string(lens->to_int64_vector()) : "a run-time value");
    }
  }
  std::vector<ValueId> caps;
  FRAME_ASSIGN_OR_RETURN(auto body, n.import_body("body", formal, caps));
  in.insert(in.end(), caps.begin(), caps.end());
  AttrMap a = with_body(n.attrs(), "body", std::move(body));
  if (v8) {
    if (auto d = n.take_attr("directions")) a["scan_input_directions"] = *d;
    a.erase("directions");
    a["batched"] = int64_t{1};
  }
  a[ops::cf::kNumCaptured] = static_cast<int64_t>(caps.size());
  return n.emit(op, in, std::move(a));
}

#define ROW(op, since, until, frame, fn, note) \
  { "", op, since, until, frame, fn, note }
#define SAME(op, frame) \
  { "", op, 1, 0, frame, nullptr, "" }
#define SINCE(op, since, frame) \
  { "", op, since, 0, frame, nullptr, "" }

const std::vector<OpRow> kRows = {
    // Elementwise unary (ONNX "Operators": math).
    SAME("Abs", "abs"),
    SAME("Neg", "neg"),
    SAME("Exp", "exp"),
    SAME("Log", "log"),
    SAME("Sqrt", "sqrt"),
    SAME("Reciprocal", "reciprocal"),
    SAME("Sin", "sin"),
    SAME("Cos", "cos"),
    SAME("Tan", "tan"),
    SAME("Asin", "asin"),
    SAME("Acos", "acos"),
    SAME("Atan", "atan"),
    SAME("Sinh", "sinh"),
    SAME("Cosh", "cosh"),
    SAME("Tanh", "tanh"),
    SAME("Asinh", "asinh"),
    SAME("Acosh", "acosh"),
    SAME("Atanh", "atanh"),
    SAME("Erf", "erf"),
    SAME("Sigmoid", "sigmoid"),
    SAME("Relu", "relu"),
    SAME("LeakyRelu", "leaky_relu"),
    SAME("Elu", "elu"),
    SAME("Selu", "selu"),
    SAME("Celu", "celu"),
    SAME("Softplus", "softplus"),
    SAME("Softsign", "softsign"),
    SAME("HardSigmoid", "hard_sigmoid"),
    SAME("HardSwish", "hard_swish"),
    SAME("Gelu", "gelu"),
    SAME("Mish", "mish"),
    SAME("Floor", "floor"),
    SAME("Ceil", "ceil"),
    SAME("Round", "round"),
    SAME("Sign", "sign"),
    SAME("Not", "not"),
    SAME("IsNaN", "is_nan"),
    SAME("IsInf", "is_inf"),
    SAME("Identity", "identity"),
    ROW("If", 1, 0, "if", convert_if, "branches imported; captured values -> inputs"),
    ROW("Loop", 1, 0, "loop", convert_loop, "omitted M/cond -> constants; captures -> inputs"),
    ROW("Scan", 8, 8, "scan", convert_scan, "sequence_lens dropped; batched = 1"),
    ROW("Scan", 9, 0, "scan", convert_scan, "captured values -> inputs"),
    ROW("ThresholdedRelu", 10, 0, "where", convert_thresholded_relu, "greater + where"),
    ROW("Shrink", 9, 0, "where", convert_shrink, "less/greater + add/sub + where"),
    // Elementwise binary and variadic (multidirectional broadcasting since opset 7).
    SINCE("Add", 7, "add"),
    SINCE("Sub", 7, "sub"),
    SINCE("Mul", 7, "mul"),
    SINCE("Div", 7, "div"),
    SINCE("Mod", 10, "mod"),
    SINCE("Pow", 7, "pow"),
    SINCE("Equal", 7, "equal"),
    SINCE("Less", 7, "less"),
    SINCE("LessOrEqual", 12, "less_equal"),
    SINCE("Greater", 7, "greater"),
    SINCE("GreaterOrEqual", 12, "greater_equal"),
    SINCE("And", 7, "and"),
    SINCE("Or", 7, "or"),
    SINCE("Xor", 7, "xor"),
    SINCE("BitShift", 11, "bit_shift"),
    SINCE("PRelu", 7, "prelu"),
    SINCE("Where", 9, "where"),
    SINCE("Sum", 6, "sum"),
    SINCE("Mean", 6, "mean"),
    SINCE("Max", 6, "max"),
    SINCE("Min", 6, "min"),
    ROW("Clip", 1, 10, "clip", convert_clip_v6, "min/max attrs -> constant inputs"),
    SINCE("Clip", 11, "clip"),
    // Casts and constants.
    SINCE("Cast", 6, "cast"),
    ROW("CastLike", 15, 0, "cast", convert_cast_like, "to = dtype of input 1"),
    ROW("Constant", 1, 0, "", convert_constant, "becomes a constant"),
    SINCE("ConstantOfShape", 9, "constant_of_shape"),
    ROW("Shape", 1, 0, "", convert_shape, "constant from the concrete input shape"),
    ROW("Size", 1, 0, "", convert_size, "constant from the concrete input shape"),
    ROW("EyeLike", 9, 0, "", convert_eye_like, "constant from the concrete input shape"),
    SINCE("Range", 11, "range"),
    // Data movement.
    ROW("Reshape", 1, 4, "reshape", convert_reshape_v1, "shape attr -> input"),
    SINCE("Reshape", 5, "reshape"),
    SAME("Transpose", "transpose"),
    SINCE("Concat", 4, "concat"),
    ROW("Split", 2, 12, "split", convert_ints_attr_v1<kSplitAttr>, "split attr -> input"),
    SINCE("Split", 13, "split"),
    ROW("Slice", 1, 9, "slice", convert_slice_v1, "starts/ends/axes attrs -> inputs"),
    SINCE("Slice", 10, "slice"),
    SAME("Gather", "gather"),
    SINCE("GatherElements", 11, "gather_elements"),
    SINCE("GatherND", 11, "gather_nd"),
    ROW("Scatter", 9, 10, "scatter_elements", nullptr, "same semantics as ScatterElements"),
    SINCE("ScatterElements", 11, "scatter_elements"),
    SINCE("ScatterND", 11, "scatter_nd"),
    SINCE("Expand", 8, "expand"),
    ROW("Squeeze", 1, 12, "squeeze", convert_ints_attr_v1<kAxesAttr>, "axes attr -> input"),
    SINCE("Squeeze", 13, "squeeze"),
    ROW("Unsqueeze", 1, 12, "unsqueeze", convert_ints_attr_v1<kAxesAttr>, "axes attr -> input"),
    SINCE("Unsqueeze", 13, "unsqueeze"),
    SAME("Flatten", "flatten"),
    ROW("Pad", 1, 10, "pad", convert_pad_v2, "pads/value attrs -> inputs"),
    SINCE("Pad", 11, "pad"),
    SINCE("Tile", 6, "tile"),
    SINCE("OneHot", 9, "one_hot"),
    SAME("DepthToSpace", "depth_to_space"),
    SAME("SpaceToDepth", "space_to_depth"),
    ROW("Upsample", 7, 9, "resize", convert_upsample, "-> resize (asymmetric, floor)"),
    ROW("Resize", 10, 10, "resize", convert_upsample, "-> resize (asymmetric, floor)"),
    SINCE("Resize", 11, "resize"),
    SINCE("Trilu", 14, "trilu"),
    ROW("ReverseSequence", 10, 0, "gather_elements", convert_reverse_sequence,
        "index tensor from constant sequence_lens"),
    SINCE("NonZero", 9, "non_zero"),
    SINCE("Unique", 11, "unique"),
    SINCE("NonMaxSuppression", 10, "non_max_suppression"),
    ROW("Compress", 9, 0, "gather", convert_compress, "non_zero(condition) -> gather"),
    // Linear algebra.
    SAME("MatMul", "matmul"),
    ROW("Gemm", 1, 6, "gemm", convert_gemm_v1, "broadcast attr dropped"),
    SINCE("Gemm", 7, "gemm"),
    SINCE("Einsum", 12, "einsum"),
    // Quantization (QDQ and integer-arithmetic ops).
    SINCE("QuantizeLinear", 10, "quantize_linear"),
    SINCE("DequantizeLinear", 10, "dequantize_linear"),
    SINCE("DynamicQuantizeLinear", 11, "dynamic_quantize_linear"),
    SINCE("MatMulInteger", 10, "matmul_integer"),
    SINCE("QLinearMatMul", 10, "qlinear_matmul"),
    SINCE("ConvInteger", 10, "conv_integer"),
    SINCE("QLinearConv", 10, "qlinear_conv"),
    // Neural network.
    SAME("Conv", "conv"),
    SAME("ConvTranspose", "conv_transpose"),
    SAME("AveragePool", "average_pool"),
    SAME("MaxPool", "max_pool"),
    ROW("MaxUnpool", 9, 0, "scatter_elements", convert_max_unpool,
        "constant_of_shape + reshape + scatter_elements"),
    SAME("GlobalAveragePool", "global_average_pool"),
    SAME("GlobalMaxPool", "global_max_pool"),
    ROW("BatchNormalization", 1, 8, "batch_normalization", convert_batchnorm_v1,
        "legacy spatial/is_test attrs dropped"),
    ROW("BatchNormalization", 9, 0, "batch_normalization", convert_batchnorm_v9, ""),
    SAME("InstanceNormalization", "instance_normalization"),
    ROW("LayerNormalization", 17, 0, "layer_normalization", nullptr,
        "Scale/B broadcast to `X.shape[axis:]`, with leading 1s up to X's rank (`[1, 1, H]`)"),
    SAME("LRN", "lrn"),
    ROW("MeanVarianceNormalization", 9, 0, "div", convert_mvn, "ONNX function body"),
    ROW("Softmax", 1, 12, "softmax", convert_softmax_v1, "legacy_flatten=1, axis default 1"),
    SINCE("Softmax", 13, "softmax"),
    ROW("LogSoftmax", 1, 12, "log_softmax", convert_softmax_v1, "legacy_flatten=1, axis default 1"),
    SINCE("LogSoftmax", 13, "log_softmax"),
    ROW("Hardmax", 1, 0, "one_hot", convert_hardmax, "arg_max + one_hot"),
    // Loss and signal ops (issue 11): losses opset 12/13, windows/MelWeightMatrix/DFT 17, Det 11.
    SINCE("NegativeLogLikelihoodLoss", 12, "negative_log_likelihood_loss"),
    ROW("SoftmaxCrossEntropyLoss", 12, 0, "softmax_cross_entropy_loss", nullptr,
        "decomposes to log_softmax + NLL"),
    ROW("HannWindow", 17, 0, "hann_window", nullptr, "decomposes to range/mul/cos"),
    ROW("HammingWindow", 17, 0, "hamming_window", nullptr, "decomposes to range/mul/cos"),
    ROW("BlackmanWindow", 17, 0, "blackman_window", nullptr, "decomposes to range/mul/cos"),
    SINCE("MelWeightMatrix", 17, "mel_weight_matrix"),
    SINCE("Det", 11, "det"),
    ROW("DFT", 17, 19, "dft", nullptr, ""),
    ROW("DFT", 20, 0, "dft", convert_dft_v20, "axis input -> attribute (default -2)"),
    ROW("STFT", 17, 0, "stft", nullptr, ""),
    // Sampling ops (issue 11): GridSample 16/20 (4-D only; shape inference rejects N-D),
    // RoiAlign 10/16, TfIdfVectorizer 9 (pool_int64s only).
    ROW("GridSample", 16, 0, "grid_sample", nullptr,
        "4-D input only (opset 20's `linear`/`cubic` accepted)"),
    ROW("RoiAlign", 10, 15, "roi_align", convert_roi_align_v10,
        "coordinate_transformation_mode = output_half_pixel"),
    SINCE("RoiAlign", 16, "roi_align"),
    ROW("TfIdfVectorizer", 9, 0, "tf_idf_vectorizer", nullptr,
        "integer inputs (`pool_int64s`) only"),
    ROW("Dropout", 1, 11, "dropout", convert_dropout_v1, "ratio attr -> input"),
    SINCE("Dropout", 12, "dropout"),
    // Recurrent: one node per sequence; sequence_lens stays a run-time input.
    ROW("LSTM", 1, 6, "lstm", convert_recurrent_v1, "output_sequence attr dropped"),
    SINCE("LSTM", 7, "lstm"),
    ROW("GRU", 1, 6, "gru", convert_recurrent_v1, "output_sequence attr dropped"),
    SINCE("GRU", 7, "gru"),
    ROW("RNN", 1, 6, "rnn", convert_recurrent_v1, "output_sequence attr dropped"),
    SINCE("RNN", 7, "rnn"),
    // Reductions (axes attribute or, from ReduceSum-13 / opset 18, input: both accepted).
    SAME("ReduceSum", "reduce_sum"),
    SAME("ReduceMean", "reduce_mean"),
    SAME("ReduceMax", "reduce_max"),
    SAME("ReduceMin", "reduce_min"),
    SAME("ReduceProd", "reduce_prod"),
    SAME("ReduceL1", "reduce_l1"),
    SAME("ReduceL2", "reduce_l2"),
    SAME("ReduceLogSum", "reduce_log_sum"),
    SAME("ReduceLogSumExp", "reduce_log_sum_exp"),
    SAME("ReduceSumSquare", "reduce_sum_square"),
    SAME("ArgMax", "arg_max"),
    SAME("ArgMin", "arg_min"),
    SINCE("CumSum", 11, "cumsum"),
    ROW("TopK", 1, 9, "top_k", convert_topk_v1, "k attr -> input"),
    SINCE("TopK", 10, "top_k"),
    // Generators.
    SAME("RandomNormal", "random_normal"),
    SAME("RandomUniform", "random_uniform"),
    SAME("RandomNormalLike", "random_normal_like"),
    SAME("RandomUniformLike", "random_uniform_like"),
    SINCE("Bernoulli", 15, "bernoulli"),
};

#undef ROW
#undef SAME
#undef SINCE

// The built-in rows must not overlap: with two rows for one (op type, opset) the first would
// win silently. Checked once at start-up; a fault here is in frame's source (like ARCH-040).
[[maybe_unused]] const bool kRowsChecked = [] {
  std::vector<OpTableEntry> entries;
  for (const OpRow& r : kRows) {
    entries.push_back(OpTableEntry{std::string(r.domain), std::string(r.op_type), r.since, r.until,
                                   std::string(r.frame_op), std::string(r.note)});
  }
  std::vector<std::string> overlaps = op_table_overlaps(entries);
  if (overlaps.empty()) return true;
  for (const std::string& o : overlaps) std::fprintf(stderr, "onnx op table: %s\n", o.c_str());
  std::fprintf(stderr, "onnx op table: %zu overlapping row pair(s) in src/onnx/op_table.cpp\n",
               overlaps.size());
  std::abort();
}();

}  // namespace

const std::vector<OpRow>& op_rows() { return kRows; }

// Rows added at run time by register_custom_op: a deque keeps the strings the rows' views
// point at in place; rows are never removed, so a returned pointer stays valid.
struct CustomRows {
  struct Strings {
    std::string domain, op_type, frame_op;
  };
  std::mutex mu;
  std::deque<Strings> strings;
  std::deque<OpRow> rows;
};

CustomRows& custom_rows() {
  static CustomRows* r = new CustomRows();  // never destroyed: importers may run at exit
  return *r;
}

const OpRow* find_op(std::string_view domain, std::string_view op_type, int opset) {
  for (const OpRow& r : kRows) {
    if (r.domain == domain && r.op_type == op_type && opset >= r.since &&
        (r.until == 0 || opset <= r.until)) {
      return &r;
    }
  }
  if (domain.empty()) return nullptr;  // custom rows never serve the default domain
  CustomRows& c = custom_rows();
  std::lock_guard<std::mutex> lock(c.mu);
  for (const OpRow& r : c.rows) {
    if (r.domain == domain && r.op_type == op_type && opset >= r.since) return &r;
  }
  return nullptr;
}

std::vector<OpRow> custom_op_rows() {
  CustomRows& c = custom_rows();
  std::lock_guard<std::mutex> lock(c.mu);
  return {c.rows.begin(), c.rows.end()};
}

}  // namespace frame::onnx::detail

namespace frame::onnx {

namespace {
// The checks shared by check_custom_op and register_custom_op; `c.mu` is held by the caller.
Status custom_op_error(const detail::CustomRows& c, const std::string& domain,
                       const std::string& op_type, const std::string& frame_op,
                       const std::set<std::string>& pending_ops) {
  if (domain.empty() || domain == "ai.onnx") {
    return invalid_argument(
        "register_custom_op: domain '{}' is the default ONNX domain, whose ops are fixed; map "
        "ops of a custom domain (e.g. 'com.example')",
        domain);
  }
  if (op_type.empty()) return invalid_argument("register_custom_op: empty ONNX op type");
  if (pending_ops.count(frame_op) == 0 && ops::OpRegistry::global().find(frame_op) == nullptr) {
    return not_found("register_custom_op: {}::{} -> '{}': no frame op named '{}' is registered",
                     domain, op_type, frame_op, frame_op);
  }
  for (const detail::OpRow& r : c.rows) {
    if (r.domain == domain && r.op_type == op_type) {
      return make_error(StatusCode::kAlreadyExists,
                        "register_custom_op: {}::{} is already mapped to '{}'", domain, op_type,
                        r.frame_op);
    }
  }
  return Status();
}
}  // namespace

Status check_custom_op(const std::string& domain, const std::string& op_type,
                       const std::string& frame_op, const std::set<std::string>& pending_ops) {
  detail::CustomRows& c = detail::custom_rows();
  std::lock_guard<std::mutex> lock(c.mu);
  return custom_op_error(c, domain, op_type, frame_op, pending_ops);
}

Status register_custom_op(const std::string& domain, const std::string& op_type,
                          const std::string& frame_op) {
  detail::CustomRows& c = detail::custom_rows();
  std::lock_guard<std::mutex> lock(c.mu);
  FRAME_RETURN_IF_ERROR(custom_op_error(c, domain, op_type, frame_op, {}));
  const detail::CustomRows::Strings& str =
      c.strings.emplace_back(detail::CustomRows::Strings{domain, op_type, frame_op});
  c.rows.push_back(detail::OpRow{str.domain, str.op_type, 1, 0, str.frame_op, nullptr,
                                 "custom op (register_custom_op): inputs and attributes as is"});
  return Status();
}

std::vector<OpTableEntry> op_table() {
  std::vector<OpTableEntry> out;
  std::vector<detail::OpRow> rows = detail::op_rows();
  for (const detail::OpRow& r : detail::custom_op_rows()) rows.push_back(r);
  for (const detail::OpRow& r : rows) {
    out.push_back(OpTableEntry{std::string(r.domain), std::string(r.op_type), r.since, r.until,
                               std::string(r.frame_op), std::string(r.note)});
  }
  std::sort(out.begin(), out.end(), [](const OpTableEntry& a, const OpTableEntry& b) {
    return std::tie(a.domain, a.op_type, a.since_opset) <
           std::tie(b.domain, b.op_type, b.since_opset);
  });
  return out;
}

std::vector<std::string> op_table_overlaps(const std::vector<OpTableEntry>& rows) {
  std::vector<std::string> out;
  auto range = [](const OpTableEntry& e) {
    return e.until_opset == 0 ? fmt::format("{}..", e.since_opset)
                              : fmt::format("{}..{}", e.since_opset, e.until_opset);
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = i + 1; j < rows.size(); ++j) {
      const OpTableEntry& a = rows[i];
      const OpTableEntry& b = rows[j];
      if (a.domain != b.domain || a.op_type != b.op_type) continue;
      const int a_end = a.until_opset == 0 ? INT_MAX : a.until_opset;
      const int b_end = b.until_opset == 0 ? INT_MAX : b.until_opset;
      if (a.since_opset <= b_end && b.since_opset <= a_end) {
        out.push_back(fmt::format("{}{}{}: rows for opsets {} (-> '{}') and {} (-> '{}') overlap",
                                  a.domain, a.domain.empty() ? "" : "::", a.op_type, range(a),
                                  a.frame_op, range(b), b.frame_op));
      }
    }
  }
  return out;
}

int max_supported_opset() { return 21; }

}  // namespace frame::onnx
