// cuBLASLt opened with dlopen, and the matmul / gemm plans of the cuda backend (blas.h).

#include "backends/cuda/blas.h"

#include <cublasLt.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace frame::backends::cuda {
namespace {

struct LtApi {
#define FRAME_LT_FN(name) decltype(&::name) name = nullptr;
  FRAME_LT_FN(cublasLtCreate)
  FRAME_LT_FN(cublasLtGetStatusName)
  FRAME_LT_FN(cublasLtMatmulDescCreate)
  FRAME_LT_FN(cublasLtMatmulDescDestroy)
  FRAME_LT_FN(cublasLtMatmulDescSetAttribute)
  FRAME_LT_FN(cublasLtMatrixLayoutCreate)
  FRAME_LT_FN(cublasLtMatrixLayoutDestroy)
  FRAME_LT_FN(cublasLtMatrixLayoutSetAttribute)
  FRAME_LT_FN(cublasLtMatmulPreferenceCreate)
  FRAME_LT_FN(cublasLtMatmulPreferenceDestroy)
  FRAME_LT_FN(cublasLtMatmulPreferenceSetAttribute)
  FRAME_LT_FN(cublasLtMatmulAlgoGetHeuristic)
  FRAME_LT_FN(cublasLtMatmul)
#undef FRAME_LT_FN
  cublasLtHandle_t handle = nullptr;  // one per process, made at the first plan (needs a device)
  std::mutex handle_mu;
  std::string reason;  // "" when usable
};

constexpr const char* kSoname = "libcublasLt.so.13";

LtApi& api() {
  static LtApi* a = [] {
    auto* l = new LtApi();  // never destroyed: plans may outlive static teardown
    std::string tried;
    void* lib = open_toolkit_library(kSoname, tried);
    if (lib == nullptr) {
      l->reason = fmt::format("cuBLASLt not found ({})", tried);
      return l;
    }
    std::string missing;
    auto get = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (fn == nullptr && missing.empty()) missing = symbol;
    };
#define FRAME_LT_GET(name) get(l->name, #name);
    FRAME_LT_GET(cublasLtCreate)
    FRAME_LT_GET(cublasLtGetStatusName)
    FRAME_LT_GET(cublasLtMatmulDescCreate)
    FRAME_LT_GET(cublasLtMatmulDescDestroy)
    FRAME_LT_GET(cublasLtMatmulDescSetAttribute)
    FRAME_LT_GET(cublasLtMatrixLayoutCreate)
    FRAME_LT_GET(cublasLtMatrixLayoutDestroy)
    FRAME_LT_GET(cublasLtMatrixLayoutSetAttribute)
    FRAME_LT_GET(cublasLtMatmulPreferenceCreate)
    FRAME_LT_GET(cublasLtMatmulPreferenceDestroy)
    FRAME_LT_GET(cublasLtMatmulPreferenceSetAttribute)
    FRAME_LT_GET(cublasLtMatmulAlgoGetHeuristic)
    FRAME_LT_GET(cublasLtMatmul)
#undef FRAME_LT_GET
    if (!missing.empty()) l->reason = fmt::format("{} lacks {}", kSoname, missing);
    return l;
  }();
  return *a;
}

Status lt_check(const LtApi& a, cublasStatus_t st, std::string_view what) {
  if (st == CUBLAS_STATUS_SUCCESS) return Status();
  return internal_error("cuda: {}: {}", what, a.cublasLtGetStatusName(st));
}

