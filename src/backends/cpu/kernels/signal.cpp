// cpu reference kernels for HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix, DFT
// and STFT (ONNX opset 17). Values are computed in double with the exact pi and rounded once to the
// output dtype (integer outputs truncate toward zero, as Cast does).

#include <cmath>
#include <memory>
#include <numbers>
#include <optional>
#include <type_traits>
#include <vector>

#include "frame/ops/kernel_registry.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;

constexpr DTypeSet kSignalIntDTypes{DTypeCode::kInt32, DTypeCode::kInt64};

template <typename T>
T from_double(double v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(v);
  } else {
    return from_compute<T>(static_cast<compute_t<T>>(v));
  }
}

// Writes v[i] into the numeric tensor `t` (one dtype dispatch).
Status store(const std::vector<double>& v, Tensor& t) {
  return dispatch_dtype<kNumericDTypes>(t.dtype(), [&]<typename T>() {
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = from_double<T>(v[i]);
  });
}

// w[k] = a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N); Coeffs names the window.
struct Hann {
  static constexpr double a0 = 0.5, a1 = 0.5, a2 = 0.0;
};
struct Hamming {
  static constexpr double a0 = 25.0 / 46.0, a1 = 21.0 / 46.0, a2 = 0.0;
};
struct Blackman {
  static constexpr double a0 = 0.42, a1 = 0.5, a2 = 0.08;
};

template <typename Coeffs>
Status window_kernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  const int64_t size = y.numel();
  const bool periodic = ctx.node->attr_or<int64_t>("periodic", 1) != 0;
  const int64_t n = periodic ? size : size - 1;
  std::vector<double> w(static_cast<size_t>(size), 1.0);  // size-1 symmetric window: [1]
  if (n > 0) {
    for (int64_t k = 0; k < size; ++k) {
      // The angle is reduced exactly (k mod N) before scaling, so large k lose nothing.
      const double a = 2.0 * std::numbers::pi * static_cast<double>(k % n) / static_cast<double>(n);
      w[static_cast<size_t>(k)] =
          Coeffs::a0 - Coeffs::a1 * std::cos(a) + Coeffs::a2 * std::cos(2 * a);
    }
  }
  return store(w, y);
}

Status mel_weight_matrix_kernel(KernelContext& ctx) {
  const int64_t bins = ctx.input(0).element_as_int64(0);
  const int64_t dft = ctx.input(1).element_as_int64(0);
  const double rate = static_cast<double>(ctx.input(2).element_as_int64(0));
  const double lower = ctx.input(3).element_as_double(0);
  const double upper = ctx.input(4).element_as_double(0);
  const int64_t spec = dft / 2 + 1;
  if (rate <= 0) return ctx.node->error("input 2 (sample_rate) must be > 0, got {}", rate);
  auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low_mel = to_mel(lower);
  const double step = (to_mel(upper) - low_mel) / static_cast<double>(bins + 2);
  std::vector<int64_t> b(static_cast<size_t>(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double hz =
        700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595.0) - 1.0);
    const int64_t bin = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / rate));
    // Filters write bins up to b[bins] and below b[bins + 1].
    const int64_t limit = i == bins + 1 ? spec : spec - 1;
    if (bin < 0 || bin > limit) {
      return ctx.node->error(
          "frequency {} Hz maps to bin {}, outside [0, {}]: the edges must lie "
          "in [0, sample_rate / 2]",
          hz, bin, limit);
    }
    b[static_cast<size_t>(i)] = bin;
  }
  std::vector<double> out(static_cast<size_t>(spec * bins), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& { return out[static_cast<size_t>(j * bins + i)]; };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t lo = b[static_cast<size_t>(i)], c = b[static_cast<size_t>(i + 1)],
                  hi = b[static_cast<size_t>(i + 2)];
    if (c == lo) {
      at(c, i) = 1.0;
    } else {
      for (int64_t j = lo; j <= c; ++j)
        at(j, i) = static_cast<double>(j - lo) / static_cast<double>(c - lo);
    }
    for (int64_t j = c; j < hi; ++j)
      at(j, i) = static_cast<double>(hi - j) / static_cast<double>(hi - c);
  }
  return store(out, ctx.output(0));
}

