// gather, pad and resize kernels of the `onednn` backend
// (src/backends/onednn/kernels/gather_pad_resize.cpp): hand-computed values, then against the
// cpu reference kernels (bit for bit; f32 linear resize within the BUILD-011 tolerance) on shapes
// the op database lacks (inputs large enough to split across threads, odd sizes, every
// inner-block size, negative indices, crops), the out-of-range index error, the resize forms the
// kernel declines, and placement / fallback through runtime::compile.

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "common/tolerance.h"
#include "cpp/onednn_ew/ew_test_util.h"
#include "frame/ir/graph.h"
#include "frame/runtime/compile.h"

namespace frame::test {
namespace {

// A one-element tensor of dtype dt holding v.
Tensor scalar(DTypeCode dt, int v) {
  switch (dt) {
    case DTypeCode::kUInt8:
      return Tensor::from_vector<uint8_t>({}, {static_cast<uint8_t>(v)});
    case DTypeCode::kInt16:
      return Tensor::from_vector<int16_t>({}, {static_cast<int16_t>(v)});
    case DTypeCode::kInt64:
      return Tensor::from_vector<int64_t>({}, {v});
    default:
      return Tensor::from_vector<float>({}, {static_cast<float>(v)});
  }
}

Tensor ints(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

// ---- gather ----

TEST(GatherOnednn, HandComputedNegativeIndices) {
  // data [[1,2],[3,4],[5,6]]; indices [-1, 0, 1, -3] on axis 0 -> rows 2, 0, 1, 0.
  OpCall call{"gather",
              {Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6}), ints({-1, 0, 1, -3})}};
  auto out = run_op(call, "onednn");
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].shape(), (Shape{4, 2}));
  EXPECT_EQ(values<float>((*out)[0]), (std::vector<float>{5, 6, 1, 2, 3, 4, 1, 2}));
  // axis 1 with int32 indices [[-1], [0]]: columns 1 and 0 -> shape [3, 2, 1].
  OpCall col{"gather",
             {Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6}),
              Tensor::from_vector<int32_t>({2, 1}, {-1, 0})},
             {{"axis", int64_t{1}}}};
  auto c = run_op(col, "onednn");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ((*c)[0].shape(), (Shape{3, 2, 1}));
  EXPECT_EQ(values<float>((*c)[0]), (std::vector<float>{2, 1, 4, 3, 6, 5}));
}

TEST(GatherOnednn, EveryAxisAndBlockSizeMatchesCpu) {
  struct Case {
    DTypeCode dt;
    Shape data;
    int64_t axis;
    Shape idx;
  };
  const std::vector<Case> cases = {
      {DTypeCode::kFloat32, {3000, 257}, 0, {5000}},  // embedding rows, split across threads
      {DTypeCode::kUInt8, {4, 1000, 3}, 1, {2, 3}},   // 3-byte blocks
      {DTypeCode::kInt64, {500, 37}, -1, {41}},       // 8-byte blocks, many items
      {DTypeCode::kFloat32, {2, 3, 7, 4}, 2, {9}},    // 16-byte blocks
      {DTypeCode::kInt16, {2, 3, 4, 5}, 2, {3, 2}},   // 10-byte blocks
      {DTypeCode::kUInt8, {70000}, 0, {100000}},      // 1-byte blocks, split across threads
      {DTypeCode::kInt16, {65, 300, 7}, 2, {}},       // scalar index
      {DTypeCode::kFloat32, {5, 6}, 0, {0}},          // no indices
      {DTypeCode::kUInt8, {4, 3000000}, 0, {2}},      // two blocks split by bytes
  };
  for (const Case& c : cases) {
    const int64_t rank = static_cast<int64_t>(c.data.size());
    const int64_t dim = c.data[static_cast<size_t>(c.axis < 0 ? c.axis + rank : c.axis)];
    const int64_t n = numel_of(c.idx);
    std::vector<int64_t> i64(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = (i * 7919 + 13) % dim;
      i64[static_cast<size_t>(i)] = i % 3 == 0 ? v - dim : v;  // every third negative
    }
    std::vector<int32_t> i32(i64.begin(), i64.end());
    for (int threads : {1, 2, 4}) {
      for (bool wide : {false, true}) {
        Tensor idx = wide ? Tensor::from_vector<int64_t>(c.idx, i64)
                          : Tensor::from_vector<int32_t>(c.idx, i32);
        OpCall call{"gather", {make(c.dt, c.data), idx}, {{"axis", c.axis}}};
        call.num_threads = threads;
        expect_identical(
            call, fmt::format("{} {} axis {} indices {} {} threads {}", dtype_name(c.dt), c.data,
                              c.axis, c.idx, wide ? "i64" : "i32", threads));
      }
    }
  }
}

