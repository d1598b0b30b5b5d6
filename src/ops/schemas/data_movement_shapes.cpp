#include "ops/schemas/data_movement_shapes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace frame::ops::dm {

Result<Shape> reshape_shape(const NodeContext& ctx, const Shape& in,
                            const std::vector<int64_t>& spec, bool allowzero) {
  Shape out(spec.size());
  int64_t infer_at = -1, known = 1;
  bool has_zero = false;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v == -1) {
      if (infer_at >= 0) return ctx.error("input 1 (shape) has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (v < -1) return ctx.error("input 1 (shape) has invalid value {} at {}", v, i);
    if (v == 0 && !allowzero) {
      if (i >= in.size()) {
        return ctx.error("input 1 (shape) copies dim {} but the input has rank {}", i, in.size());
      }
      v = in[i];
    }
    has_zero = has_zero || v == 0;
    out[i] = v;
    if (v != 0 && known > std::numeric_limits<int64_t>::max() / v) {
      return ctx.error("input 1 (shape) overflows int64");
    }
    known *= v;
  }
  const int64_t n = numel_of(in);
  if (infer_at >= 0) {
    if (known == 0) {
      return ctx.error("input 1 (shape) {}: cannot infer -1 next to a zero dim",
                       shape_to_string(spec));
    }
    if (n % known != 0) {
      return ctx.error("cannot reshape {} ({} elements) to {}", shape_to_string(in), n,
                       shape_to_string(spec));
    }
    out[static_cast<size_t>(infer_at)] = n / known;
  } else if (known != n) {
    return ctx.error("cannot reshape {} ({} elements) to {} ({} elements)", shape_to_string(in), n,
                     shape_to_string(out), known);
  }
  return out;
}

Result<std::vector<int64_t>> transpose_perm(const NodeContext& ctx, size_t rank) {
  std::vector<int64_t> perm;
  if (const auto* p = ctx.attr<std::vector<int64_t>>("perm")) {
    perm = *p;
  } else {
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  }
  if (perm.size() != rank) {
    return ctx.error("attribute 'perm' has {} entries, expected input rank {}", perm.size(), rank);
  }
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    FRAME_ASSIGN_OR_RETURN(p, normalize_axis(ctx, p, static_cast<int64_t>(rank), "perm entry"));
    if (seen[static_cast<size_t>(p)]) return ctx.error("attribute 'perm' repeats axis {}", p);
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

Result<std::vector<int64_t>> split_sizes(const NodeContext& ctx, const Shape& in) {
  if (in.empty()) return ctx.error("input 0 is a scalar; split needs rank >= 1");
  FRAME_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                                      static_cast<int64_t>(in.size()), "axis"));
  const int64_t dim = in[static_cast<size_t>(axis)];
  const int64_t n_out = static_cast<int64_t>(ctx.num_outputs);
  std::vector<int64_t> sizes;
  if (ctx.has_input(1) && numel_of(ctx.input_types[1].shape) > 0) {
    FRAME_ASSIGN_OR_RETURN(sizes, constant_ints(ctx, 1, "split"));
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) return ctx.error("input 1 (split) has negative size {}", s);
      sum += s;
    }
    if (sum != dim) {
      return ctx.error("input 1 (split) sums to {}, expected axis {} size {}", sum, axis, dim);
    }
  } else if (const int64_t* n = ctx.attr<int64_t>("num_outputs")) {
    if (*n < 1) return ctx.error("attribute 'num_outputs' must be >= 1, got {}", *n);
    const int64_t chunk = (dim + *n - 1) / *n;
    if (chunk * (*n - 1) > dim) {
      return ctx.error("cannot split size {} into {} parts of {} (last part negative)", dim, *n,
                       chunk);
    }
    sizes.assign(static_cast<size_t>(*n), chunk);
    sizes.back() = dim - chunk * (*n - 1);
  } else {
    if (dim % n_out != 0) {
      return ctx.error("axis {} size {} does not split evenly into {} outputs", axis, dim, n_out);
    }
    sizes.assign(static_cast<size_t>(n_out), dim / n_out);
  }
  if (static_cast<int64_t>(sizes.size()) != n_out) {
    return ctx.error("split into {} parts but the node has {} outputs", sizes.size(), n_out);
  }
  return sizes;
}

