// Compiled elementwise programs (ew_program.h): prepare-time compilation of a fused body or a
// single elementwise node into tile steps, and the tiled, OpenMP-parallel runner.

#include "backends/onednn/kernels/ew_program.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "backends/onednn/kernels/ew_vec.h"
#include "frame/ops/elementwise.h"
#include "frame/ops/op_registry.h"

namespace frame::backends::onednn {

namespace ew = ::frame::ops::ew;

namespace {

constexpr size_t kMaxElemBytes = 8;
// Slots are spaced by a non-multiple of 4 KiB so a step reading one slot and writing another
// at the same offset does not hit 4K aliasing.
constexpr size_t kSlotBytes = static_cast<size_t>(kTile) * kMaxElemBytes + 320;
// Work units (about one cheap vector op on one element) below which a program runs on the
// calling thread, and per extra thread: a thread's share must outweigh its wake-up.
constexpr double kGrainUnits = 1 << 16;
// fp32 outputs from this size on are written with non-temporal stores (half the 32 MiB L3 of
// the machines we measure on): they cannot stay cached for the next node anyway, and streaming
// saves the read-for-ownership of every output line.
constexpr int64_t kStreamBytes = int64_t{16} << 20;

enum class StepKind : uint8_t { kUnary, kBinary, kCompare, kClip, kPow, kWhere, kCopy, kGeneric };

struct Step {
  StepKind kind = StepKind::kCopy;
  VecUnaryFn unary = nullptr;
  VecBinaryFn binary = nullptr;
  VecCompareFn compare = nullptr;
  std::shared_ptr<void> functor;  // ew::F<float> or MeanFinishArgs, read by the loop
  std::array<int32_t, 3> in{-1, -1, -1};
  int32_t out = -1;
  // kGeneric: the op's cpu kernel on tile views.
  const ops::KernelDef* kernel = nullptr;
  ops::NodeContext ctx;
  std::shared_ptr<void> state;
  std::vector<int32_t> inputs;
};

enum class InMode : uint8_t { kSame, kScalar, kPeriodic, kGather };

// How one program input is read for a tile.
struct InputPlan {
  InMode mode = InMode::kSame;
  DTypeCode dtype = DTypeCode::kFloat32;
  size_t elem = 4;
  int64_t numel = 1;
  int64_t period = 1;            // kPeriodic: input index = output index mod period
  std::vector<int64_t> strides;  // kGather: per output dim (0 = broadcast)
  size_t buf_offset = 0;         // scratch bytes for its tile buffer (not kSame)
  size_t buf_bytes = 0;
};

}  // namespace

struct Program {
  std::shared_ptr<const ir::Graph> body;  // keeps the generic steps' borrowed attrs alive
  std::vector<Step> steps;
  std::vector<DTypeCode> dtype;  // per program value
  std::vector<int32_t> slot;     // per value: scratch slot, or -1 (input / output)
  size_t num_inputs = 0;
  int32_t output = -1;
  Shape out_shape;
  int64_t total = 0;
  std::vector<InputPlan> inputs;
  size_t slots_offset = 0;  // scratch layout: input buffers, then slots
  size_t scratch_bytes = 0;
  double cost_per_elem = 0;
  // Last step writes a scratch slot, then stream_copy moves the tile to the output.
  void (*stream_copy)(const float*, float*, size_t) = nullptr;
  const VecTable* table = nullptr;  // the target chosen at prepare (pow picks a loop per tile)
};

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
  static constexpr std::array<std::string_view, 17> kHeavy = {
      "exp",  "log",  "tanh", "erf", "sigmoid", "gelu", "softplus",   "mish", "elu",
      "selu", "celu", "sin",  "cos", "div",     "sqrt", "reciprocal", "mean"};
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

// ---- running ----

namespace {

// Per-thread scratch reused across runs (grows, never shrinks): no allocation per run in the
// steady state.
struct Scratch {
  std::vector<std::byte> bytes;
  std::vector<std::byte*> ptr;
  std::vector<Tensor> views;
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

void gather_any(const InputPlan& ip, const Shape& out_shape, const std::byte* src, int64_t b,
                int64_t n, std::byte* dst) {
  switch (ip.elem) {  // by element size: a byte copy, no dtype-specific arithmetic
    case 1:
      return gather<uint8_t>(ip, out_shape, src, b, n, dst);
    case 2:
      return gather<uint16_t>(ip, out_shape, src, b, n, dst);
    case 4:
      return gather<uint32_t>(ip, out_shape, src, b, n, dst);
    default:
      return gather<uint64_t>(ip, out_shape, src, b, n, dst);
  }
}

// Fills `count` elements of `dst` by repeating the `period` elements of `src` from index 0.
void repeat_fill(const std::byte* src, size_t elem, int64_t period, std::byte* dst, int64_t count) {
  for (int64_t j = 0; j < count; j += period) {
    const int64_t m = std::min(period, count - j);
    std::memcpy(dst + static_cast<size_t>(j) * elem, src, static_cast<size_t>(m) * elem);
  }
}

inline const float* f32(const std::byte* p) { return reinterpret_cast<const float*>(p); }
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
