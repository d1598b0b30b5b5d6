// Threads per node (node_threads.h).

#include "runtime/node_threads.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "frame/core/dtype.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::runtime::detail {

namespace {

constexpr double kBytesPerNs = 50;
constexpr double kFlopsPerNs = 100;

const ir::TensorType* type_of(const ir::Graph& g, ir::ValueId v) {
  if (v == ir::kNoValue) return nullptr;
  const std::optional<ir::TensorType>& t = g.value(v).type;
  return t ? &*t : nullptr;
}

double bytes_of(const ir::TensorType* t) {
  if (t == nullptr) return 0;
  return static_cast<double>(numel_of(t->shape)) * static_cast<double>(dtype_size(t->dtype));
}

// Multiply-adds x 2 of a conv-like or matmul-like node, 0 for any other.
double flops_of(const ir::Graph& g, const ir::Node& n) {
  std::string_view op = n.op;
  if (op == ops::fused::kFusedPostOpsOp) {
    auto it = n.attrs.find("base_op");
    const auto* base = it == n.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
    if (base == nullptr) return 0;
    op = *base;
  }
  if (n.inputs.size() < 2 || n.outputs.empty()) return 0;
  const ir::TensorType* a = type_of(g, n.inputs[0]);
  const ir::TensorType* w = type_of(g, n.inputs[1]);
  const ir::TensorType* y = type_of(g, n.outputs[0]);
  if (a == nullptr || w == nullptr || y == nullptr || a->shape.empty() || w->shape.empty()) {
    return 0;
  }
  const auto out = static_cast<double>(numel_of(y->shape));
  if (op == "conv" || op == "conv_transpose") {
    // Each output (conv) or input (conv_transpose) element takes numel(W) / W[0] products.
    if (w->shape[0] <= 0) return 0;
    const double per = static_cast<double>(numel_of(w->shape)) / static_cast<double>(w->shape[0]);
    const double elems = op == "conv" ? out : static_cast<double>(numel_of(a->shape));
    return 2 * elems * per;
  }
  if (op == "matmul" || op == "gemm") {
    // K: A's last dim, or its first for a transposed 2-D gemm A.
    auto it = n.attrs.find("transA");
    const auto* ta = it == n.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
    const int64_t k = ta != nullptr && *ta != 0 ? a->shape.front() : a->shape.back();
    return 2 * out * static_cast<double>(k);
  }
  return 0;
}

}  // namespace

bool has_body(const ir::Node& n) {
  return std::any_of(n.attrs.begin(), n.attrs.end(), [](const auto& a) {
    return std::holds_alternative<std::shared_ptr<const ir::Graph>>(a.second);
  });
}

double node_cost_ns(const ir::Graph& g, const ir::Node& n) {
  double bytes = 0;
  for (ir::ValueId v : n.inputs) bytes += bytes_of(type_of(g, v));
  for (ir::ValueId v : n.outputs) bytes += bytes_of(type_of(g, v));
  return std::max(bytes / kBytesPerNs, flops_of(g, n) / kFlopsPerNs);
}

int node_threads(const ir::Graph& g, const ir::Node& n, int threads) {
  if (threads <= 1) return 1;
  // A node with a body costs what its body does, which its inputs do not tell.
  if (has_body(n)) return threads;
  return threads_for_cost(node_cost_ns(g, n), threads);
}

int kernel_thread_cap(const ir::Graph& g, const ir::Node& n, std::string_view backend,
                      int threads) {
  if (threads <= 1) return threads;
  const ops::KernelDef* k = ops::KernelRegistry::global().find(n.op, backend);
  if (k == nullptr || k->max_threads == nullptr) return threads;
  return kernel_thread_cap(*k, ops::make_node_context(g, n, ops::OpRegistry::global().find(n.op)),
                           threads);
}

int kernel_thread_cap(const ops::KernelDef& k, const ops::NodeContext& ctx, int threads) {
  if (threads <= 1 || k.max_threads == nullptr) return threads;
  const int cap = k.max_threads(ctx);
  return cap > 0 ? std::min(cap, threads) : threads;
}

}  // namespace frame::runtime::detail
