// onednn kernels of lstm, gru and rnn: oneDNN's lstm_forward, gru_forward / lbr_gru_forward
// and vanilla_rnn_forward primitives (forward inference), one unidirectional primitive per
// direction (left2right, and right2left for reverse or the second half of bidirectional). An
// LSTM without peepholes runs on lstm_own instead (dnnl_sgemm + Highway gate loops; faster
// than oneDNN 2.6's lstm_forward for the small batches of language models), and with a batch
// of at most kPanelMaxBatch on lstm_panels (its recurrence split over the node's threads).
// Taken: f32, layout 0, no sequence_lens, no clip, no input_forget, the default activations
// (rnn: one of Tanh, Relu, Sigmoid), and constant W, R, B, P (initializers), which are
// converted once at prepare time into oneDNN's gate order (lstm i f c o, gru u r o) and
// reordered into the layout the primitive prefers. Everything else declines to `cpu` (M10).
// initial_h / initial_c and Y_h / Y_c are [D, N, H] in layout 0, so each direction's slice is
// a plain [1, 1, N, H] ldnc block used in place; Y is written in place for one direction and
// through per-thread staging [T, N, H] for bidirectional (Y interleaves the directions).

#include "ops/schemas/recurrent.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/ew_vec.h"
#include "backends/onednn/kernels/nn_common.h"
#include "backends/onednn/kernels/team_barrier.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::onednn {
namespace {

using dnnl::memory;
using ops::KernelContext;
using ops::NodeContext;
using ops::RnnActKind;
using ops::RnnKind;
using ops::RnnSpec;
using Tag = memory::format_tag;

constexpr DTypeSet kF32{DTypeCode::kFloat32};

// One direction's primitive and its constant operands in the primitive's layouts.
struct DirPrim {
  dnnl::primitive prim;
  memory::desc scratch;
  memory w, r, bias, peep;
};

// One direction of an LSTM run by lstm_own: W [4H, I] and R [4H, H] in ONNX's gate order
// (i o f c), and the bias Wb + Rb [4H]. For small batches (lstm_panels) the same in blocks of
// kPanelWidth hidden units instead: W and the bias rows in the order [block][gate][unit], 4Hp
// rows (Hp = H rounded up to kPanelWidth; the padding rows are zero), and R as panels
// [block][gate][k < H][unit] (VecTable::panel_gemv).
struct OwnLstmDir {
  std::vector<float> w, r, bias;
};

// Largest batch the panel form takes: it reads R once per batch row and step, where the
// per-step sgemm reads it once per step.
constexpr int64_t kPanelMaxBatch = 4;

struct RnnState {
  RnnSpec spec;
  std::array<DirPrim, 2> dirs;
  memory::desc x, state, y;  // [T, N, I] tnc; [1, 1, N, H] ldnc; [T, N, H] tnc
  bool has_h0 = false, has_c0 = false;
  // An LSTM without peepholes runs on lstm_own instead of oneDNN's primitive; with a batch of
  // at most kPanelMaxBatch on lstm_panels (own_dirs then hold the panel forms).
  bool own = false;
  bool panels = false;
  int64_t blocks = 0;  // hidden units in blocks of kPanelWidth (panels only)
  std::array<OwnLstmDir, 2> own_dirs;
  const VecTable* vt = nullptr;
  VecUnaryFn sigmoid = nullptr, tanh = nullptr;
  ops::ew::SigmoidOp<float> sigmoid_functor{};
  ops::ew::TanhOp<float> tanh_functor{};
};

// Position in ONNX's gate blocks of oneDNN's gate g.
constexpr std::array<int64_t, 4> kLstmGates = {0, 2, 3, 1};  // i f c o <- i o f c
constexpr std::array<int64_t, 3> kGruGates = {0, 1, 2};      // u r o <- z r h
constexpr std::array<int64_t, 3> kPeepGates = {0, 2, 1};     // i f o <- i o f

Status check_node(const NodeContext& node, const RnnSpec& s) {
  if (s.layout != 0) return unimplemented("{} with layout=1", node.op);
  if (node.has_input(4)) return unimplemented("{} with sequence_lens", node.op);
  if (s.has_clip) return unimplemented("{} with clip", node.op);
  if (s.input_forget) return unimplemented("{} with input_forget=1", node.op);
  if (s.seq == 0 || s.batch == 0 || s.input == 0) return unimplemented("{} of empty X", node.op);
  for (size_t i : {size_t{1}, size_t{2}, size_t{3}, size_t{7}}) {
    if (node.has_input(i) && node.constant_input(i) == nullptr) {
      return unimplemented("{} with a non-constant input {} (weights are reordered at prepare)",
                           node.op, i);
    }
  }
  for (int64_t d = 0; d < s.num_dirs; ++d) {
    const auto& a = s.acts[static_cast<size_t>(d)];
    const bool ok = s.kind == RnnKind::kLstm
                        ? a[0].kind == RnnActKind::kSigmoid && a[1].kind == RnnActKind::kTanh &&
                              a[2].kind == RnnActKind::kTanh
                    : s.kind == RnnKind::kGru
                        ? a[0].kind == RnnActKind::kSigmoid && a[1].kind == RnnActKind::kTanh
                        : a[0].kind == s.acts[0][0].kind &&
                              (a[0].kind == RnnActKind::kTanh || a[0].kind == RnnActKind::kRelu ||
                               a[0].kind == RnnActKind::kSigmoid);
    if (!ok) return unimplemented("{} with non-default activations", node.op);
  }
  return Status();
}

dnnl::algorithm rnn_algorithm(RnnActKind k) {
  return k == RnnActKind::kRelu      ? dnnl::algorithm::eltwise_relu
         : k == RnnActKind::kSigmoid ? dnnl::algorithm::eltwise_logistic
                                     : dnnl::algorithm::eltwise_tanh;
}

// The primitive descriptor of direction `d` with `any` weight layouts.
dnnl::primitive_desc_base make_pd(const NodeContext& node, const RnnState& st, int64_t d,
                                  memory::desc& w_any, memory::desc& r_any) {
  const RnnSpec& s = st.spec;
  const auto f32 = memory::data_type::f32;
  const int64_t gates = s.kind == RnnKind::kGru && s.linear_before_reset ? 3 : s.gates;
  const int64_t bias_gates = s.kind == RnnKind::kGru && s.linear_before_reset ? 4 : s.gates;
  w_any = memory::desc({1, 1, s.input, gates, s.hidden}, f32, Tag::any);
  r_any = memory::desc({1, 1, s.hidden, gates, s.hidden}, f32, Tag::any);
  const memory::desc bias({1, 1, bias_gates, s.hidden}, f32, Tag::ldgo);
  const memory::desc none;
  const memory::desc h0 = st.has_h0 ? st.state : none;
  const memory::desc hn = node.num_outputs > 1 ? st.state : none;
  const auto dir = d == 1 || s.reverse ? dnnl::rnn_direction::unidirectional_right2left
                                       : dnnl::rnn_direction::unidirectional_left2right;
  const auto prop = dnnl::prop_kind::forward_inference;
  switch (s.kind) {
    case RnnKind::kLstm: {
      const memory::desc c0 = st.has_c0 ? st.state : none;
      // oneDNN computes the last cell state whenever it computes the last hidden state: Y_c
      // goes to staging when only Y_h is wanted.
      const memory::desc cn = node.num_outputs > 1 ? st.state : none;
      const memory::desc peep =
          node.has_input(7) ? memory::desc({1, 1, 3, s.hidden}, f32, Tag::ldgo) : none;
      dnnl::lstm_forward::desc desc(prop, dir, st.x, h0, c0, w_any, r_any, peep, bias, st.y, hn,
                                    cn);
      return dnnl::lstm_forward::primitive_desc(desc, default_attr(), engine());
    }
    case RnnKind::kGru:
      if (s.linear_before_reset) {
        dnnl::lbr_gru_forward::desc desc(prop, dir, st.x, h0, w_any, r_any, bias, st.y, hn);
        return dnnl::lbr_gru_forward::primitive_desc(desc, default_attr(), engine());
      } else {
        dnnl::gru_forward::desc desc(prop, dir, st.x, h0, w_any, r_any, bias, st.y, hn);
        return dnnl::gru_forward::primitive_desc(desc, default_attr(), engine());
      }
    case RnnKind::kRnn:
      break;
  }
  dnnl::vanilla_rnn_forward::desc desc(prop, rnn_algorithm(s.acts[0][0].kind), dir, st.x, h0, w_any,
                                       r_any, bias, st.y, hn);
  return dnnl::vanilla_rnn_forward::primitive_desc(desc, default_attr(), engine());
}

// ONNX [G*H, K] weights of one direction -> oneDNN ldigo [1, 1, K, G, H] (gate-permuted),
// reordered into `want`.
memory weights_for(const float* src, int64_t k, int64_t h, std::span<const int64_t> perm,
                   const memory::desc& want) {
  const auto g = static_cast<int64_t>(perm.size());
  std::vector<float> plain(static_cast<size_t>(k * g * h));
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t gi = 0; gi < g; ++gi) {
      const float* row = src + perm[static_cast<size_t>(gi)] * h * k;
      for (int64_t j = 0; j < h; ++j) {
        plain[static_cast<size_t>((i * g + gi) * h + j)] = row[j * k + i];
      }
    }
  }
  const memory::desc pd({1, 1, k, g, h}, memory::data_type::f32, Tag::ldigo);
  memory from(pd, engine(), plain.data());
  memory to(want, engine());
  dnnl::reorder(from, to).execute(thread_stream(), from, to);
  thread_stream().wait();
  return to;
}