// Twiddles cos/sin(2 pi t / n) for t in [0, n): built once per node by the kernels' prepare step
// when n is known at compile time, else once per call (constant folding). Index (j * k) mod n
// is exact, so long transforms lose no accuracy to large angles.
struct Twiddles {
  int64_t n = 0;
  std::vector<double> c, s;
  explicit Twiddles(int64_t len)
      : n(len), c(static_cast<size_t>(len)), s(static_cast<size_t>(len)) {
    for (int64_t t = 0; t < n; ++t) {
      const double a = 2.0 * std::numbers::pi * static_cast<double>(t) / static_cast<double>(n);
      c[static_cast<size_t>(t)] = std::cos(a);
      s[static_cast<size_t>(t)] = std::sin(a);
    }
  }
};

// The transform length of a node as its prepare step sees it, or 0 when known only at run time.
int64_t dft_length_at_compile(const ops::NodeContext& ctx) {
  if (ctx.has_input(1)) {
    const Tensor* len = ctx.constant_input(1);
    return len != nullptr && len->numel() == 1 ? len->element_as_int64(0) : 0;
  }
  const int64_t r = ctx.input_types[0].rank();
  int64_t axis = ctx.attr_or<int64_t>("axis", 1);
  if (axis < 0) axis += r;
  return axis >= 0 && axis < r ? ctx.input_types[0].shape[static_cast<size_t>(axis)] : 0;
}

int64_t stft_length_at_compile(const ops::NodeContext& ctx) {
  if (ctx.has_input(3)) {
    const Tensor* len = ctx.constant_input(3);
    return len != nullptr && len->numel() == 1 ? len->element_as_int64(0) : 0;
  }
  return ctx.has_input(2) && ctx.input_types[2].rank() == 1 ? ctx.input_types[2].shape[0] : 0;
}

// prepare of dft and stft: the twiddles of the compile-time length (no state when unknown).
template <int64_t (*kLength)(const ops::NodeContext&)>
Result<std::shared_ptr<void>> prepare_twiddles(const ops::NodeContext& ctx) {
  const int64_t n = kLength(ctx);
  if (n < 1) return std::shared_ptr<void>();
  return std::shared_ptr<void>(std::make_shared<Twiddles>(n));
}

// The prepared twiddles when they are for length n, else `local` built for n.
const Twiddles& twiddles_for(const KernelContext& ctx, int64_t n, std::optional<Twiddles>& local) {
  const auto* tw = static_cast<const Twiddles*>(ctx.state);
  if (tw != nullptr && tw->n == n) return *tw;
  return local.emplace(n);
}

// X[k] = scale * sum_j (re[j] + i im[j]) exp(sign * 2 pi i j k / n) for k < m; re/im hold n
// samples (zero-padded by the caller).
void dft_line(const std::vector<double>& re, const std::vector<double>& im, int64_t m, double sign,
              double scale, const Twiddles& tw, std::vector<double>& out_re,
              std::vector<double>& out_im) {
  const int64_t n = static_cast<int64_t>(re.size());
  for (int64_t k = 0; k < m; ++k) {
    const int64_t step = k % n;
    double sr = 0, si = 0;
    // t = (j * k) mod n, advanced by k mod n per sample (no division in the loop).
    for (int64_t j = 0, t = 0; j < n; ++j) {
      const size_t ts = static_cast<size_t>(t);
      const double c = tw.c[ts], s = sign * tw.s[ts];
      const size_t js = static_cast<size_t>(j);
      sr += re[js] * c - im[js] * s;
      si += re[js] * s + im[js] * c;
      t += step;
      if (t >= n) t -= n;
    }
    out_re[static_cast<size_t>(k)] = sr * scale;
    out_im[static_cast<size_t>(k)] = si * scale;
  }
}

