#pragma once
/// \file
/// Runs one op on concrete tensors through the registries, the way the runtime does: schema
/// check, shape inference (OpSchema::infer), kernel lookup for (op, backend), optional prepare,
/// preallocated outputs, kernel call. Shared by the op database harness, the property tests,
/// the decomposition tests and backend-vs-cpu cross checks.

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/ops/device_group.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/ops/op_schema.h"

namespace frame::test {

/// One op invocation. `inputs[i]` undefined (Tensor()) marks an absent optional input.
struct OpCall {
  std::string op;
  std::vector<Tensor> inputs{};
  ir::AttrMap attrs{};
  /// Input positions shown to shape inference as constants (NodeContext::input_constants).
  std::vector<size_t> constant_inputs{};
  size_t num_outputs = 1;
  std::string node_name = "n";
  /// OpenMP threads the kernel may use.
  int num_threads = 1;
  /// NodeContext::prefer_shape_agnostic (a Session's first-seen tier, ADR 0007).
  bool prefer_shape_agnostic = false;
  /// NodeContext::run_once (the interpreted tier, ADR 0007).
  bool run_once = false;
};

namespace detail {

/// A call checked against its schema and shape-inferred: the node context kernels see and the
/// inferred output types. Borrows `call` (attrs, constant inputs).
struct CheckedCall {
  ops::NodeContext ctx;
  std::vector<ir::TensorType> types;
};

/// Schema check (V4) and shape inference of `call`; errors carry the stage ("schema: ",
/// "shape inference: "), a missing op is kNotFound.
inline Result<CheckedCall> check_call(const OpCall& call) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(call.op);
  if (schema == nullptr) return not_found("op '{}' is not registered", call.op);

  // A node only for the V4 schema check (arity, attrs).
  ir::Node node;
  node.name = call.node_name;
  node.op = call.op;
  node.attrs = call.attrs;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    node.inputs.push_back(call.inputs[i].defined() ? static_cast<ir::ValueId>(i) : ir::kNoValue);
  }
  for (size_t i = 0; i < call.num_outputs; ++i) {
    node.outputs.push_back(static_cast<ir::ValueId>(call.inputs.size() + i));
  }
  if (Status s = schema->check_node(node); !s.is_ok()) return s.with_prefix("schema: ");

  CheckedCall c;
  ops::NodeContext& ctx = c.ctx;
  ctx.op = call.op;
  ctx.node_name = call.node_name;
  ctx.attrs = &call.attrs;
  ctx.schema = schema;
  ctx.num_outputs = call.num_outputs;
  ctx.prefer_shape_agnostic = call.prefer_shape_agnostic;
  ctx.run_once = call.run_once;
  for (const Tensor& t : call.inputs) {
    ctx.input_types.push_back(t.defined() ? ir::TensorType{t.dtype(), t.shape()}
                                          : ir::TensorType{});
    ctx.input_present.push_back(t.defined());
    ctx.input_constants.push_back(nullptr);
  }
  for (size_t i : call.constant_inputs) {
    if (i < call.inputs.size() && call.inputs[i].defined()) {
      ctx.input_constants[i] = &call.inputs[i];
    }
  }
  Result<std::vector<ir::TensorType>> types = schema->infer(ctx);
  if (!types.is_ok()) return types.status().with_prefix("shape inference: ");
  c.types = std::move(types).value();
  return c;
}

}  // namespace detail

/// Answer of kernel_supports.
struct KernelSupport {
  bool supported = false;
  /// Why the kernel declines (KernelDef::supports message) when !supported.
  std::string reason;
};

/// Whether the `backend` kernel can run `call` (KernelDef::supports: dtype and the kernel's
/// `accepts`; a declined node takes the fallback chain, M10). Errors: schema or shape-inference
/// failures, and kNotFound when the op has no `backend` kernel.
inline Result<KernelSupport> kernel_supports(const OpCall& call, std::string_view backend) {
  FRAME_ASSIGN_OR_RETURN(detail::CheckedCall c, detail::check_call(call));
  const ops::KernelDef* kernel = ops::KernelRegistry::global().find(call.op, backend);
  if (kernel == nullptr) return not_found("op '{}' has no '{}' kernel", call.op, backend);
  const Status s = kernel->supports(c.ctx);
  return KernelSupport{s.is_ok(), s.message()};
}

