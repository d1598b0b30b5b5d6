// The `cpu` backend: reference kernels for every op (ARCH-041), the numerical oracle and the
// end of the fallback chain (M10). Kernels live in kernels/<family>.cpp and register with
// FRAME_REGISTER_KERNEL(op, "cpu", fn).
namespace frame::backends::cpu {
/// Name under which cpu kernels are registered.
const char* backend_name() { return "cpu"; }
}  // namespace frame::backends::cpu