memory floats_memory(const memory::desc& d, const std::vector<float>& v) {
  memory m(d, engine());
  std::copy(v.begin(), v.end(), static_cast<float*>(m.get_data_handle()));
  return m;
}

Result<std::shared_ptr<RnnState>> plan(const NodeContext& node, RnnKind kind) {
  FRAME_ASSIGN_OR_RETURN(RnnSpec s, ops::parse_rnn(node, kind));
  FRAME_RETURN_IF_ERROR(check_node(node, s));
  auto st = std::make_shared<RnnState>();
  st->spec = s;
  const auto f32 = memory::data_type::f32;
  st->x = memory::desc({s.seq, s.batch, s.input}, f32, Tag::tnc);
  st->y = memory::desc({s.seq, s.batch, s.hidden}, f32, Tag::tnc);
  st->state = memory::desc({1, 1, s.batch, s.hidden}, f32, Tag::ldnc);
  st->has_h0 = node.has_input(5);
  st->has_c0 = kind == RnnKind::kLstm && node.has_input(6);
  return st;
}

// Whether `node` (of kind `kind`) runs on lstm_own rather than oneDNN's primitive: an LSTM
// without peepholes (input 7). One predicate for accepts() and prepare().
bool runs_own_lstm(const NodeContext& node, RnnKind kind) {
  return kind == RnnKind::kLstm && !node.has_input(7);
}

