#pragma once
/// \file
/// How many threads one node runs on (private to src/runtime; docs/architecture/
/// execution-model.md, "Threading"): the run's thread count, except for nodes whose work is too
/// small to pay for waking the other threads, which prepare and run on the calling thread.

#include <cstdint>
#include <string_view>

#include "frame/ir/graph.h"
#include "frame/ops/kernel_registry.h"

namespace frame::runtime::detail {

/// Whether `n` has a body (a graph attribute: If, Loop, Scan).
bool has_body(const ir::Node& n);

/// Estimated time of node `n` of `g` on one core, in nanoseconds: the bytes of its typed inputs
/// and outputs at 50 bytes/ns (cache-resident data), or for a conv, conv_transpose, matmul or
/// gemm (also as the base op of a fused_post_ops_internal node) its multiply-adds x 2 at 100
/// flop/ns, whichever is larger. Untyped values count 0. A rough model: it only tells nodes of
/// a few microseconds from the rest.
double node_cost_ns(const ir::Graph& g, const ir::Node& n);

/// Estimated one-core time below which a node runs on one thread (5 us). Measured at 2 threads
/// (2-core AMD EPYC, AVX-512): oneDNN primitives and frame's own loops on nodes of 2-4 us (a
/// squeeze-excitation block's pooling and scaling, its 1x1 convs on [C,1,1]) took 10-24 us each
/// once they woke the second thread; MobileNet-V3-small 1.22-1.34 -> 1.09-1.21 ms per run with
/// libgomp's default spin and 1.25-1.27 -> 1.10-1.13 ms with frame's bounded spin, while
/// MNASNet, SqueezeNet, MobileNet-V2/V3-large stayed within the noise. A 16 us bound cost
/// SqueezeNet and MobileNet-V2 a few percent.
inline constexpr double kSerialNodeNs = 5000;

/// Threads node `n` runs on when the run has `threads` (>= 1): 1 where node_cost_ns is below
/// kSerialNodeNs, else `threads` (always for a node with a body: If, Loop, Scan). The same count
/// must be the OpenMP nthreads ICV when the node's kernel prepares (oneDNN fixes a primitive's
/// thread partition when it is created) and when it runs; compiled plans (Step::threads) and the
/// interpreted tier both set it.
int node_threads(const ir::Graph& g, const ir::Node& n, int threads);

/// `threads` limited by the most threads the kernel of (n's op, `backend`) declares for `n`
/// (ops::KernelDef::max_threads; unchanged where it declares none or 0).
int kernel_thread_cap(const ir::Graph& g, const ir::Node& n, std::string_view backend, int threads);

/// The same limit for a kernel already chosen, `ctx` describing its node: the one rule both
/// compiled plans and the interpreted tier apply.
int kernel_thread_cap(const ops::KernelDef& k, const ops::NodeContext& ctx, int threads);

/// node_threads() of a node without a body whose node_cost_ns is `cost_ns`.
inline int threads_for_cost(double cost_ns, int threads) {
  return threads <= 1 || cost_ns < kSerialNodeNs ? 1 : threads;
}

}  // namespace frame::runtime::detail