// Right-aligned numpy broadcast of two batch shapes; false when they do not broadcast.
bool broadcast_batch(const Shape& a, const Shape& b, Shape& out) {
  out.assign(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

constexpr DTypeSet kGemmTypes{DTypeCode::kFloat32, DTypeCode::kFloat64, DTypeCode::kFloat16,
                              DTypeCode::kBFloat16};
constexpr DTypeSet kDouble{DTypeCode::kFloat64};
constexpr DTypeSet kF16{DTypeCode::kFloat16};
constexpr DTypeSet kBf16{DTypeCode::kBFloat16};

cudaDataType_t data_type(DTypeCode d) {
  return kDouble.contains(d) ? CUDA_R_64F
         : kF16.contains(d)  ? CUDA_R_16F
         : kBf16.contains(d) ? CUDA_R_16BF
                             : CUDA_R_32F;
}

bool tf32_enabled() {
  const char* v = std::getenv(kTf32Env);
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace

const std::string& cublaslt_unavailable_reason() { return api().reason; }

Result<GemmShape> gemm_shape(const ops::NodeContext& ctx) {
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) {
    return unimplemented("{} without both operands", ctx.op);
  }
  GemmShape s;
  s.dtype = ctx.input_types[0].dtype;
  if (!kGemmTypes.contains(s.dtype)) return unimplemented("dtype {}", dtype_name(s.dtype));
  for (size_t k = 1; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && ctx.input_types[k].dtype != s.dtype) {
      return unimplemented("inputs of different dtypes");
    }
  }
  Shape a = ctx.input_types[0].shape, b = ctx.input_types[1].shape;
  if (ctx.op == "gemm") {
    if (a.size() != 2 || b.size() != 2) return ctx.error("cuda: gemm operands must be 2-D");
    s.trans_a = ctx.attr_or<int64_t>("transA", 0) != 0;
    s.trans_b = ctx.attr_or<int64_t>("transB", 0) != 0;
    s.alpha = ctx.attr_or<double>("alpha", 1.0);
    s.beta = ctx.attr_or<double>("beta", 1.0);
    s.m = s.trans_a ? a[1] : a[0];
    s.k = s.trans_a ? a[0] : a[1];
    s.n = s.trans_b ? b[0] : b[1];
    if ((s.trans_b ? b[1] : b[0]) != s.k) return ctx.error("cuda: gemm inner dims differ");
    if (ctx.num_inputs() > 2 && ctx.has_input(2) && s.beta != 0.0) {
      const Shape& c = ctx.input_types[2].shape;
      if ((c.size() == 1 && c[0] == s.n) || (c.size() == 2 && c[0] == 1 && c[1] == s.n)) {
        if (s.beta != 1.0) return unimplemented("a gemm bias vector with beta != 1");
        s.c_kind = 1;
      } else if (c.size() == 2 && c[0] == s.m && c[1] == s.n) {
        s.c_kind = 2;
      } else {
        return unimplemented("gemm C of shape {} (cuBLASLt takes [N], [1, N] or [M, N])",
                             fmt::join(c, "x"));
      }
    }
    if (s.c_kind != 2) s.beta = 0.0;
    return s;
  }
  // matmul: numpy semantics, 1-D operands promoted (and the added dim dropped by shape
  // inference).
  if (a.empty() || b.empty()) return ctx.error("cuda: matmul of a scalar");
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  s.m = a[a.size() - 2];
  s.k = a[a.size() - 1];
  s.n = b[b.size() - 1];
  if (b[b.size() - 2] != s.k) return ctx.error("cuda: matmul inner dims differ");
  const Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const int64_t batch_a = numel_of(ab), batch_b = numel_of(bb);
  Shape out;
  if (!broadcast_batch(ab, bb, out)) return ctx.error("cuda: matmul batch dims do not broadcast");
  if (batch_b == 1) {
    // B is one matrix: A's batch folds into its rows (A and Y are contiguous).
    s.m *= batch_a;
  } else if (batch_a == 1) {
    s.batch = batch_b;
    s.stride_a = 0;
    s.stride_b = s.k * s.n;
  } else if (batch_a == numel_of(out) && batch_b == numel_of(out)) {
    s.batch = batch_a;
    s.stride_a = s.m * s.k;
    s.stride_b = s.k * s.n;
  } else {
    return unimplemented("matmul batch dims that broadcast partially ({} x {})", fmt::join(ab, "x"),
                         fmt::join(bb, "x"));
  }
  return s;
}

struct GemmPlan::Impl {
  LtApi* api = nullptr;
  GemmShape s;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulAlgo_t algo{};
  float alpha_f = 1, beta_f = 0;
  double alpha_d = 1, beta_d = 0;
  std::mutex mu;  // the bias pointer is an attribute of the shared descriptor

  ~Impl() {
    if (api == nullptr) return;
    if (la != nullptr) api->cublasLtMatrixLayoutDestroy(la);
    if (lb != nullptr) api->cublasLtMatrixLayoutDestroy(lb);
    if (ld != nullptr) api->cublasLtMatrixLayoutDestroy(ld);
    if (desc != nullptr) api->cublasLtMatmulDescDestroy(desc);
  }
};

GemmPlan::~GemmPlan() = default;

Result<std::shared_ptr<GemmPlan>> GemmPlan::make(const CudaDevice& dev, const GemmShape& s,
                                                 size_t max_workspace) {
  LtApi& a = api();
  if (!a.reason.empty()) return unimplemented("cuda: {}", a.reason);
  FRAME_RETURN_IF_ERROR(make_current(dev));
  {
    std::lock_guard lock(a.handle_mu);
    if (a.handle == nullptr)
      FRAME_RETURN_IF_ERROR(lt_check(a, a.cublasLtCreate(&a.handle), "cublasLtCreate"));
  }
  std::shared_ptr<GemmPlan> plan(new GemmPlan());
  plan->impl_ = std::make_unique<Impl>();
  Impl& p = *plan->impl_;
  p.api = &a;
  p.s = s;
  const bool dbl = kDouble.contains(s.dtype);
  // f16 / bf16 accumulate in float and round once on store (the cpu contract's compute
  // type); f32 is full f32 unless TF32 is asked for.
  const bool tf32 = DTypeSet{DTypeCode::kFloat32}.contains(s.dtype) && tf32_enabled();
  const cublasComputeType_t compute = dbl    ? CUBLAS_COMPUTE_64F
                                      : tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                             : CUBLAS_COMPUTE_32F;
  const cudaDataType_t scale = dbl ? CUDA_R_64F : CUDA_R_32F;
  const cudaDataType_t type = data_type(s.dtype);
  p.alpha_f = static_cast<float>(s.alpha);
  p.beta_f = static_cast<float>(s.beta);
  p.alpha_d = s.alpha;
  p.beta_d = s.beta;
  FRAME_RETURN_IF_ERROR(
      lt_check(a, a.cublasLtMatmulDescCreate(&p.desc, compute, scale), "cublasLtMatmulDescCreate"));
  // cuBLASLt's A is our B (read transposed), its B our A: Y^T = B^T A^T in column-major.
  const cublasOperation_t op_a = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  FRAME_RETURN_IF_ERROR(lt_check(
      a, a.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)),
      "CUBLASLT_MATMUL_DESC_TRANSA"));
  FRAME_RETURN_IF_ERROR(lt_check(
      a, a.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)),
      "CUBLASLT_MATMUL_DESC_TRANSB"));
  if (s.c_kind == 1) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    FRAME_RETURN_IF_ERROR(lt_check(
        a,
        a.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)),
        "CUBLASLT_MATMUL_DESC_EPILOGUE"));
  }
  auto layout = [&](cublasLtMatrixLayout_t& l, int64_t rows, int64_t cols, int64_t stride,
                    const char* what) -> Status {
    FRAME_RETURN_IF_ERROR(
        lt_check(a,
                 a.cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows),
                                              static_cast<uint64_t>(cols), rows),
                 what));
    if (s.batch > 1) {
      const auto count = static_cast<int32_t>(s.batch);
      FRAME_RETURN_IF_ERROR(
          lt_check(a,
                   a.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                      sizeof(count)),
                   what));
      FRAME_RETURN_IF_ERROR(
          lt_check(a,
                   a.cublasLtMatrixLayoutSetAttribute(
                       l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
                   what));
    }
    return Status();
  };
  FRAME_RETURN_IF_ERROR(
      layout(p.la, s.trans_b ? s.k : s.n, s.trans_b ? s.n : s.k, s.stride_b, "layout of B"));
  FRAME_RETURN_IF_ERROR(
      layout(p.lb, s.trans_a ? s.m : s.k, s.trans_a ? s.k : s.m, s.stride_a, "layout of A"));
  FRAME_RETURN_IF_ERROR(layout(p.ld, s.n, s.m, s.m * s.n, "layout of Y"));
  cublasLtMatmulPreference_t pref = nullptr;
  FRAME_RETURN_IF_ERROR(
      lt_check(a, a.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate"));
  const uint64_t ws = max_workspace;
  a.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                         sizeof(ws));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t h = a.cublasLtMatmulAlgoGetHeuristic(a.handle, p.desc, p.la, p.lb, p.ld,
                                                            p.ld, pref, 1, &result, &found);
  a.cublasLtMatmulPreferenceDestroy(pref);
  if (h != CUBLAS_STATUS_SUCCESS || found == 0) {
    return unimplemented("cuda: cuBLASLt has no algorithm for a {}x{}x{} {} product (batch {})",
                         s.m, s.n, s.k, dtype_name(s.dtype), s.batch);
  }
  p.algo = result.algo;
  plan->workspace_ = result.workspaceSize;
  return plan;
}

