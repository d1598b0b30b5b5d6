// cuDNN opened with dlopen, and the conv / pooling / batch-norm plans of the cuda backend
// (dnn.h).

#include "backends/cuda/dnn.h"

#include <cudnn.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "backends/cuda/blas.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::backends::cuda {
namespace {

struct DnnApi {
#define FRAME_DNN_FN(name) decltype(&::name) name = nullptr;
  FRAME_DNN_FN(cudnnCreate)
  FRAME_DNN_FN(cudnnSetStream)
  FRAME_DNN_FN(cudnnGetErrorString)
  FRAME_DNN_FN(cudnnCreateTensorDescriptor)
  FRAME_DNN_FN(cudnnSetTensorNdDescriptor)
  FRAME_DNN_FN(cudnnDestroyTensorDescriptor)
  FRAME_DNN_FN(cudnnCreateFilterDescriptor)
  FRAME_DNN_FN(cudnnSetFilterNdDescriptor)
  FRAME_DNN_FN(cudnnDestroyFilterDescriptor)
  FRAME_DNN_FN(cudnnCreateConvolutionDescriptor)
  FRAME_DNN_FN(cudnnSetConvolutionNdDescriptor)
  FRAME_DNN_FN(cudnnSetConvolutionGroupCount)
  FRAME_DNN_FN(cudnnSetConvolutionMathType)
  FRAME_DNN_FN(cudnnDestroyConvolutionDescriptor)
  FRAME_DNN_FN(cudnnGetConvolutionForwardAlgorithm_v7)
  FRAME_DNN_FN(cudnnConvolutionForward)
  FRAME_DNN_FN(cudnnGetConvolutionBackwardDataAlgorithm_v7)
  FRAME_DNN_FN(cudnnConvolutionBackwardData)
  FRAME_DNN_FN(cudnnAddTensor)
  FRAME_DNN_FN(cudnnCreatePoolingDescriptor)
  FRAME_DNN_FN(cudnnSetPoolingNdDescriptor)
  FRAME_DNN_FN(cudnnDestroyPoolingDescriptor)
  FRAME_DNN_FN(cudnnPoolingForward)
  FRAME_DNN_FN(cudnnBatchNormalizationForwardInference)
#undef FRAME_DNN_FN
  // One handle per process, made at the first plan; a call sets its stream and enqueues under
  // `mu` (a handle's stream is shared state).
  cudnnHandle_t handle = nullptr;
  std::mutex mu;
  std::string reason;  // "" when usable
};

constexpr const char* kSoname = "libcudnn.so.9";

DnnApi& api() {
  static DnnApi* a = [] {
    auto* d = new DnnApi();  // never destroyed: plans may outlive static teardown
    std::string tried;
    void* lib = open_toolkit_library(kSoname, tried);
    if (lib == nullptr) {
      d->reason = fmt::format("cuDNN not found ({})", tried);
      return d;
    }
    std::string missing;
    auto get = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (fn == nullptr && missing.empty()) missing = symbol;
    };
#define FRAME_DNN_GET(name) get(d->name, #name);
    FRAME_DNN_GET(cudnnCreate)
    FRAME_DNN_GET(cudnnSetStream)
    FRAME_DNN_GET(cudnnGetErrorString)
    FRAME_DNN_GET(cudnnCreateTensorDescriptor)
    FRAME_DNN_GET(cudnnSetTensorNdDescriptor)
    FRAME_DNN_GET(cudnnDestroyTensorDescriptor)
    FRAME_DNN_GET(cudnnCreateFilterDescriptor)
    FRAME_DNN_GET(cudnnSetFilterNdDescriptor)
    FRAME_DNN_GET(cudnnDestroyFilterDescriptor)
    FRAME_DNN_GET(cudnnCreateConvolutionDescriptor)
    FRAME_DNN_GET(cudnnSetConvolutionNdDescriptor)
    FRAME_DNN_GET(cudnnSetConvolutionGroupCount)
    FRAME_DNN_GET(cudnnSetConvolutionMathType)
    FRAME_DNN_GET(cudnnDestroyConvolutionDescriptor)
    FRAME_DNN_GET(cudnnGetConvolutionForwardAlgorithm_v7)
    FRAME_DNN_GET(cudnnConvolutionForward)
    FRAME_DNN_GET(cudnnGetConvolutionBackwardDataAlgorithm_v7)
    FRAME_DNN_GET(cudnnConvolutionBackwardData)
    FRAME_DNN_GET(cudnnAddTensor)
    FRAME_DNN_GET(cudnnCreatePoolingDescriptor)
    FRAME_DNN_GET(cudnnSetPoolingNdDescriptor)
    FRAME_DNN_GET(cudnnDestroyPoolingDescriptor)
    FRAME_DNN_GET(cudnnPoolingForward)
    FRAME_DNN_GET(cudnnBatchNormalizationForwardInference)
#undef FRAME_DNN_GET
    if (!missing.empty()) d->reason = fmt::format("{} lacks {}", kSoname, missing);
    return d;
  }();
  return *a;
}