Status dft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t r = x.rank();
  int64_t axis = ctx.node->attr_or<int64_t>("axis", 1);
  if (axis < 0) axis += r;
  const bool inverse = ctx.node->attr_or<int64_t>("inverse", 0) != 0;
  const int64_t comp = x.dim(r - 1), sz = x.dim(axis);
  const int64_t n = ctx.node->has_input(1) ? ctx.input(1).element_as_int64(0) : sz;
  const int64_t m = y.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < r - 1; ++d) inner *= x.dim(d);
  std::optional<Twiddles> local;
  const Twiddles& tw = twiddles_for(ctx, n, local);
  const double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    std::vector<double> re(static_cast<size_t>(n)), im(static_cast<size_t>(n));
    std::vector<double> ore(static_cast<size_t>(m)), oim(static_cast<size_t>(m));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        for (int64_t j = 0; j < n; ++j) {
          const size_t js = static_cast<size_t>(j);
          re[js] = im[js] = 0.0;
          if (j >= sz) continue;
          const T* p = xp + ((o * sz + j) * inner + in) * comp;
          re[js] = static_cast<double>(to_compute(p[0]));
          if (comp == 2) im[js] = static_cast<double>(to_compute(p[1]));
        }
        dft_line(re, im, m, sign, scale, tw, ore, oim);
        for (int64_t k = 0; k < m; ++k) {
          T* q = yp + ((o * m + k) * inner + in) * 2;
          q[0] = from_double<T>(ore[static_cast<size_t>(k)]);
          q[1] = from_double<T>(oim[static_cast<size_t>(k)]);
        }
      }
    }
  });
}

Status stft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t batch = x.dim(0), len = x.dim(1), comp = x.dim(2);
  const int64_t step = ctx.input(1).element_as_int64(0);
  const bool has_window = ctx.node->has_input(2);
  const int64_t flen =
      ctx.node->has_input(3) ? ctx.input(3).element_as_int64(0) : ctx.input(2).dim(0);
  const int64_t frames = y.dim(1), bins = y.dim(2);
  std::vector<double> w(static_cast<size_t>(flen), 1.0);
  if (has_window) {
    for (int64_t j = 0; j < flen; ++j)
      w[static_cast<size_t>(j)] = ctx.input(2).element_as_double(j);
  }
  std::optional<Twiddles> local;
  const Twiddles& tw = twiddles_for(ctx, flen, local);
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    std::vector<double> re(static_cast<size_t>(flen)), im(static_cast<size_t>(flen));
    std::vector<double> ore(static_cast<size_t>(bins)), oim(static_cast<size_t>(bins));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t j = 0; j < flen; ++j) {
          const size_t js = static_cast<size_t>(j);
          const T* p = xp + (b * len + f * step + j) * comp;
          re[js] = static_cast<double>(to_compute(p[0])) * w[js];
          im[js] = comp == 2 ? static_cast<double>(to_compute(p[1])) * w[js] : 0.0;
        }
        dft_line(re, im, bins, -1.0, 1.0, tw, ore, oim);
        for (int64_t k = 0; k < bins; ++k) {
          T* q = yp + ((b * frames + f) * bins + k) * 2;
          q[0] = from_double<T>(ore[static_cast<size_t>(k)]);
          q[1] = from_double<T>(oim[static_cast<size_t>(k)]);
        }
      }
    }
  });
}

}  // namespace

FRAME_REGISTER_KERNEL(dft, "cpu", dft_kernel)
    .dtypes(kFloatDTypes)
    .prepare(prepare_twiddles<dft_length_at_compile>);
FRAME_REGISTER_KERNEL(stft, "cpu", stft_kernel)
    .dtypes(kFloatDTypes)
    .prepare(prepare_twiddles<stft_length_at_compile>);
FRAME_REGISTER_KERNEL(hann_window, "cpu", window_kernel<Hann>).dtypes(kSignalIntDTypes);
FRAME_REGISTER_KERNEL(hamming_window, "cpu", window_kernel<Hamming>).dtypes(kSignalIntDTypes);
FRAME_REGISTER_KERNEL(blackman_window, "cpu", window_kernel<Blackman>).dtypes(kSignalIntDTypes);
FRAME_REGISTER_KERNEL(mel_weight_matrix, "cpu", mel_weight_matrix_kernel).dtypes(kSignalIntDTypes);

}  // namespace frame::cpu
