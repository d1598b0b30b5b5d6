// runtime::compare_runs: two runs of one model, every value both produce compared under
// BUILD-011's tolerance (include/frame/runtime/compare.h; docs/debugging.md).

#include "frame/runtime/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace frame::runtime {

namespace {

// A value one run produced and the node that produced it.
struct Produced {
  Tensor value;
  NodeProfile node;  // without input and output types (not reported)
};

// Receives each named value of a run once, in the order the run computes them (graph outputs
// no node produced last, under the node name "(graph output)"); `value` may be a view valid only
// during the call. Returns an error to stop collecting (the run itself goes on).
using ValueSink =
    std::function<Status(const std::string& name, const NodeProfile& node, const Tensor& value)>;

// Runs `session` on `inputs` and hands every value it produces to `sink`.
Status observe_run(const Session& session, const TensorMap& inputs, const char* which,
                   const ValueSink& sink) {
  std::set<std::string> seen;
  Status sink_status;
  const NodeObserver observer = [&](const NodeProfile& node, std::span<const std::string> names,
                                    std::span<const Tensor> outputs) {
    for (size_t k = 0; k < names.size() && k < outputs.size(); ++k) {
      if (names[k].empty() || !outputs[k].defined() || !seen.insert(names[k]).second) continue;
      if (sink_status.is_ok()) sink_status = sink(names[k], node, outputs[k]);
    }
  };
  RunOptions ro;
  ro.observer = &observer;
  Result<TensorMap> out = session.run(inputs, ro);
  if (!out.is_ok()) return out.status().with_prefix(fmt::format("the {} run: ", which));
  FRAME_RETURN_IF_ERROR(sink_status);
  NodeProfile graph_output;
  graph_output.node = "(graph output)";
  for (const auto& [name, t] : *out) {
    if (seen.insert(name).second) FRAME_RETURN_IF_ERROR(sink(name, graph_output, t));
  }
  return Status();
}

std::string type_of(const Tensor& t) {
  return fmt::format("{}{}", dtype_name(t.dtype()), shape_to_string(t.shape()));
}

std::string kernel_of(const ValueComparison& v) {
  std::string k = v.backend.empty() ? std::string("-") : v.backend;
  if (!v.path.empty() && v.path != "kernel") k += " (" + v.path + ")";
  if (!v.fused_ops.empty()) k += fmt::format(" [{}]", fmt::join(v.fused_ops, "+"));
  return k;
}

}  // namespace

Result<ComparisonReport> compare_runs(const Session& target, const Session& reference,
                                      const TensorMap& inputs, const CompareOptions& options) {
  for (const auto& [name, v] : {std::pair{"rtol", options.rtol}, std::pair{"atol", options.atol}}) {
    if (v && !(std::isfinite(*v) && *v >= 0)) {
      return invalid_argument("{} is {}; expected a finite value >= 0", name, *v);
    }
  }
  for (const auto* list : {&target.inputs(), &target.outputs()}) {
    for (const ValueInfo& vi : *list) {
      if (vi.sequence || vi.optional) {
        return unimplemented(
            "{} '{}' is {}: comparing runs takes models whose inputs and outputs are tensors",
            list == &target.inputs() ? "input" : "output", vi.name, vi.to_string());
      }
    }
  }
  // The reference run first, its values kept; the tested run's values are compared as they
  // are computed, so only one run's values are held at a time.
  std::map<std::string, Produced> ref;
  FRAME_RETURN_IF_ERROR(observe_run(
      reference, inputs, "reference",
      [&](const std::string& name, const NodeProfile& node, const Tensor& value) -> Status {
        Produced p;
        p.value = value.clone();
        if (!p.value.defined()) {
          return make_error(StatusCode::kOutOfRange, "copying value '{}' failed (out of memory)",
                            name);
        }
        p.node.node = node.node;
        p.node.backend = node.backend;
        ref.emplace(name, std::move(p));
        return Status();
      }));
  ComparisonReport rep;
  rep.backends = options.backends;
  rep.reference = options.reference_backends;
  size_t matched = 0;
  FRAME_RETURN_IF_ERROR(observe_run(
      target, inputs, "tested",
      [&](const std::string& name, const NodeProfile& node, const Tensor& value) -> Status {
        auto rit = ref.find(name);
        if (rit == ref.end()) {
          ++rep.only_in_target;
          return Status();
        }
        ++matched;
        const Produced& re = rit->second;
        ValueComparison v;
        v.value = name;
        v.node = node.node;
        v.op = node.op;
        v.backend = node.backend;
        v.path = node.path;
        v.fused_ops = node.fused_ops;
        v.reference_node = re.node.node;
        v.reference_backend = re.node.backend;
        v.type = type_of(value);
        v.reference_type = type_of(re.value);
        v.numel = re.value.numel();
        Tolerance tol = tolerance_for(re.value.dtype(), options.tolerance);
        if (is_floating(re.value.dtype()) && !options.atol) {
          // The class's atol scaled by the value's magnitude (CompareOptions::tolerance).
          double largest = 1.0;
          for (int64_t i = 0; i < re.value.numel(); ++i) {
            const double x = std::fabs(re.value.element_as_double(i));
            if (std::isfinite(x)) largest = std::max(largest, x);
          }
          tol.atol *= largest;
        }
        if (options.rtol) tol.rtol = *options.rtol;
        if (options.atol) tol.atol = *options.atol;
        v.rtol = tol.rtol;
        v.atol = tol.atol;
        const CompareResult c = compare_tensors(value, re.value, tol);
        v.ok = c.ok;
        v.mismatches = c.mismatches;
        v.max_abs_error = c.max_abs_error;
        v.max_rel_error = c.max_rel_error;
        v.worst_ratio = c.worst_ratio;
        v.message = c.message;
        if (!v.ok && !rep.first_divergence) rep.first_divergence = rep.values.size();
        rep.values.push_back(std::move(v));
        return Status();
      }));
  rep.only_in_reference = ref.size() - matched;
  return rep;
}