Result<SliceParams> slice_params(const NodeContext& ctx, const Shape& in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> starts, constant_ints(ctx, 1, "starts"));
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> ends, constant_ints(ctx, 2, "ends"));
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (ctx.has_input(3)) {
    FRAME_ASSIGN_OR_RETURN(axes, constant_ints(ctx, 3, "axes"));
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (ctx.has_input(4)) {
    FRAME_ASSIGN_OR_RETURN(steps, constant_ints(ctx, 4, "steps"));
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return ctx.error("starts, ends, axes and steps have {}, {}, {} and {} values; expected equal",
                     starts.size(), ends.size(), axes.size(), steps.size());
  }
  SliceParams p{in, std::vector<int64_t>(in.size(), 0), std::vector<int64_t>(in.size(), 1)};
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    FRAME_ASSIGN_OR_RETURN(int64_t a, normalize_axis(ctx, axes[i], rank, "input 3 (axes) value"));
    const size_t ua = static_cast<size_t>(a);
    if (seen[ua]) return ctx.error("input 3 (axes) repeats axis {}", a);
    seen[ua] = true;
    const int64_t d = in[ua], step = steps[i];
    if (step == 0) return ctx.error("input 4 (steps) has a zero step for axis {}", a);
    int64_t s = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + d : ends[i];
    int64_t len = 0;
    if (d > 0 && step > 0) {
      s = std::max<int64_t>(0, std::min(s, d));
      e = std::max<int64_t>(0, std::min(e, d));
      len = e > s ? (e - s - 1) / step + 1 : 0;
    } else if (d > 0) {
      s = std::max<int64_t>(0, std::min(s, d - 1));
      e = std::max<int64_t>(-1, std::min(e, d - 1));
      // -step overflows for INT64_MIN; any |step| >= d gives one element anyway.
      const int64_t mag =
          step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
      len = s > e ? (s - e - 1) / mag + 1 : 0;
    }
    p.out_shape[ua] = len;
    p.start[ua] = len > 0 ? s : 0;
    p.step[ua] = step;
  }
  return p;
}

Status check_reduction(const NodeContext& ctx) {
  const std::string r = ctx.attr_or<std::string>("reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min") {
    return ctx.error("attribute 'reduction' is '{}', expected none, add, mul, max or min", r);
  }
  return Status();
}

Result<PadParams> pad_params(const NodeContext& ctx, const Shape& in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  PadParams p{in, std::vector<int64_t>(in.size(), 0), PadMode::kConstant};
  const std::string mode = ctx.attr_or<std::string>("mode", "constant");
  if (mode == "constant") {
    p.mode = PadMode::kConstant;
  } else if (mode == "reflect") {
    p.mode = PadMode::kReflect;
  } else if (mode == "edge") {
    p.mode = PadMode::kEdge;
  } else if (mode == "wrap") {
    p.mode = PadMode::kWrap;
  } else {
    return ctx.error("attribute 'mode' is '{}', expected constant, reflect, edge or wrap", mode);
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> pads, constant_ints(ctx, 1, "pads"));
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    FRAME_ASSIGN_OR_RETURN(axes, constant_ints(ctx, 3, "axes"));
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size()) {
    return ctx.error("input 1 (pads) has {} values, expected 2 * {} axes", pads.size(),
                     axes.size());
  }
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    FRAME_ASSIGN_OR_RETURN(int64_t a, normalize_axis(ctx, axes[i], rank, "input 3 (axes) value"));
    const size_t ua = static_cast<size_t>(a);
    if (seen[ua]) return ctx.error("input 3 (axes) repeats axis {}", a);
    seen[ua] = true;
    const int64_t b = pads[i], e = pads[i + axes.size()], d = in[ua];
    // Pads beyond +-2^60 cannot give a representable dim; reject before adding (no overflow).
    constexpr int64_t kMaxPad = int64_t{1} << 60;
    if (b > kMaxPad || b < -kMaxPad || e > kMaxPad || e < -kMaxPad) {
      return ctx.error("pads {} and {} on axis {} are out of range (|pad| <= 2^60)", b, e, a);
    }
    const int64_t o = d + b + e;
    if (o < 0)
      return ctx.error("pads {} and {} on axis {} of size {} give a negative dim", b, e, a, d);
    if (p.mode != PadMode::kConstant && d == 0 && o > 0) {
      return ctx.error("mode '{}' cannot pad empty axis {}", mode, a);
    }
    if (p.mode == PadMode::kReflect && (b > d - 1 || e > d - 1) && o > d) {
      return ctx.error("mode reflect needs pads < axis size: axis {} has size {}, pads {} and {}",
                       a, d, b, e);
    }
    p.begin[ua] = b;
    p.out_shape[ua] = o;
  }
  return p;
}

