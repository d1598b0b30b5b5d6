// libFuzzer target: the whole untrusted-model path, onnx::load_from_bytes -> runtime::compile
// -> Executable::run with small generated inputs (docs/fuzzing.md). Any model must load,
// compile and run or give an error Status: never a crash, undefined behaviour or a leak.
//
// The harness bounds the work it asks for so the fuzzer explores instead of waiting: models
// whose typed values (at any subgraph depth) exceed kMaxElements elements, or hold a loop
// without a small constant trip count, are compiled but not run.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "frame/ir/graph.h"
#include "frame/onnx/onnx.h"
#include "frame/runtime/compile.h"

namespace {

constexpr int64_t kMaxElements = int64_t{1} << 16;       // any one value
constexpr int64_t kMaxTotalElements = int64_t{1} << 19;  // all values of all (sub)graphs
constexpr int64_t kMaxLoopTrips = 64;

// True when every value of `g` and of its subgraphs is typed and small, and every loop has a
// small constant trip count. `total` accumulates element counts across the nesting.
bool small_enough(const frame::ir::Graph& g, int64_t& total, int depth) {
  if (depth > 8) return false;
  for (size_t v = 0; v < g.num_values(); ++v) {
    const auto& type = g.value(static_cast<frame::ir::ValueId>(v)).type;
    if (!type) continue;  // a dead node's output; compile rejects live untyped values
    frame::Result<int64_t> n = frame::checked_numel(type->shape);
    if (!n.is_ok() || *n > kMaxElements) return false;
    total += *n;
    if (total > kMaxTotalElements) return false;
  }
  for (frame::ir::NodeId id : g.node_ids()) {
    const frame::ir::Node& node = g.node(id);
    if (node.op == "loop") {
      if (node.inputs.empty() || node.inputs[0] < 0) return false;
      const auto& m = g.value(node.inputs[0]).constant;
      if (!m || m->dtype() != frame::DTypeCode::kInt64 || m->numel() != 1) return false;
      const int64_t trips = m->data<int64_t>()[0];
      if (trips > kMaxLoopTrips) return false;
    }
    for (const auto& [name, attr] : node.attrs) {
      if (const auto* body = std::get_if<std::shared_ptr<const frame::ir::Graph>>(&attr)) {
        if (*body && !small_enough(**body, total, depth + 1)) return false;
      }
    }
  }
  return true;
}

// Deterministic input values: mostly small numbers (so index, shape and division paths are
// reached with in-range and boundary values alike), sometimes raw bytes (NaN, inf, extremes).
void fill(frame::Tensor& t, uint64_t seed) {
  auto* bytes = static_cast<unsigned char*>(t.raw_data());
  const size_t nbytes = t.nbytes();
  if (t.dtype() == frame::DTypeCode::kBool) {
    for (size_t i = 0; i < nbytes; ++i) bytes[i] = static_cast<unsigned char>((i + seed) & 1);
    return;
  }
  if (seed % 4 == 3) {
    uint64_t x = seed | 1;
    for (size_t i = 0; i < nbytes; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
      bytes[i] = static_cast<unsigned char>(x);
    }
    return;
  }
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = static_cast<int64_t>((static_cast<uint64_t>(i) * 7 + seed) % 7) - 3;
    const double f = 0.5 * static_cast<double>(k);
    switch (t.dtype()) {
      case frame::DTypeCode::kFloat32:
        t.data<float>()[i] = static_cast<float>(f);
        break;
      case frame::DTypeCode::kFloat64:
        t.data<double>()[i] = f;
        break;
      case frame::DTypeCode::kFloat16:
        reinterpret_cast<uint16_t*>(bytes)[i] = frame::Half::from_float(static_cast<float>(f));
        break;
      case frame::DTypeCode::kBFloat16: {
        const float ff = static_cast<float>(f);
        uint32_t u = 0;
        std::memcpy(&u, &ff, 4);
        reinterpret_cast<uint16_t*>(bytes)[i] = static_cast<uint16_t>(u >> 16);
        break;
      }
      case frame::DTypeCode::kInt8:
        t.data<int8_t>()[i] = static_cast<int8_t>(k);
        break;
      case frame::DTypeCode::kInt16:
        t.data<int16_t>()[i] = static_cast<int16_t>(k);
        break;
      case frame::DTypeCode::kInt32:
        t.data<int32_t>()[i] = static_cast<int32_t>(k);
        break;
      case frame::DTypeCode::kInt64:
        t.data<int64_t>()[i] = k;
        break;
      case frame::DTypeCode::kUInt8:
        t.data<uint8_t>()[i] = static_cast<uint8_t>(k + 3);
        break;
      case frame::DTypeCode::kUInt16:
        t.data<uint16_t>()[i] = static_cast<uint16_t>(k + 3);
        break;
      case frame::DTypeCode::kUInt32:
        t.data<uint32_t>()[i] = static_cast<uint32_t>(k + 3);
        break;
      case frame::DTypeCode::kUInt64:
        t.data<uint64_t>()[i] = static_cast<uint64_t>(k + 3);
        break;
      case frame::DTypeCode::kBool:
        break;
    }
  }
}

// FRAME_FUZZ_VERBOSE=1 prints how far each input got (to tune the harness and seeds).
void trace(const char* stage, const frame::Status& status) {
  static const bool verbose = std::getenv("FRAME_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "onnx_run: %s: %s\n", stage, status.to_string().c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (size_t{1} << 18)) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  frame::onnx::LoadOptions load_options;
  load_options.max_tensor_bytes = size_t{1} << 19;
  frame::Result<frame::ir::Graph> g = frame::onnx::load_from_bytes(bytes, load_options);
  if (!g.is_ok()) return trace("load", g.status()), 0;
  int64_t total = 0;
  if (!small_enough(*g, total, 0)) return trace("too large to run", frame::Status()), 0;

  frame::runtime::CompileOptions options;
  options.num_threads = 1;
  options.use_cache = false;  // the process-wide cache would grow with every input
  options.fold_size_limit = size_t{1} << 19;
  frame::Result<frame::runtime::Executable> exe = frame::runtime::compile(*g, options);
  if (!exe.is_ok()) return trace("compile", exe.status()), 0;

  const uint64_t seed = std::hash<std::string_view>{}(bytes);
  frame::runtime::TensorMap inputs;
  for (frame::ir::ValueId v : g->inputs()) {
    const frame::ir::Value& value = g->value(v);
    frame::Result<frame::Tensor> t = frame::Tensor::empty(value.type->dtype, value.type->shape);
    if (!t.is_ok()) return 0;
    fill(*t, seed);
    inputs.emplace(value.name, std::move(*t));
  }
  frame::Result<frame::runtime::TensorMap> out = exe->run(inputs);
  trace("run", out.status());
  return 0;
}
