// cpu reference kernels for MatMul, Gemm and Einsum. Products run in i-k-j order against a
// packed (row-major, compute-type) copy of B so the inner loop is contiguous; rows (and
// batches) are split across OpenMP threads.

#include <vector>

#include "backends/cpu/kernels/linalg_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/einsum_plan.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;

constexpr DTypeSet kMatDTypes = kFloatDTypes | DTypeSet{DTypeCode::kInt32, DTypeCode::kInt64,
                                                        DTypeCode::kUInt32, DTypeCode::kUInt64};

Status matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  // 1-D operands promoted as numpy does; the output already has the reduced shape.
  FRAME_ASSIGN_OR_RETURN(const MatmulBatches mb, matmul_batches(a.shape(), b.shape()));
  const int64_t m = mb.m, k = mb.k, n = mb.n, nb_blocks = mb.b_blocks;
  const auto nbatch = static_cast<int64_t>(mb.a_block.size());
  return dispatch_dtype<kMatDTypes>(a.dtype(), [&]<typename T>() {
    using Acc = mm_acc_t<T>;
    // Pack every distinct B matrix once.
    std::vector<Acc> bp(static_cast<size_t>(nb_blocks * k * n));
    for (int64_t t = 0; t < nb_blocks; ++t) {
      pack_matrix(b.data<T>() + t * k * n, k, n, false, bp.data() + t * k * n);
    }
    const T* ap = a.data<T>();
    T* out = y.data<T>();
    for_rows<Acc>(nbatch * m, n, ctx.num_threads, [&](int64_t r, Acc* row) {
      const int64_t t = r / m, i = r % m;
      const T* arow = ap + (mb.a_block[static_cast<size_t>(t)] * m + i) * k;
      const Acc* bm = bp.data() + mb.b_block[static_cast<size_t>(t)] * k * n;
      row_times_packed(arow, 1, bm, k, n, row);
      T* orow = out + r * n;
      for (int64_t j = 0; j < n; ++j) orow[j] = from_compute<T>(static_cast<compute_t<T>>(row[j]));
    });
  });
}

FRAME_REGISTER_KERNEL(matmul, "cpu", matmul_kernel).dtypes(kMatDTypes);

Status gemm_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const bool has_c = ctx.node->has_input(2);
  Tensor& y = ctx.output(0);
  const bool ta = ctx.node->attr_or<int64_t>("transA", 0) != 0;
  const bool tb = ctx.node->attr_or<int64_t>("transB", 0) != 0;
  const double alpha = ctx.node->attr_or<double>("alpha", 1.0);
  const double beta = ctx.node->attr_or<double>("beta", 1.0);
  const int64_t m = y.dim(0), n = y.dim(1), k = ta ? a.dim(0) : a.dim(1);
  // C read through broadcast strides over [M, N].
  int64_t c_rs = 0, c_cs = 0;
  if (has_c) {
    const Shape& cs = ctx.input(2).shape();
    const std::vector<int64_t> st = batch_strides(cs, Shape{m, n});
    c_rs = st[0];
    c_cs = st[1];
  }
  return dispatch_dtype<kMatDTypes>(a.dtype(), [&]<typename T>() {
    using Acc = mm_acc_t<T>;
    std::vector<Acc> bp(static_cast<size_t>(k * n));
    pack_matrix(b.data<T>(), tb ? n : k, tb ? k : n, tb, bp.data());
    const T* ap = a.data<T>();
    const T* cp = has_c ? ctx.input(2).data<T>() : nullptr;
    T* out = y.data<T>();
    const int64_t a_rs = ta ? 1 : k, a_cs = ta ? m : 1;
    for_rows<Acc>(m, n, ctx.num_threads, [&](int64_t i, Acc* row) {
      row_times_packed(ap + i * a_rs, a_cs, bp.data(), k, n, row);
      T* orow = out + i * n;
      for (int64_t j = 0; j < n; ++j) {
        double v = alpha * static_cast<double>(row[j]);
        if (cp != nullptr) v += beta * static_cast<double>(to_compute(cp[i * c_rs + j * c_cs]));
        orow[j] = from_compute<T>(static_cast<compute_t<T>>(v));
      }
    });
  });
}

FRAME_REGISTER_KERNEL(gemm, "cpu", gemm_kernel).dtypes(kMatDTypes);

Status einsum_kernel(KernelContext& ctx) {
  const std::string* eq = ctx.node->attr<std::string>("equation");
  if (eq == nullptr) return ctx.node->error("missing required attribute 'equation'");
  std::vector<Shape> shapes;
  for (const Tensor& t : ctx.inputs) shapes.push_back(t.shape());
  FRAME_ASSIGN_OR_RETURN(ops::EinsumPlan p, ops::plan_einsum(*ctx.node, *eq, shapes));
  const size_t nin = ctx.inputs.size();
  const int64_t out_numel = numel_of(p.out_shape);
  int64_t sum_numel = 1;
  for (int l : p.sum_labels) sum_numel *= p.label_size[static_cast<size_t>(l)];
  return dispatch_dtype<kNumericDTypes>(ctx.input(0).dtype(), [&]<typename T>() {
    using Acc = std::conditional_t<kIsFloating<T>, double, int64_t>;
    std::vector<const T*> in(nin);
    for (size_t i = 0; i < nin; ++i) in[i] = ctx.input(i).data<T>();
    T* out = ctx.output(0).data<T>();
    const size_t nout = p.out_labels.size(), nsum = p.sum_labels.size();
    ops::parallel_for(out_numel, (out_numel > 64) ? ctx.num_threads : 1, [&](int64_t o) {
      // Base offset of each input from the output labels.
      std::vector<int64_t> base(nin, 0), idx(nsum, 0), off(nin);
      int64_t rem = o;
      for (size_t d = nout; d-- > 0;) {
        const size_t l = static_cast<size_t>(p.out_labels[d]);
        const int64_t v = rem % p.label_size[l];
        rem /= p.label_size[l];
        for (size_t i = 0; i < nin; ++i) base[i] += v * p.label_strides[i][l];
      }
      Acc acc = 0;
      for (int64_t s = 0; s < sum_numel; ++s) {
        off = base;
        for (size_t d = 0; d < nsum; ++d) {
          const size_t l = static_cast<size_t>(p.sum_labels[d]);
          for (size_t i = 0; i < nin; ++i) off[i] += idx[d] * p.label_strides[i][l];
        }
        Acc prod = 1;
        for (size_t i = 0; i < nin; ++i) prod *= static_cast<Acc>(to_compute(in[i][off[i]]));
        acc += prod;
        for (size_t d = nsum; d-- > 0;) {
          if (++idx[d] < p.label_size[static_cast<size_t>(p.sum_labels[d])]) break;
          idx[d] = 0;
        }
      }
      out[o] = from_compute<T>(static_cast<compute_t<T>>(acc));
    });
  });
}

FRAME_REGISTER_KERNEL(einsum, "cpu", einsum_kernel).dtypes(kNumericDTypes);

}  // namespace
}  // namespace frame::cpu
