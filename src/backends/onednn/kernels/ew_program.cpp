// Compiled elementwise programs (ew_program.h): prepare-time compilation of a fused body or a
// single elementwise node into tile steps (the runner is ew_program_run.cpp).

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "backends/onednn/kernels/ew_program_impl.h"
#include "backends/onednn/kernels/ew_vec.h"
#include "frame/ops/elementwise.h"
#include "frame/ops/op_registry.h"

namespace frame::backends::onednn {

namespace ew = ::frame::ops::ew;
using program_detail::InMode;
using program_detail::InputPlan;
using program_detail::kSlotBytes;
using program_detail::kStreamBytes;
using program_detail::Step;
using program_detail::StepKind;

namespace {

// ---- compilation ----

template <template <typename> class F>
std::shared_ptr<void> functor_of(const ops::NodeContext& c) {
  return std::make_shared<F<float>>(ew::make_functor<F, float>(c));
}

std::shared_ptr<void> unary_functor(int idx, const ops::NodeContext& c) {
  int i = 0;
#define FRAME_EW_FUNCTOR_CASE(name, F, types, traits, doc) \
  if (i++ == idx) return functor_of<ew::F>(c);
  FRAME_EW_UNARY_OPS(FRAME_EW_FUNCTOR_CASE)
  return nullptr;
}
std::shared_ptr<void> binary_functor(int idx, const ops::NodeContext& c) {
  int i = 0;
  FRAME_EW_BINARY_OPS(FRAME_EW_FUNCTOR_CASE)
  return nullptr;
}
std::shared_ptr<void> variadic_functor(int idx, const ops::NodeContext& c) {
  int i = 0;
  FRAME_EW_VARIADIC_OPS(FRAME_EW_FUNCTOR_CASE)
#undef FRAME_EW_FUNCTOR_CASE
  return nullptr;
}

// Relative per-element cost of a vector step (memory-bound ops ~1, transcendental ~8).
double vec_cost(std::string_view op) {
  static constexpr std::array<std::string_view, 26> kHeavy = {
      "exp",  "log",   "tanh",  "erf",   "sigmoid", "gelu", "softplus",   "mish", "elu",
      "selu", "celu",  "sin",   "cos",   "tan",     "asin", "acos",       "atan", "sinh",
      "cosh", "asinh", "acosh", "atanh", "div",     "sqrt", "reciprocal", "mean"};
  return std::find(kHeavy.begin(), kHeavy.end(), op) != kHeavy.end() ? 8.0 : 1.0;
}

class Builder {
 public:
  explicit Builder(Program& p) : p_(p) {}

  int32_t new_value(DTypeCode dt) {
    p_.dtype.push_back(dt);
    return static_cast<int32_t>(p_.dtype.size() - 1);
  }

  /// Element counts of the program inputs (values 0..n-1), known before the steps are built.
  void set_input_numels(std::vector<int64_t> numels) { input_numel_ = std::move(numels); }