// The lstm_own state: W, R and the summed bias per direction copied out of the constants.
Status prepare_own_lstm(const NodeContext& node, RnnState& st) {
  const RnnSpec& s = st.spec;
  const int64_t GH = 4 * s.hidden;
  const float* W = node.constant_input(1)->data<float>();
  const float* R = node.constant_input(2)->data<float>();
  const float* B = node.has_input(3) ? node.constant_input(3)->data<float>() : nullptr;
  st.panels = s.batch <= kPanelMaxBatch;
  st.blocks =
      (s.hidden + static_cast<int64_t>(kPanelWidth) - 1) / static_cast<int64_t>(kPanelWidth);
  for (int64_t d = 0; d < s.num_dirs && st.panels; ++d) {
    OwnLstmDir& o = st.own_dirs[static_cast<size_t>(d)];
    const int64_t H = s.hidden, I = s.input, P = static_cast<int64_t>(kPanelWidth);
    const int64_t rows = 4 * st.blocks * P;
    o.w.assign(static_cast<size_t>(rows * I), 0.0F);
    o.bias.assign(static_cast<size_t>(rows), 0.0F);
    o.r.assign(static_cast<size_t>(rows * H), 0.0F);
    const float* Wd = W + d * GH * I;
    const float* Rd = R + d * GH * H;
    const float* Bd = B != nullptr ? B + d * 2 * GH : nullptr;
    for (int64_t b = 0; b < st.blocks; ++b) {
      for (int64_t g = 0; g < 4; ++g) {
        for (int64_t u = 0; u < P && b * P + u < H; ++u) {
          const int64_t src = g * H + b * P + u;  // ONNX row (gate g, unit b*P+u)
          const int64_t dst = (b * 4 + g) * P + u;
          // c~ (gate 3) as 2 sigmoid(2z) - 1: its rows doubled (exact in binary floating point).
          const float scale = g == 3 ? 2.0F : 1.0F;
          for (int64_t i = 0; i < I; ++i)
            o.w[static_cast<size_t>(dst * I + i)] = scale * Wd[src * I + i];
          if (Bd != nullptr) o.bias[static_cast<size_t>(dst)] = scale * (Bd[src] + Bd[GH + src]);
          float* panel = o.r.data() + (b * 4 + g) * H * P;
          for (int64_t k = 0; k < H; ++k) panel[k * P + u] = scale * Rd[src * H + k];
        }
      }
    }
  }
  for (int64_t d = 0; d < s.num_dirs && !st.panels; ++d) {
    OwnLstmDir& o = st.own_dirs[static_cast<size_t>(d)];
    o.w.assign(W + d * GH * s.input, W + (d + 1) * GH * s.input);
    o.r.assign(R + d * GH * s.hidden, R + (d + 1) * GH * s.hidden);
    o.bias.assign(static_cast<size_t>(GH), 0.0F);
    if (B != nullptr) {
      for (int64_t j = 0; j < GH; ++j) o.bias[j] = B[d * 2 * GH + j] + B[d * 2 * GH + GH + j];
    }
  }
  st.vt = &vec_table();
  const int si = unary_index("sigmoid"), ti = unary_index("tanh");
  st.sigmoid = si < 0 ? nullptr : st.vt->unary[static_cast<size_t>(si)];
  st.tanh = ti < 0 ? nullptr : st.vt->unary[static_cast<size_t>(ti)];
  if (st.sigmoid == nullptr || st.tanh == nullptr) {
    return node.error("no vector sigmoid / tanh loops on this target ({})", st.vt->target);
  }
  if (st.panels && st.vt->panel_gemv == nullptr) {
    return node.error("no vector panel_gemv loop on this target ({})", st.vt->target);
  }
  st.own = true;
  return Status();
}