namespace {

template <typename E>
Result<E> parse_enum(const NodeContext& ctx, std::string_view attr, std::string_view dflt,
                     std::initializer_list<std::pair<std::string_view, E>> table) {
  const std::string v = ctx.attr_or<std::string>(attr, std::string(dflt));
  std::string names;
  for (const auto& [name, e] : table) {
    if (v == name) return e;
    names += names.empty() ? std::string(name) : ", " + std::string(name);
  }
  return ctx.error("attribute '{}' is '{}', expected one of {}", attr, v, names);
}

// Optional input that is present and non-empty (ONNX models pass "" or empty tensors).
bool given(const NodeContext& ctx, size_t i) {
  return ctx.has_input(i) && numel_of(ctx.input_types[i].shape) > 0;
}

}  // namespace

Result<ResizeParams> resize_params(const NodeContext& ctx, const Shape& in) {
  ResizeParams p;
  const int64_t rank = static_cast<int64_t>(in.size());
  FRAME_ASSIGN_OR_RETURN(p.mode, parse_enum<ResizeMode>(ctx, "mode", "nearest",
                                                        {{"nearest", ResizeMode::kNearest},
                                                         {"linear", ResizeMode::kLinear},
                                                         {"cubic", ResizeMode::kCubic}}));
  FRAME_ASSIGN_OR_RETURN(
      p.coord, parse_enum<CoordMode>(ctx, "coordinate_transformation_mode", "half_pixel",
                                     {{"half_pixel", CoordMode::kHalfPixel},
                                      {"half_pixel_symmetric", CoordMode::kHalfPixelSymmetric},
                                      {"pytorch_half_pixel", CoordMode::kPytorchHalfPixel},
                                      {"align_corners", CoordMode::kAlignCorners},
                                      {"asymmetric", CoordMode::kAsymmetric},
                                      {"tf_crop_and_resize", CoordMode::kTfCropAndResize}}));
  FRAME_ASSIGN_OR_RETURN(
      p.nearest, parse_enum<NearestMode>(ctx, "nearest_mode", "round_prefer_floor",
                                         {{"round_prefer_floor", NearestMode::kRoundPreferFloor},
                                          {"round_prefer_ceil", NearestMode::kRoundPreferCeil},
                                          {"floor", NearestMode::kFloor},
                                          {"ceil", NearestMode::kCeil}}));
  const std::string policy = ctx.attr_or<std::string>("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") {
    return ctx.error(
        "attribute 'keep_aspect_ratio_policy' is '{}', expected stretch, "
        "not_larger or not_smaller",
        policy);
  }
  if (ctx.attr_or<int64_t>("antialias", 0) != 0) {
    return ctx.error("attribute 'antialias' = 1 is not supported");
  }
  p.cubic_a = ctx.attr_or<double>("cubic_coeff_a", -0.75);
  p.exclude_outside = ctx.attr_or<int64_t>("exclude_outside", 0) != 0;
  p.extrapolation_value = ctx.attr_or<double>("extrapolation_value", 0.0);

  std::vector<int64_t> axes;
  if (const auto* a = ctx.attr<std::vector<int64_t>>("axes")) {
    std::vector<bool> seen(in.size(), false);
    for (int64_t v : *a) {
      FRAME_ASSIGN_OR_RETURN(int64_t n, normalize_axis(ctx, v, rank, "attribute 'axes' value"));
      if (seen[static_cast<size_t>(n)]) return ctx.error("attribute 'axes' repeats axis {}", v);
      seen[static_cast<size_t>(n)] = true;
      axes.push_back(n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  const size_t n = axes.size();
  p.out_shape = in;
  p.scale.assign(in.size(), 1.0);
  p.roi_start.assign(in.size(), 0.0);
  p.roi_end.assign(in.size(), 1.0);

  if (p.coord == CoordMode::kTfCropAndResize && given(ctx, 1)) {
    const Tensor* roi = ctx.constant_input(1);
    if (roi == nullptr) {
      return ctx.error("input 1 (roi) must be a constant (ARCH-044: output shape must be static)");
    }
    if (static_cast<size_t>(roi->numel()) != 2 * n) {
      return ctx.error("input 1 (roi) has {} values, expected 2 * {} axes", roi->numel(), n);
    }
    for (size_t i = 0; i < n; ++i) {
      const size_t a = static_cast<size_t>(axes[i]);
      p.roi_start[a] = roi->element_as_double(static_cast<int64_t>(i));
      p.roi_end[a] = roi->element_as_double(static_cast<int64_t>(i + n));
    }
  }
  const bool has_scales = given(ctx, 2), has_sizes = given(ctx, 3);
  if (has_scales == has_sizes) {
    return ctx.error("exactly one of input 2 (scales) and input 3 (sizes) must be given");
  }
  const size_t which = has_scales ? 2 : 3;
  const Tensor* t = ctx.constant_input(which);
  if (t == nullptr) {
    return ctx.error("input {} ({}) must be a constant (ARCH-044: output shape must be static)",
                     which, has_scales ? "scales" : "sizes");
  }
  if (static_cast<size_t>(t->numel()) != n) {
    return ctx.error("input {} has {} values, expected one per resized axis ({})", which,
                     t->numel(), n);
  }
  if (has_scales) {
    for (size_t i = 0; i < n; ++i) {
      const size_t a = static_cast<size_t>(axes[i]);
      const double s = t->element_as_double(static_cast<int64_t>(i));
      if (!(s > 0.0) || !std::isfinite(s)) return ctx.error("input 2 (scales) value {} <= 0", s);
      const double len = static_cast<double>(in[a]) * (p.roi_end[a] - p.roi_start[a]) * s;
      if (!(len >= 0.0) || len > 9.0e18) return ctx.error("output dim {} out of range", a);
      p.scale[a] = s;
      p.out_shape[a] = static_cast<int64_t>(std::floor(len));
    }
    return p;
  }
  std::vector<int64_t> sizes = t->to_int64_vector();
  double common = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
  for (size_t i = 0; i < n; ++i) {
    const size_t a = static_cast<size_t>(axes[i]);
    if (sizes[i] < 0) return ctx.error("input 3 (sizes) has negative value {}", sizes[i]);
    if (in[a] == 0) {
      if (sizes[i] != 0) return ctx.error("cannot resize empty axis {} to {}", a, sizes[i]);
      continue;
    }
    const double r = static_cast<double>(sizes[i]) / static_cast<double>(in[a]);
    common = policy == "not_larger" ? std::min(common, r) : std::max(common, r);
    p.scale[a] = r;
    p.out_shape[a] = sizes[i];
  }
  if (policy != "stretch") {
    for (int64_t a : axes) {
      const size_t ua = static_cast<size_t>(a);
      if (in[ua] == 0) continue;
      p.scale[ua] = common;
      // ONNX rounds half to even (numpy round) when keeping the aspect ratio.
      p.out_shape[ua] = static_cast<int64_t>(std::nearbyint(common * static_cast<double>(in[ua])));
    }
  }
  for (int64_t a : axes) {
    if (p.out_shape[static_cast<size_t>(a)] > 0 && p.scale[static_cast<size_t>(a)] <= 0.0) {
      return ctx.error("axis {} has scale 0 but output size {}", a,
                       p.out_shape[static_cast<size_t>(a)]);
    }
  }
  return p;
}

int resize_axis_taps(const ResizeParams& p, size_t a, int64_t in, int64_t out, int64_t o,
                     int64_t* idx, double* w, bool* outside) {
  int n = 0;
  auto add = [&](int64_t i, double wt) {
    if (wt == 0.0) return;  // zero taps change nothing and keep non-resized axes to one tap
    idx[n] = std::clamp<int64_t>(i, 0, in - 1);
    w[n++] = wt;
  };
  double x = resize_source_coord(p, a, o, in, out);
  *outside = p.coord == CoordMode::kTfCropAndResize && (x < 0.0 || x > static_cast<double>(in - 1));
  if (p.mode == ResizeMode::kNearest) {
    add(resize_nearest_index(p.nearest, x), 1.0);
  } else if (p.mode == ResizeMode::kLinear) {
    x = std::clamp(x, 0.0, static_cast<double>(in - 1));
    const double x0 = std::floor(x), r = x - x0;
    add(static_cast<int64_t>(x0), 1.0 - r);
    add(static_cast<int64_t>(x0) + 1, r);
  } else {
    const double x0 = std::floor(x), r = x - x0, A = p.cubic_a;
    const double d[4] = {r + 1.0, r, 1.0 - r, 2.0 - r};
    double c[4] = {((A * d[0] - 5 * A) * d[0] + 8 * A) * d[0] - 4 * A,
                   ((A + 2) * d[1] - (A + 3)) * d[1] * d[1] + 1,
                   ((A + 2) * d[2] - (A + 3)) * d[2] * d[2] + 1,
                   ((A * d[3] - 5 * A) * d[3] + 8 * A) * d[3] - 4 * A};
    const int64_t base = static_cast<int64_t>(x0) - 1;
    if (p.exclude_outside) {
      double sum = 0.0;
      for (int k = 0; k < 4; ++k) {
        if (base + k < 0 || base + k >= in) c[k] = 0.0;
        sum += c[k];
      }
      for (double& v : c) v = sum != 0.0 ? v / sum : 0.0;
    }
    for (int k = 0; k < 4; ++k) add(base + k, c[k]);
  }
  return n;
}

double resize_source_coord(const ResizeParams& p, size_t a, int64_t o, int64_t in, int64_t out) {
  const double s = p.scale[a], x = static_cast<double>(o);
  const double din = static_cast<double>(in), dout = static_cast<double>(out);
  switch (p.coord) {
    case CoordMode::kHalfPixel:
      return (x + 0.5) / s - 0.5;
    case CoordMode::kHalfPixelSymmetric: {
      const double adjustment = dout / (s * din);
      const double offset = din / 2.0 * (1.0 - adjustment);
      return offset + (x + 0.5) / s - 0.5;
    }
    case CoordMode::kPytorchHalfPixel:
      return out > 1 ? (x + 0.5) / s - 0.5 : 0.0;
    case CoordMode::kAlignCorners:
      // length_resized = in * scale, unrounded, as the ONNX reference computes it (with
      // `sizes`, scale = out / in, so this is the output length).
      return out == 1 ? 0.0 : x * (din - 1.0) / (din * s - 1.0);
    case CoordMode::kAsymmetric:
      return x / s;
    case CoordMode::kTfCropAndResize: {
      const double st = p.roi_start[a], en = p.roi_end[a];
      return out > 1 ? st * (din - 1.0) + x * (en - st) * (din - 1.0) / (dout - 1.0)
                     : 0.5 * (st + en) * (din - 1.0);
    }
  }
  return 0.0;
}

int64_t pad_source_index(PadMode mode, int64_t o, int64_t begin, int64_t d) {
  const int64_t i = o - begin;
  if (i >= 0 && i < d) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : d - 1;
    case PadMode::kWrap:
      return ((i % d) + d) % d;
    case PadMode::kReflect: {
      if (d == 1) return 0;
      const int64_t period = 2 * (d - 1);
      int64_t m = ((i % period) + period) % period;
      return m < d ? m : period - m;
    }
  }
  return -1;
}

int64_t resize_nearest_index(NearestMode m, double x) {
  const double f = std::floor(x);
  switch (m) {
    case NearestMode::kRoundPreferFloor:
      return static_cast<int64_t>(x - f == 0.5 ? f : std::round(x));
    case NearestMode::kRoundPreferCeil:
      return static_cast<int64_t>(x - f == 0.5 ? f + 1.0 : std::round(x));
    case NearestMode::kFloor:
      return static_cast<int64_t>(f);
    case NearestMode::kCeil:
      return static_cast<int64_t>(std::ceil(x));
  }
  return 0;
}

}  // namespace frame::ops::dm