Status dnn_check(const DnnApi& a, cudnnStatus_t st, std::string_view what) {
  if (st == CUDNN_STATUS_SUCCESS) return Status();
  return internal_error("cuda: {}: {}", what, a.cudnnGetErrorString(st));
}

constexpr DTypeSet kConvTypes{DTypeCode::kFloat32, DTypeCode::kFloat64, DTypeCode::kFloat16,
                              DTypeCode::kBFloat16};
// cuDNN's batch norm wants float parameters for half data while ONNX gives them the data's
// dtype: f32 and f64 only.
constexpr DTypeSet kBatchNormTypes{DTypeCode::kFloat32, DTypeCode::kFloat64};
constexpr DTypeSet kDouble{DTypeCode::kFloat64};
constexpr DTypeSet kF16{DTypeCode::kFloat16};
constexpr DTypeSet kBf16{DTypeCode::kBFloat16};

cudnnDataType_t dnn_type(DTypeCode d) {
  return kDouble.contains(d) ? CUDNN_DATA_DOUBLE
         : kF16.contains(d)  ? CUDNN_DATA_HALF
         : kBf16.contains(d) ? CUDNN_DATA_BFLOAT16
                             : CUDNN_DATA_FLOAT;
}

// kConvTranspose: ONNX ConvTranspose is cuDNN's backward-data pass of the conv that maps its
// output to its input (W [C_in, C_out / group, k...] is that conv's filter as it stands).
enum class Kind : uint8_t { kConv, kConvTranspose, kMaxPool, kAveragePool, kBatchNorm };

// What a node asks of cuDNN, from shapes and attributes (no device).
struct DnnShape {
  Kind kind = Kind::kConv;
  DTypeCode dtype = DTypeCode::kFloat32;
  std::vector<int> x, w, y;  // dims (batch norm: padded to rank 4 with 1s)
  std::vector<int> window, pads, strides, dilations;
  int groups = 1;
  bool bias = false;
  bool count_include_pad = false;
  double epsilon = 1e-5;
};

std::vector<int> ints(std::span<const int64_t> v) { return {v.begin(), v.end()}; }