Result<std::shared_ptr<void>> prepare(const NodeContext& node, RnnKind kind) {
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<RnnState> st, plan(node, kind));
  const RnnSpec& s = st->spec;
  if (runs_own_lstm(node, kind)) {
    FRAME_RETURN_IF_ERROR(prepare_own_lstm(node, *st));
    return std::shared_ptr<void>(st);
  }
  const int64_t H = s.hidden, G = s.gates, GH = G * H;
  std::span<const int64_t> perm = kind == RnnKind::kLstm ? std::span<const int64_t>(kLstmGates)
                                  : kind == RnnKind::kGru
                                      ? std::span<const int64_t>(kGruGates)
                                      : std::span<const int64_t>(kGruGates.data(), 1);
  const float* W = node.constant_input(1)->data<float>();
  const float* R = node.constant_input(2)->data<float>();
  const float* B = node.has_input(3) ? node.constant_input(3)->data<float>() : nullptr;
  const bool lbr = kind == RnnKind::kGru && s.linear_before_reset;
  try {
    for (int64_t d = 0; d < s.num_dirs; ++d) {
      DirPrim& p = st->dirs[static_cast<size_t>(d)];
      memory::desc w_any, r_any;
      const dnnl::primitive_desc_base pd = make_pd(node, *st, d, w_any, r_any);
      p.scratch = pd.scratchpad_desc();
      p.w = weights_for(W + d * GH * s.input, s.input, H, perm,
                        pd.query_md(dnnl::query::weights_md, 0));
      p.r = weights_for(R + d * GH * H, H, H, perm, pd.query_md(dnnl::query::weights_md, 1));
      // Bias [bias_gates, H]: Wb + Rb per gate; lbr gru keeps the h gate's Rb as a 4th gate.
      std::vector<float> bias(static_cast<size_t>((lbr ? G + 1 : G) * H), 0.0F);
      if (B != nullptr) {
        const float* wb = B + d * 2 * GH;
        const float* rb = wb + GH;
        for (int64_t g = 0; g < G; ++g) {
          const int64_t o = perm[static_cast<size_t>(g)] * H;
          for (int64_t j = 0; j < H; ++j) {
            float v = wb[o + j];
            if (!(lbr && g == 2)) v += rb[o + j];
            bias[static_cast<size_t>(g * H + j)] = v;
          }
        }
        if (lbr) std::copy(rb + 2 * H, rb + 3 * H, bias.begin() + 3 * H);
      }
      p.bias = floats_memory(
          memory::desc({1, 1, lbr ? G + 1 : G, H}, memory::data_type::f32, Tag::ldgo), bias);
      if (kind == RnnKind::kLstm && node.has_input(7)) {
        const float* P = node.constant_input(7)->data<float>() + d * 3 * H;
        std::vector<float> peep(static_cast<size_t>(3 * H));
        for (int64_t g = 0; g < 3; ++g) {
          std::copy(P + kPeepGates[static_cast<size_t>(g)] * H,
                    P + (kPeepGates[static_cast<size_t>(g)] + 1) * H, peep.begin() + g * H);
        }
        p.peep = floats_memory(memory::desc({1, 1, 3, H}, memory::data_type::f32, Tag::ldgo), peep);
      }
      p.prim = dnnl::primitive(pd.get());
    }
  } catch (const dnnl::error& e) {
    return dnnl_failure(node, "recurrent primitive", e);
  }
  return std::shared_ptr<void>(st);
}

