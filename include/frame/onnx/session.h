#pragma once
/// \file
/// Inference sessions over ONNX models (docs/adr/0006-run-time-specialization.md;
/// docs/architecture/execution-model.md "Sessions and run-time specialization"). The model is
/// parsed and its initializers converted once; each specialization (concrete input shapes and
/// shape-determining input values of a run) is imported through LoadOptions::input_shapes and
/// LoadOptions::constant_inputs, sharing those converted tensors, and compiled by the runtime.

#include <string>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/onnx/onnx.h"
#include "frame/passes/shape_determining.h"
#include "frame/runtime/session.h"

namespace frame::onnx {

/// Opens the ONNX model at `path` as a session. Declared inputs and outputs come from the
/// graph's value infos (dim_param dims are symbolic `runtime::Dim`s); the shape-determining
/// inputs are found by a structure-only import (LoadOptions::keep_untyped) and
/// passes::shape_determining_inputs. Of `load`, only the limits (LoadLimits) and verify
/// are used (input_shapes, constant_inputs and keep_untyped must be empty/false: a
/// session reads shapes and values from each run's tensors).
/// Errors: as load() (kIo, kInvalidArgument, kUnimplemented listing unsupported ops), plus
/// kInvalidArgument for a graph input whose element type frame lacks, naming the input.
Result<runtime::Session> open_session(const std::string& path,
                                      const runtime::SessionOptions& options = {},
                                      const LoadOptions& load = {});

/// Like open_session, from serialized ModelProto bytes; `model_dir` resolves external data
/// (empty: external data is rejected).
Result<runtime::Session> open_session_from_bytes(std::string_view bytes,
                                                 const runtime::SessionOptions& options = {},
                                                 const LoadOptions& load = {},
                                                 const std::string& model_dir = "");

/// Reads a serialized ONNX value file (the backend tests' `input_N.pb` / `output_N.pb`) as a
/// run value for a declared input or output: a TensorProto for a tensor, a SequenceProto
/// (of tensors) for `declared.sequence`, an OptionalProto for `declared.optional` (absent:
/// Value::none()). UINT16 data is read as bfloat16 bits where `declared.dtype` is kBFloat16
/// (read_tensor_proto). `name_out`, when not null, receives the proto's name.
/// Errors: kIo (unreadable or malformed); kInvalidArgument for a sequence of maps or
/// sequences, or an element type frame lacks.
Result<runtime::Value> read_value_proto(const std::string& path, const runtime::ValueInfo& declared,
                                        std::string* name_out = nullptr);

/// The classification open_session makes (ADR 0006): the declared inputs a session over the
/// model at `path` binds per run, in model order, each with the positions its value reaches
/// (IR nodes of the structure-only import at placeholder shapes, symbolic dims as 1; and ONNX
/// nodes whose converter reads the value at import, with `node` -1 and the ONNX op_type as
/// `op`). One function for every surface: `frame inspect`, `frame run --json` and Python's
/// `InferenceSession.shape_determining_inputs()` list the same names, with or without
/// concrete shapes given. `load` as for open_session. Errors: as open_session.
Result<std::vector<passes::ShapeDeterminingInput>> classify_inputs(const std::string& path,
                                                                   const LoadOptions& load = {});

}  // namespace frame::onnx
