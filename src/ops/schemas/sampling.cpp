// Sampling schemas: GridSample (ONNX opset 16/20, 4-D), RoiAlign (opset 10/16) and
// TfIdfVectorizer (opset 9, integer inputs).

#include <algorithm>
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
        "ONNX GridSample (opset 16/20; 4-D only): Y[n, c, h, w] samples X[n, c] at grid[n, h, w] = "
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

// TfIdfVectorizer: checks the pool layout (ngram_counts = start offsets of the 1-gram, 2-gram,
// ... groups in pool_int64s) against ngram_indexes and weights; output [.., max index + 1].
Result<std::vector<TensorType>> infer_tf_idf(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  if (x.rank() != 1 && x.rank() != 2) {
    return ctx.error("input 0 (X) expects rank 1 [C] or 2 [N, C], got {}",
                     shape_to_string(x.shape));
  }
  if (ctx.attr<std::vector<std::string>>("pool_strings") != nullptr) {
    return ctx.error("attribute 'pool_strings' is not supported (integer inputs only)");
  }
  const auto* pool = ctx.attr<std::vector<int64_t>>("pool_int64s");
  const auto* counts = ctx.attr<std::vector<int64_t>>("ngram_counts");
  const auto* indexes = ctx.attr<std::vector<int64_t>>("ngram_indexes");
  if (pool == nullptr || counts == nullptr || indexes == nullptr) {
    return ctx.error("attributes 'pool_int64s', 'ngram_counts' and 'ngram_indexes' are required");
  }
  const int64_t min_n = ctx.attr_or<int64_t>("min_gram_length", 0);
  const int64_t max_n = ctx.attr_or<int64_t>("max_gram_length", 0);
  if (min_n < 1 || max_n < min_n) {
    return ctx.error("attributes 'min_gram_length' {} / 'max_gram_length' {} need 1 <= min <= max",
                     min_n, max_n);
  }
  if (ctx.attr_or<int64_t>("max_skip_count", 0) < 0) {
    return ctx.error("attribute 'max_skip_count' must be >= 0");
  }
  const std::string mode = ctx.attr_or<std::string>("mode", "TF");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") {
    return ctx.error("attribute 'mode' must be 'TF', 'IDF' or 'TFIDF', got '{}'", mode);
  }
  const auto psize = static_cast<int64_t>(pool->size());
  int64_t ngrams = 0;
  for (size_t k = 0; k < counts->size(); ++k) {
    const int64_t begin = (*counts)[k];
    const int64_t end = k + 1 < counts->size() ? (*counts)[k + 1] : psize;
    const auto n = static_cast<int64_t>(k + 1);
    if (begin < 0 || end < begin || end > psize || (end - begin) % n != 0) {
      return ctx.error(
          "attribute 'ngram_counts' entry {} ({}) does not start a whole number of {}-grams "
          "within pool_int64s of {} values",
          k, begin, n, psize);
    }
    ngrams += (end - begin) / n;
  }
  if (static_cast<int64_t>(indexes->size()) != ngrams) {
    return ctx.error("attribute 'ngram_indexes' has {} entries, the pool holds {} n-grams",
                     indexes->size(), ngrams);
  }
  const auto* weights = ctx.attr<std::vector<double>>("weights");
  if (weights != nullptr && static_cast<int64_t>(weights->size()) != ngrams) {
    return ctx.error("attribute 'weights' has {} entries, expected {} (one per n-gram)",
                     weights->size(), ngrams);
  }
  int64_t cols = 0;
  std::vector<bool> used;
  for (int64_t v : *indexes) {
    if (v < 0) return ctx.error("attribute 'ngram_indexes' holds a negative index {}", v);
    if (static_cast<size_t>(v) >= used.size()) used.resize(static_cast<size_t>(v) + 1, false);
    if (used[static_cast<size_t>(v)]) {
      return ctx.error("attribute 'ngram_indexes' repeats output index {}", v);
    }
    used[static_cast<size_t>(v)] = true;
    cols = std::max(cols, v + 1);
  }
  Shape out = x.rank() == 1 ? Shape{cols} : Shape{x.shape[0], cols};
  return one_output(DTypeCode::kFloat32, out);
}

FRAME_REGISTER_OP(tf_idf_vectorizer)
    .doc(
        "ONNX TfIdfVectorizer (opset 9; integer inputs, pool_int64s): per row of X ([C] or "
        "[N, C], int32/int64), counts each pool n-gram of length min_gram_length.."
        "max_gram_length made of items start, start + s, ..., start + (n - 1) s for every skip "
        "distance s = 1..max_skip_count + 1 (1-grams once, at s = 1). Y[.., ngram_indexes[i]] = "
        "count_i (TF), weights[i] if count_i > 0 else 0 (IDF), count_i * weights[i] (TFIDF); "
        "weights default to 1. Output float32 [max(ngram_indexes) + 1] or [N, ...]. "
        "pool_strings and repeated ngram_indexes are rejected.")
    .input("X", "[C] or [N, C] int32/int64 items", DTypeSet{DTypeCode::kInt32, DTypeCode::kInt64})
    .output("Y", "[max(ngram_indexes) + 1] or [N, max(ngram_indexes) + 1] float32",
            DTypeSet{DTypeCode::kFloat32})
    .required_attr("max_gram_length", AttrType::kInt, "longest n-gram counted")
    .required_attr("min_gram_length", AttrType::kInt, "shortest n-gram counted")
    .required_attr("max_skip_count", AttrType::kInt, "most items skipped between n-gram items")
    .required_attr("mode", AttrType::kString, "'TF', 'IDF' or 'TFIDF'")
    .required_attr("ngram_counts", AttrType::kInts,
                   "start offset in the pool of each n-gram length")
    .required_attr("ngram_indexes", AttrType::kInts, "output column of each pool n-gram")
    .optional_attr("pool_int64s", AttrType::kInts, "n-grams, 1-grams first")
    .optional_attr("pool_strings", AttrType::kStrings, "string n-grams (not supported)")
    .optional_attr("weights", AttrType::kFloats, "weight of each pool n-gram (default 1)")
    .shape_infer(infer_tf_idf);

}  // namespace
}  // namespace frame::ops
