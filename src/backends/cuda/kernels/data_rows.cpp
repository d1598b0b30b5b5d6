// cuda kernels of the data-movement ops (every dtype: the generated code moves elements by
// their size) and of the row ops (float dtypes, one warp per row); sources in
// codegen_ops.cpp, prepared and launched like every generated cuda kernel (launch.h).

#include "backends/cuda/codegen.h"
#include "backends/cuda/launch.h"
#include "backends/gpu/reductions.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::cuda {

FRAME_REGISTER_KERNEL(identity, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(reshape, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(flatten, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(squeeze, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(unsqueeze, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(transpose, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(expand, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(slice, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(concat, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(gather, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(gather_elements, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(pad, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(resize, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(gather_nd, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(cast, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(where, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kAllDTypes)
    .dtype_input(1);
FRAME_REGISTER_KERNEL(softmax, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kCudaFloatTypes);
FRAME_REGISTER_KERNEL(log_softmax, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kCudaFloatTypes);
FRAME_REGISTER_KERNEL(layer_normalization, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kCudaFloatTypes);

FRAME_REGISTER_KERNEL(global_average_pool, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kCudaFloatTypes);
FRAME_REGISTER_KERNEL(global_max_pool, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kCudaFloatTypes);
FRAME_REGISTER_KERNEL(clip, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kCudaFloatTypes);

namespace {

// Every reduction of the shared table (src/backends/gpu/reductions.h).
[[maybe_unused]] const bool kReductionsRegistered = [] {
  for (const gpu::Reduction& r : gpu::reductions()) {
    register_generated_kernel(r.op, kCudaFloatTypes, __FILE__, __LINE__);
  }
  return true;
}();

}  // namespace

}  // namespace frame::backends::cuda
