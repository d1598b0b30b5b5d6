#pragma once
/// \file
/// Lowering patterns: op-specific graph rewrites owned by a backend
/// (docs/architecture/compiler-passes.md: the generic passes ask traits only; a rewrite that
/// matches op names belongs to the backend that knows the op). A backend registers
/// `FRAME_REGISTER_LOWERING_PATTERN(backend, name, fn)`; the backend-lowering pass
/// (src/passes/backend_lowering.cpp) applies the patterns of every backend in its preference list,
/// before placement, to a fixed point, and records each rewrite.
/// docs/backends/onednn.md#lowering-patterns lists the onednn ones.

#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/ir/graph.h"

namespace frame::ops {

struct RegistrationBatch;

/// Tries to rewrite the graph at node `id` (a live node). Returns true if it changed the graph,
/// false if the pattern does not match there. A rewrite must leave the graph valid (V1–V4 of
/// Graph::verify, with types on every new value) and must only fire when the result stays on
/// the pattern's backend (its kernel supports the new node). It may add nodes and constants and
/// mark nodes dead (Graph::remove_node); it must not compact the graph. Errors abort lowering.
using LoweringPatternFn = Result<bool> (*)(ir::Graph& g, ir::NodeId id);

/// A registered pattern.
struct LoweringPattern {
  std::string backend;  ///< applied only when this backend is in the lowering's backends
  std::string name;     ///< e.g. "fold_batch_norm_into_conv", shown in the lowering log
  /// The op of the node the pattern is tried at. The lowering tries it only at nodes of this
  /// op that `backend` would run (the first backend of the preference list whose kernel
  /// supports the node), so a rewrite never moves work off the backend that would run it.
  std::string anchor_op;
  LoweringPatternFn fn = nullptr;
  std::string file;
  int line = 0;
  /// Also applied by the interpreted tier (ADR 0007, docs/architecture/execution-model.md,
  /// "Interpreted tier"), to each first-seen key's graph before it runs node by node: the
  /// kernels of the nodes the rewrite creates prepare for one run (NodeContext::run_once)
  /// without per-size JIT code, so fusing pays off on a graph that runs once. The rewrite
  /// checks its conditions on each key's graph as in a compile; only where it is tried is
  /// remembered across keys. Registered with FRAME_REGISTER_INTERPRETED_LOWERING_PATTERN.
  bool interpreted = false;
};

/// Global pattern table. Thread-safe like KernelRegistry.
class LoweringPatternRegistry {
 public:
  static LoweringPatternRegistry& global();
  /// Adds a pattern. Fatal on an empty backend, a null function or a duplicate
  /// (backend, name, anchor_op) triple (ARCH-040 exit).
  void register_pattern(LoweringPattern p);
  /// Patterns of `backend` anchored at `anchor_op`, sorted by name (deterministic across link
  /// orders). Pointers stay valid for the process lifetime.
  std::vector<const LoweringPattern*> find(std::string_view backend,
                                           std::string_view anchor_op) const;
  /// True if some pattern is anchored at `anchor_op` (for any backend).
  bool has_anchor(std::string_view anchor_op) const;
  /// All patterns, sorted by (backend, name).
  std::vector<const LoweringPattern*> list() const;

 private:
  friend Status commit_registrations(RegistrationBatch batch);
  mutable std::shared_mutex mu_;
  std::vector<std::unique_ptr<LoweringPattern>> patterns_;
};

/// While one exists on a thread, lowering patterns applied on that thread rewrite a graph that
/// runs once (the interpreted tier's first-seen key, LoweringPattern::interpreted): a pattern's
/// kernel check then asks as the interpreter will prepare (NodeContext::run_once), so it takes
/// the kernels' one-run forms and builds no primitive descriptor the run will not use.
class OneRunLoweringScope {
 public:
  OneRunLoweringScope();
  ~OneRunLoweringScope();
  OneRunLoweringScope(const OneRunLoweringScope&) = delete;
  OneRunLoweringScope& operator=(const OneRunLoweringScope&) = delete;
  /// Whether the calling thread is inside such a scope.
  static bool active();

 private:
  bool outer_;
};

/// Registers on construction (static-init time).
class LoweringPatternRegistration {
 public:
  LoweringPatternRegistration(std::string backend, std::string name, std::string anchor_op,
                              LoweringPatternFn fn, const char* file, int line,
                              bool interpreted = false);
};

}  // namespace frame::ops

/// Registers a lowering pattern of `backend` (a string) tried at nodes of op `anchor_op` (an
/// identifier token): `fn` is a LoweringPatternFn, `name` an identifier token naming the
/// rewrite. `FRAME_REGISTER_LOWERING_PATTERN("onednn", fold_batch_norm_into_conv, conv, fold);`
#define FRAME_REGISTER_LOWERING_PATTERN(backend, name, anchor_op, fn)             \
  [[maybe_unused]] static ::frame::ops::LoweringPatternRegistration FRAME_CONCAT( \
      frame_lowering_pattern_, __COUNTER__)(backend, #name, #anchor_op, fn, __FILE__, __LINE__)

/// As FRAME_REGISTER_LOWERING_PATTERN, for a pattern the interpreted tier applies too
/// (LoweringPattern::interpreted: its new nodes' kernels need no per-size JIT code).
#define FRAME_REGISTER_INTERPRETED_LOWERING_PATTERN(backend, name, anchor_op, fn)               \
  [[maybe_unused]] static ::frame::ops::LoweringPatternRegistration FRAME_CONCAT(               \
      frame_lowering_pattern_, __COUNTER__)(backend, #name, #anchor_op, fn, __FILE__, __LINE__, \
                                            true)
