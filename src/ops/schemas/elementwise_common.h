#pragma once
/// \file
/// Schema helpers private to the elementwise family: turning an X-macro entry of
/// frame/ops/elementwise.h (functor, dtypes, trait mask, doc) into an OpSchemaBuilder.

#include <string>
#include <type_traits>
#include <vector>

#include "frame/ops/elementwise.h"
#include "frame/ops/op_schema.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops::ew {

/// Adds the traits of `mask` (bits of OpTrait) to `b`.
inline OpSchemaBuilder& add_traits(OpSchemaBuilder& b, uint32_t mask) {
  for (OpTrait t :
       {OpTrait::kElementwise, OpTrait::kFusable, OpTrait::kHasSideEffect, OpTrait::kCommutative}) {
    if (mask & trait_bit(t)) b.traits({t});
  }
  return b;
}

/// Declares the functor's attributes (F::kAttrs) with their ONNX defaults.
template <typename F>
OpSchemaBuilder& add_functor_attrs(OpSchemaBuilder& b) {
  if constexpr (requires { F::kAttrs; }) {
    for (const AttrDecl& a : F::kAttrs) {
      if (a.required) {
        b.required_attr(a.name, a.type, a.doc);
      } else if (a.type == ir::AttrType::kFloat) {
        b.attr(a.name, a.type, a.doc, ir::AttrValue(a.f));
      } else if (a.type == ir::AttrType::kInt) {
        b.attr(a.name, a.type, a.doc, ir::AttrValue(a.i));
      } else {
        b.attr(a.name, a.type, a.doc, ir::AttrValue(std::string(a.s)));
      }
    }
  }
  return b;
}

/// True when functor F yields bool whatever its input type (comparisons, is_nan, not).
template <template <typename> class F>
inline constexpr bool kBoolOutput = std::is_same_v<typename F<float>::out_type, bool>;

/// Output 0 has the (broadcast) shape of every present input; dtype of input 0 or bool.
template <bool kBoolOut>
Result<std::vector<ir::TensorType>> broadcast_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(Shape shape, broadcast_present_inputs(ctx));
  return one_output(kBoolOut ? DTypeCode::kBool : ctx.input_types[0].dtype, std::move(shape));
}

}  // namespace frame::ops::ew
