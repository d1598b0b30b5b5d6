// frame_cuda_bench [ELEMENTS] (docs/backends/cuda.md, "Measured"): on a GPU, the kernel the cuda
// backend generates for a fused chain of 8 elementwise ops over ELEMENTS f32 values (default
// 2^28, 1 GiB), timed next to a device-to-device copy of the same bytes in the same process.
// Both read N * 4 bytes and write N * 4 bytes; the report gives each one's bytes per second
// and the chain's share of the copy's. Without a usable device it prints the probe's reason
// and exits 2. Timing: 3 warm-up launches, then 20 back-to-back launches between two stream
// synchronizations (host clock), the median of 5 such rounds.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/launch.h"
#include "frame/ir/graph.h"
#include "frame/ops/op_registry.h"

namespace {

using frame::backends::cuda::CudaDevice;
using frame::backends::cuda::CudaLaunch;

// v -> mul a -> add b -> tanh -> mul c -> sigmoid -> sub d -> relu -> add v, with a, b, c, d
// scalar inputs of the body (as operator-fusion passes constants in).
std::shared_ptr<const frame::ir::Graph> chain_body(int64_t n) {
  using frame::ir::Graph;
  auto g = std::make_shared<Graph>("chain");
  const frame::ir::TensorType t{frame::DTypeCode::kFloat32, {n}};
  const frame::ir::TensorType s{frame::DTypeCode::kFloat32, {}};
  const frame::ir::ValueId v = g->add_input("v", t);
  const frame::ir::ValueId a = g->add_input("a", s), b = g->add_input("b", s),
                           c = g->add_input("c", s), d = g->add_input("d", s);
  auto node = [&](const char* op, std::vector<frame::ir::ValueId> in) {
    const frame::ir::NodeId id = *g->create_node(op, "", std::move(in), 1);
    g->value(g->node(id).outputs[0]).type = t;
    return g->node(id).outputs[0];
  };
  frame::ir::ValueId x = node("mul", {v, a});
  x = node("add", {x, b});
  x = node("tanh", {x});
  x = node("mul", {x, c});
  x = node("sigmoid", {x});
  x = node("sub", {x, d});
  x = node("relu", {x});
  x = node("add", {x, v});
  g->add_output(x);
  return g;
}

template <typename F>
double median_seconds(const CudaDevice& dev, F&& enqueue) {
  for (int i = 0; i < 3; ++i) enqueue();
  dev.api->cuStreamSynchronize(nullptr);
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) enqueue();
    dev.api->cuStreamSynchronize(nullptr);
    rounds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                     20);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : (int64_t{1} << 28);
  const CudaDevice* dev = frame::backends::cuda::selected_device();
  if (dev == nullptr) {
    std::printf("no usable CUDA device: %s\n", frame::backends::cuda::unavailable_reason().c_str());
    return 2;
  }
  // The fused node as operator-fusion makes it, prepared by the cuda kernel.
  frame::ir::Graph outer("bench");
  const frame::ir::ValueId x =
      outer.add_input("x", frame::ir::TensorType{frame::DTypeCode::kFloat32, {n}});
  std::vector<frame::ir::ValueId> ins{x};
  for (float v : {1.5F, 0.25F, 0.75F, 0.5F}) {
    ins.push_back(outer.add_constant("", frame::Tensor::scalar<float>(v)));
  }
  frame::ir::AttrMap attrs{{"body", chain_body(n)}};
  const frame::ir::NodeId id =
      *outer.create_node("fused_elementwise_internal", "chain", ins, 1, std::move(attrs));
  const frame::ir::Node& node = outer.node(id);
  const frame::ops::NodeContext ctx =
      frame::ops::make_node_context(outer, node, frame::ops::OpRegistry::global().find(node.op));
  frame::Result<std::shared_ptr<void>> state = frame::backends::cuda::generated_prepare(ctx);
  if (!state.is_ok()) {
    std::printf("prepare failed: %s\n", state.status().to_string().c_str());
    return 1;
  }
  const auto* launch = static_cast<const CudaLaunch*>(state->get());
  const size_t bytes = static_cast<size_t>(n) * 4;
  CUdeviceptr in = 0, out = 0;
  if (dev->api->cuMemAlloc(&in, bytes) != CUDA_SUCCESS ||
      dev->api->cuMemAlloc(&out, bytes) != CUDA_SUCCESS) {
    std::printf("cannot allocate 2 x %zu bytes\n", bytes);
    return 1;
  }
  dev->api->cuMemsetD8Async(in, 0, bytes, nullptr);
  // The four scalars, one after the other in a small buffer.
  CUdeviceptr scalars = 0;
  const float values[] = {1.5F, 0.25F, 0.75F, 0.5F};
  dev->api->cuMemAlloc(&scalars, 256);
  dev->api->cuMemcpyHtoDAsync(scalars, values, sizeof(values), nullptr);
  const CUdeviceptr ptrs[] = {in, scalars, scalars + 4, scalars + 8, scalars + 12};
  const double chain = median_seconds(*dev, [&] { (void)launch->launch(nullptr, ptrs, out); });
  const double copy =
      median_seconds(*dev, [&] { dev->api->cuMemcpyDtoDAsync(out, in, bytes, nullptr); });
  const double moved = 2.0 * static_cast<double>(bytes);  // read + write, both
  std::printf("device: %s (compute capability %d.%d)\n", dev->name.c_str(),
              dev->compute_capability / 10, dev->compute_capability % 10);
  std::printf("fused 8-op chain over %lld f32: %.3f ms, %.1f GB/s (%.0f bytes read + written)\n",
              static_cast<long long>(n), chain * 1e3, moved / chain / 1e9, moved);
  std::printf("device-to-device copy of %zu bytes: %.3f ms, %.1f GB/s\n", bytes, copy * 1e3,
              moved / copy / 1e9);
  std::printf("chain / copy bandwidth: %.1f%% (target: at least 80%%)\n", 100.0 * copy / chain);
  dev->api->cuMemFree(in);
  dev->api->cuMemFree(out);
  dev->api->cuMemFree(scalars);
  return 0;
}
