#pragma once
// Private to src/onnx: the sequence and optional ops of ONNX, computed on run-time values by
// the staged runner (docs/adr/0008-data-dependent-shapes.md, "Sequences and optionals").
// Sequences and optionals are never IR values: a compiled graph holds tensors only.

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "frame/core/status.h"
#include "frame/runtime/session.h"

namespace frame::onnx::detail {

/// Whether `n` is one of the ops below (default domain): SequenceConstruct, SequenceEmpty,
/// SequenceInsert, SequenceErase, SequenceAt, SequenceLength, SplitToSequence,
/// ConcatFromSequence, Optional, OptionalHasElement, OptionalGetElement. Identity counts too
/// (it passes any value through). SequenceMap is control flow (a body), not listed here.
bool is_value_op(const ::onnx::NodeProto& n);

/// What a value is as the ONNX type system says: a tensor, a sequence of tensors, or an
/// optional of either.
enum class ValueKind { kTensor, kSequence, kOptionalTensor, kOptionalSequence };

/// The kind of the ONNX type `t` (a map or an unset type counts as a tensor).
ValueKind kind_of_type(const ::onnx::TypeProto& t);

/// The kind of the outputs of value op `n` when its inputs have the kinds given (omitted
/// inputs: kTensor). Used to decide which later nodes read sequences or optionals.
ValueKind value_op_output_kind(const ::onnx::NodeProto& n, const std::vector<ValueKind>& inputs);

/// Computes value op `n` (ONNX operator spec, the op's section) on `inputs` (nullopt for an
/// omitted optional input). Tensors in the results may share storage with the inputs.
/// Errors: kInvalidArgument naming the op, input and what is wrong (a tensor where a sequence
/// is expected, a position out of range, mismatched element dtypes or shapes, an empty
/// optional read by OptionalGetElement, a split that does not sum to the axis length).
Result<std::vector<runtime::Value>> run_value_op(
    const ::onnx::NodeProto& n, const std::vector<std::optional<runtime::Value>>& inputs);

/// Stacks `elements` (each of one shape and dtype) along a new leading axis: the scan outputs
/// of a Loop. With no elements: `dtype` and shape [0] followed by `element_shape` (the body's
/// declared per-iteration shape, when fixed), else [0]. Errors: kInvalidArgument when shapes
/// or dtypes differ, naming `what`.
Result<Tensor> stack_tensors(const std::vector<Tensor>& elements, DTypeCode dtype,
                             const std::optional<Shape>& element_shape, const std::string& what);

}  // namespace frame::onnx::detail