template <RnnKind K>
Status accepts(const NodeContext& node) {
  Result<std::shared_ptr<RnnState>> st = plan(node, K);
  if (!st.is_ok()) return nn::decline(st.status());
  if (runs_own_lstm(node, K)) return Status();  // no primitive to ask
  try {
    memory::desc w, r;
    for (int64_t d = 0; d < (*st)->spec.num_dirs; ++d) (void)make_pd(node, **st, d, w, r);
  } catch (const dnnl::error& e) {
    return dnnl_declines("recurrent primitive", e);
  }
  return Status();
}

template <RnnKind K>
Result<std::shared_ptr<void>> prepare_kind(const NodeContext& node) {
  return prepare(node, K);
}

// The start of an LSTM direction `d`, shared by lstm_own and lstm_panels: G [T*N, ldg] = the
// summed bias + X W^T for every step at once (one sgemm over W in the direction's row order),
// and the initial hidden and cell states h, c [N, ldh] (H units per row, the rest of a row 0)
// from inputs 5 and 6, or 0.
Status start_lstm_direction(const RnnState& st, const KernelContext& ctx, int64_t d, float* G,
                            int64_t ldg, float* h, float* c, int64_t ldh) {
  const RnnSpec& s = st.spec;
  const int64_t N = s.batch, H = s.hidden, T = s.seq, I = s.input;
  const OwnLstmDir& o = st.own_dirs[static_cast<size_t>(d)];
  for (int64_t r = 0; r < T * N; ++r) std::copy(o.bias.begin(), o.bias.end(), G + r * ldg);
  if (dnnl_status_t e = dnnl_sgemm('N', 'T', T * N, ldg, I, 1.0F, ctx.input(0).data<float>(), I,
                                   o.w.data(), I, 1.0F, G, ldg);
      e != dnnl_success) {
    return ctx.node->error("dnnl_sgemm of the input projection returned status {}",
                           static_cast<int>(e));
  }
  std::fill_n(h, N * ldh, 0.0F);
  std::fill_n(c, N * ldh, 0.0F);
  for (int64_t n = 0; n < N; ++n) {
    if (st.has_h0) {
      const float* h0 = ctx.input(5).data<float>() + (d * N + n) * H;
      std::copy(h0, h0 + H, h + n * ldh);
    }
    if (st.has_c0) {
      const float* c0 = ctx.input(6).data<float>() + (d * N + n) * H;
      std::copy(c0, c0 + H, c + n * ldh);
    }
  }
  return Status();
}