  // Adds node `c` reading program values `ins` (-1 = absent) and writing `out`. `generic_ok`:
  // a node without a vector form may run its cpu kernel (fused bodies, whose contexts live as
  // long as the program); otherwise it is an error.
  Status add_node(const ops::NodeContext& c, const std::vector<int32_t>& ins, int32_t out,
                  bool generic_ok) {
    // Decided once here, at prepare: the tile loop never looks at a dtype (ARCH-042).
    bool all_f32 = kVecDTypes.contains(p_.dtype[static_cast<size_t>(out)]);
    for (int32_t v : ins) {
      if (v >= 0 && !kVecDTypes.contains(p_.dtype[static_cast<size_t>(v)])) all_f32 = false;
    }
    const VecTable& t = vec_table();
    if (all_f32 && !ins.empty() && ins[0] >= 0) {
      if (int i = unary_index(c.op); i >= 0 && t.unary[static_cast<size_t>(i)] != nullptr) {
        Step s;
        s.kind = StepKind::kUnary;
        s.unary = t.unary[static_cast<size_t>(i)];
        s.functor = unary_functor(i, c);
        s.in[0] = ins[0];
        s.out = out;
        return push(std::move(s), vec_cost(c.op));
      }
      if (int i = binary_index(c.op);
          i >= 0 && t.binary[static_cast<size_t>(i)] != nullptr && ins.size() == 2 && ins[1] >= 0) {
        Step s;
        s.kind = StepKind::kBinary;
        s.binary = t.binary[static_cast<size_t>(i)];
        s.functor = binary_functor(i, c);
        s.in = {ins[0], ins[1], -1};
        s.out = out;
        return push(std::move(s), vec_cost(c.op));
      }
      if (int i = variadic_index(c.op);
          i >= 0 && t.variadic[static_cast<size_t>(i)] != nullptr &&
          std::all_of(ins.begin(), ins.end(), [](int32_t v) { return v >= 0; })) {
        return add_variadic(c, ins, out, t, i);
      }
      if (c.op == "prelu" && ins.size() == 2 && ins[1] >= 0) {
        Step s;
        s.kind = StepKind::kBinary;
        s.binary = t.prelu;
        s.functor = std::make_shared<ew::PReluOp<float>>();
        s.in = {ins[0], ins[1], -1};
        s.out = out;
        return push(std::move(s), 1.0);
      }
      // Pow with a scalar exponent (the common x^2, x^3, x^0.5 of exported graphs); the loop is
      // picked per tile from the exponent's value.
      if (c.op == "pow" && ins.size() == 2 && scalar_input(ins[1])) {
        Step s;
        s.kind = StepKind::kPow;
        s.in = {ins[0], ins[1], -1};
        s.out = out;
        return push(std::move(s), 8.0);
      }
      if (c.op == "clip" && t.clip != nullptr) {
        Step s;
        s.kind = StepKind::kClip;
        s.unary = t.clip;
        for (size_t k = 0; k < ins.size() && k < 3; ++k) s.in[k] = ins[k];
        s.out = out;
        return push(std::move(s), 1.0);
      }
    }
    // Cast between float32 and float16 / bfloat16: a conversion loop (VecTable::convert); other
    // pairs run the cpu kernel.
    if (c.op == "cast" && ins.size() == 1 && ins[0] >= 0) {
      const auto from = static_cast<size_t>(p_.dtype[static_cast<size_t>(ins[0])]);
      const auto to = static_cast<size_t>(p_.dtype[static_cast<size_t>(out)]);
      if (VecConvertFn f = t.convert[from][to]; f != nullptr) {
        Step s;
        s.kind = StepKind::kConvert;
        s.convert = f;
        s.in[0] = ins[0];
        s.out = out;
        return push(std::move(s), 1.0);
      }
    }
    // Comparisons: fp32 operands, bool result.
    if (int i = binary_index(c.op); i >= 0 && t.compare[static_cast<size_t>(i)] != nullptr &&
                                    ins.size() == 2 && ins[0] >= 0 && ins[1] >= 0 &&
                                    kVecDTypes.contains(p_.dtype[static_cast<size_t>(ins[0])]) &&
                                    kVecDTypes.contains(p_.dtype[static_cast<size_t>(ins[1])]) &&
                                    kBoolDType.contains(p_.dtype[static_cast<size_t>(out)])) {
      Step s;
      s.kind = StepKind::kCompare;
      s.compare = t.compare[static_cast<size_t>(i)];
      s.in = {ins[0], ins[1], -1};
      s.out = out;
      return push(std::move(s), 1.0);
    }
    // where: a bool condition selecting between fp32 values.
    if (c.op == "where" && ins.size() == 3 && ins[0] >= 0 && ins[1] >= 0 && ins[2] >= 0 &&
        kBoolDType.contains(p_.dtype[static_cast<size_t>(ins[0])]) &&
        kVecDTypes.contains(p_.dtype[static_cast<size_t>(ins[1])]) &&
        kVecDTypes.contains(p_.dtype[static_cast<size_t>(ins[2])]) &&
        kVecDTypes.contains(p_.dtype[static_cast<size_t>(out)])) {
      Step s;
      s.kind = StepKind::kWhere;
      s.in = {ins[0], ins[1], ins[2]};
      s.out = out;
      return push(std::move(s), 1.0);
    }
    if (!generic_ok) {
      return c.error("no vector form for op '{}' with these dtypes (onednn needs fp32)", c.op);
    }
    Step s;
    s.kind = StepKind::kGeneric;
    s.kernel = ops::KernelRegistry::global().find(c.op, "cpu");
    if (s.kernel == nullptr) return c.error("body op '{}' has no cpu kernel", c.op);
    s.ctx = c;
    FRAME_RETURN_IF_ERROR(s.kernel->supports(s.ctx));
    if (s.kernel->prepare != nullptr) {
      FRAME_ASSIGN_OR_RETURN(s.state, s.kernel->prepare(s.ctx));
    }
    s.inputs = ins;
    s.out = out;
    return push(std::move(s), 30.0);
  }

