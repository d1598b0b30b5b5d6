/// \file
/// Schemas of the recurrent ops lstm, gru and rnn (ONNX LSTM-14, GRU-14, RNN-14, sections
/// "LSTM", "GRU", "RNN" of the operator spec). Each runs the whole sequence, every direction,
/// in one node; sequence_lens is a plain value input (it never changes an output shape).

#include "ops/schemas/recurrent.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "frame/ops/op_schema.h"

namespace frame::ops {

namespace {

using ir::AttrType;
using ir::TensorType;

constexpr DTypeSet kI32{DTypeCode::kInt32};

struct ActName {
  const char* name;
  RnnActKind kind;
  int params;  // 0: none, 1: alpha, 2: alpha and beta
  float alpha, beta;
};

// Defaults follow the ONNX ops of the same name (LeakyRelu 0.01, ThresholdedRelu 1.0,
// HardSigmoid 0.2 / 0.5, Elu 1.0); Affine and ScaledTanh default to the identity scale.
constexpr ActName kActs[] = {
    {"relu", RnnActKind::kRelu, 0, 0.0F, 0.0F},
    {"tanh", RnnActKind::kTanh, 0, 0.0F, 0.0F},
    {"sigmoid", RnnActKind::kSigmoid, 0, 0.0F, 0.0F},
    {"affine", RnnActKind::kAffine, 2, 1.0F, 0.0F},
    {"leakyrelu", RnnActKind::kLeakyRelu, 1, 0.01F, 0.0F},
    {"thresholdedrelu", RnnActKind::kThresholdedRelu, 1, 1.0F, 0.0F},
    {"scaledtanh", RnnActKind::kScaledTanh, 2, 1.0F, 1.0F},
    {"hardsigmoid", RnnActKind::kHardSigmoid, 2, 0.2F, 0.5F},
    {"elu", RnnActKind::kElu, 1, 1.0F, 0.0F},
    {"softsign", RnnActKind::kSoftsign, 0, 0.0F, 0.0F},
    {"softplus", RnnActKind::kSoftplus, 0, 0.0F, 0.0F},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

Status parse_activations(const NodeContext& ctx, RnnSpec& s) {
  static constexpr const char* kDefaults[3][3] = {
      {"Sigmoid", "Tanh", "Tanh"}, {"Sigmoid", "Tanh", ""}, {"Tanh", "", ""}};
  const auto k = static_cast<size_t>(s.kind);
  std::vector<std::string> names;
  if (const auto* a = ctx.attr<std::vector<std::string>>("activations")) {
    names = *a;
  } else {
    for (int64_t d = 0; d < s.num_dirs; ++d) {
      for (int64_t j = 0; j < s.acts_per_dir; ++j) names.emplace_back(kDefaults[k][j]);
    }
  }
  const auto want = static_cast<size_t>(s.acts_per_dir * s.num_dirs);
  if (names.size() != want) {
    return ctx.error("attribute 'activations' expects {} names ({} per direction), got {}", want,
                     s.acts_per_dir, names.size());
  }
  const auto* alphas = ctx.attr<std::vector<double>>("activation_alpha");
  const auto* betas = ctx.attr<std::vector<double>>("activation_beta");
  size_t ai = 0, bi = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string n = lower(names[i]);
    const ActName* found = nullptr;
    for (const ActName& a : kActs) {
      if (n == a.name) found = &a;
    }
    if (found == nullptr) {
      return ctx.error("attribute 'activations': unknown activation '{}'", names[i]);
    }
    RnnAct act{found->kind, found->alpha, found->beta};
    // ONNX: the alpha/beta lists are consumed in the order of the activations that use them.
    if (found->params >= 1 && alphas != nullptr && ai < alphas->size()) {
      act.alpha = static_cast<float>((*alphas)[ai++]);
    }
    if (found->params >= 2 && betas != nullptr && bi < betas->size()) {
      act.beta = static_cast<float>((*betas)[bi++]);
    }
    s.acts[i / static_cast<size_t>(s.acts_per_dir)][i % static_cast<size_t>(s.acts_per_dir)] = act;
  }
  return Status();
}

Status expect_shape(const NodeContext& ctx, size_t i, const char* name, const Shape& want) {
  if (!ctx.has_input(i)) return Status();
  const Shape& got = ctx.input_types[i].shape;
  if (got != want) {
    return ctx.error("input {} ({}) expects shape {}, got {}", i, name, shape_to_string(want),
                     shape_to_string(got));
  }
  return Status();
}

}  // namespace

Result<RnnSpec> parse_rnn(const NodeContext& ctx, RnnKind kind) {
  RnnSpec s;
  s.kind = kind;
  s.gates = kind == RnnKind::kLstm ? 4 : kind == RnnKind::kGru ? 3 : 1;
  s.acts_per_dir = kind == RnnKind::kLstm ? 3 : kind == RnnKind::kGru ? 2 : 1;
  const std::string dir = ctx.attr_or<std::string>("direction", "forward");
  if (dir == "bidirectional") {
    s.num_dirs = 2;
  } else if (dir == "reverse") {
    s.reverse = true;
  } else if (dir != "forward") {
    return ctx.error("attribute 'direction' must be forward, reverse or bidirectional, got '{}'",
                     dir);
  }
  s.layout = ctx.attr_or<int64_t>("layout", 0);
  if (s.layout != 0 && s.layout != 1) {
    return ctx.error("attribute 'layout' must be 0 or 1, got {}", s.layout);
  }
  const Shape& x = ctx.input_types[0].shape;
  const Shape& w = ctx.input_types[1].shape;
  const Shape& r = ctx.input_types[2].shape;
  if (x.size() != 3) return ctx.error("input 0 (X) expects rank 3, got {}", shape_to_string(x));
  if (w.size() != 3) return ctx.error("input 1 (W) expects rank 3, got {}", shape_to_string(w));
  if (r.size() != 3) return ctx.error("input 2 (R) expects rank 3, got {}", shape_to_string(r));
  s.seq = s.layout == 0 ? x[0] : x[1];
  s.batch = s.layout == 0 ? x[1] : x[0];
  s.input = x[2];
  s.hidden = r[2];
  if (const int64_t* h = ctx.attr<int64_t>("hidden_size")) {
    if (*h != s.hidden) {
      return ctx.error("attribute 'hidden_size' is {} but input 2 (R) has shape {}", *h,
                       shape_to_string(r));
    }
  }
  if (s.hidden <= 0) return ctx.error("hidden size must be positive, got {}", s.hidden);
  const int64_t gh = s.gates * s.hidden;
  FRAME_RETURN_IF_ERROR(expect_shape(ctx, 1, "W", {s.num_dirs, gh, s.input}));
  FRAME_RETURN_IF_ERROR(expect_shape(ctx, 2, "R", {s.num_dirs, gh, s.hidden}));
  FRAME_RETURN_IF_ERROR(expect_shape(ctx, 3, "B", {s.num_dirs, 2 * gh}));
  FRAME_RETURN_IF_ERROR(expect_shape(ctx, 4, "sequence_lens", {s.batch}));
  const Shape state =
      s.layout == 0 ? Shape{s.num_dirs, s.batch, s.hidden} : Shape{s.batch, s.num_dirs, s.hidden};
  FRAME_RETURN_IF_ERROR(expect_shape(ctx, 5, "initial_h", state));
  if (kind == RnnKind::kLstm) {
    FRAME_RETURN_IF_ERROR(expect_shape(ctx, 6, "initial_c", state));
    FRAME_RETURN_IF_ERROR(expect_shape(ctx, 7, "P", {s.num_dirs, 3 * s.hidden}));
    s.input_forget = ctx.attr_or<int64_t>("input_forget", 0) != 0;
  }
  if (kind == RnnKind::kGru) {
    s.linear_before_reset = ctx.attr_or<int64_t>("linear_before_reset", 0) != 0;
  }
  if (const double* c = ctx.attr<double>("clip")) {
    if (!(*c > 0.0)) return ctx.error("attribute 'clip' must be positive, got {}", *c);
    s.has_clip = true;
    s.clip = static_cast<float>(*c);
  }
  FRAME_RETURN_IF_ERROR(parse_activations(ctx, s));
  return s;
}

namespace {

Result<std::vector<TensorType>> infer_rnn(const NodeContext& ctx, RnnKind kind) {
  FRAME_ASSIGN_OR_RETURN(RnnSpec s, parse_rnn(ctx, kind));
  const DTypeCode d = ctx.input_types[0].dtype;
  std::vector<TensorType> out;
  out.push_back(TensorType{d, s.layout == 0 ? Shape{s.seq, s.num_dirs, s.batch, s.hidden}
                                            : Shape{s.batch, s.seq, s.num_dirs, s.hidden}});
  const Shape state =
      s.layout == 0 ? Shape{s.num_dirs, s.batch, s.hidden} : Shape{s.batch, s.num_dirs, s.hidden};
  while (out.size() < ctx.num_outputs) out.push_back(TensorType{d, state});
  return out;
}

Result<std::vector<TensorType>> infer_lstm(const NodeContext& ctx) {
  return infer_rnn(ctx, RnnKind::kLstm);
}
Result<std::vector<TensorType>> infer_gru(const NodeContext& ctx) {
  return infer_rnn(ctx, RnnKind::kGru);
}
Result<std::vector<TensorType>> infer_simple_rnn(const NodeContext& ctx) {
  return infer_rnn(ctx, RnnKind::kRnn);
}

constexpr const char* kActivationsDoc =
    "activation names per direction (forward first): Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
    "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus (case-insensitive)";
constexpr const char* kAlphaDoc =
    "alpha of the activations that take one, consumed in the order of those activations";
constexpr const char* kBetaDoc =
    "beta of the activations that take one, consumed in the order of those activations";
constexpr const char* kSeqDoc =
    "int32 [batch] steps per sequence (<= seq_length); outputs past a sequence's end are 0 and "
    "its Y_h is the state after its last step. A run-time value: shapes do not depend on it";

// X, W, R and the optional B of lstm, gru and rnn, each op documenting its gate layout.
auto weight_inputs(const char* w_doc, const char* r_doc, const char* b_doc) {
  return [=](OpSchemaBuilder& b) {
    b.input("X", "input sequence", kFloatDTypes, "T")
        .input("W", w_doc, kFloatDTypes, "T")
        .input("R", r_doc, kFloatDTypes, "T")
        .optional_input("B", b_doc, kFloatDTypes, "T");
  };
}

// The inputs after B that lstm, gru and rnn share: sequence_lens, initial_h.
OpSchemaBuilder& state_inputs(OpSchemaBuilder& b) {
  return b.optional_input("sequence_lens", kSeqDoc, kI32)
      .optional_input("initial_h", "initial hidden state (0 when absent)", kFloatDTypes, "T");
}

// Y and Y_h, shared by lstm, gru and rnn (lstm adds Y_c).
OpSchemaBuilder& hidden_outputs(OpSchemaBuilder& b) {
  return b.output("Y", "every step's hidden state", kFloatDTypes, "T")
      .optional_output("Y_h", "last hidden state", kFloatDTypes, "T");
}

// The attributes every recurrent op has: activations, their alpha/beta, clip, direction,
// hidden_size.
OpSchemaBuilder& recurrent_attrs(OpSchemaBuilder& b) {
  return b.optional_attr("activations", AttrType::kStrings, kActivationsDoc)
      .optional_attr("activation_alpha", AttrType::kFloats, kAlphaDoc)
      .optional_attr("activation_beta", AttrType::kFloats, kBetaDoc)
      .optional_attr("clip", AttrType::kFloat, "pre-activations clipped to [-clip, clip]")
      .attr("direction", AttrType::kString, "forward, reverse or bidirectional",
            std::string("forward"))
      .optional_attr("hidden_size", AttrType::kInt, "H; must equal R's last dim");
}

}  // namespace

FRAME_REGISTER_OP(lstm)
    .doc(
        "Whole-sequence LSTM (ONNX LSTM-14): i = f(Xt Wi^T + H Ri^T + Pi*C + Wbi + Rbi), "
        "o = f(Xt Wo^T + H Ro^T + Po*Ct + Wbo + Rbo), fg = f(Xt Wf^T + H Rf^T + Pf*C + Wbf + "
        "Rbf), c = g(Xt Wc^T + H Rc^T + Wbc + Rbc), Ct = fg*C + i*c, Ht = o*h(Ct); gate order "
        "i, o, f, c in W/R/B, i, o, f in P. clip bounds every pre-activation; input_forget=1 "
        "uses fg = 1 - i. Layout 0: X [seq, batch, input], Y [seq, D, batch, H], Y_h/Y_c "
        "[D, batch, H]; layout 1: X [batch, seq, input], Y [batch, seq, D, H], Y_h/Y_c "
        "[batch, D, H]; D = 2 for bidirectional (forward in slot 0).")
    .with(weight_inputs("[D, 4H, input] input weights (gates i, o, f, c)",
                        "[D, 4H, H] recurrence weights",
                        "[D, 8H] input biases then recurrence biases (0 when absent)"))
    .with(state_inputs)
    .optional_input("initial_c", "initial cell state (0 when absent)", kFloatDTypes, "T")
    .optional_input("P", "[D, 3H] peephole weights (gates i, o, f; 0 when absent)", kFloatDTypes,
                    "T")
    .with(hidden_outputs)
    .optional_output("Y_c", "last cell state", kFloatDTypes, "T")
    .with(recurrent_attrs)
    .attr("input_forget", AttrType::kInt, "1: forget gate = 1 - input gate", int64_t{0})
    .attr("layout", AttrType::kInt, "0: sequence-major, 1: batch-major", int64_t{0})
    .shape_infer(infer_lstm);

FRAME_REGISTER_OP(gru)
    .doc(
        "Whole-sequence GRU (ONNX GRU-14): z = f(Xt Wz^T + H Rz^T + Wbz + Rbz), r = f(Xt Wr^T "
        "+ H Rr^T + Wbr + Rbr), h = g(Xt Wh^T + (r*H) Rh^T + Rbh + Wbh) or, with "
        "linear_before_reset=1, h = g(Xt Wh^T + r*(H Rh^T + Rbh) + Wbh); Ht = (1-z)*h + z*H. "
        "Gate order z, r, h. Shapes and layouts as lstm (no Y_c).")
    .with(weight_inputs("[D, 3H, input] input weights (gates z, r, h)",
                        "[D, 3H, H] recurrence weights",
                        "[D, 6H] input biases then recurrence biases (0 when absent)"))
    .with(state_inputs)
    .with(hidden_outputs)
    .with(recurrent_attrs)
    .attr("layout", AttrType::kInt, "0: sequence-major, 1: batch-major", int64_t{0})
    .attr("linear_before_reset", AttrType::kInt,
          "1: apply the reset gate after the recurrence product", int64_t{0})
    .shape_infer(infer_gru);

FRAME_REGISTER_OP(rnn)
    .doc(
        "Whole-sequence simple RNN (ONNX RNN-14): Ht = f(Xt Wi^T + H Ri^T + Wbi + Rbi), f = Tanh "
        "by default. Shapes and layouts as lstm (no Y_c).")
    .with(weight_inputs("[D, H, input] input weights", "[D, H, H] recurrence weights",
                        "[D, 2H] input bias then recurrence bias (0 when absent)"))
    .with(state_inputs)
    .with(hidden_outputs)
    .with(recurrent_attrs)
    .attr("layout", AttrType::kInt, "0: sequence-major, 1: batch-major", int64_t{0})
    .shape_infer(infer_simple_rnn);

}  // namespace frame::ops