// An LSTM direction `d` (ONNX LSTM, default activations f = sigmoid, g = h = tanh, no
// peepholes): the input projection of every step at once, X [T*N, I] x W^T + Wb + Rb (one
// sgemm), then per step G = P_t + H_{t-1} R^T (an N x 4H x H sgemm), i, o, f = sigmoid,
// c~ = tanh (Highway loops, in place on G), C = f * C + i * c~, H = o * tanh(C). oneDNN 2.6's
// lstm_forward took 1.77 ms for T = 64, N = 1, H = 256 where this takes about 1.3 (ONNX
// Runtime 1.08). `work` holds T*N*4H + 2*N*H floats.
Status lstm_own(const RnnState& st, const KernelContext& ctx, int64_t d, float* work) {
  const RnnSpec& s = st.spec;
  const int64_t N = s.batch, H = s.hidden, T = s.seq, D = s.num_dirs, GH = 4 * H;
  const OwnLstmDir& o = st.own_dirs[static_cast<size_t>(d)];
  float* P = work;
  float* h = P + T * N * GH;
  float* c = h + N * H;
  FRAME_RETURN_IF_ERROR(start_lstm_direction(st, ctx, d, P, GH, h, c, H));
  float* Y = ctx.outputs.size() > 0 ? ctx.outputs[0].data<float>() : nullptr;
  const bool backward = d == 1 || s.reverse;
  const size_t h_n = static_cast<size_t>(H);
  for (int64_t k = 0; k < T; ++k) {
    const int64_t t = backward ? T - 1 - k : k;
    float* G = P + t * N * GH;
    if (dnnl_status_t e = dnnl_sgemm('N', 'T', N, GH, H, 1.0F, h, H, o.r.data(), H, 1.0F, G, GH);
        e != dnnl_success) {
      return ctx.node->error("dnnl_sgemm of the recurrence returned status {}",
                             static_cast<int>(e));
    }
    for (int64_t n = 0; n < N; ++n) {
      float* g = G + n * GH;  // i o f c~
      st.sigmoid(g, g, 3 * h_n, &st.sigmoid_functor);
      st.tanh(g + 3 * H, g + 3 * H, h_n, &st.tanh_functor);
      float* cn = c + n * H;
      float* hn = h + n * H;
      for (int64_t j = 0; j < H; ++j) cn[j] = g[2 * H + j] * cn[j] + g[j] * g[3 * H + j];
      st.tanh(cn, hn, h_n, &st.tanh_functor);
      for (int64_t j = 0; j < H; ++j) hn[j] *= g[H + j];
    }
    if (Y != nullptr) {
      for (int64_t n = 0; n < N; ++n) {
        std::copy(h + n * H, h + (n + 1) * H, Y + ((t * D + d) * N + n) * H);
      }
    }
  }
  if (ctx.outputs.size() > 1 && ctx.outputs[1].data<float>() != nullptr) {
    std::copy(h, h + N * H, ctx.outputs[1].data<float>() + d * N * H);
  }
  if (ctx.outputs.size() > 2 && ctx.outputs[2].data<float>() != nullptr) {
    std::copy(c, c + N * H, ctx.outputs[2].data<float>() + d * N * H);
  }
  return Status();
}

