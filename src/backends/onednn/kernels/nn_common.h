#pragma once
/// \file
/// Helpers shared by the onednn pooling, softmax and normalization kernels (pool.cpp,
/// softmax.cpp, norm.cpp; docs/backends/onednn.md): running a primitive without a per-run
/// argument map, turning dnnl::error into a Status that names node and op, and per-channel
/// parameters (scale, shift, mean, variance) that oneDNN wants as dense f32 vectors.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/onednn/dnnl_util.h"
#include "core/aligned_memory.h"
#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::onednn::nn {

/// `s` as a decline for KernelDef::accepts (always kUnimplemented, M10 fallback).
inline Status decline(const Status& s) {
  return s.is_ok() ? s : Status(StatusCode::kUnimplemented, s.message());
}

/// One primitive argument: DNNL_ARG_* and the memory bound to it.
using Arg = ExecArg;

/// Executes `prim` with `args` plus the calling thread's user scratchpad (dnnl_util.h
/// scratchpad()) when `scratch_desc` is not empty, through the shared execute(). At most 15
/// arguments. Errors name node and op.
inline Status execute(const ops::NodeContext& node, const dnnl::primitive& prim,
                      const dnnl::memory::desc& scratch_desc, std::span<const Arg> args) {
  ExecArg a[16];
  size_t n = 0;
  for (const Arg& x : args) {
    if (n < 15) a[n++] = x;
  }
  dnnl::memory scratch;
  if (scratch_desc.get_size() > 0) {
    try {
      scratch = scratchpad(scratch_desc);
    } catch (const dnnl::error& e) {
      return dnnl_failure(node, "scratchpad", e);
    }
    a[n++] = ExecArg{DNNL_ARG_SCRATCHPAD, &scratch};
  }
  return onednn::execute(node, prim, std::span<const ExecArg>(a, n));
}

/// Up to N primitive arguments assembled on the stack for one execution: the memories are
/// owned here, the Args point at them (no heap allocation per run).
template <size_t N>
struct ArgList {
  std::array<dnnl::memory, N> mems;
  std::array<Arg, N> args;
  size_t n = 0;
  void add(int arg, dnnl::memory mem) {
    mems[n] = std::move(mem);
    args[n] = {arg, &mems[n]};
    ++n;
  }
  std::span<const Arg> span() const { return {args.data(), n}; }
};

/// execute() with a fixed argument list.
inline Status execute(const ops::NodeContext& node, const dnnl::primitive& prim,
                      const dnnl::memory::desc& scratch_desc, std::initializer_list<Arg> args) {
  return execute(node, prim, scratch_desc, std::span<const Arg>(args.begin(), args.size()));
}

/// f32 scratch owned by the calling thread, grown on demand and never shrunk: parameters
/// converted per run (non-constant, non-f32 or broadcast scale/shift) cost no allocation in
/// the steady state. Valid until the calling thread's next call.
inline float* staging_floats(size_t n) {
  thread_local frame::detail::GrowBuffer buf;
  return buf.get_as<float>(n);
}

/// A per-channel (or per-element) f32 parameter vector of length `size` that a primitive reads
/// (scale, shift, mean, variance), made from node input `input` in the cheapest exact way:
/// the input itself when it is dense f32 of `size` elements; else converted once at prepare
/// time when the input is a constant; else gathered into staging_floats at run time.
struct ParamPlan {
  int input = -1;
  int64_t size = 0;
  bool direct = false;
  /// Prepared f32 values (constant input).
  std::vector<float> constant;
  /// Source element of output element i when the input is broadcast or tiled (empty =
  /// identity).
  std::vector<int64_t> index;
  DTypeCode dtype = DTypeCode::kFloat32;

  /// Plans input `in` of `node` with the source index of each of the `size` elements
  /// (`index` empty = identity, element i reads source element i).
  static ParamPlan make(const ops::NodeContext& node, int in, int64_t size,
                        std::vector<int64_t> index) {
    ParamPlan p;
    p.input = in;
    p.size = size;
    p.dtype = node.input_types[static_cast<size_t>(in)].dtype;
    const Tensor* c = node.constant_input(static_cast<size_t>(in));
    // Decided once at prepare time; the run reads `direct` (ARCH-042).
    if (index.empty() && DTypeSet{DTypeCode::kFloat32}.contains(p.dtype)) {
      p.direct = true;
    } else if (c != nullptr) {
      p.constant.resize(static_cast<size_t>(size));
      for (int64_t i = 0; i < size; ++i) {
        const int64_t src = index.empty() ? i : index[static_cast<size_t>(i)];
        p.constant[static_cast<size_t>(i)] = static_cast<float>(c->element_as_double(src));
      }
    } else {
      p.index = std::move(index);
    }
    return p;
  }
  /// Floats run() needs from staging_floats.
  int64_t staged() const { return direct || !constant.empty() ? 0 : size; }
  /// The parameter's data for one run; `stage` points at staged() free floats.
  const float* data(const ops::KernelContext& ctx, float* stage) const {
    const Tensor& t = ctx.input(static_cast<size_t>(input));
    if (direct) return t.data<float>();
    if (!constant.empty()) return constant.data();
    // One dtype dispatch per parameter, not per element (ARCH-042).
    (void)dispatch_dtype<kFloatDTypes>(t.dtype(), [&]<typename T>() {
      const T* p = t.data<T>();
      if (index.empty()) {
        for (int64_t i = 0; i < size; ++i) stage[i] = static_cast<float>(to_compute(p[i]));
      } else {
        for (int64_t i = 0; i < size; ++i) {
          stage[i] = static_cast<float>(to_compute(p[index[static_cast<size_t>(i)]]));
        }
      }
    });
    return stage;
  }
};

/// Wraps `n` floats for a primitive argument (oneDNN only reads them for inputs).
inline dnnl::memory wrap_floats(const float* p, int64_t n) {
  const int64_t dims[1] = {n};
  return dnnl::memory(plain_desc(dims, dnnl::memory::data_type::f32), engine(),
                      const_cast<float*>(p));
}

}  // namespace frame::backends::onednn::nn
