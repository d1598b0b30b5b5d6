// The runner of compiled elementwise programs (ew_program.h): tiles split over OpenMP threads
// by a cost estimate, per-tile input views (in place, splatted, replicated rows, gathered),
// one vector loop per step per tile.

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <utility>

#include "backends/onednn/kernels/ew_program_impl.h"
#include "backends/onednn/kernels/ew_vec.h"
#include "backends/onednn/kernels/parallel.h"
#include "frame/ops/elementwise.h"

namespace frame::backends::onednn {

namespace ew = ::frame::ops::ew;
using program_detail::InMode;
using program_detail::InputPlan;
using program_detail::kGrainUnits;
using program_detail::kSlotBytes;
using program_detail::Step;
using program_detail::StepKind;

// ---- running ----

namespace {

// Per-thread scratch reused across runs (grows, never shrinks): no allocation per run in the
// steady state.
struct Scratch {
  std::vector<std::byte> bytes;
  std::vector<std::byte*> ptr;
  std::vector<Tensor> ins;
};

std::byte* aligned_scratch(Scratch& sc, size_t bytes) {
  if (sc.bytes.size() < bytes + 64) sc.bytes.resize(bytes + 64);
  std::byte* base = sc.bytes.data();
  return base + (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
}

// Copies output positions [b, b + n) of a broadcast input into dst with an odometer: the
// divisions happen once per tile, the inner loop only adds strides.
template <typename E>
void gather(const InputPlan& ip, const Shape& out_shape, const std::byte* src_bytes, int64_t b,
            int64_t n, std::byte* dst_bytes) {
  const E* src = reinterpret_cast<const E*>(src_bytes);
  E* dst = reinterpret_cast<E*>(dst_bytes);
  const size_t r = out_shape.size();
  std::array<int64_t, kMaxProgramRank> idx{};
  int64_t off = 0;
  int64_t rem = b;
  for (size_t d = r; d-- > 0;) {
    idx[d] = rem % out_shape[d];
    rem /= out_shape[d];
    off += idx[d] * ip.strides[d];
  }
  const int64_t inner = out_shape[r - 1];
  const int64_t inner_stride = ip.strides[r - 1];
  int64_t i = 0;
  while (i < n) {
    // Run along the innermost dim without touching the odometer.
    const int64_t run = std::min(n - i, inner - idx[r - 1]);
    if (inner_stride == 0) {
      std::fill(dst + i, dst + i + run, src[off]);
    } else {
      for (int64_t k = 0; k < run; ++k) dst[i + k] = src[off + k * inner_stride];
    }
    i += run;
    off += run * inner_stride;
    idx[r - 1] += run;
    for (size_t d = r; d-- > 0;) {
      if (idx[d] < out_shape[d]) break;
      off -= ip.strides[d] * out_shape[d];
      idx[d] = 0;
      if (d > 0) {
        ++idx[d - 1];
        off += ip.strides[d - 1];
      }
    }
  }
}

// dst[j] = src[((b + j) / ip.inner) mod ip.numel] for j in [0, n): runs of one value each.
template <typename E>
void repeat(const InputPlan& ip, const std::byte* src_bytes, int64_t b, int64_t n,
            std::byte* dst_bytes) {
  const E* src = reinterpret_cast<const E*>(src_bytes);
  E* dst = reinterpret_cast<E*>(dst_bytes);
  int64_t idx = (b / ip.inner) % ip.numel;
  int64_t left = ip.inner - b % ip.inner;  // outputs left in the first run
  for (int64_t j = 0; j < n;) {
    const int64_t run = std::min(left, n - j);
    std::fill(dst + j, dst + j + run, src[idx]);
    j += run;
    left = ip.inner;
    if (++idx == ip.numel) idx = 0;
  }
}

void gather_any(const InputPlan& ip, const Shape& out_shape, const std::byte* src, int64_t b,
                int64_t n, std::byte* dst) {
  by_element_size(ip.elem, [&]<typename E>() { gather<E>(ip, out_shape, src, b, n, dst); });
}

// Fills `count` elements of `dst` by repeating the `period` elements of `src` from index 0.
void repeat_fill(const std::byte* src, size_t elem, int64_t period, std::byte* dst, int64_t count) {
  for (int64_t j = 0; j < count; j += period) {
    const int64_t m = std::min(period, count - j);
    std::memcpy(dst + static_cast<size_t>(j) * elem, src, static_cast<size_t>(m) * elem);
  }
}

inline float* f32(std::byte* p) { return reinterpret_cast<float*>(p); }

Status run_generic(const Program& p, const Step& s, Scratch& sc, int64_t n) {
  const Shape tile_shape{n};
  sc.ins.resize(s.inputs.size());
  for (size_t k = 0; k < s.inputs.size(); ++k) {
    const int32_t v = s.inputs[k];
    if (v < 0) {
      sc.ins[k] = Tensor();
      continue;
    }
    FRAME_ASSIGN_OR_RETURN(sc.ins[k], Tensor::view(p.dtype[static_cast<size_t>(v)], tile_shape,
                                                   sc.ptr[static_cast<size_t>(v)]));
  }
  FRAME_ASSIGN_OR_RETURN(Tensor result,
                         Tensor::view(p.dtype[static_cast<size_t>(s.out)], tile_shape,
                                      sc.ptr[static_cast<size_t>(s.out)]));
  ops::KernelContext kc;
  kc.node = &s.ctx;
  kc.inputs = std::span<const Tensor>(sc.ins.data(), sc.ins.size());
  kc.outputs = std::span<Tensor>(&result, 1);
  kc.state = s.state.get();
  kc.num_threads = 1;
  return s.kernel->fn(kc);
}

// Runs tiles [t0, t1) on the calling thread.
Status run_tiles(const Program& p, std::span<const std::byte* const> in_data, std::byte* out_data,
                 int64_t t0, int64_t t1) {
  thread_local Scratch sc;
  std::byte* base = aligned_scratch(sc, p.scratch_bytes);
  const size_t nv = p.dtype.size();
  sc.ptr.assign(nv, nullptr);
  // Per-run input buffers: splatted scalars and replicated short rows.
  for (size_t i = 0; i < p.num_inputs; ++i) {
    const InputPlan& ip = p.inputs[i];
    std::byte* buf = base + ip.buf_offset;
    if (ip.mode == InMode::kScalar) {
      repeat_fill(in_data[i], ip.elem, 1, buf, kTile);
    } else if (ip.mode == InMode::kPeriodic && ip.period < kTile) {
      repeat_fill(in_data[i], ip.elem, ip.period, buf, kTile + ip.period);
    }
    if (ip.mode == InMode::kScalar) sc.ptr[i] = buf;
  }
  for (size_t v = p.num_inputs; v < nv; ++v) {
    if (p.slot[v] >= 0) {
      sc.ptr[v] = base + p.slots_offset + static_cast<size_t>(p.slot[v]) * kSlotBytes;
    }
  }
  if (p.stream_copy != nullptr) {
    // stream_copy loads the slot just ahead of its stores to the output: keep the slot 1 KiB
    // off the output tiles modulo 4 KiB (tiles advance by 2 KiB), so no load waits on a store
    // with the same low address bits (4K aliasing).
    std::byte*& s = sc.ptr[static_cast<size_t>(p.output)];
    const auto want = (reinterpret_cast<uintptr_t>(out_data) + 1024) % 4096;
    s += (want + 4096 - reinterpret_cast<uintptr_t>(s) % 4096) % 4096;
  }
  const size_t out_elem = dtype_size(p.dtype[static_cast<size_t>(p.output)]);
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t g = t * kTile;
    const int64_t n = std::min(kTile, p.total - g);
    for (size_t i = 0; i < p.num_inputs; ++i) {
      const InputPlan& ip = p.inputs[i];
      std::byte* buf = base + ip.buf_offset;
      switch (ip.mode) {
        case InMode::kSame:
          sc.ptr[i] = const_cast<std::byte*>(in_data[i]) + static_cast<size_t>(g) * ip.elem;
          break;
        case InMode::kScalar:
          break;
        case InMode::kPeriodic: {
          const int64_t off = g % ip.period;
          if (ip.period < kTile) {
            sc.ptr[i] = buf + static_cast<size_t>(off) * ip.elem;
          } else if (off + n <= ip.period) {
            sc.ptr[i] = const_cast<std::byte*>(in_data[i]) + static_cast<size_t>(off) * ip.elem;
          } else {
            const int64_t first = ip.period - off;
            std::memcpy(buf, in_data[i] + static_cast<size_t>(off) * ip.elem,
                        static_cast<size_t>(first) * ip.elem);
            repeat_fill(in_data[i], ip.elem, ip.period, buf + static_cast<size_t>(first) * ip.elem,
                        n - first);
            sc.ptr[i] = buf;
          }
          break;
        }
        case InMode::kRepeat:
          by_element_size(ip.elem, [&]<typename E>() { repeat<E>(ip, in_data[i], g, n, buf); });
          sc.ptr[i] = buf;
          break;
        case InMode::kGather:
          gather_any(ip, p.out_shape, in_data[i], g, n, buf);
          sc.ptr[i] = buf;
          break;
      }
    }
    std::byte* out_tile = out_data + static_cast<size_t>(g) * out_elem;
    if (p.stream_copy == nullptr) sc.ptr[static_cast<size_t>(p.output)] = out_tile;
    const auto un = static_cast<size_t>(n);
    for (const Step& s : p.steps) {
      std::byte* o = sc.ptr[static_cast<size_t>(s.out)];
      switch (s.kind) {
        case StepKind::kUnary:
          s.unary(f32(sc.ptr[static_cast<size_t>(s.in[0])]), f32(o), un, s.functor.get());
          break;
        case StepKind::kBinary:
          s.binary(f32(sc.ptr[static_cast<size_t>(s.in[0])]),
                   f32(sc.ptr[static_cast<size_t>(s.in[1])]), f32(o), un, s.functor.get());
          break;
        case StepKind::kClip: {
          ew::ClipOp<float> clip;  // bounds are scalar inputs (ONNX Clip): element 0 of the tile
          if (s.in[1] >= 0) clip.lo = *f32(sc.ptr[static_cast<size_t>(s.in[1])]);
          if (s.in[2] >= 0) clip.hi = *f32(sc.ptr[static_cast<size_t>(s.in[2])]);
          s.unary(f32(sc.ptr[static_cast<size_t>(s.in[0])]), f32(o), un, &clip);
          break;
        }
        case StepKind::kPow: {
          PowArgs args;
          args.e = *f32(sc.ptr[static_cast<size_t>(s.in[1])]);
          const VecTable& t = *p.table;
          VecUnaryFn fn = t.pow_any;
          if (std::nearbyint(args.e) == args.e && std::fabs(args.e) <= 64.0f) {
            args.ie = static_cast<int64_t>(args.e);
            fn = t.pow_int;
          } else if (args.e == 0.5f) {
            fn = t.pow_half;
          }
          fn(f32(sc.ptr[static_cast<size_t>(s.in[0])]), f32(o), un, &args);
          break;
        }
        case StepKind::kCompare:
          s.compare(f32(sc.ptr[static_cast<size_t>(s.in[0])]),
                    f32(sc.ptr[static_cast<size_t>(s.in[1])]), reinterpret_cast<uint8_t*>(o), un);
          break;
        case StepKind::kWhere:
          p.table->where(reinterpret_cast<const uint8_t*>(sc.ptr[static_cast<size_t>(s.in[0])]),
                         f32(sc.ptr[static_cast<size_t>(s.in[1])]),
                         f32(sc.ptr[static_cast<size_t>(s.in[2])]), f32(o), un);
          break;
        case StepKind::kConvert:
          s.convert(sc.ptr[static_cast<size_t>(s.in[0])], o, un);
          break;
        case StepKind::kCopy: {
          const std::byte* src = sc.ptr[static_cast<size_t>(s.in[0])];
          if (src != o) std::memmove(o, src, un * dtype_size(p.dtype[static_cast<size_t>(s.out)]));
          break;
        }
        case StepKind::kGeneric:
          FRAME_RETURN_IF_ERROR(run_generic(p, s, sc, n));
          break;
      }
    }
    if (p.stream_copy != nullptr) {
      p.stream_copy(f32(sc.ptr[static_cast<size_t>(p.output)]), f32(out_tile), un);
    }
  }
  if (p.stream_copy != nullptr) p.table->stream_fence();
  return Status();
}

}  // namespace

Status run_program(const Program& p, const ops::KernelContext& ctx, Tensor& out) {
  if (out.numel() != p.total) {
    return ctx.node->error("output has {} elements, the program was compiled for {}", out.numel(),
                           p.total);
  }
  if (p.total == 0) return Status();
  std::array<const std::byte*, 64> small{};
  std::vector<const std::byte*> large;
  std::span<const std::byte*> in_data;
  if (p.num_inputs <= small.size()) {
    in_data = std::span<const std::byte*>(small.data(), p.num_inputs);
  } else {
    large.resize(p.num_inputs);
    in_data = large;
  }
  size_t k = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& t = ctx.input(i);
    if (!t.defined()) continue;  // absent optional input
    if (k >= p.num_inputs || t.numel() != p.inputs[k].numel || t.dtype() != p.inputs[k].dtype) {
      return ctx.node->error("input {} does not match the compiled program (dtype {}, {} elements)",
                             i, dtype_name(t.dtype()), t.numel());
    }
    in_data[k++] = static_cast<const std::byte*>(t.raw_data());
  }
  if (k != p.num_inputs) {
    return ctx.node->error("{} inputs present, the program expects {}", k, p.num_inputs);
  }
  auto* out_data = static_cast<std::byte*>(out.raw_data());
  const int64_t tiles = (p.total + kTile - 1) / kTile;
  const double work = static_cast<double>(p.total) * p.cost_per_elem;
  const auto by_cost = static_cast<int64_t>(work / kGrainUnits);
  const int nt = static_cast<int>(
      std::clamp<int64_t>(std::min<int64_t>(by_cost, tiles), 1, std::max(1, ctx.num_threads)));
  if (nt == 1) return run_tiles(p, in_data, out_data, 0, tiles);
  Status first_error;
  std::mutex mu;
#pragma omp parallel num_threads(nt)
  {
    const int64_t id = omp_get_thread_num();
    const int64_t team = omp_get_num_threads();
    const int64_t t0 = tiles * id / team;
    const int64_t t1 = tiles * (id + 1) / team;
    Status s = run_tiles(p, in_data, out_data, t0, t1);
    if (!s.is_ok()) {
      std::lock_guard lock(mu);
      if (first_error.is_ok()) first_error = std::move(s);
    }
  }
  return first_error;
}

}  // namespace frame::backends::onednn