TEST(GatherOnednn, OutOfRangeIndexIsAnErrorNamingNodeAndIndex) {
  for (int64_t bad : {3, -4}) {
    OpCall call{"gather",
                {Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6}), ints({0, bad, 1})}};
    call.node_name = "emb";
    auto out = run_op(call, "onednn");
    ASSERT_FALSE(out.is_ok());
    const std::string msg = out.status().to_string();
    EXPECT_NE(msg.find("node 'emb' (gather)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("input 1 (indices)"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("value {} at 1", bad)), std::string::npos) << msg;
    EXPECT_NE(msg.find("[-3, 2]"), std::string::npos) << msg;
  }
}

// ---- pad ----

TEST(PadOnednn, HandComputedModesAndCrop) {
  struct Case {
    std::string mode;
    std::vector<int64_t> pads;
    std::vector<float> want;
  };
  const std::vector<Case> cases = {
      {"constant", {1, 2}, {9, 1, 2, 3, 4, 9, 9}},
      {"constant", {-1, 1}, {2, 3, 4, 9}},  // crop the front, pad the back
      {"edge", {2, -2}, {1, 1, 1, 2}},
      {"reflect", {2, 3}, {3, 2, 1, 2, 3, 4, 3, 2, 1}},
      {"wrap", {1, 2}, {4, 1, 2, 3, 4, 1, 2}},
      {"constant", {-1, -2}, {2}},
  };
  for (const Case& c : cases) {
    OpCall call{"pad",
                {Tensor::from_vector<float>({4}, {1, 2, 3, 4}), ints(c.pads),
                 scalar(DTypeCode::kFloat32, 9)},
                {{"mode", c.mode}}};
    call.constant_inputs = {1};
    auto out = run_op(call, "onednn");
    ASSERT_TRUE(out.is_ok()) << c.mode << ": " << out.status().to_string();
    EXPECT_EQ(values<float>((*out)[0]), c.want) << c.mode << " " << fmt::format("{}", c.pads);
  }
}

TEST(PadOnednn, LargeAndOddShapesMatchCpu) {
  struct Case {
    DTypeCode dt;
    Shape shape;
    std::vector<int64_t> pads;
    std::vector<int64_t> axes;  // empty: all axes
  };
  const std::vector<Case> cases = {
      {DTypeCode::kFloat32, {2, 3, 300, 301}, {0, 0, 1, 2, 0, 0, 3, 1}, {}},  // NCHW spatial
      {DTypeCode::kUInt8, {3, 511, 257}, {0, -5, 4, 1, 7, -3}, {}},           // crop + pad
      {DTypeCode::kInt64, {1000, 130}, {3, 4}, {0}},                          // outer axis only
      {DTypeCode::kInt16, {7, 5, 3}, {2, -1, 1, 2}, {-1, 0}},                 // negative axes
      {DTypeCode::kFloat32, {400000}, {5, 11}, {}},                           // 1-D
      {DTypeCode::kFloat32, {64, 64, 64}, {0, 0, 0, 0, 0, 0}, {}},            // no-op
      {DTypeCode::kUInt8, {33, 0, 5}, {1, 2, 0, 0, 3, 1}, {}},                // empty input
  };
  for (const Case& c : cases) {
    for (const std::string mode : {"constant", "edge", "reflect", "wrap"}) {
      if (mode != "constant" && numel_of(c.shape) == 0) continue;
      for (int threads : {1, 3}) {
        OpCall call{"pad", {make(c.dt, c.shape), ints(c.pads)}, {{"mode", mode}}};
        if (mode == "constant") call.inputs.push_back(scalar(c.dt, 7));
        if (!c.axes.empty()) {
          if (call.inputs.size() < 3) call.inputs.push_back(Tensor());
          call.inputs.push_back(ints(c.axes));
        }
        call.constant_inputs = {1, 3};
        call.num_threads = threads;
        expect_identical(call, fmt::format("{} {} pads {} axes {} {} threads {}", dtype_name(c.dt),
                                           c.shape, c.pads, c.axes, mode, threads));
      }
    }
  }
  // No constant_value: zero fill.
  OpCall zero{"pad", {make(DTypeCode::kFloat32, {9, 10}), ints({1, 1, 1, 1})}};
  zero.constant_inputs = {1};
  expect_identical(zero, "constant default 0");
}

