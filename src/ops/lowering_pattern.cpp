// LoweringPatternRegistry (see include/frame/ops/lowering_pattern.h).

#include "frame/ops/lowering_pattern.h"

#include <algorithm>
#include <mutex>

#include "frame/ops/op_registry.h"
#include "frame/ops/registration_batch.h"

namespace frame::ops {

LoweringPatternRegistry& LoweringPatternRegistry::global() {
  // Leaked on purpose, like the op and kernel registries (static-init order).
  static LoweringPatternRegistry* r = new LoweringPatternRegistry();
  return *r;
}

void LoweringPatternRegistry::register_pattern(LoweringPattern p) {
  if (p.backend.empty())
    registration_fatal("lowering pattern", p.name, "empty backend", p.file, p.line);
  if (p.fn == nullptr) {
    registration_fatal("lowering pattern", p.name, "null function", p.file, p.line);
  }
  std::unique_lock lock(mu_);
  for (const auto& q : patterns_) {
    if (q->backend == p.backend && q->name == p.name && q->anchor_op == p.anchor_op) {
      registration_fatal("lowering pattern", p.name,
                         fmt::format("duplicate for backend '{}' (first registered at {}:{})",
                                     p.backend, q->file, q->line),
                         p.file, p.line);
    }
  }
  patterns_.push_back(std::make_unique<LoweringPattern>(std::move(p)));
}

std::vector<const LoweringPattern*> LoweringPatternRegistry::find(
    std::string_view backend, std::string_view anchor_op) const {
  std::vector<const LoweringPattern*> out;
  {
    std::shared_lock lock(mu_);
    for (const auto& p : patterns_) {
      if (p->backend == backend && p->anchor_op == anchor_op) out.push_back(p.get());
    }
  }
  // Asked per anchor node of every compile: sort the few matches, not the whole table.
  std::sort(out.begin(), out.end(),
            [](const LoweringPattern* a, const LoweringPattern* b) { return a->name < b->name; });
  return out;
}

bool LoweringPatternRegistry::has_anchor(std::string_view anchor_op) const {
  std::shared_lock lock(mu_);
  for (const auto& p : patterns_) {
    if (p->anchor_op == anchor_op) return true;
  }
  return false;
}

std::vector<const LoweringPattern*> LoweringPatternRegistry::list() const {
  std::shared_lock lock(mu_);
  std::vector<const LoweringPattern*> out;
  for (const auto& p : patterns_) out.push_back(p.get());
  std::sort(out.begin(), out.end(), [](const LoweringPattern* a, const LoweringPattern* b) {
    return a->backend != b->backend ? a->backend < b->backend : a->name < b->name;
  });
  return out;
}

namespace {
thread_local bool t_one_run_lowering = false;
}  // namespace

OneRunLoweringScope::OneRunLoweringScope() : outer_(t_one_run_lowering) {
  t_one_run_lowering = true;
}
OneRunLoweringScope::~OneRunLoweringScope() { t_one_run_lowering = outer_; }
bool OneRunLoweringScope::active() { return t_one_run_lowering; }

LoweringPatternRegistration::LoweringPatternRegistration(std::string backend, std::string name,
                                                         std::string anchor_op,
                                                         LoweringPatternFn fn, const char* file,
                                                         int line, bool interpreted) {
  LoweringPattern p{std::move(backend), std::move(name), std::move(anchor_op), fn, file, line,
                    interpreted};
  if (RegistrationBatch* batch = collecting_batch()) {
    batch->patterns.push_back(std::move(p));
  } else {
    LoweringPatternRegistry::global().register_pattern(std::move(p));
  }
}

}  // namespace frame::ops
