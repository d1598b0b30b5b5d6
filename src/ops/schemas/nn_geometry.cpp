#include "ops/schemas/nn_geometry.h"

#include <algorithm>
#include <string>

namespace frame::ops::nn {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Reads an ints attribute of the expected length, or `fill` repeated when absent.
Result<std::vector<int64_t>> read_ints(const NodeContext& ctx, const char* name, size_t n,
                                       int64_t fill) {
  const auto* v = ctx.attr<std::vector<int64_t>>(name);
  if (v == nullptr || v->empty()) return std::vector<int64_t>(n, fill);
  if (v->size() != n) {
    return ctx.error("attribute '{}' has {} values, expected {} (one per spatial dim)", name,
                     v->size(), n);
  }
  return *v;
}

}  // namespace

Result<WindowGeometry> resolve_window(const NodeContext& ctx, std::span<const int64_t> in,
                                      std::span<const int64_t> kernel, WindowKind kind) {
  WindowGeometry g;
  const size_t r = in.size();
  g.rank = static_cast<int64_t>(r);
  g.in.assign(in.begin(), in.end());
  g.kernel.assign(kernel.begin(), kernel.end());
  FRAME_ASSIGN_OR_RETURN(g.strides, read_ints(ctx, "strides", r, 1));
  FRAME_ASSIGN_OR_RETURN(g.dilations, read_ints(ctx, "dilations", r, 1));
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> pads, read_ints(ctx, "pads", 2 * r, 0));
  const std::string auto_pad = ctx.attr_or<std::string>("auto_pad", "NOTSET");
  const bool ceil_mode = kind == WindowKind::kPool && ctx.attr_or<int64_t>("ceil_mode", 0) != 0;
  if (kind == WindowKind::kConvTranspose) {
    FRAME_ASSIGN_OR_RETURN(g.output_padding, read_ints(ctx, "output_padding", r, 0));
  }
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID") {
    return ctx.error(
        "attribute 'auto_pad' is '{}', expected NOTSET, SAME_UPPER, SAME_LOWER or "
        "VALID",
        auto_pad);
  }
  std::vector<int64_t> out_shape;
  if (const auto* os = ctx.attr<std::vector<int64_t>>("output_shape");
      kind == WindowKind::kConvTranspose && os != nullptr && !os->empty()) {
    if (os->size() < r) {
      return ctx.error("attribute 'output_shape' has {} values, expected at least {}", os->size(),
                       r);
    }
    out_shape.assign(os->end() - static_cast<std::ptrdiff_t>(r), os->end());
  }
  g.pad_begin.resize(r);
  g.pad_end.resize(r);
  g.out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t s = g.strides[i], d = g.dilations[i], k = g.kernel[i];
    if (s <= 0) return ctx.error("attribute 'strides' must be positive, got {}", s);
    if (d <= 0) return ctx.error("attribute 'dilations' must be positive, got {}", d);
    if (k <= 0) return ctx.error("kernel size must be positive, got {} at spatial dim {}", k, i);
    if (pads[i] < 0 || pads[i + r] < 0) {
      return ctx.error("attribute 'pads' must be non-negative, got {} and {} for spatial dim {}",
                       pads[i], pads[i + r], i);
    }
    // Bound every term so the extent arithmetic below cannot overflow int64.
    constexpr int64_t kMaxGeom = int64_t{1} << 40;
    if (s > kMaxGeom || d > kMaxGeom || k > kMaxGeom || pads[i] > kMaxGeom ||
        pads[i + r] > kMaxGeom || in[i] > kMaxGeom) {
      return ctx.error("spatial dim {}: strides/dilations/kernel/pads/input size must be <= 2^40",
                       i);
    }
    const int64_t dk = (k - 1) * d + 1;  // dilated kernel extent
    if (kind == WindowKind::kConvTranspose) {
      const int64_t op = g.output_padding[i];
      if (op < 0 || (op >= s && op >= d)) {
        return ctx.error(
            "attribute 'output_padding' value {} must be in [0, max(stride, "
            "dilation)) for spatial dim {}",
            op, i);
      }
      const int64_t full = s * (in[i] - 1) + op + dk;
      int64_t target = -1;
      if (!out_shape.empty()) {
        target = out_shape[i];
      } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        target = in[i] * s;
      }
      if (target >= 0) {
        // ONNX ConvTranspose: pads derived from the requested output size.
        // A negative total (output_shape larger than the full transposed size) gives negative
        // pads: the extra positions receive only the bias. Halves use floor division, as the
        // ONNX reference does, so the odd extra position lands at the end.
        const int64_t total = full - target;
        const int64_t half = floor_div(total, 2);
        if (auto_pad == "SAME_UPPER") {
          g.pad_begin[i] = half;
          g.pad_end[i] = total - half;
        } else {
          g.pad_begin[i] = total - half;
          g.pad_end[i] = half;
        }
      } else if (auto_pad == "VALID") {
        g.pad_begin[i] = g.pad_end[i] = 0;
      } else {
        g.pad_begin[i] = pads[i];
        g.pad_end[i] = pads[i + r];
      }
      g.out[i] = full - g.pad_begin[i] - g.pad_end[i];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[i] = ceil_div(in[i], s);
      const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * s + dk - in[i]);
      // SAME_UPPER puts the odd extra pad at the end, SAME_LOWER at the beginning.
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
    } else {
      if (auto_pad == "VALID") {
        g.pad_begin[i] = g.pad_end[i] = 0;
      } else {
        g.pad_begin[i] = pads[i];
        g.pad_end[i] = pads[i + r];
      }
      const int64_t span = in[i] + g.pad_begin[i] + g.pad_end[i] - dk;
      if (ceil_mode) {
        g.out[i] = ceil_div(span, s) + 1;
        // The last window must start inside the input or the begin pad (as PyTorch/ORT).
        if (g.out[i] > 0 && (g.out[i] - 1) * s >= in[i] + g.pad_begin[i]) --g.out[i];
      } else {
        g.out[i] = floor_div(span, s) + 1;
      }
    }
    if (g.out[i] <= 0) {
      return ctx.error(
          "non-positive output size {} at spatial dim {} (input {}, kernel {}, "
          "dilation {}, stride {}, pads {}+{})",
          g.out[i], i, in[i], k, d, s, g.pad_begin[i], g.pad_end[i]);
    }
  }
  return g;
}

}  // namespace frame::ops::nn

namespace frame::ops::nn {

Result<std::vector<bool>> resolve_reduce_axes(const NodeContext& ctx, int64_t rank,
                                              const Tensor* axes_input) {
  std::vector<int64_t> axes;
  if (axes_input != nullptr) {
    if (axes_input->rank() > 1) {
      return ctx.error("input 1 (axes) must be 1-D, got shape {}",
                       shape_to_string(axes_input->shape()));
    }
    axes = axes_input->to_int64_vector();
  } else if (const auto* a = ctx.attr<std::vector<int64_t>>("axes"); a != nullptr) {
    axes = *a;
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    if (ctx.attr_or<int64_t>("noop_with_empty_axes", 0) == 0) reduced.assign(reduced.size(), true);
    return reduced;
  }
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      return ctx.error("axis {} is out of range for input 0 of rank {} (expected [{}, {}])", a,
                       rank, -rank, rank - 1);
    }
    const size_t n = static_cast<size_t>(a < 0 ? a + rank : a);
    if (reduced[n]) return ctx.error("axis {} is repeated in axes", a);
    reduced[n] = true;
  }
  return reduced;
}

}  // namespace frame::ops::nn
