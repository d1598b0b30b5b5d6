// The pass manager: the name -> pass table, pipeline parsing, per-pass timing, IR printing
// and verification between passes (docs/architecture/compiler-passes.md "Pass manager").

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "frame/ir/text.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/pass.h"
#include "passes/pass_factories.h"

namespace frame::passes {

namespace {

struct PassEntry {
  std::string_view name;
  std::unique_ptr<Pass> (*factory)();
};

// In standard-pipeline order.
constexpr PassEntry kPasses[] = {
    {"shape-inference", make_shape_inference_pass},
    {"constant-folding", make_constant_folding_pass},
    {"cse", make_cse_pass},
    {"dce", make_dce_pass},
    {"float16-widening", make_float16_widening_pass},
    {"decomposition", make_decomposition_pass},
    {"operator-fusion", make_operator_fusion_pass},
    {"backend-lowering", make_backend_lowering_pass},
    {"memory-planning", make_memory_planning_pass},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Comma-separated names; empty items (a trailing comma) are ignored.
std::vector<std::string> split_pipeline(std::string_view pipeline) {
  std::vector<std::string> out;
  while (!pipeline.empty()) {
    const size_t comma = pipeline.find(',');
    std::string_view item = trim(pipeline.substr(0, comma));
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    pipeline.remove_prefix(comma + 1);
  }
  return out;
}

Status unknown_pass(std::string_view name) {
  return not_found("unknown pass '{}' (known passes: {})", name, fmt::join(pass_names(), ", "));
}

bool listed(const std::vector<std::string>& names, std::string_view name) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return n == name || n == "all"; });
}

}  // namespace

Result<std::unique_ptr<Pass>> make_pass(std::string_view name) {
  for (const PassEntry& e : kPasses) {
    if (e.name == name) return e.factory();
  }
  return unknown_pass(name);
}

std::vector<std::string> pass_names() {
  std::vector<std::string> out;
  for (const PassEntry& e : kPasses) out.emplace_back(e.name);
  return out;
}

Status run_pipeline(ir::Graph& g, std::string_view pipeline, PassContext& ctx,
                    const std::vector<std::string>& skip) {
  // Resolve every name before running anything, so a typo fails before the graph changes.
  for (const std::string& s : skip) {
    if (!make_pass(s).is_ok()) return unknown_pass(s).with_prefix("skip list: ");
  }
  std::vector<std::unique_ptr<Pass>> passes;
  for (const std::string& name : split_pipeline(pipeline)) {
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    FRAME_ASSIGN_OR_RETURN(std::unique_ptr<Pass> p, make_pass(name));
    passes.push_back(std::move(p));
  }
  const ir::OpQuery query = ops::make_op_query();
  for (const std::unique_ptr<Pass>& p : passes) {
    const std::string name(p->name());
    const auto start = std::chrono::steady_clock::now();
    Status s = p->run(g, ctx);
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    ctx.pass_times_ms.emplace_back(name, took.count());
    if (!s.is_ok()) return s.with_prefix(fmt::format("pass '{}': ", name));
    if (listed(ctx.print_ir_after, name)) {
      std::string text = ir::print_text(g);
      std::fprintf(stderr, "// IR after %s\n%s", name.c_str(), text.c_str());
    }
    if (ctx.verify_after_each) {
      if (Status v = g.verify(query); !v.is_ok()) {
        return v.with_prefix(fmt::format("IR invalid after pass '{}': ", name));
      }
    }
  }
  return Status();
}

}  // namespace frame::passes
