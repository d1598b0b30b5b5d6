// The `onednn` backend: the optimized CPU backend (docs/backends/onednn.md). oneDNN primitives
// for conv/matmul/pool/normalization and our own Highway kernels register with
// FRAME_REGISTER_KERNEL(op, "onednn", fn); nodes without one fall back through the chain (M10).
namespace frame::backends::onednn {
/// Name under which onednn kernels are registered.
const char* backend_name() { return "onednn"; }
}  // namespace frame::backends::onednn
