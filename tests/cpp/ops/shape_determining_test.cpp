// Shape-determining input flags (ArgSpec::shape_determining, ADR 0006, ARCH-044):
//  - a registry-wide probe: every input position whose shape function rejects a non-constant
//    value ("input N (...) must be a constant") is marked;
//  - the exact set of marked positions, written by hand from the ONNX operator specs;
//  - the builder marks the input declared just before.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frame/ops/op_registry.h"
#include "frame/ops/op_schema.h"

namespace frame::ops {
namespace {

constexpr DTypeCode kPreference[] = {DTypeCode::kFloat32, DTypeCode::kInt64, DTypeCode::kInt32,
                                     DTypeCode::kFloat64, DTypeCode::kBool,  DTypeCode::kUInt8};

DTypeCode pick_dtype(DTypeSet allowed) {
  for (DTypeCode d : kPreference) {
    if (allowed.contains(d)) return d;
  }
  return DTypeCode::kFloat32;
}

// A 1-D tensor of `len` elements equal to `v` (dtypes of kPreference only).
Tensor filled(DTypeCode d, int64_t len, int v) {
  const size_t n = static_cast<size_t>(len);
  switch (d) {
    case DTypeCode::kInt64:
      return Tensor::from_vector<int64_t>({len}, std::vector<int64_t>(n, v));
    case DTypeCode::kInt32:
      return Tensor::from_vector<int32_t>({len}, std::vector<int32_t>(n, v));
    case DTypeCode::kFloat64:
      return Tensor::from_vector<double>({len}, std::vector<double>(n, v));
    case DTypeCode::kUInt8:
      return Tensor::from_vector<uint8_t>({len}, std::vector<uint8_t>(n, static_cast<uint8_t>(v)));
    case DTypeCode::kBool:
      return Tensor::from_vector<bool>({len}, std::vector<bool>(n, v != 0));
    default:
      return Tensor::from_vector<float>({len}, std::vector<float>(n, static_cast<float>(v)));
  }
}

// True if the shape function of `s` rejects a non-constant input `probe` while every other
// input is a constant: tried with every input of shape {len} and constants filled with `fill`,
// for len in {1, 2} and fill in {1, 0}.
bool rejects_non_constant(const OpSchema& s, size_t probe, size_t num_inputs) {
  for (int64_t len : {1, 2}) {
    for (int fill : {1, 0}) {
      NodeContext ctx;
      ctx.op = s.name();
      ctx.node_name = "probe";
      ctx.schema = &s;
      ctx.num_outputs = s.outputs().empty() ? 1 : s.outputs().size();
      std::vector<Tensor> constants;
      constants.reserve(num_inputs);
      for (size_t i = 0; i < num_inputs; ++i) {
        const ArgSpec* spec = s.input_spec(i);
        const DTypeCode d = pick_dtype(spec->dtypes);
        ctx.input_types.push_back({d, {len}});
        ctx.input_present.push_back(true);
        if (i == probe) {
          ctx.input_constants.push_back(nullptr);
          continue;
        }
        constants.push_back(filled(d, len, fill));
        ctx.input_constants.push_back(&constants.back());
      }
      Result<std::vector<ir::TensorType>> r = s.shape_fn()(ctx);
      if (r.is_ok()) continue;
      const std::string m = r.status().message();  // status() is a temporary
      if (m.find("input " + std::to_string(probe) + " (") != std::string::npos &&
          m.find("must be a constant") != std::string::npos) {
        return true;
      }
    }
  }
  return false;
}

TEST(ShapeDeterminingFlags, EveryInputAShapeFunctionRequiresConstantIsMarked) {
  std::set<std::string> found;
  for (const OpSchema* s : OpRegistry::global().list()) {
    if (s->shape_fn() == nullptr) continue;
    const size_t n =
        s->inputs().size() + (s->has_variadic_inputs() ? std::max(1, s->variadic_min_count()) : 0);
    // Ops whose output shape depends on data values: sessions run them eagerly between
    // static stages instead of binding their inputs (ADR 0008).
    static const std::set<std::string> kEager = {"non_zero", "unique", "non_max_suppression"};
    for (size_t i = 0; i < n; ++i) {
      if (!rejects_non_constant(*s, i, n)) continue;
      found.insert(s->name() + ":" + std::to_string(i));
      if (kEager.count(s->name()) > 0) {
        EXPECT_FALSE(s->is_shape_determining(i)) << s->name() << " input " << i;
        continue;
      }
      EXPECT_TRUE(s->is_shape_determining(i))
          << s->name() << " input " << i << " (" << s->input_spec(i)->name
          << "): the shape function requires a constant, but the schema does not mark it "
             "shape_determining (ADR 0006)";
    }
  }
  // The probe must actually reach the known cases, else it proves nothing.
  for (const char* key :
       {"reshape:1", "expand:1", "tile:1", "constant_of_shape:0", "slice:1", "unsqueeze:1",
        "reduce_sum:1", "top_k:1", "one_hot:1", "range:0", "range:2"}) {
    EXPECT_TRUE(found.count(key)) << "probe did not reach " << key;
  }
}

// Builtin schemas (registered under src/ops/) only; ops registered by other tests are left out.
TEST(ShapeDeterminingFlags, ExactlyTheExpectedPositionsAreMarked) {
  // From the ONNX operator specs: the inputs whose values decide an output shape.
  std::set<std::string> expected = {"reshape:1", "expand:1",    "tile:1",   "constant_of_shape:0",
                                    "slice:1",   "slice:2",     "slice:3",  "slice:4",
                                    "squeeze:1", "unsqueeze:1", "pad:1",    "pad:3",
                                    "resize:1",  "resize:2",    "resize:3", "split:1",
                                    "top_k:1",   "one_hot:1",   "range:0",  "range:1",
                                    "range:2",   "if:0",        "loop:0",   "loop:1"};
  for (const char* r :
       {"reduce_sum", "reduce_mean", "reduce_prod", "reduce_max", "reduce_min", "reduce_l1",
        "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square"}) {
    if (OpRegistry::global().find(r) != nullptr) expected.insert(std::string(r) + ":1");
  }
  // Signal ops (ONNX opset 17): the window size; MelWeightMatrix's num_mel_bins, dft_length;
  // DFT's dft_length; STFT's frame_step and frame_length.
  for (const char* p :
       {"hann_window:0", "hamming_window:0", "blackman_window:0", "mel_weight_matrix:0",
        "mel_weight_matrix:1", "dft:1", "stft:1", "stft:3"}) {
    expected.insert(p);
  }
  std::set<std::string> marked;
  for (const OpSchema* s : OpRegistry::global().list()) {
    if (s->file().find("src/ops/") == std::string::npos) continue;  // test-only ops
    for (size_t i = 0; i < s->inputs().size(); ++i) {
      if (s->inputs()[i].shape_determining) marked.insert(s->name() + ":" + std::to_string(i));
    }
    if (s->variadic() && s->variadic()->shape_determining) marked.insert(s->name() + ":variadic");
  }
  EXPECT_EQ(marked, expected);
  EXPECT_TRUE(OpRegistry::global().find("reshape")->is_shape_determining(1));
  EXPECT_FALSE(OpRegistry::global().find("reshape")->is_shape_determining(0));
  EXPECT_FALSE(OpRegistry::global().find("reshape")->is_shape_determining(7));
  EXPECT_FALSE(OpRegistry::global().find("shape")->is_shape_determining(0));
}

TEST(ShapeDeterminingFlags, BuilderMarksTheInputDeclaredJustBefore) {
  OpSchema s = OpSchemaBuilder("probe_sd", __FILE__, __LINE__)
                   .input("data", "d")
                   .input("shape", "s", DTypeSet{DTypeCode::kInt64})
                   .shape_determining()
                   .optional_input("axes", "a")
                   .output("y", "y")
                   .build();
  EXPECT_FALSE(s.is_shape_determining(0));
  EXPECT_TRUE(s.is_shape_determining(1));
  EXPECT_FALSE(s.is_shape_determining(2));
  OpSchema v = OpSchemaBuilder("probe_sd_var", __FILE__, __LINE__)
                   .variadic_input("dims", "d", 1, DTypeSet{DTypeCode::kInt64})
                   .shape_determining()
                   .output("y", "y")
                   .build();
  EXPECT_TRUE(v.is_shape_determining(0));
  EXPECT_TRUE(v.is_shape_determining(3));
}

}  // namespace
}  // namespace frame::ops