Result<DnnShape> dnn_shape(const ops::NodeContext& ctx) {
  DnnShape s;
  if (ctx.num_inputs() == 0 || !ctx.has_input(0)) return unimplemented("no input");
  s.dtype = ctx.input_types[0].dtype;
  const Shape& x = ctx.input_types[0].shape;
  for (size_t k = 1; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && ctx.input_types[k].dtype != s.dtype) {
      return unimplemented("inputs of different dtypes");
    }
  }
  for (int64_t d : x) {
    if (d > INT32_MAX) return unimplemented("a dim of {} elements", d);
  }
  if (ctx.op == "batch_normalization") {
    s.kind = Kind::kBatchNorm;
    if (!kBatchNormTypes.contains(s.dtype))
      return unimplemented("batch norm over {}", dtype_name(s.dtype));
    if (ctx.num_outputs > 1 || ctx.attr_or<int64_t>("training_mode", 0) != 0) {
      return unimplemented("batch norm in training mode");
    }
    if (x.size() < 2 || x.size() > 5) return unimplemented("batch norm of rank {}", x.size());
    s.x = ints(x);
    while (s.x.size() < 4) s.x.push_back(1);
    s.y = s.x;
    s.epsilon = ctx.attr_or<double>("epsilon", 1e-5);
    return s;
  }
  if (x.size() != 4 && x.size() != 5) return unimplemented("rank {} (cuDNN: 4 or 5)", x.size());
  if (!kConvTypes.contains(s.dtype)) return unimplemented("dtype {}", dtype_name(s.dtype));
  const std::span<const int64_t> spatial(x.data() + 2, x.size() - 2);
  ops::nn::WindowGeometry g;
  if (ctx.op == "conv") {
    s.kind = Kind::kConv;
    if (ctx.num_inputs() < 2 || !ctx.has_input(1)) return unimplemented("conv without W");
    const Shape& w = ctx.input_types[1].shape;
    if (w.size() != x.size()) return ctx.error("cuda: conv W of rank {}", w.size());
    FRAME_ASSIGN_OR_RETURN(
        g,
        ops::nn::resolve_window(ctx, spatial, std::span<const int64_t>(w.data() + 2, w.size() - 2),
                                ops::nn::WindowKind::kConv));
    s.w = ints(w);
    s.groups = static_cast<int>(ctx.attr_or<int64_t>("group", 1));
    s.bias = ctx.num_inputs() > 2 && ctx.has_input(2);
    s.y = {static_cast<int>(x[0]), static_cast<int>(w[0])};
  } else if (ctx.op == "conv_transpose") {
    s.kind = Kind::kConvTranspose;
    if (ctx.num_inputs() < 2 || !ctx.has_input(1)) return unimplemented("conv_transpose without W");
    const Shape& w = ctx.input_types[1].shape;
    if (w.size() != x.size()) return ctx.error("cuda: conv_transpose W of rank {}", w.size());
    FRAME_ASSIGN_OR_RETURN(
        g,
        ops::nn::resolve_window(ctx, spatial, std::span<const int64_t>(w.data() + 2, w.size() - 2),
                                ops::nn::WindowKind::kConvTranspose));
    s.w = ints(w);
    s.groups = static_cast<int>(ctx.attr_or<int64_t>("group", 1));
    s.bias = ctx.num_inputs() > 2 && ctx.has_input(2);
    s.y = {static_cast<int>(x[0]), static_cast<int>(w[1]) * s.groups};
  } else if (ctx.op == "max_pool" || ctx.op == "average_pool") {
    s.kind = ctx.op == "max_pool" ? Kind::kMaxPool : Kind::kAveragePool;
    if (ctx.num_outputs > 1) return unimplemented("max_pool with its Indices output");
    if (ctx.attr_or<int64_t>("ceil_mode", 0) != 0) return unimplemented("ceil_mode");
    const auto* kernel = ctx.attr<std::vector<int64_t>>("kernel_shape");
    if (kernel == nullptr) return ctx.error("cuda: kernel_shape is missing");
    FRAME_ASSIGN_OR_RETURN(
        g, ops::nn::resolve_window(ctx, spatial, *kernel, ops::nn::WindowKind::kPool));
    for (int64_t d : g.dilations) {
      if (d != 1) return unimplemented("pooling with dilations");
    }
    s.count_include_pad = ctx.attr_or<int64_t>("count_include_pad", 0) != 0;
    s.window = ints(g.kernel);
    s.y = {static_cast<int>(x[0]), static_cast<int>(x[1])};
  } else {
    return unimplemented("op '{}' has no cuDNN mapping", ctx.op);
  }
  for (size_t d = 0; d < g.pad_begin.size(); ++d) {
    if (g.pad_begin[d] != g.pad_end[d])
      return unimplemented("asymmetric pads (cuDNN pads both ends alike)");
  }
  s.x = ints(x);
  s.pads = ints(g.pad_begin);
  s.strides = ints(g.strides);
  s.dilations = ints(g.dilations);
  for (int64_t o : g.out) s.y.push_back(static_cast<int>(o));
  return s;
}

