/// \file
/// cpu reference kernels of the value-producing ops: constant, constant_of_shape, range,
/// shape, size, the random ops, and print.
///
/// Random numbers come from a counter-based generator (the splitmix64 finaliser applied to
/// key + position), so every element is independent of thread scheduling and no generator
/// state is shared between threads. The key is derived from the `seed` attribute (a fixed
/// stream per seed) or, without a seed, from a per-process salt and an atomic call counter, so
/// two unseeded runs of the same graph draw different values.

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"

namespace frame::backends::cpu {
namespace {

using ops::KernelContext;

constexpr DTypeSet kRangeDTypes{DTypeCode::kFloat32, DTypeCode::kFloat64, DTypeCode::kInt16,
                                DTypeCode::kInt32, DTypeCode::kInt64};
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Stream key of one kernel call.
uint64_t stream_key(const KernelContext& ctx) {
  if (const double* seed = ctx.node->attr<double>("seed")) {
    return mix64(std::bit_cast<uint64_t>(*seed) ^ 0x5EEDull);
  }
  static const uint64_t salt = [] {
    std::random_device rd;
    const uint64_t t =
        static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
    return mix64((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ t);
  }();
  static std::atomic<uint64_t> calls{0};
  return mix64(salt + calls.fetch_add(1, std::memory_order_relaxed) * kGolden);
}

// The i-th 64-bit value of stream `key`.
inline uint64_t draw(uint64_t key, uint64_t i) { return mix64(key + (i + 1) * kGolden); }
// Uniform in [0, 1) with 53 random bits.
inline double unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

template <typename T>
void fill_uniform(T* out, int64_t n, uint64_t key, double low, double high, int threads) {
  const int nt = threads_for(n, threads);
  ops::parallel_for(n, nt, [&](int64_t i) {
    const double u = unit(draw(key, static_cast<uint64_t>(i)));
    out[i] = from_compute<T>(static_cast<compute_t<T>>(low + (high - low) * u));
  });
}

// Box-Muller on positions 2i and 2i+1 of the stream.
template <typename T>
void fill_normal(T* out, int64_t n, uint64_t key, double mean, double scale, int threads) {
  const int nt = threads_for(n, threads);
  ops::parallel_for(n, nt, [&](int64_t i) {
    const uint64_t k = 2 * static_cast<uint64_t>(i);
    const double u1 = 1.0 - unit(draw(key, k));  // (0, 1]: log stays finite
    const double u2 = unit(draw(key, k + 1));
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    out[i] = from_compute<T>(static_cast<compute_t<T>>(mean + scale * z));
  });
}

Status random_uniform_cpu(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  const double low = ctx.node->attr_or<double>("low", 0.0);
  const double high = ctx.node->attr_or<double>("high", 1.0);
  const uint64_t key = stream_key(ctx);
  return dispatch_dtype<kFloatDTypes>(out.dtype(), [&]<typename T>() {
    fill_uniform(out.data<T>(), out.numel(), key, low, high, ctx.num_threads);
  });
}

Status random_normal_cpu(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  const double mean = ctx.node->attr_or<double>("mean", 0.0);
  const double scale = ctx.node->attr_or<double>("scale", 1.0);
  const uint64_t key = stream_key(ctx);
  return dispatch_dtype<kFloatDTypes>(out.dtype(), [&]<typename T>() {
    fill_normal(out.data<T>(), out.numel(), key, mean, scale, ctx.num_threads);
  });
}

Status bernoulli_cpu(KernelContext& ctx) {
  const Tensor& p = ctx.input(0);
  Tensor& out = ctx.output(0);
  const uint64_t key = stream_key(ctx);
  const int nt = threads_for(p.numel(), ctx.num_threads);
  return dispatch_dtype<kFloatDTypes>(p.dtype(), [&]<typename P>() {
    return dispatch_dtype(out.dtype(), [&]<typename T>() {
      const P* prob = p.data<P>();
      T* dst = out.data<T>();
      const T one = from_compute<T>(static_cast<compute_t<T>>(1));
      const T zero = from_compute<T>(static_cast<compute_t<T>>(0));
      ops::parallel_for(p.numel(), nt, [&](int64_t i) {
        const double u = unit(draw(key, static_cast<uint64_t>(i)));
        dst[i] = u < static_cast<double>(to_compute(prob[i])) ? one : zero;
      });
    });
  });
}

Status constant_cpu(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  if (const Tensor* v = ctx.node->attr<Tensor>("value")) {
    if (v->nbytes() != out.nbytes()) return ctx.node->error("attribute 'value' size mismatch");
    if (v->nbytes() > 0) std::memcpy(out.raw_data(), v->raw_data(), v->nbytes());
  } else if (const double* f = ctx.node->attr<double>("value_float")) {
    out.data<float>()[0] = static_cast<float>(*f);
  } else if (const auto* fs = ctx.node->attr<std::vector<double>>("value_floats")) {
    for (size_t i = 0; i < fs->size(); ++i) out.data<float>()[i] = static_cast<float>((*fs)[i]);
  } else if (const int64_t* iv = ctx.node->attr<int64_t>("value_int")) {
    out.data<int64_t>()[0] = *iv;
  } else if (const auto* is = ctx.node->attr<std::vector<int64_t>>("value_ints")) {
    std::copy(is->begin(), is->end(), out.data<int64_t>());
  } else {
    return ctx.node->error("no value attribute set");
  }
  return Status();
}

Status constant_of_shape_cpu(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  const Tensor* v = ctx.node->attr<Tensor>("value");
  if (v == nullptr) {
    if (out.nbytes() > 0) std::memset(out.raw_data(), 0, out.nbytes());  // default f32 0
    return Status();
  }
  return dispatch_storage(out.dtype(), [&]<typename T>() {
    std::fill(out.data<T>(), out.data<T>() + out.numel(), v->data<T>()[0]);
  });
}

Status range_cpu(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  return dispatch_dtype<kRangeDTypes>(out.dtype(), [&]<typename T>() {
    const T start = ctx.input(0).data<T>()[0], delta = ctx.input(2).data<T>()[0];
    T* dst = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      dst[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    }
  });
}

Status shape_cpu(KernelContext& ctx) {
  const Shape& s = ctx.input(0).shape();
  const int64_t r = static_cast<int64_t>(s.size());
  auto clamp = [r](int64_t v) { return std::min(std::max(v < 0 ? v + r : v, int64_t{0}), r); };
  const int64_t start = clamp(ctx.node->attr_or<int64_t>("start", 0));
  int64_t* dst = ctx.output(0).data<int64_t>();
  for (int64_t i = 0; i < ctx.output(0).numel(); ++i) dst[i] = s[static_cast<size_t>(start + i)];
  return Status();
}

Status size_cpu(KernelContext& ctx) {
  ctx.output(0).data<int64_t>()[0] = ctx.input(0).numel();
  return Status();
}

// One stderr line: node, dtype, shape, min/max/mean over all elements, the first 8 values.
Status print_cpu(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  std::string line = fmt::format("[frame print] node '{}': {}{}", ctx.node->node_name,
                                 dtype_name(in.dtype()), shape_to_string(in.shape()));
  FRAME_RETURN_IF_ERROR(dispatch_dtype(in.dtype(), [&]<typename T>() {
    const T* p = in.data<T>();
    const int64_t n = in.numel();
    if (n == 0) {
      line += " (empty)";
      return;
    }
    double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(to_compute(p[i]));
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    line += fmt::format(" min={:.6g} max={:.6g} mean={:.6g} first=[", lo, hi,
                        sum / static_cast<double>(n));
    for (int64_t i = 0; i < std::min<int64_t>(n, 8); ++i) {
      line += fmt::format("{}{:.6g}", i ? ", " : "", static_cast<double>(to_compute(p[i])));
    }
    line += n > 8 ? ", ...]" : "]";
  }));
  line += '\n';
  std::fputs(line.c_str(), stderr);
  if (in.nbytes() > 0 && in.raw_data() != out.raw_data()) {
    std::memcpy(out.raw_data(), in.raw_data(), in.nbytes());
  }
  return Status();
}

}  // namespace

FRAME_REGISTER_KERNEL(constant, "cpu", constant_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(constant_of_shape, "cpu", constant_of_shape_cpu)
    .dtypes(DTypeSet{DTypeCode::kInt64});
FRAME_REGISTER_KERNEL(range, "cpu", range_cpu).dtypes(kRangeDTypes);
FRAME_REGISTER_KERNEL(shape, "cpu", shape_cpu).dtypes(kAllDTypes).type_only_inputs({0});
FRAME_REGISTER_KERNEL(size, "cpu", size_cpu).dtypes(kAllDTypes).type_only_inputs({0});
FRAME_REGISTER_KERNEL(random_uniform, "cpu", random_uniform_cpu).dtypes(kFloatDTypes);
FRAME_REGISTER_KERNEL(random_normal, "cpu", random_normal_cpu).dtypes(kFloatDTypes);
FRAME_REGISTER_KERNEL(random_uniform_like, "cpu", random_uniform_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(random_normal_like, "cpu", random_normal_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(bernoulli, "cpu", bernoulli_cpu).dtypes(kFloatDTypes);
FRAME_REGISTER_KERNEL(print, "cpu", print_cpu).dtypes(kAllDTypes);

}  // namespace frame::backends::cpu