// ---- resize ----

// resize call on X with `scales` (f32) or, when empty, `sizes`; attrs as given.
OpCall resize_call(Tensor x, const std::vector<float>& scales, const std::vector<int64_t>& sizes,
                   ir::AttrMap attrs) {
  OpCall call{"resize", {std::move(x), Tensor()}, std::move(attrs)};
  if (!scales.empty()) {
    call.inputs.push_back(
        Tensor::from_vector<float>({static_cast<int64_t>(scales.size())}, scales));
  } else {
    call.inputs.push_back(Tensor());
    call.inputs.push_back(ints(sizes));
  }
  call.constant_inputs = {1, 2, 3};
  return call;
}

void expect_close_to_cpu(const OpCall& call, const std::string& what) {
  auto fast = run_op(call, "onednn");
  ASSERT_TRUE(fast.is_ok()) << what << ": " << fast.status().to_string();
  auto ref = run_op(call, "cpu");
  ASSERT_TRUE(ref.is_ok()) << what << ": " << ref.status().to_string();
  const Tensor& a = (*fast)[0];
  const Tensor& b = (*ref)[0];
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const test::CompareResult r = test::compare_tensors(a, b, test::tolerance_for(b.dtype()));
  EXPECT_TRUE(r.ok) << what << ": " << r.message;
}

TEST(ResizeOnednn, HandComputedNearestAndLinear) {
  const Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {0, 1, 2, 3});
  // linear, align_corners, 2x2 -> 3x3: bilinear midpoints.
  auto lin = run_op(resize_call(x, {}, {1, 1, 3, 3},
                                {{"mode", std::string("linear")},
                                 {"coordinate_transformation_mode", std::string("align_corners")}}),
                    "onednn");
  ASSERT_TRUE(lin.is_ok()) << lin.status().to_string();
  EXPECT_EQ(values<float>((*lin)[0]), (std::vector<float>{0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3}));
  // nearest, asymmetric, floor, 2x: every source element repeated 2 x 2.
  auto near = run_op(resize_call(x, {1, 1, 2, 2}, {},
                                 {{"coordinate_transformation_mode", std::string("asymmetric")},
                                  {"nearest_mode", std::string("floor")}}),
                     "onednn");
  ASSERT_TRUE(near.is_ok()) << near.status().to_string();
  EXPECT_EQ(values<float>((*near)[0]),
            (std::vector<float>{0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}));
}

TEST(ResizeOnednn, AnEmptyOutputAxisGivesAnEmptyResult) {
  // sizes [1,1,0,4] on [1,1,3,4]: no rows; W unchanged (once a crash: the column table of an
  // empty output was read to test for an identity mapping).
  const Tensor x = Tensor::from_vector<float>({1, 1, 3, 4}, std::vector<float>(12, 1.0f));
  for (const std::vector<int64_t>& sizes :
       {std::vector<int64_t>{1, 1, 0, 4}, std::vector<int64_t>{1, 1, 2, 0}}) {
    auto out = run_op(resize_call(x, {}, sizes, {}), "onednn");
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ((*out)[0].shape(), (Shape{sizes[0], sizes[1], sizes[2], sizes[3]}));
    EXPECT_EQ((*out)[0].numel(), 0);
  }
}

TEST(ResizeOnednn, NearestMatchesCpuBitForBit) {
  struct Case {
    DTypeCode dt;
    Shape shape;
    std::vector<float> scales;
    std::vector<int64_t> sizes;
  };
  const std::vector<Case> cases = {
      {DTypeCode::kUInt8, {2, 3, 37, 53}, {1, 1, 2, 2}, {}},         // 2x up, odd sizes
      {DTypeCode::kFloat32, {4, 5, 300, 301}, {}, {4, 5, 97, 150}},  // down, split threads
      {DTypeCode::kInt64, {1, 8, 64, 64}, {1, 1, 1, 3}, {}},         // W only
      {DTypeCode::kInt16, {2, 2, 9, 11}, {1, 1, 1.7f, 0.6f}, {}},    // fractional
      {DTypeCode::kFloat32, {1, 2, 5, 7}, {}, {1, 2, 1, 1}},         // to 1 x 1
  };
  const std::vector<std::string> coords = {"half_pixel", "half_pixel_symmetric",
                                           "pytorch_half_pixel", "align_corners", "asymmetric"};
  const std::vector<std::string> nearest = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                            "ceil"};
  for (const Case& c : cases) {
    for (const std::string& coord : coords) {
      for (const std::string& nm : nearest) {
        for (int threads : {1, 3}) {
          OpCall call =
              resize_call(make(c.dt, c.shape), c.scales, c.sizes,
                          {{"coordinate_transformation_mode", coord}, {"nearest_mode", nm}});
          call.num_threads = threads;
          expect_identical(
              call, fmt::format("{} {} scales {} sizes {} {} {} threads {}", dtype_name(c.dt),
                                c.shape, c.scales, c.sizes, coord, nm, threads));
        }
      }
    }
  }
}

