#pragma once
/// \file
/// Parsed attributes and dims of the recurrent ops lstm, gru and rnn (ONNX LSTM-14, GRU-14,
/// RNN-14): shared by their shape functions and the kernels, so both read a node the same way.

#include <array>
#include <cstdint>
#include <vector>

#include "frame/core/status.h"
#include "frame/ops/op_schema.h"

namespace frame::ops {

/// Which recurrence: gate counts 4 (LSTM, gates i o f c), 3 (GRU, gates z r h), 1 (RNN).
enum class RnnKind : uint8_t { kLstm, kGru, kRnn };

/// An activation function of the ONNX recurrent ops (ONNX LSTM "activations"), applied to a
/// whole gate vector at once by the kernels (one branch per vector, not per element).
enum class RnnActKind : uint8_t {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,           ///< alpha * x + beta
  kLeakyRelu,        ///< x >= 0 ? x : alpha * x
  kThresholdedRelu,  ///< x > alpha ? x : 0
  kScaledTanh,       ///< alpha * tanh(beta * x)
  kHardSigmoid,      ///< max(0, min(1, alpha * x + beta))
  kElu,              ///< x >= 0 ? x : alpha * (exp(x) - 1)
  kSoftsign,         ///< x / (1 + |x|)
  kSoftplus,         ///< log(1 + exp(x))
};

/// One activation with its parameters (defaults of the ONNX op of the same name when the
/// node's activation_alpha / activation_beta lists run out).
struct RnnAct {
  RnnActKind kind = RnnActKind::kSigmoid;
  float alpha = 0.0F;
  float beta = 0.0F;
};

/// Everything the shape function and the kernels need of one recurrent node.
struct RnnSpec {
  RnnKind kind = RnnKind::kLstm;
  int64_t gates = 4;      ///< G: 4, 3 or 1
  int64_t num_dirs = 1;   ///< 2 for direction "bidirectional"
  bool reverse = false;   ///< direction "reverse" (only with num_dirs == 1)
  int64_t seq = 0;        ///< sequence length
  int64_t batch = 0;      ///< batch size
  int64_t input = 0;      ///< input size
  int64_t hidden = 0;     ///< hidden size
  int64_t layout = 0;     ///< 0: X [seq, batch, input]; 1: X [batch, seq, input]
  bool has_clip = false;  ///< clip pre-activations to [-clip, clip]
  float clip = 0.0F;
  bool input_forget = false;         ///< LSTM: f = 1 - i
  bool linear_before_reset = false;  ///< GRU: r * (H R_h^T + Rb_h) instead of (r * H) R_h^T
  /// Per direction: LSTM f, g, h; GRU f, g; RNN f (first `acts_per_dir` entries used).
  std::array<std::array<RnnAct, 3>, 2> acts{};
  int64_t acts_per_dir = 3;
};

/// Parses and checks a lstm / gru / rnn node: input shapes (X rank 3, W [D, G*H, I], R
/// [D, G*H, H], B [D, 2*G*H], sequence_lens [batch], initial_h / initial_c [D, batch, H] or
/// [batch, D, H] for layout 1, P [D, 3*H]), attributes (direction, hidden_size, layout, clip,
/// activations with activation_alpha / activation_beta consumed in order by the activations
/// that take parameters, input_forget, linear_before_reset). Errors name the node, the input
/// or attribute and the expected vs actual value. Source: ONNX LSTM / GRU / RNN (opset 14).
Result<RnnSpec> parse_rnn(const NodeContext& ctx, RnnKind kind);

}  // namespace frame::ops