// An LSTM direction `d` of a batch of at most kPanelMaxBatch: the input projection of every
// step at once (one sgemm over W in panel row order), then the recurrence with the hidden units
// split over the node's threads in blocks of kPanelWidth, inside one parallel region for the
// whole sequence. Each thread computes the four gates of its units from the previous hidden
// state (panel_gemv over its slice of R, which stays in that core's cache from step to step),
// their cell and hidden states, and writes them into the next of two hidden-state buffers; one
// barrier per step (a TeamBarrier: libgomp's cost more than a third of a 2-thread step). The
// per-step sgemm of lstm_own runs the N x 4H x H product on one thread (oneDNN does not split a
// 1-row product), so a second core idled, and it read all of R (1 MiB at H = 256) from a cache that
// could not hold it. `work` holds T*N*4Hp + 3*N*Hp floats.
Status lstm_panels(const RnnState& st, const KernelContext& ctx, int64_t d, float* work) {
  const RnnSpec& s = st.spec;
  const int64_t N = s.batch, H = s.hidden, T = s.seq, D = s.num_dirs;
  const auto P = static_cast<int64_t>(kPanelWidth);
  const int64_t Hp = st.blocks * P, GHp = 4 * Hp;
  const OwnLstmDir& o = st.own_dirs[static_cast<size_t>(d)];
  float* G = work;
  float* hbuf = G + T * N * GHp;  // two [N, Hp] hidden states, read and written alternately
  float* c = hbuf + 2 * N * Hp;
  std::fill_n(hbuf + N * Hp, N * Hp, 0.0F);  // the second buffer's padding units stay 0
  FRAME_RETURN_IF_ERROR(start_lstm_direction(st, ctx, d, G, GHp, hbuf, c, Hp));
  float* Y = ctx.outputs.size() > 0 ? ctx.outputs[0].data<float>() : nullptr;
  const bool backward = d == 1 || s.reverse;
  // The steps of blocks [b0, b1); `barrier` runs after each step.
  const auto steps = [&](int64_t b0, int64_t b1, auto&& barrier) {
    const float* panels = o.r.data() + b0 * 4 * H * P;
    for (int64_t k = 0; k < T; ++k) {
      const int64_t t = backward ? T - 1 - k : k;
      const float* hprev = hbuf + (k % 2) * N * Hp;
      float* hnext = hbuf + ((k + 1) % 2) * N * Hp;
      for (int64_t n = 0; n < N; ++n) {
        float* g0 = G + (t * N + n) * GHp;
        st.vt->panel_gemv(panels, static_cast<size_t>((b1 - b0) * 4), static_cast<size_t>(H),
                          hprev + n * Hp, g0 + b0 * 4 * P);
        // One sigmoid over the slice's four gates: c~ = tanh(z) = 2 sigmoid(2z) - 1, its rows
        // of W, R and the bias doubled at prepare.
        st.sigmoid(g0 + b0 * 4 * P, g0 + b0 * 4 * P, static_cast<size_t>((b1 - b0) * 4 * P),
                   &st.sigmoid_functor);
        for (int64_t b = b0; b < b1; ++b) {
          const float* g = g0 + b * 4 * P;  // i o f c~ of kPanelWidth units
          float* cb = c + n * Hp + b * P;
          for (int64_t j = 0; j < P; ++j) {
            cb[j] = g[2 * P + j] * cb[j] + g[j] * (2.0F * g[3 * P + j] - 1.0F);
          }
        }
        float* hn = hnext + n * Hp + b0 * P;
        st.tanh(c + n * Hp + b0 * P, hn, static_cast<size_t>((b1 - b0) * P), &st.tanh_functor);
        for (int64_t b = b0; b < b1; ++b) {
          const float* o_gate = g0 + b * 4 * P + P;
          for (int64_t j = 0; j < P; ++j) hn[(b - b0) * P + j] *= o_gate[j];
        }
        if (Y != nullptr) {
          const int64_t j0 = b0 * P, j1 = std::min(b1 * P, H);
          std::copy(hnext + n * Hp + j0, hnext + n * Hp + j1, Y + ((t * D + d) * N + n) * H + j0);
        }
      }
      barrier();
    }
  };
  const auto nt = static_cast<int>(std::min<int64_t>(std::max(1, ctx.num_threads), st.blocks));
  if (nt == 1) {
    steps(0, st.blocks, [] {});
  } else {
    // Sized by the team OpenMP gives the region (possibly fewer threads than asked), once inside
    // it; the single's implied barrier publishes it to the team.
    std::optional<TeamBarrier> barrier;
#pragma omp parallel num_threads(nt)
    {
      const auto id = static_cast<int64_t>(omp_get_thread_num());
      const auto team = static_cast<int64_t>(omp_get_num_threads());
#pragma omp single
      barrier.emplace(static_cast<int>(team));
      TeamBarrier& b = *barrier;
      steps(st.blocks * id / team, st.blocks * (id + 1) / team, [&b] { b.wait(); });
    }
  }
  const float* hT = hbuf + (T % 2) * N * Hp;
  for (int64_t n = 0; n < N; ++n) {
    if (ctx.outputs.size() > 1 && ctx.outputs[1].data<float>() != nullptr) {
      std::copy(hT + n * Hp, hT + n * Hp + H, ctx.outputs[1].data<float>() + (d * N + n) * H);
    }
    if (ctx.outputs.size() > 2 && ctx.outputs[2].data<float>() != nullptr) {
      std::copy(c + n * Hp, c + n * Hp + H, ctx.outputs[2].data<float>() + (d * N + n) * H);
    }
  }
  return Status();
}