std::vector<int> packed_strides(const std::vector<int>& dims) {
  std::vector<int> st(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) st[d - 1] = st[d] * dims[d];
  return st;
}

bool tf32_allowed() {
  const char* v = std::getenv(kTf32Env);
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// The first of cuDNN's ranked algorithms (forward or backward-data perf results) that succeeded,
// fits in `max_workspace` and keeps to FMA math when that was asked for; nullptr if none.
template <typename Perf, size_t N>
const Perf* first_usable(const std::array<Perf, N>& perf, int found, size_t max_workspace,
                         cudnnMathType_t math) {
  for (int i = 0; i < found && static_cast<size_t>(i) < N; ++i) {
    const Perf& r = perf[static_cast<size_t>(i)];
    if (r.status != CUDNN_STATUS_SUCCESS || r.memory > max_workspace) continue;
    if (math == CUDNN_FMA_MATH && r.mathType == CUDNN_TENSOR_OP_MATH) continue;
    return &r;
  }
  return nullptr;
}

}  // namespace

const std::string& cudnn_unavailable_reason() { return api().reason; }

Status dnn_supports(const ops::NodeContext& ctx) { return dnn_shape(ctx).status(); }

struct DnnPlan::Impl {
  DnnApi* api = nullptr;
  DnnShape s;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwd_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  size_t workspace = 0;

  ~Impl() {
    if (api == nullptr) return;
    for (cudnnTensorDescriptor_t t : {x, y, bias}) {
      if (t != nullptr) api->cudnnDestroyTensorDescriptor(t);
    }
    if (w != nullptr) api->cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) api->cudnnDestroyConvolutionDescriptor(conv);
    if (pool != nullptr) api->cudnnDestroyPoolingDescriptor(pool);
  }

  Status tensor(cudnnTensorDescriptor_t& t, const std::vector<int>& dims, const char* what) {
    FRAME_RETURN_IF_ERROR(dnn_check(*api, api->cudnnCreateTensorDescriptor(&t), what));
    const std::vector<int> st = packed_strides(dims);
    return dnn_check(
        *api,
        api->cudnnSetTensorNdDescriptor(t, dnn_type(s.dtype), static_cast<int>(dims.size()),
                                        dims.data(), st.data()),
        what);
  }
};

DnnPlan::~DnnPlan() = default;