Status GemmPlan::run(CUstream stream, CUdeviceptr a_ptr, CUdeviceptr b_ptr, CUdeviceptr c_ptr,
                     CUdeviceptr y_ptr, CUdeviceptr workspace, size_t workspace_bytes) const {
  Impl& p = *impl_;
  LtApi& a = *p.api;
  const bool dbl = kDouble.contains(p.s.dtype);
  const void* alpha = dbl ? static_cast<const void*>(&p.alpha_d) : &p.alpha_f;
  const void* beta = dbl ? static_cast<const void*>(&p.beta_d) : &p.beta_f;
  auto* y = reinterpret_cast<void*>(y_ptr);
  const void* c = p.s.c_kind == 2 ? reinterpret_cast<const void*>(c_ptr) : y;
  std::lock_guard lock(p.mu);
  if (p.s.c_kind == 1) {
    const void* bias = reinterpret_cast<const void*>(c_ptr);
    FRAME_RETURN_IF_ERROR(
        lt_check(a,
                 a.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                  sizeof(bias)),
                 "CUBLASLT_MATMUL_DESC_BIAS_POINTER"));
  }
  return lt_check(
      a,
      a.cublasLtMatmul(a.handle, p.desc, alpha, reinterpret_cast<const void*>(b_ptr), p.la,
                       reinterpret_cast<const void*>(a_ptr), p.lb, beta, c, p.ld, y, p.ld, &p.algo,
                       reinterpret_cast<void*>(workspace), workspace_bytes, stream),
      "cublasLtMatmul");
}

}  // namespace frame::backends::cuda
