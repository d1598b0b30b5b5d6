// Per-target tables of the elementwise vector loops (ew_vec-inl.h) and their runtime dispatch:
// Highway compiles this file once per target of hwy_targets.h and FRAME_HWY_DISPATCH picks
// the best one the CPU supports.

#include "backends/onednn/kernels/hwy_targets.h"
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/onednn/kernels/ew_vec.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on
#include "backends/onednn/kernels/ew_vec-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace frame::backends::onednn::HWY_NAMESPACE {

const VecTable* get_vec_table() {
  static const VecTable table = [] {
    VecTable t;
    size_t i = 0;
#define FRAME_VEC_UNARY_ENTRY(name, F, types, traits, doc) t.unary[i++] = unary_entry<ew::F>();
    FRAME_EW_UNARY_OPS(FRAME_VEC_UNARY_ENTRY)
#undef FRAME_VEC_UNARY_ENTRY
    i = 0;
#define FRAME_VEC_BINARY_ENTRY(name, F, types, traits, doc) \
  t.compare[i] = compare_entry<ew::F>();                    \
  t.binary[i++] = binary_entry<ew::F>();
    FRAME_EW_BINARY_OPS(FRAME_VEC_BINARY_ENTRY)
#undef FRAME_VEC_BINARY_ENTRY
    i = 0;
#define FRAME_VEC_VARIADIC_ENTRY(name, F, types, traits, doc) \
  t.variadic[i++] = binary_entry<ew::F>();
    FRAME_EW_VARIADIC_OPS(FRAME_VEC_VARIADIC_ENTRY)
#undef FRAME_VEC_VARIADIC_ENTRY
    t.clip = unary_entry<ew::ClipOp>();
    t.mean_finish = unary_entry<ew::MeanFinish>();
    t.prelu = binary_entry<ew::PReluOp>();
    t.pow_int = &pow_int_loop;
    t.pow_half = &pow_half_loop;
    t.pow_any = &pow_any_loop;
    t.where = &where_loop;
    t.softmax_rows = &softmax_rows_loop;
    t.layer_norm_row = &layer_norm_row_loop;
    t.dw_plane = &dw_plane_loop;
    t.pool_nhwc_rows = &pool_nhwc_rows_loop;
    t.panel_gemv = &panel_gemv_loop;
    t.gemm = &gemm_loop;
    t.gemm_packed = &gemm_packed_loop;
    t.gemm_pack = &gemm_pack_loop;
    t.gemm_strip = gemm_strip();
    constexpr auto f32 = static_cast<size_t>(DTypeCode::kFloat32);
    constexpr auto f16 = static_cast<size_t>(DTypeCode::kFloat16);
    constexpr auto bf16 = static_cast<size_t>(DTypeCode::kBFloat16);
    if constexpr (kHardwareF16) {
      t.convert[f32][f16] = &f32_to_f16_loop;
      t.convert[f16][f32] = &f16_to_f32_loop;
    }
    t.convert[f32][bf16] = &f32_to_bf16_loop;
    t.convert[bf16][f32] = &bf16_to_f32_loop;
    t.stream_copy = &stream_copy_loop;
    t.stream_fence = &stream_fence_loop;
    t.even_copy = &even_copy_loop;
    t.transpose32 = &transpose32_loop;
    t.wino23_input = &wino23_input_loop;
    t.wino23_output = &wino23_output_loop;
    t.target = hwy::TargetName(HWY_TARGET);
    return t;
  }();
  return &table;
}

}  // namespace frame::backends::onednn::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace frame::backends::onednn {

// Not cached: prepare calls it once per node, and tests switch targets in between
// (set_vec_target_for_test) to cover every compiled target on one machine.
const VecTable& vec_table() { return *FRAME_HWY_DISPATCH(get_vec_table)(); }

namespace {
#define FRAME_VEC_NAME(name, F, types, traits, doc) #name,
constexpr std::array<std::string_view, kNumUnaryOps> kUnaryNames = {
    FRAME_EW_UNARY_OPS(FRAME_VEC_NAME)};
constexpr std::array<std::string_view, kNumBinaryOps> kBinaryNames = {
    FRAME_EW_BINARY_OPS(FRAME_VEC_NAME)};
constexpr std::array<std::string_view, kNumVariadicOps> kVariadicNames = {
    FRAME_EW_VARIADIC_OPS(FRAME_VEC_NAME)};
#undef FRAME_VEC_NAME

template <size_t N>
int index_of(const std::array<std::string_view, N>& names, std::string_view op) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == op) return static_cast<int>(i);
  }
  return -1;
}
}  // namespace

int unary_index(std::string_view op) { return index_of(kUnaryNames, op); }
int binary_index(std::string_view op) { return index_of(kBinaryNames, op); }
int variadic_index(std::string_view op) { return index_of(kVariadicNames, op); }

bool has_vec_form(std::string_view op) {
  // The static target's table: every target has the same specializations.
  const VecTable& t = *HWY_STATIC_DISPATCH(get_vec_table)();
  if (op == "clip") return t.clip != nullptr;
  if (op == "prelu") return t.prelu != nullptr;
  if (op == "pow") return t.pow_int != nullptr;
  if (op == "where") return t.where != nullptr;
  if (int i = unary_index(op); i >= 0) return t.unary[static_cast<size_t>(i)] != nullptr;
  if (int i = binary_index(op); i >= 0) {
    return t.binary[static_cast<size_t>(i)] != nullptr ||
           t.compare[static_cast<size_t>(i)] != nullptr;
  }
  if (int i = variadic_index(op); i >= 0) return t.variadic[static_cast<size_t>(i)] != nullptr;
  return false;
}

}  // namespace frame::backends::onednn
#endif  // HWY_ONCE
