// Sampling schemas: GridSample (ONNX opset 16, 4-D), RoiAlign (opset 10/16) and
// TfIdfVectorizer (opset 9, integer inputs).

#include <string>
#include <vector>

#include "frame/ops/op_schema.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using ir::TensorType;

Result<std::vector<TensorType>> infer_grid_sample(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  const TensorType& g = ctx.input_types[1];
  if (x.rank() != 4) {
    return ctx.error("input 0 (X) expects rank 4 [N, C, H, W], got {}", shape_to_string(x.shape));
  }
  if (g.rank() != 4 || g.shape[3] != 2 || g.shape[0] != x.shape[0]) {
    return ctx.error("input 1 (grid) expects [{}, H_out, W_out, 2], got {}", x.shape[0],
                     shape_to_string(g.shape));
  }
  const std::string mode = ctx.attr_or<std::string>("mode", "bilinear");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic" && mode != "linear" &&
      mode != "cubic") {
    return ctx.error("attribute 'mode' must be 'bilinear', 'nearest' or 'bicubic', got '{}'", mode);
  }
  const std::string pad = ctx.attr_or<std::string>("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection") {
    return ctx.error("attribute 'padding_mode' must be 'zeros', 'border' or 'reflection', got '{}'",
                     pad);
  }
  return one_output(x.dtype, {x.shape[0], x.shape[1], g.shape[1], g.shape[2]});
}

FRAME_REGISTER_OP(grid_sample)
    .doc(
        "ONNX GridSample (opset 16; 4-D only): Y[n, c, h, w] samples X[n, c] at grid[n, h, w] = "
        "(x, y) normalised to [-1, 1] (x along W). Pixel coordinates: (v + 1) / 2 * (L - 1) "
        "with align_corners=1, ((v + 1) * L - 1) / 2 otherwise. mode bilinear, nearest (round "
        "half to even) or bicubic (4x4 taps, A = -0.75); 'linear'/'cubic' (opset 20 names) are "
        "accepted too. padding_mode: zeros (outside taps read 0), border (an outside point is "
        "clamped to [0, L - 1], taps clamped), reflection (an outside point is reflected at the "
        "borders [0, L - 1] or [-0.5, L - 0.5], taps reflected), as the ONNX reference does.")
    .input("X", "[N, C, H, W]", kFloatDTypes, "T")
    .input("grid", "[N, H_out, W_out, 2] normalised (x, y)", kFloatDTypes, "T")
    .output("Y", "[N, C, H_out, W_out]", kFloatDTypes, "T")
    .attr("align_corners", AttrType::kInt, "1 = -1/1 are the centres of the corner pixels",
          int64_t{0})
    .attr("mode", AttrType::kString, "'bilinear', 'nearest' or 'bicubic'", std::string("bilinear"))
    .attr("padding_mode", AttrType::kString, "'zeros', 'border' or 'reflection'",
          std::string("zeros"))
    .shape_infer(infer_grid_sample);

Result<std::vector<TensorType>> infer_roi_align(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  const TensorType& rois = ctx.input_types[1];
  const TensorType& idx = ctx.input_types[2];
  if (x.rank() != 4) {
    return ctx.error("input 0 (X) expects rank 4 [N, C, H, W], got {}", shape_to_string(x.shape));
  }
  if (rois.rank() != 2 || rois.shape[1] != 4) {
    return ctx.error("input 1 (rois) expects [num_rois, 4], got {}", shape_to_string(rois.shape));
  }
  if (idx.rank() != 1 || idx.shape[0] != rois.shape[0]) {
    return ctx.error("input 2 (batch_indices) expects [{}], got {}", rois.shape[0],
                     shape_to_string(idx.shape));
  }
  const std::string mode = ctx.attr_or<std::string>("mode", "avg");
  if (mode != "avg" && mode != "max") {
    return ctx.error("attribute 'mode' must be 'avg' or 'max', got '{}'", mode);
  }
  const std::string ctm = ctx.attr_or<std::string>("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    return ctx.error(
        "attribute 'coordinate_transformation_mode' must be 'half_pixel' or "
        "'output_half_pixel', got '{}'",
        ctm);
  }
  const int64_t oh = ctx.attr_or<int64_t>("output_height", 1);
  const int64_t ow = ctx.attr_or<int64_t>("output_width", 1);
  if (oh < 1 || ow < 1) {
    return ctx.error("attributes 'output_height'/'output_width' must be >= 1, got {}/{}", oh, ow);
  }
  if (ctx.attr_or<int64_t>("sampling_ratio", 0) < 0) {
    return ctx.error("attribute 'sampling_ratio' must be >= 0");
  }
  return one_output(x.dtype, {rois.shape[0], x.shape[1], oh, ow});
}

FRAME_REGISTER_OP(roi_align)
    .doc(
        "ONNX RoiAlign (opset 16; opset 10 imports with coordinate_transformation_mode = "
        "output_half_pixel): Y[r, c] pools X[batch_indices[r], c] over roi r = (x1, y1, x2, y2) "
        "(input pixels / spatial_scale) into output_height x output_width bins. Roi corners are "
        "scaled by spatial_scale and shifted by -0.5 (half_pixel); output_half_pixel makes the "
        "roi at least 1 x 1. Each bin averages (avg) or takes the max (max: of the four weighted "
        "corner terms, as onnxruntime and the ONNX reference do) of grid_h x grid_w bilinear "
        "samples at the sub-cell centres; grid = sampling_ratio, or ceil(roi size / bins) when 0. "
        "A sample beyond [-1, H] x [-1, W] reads 0; a batch index outside [0, N) is an error.")
    .input("X", "[N, C, H, W]", kFloatDTypes, "T")
    .input("rois", "[num_rois, 4] (x1, y1, x2, y2)", kFloatDTypes, "T")
    .input("batch_indices", "[num_rois] int64", DTypeSet{DTypeCode::kInt64})
    .output("Y", "[num_rois, C, output_height, output_width]", kFloatDTypes, "T")
    .attr("coordinate_transformation_mode", AttrType::kString,
          "'half_pixel' (shift -0.5) or 'output_half_pixel'", std::string("half_pixel"))
    .attr("mode", AttrType::kString, "'avg' or 'max'", std::string("avg"))
    .attr("output_height", AttrType::kInt, "bins along H", int64_t{1})
    .attr("output_width", AttrType::kInt, "bins along W", int64_t{1})
    .attr("sampling_ratio", AttrType::kInt, "samples per bin side (0 = adaptive)", int64_t{0})
    .attr("spatial_scale", AttrType::kFloat, "roi coordinate scale to input pixels", 1.0)
    .shape_infer(infer_roi_align);

}  // namespace
}  // namespace frame::ops
