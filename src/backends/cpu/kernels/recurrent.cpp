// cpu reference kernels of lstm, gru and rnn (ONNX LSTM / GRU / RNN, opset 14). One node runs
// the whole sequence: per direction, the input projection X W^T + biases of every step is one
// matrix-product loop up front, then the recurrence walks the steps on per-thread workspace
// that grows once (no allocation per step). Weight rows are contiguous, so every product is a
// dot product over a contiguous row.

#include "ops/schemas/recurrent.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "frame/ops/kernel_registry.h"

namespace frame::cpu {
namespace {

using backends::cpu::parallel_ranges;
using ops::KernelContext;
using ops::RnnAct;
using ops::RnnActKind;
using ops::RnnKind;
using ops::RnnSpec;

template <typename C>
C dot(const C* a, const C* b, int64_t n) {
  C s = 0;
  for (int64_t k = 0; k < n; ++k) s += a[k] * b[k];
  return s;
}

// One branch per gate vector (not per element).
template <typename C>
void activate(const RnnAct& a, C* v, int64_t n) {
  const C al = static_cast<C>(a.alpha), be = static_cast<C>(a.beta);
  switch (a.kind) {
    case RnnActKind::kRelu:
      for (int64_t k = 0; k < n; ++k) v[k] = std::max<C>(v[k], 0);
      break;
    case RnnActKind::kTanh:
      for (int64_t k = 0; k < n; ++k) v[k] = std::tanh(v[k]);
      break;
    case RnnActKind::kSigmoid:
      for (int64_t k = 0; k < n; ++k) v[k] = C(1) / (C(1) + std::exp(-v[k]));
      break;
    case RnnActKind::kAffine:
      for (int64_t k = 0; k < n; ++k) v[k] = al * v[k] + be;
      break;
    case RnnActKind::kLeakyRelu:
      for (int64_t k = 0; k < n; ++k) v[k] = v[k] >= 0 ? v[k] : al * v[k];
      break;
    case RnnActKind::kThresholdedRelu:
      for (int64_t k = 0; k < n; ++k) v[k] = v[k] > al ? v[k] : C(0);
      break;
    case RnnActKind::kScaledTanh:
      for (int64_t k = 0; k < n; ++k) v[k] = al * std::tanh(be * v[k]);
      break;
    case RnnActKind::kHardSigmoid:
      for (int64_t k = 0; k < n; ++k) v[k] = std::clamp<C>(al * v[k] + be, 0, 1);
      break;
    case RnnActKind::kElu:
      for (int64_t k = 0; k < n; ++k) v[k] = v[k] >= 0 ? v[k] : al * (std::exp(v[k]) - C(1));
      break;
    case RnnActKind::kSoftsign:
      for (int64_t k = 0; k < n; ++k) v[k] = v[k] / (C(1) + std::abs(v[k]));
      break;
    case RnnActKind::kSoftplus:
      for (int64_t k = 0; k < n; ++k) v[k] = std::log1p(std::exp(v[k]));
      break;
  }
}

template <typename C>
void clip(const RnnSpec& s, C* v, int64_t n) {
  if (!s.has_clip) return;
  const C c = static_cast<C>(s.clip);
  for (int64_t k = 0; k < n; ++k) v[k] = std::clamp(v[k], -c, c);
}

// Per-thread workspace, grown once to the largest node it served (run() is re-entrant, so it
// is not part of the prepared state).
template <typename C>
C* workspace(size_t n) {
  thread_local std::vector<C> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Pointers into the workspace for one direction.
template <typename C>
struct Work {
  C* wx;    // [seq * batch, GH]: X W^T + biases, row (t, b)
  C* h;     // [batch, H] hidden state
  C* c;     // [batch, H] cell state (lstm)
  C* g;     // [batch, GH] gate pre-activations of the current step
  C* tmp;   // [batch, H] r * H (gru)
  C* bias;  // [GH] Wb + Rb (gru with linear_before_reset: Wb only for the h gate)
  C* rbh;   // [H] Rb of the h gate (gru with linear_before_reset)
  C* peep;  // [3H] P (lstm)
  C* w;     // [GH, I] W converted to C (16-bit T only)
  C* r;     // [GH, H] R converted to C (16-bit T only)
};

template <typename T, typename C>
const C* as_compute(const T* src, int64_t n, C* dst) {
  if constexpr (std::is_same_v<T, C>) {
    (void)n;
    (void)dst;
    return src;
  } else {
    for (int64_t k = 0; k < n; ++k) dst[k] = to_compute(src[k]);
    return dst;
  }
}

// One LSTM step for batch row b: gates from wx row `x`, state h/c updated in place.
template <typename C>
void lstm_cell(const RnnSpec& s, const std::array<RnnAct, 3>& act, const C* x, const C* R,
               const C* P, C* g, C* h, C* c) {
  const int64_t H = s.hidden, GH = 4 * H;
  for (int64_t j = 0; j < GH; ++j) g[j] = x[j] + dot(h, R + j * H, H);
  C *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
  if (P != nullptr) {
    for (int64_t k = 0; k < H; ++k) {
      gi[k] += P[k] * c[k];
      gf[k] += P[2 * H + k] * c[k];
    }
  }
  clip(s, gi, H);
  clip(s, gf, H);
  clip(s, gc, H);
  activate(act[0], gi, H);
  if (s.input_forget) {
    for (int64_t k = 0; k < H; ++k) gf[k] = C(1) - gi[k];
  } else {
    activate(act[0], gf, H);
  }
  activate(act[1], gc, H);
  for (int64_t k = 0; k < H; ++k) c[k] = gf[k] * c[k] + gi[k] * gc[k];
  if (P != nullptr) {
    for (int64_t k = 0; k < H; ++k) go[k] += P[H + k] * c[k];
  }
  clip(s, go, H);
  activate(act[0], go, H);
  std::copy(c, c + H, gc);
  activate(act[2], gc, H);
  for (int64_t k = 0; k < H; ++k) h[k] = go[k] * gc[k];
}

template <typename C>
void gru_cell(const RnnSpec& s, const std::array<RnnAct, 3>& act, const C* x, const C* R,
              const C* rbh, C* g, C* tmp, C* h) {
  const int64_t H = s.hidden;
  for (int64_t j = 0; j < 2 * H; ++j) g[j] = x[j] + dot(h, R + j * H, H);
  clip(s, g, 2 * H);
  activate(act[0], g, 2 * H);
  const C *z = g, *r = g + H;
  C* gh = g + 2 * H;
  const C* Rh = R + 2 * H * H;
  if (s.linear_before_reset) {
    for (int64_t j = 0; j < H; ++j) gh[j] = x[2 * H + j] + r[j] * (dot(h, Rh + j * H, H) + rbh[j]);
  } else {
    for (int64_t k = 0; k < H; ++k) tmp[k] = r[k] * h[k];
    for (int64_t j = 0; j < H; ++j) gh[j] = x[2 * H + j] + dot(tmp, Rh + j * H, H);
  }
  clip(s, gh, H);
  activate(act[1], gh, H);
  for (int64_t k = 0; k < H; ++k) h[k] = (C(1) - z[k]) * gh[k] + z[k] * h[k];
}

template <typename C>
void rnn_cell(const RnnSpec& s, const std::array<RnnAct, 3>& act, const C* x, const C* R, C* g,
              C* h) {
  const int64_t H = s.hidden;
  for (int64_t j = 0; j < H; ++j) g[j] = x[j] + dot(h, R + j * H, H);
  clip(s, g, H);
  activate(act[0], g, H);
  std::copy(g, g + H, h);
}

template <typename T>
Status run_recurrent(KernelContext& ctx, const RnnSpec& s) {
  using C = compute_t<T>;
  const int64_t D = s.num_dirs, B = s.batch, S = s.seq, I = s.input, H = s.hidden;
  const int64_t GH = s.gates * H;
  const bool lstm = s.kind == RnnKind::kLstm, gru = s.kind == RnnKind::kGru;
  const size_t n_in = ctx.inputs.size();
  auto present = [&](size_t i) { return i < n_in && ctx.node->has_input(i); };

  // Steps per batch row (sequence_lens, checked against the static sequence length).
  std::vector<int64_t>& lens = *[] {
    thread_local std::vector<int64_t> v;
    return &v;
  }();
  lens.assign(static_cast<size_t>(B), S);
  if (present(4)) {
    const int32_t* l = ctx.input(4).data<int32_t>();
    for (int64_t b = 0; b < B; ++b) {
      if (l[b] < 0 || l[b] > S) {
        return ctx.node->error("input 4 (sequence_lens) value {} at batch {} is outside [0, {}]",
                               l[b], b, S);
      }
      lens[static_cast<size_t>(b)] = l[b];
    }
  }

  const bool convert = !std::is_same_v<T, C>;
  const int64_t n_ws =
      S * B * GH + 3 * B * H + B * GH + GH + 4 * H + (convert ? GH * I + GH * H : 0);
  C* ws = workspace<C>(static_cast<size_t>(n_ws));
  Work<C> wk{};
  {
    C* p = ws;
    auto take = [&](int64_t n) {
      C* q = p;
      p += n;
      return q;
    };
    wk.wx = take(S * B * GH);
    wk.h = take(B * H);
    wk.c = take(B * H);
    wk.tmp = take(B * H);
    wk.g = take(B * GH);
    wk.bias = take(GH);
    wk.rbh = take(H);
    wk.peep = take(3 * H);
    if (convert) {
      wk.w = take(GH * I);
      wk.r = take(GH * H);
    }
  }

  const T* X = ctx.input(0).data<T>();
  T* Y = ctx.output(0).data<T>();
  std::fill(Y, Y + ctx.output(0).numel(), from_compute<T>(C(0)));
  const int nt = ctx.num_threads;

  for (int64_t d = 0; d < D; ++d) {
    const bool rev = s.reverse || d == 1;
    const std::array<RnnAct, 3>& act = s.acts[static_cast<size_t>(d)];
    const C* W = as_compute(ctx.input(1).data<T>() + d * GH * I, GH * I, wk.w);
    const C* R = as_compute(ctx.input(2).data<T>() + d * GH * H, GH * H, wk.r);
    std::fill(wk.bias, wk.bias + GH, C(0));
    std::fill(wk.rbh, wk.rbh + H, C(0));
    if (present(3)) {
      const T* bp = ctx.input(3).data<T>() + d * 2 * GH;
      for (int64_t j = 0; j < GH; ++j) {
        const bool separate = gru && s.linear_before_reset && j >= 2 * H;
        wk.bias[j] = to_compute(bp[j]) + (separate ? C(0) : to_compute(bp[GH + j]));
        if (separate) wk.rbh[j - 2 * H] = to_compute(bp[GH + j]);
      }
    }
    const C* P = nullptr;
    if (lstm && present(7)) P = as_compute(ctx.input(7).data<T>() + d * 3 * H, 3 * H, wk.peep);

    // Input projection of every step at once: wx[(t, b)] = X[t, b] W^T + bias.
    parallel_ranges(S * B, static_cast<double>(I * sizeof(T) + GH * sizeof(C)),
                    static_cast<double>(2 * GH * I), nt, [&](int64_t r0, int64_t r1) {
                      for (int64_t row = r0; row < r1; ++row) {
                        const int64_t t = row / B, b = row % B;
                        const T* x = X + (s.layout == 0 ? t * B + b : b * S + t) * I;
                        C* o = wk.wx + row * GH;
                        if constexpr (std::is_same_v<T, C>) {
                          for (int64_t j = 0; j < GH; ++j) o[j] = wk.bias[j] + dot(x, W + j * I, I);
                        } else {
                          std::copy(wk.bias, wk.bias + GH, o);
                          for (int64_t k = 0; k < I; ++k) {
                            const C xv = to_compute(x[k]);
                            for (int64_t j = 0; j < GH; ++j) o[j] += xv * W[j * I + k];
                          }
                        }
                      }
                    });

    // Initial states (layout 0: [D, batch, H]; layout 1: [batch, D, H]).
    auto state_off = [&](int64_t b) { return (s.layout == 0 ? d * B + b : b * D + d) * H; };
    for (int64_t b = 0; b < B; ++b) {
      C* h = wk.h + b * H;
      C* c = wk.c + b * H;
      if (present(5)) {
        const T* ih = ctx.input(5).data<T>() + state_off(b);
        for (int64_t k = 0; k < H; ++k) h[k] = to_compute(ih[k]);
      } else {
        std::fill(h, h + H, C(0));
      }
      if (lstm && present(6)) {
        const T* ic = ctx.input(6).data<T>() + state_off(b);
        for (int64_t k = 0; k < H; ++k) c[k] = to_compute(ic[k]);
      } else {
        std::fill(c, c + H, C(0));
      }
    }

    // The recurrence; batch rows of one step are independent.
    for (int64_t step = 0; step < S; ++step) {
      parallel_ranges(B, static_cast<double>(GH * H * sizeof(C)), static_cast<double>(2 * GH * H),
                      nt, [&](int64_t b0, int64_t b1) {
                        for (int64_t b = b0; b < b1; ++b) {
                          const int64_t len = lens[static_cast<size_t>(b)];
                          if (step >= len) continue;
                          const int64_t t = rev ? len - 1 - step : step;
                          const C* x = wk.wx + (t * B + b) * GH;
                          C* g = wk.g + b * GH;
                          C* h = wk.h + b * H;
                          if (lstm) {
                            lstm_cell(s, act, x, R, P, g, h, wk.c + b * H);
                          } else if (gru) {
                            gru_cell(s, act, x, R, wk.rbh, g, wk.tmp + b * H, h);
                          } else {
                            rnn_cell(s, act, x, R, g, h);
                          }
                          T* y =
                              Y + (s.layout == 0 ? (t * D + d) * B + b : (b * S + t) * D + d) * H;
                          for (int64_t k = 0; k < H; ++k) y[k] = from_compute<T>(h[k]);
                        }
                      });
    }

    for (size_t o = 1; o < ctx.outputs.size(); ++o) {
      const C* src = o == 1 ? wk.h : wk.c;
      T* dst = ctx.output(o).data<T>();
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t k = 0; k < H; ++k) dst[state_off(b) + k] = from_compute<T>(src[b * H + k]);
      }
    }
  }
  return Status();
}

Result<std::shared_ptr<void>> prepare(const ops::NodeContext& ctx, RnnKind kind) {
  FRAME_ASSIGN_OR_RETURN(RnnSpec s, ops::parse_rnn(ctx, kind));
  return std::shared_ptr<void>(std::make_shared<RnnSpec>(s));
}
Result<std::shared_ptr<void>> lstm_prepare(const ops::NodeContext& ctx) {
  return prepare(ctx, RnnKind::kLstm);
}
Result<std::shared_ptr<void>> gru_prepare(const ops::NodeContext& ctx) {
  return prepare(ctx, RnnKind::kGru);
}
Result<std::shared_ptr<void>> rnn_prepare(const ops::NodeContext& ctx) {
  return prepare(ctx, RnnKind::kRnn);
}

Status recurrent_kernel(KernelContext& ctx) {
  if (ctx.state == nullptr) return ctx.node->error("kernel state missing (prepare was not run)");
  const RnnSpec& s = *static_cast<const RnnSpec*>(ctx.state);
  return dispatch_dtype<kFloatDTypes>(ctx.input(0).dtype(),
                                      [&]<typename T>() { return run_recurrent<T>(ctx, s); });
}

}  // namespace

FRAME_REGISTER_KERNEL(lstm, "cpu", recurrent_kernel).dtypes(kFloatDTypes).prepare(lstm_prepare);
FRAME_REGISTER_KERNEL(gru, "cpu", recurrent_kernel).dtypes(kFloatDTypes).prepare(gru_prepare);
FRAME_REGISTER_KERNEL(rnn, "cpu", recurrent_kernel).dtypes(kFloatDTypes).prepare(rnn_prepare);

}  // namespace frame::cpu