 private:
  // sum/mean/max/min fold left to right like the cpu kernel: t = f(in0, in1), t = f(t, in2),
  // ...; only the last step writes `out`, so an output aliasing an input stays correct.
  Status add_variadic(const ops::NodeContext& c, const std::vector<int32_t>& ins, int32_t out,
                      const VecTable& t, int i) {
    const bool mean = c.op == "mean";
    if (ins.size() == 1) {
      Step s;
      s.kind = StepKind::kCopy;
      s.in[0] = ins[0];
      s.out = out;
      return push(std::move(s), 1.0);
    }
    const std::shared_ptr<void> f = variadic_functor(i, c);
    int32_t acc = ins[0];
    for (size_t k = 1; k < ins.size(); ++k) {
      const bool last = k + 1 == ins.size() && !mean;
      const int32_t dst = last ? out : (acc == ins[0] ? new_value(DTypeCode::kFloat32) : acc);
      Step s;
      s.kind = StepKind::kBinary;
      s.binary = t.variadic[static_cast<size_t>(i)];
      s.functor = f;
      s.in = {acc, ins[k], -1};
      s.out = dst;
      FRAME_RETURN_IF_ERROR(push(std::move(s), 1.0));
      acc = dst;
    }
    if (mean) {
      auto args = std::make_shared<MeanFinishArgs>();
      args->count = static_cast<int64_t>(ins.size());
      Step s;
      s.kind = StepKind::kUnary;
      s.unary = t.mean_finish;
      s.functor = std::move(args);
      s.in[0] = acc;
      s.out = out;
      FRAME_RETURN_IF_ERROR(push(std::move(s), 8.0));
    }
    return Status();
  }

  bool scalar_input(int32_t v) const {
    return v >= 0 && static_cast<size_t>(v) < input_numel_.size() &&
           input_numel_[static_cast<size_t>(v)] == 1;
  }

  Status push(Step s, double cost) {
    p_.cost_per_elem += cost;
    p_.steps.push_back(std::move(s));
    return Status();
  }

  Program& p_;
  std::vector<int64_t> input_numel_;
};

std::vector<int64_t> numels_of(const std::vector<ir::TensorType>& types) {
  std::vector<int64_t> n;
  for (const ir::TensorType& t : types) n.push_back(numel_of(t.shape));
  return n;
}

// For an input of shape `s` broadcast to `out`: where its dims other than 1 are one run of the
// output's (aligned at the right) followed by dims of 1, the product of the output's dims after
// that run (each input element then covers that many consecutive outputs); else 0.
int64_t repeat_inner(const Shape& s, const Shape& out) {
  if (s.size() > out.size()) return 0;
  const size_t lead = out.size() - s.size();
  size_t first = s.size(), last = 0;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 1) continue;
    first = std::min(first, d);
    last = d;
  }
  if (first == s.size()) return 0;
  int64_t inner = 1;
  for (size_t d = first; d < s.size(); ++d) {
    if (d <= last && s[d] != out[lead + d]) return 0;
    if (d > last) inner *= out[lead + d];
  }
  return inner;
}