std::string ComparisonReport::to_text(size_t max_rows) const {
  const auto joined = [](const std::vector<std::string>& chain) {
    return chain.empty() ? std::string("(default)") : fmt::format("{}", fmt::join(chain, ","));
  };
  std::string out;
  if (!model.empty()) out += fmt::format("model: {}\n", model);
  out += fmt::format("backends {} against reference {}: {} values compared", joined(backends),
                     joined(reference), values.size());
  if (only_in_target + only_in_reference > 0) {
    out += fmt::format(
        " ({} only in the tested run, {} only in the reference: fused away, renamed, or inside "
        "a device group)",
        only_in_target, only_in_reference);
  }
  out += "\n";
  if (!first_divergence) {
    out += "no value diverges beyond the tolerance\n";
  } else {
    const ValueComparison& v = values[*first_divergence];
    out += fmt::format(
        "FIRST DIVERGENCE: value '{}' of node '{}' (op {}, backend {}, kernel {})\n"
        "  max abs error {:.3g}, max rel error {:.3g}, {} of {} elements outside rtol {:g} atol "
        "{:g} (worst element {:.3g}x its tolerance)\n"
        "  tested {}, reference {} (node '{}' on {})\n  {}\n",
        v.value, v.node, v.op, v.backend, kernel_of(v), v.max_abs_error, v.max_rel_error,
        v.mismatches, v.numel, v.rtol, v.atol, v.worst_ratio, v.type, v.reference_type,
        v.reference_node, v.reference_backend, v.message);
  }
  // The rows shown: all, or a window around the first divergence (else the first rows).
  size_t begin = 0;
  size_t end = values.size();
  if (max_rows > 0 && values.size() > max_rows) {
    const size_t center = first_divergence.value_or(0);
    begin = center > max_rows / 2 ? center - max_rows / 2 : 0;
    end = std::min(values.size(), begin + max_rows);
    begin = end - max_rows;
  }
  // A device group's step names every node it holds: cells are cut to kMaxCell characters.
  constexpr size_t kMaxCell = 60;
  const auto cell = [](const std::string& text) {
    return text.size() <= kMaxCell ? text : text.substr(0, kMaxCell - 3) + "...";
  };
  size_t wv = 5, wn = 4, wo = 2, wk = 6, wt = 4;
  for (size_t i = begin; i < end; ++i) {
    const ValueComparison& v = values[i];
    wv = std::max(wv, cell(v.value).size());
    wn = std::max(wn, cell(v.node).size());
    wo = std::max(wo, cell(v.op).size());
    wk = std::max(wk, cell(kernel_of(v)).size());
    wt = std::max(wt, v.type.size());
  }
  // "of tol": the worst element's error as a fraction of its tolerance (ok up to 1).
  out += fmt::format("\n{:<4} {:<{}} {:<{}} {:<{}} {:<{}} {:<{}} {:>10} {:>10} {:>8}\n", "ok",
                     "value", wv, "node", wn, "op", wo, "kernel", wk, "type", wt, "max abs",
                     "max rel", "of tol");
  if (begin > 0) out += fmt::format("... {} rows before\n", begin);
  for (size_t i = begin; i < end; ++i) {
    const ValueComparison& v = values[i];
    out += fmt::format("{:<4} {:<{}} {:<{}} {:<{}} {:<{}} {:<{}} {:>10.3g} {:>10.3g} {:>8.2g}\n",
                       v.ok ? "ok" : "DIFF", cell(v.value), wv, cell(v.node), wn, cell(v.op), wo,
                       cell(kernel_of(v)), wk, v.type, wt, v.max_abs_error, v.max_rel_error,
                       v.worst_ratio);
  }
  if (end < values.size()) out += fmt::format("... {} rows after\n", values.size() - end);
  return out;
}

std::string ComparisonReport::to_json() const {
  nlohmann::json j;
  j["model"] = model;
  j["backends"] = backends;
  j["reference"] = reference;
  j["ok"] = ok();
  j["first_divergence"] =
      first_divergence ? nlohmann::json(*first_divergence) : nlohmann::json(nullptr);
  j["only_in_target"] = only_in_target;
  j["only_in_reference"] = only_in_reference;
  nlohmann::json rows = nlohmann::json::array();
  for (const ValueComparison& v : values) {
    rows.push_back({{"value", v.value},
                    {"node", v.node},
                    {"op", v.op},
                    {"backend", v.backend},
                    {"path", v.path},
                    {"fused_ops", v.fused_ops},
                    {"reference_node", v.reference_node},
                    {"reference_backend", v.reference_backend},
                    {"type", v.type},
                    {"reference_type", v.reference_type},
                    {"max_abs_error", v.max_abs_error},
                    {"max_rel_error", v.max_rel_error},
                    {"worst_ratio", v.worst_ratio},
                    {"mismatches", v.mismatches},
                    {"numel", v.numel},
                    {"rtol", v.rtol},
                    {"atol", v.atol},
                    {"ok", v.ok},
                    {"message", v.message}});
  }
  j["values"] = std::move(rows);
  return j.dump(1);
}

}  // namespace frame::runtime