Result<std::shared_ptr<DnnPlan>> DnnPlan::make(const CudaDevice& dev, const ops::NodeContext& ctx,
                                               size_t max_workspace) {
  DnnApi& a = api();
  if (!a.reason.empty()) return unimplemented("cuda: {}", a.reason);
  FRAME_ASSIGN_OR_RETURN(DnnShape s, dnn_shape(ctx));
  FRAME_RETURN_IF_ERROR(make_current(dev));
  {
    std::lock_guard lock(a.mu);
    if (a.handle == nullptr)
      FRAME_RETURN_IF_ERROR(dnn_check(a, a.cudnnCreate(&a.handle), "cudnnCreate"));
  }
  std::shared_ptr<DnnPlan> plan(new DnnPlan());
  plan->impl_ = std::make_unique<Impl>();
  Impl& p = *plan->impl_;
  p.api = &a;
  p.s = s;
  FRAME_RETURN_IF_ERROR(p.tensor(p.x, s.x, "input descriptor"));
  FRAME_RETURN_IF_ERROR(p.tensor(p.y, s.y, "output descriptor"));
  const int spatial = static_cast<int>(s.x.size()) - 2;
  if (s.kind == Kind::kBatchNorm) {
    // Scale, bias, mean and variance: one value per channel, [1, C, 1, 1(, 1)].
    std::vector<int> c(s.x.size(), 1);
    c[1] = s.x[1];
    FRAME_RETURN_IF_ERROR(p.tensor(p.bias, c, "batch norm parameter descriptor"));
    return plan;
  }
  if (s.kind == Kind::kMaxPool || s.kind == Kind::kAveragePool) {
    FRAME_RETURN_IF_ERROR(
        dnn_check(a, a.cudnnCreatePoolingDescriptor(&p.pool), "pooling descriptor"));
    const cudnnPoolingMode_t mode = s.kind == Kind::kMaxPool ? CUDNN_POOLING_MAX
                                    : s.count_include_pad
                                        ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                        : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    FRAME_RETURN_IF_ERROR(
        dnn_check(a,
                  a.cudnnSetPoolingNdDescriptor(p.pool, mode, CUDNN_PROPAGATE_NAN, spatial,
                                                s.window.data(), s.pads.data(), s.strides.data()),
                  "pooling descriptor"));
    return plan;
  }
  // conv
  FRAME_RETURN_IF_ERROR(dnn_check(a, a.cudnnCreateFilterDescriptor(&p.w), "filter descriptor"));
  FRAME_RETURN_IF_ERROR(
      dnn_check(a,
                a.cudnnSetFilterNdDescriptor(p.w, dnn_type(s.dtype), CUDNN_TENSOR_NCHW,
                                             static_cast<int>(s.w.size()), s.w.data()),
                "filter descriptor"));
  FRAME_RETURN_IF_ERROR(
      dnn_check(a, a.cudnnCreateConvolutionDescriptor(&p.conv), "convolution descriptor"));
  // f16 / bf16 accumulate in float (the cpu contract's compute type), f64 in double.
  const cudnnDataType_t compute = kDouble.contains(s.dtype) ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  FRAME_RETURN_IF_ERROR(dnn_check(
      a,
      a.cudnnSetConvolutionNdDescriptor(p.conv, spatial, s.pads.data(), s.strides.data(),
                                        s.dilations.data(), CUDNN_CROSS_CORRELATION, compute),
      "convolution descriptor"));
  FRAME_RETURN_IF_ERROR(
      dnn_check(a, a.cudnnSetConvolutionGroupCount(p.conv, s.groups), "group count"));
  // f32 stays full f32 (no TF32) unless FRAME_CUDA_TF32=1; f16 / bf16 may use tensor cores.
  const bool f32 = DTypeSet{DTypeCode::kFloat32}.contains(s.dtype);
  const cudnnMathType_t math = f32 && !tf32_allowed() ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  FRAME_RETURN_IF_ERROR(dnn_check(a, a.cudnnSetConvolutionMathType(p.conv, math), "math type"));
  if (s.bias) {
    std::vector<int> b(s.x.size(), 1);
    b[1] = s.y[1];
    FRAME_RETURN_IF_ERROR(p.tensor(p.bias, b, "bias descriptor"));
  }
  if (s.kind == Kind::kConvTranspose) {
    // The backward-data pass of the conv from Y's shape (dx) to X's (dy).
    std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
    int found = 0;
    {
      std::lock_guard lock(a.mu);
      FRAME_RETURN_IF_ERROR(dnn_check(
          a,
          a.cudnnGetConvolutionBackwardDataAlgorithm_v7(
              a.handle, p.w, p.x, p.conv, p.y, static_cast<int>(perf.size()), &found, perf.data()),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
    }
    if (const auto* r = first_usable(perf, found, max_workspace, math)) {
      p.bwd_algo = r->algo;
      p.workspace = plan->workspace_ = r->memory;
      return plan;
    }
    return unimplemented(
        "cuda: cuDNN offers no algorithm for this conv_transpose within {} bytes of workspace",
        max_workspace);
  }
  std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
  int found = 0;
  {
    std::lock_guard lock(a.mu);
    FRAME_RETURN_IF_ERROR(dnn_check(
        a,
        a.cudnnGetConvolutionForwardAlgorithm_v7(
            a.handle, p.x, p.w, p.conv, p.y, static_cast<int>(perf.size()), &found, perf.data()),
        "cudnnGetConvolutionForwardAlgorithm_v7"));
  }
  if (const auto* r = first_usable(perf, found, max_workspace, math)) {
    p.algo = r->algo;
    p.workspace = plan->workspace_ = r->memory;
    return plan;
  }
  return unimplemented("cuda: cuDNN offers no algorithm for this conv within {} bytes of workspace",
                       max_workspace);
}

Status DnnPlan::run(CUstream stream, std::span<const CUdeviceptr> in, CUdeviceptr out,
                    CUdeviceptr workspace) const {
  const Impl& p = *impl_;
  DnnApi& a = *p.api;
  const bool dbl = kDouble.contains(p.s.dtype);
  const float one_f = 1.0F, zero_f = 0.0F;
  const double one_d = 1.0, zero_d = 0.0;
  const void* one = dbl ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = dbl ? static_cast<const void*>(&zero_d) : &zero_f;
  auto ptr = [&](size_t k) { return reinterpret_cast<const void*>(k < in.size() ? in[k] : 0); };
  auto* y = reinterpret_cast<void*>(out);
  std::lock_guard lock(a.mu);
  FRAME_RETURN_IF_ERROR(dnn_check(a, a.cudnnSetStream(a.handle, stream), "cudnnSetStream"));
  switch (p.s.kind) {
    case Kind::kBatchNorm:
      return dnn_check(a,
                       a.cudnnBatchNormalizationForwardInference(
                           a.handle, CUDNN_BATCHNORM_SPATIAL, one, zero, p.x, ptr(0), p.y, y,
                           p.bias, ptr(1), ptr(2), ptr(3), ptr(4), p.s.epsilon),
                       "cudnnBatchNormalizationForwardInference");
    case Kind::kMaxPool:
    case Kind::kAveragePool:
      return dnn_check(a, a.cudnnPoolingForward(a.handle, p.pool, one, p.x, ptr(0), zero, p.y, y),
                       "cudnnPoolingForward");
    case Kind::kConvTranspose:
      FRAME_RETURN_IF_ERROR(
          dnn_check(a,
                    a.cudnnConvolutionBackwardData(a.handle, one, p.w, ptr(1), p.x, ptr(0), p.conv,
                                                   p.bwd_algo, reinterpret_cast<void*>(workspace),
                                                   p.workspace, zero, p.y, y),
                    "cudnnConvolutionBackwardData"));
      if (!p.s.bias) return Status();
      return dnn_check(a, a.cudnnAddTensor(a.handle, one, p.bias, ptr(2), one, p.y, y),
                       "cudnnAddTensor (bias)");
    case Kind::kConv:
      break;
  }
  FRAME_RETURN_IF_ERROR(dnn_check(
      a,
      a.cudnnConvolutionForward(a.handle, one, p.x, ptr(0), p.w, ptr(1), p.conv, p.algo,
                                reinterpret_cast<void*>(workspace), p.workspace, zero, p.y, y),
      "cudnnConvolutionForward"));
  if (!p.s.bias) return Status();
  return dnn_check(a, a.cudnnAddTensor(a.handle, one, p.bias, ptr(2), one, p.y, y),
                   "cudnnAddTensor (bias)");
}

}  // namespace frame::backends::cuda