// Input plans, scratch slots and layout, once the steps exist.
Status finish(Program& p, const std::vector<ir::TensorType>& in_types, const ops::NodeContext& c) {
  if (p.out_shape.size() > kMaxProgramRank) {
    return unimplemented("node '{}' ({}): output rank {} exceeds {}", c.node_name, c.op,
                         p.out_shape.size(), kMaxProgramRank);
  }
  p.total = numel_of(p.out_shape);
  size_t off = 0;
  auto reserve = [&](size_t bytes) {
    const size_t at = off;
    off += (bytes + 63) / 64 * 64;
    return at;
  };
  p.inputs.resize(p.num_inputs);
  for (size_t i = 0; i < p.num_inputs; ++i) {
    InputPlan& ip = p.inputs[i];
    const Shape& s = in_types[i].shape;
    ip.dtype = in_types[i].dtype;
    ip.elem = dtype_size(ip.dtype);
    ip.numel = numel_of(s);
    const auto tile_bytes = static_cast<size_t>(kTile) * ip.elem;
    if (ip.numel == p.total) {
      ip.mode = InMode::kSame;
      continue;
    }
    if (ip.numel == 1) {
      ip.mode = InMode::kScalar;
      ip.buf_bytes = tile_bytes;
    } else {
      // Trailing-dim broadcast: leading dims 1, the rest equal to the output's last dims.
      size_t lead = 0;
      while (lead < s.size() && s[lead] == 1) ++lead;
      const size_t k = s.size() - lead;
      const bool periodic = k <= p.out_shape.size() &&
                            std::equal(s.begin() + static_cast<std::ptrdiff_t>(lead), s.end(),
                                       p.out_shape.end() - static_cast<std::ptrdiff_t>(k));
      if (periodic) {
        ip.mode = InMode::kPeriodic;
        ip.period = ip.numel;
        // A short row is replicated once per run to kTile + period elements, so every tile is
        // a contiguous window of it; a long row is read in place (copied only across a wrap).
        ip.buf_bytes =
            ip.period < kTile ? static_cast<size_t>(kTile + ip.period) * ip.elem : tile_bytes;
      } else if (const int64_t inner = repeat_inner(s, p.out_shape); inner > 1) {
        ip.mode = InMode::kRepeat;
        ip.inner = inner;
        ip.buf_bytes = tile_bytes;
      } else {
        ip.mode = InMode::kGather;
        ip.buf_bytes = tile_bytes;
        ip.strides.assign(p.out_shape.size(), 0);
        int64_t stride = 1;
        for (size_t q = 0; q < s.size(); ++q) {
          const size_t d = s.size() - 1 - q;
          ip.strides[p.out_shape.size() - 1 - q] = s[d] == 1 ? 0 : stride;
          stride *= s[d];
        }
      }
    }
    ip.buf_offset = reserve(ip.buf_bytes);
  }
  // Scratch slots by linear scan: a value's slot is freed after its last reader.
  const size_t nv = p.dtype.size();
  std::vector<int> last_use(nv, -1);
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& s = p.steps[k];
    auto mark = [&](int32_t v) {
      if (v >= 0) last_use[static_cast<size_t>(v)] = static_cast<int>(k);
    };
    for (int32_t v : s.in) mark(v);
    for (int32_t v : s.inputs) mark(v);
  }
  p.slot.assign(nv, -1);
  std::vector<bool> live(nv, false);
  std::vector<int32_t> free_slots;
  int32_t num_slots = 0;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const int32_t o = p.steps[k].out;
    const auto ou = static_cast<size_t>(o);
    if (o != p.output && ou >= p.num_inputs && p.slot[ou] < 0) {
      if (free_slots.empty()) {
        p.slot[ou] = num_slots++;
      } else {
        p.slot[ou] = free_slots.back();
        free_slots.pop_back();
      }
      live[ou] = true;
    }
    for (size_t v = p.num_inputs; v < nv; ++v) {
      if (!live[v] || static_cast<int32_t>(v) == o || last_use[v] > static_cast<int>(k)) continue;
      // A fold's accumulator is written again later and keeps its slot.
      bool written_later = false;
      for (size_t j = k + 1; j < p.steps.size(); ++j) {
        written_later |= p.steps[j].out == static_cast<int32_t>(v);
      }
      if (!written_later) {
        free_slots.push_back(p.slot[v]);
        live[v] = false;
      }
    }
  }
  const auto ou = static_cast<size_t>(p.output);
  if (kVecDTypes.contains(p.dtype[ou]) && p.total * 4 >= kStreamBytes &&
      p.steps.back().kind != StepKind::kGeneric) {
    p.stream_copy = vec_table().stream_copy;
    p.slot[ou] = num_slots++;
  }
  p.slots_offset = off;
  // The streamed output's slot is the last one, with 4 KiB of room to be placed per run.
  p.scratch_bytes = off + static_cast<size_t>(num_slots) * kSlotBytes + 4096;
  return Status();
}

}  // namespace