/// Runs `call` with the `backend` kernel. Errors carry the stage: "schema: ...",
/// "shape inference: ...", "kernel: ..." (a missing op or kernel is kNotFound naming it).
/// On success returns the outputs, allocated with the inferred types. Output buffers are
/// pre-filled with 0xFF bytes (NaN for floats) so an element a kernel forgets to write shows.
inline Result<std::vector<Tensor>> run_op(const OpCall& call, std::string_view backend = "cpu") {
  FRAME_ASSIGN_OR_RETURN(detail::CheckedCall c, detail::check_call(call));
  const ops::NodeContext& ctx = c.ctx;
  const ops::KernelDef* kernel = ops::KernelRegistry::global().find(call.op, backend);
  if (kernel == nullptr) return not_found("op '{}' has no '{}' kernel", call.op, backend);
  if (Status s = kernel->supports(ctx); !s.is_ok()) return s.with_prefix("kernel: ");

  std::vector<Tensor> outputs;
  for (const ir::TensorType& t : c.types) {
    FRAME_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(t.dtype, t.shape));
    if (out.nbytes() > 0) std::memset(out.raw_data(), 0xFF, out.nbytes());
    outputs.push_back(std::move(out));
  }
  std::shared_ptr<void> state;
  if (kernel->prepare != nullptr) {
    Result<std::shared_ptr<void>> st = kernel->prepare(ctx);
    if (!st.is_ok()) return st.status().with_prefix("kernel prepare: ");
    state = *st;
  }
  ops::KernelContext kctx;
  kctx.node = &ctx;
  kctx.inputs = call.inputs;
  kctx.outputs = outputs;
  kctx.state = state.get();
  kctx.num_threads = call.num_threads;
  if (Status s = kernel->fn(kctx); !s.is_ok()) return s.with_prefix("kernel: ");
  return outputs;
}

/// Runs `call` as a one-node device group of `backend` (include/frame/ops/device_group.h): the
/// path the runtime takes for a device backend, with inputs copied to device memory,
/// sub-buffers bound and outputs read back, so each op-database case also checks a kernel's
/// binding inside a group. kNotFound when `backend` has no group compiler; other errors carry
/// the stage ("group compile: ", "group run: ").
inline Result<std::vector<Tensor>> run_op_in_device_group(const OpCall& call,
                                                          std::string_view backend) {
  ops::DeviceGroupCompiler compiler = ops::find_device_group_compiler(backend);
  if (compiler == nullptr) return not_found("backend '{}' has no device group compiler", backend);
  FRAME_ASSIGN_OR_RETURN(detail::CheckedCall c, detail::check_call(call));
  auto g = std::make_shared<ir::Graph>("group_case");
  std::vector<ir::ValueId> ins;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& t = call.inputs[i];
    const bool constant = std::find(call.constant_inputs.begin(), call.constant_inputs.end(), i) !=
                          call.constant_inputs.end();
    const std::string name = "in" + std::to_string(i);
    ins.push_back(!t.defined() ? ir::kNoValue
                  : constant   ? g->add_constant(name, t)
                               : g->add_input(name, ir::TensorType{t.dtype(), t.shape()}));
  }
  FRAME_ASSIGN_OR_RETURN(
      ir::NodeId id,
      g->create_node(call.op, call.node_name, ins, static_cast<int>(call.num_outputs), call.attrs));
  ops::DeviceGroupSpec spec;
  spec.graph = g.get();
  spec.nodes = {id};
  spec.inputs = ins;
  std::vector<Tensor> outputs;
  for (size_t k = 0; k < c.types.size(); ++k) {
    const ir::ValueId v = g->node(id).outputs[k];
    g->value(v).type = c.types[k];
    g->add_output(v);
    spec.outputs.push_back(v);
    FRAME_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(c.types[k].dtype, c.types[k].shape));
    if (out.nbytes() > 0) std::memset(out.raw_data(), 0xFF, out.nbytes());
    outputs.push_back(std::move(out));
  }
  Result<std::unique_ptr<ops::DeviceGroup>> group = compiler(spec);
  if (!group.is_ok()) return group.status().with_prefix("group compile: ");
  std::shared_ptr<void> state = (*group)->make_run_state();
  if (Status s = (*group)->run(call.inputs, outputs, state.get()); !s.is_ok()) {
    return s.with_prefix("group run: ");
  }
  return outputs;
}

}  // namespace frame::test