Status run(KernelContext& ctx) {
  const auto& st = *static_cast<const RnnState*>(ctx.state);
  if (st.own && st.panels) {
    const RnnSpec& s = st.spec;
    const int64_t Hp = st.blocks * static_cast<int64_t>(kPanelWidth);
    float* work =
        nn::staging_floats(static_cast<size_t>(s.seq * s.batch * 4 * Hp + 3 * s.batch * Hp));
    for (int64_t d = 0; d < s.num_dirs; ++d) FRAME_RETURN_IF_ERROR(lstm_panels(st, ctx, d, work));
    return Status();
  }
  if (st.own) {
    const RnnSpec& s = st.spec;
    const size_t n = static_cast<size_t>(s.seq * s.batch * 4 * s.hidden + 2 * s.batch * s.hidden);
    float* work = nn::staging_floats(n);
    for (int64_t d = 0; d < s.num_dirs; ++d) FRAME_RETURN_IF_ERROR(lstm_own(st, ctx, d, work));
    return Status();
  }
  const RnnSpec& s = st.spec;
  const int64_t N = s.batch, H = s.hidden, T = s.seq, D = s.num_dirs;
  const size_t outs = ctx.outputs.size();
  float* Y = ctx.output(0).data<float>();
  // Staging: [T, N, H] of one direction (bidirectional), then [N, H] of an unwanted Y_c.
  const bool stage_c = s.kind == RnnKind::kLstm && outs == 2;
  const int64_t n_stage = (D == 2 ? T * N * H : 0) + (stage_c ? N * H : 0);
  float* stage = n_stage > 0 ? nn::staging_floats(static_cast<size_t>(n_stage)) : nullptr;
  float* stage_cn = stage_c ? stage + (D == 2 ? T * N * H : 0) : nullptr;
  for (int64_t d = 0; d < D; ++d) {
    const DirPrim& p = st.dirs[static_cast<size_t>(d)];
    Status status;
    try {
      nn::ArgList<11> args;
      auto at = [&](size_t i, int64_t off) {
        return memory(st.state, engine(), const_cast<float*>(ctx.input(i).data<float>() + off));
      };
      auto out_at = [&](size_t o) {
        return memory(st.state, engine(), ctx.output(o).data<float>() + d * N * H);
      };
      args.add(DNNL_ARG_SRC_LAYER, wrap(st.x, ctx.input(0)));
      if (st.has_h0) args.add(DNNL_ARG_SRC_ITER, at(5, d * N * H));
      if (st.has_c0) args.add(DNNL_ARG_SRC_ITER_C, at(6, d * N * H));
      args.add(DNNL_ARG_WEIGHTS_LAYER, p.w);
      args.add(DNNL_ARG_WEIGHTS_ITER, p.r);
      if (p.peep) args.add(DNNL_ARG_WEIGHTS_PEEPHOLE, p.peep);
      args.add(DNNL_ARG_BIAS, p.bias);
      args.add(DNNL_ARG_DST_LAYER, memory(st.y, engine(), D == 2 ? stage : Y));
      if (outs > 1) args.add(DNNL_ARG_DST_ITER, out_at(1));
      if (outs > 2) args.add(DNNL_ARG_DST_ITER_C, out_at(2));
      if (stage_c) args.add(DNNL_ARG_DST_ITER_C, memory(st.state, engine(), stage_cn));
      status = nn::execute(*ctx.node, p.prim, p.scratch, args.span());
    } catch (const dnnl::error& e) {
      return dnnl_failure(*ctx.node, "recurrent memory", e);
    }
    FRAME_RETURN_IF_ERROR(status);
    if (D == 2) {
      // Y [T, D, N, H] <- this direction's [T, N, H].
      for (int64_t t = 0; t < T; ++t) {
        std::copy(stage + t * N * H, stage + (t + 1) * N * H, Y + (t * D + d) * N * H);
      }
    }
  }
  return Status();
}

}  // namespace

// GRU and RNN of a batch of at most kPanelMaxBatch rows on one thread: oneDNN 2.6's
// primitives open parallel regions per step, which cost more than a second core gives at these
// sizes (the benchmark's GRU layer, T = 64, N = 1, H = 256: 0.48 ms on 1 thread, 0.79 on 2).
// An LSTM without peepholes splits its recurrence itself (lstm_panels).
template <RnnKind kKind>
int recurrent_max_threads(const NodeContext& node) {
  if (runs_own_lstm(node, kKind)) return 0;
  const ir::TensorType& x = node.input_types[0];
  return x.shape.size() == 3 && x.shape[1] <= kPanelMaxBatch ? 1 : 0;
}

FRAME_REGISTER_KERNEL(lstm, "onednn", run)
    .dtypes(kF32)
    .accepts(accepts<RnnKind::kLstm>)
    .prepare(prepare_kind<RnnKind::kLstm>)
    .max_threads(recurrent_max_threads<RnnKind::kLstm>);
FRAME_REGISTER_KERNEL(gru, "onednn", run)
    .dtypes(kF32)
    .accepts(accepts<RnnKind::kGru>)
    .prepare(prepare_kind<RnnKind::kGru>)
    .max_threads(recurrent_max_threads<RnnKind::kGru>);
FRAME_REGISTER_KERNEL(rnn, "onednn", run)
    .dtypes(kF32)
    .accepts(accepts<RnnKind::kRnn>)
    .prepare(prepare_kind<RnnKind::kRnn>)
    .max_threads(recurrent_max_threads<RnnKind::kRnn>);

}  // namespace frame::backends::onednn
