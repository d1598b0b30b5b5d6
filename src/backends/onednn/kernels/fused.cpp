// `onednn` kernels of `fused_elementwise_internal` and of the plain elementwise ops that have a
// vector form (docs/backends/onednn.md, "Compiled fused elementwise kernels"). Both compile
// their node into a tile program at prepare (ew_program.h) and run it vectorized and in
// parallel; a plain node is a one-step program.
//
// What falls back: a fused body op without a vector form, or a non-fp32 body value, runs
// through its own cpu kernel on the tile inside the program (so every fused group the cpu
// kernel can run, this one can); a plain node of another dtype, of an op without a vector form,
// or of output rank above kMaxProgramRank is declined (accepts), so the chain gives it to cpu.

#include <memory>
#include <string>
#include <string_view>

#include "backends/onednn/kernels/ew_program.h"
#include "backends/onednn/kernels/ew_vec.h"
#include "frame/ops/elementwise.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::onednn {
namespace {

using ops::KernelContext;
using ops::NodeContext;

Result<std::shared_ptr<void>> fused_prepare(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<const Program> p, compile_body(ctx));
  return std::const_pointer_cast<void>(std::static_pointer_cast<const void>(p));
}

Result<std::shared_ptr<void>> single_prepare(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<const Program> p, compile_single(ctx));
  return std::const_pointer_cast<void>(std::static_pointer_cast<const void>(p));
}

Status program_kernel(KernelContext& ctx) {
  const auto* p = static_cast<const Program*>(ctx.state);
  if (p == nullptr) return ctx.node->error("kernel state missing (prepare was not run)");
  return run_program(*p, ctx, ctx.output(0));
}

size_t rank_of(const NodeContext& ctx) {
  size_t r = 0;
  for (const ir::TensorType& t : ctx.input_types) r = std::max(r, t.shape.size());
  return r;
}

Status fused_accepts(const NodeContext& ctx) {
  if (rank_of(ctx) > kMaxProgramRank) {
    return unimplemented("rank above {} (odometer limit)", kMaxProgramRank);
  }
  return Status();
}

// Every present input fp32 and rank within the odometer's limit.
Status single_accepts(const NodeContext& ctx) {
  if (!has_vec_form(ctx.op)) return unimplemented("op '{}' has no vector form", ctx.op);
  for (size_t i = 0; i < ctx.input_types.size(); ++i) {
    if (ctx.op == "where" && i == 0) {  // the condition
      if (!kBoolDType.contains(ctx.input_types[0].dtype))
        return unimplemented("condition not bool");
      continue;
    }
    if (ctx.has_input(i) && !kVecDTypes.contains(ctx.input_types[i].dtype)) {
      return unimplemented("input {} is {}, the vector form is fp32 only", i,
                           dtype_name(ctx.input_types[i].dtype));
    }
  }
  if (ctx.op == "pow" && (ctx.input_types.size() < 2 || numel_of(ctx.input_types[1].shape) != 1)) {
    return unimplemented("pow runs vectorized with a scalar exponent only");
  }
  return fused_accepts(ctx);
}

// Cast between float32 and float16 / bfloat16 where the vector table converts the pair
// (VecTable::convert); any other pair stays on the cpu kernel.
Status cast_accepts(const NodeContext& ctx) {
  if (ctx.schema == nullptr) return unimplemented("no schema");
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out, ctx.schema->infer(ctx));
  const DTypeCode from = ctx.input_types[0].dtype;
  const DTypeCode to = out.at(0).dtype;
  if (vec_table().convert[static_cast<size_t>(from)][static_cast<size_t>(to)] == nullptr) {
    return unimplemented("no vector conversion from {} to {} on this CPU", dtype_name(from),
                         dtype_name(to));
  }
  return fused_accepts(ctx);
}

// The plain kernels are registered for exactly the list ops with a vector form (plus clip,
// prelu, where and pow with a scalar exponent):
// an op gains one by specializing VecOf in ew_vec-inl.h, nothing here changes.
const bool kSingleRegistered = [] {
  auto reg = [](const char* op) {
    if (!has_vec_form(op)) return;
    ops::KernelBuilder b(op, "onednn", program_kernel, __FILE__, __LINE__);
    b.dtypes(kVecDTypes).prepare(single_prepare).accepts(single_accepts);
    if (std::string_view(op) == "where") b.dtype_input(1);  // input 0 is the bool condition
    ops::KernelRegistration r(b);
  };
#define FRAME_ONEDNN_EW_REGISTER(name, F, types, traits, doc) reg(#name);
  FRAME_EW_UNARY_OPS(FRAME_ONEDNN_EW_REGISTER)
  FRAME_EW_BINARY_OPS(FRAME_ONEDNN_EW_REGISTER)
  FRAME_EW_VARIADIC_OPS(FRAME_ONEDNN_EW_REGISTER)
#undef FRAME_ONEDNN_EW_REGISTER
  reg("clip");
  reg("prelu");
  reg("pow");
  reg("where");
  return true;
}();

}  // namespace

FRAME_REGISTER_KERNEL(cast, "onednn", program_kernel)
    .dtypes(DTypeSet{DTypeCode::kFloat32, DTypeCode::kFloat16, DTypeCode::kBFloat16})
    .prepare(single_prepare)
    .accepts(cast_accepts);

FRAME_REGISTER_KERNEL(fused_elementwise_internal, "onednn", program_kernel)
    .dtypes(kAllDTypes)
    .prepare(fused_prepare)
    .accepts(fused_accepts);

}  // namespace frame::backends::onednn