TEST(ResizeOnednn, LinearMatchesCpu) {
  struct Case {
    Shape shape;
    std::vector<float> scales;
    std::vector<int64_t> sizes;
  };
  const std::vector<Case> cases = {
      {{2, 16, 64, 65}, {1, 1, 2, 2}, {}},      // 2x up, split threads
      {{1, 3, 300, 299}, {}, {1, 3, 111, 57}},  // down, odd sizes
      {{2, 2, 7, 5}, {1, 1, 0.5f, 3.3f}, {}},   // mixed
      {{1, 1, 6, 9}, {}, {1, 1, 1, 4}},         // one output row
      {{1, 5, 8, 8}, {}, {1, 5, 64, 64}},       // x8 up: W-interpolated rows reused, planes split
  };
  const std::vector<std::string> coords = {"half_pixel", "half_pixel_symmetric",
                                           "pytorch_half_pixel", "align_corners", "asymmetric"};
  for (const Case& c : cases) {
    for (const std::string& coord : coords) {
      for (int threads : {1, 3}) {
        OpCall call = resize_call(
            make(DTypeCode::kFloat32, c.shape), c.scales, c.sizes,
            {{"mode", std::string("linear")}, {"coordinate_transformation_mode", coord}});
        call.num_threads = threads;
        expect_close_to_cpu(call, fmt::format("{} scales {} sizes {} {} threads {}", c.shape,
                                              c.scales, c.sizes, coord, threads));
      }
    }
  }
  // sizes on the spatial axes only (axes attribute).
  OpCall axes =
      resize_call(make(DTypeCode::kFloat32, {2, 3, 10, 12}), {}, {15, 7},
                  {{"mode", std::string("linear")}, {"axes", std::vector<int64_t>{2, 3}}});
  expect_close_to_cpu(axes, "linear with axes [2, 3]");
}

