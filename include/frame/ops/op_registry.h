#pragma once
/// \file
/// `OpRegistry`: the global table of op schemas (op spec §3), and `make_op_query()`
/// which wires it into `ir::Graph::verify` (V3/V4).

#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frame/ir/graph.h"
#include "frame/ops/op_schema.h"

namespace frame::ops {

/// Prints "frame: fatal registration error: <what> '<name>': <violation> (registered at
/// file:line)" to stderr and aborts. The one exit for every registration fault (ARCH-040).
[[noreturn]] void registration_fatal(std::string_view what, std::string_view name,
                                     std::string_view violation, std::string_view file, int line);

struct KernelDef;
struct RegistrationBatch;

/// The ARCH-040/041 violation of a new op schema on its own (illegal or reserved name, no shape
/// function), or "" when it has none; duplicates are checked by the registry.
std::string op_schema_violation(const OpSchema& schema);

/// Global op table. Lookups are safe from many threads, including while a plugin registers.
class OpRegistry {
 public:
  /// The process-wide registry (constructed on first use, so static-init order is safe).
  static OpRegistry& global();

  /// Adds a schema. Fatal (registration_fatal) on an illegal name, a duplicate name, a
  /// reserved name (ir::kGraphInputOp / ir::kGraphOutputMarker) or a missing shape
  /// function (ARCH-040, ARCH-041).
  void register_op(OpSchema schema);
  /// The schema of `name`, or nullptr. The pointer stays valid for the process lifetime.
  const OpSchema* find(std::string_view name) const;
  /// All schemas sorted by name.
  std::vector<const OpSchema*> list() const;
  size_t size() const;
  /// JSON array of ops: name, doc, inputs (name, dtypes, optional, type_var), variadic,
  /// outputs, attrs (name, type, required, default), traits, has_decomposition, kernels
  /// (backends from KernelRegistry), registration site.
  std::string to_json() const;

 private:
  friend Status commit_registrations(RegistrationBatch batch);
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<OpSchema>> ops_;
};

/// ir::OpQuery over OpRegistry::global(): V3 = find(op) != nullptr; V4 = OpSchema::check_node.
ir::OpQuery make_op_query();

}  // namespace frame::ops