Result<std::shared_ptr<const Program>> compile_body(const ops::NodeContext& ctx) {
  const auto* body = ctx.attr<std::shared_ptr<const ir::Graph>>("body");
  if (body == nullptr || *body == nullptr) return ctx.error("attribute 'body' is missing");
  auto p = std::make_shared<Program>();
  p->body = *body;
  const ir::Graph& g = *p->body;
  if (g.outputs().size() != 1 || g.inputs().size() != ctx.num_inputs()) {
    return ctx.error("body has {} inputs and {} outputs, expected {} and 1", g.inputs().size(),
                     g.outputs().size(), ctx.num_inputs());
  }
  const ir::ValueId body_out = g.outputs()[0];
  if (!g.value(body_out).type) return ctx.error("body output has no type");
  p->out_shape = g.value(body_out).type->shape;
  Builder b(*p);
  std::vector<int32_t> map(g.num_values(), -1);  // body value -> program value
  std::vector<ir::TensorType> in_types;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::ValueId v = g.inputs()[i];
    const ir::TensorType t = g.value(v).type ? *g.value(v).type : ctx.input_types[i];
    map[static_cast<size_t>(v)] = b.new_value(t.dtype);
    in_types.push_back(t);
  }
  p->num_inputs = in_types.size();
  p->table = &vec_table();
  b.set_input_numels(numels_of(in_types));
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
  // The output value is created first among the non-inputs so it is never a scratch slot.
  p->output = b.new_value(g.value(body_out).type->dtype);
  if (map[static_cast<size_t>(body_out)] >= 0) {
    return ctx.error("body output is a body input; nothing to compute");
  }
  map[static_cast<size_t>(body_out)] = p->output;
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
    if (schema == nullptr || !schema->has_trait(ops::OpTrait::kElementwise) ||
        n.outputs.size() != 1 || !g.value(n.outputs[0]).type ||
        numel_of(g.value(n.outputs[0]).type->shape) != numel_of(p->out_shape)) {
      return ctx.error("body node '{}' ({}) is not an elementwise node of the output's shape",
                       n.name, n.op);
    }
    std::vector<int32_t> ins;
    for (ir::ValueId v : n.inputs) {
      ins.push_back(v == ir::kNoValue ? -1 : map[static_cast<size_t>(v)]);
      if (v != ir::kNoValue && ins.back() < 0) {
        return ctx.error("body node '{}' reads a value defined later", n.name);
      }
    }
    const ir::ValueId o = n.outputs[0];
    if (map[static_cast<size_t>(o)] < 0) {
      map[static_cast<size_t>(o)] = b.new_value(g.value(o).type->dtype);
    }
    FRAME_RETURN_IF_ERROR(b.add_node(ops::make_node_context(g, n, schema), ins,
                                     map[static_cast<size_t>(o)], /*generic_ok=*/true));
  }
  if (p->steps.empty() || p->steps.back().out != p->output) {
    return ctx.error("body output is not written by the last body node");
  }
  FRAME_RETURN_IF_ERROR(finish(*p, in_types, ctx));
  return std::shared_ptr<const Program>(std::move(p));
}

Result<std::shared_ptr<const Program>> compile_single(const ops::NodeContext& ctx) {
  auto p = std::make_shared<Program>();
  Builder b(*p);
  std::vector<int32_t> ins;
  std::vector<ir::TensorType> in_types;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const bool present = i >= ctx.input_present.size() || ctx.input_present[i];
    if (!present) {
      ins.push_back(-1);
      continue;
    }
    ins.push_back(b.new_value(ctx.input_types[i].dtype));
    in_types.push_back(ctx.input_types[i]);
  }
  if (in_types.empty()) return ctx.error("no inputs");
  // Absent optional inputs are not program inputs; renumber the present ones densely.
  p->num_inputs = in_types.size();
  p->table = &vec_table();
  b.set_input_numels(numels_of(in_types));
  // Output type from the op's own shape inference (clip's bounds and prelu's slope do not widen
  // it, comparisons give bool, where takes its values' dtype).
  if (ctx.schema == nullptr) return ctx.error("no schema");
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out_types, ctx.schema->infer(ctx));
  if (out_types.size() != 1) return ctx.error("expected one output, got {}", out_types.size());
  p->out_shape = out_types[0].shape;
  p->output = b.new_value(out_types[0].dtype);
  FRAME_RETURN_IF_ERROR(b.add_node(ctx, ins, p->output, /*generic_ok=*/false));
  FRAME_RETURN_IF_ERROR(finish(*p, in_types, ctx));
  return std::shared_ptr<const Program>(std::move(p));
}

}  // namespace frame::backends::onednn
