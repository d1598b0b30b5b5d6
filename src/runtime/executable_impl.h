#pragma once
/// \file
/// What an Executable holds (private to src/runtime): the compiled graph and its plan, shared
/// by cached copies, plus the report of the compile() call that returned it.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "frame/runtime/compile.h"
#include "runtime/plan.h"

namespace frame::runtime {

namespace detail {

/// The immutable result of one compilation; safe to share between threads.
struct CompiledCore {
  std::shared_ptr<const ir::Graph> graph;
  Plan plan;
  std::vector<std::pair<std::string, ir::TensorType>> inputs;
  std::vector<std::pair<std::string, ir::TensorType>> outputs;
  CompileReport report;
  /// The pass results the plan was built from, by ids of `graph` (the compile cache on disk
  /// stores them): where each node runs and where each non-constant value lives.
  std::map<ir::NodeId, passes::NodePlacement> placements;
  std::map<ir::ValueId, passes::BufferSlot> buffers;

  /// Run slots (arena + bound views) not in use; concurrent runs take distinct slots.
  Result<std::unique_ptr<RunState>> acquire() const;
  void release(std::unique_ptr<RunState> state) const;

 private:
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<RunState>> free_;
};

}  // namespace detail

class ExecutableImpl {
 public:
  std::shared_ptr<const detail::CompiledCore> core;
  CompileReport report;  ///< the core's report, with cache_hit set per compile() call
};

}  // namespace frame::runtime