TEST(ResizeOnednn, DeclinesWhatItDoesNotImplement) {
  struct Case {
    std::string what;
    OpCall call;
  };
  const std::vector<Case> cases = {
      {"cubic", resize_call(make(DTypeCode::kFloat32, {1, 1, 4, 4}), {1, 1, 2, 2}, {},
                            {{"mode", std::string("cubic")}})},
      {"linear f64", resize_call(Tensor::from_vector<double>({1, 1, 2, 2}, {0, 1, 2, 3}),
                                 {1, 1, 2, 2}, {}, {{"mode", std::string("linear")}})},
      {"rank 3", resize_call(make(DTypeCode::kFloat32, {1, 4, 4}), {1, 2, 2}, {}, {})},
      {"channel axis", resize_call(make(DTypeCode::kFloat32, {1, 2, 4, 4}), {1, 2, 1, 1}, {}, {})},
      {"tf_crop_and_resize",
       resize_call(make(DTypeCode::kFloat32, {1, 1, 4, 4}), {}, {1, 1, 3, 3},
                   {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")}})},
  };
  for (const Case& c : cases) {
    OpCall call = c.call;
    if (c.what == "tf_crop_and_resize") {
      call.inputs[1] = Tensor::from_vector<float>({8}, {0, 0, 0.1f, 0.2f, 1, 1, 0.9f, 0.8f});
    }
    auto s = test::kernel_supports(call, "onednn");
    ASSERT_TRUE(s.is_ok()) << c.what << ": " << s.status().to_string();
    EXPECT_FALSE(s->supported) << c.what;
    // The cpu reference still runs it.
    auto ref = run_op(call, "cpu");
    EXPECT_TRUE(ref.is_ok()) << c.what << ": " << ref.status().to_string();
  }
}

// ---- placement through runtime::compile ----

// Compiles `g` for {"onednn"} (fallback to cpu allowed) and for {"cpu"}, runs both on `feeds`,
// checks the outputs are identical and returns the onednn placements as "op@backend".
std::vector<std::string> run_both(const ir::Graph& g, const runtime::TensorMap& feeds) {
  runtime::CompileOptions fast_opt;
  fast_opt.backends = {"onednn"};
  fast_opt.num_threads = 2;
  fast_opt.use_cache = false;
  runtime::CompileOptions ref_opt = fast_opt;
  ref_opt.backends = {"cpu"};
  auto fast = runtime::compile(g, fast_opt);
  EXPECT_TRUE(fast.is_ok()) << fast.status().to_string();
  auto ref = runtime::compile(g, ref_opt);
  EXPECT_TRUE(ref.is_ok()) << ref.status().to_string();
  if (!fast.is_ok() || !ref.is_ok()) return {};
  auto got = fast->run(feeds);
  EXPECT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = ref->run(feeds);
  EXPECT_TRUE(want.is_ok()) << want.status().to_string();
  if (!got.is_ok() || !want.is_ok()) return {};
  for (const auto& [name, t] : *want) {
    const Tensor& a = got->at(name);
    EXPECT_EQ(a.shape(), t.shape()) << name;
    EXPECT_EQ(a.nbytes(), t.nbytes()) << name;
    if (a.nbytes() == t.nbytes()) {
      EXPECT_EQ(std::memcmp(a.raw_data(), t.raw_data(), t.nbytes()), 0) << name;
    }
  }
  std::vector<std::string> placed;
  for (const runtime::Placement& p : fast->report().placements) {
    placed.push_back(p.op + "@" + p.backend);
  }
  return placed;
}

bool has(const std::vector<std::string>& placed, const std::string& s) {
  return std::find(placed.begin(), placed.end(), s) != placed.end();
}

TEST(DataMovementOnednn, GatherAndConstantPadRunOnOnednn) {
  ir::Graph g{"t"};
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {64, 3, 20, 21}});
  const ir::ValueId idx = g.add_input("idx", ir::TensorType{DTypeCode::kInt64, {5}});
  const ir::ValueId pads = g.add_constant("pads", ints({0, 0, 2, -1, 0, 0, 1, 3}));
  auto p = g.create_node("pad", "p", {x, pads}, 1, {{"mode", std::string("reflect")}}, {"py"});
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  auto gt =
      g.create_node("gather", "g", {g.node(*p).outputs[0], idx}, 1, {{"axis", int64_t{2}}}, {"gy"});
  ASSERT_TRUE(gt.is_ok()) << gt.status().to_string();
  g.add_output(g.node(*gt).outputs[0]);
  runtime::TensorMap feeds;
  feeds["x"] = make(DTypeCode::kFloat32, {64, 3, 20, 21});
  feeds["idx"] = Tensor::from_vector<int64_t>({5}, {0, -1, 7, 21, -22});
  const auto placed = run_both(g, feeds);
  EXPECT_TRUE(has(placed, "pad@onednn")) << fmt::format("{}", fmt::join(placed, ", "));
  EXPECT_TRUE(has(placed, "gather@onednn")) << fmt::format("{}", fmt::join(placed, ", "));
}

TEST(DataMovementOnednn, NearestResizeRunsOnOnednnCubicFallsBackToCpu) {
  ir::Graph g{"t"};
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {2, 3, 20, 21}});
  const ir::ValueId scales =
      g.add_constant("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 2}));
  auto near = g.create_node("resize", "near", {x, ir::kNoValue, scales}, 1, {}, {"ny"});
  ASSERT_TRUE(near.is_ok()) << near.status().to_string();
  auto cubic = g.create_node("resize", "cubic", {x, ir::kNoValue, scales}, 1,
                             {{"mode", std::string("cubic")}}, {"cy"});
  ASSERT_TRUE(cubic.is_ok()) << cubic.status().to_string();
  g.add_output(g.node(*near).outputs[0]);
  g.add_output(g.node(*cubic).outputs[0]);
  runtime::TensorMap feeds;
  feeds["x"] = make(DTypeCode::kFloat32, {2, 3, 20, 21});
  const auto placed = run_both(g, feeds);
  EXPECT_TRUE(has(placed, "resize@onednn")) << fmt::format("{}", fmt::join(placed, ", "));
  EXPECT_TRUE(has(placed, "resize@cpu")) << fmt::format("{}", fmt::join(placed, ", "));
}

}  // namespace
}  // namespace frame::test
