// `frame viz`: running the pipeline to a stage and turning the graph into a drawing model.
#include "viz_graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <memory>
#include <variant>

#include "frame/runtime/backend.h"

namespace frame::cli::viz {
namespace {

// Op names of the two kinds of fused node (passes/operator_fusion.h and
// ops/schemas/nn_fused_internal.h; internal headers the command line does not include).
constexpr std::string_view kFusedElementwise = "fused_elementwise_internal";
constexpr std::string_view kFusedPostOps = "fused_post_ops_internal";
// Constants with at most this many elements show their values.
constexpr int64_t kShownValues = 4;
// Input of fused_post_ops_internal read by its "add" post-op (the residual R).
constexpr size_t kResidualInput = 3;

constexpr std::string_view kNotPlaced = "not placed yet";
constexpr std::string_view kNotPlacedColour = "#eeeeee";
constexpr std::string_view kInputColour = "#d9f0d3";
constexpr std::string_view kOutputColour = "#fde0ef";

// Fixed colours for the backends this project has, then a palette by chain position.
std::string backend_colour(const std::string& backend, size_t position) {
  static const std::map<std::string, std::string> kKnown = {
      {"cpu", "#a6cee3"},         {"onednn", "#fdbf6f"},    {"opencl", "#b2df8a"},
      {"cuda", "#cab2d6"},        {"intel_gpu", "#ffff99"}, {"intel_npu", "#8dd3c7"},
      {"test_backend", "#bebada"}};
  static const std::array<const char*, 6> kPalette = {"#80b1d3", "#fccde5", "#bc80bd",
                                                      "#ccebc5", "#ffed6f", "#d9d9d9"};
  auto it = kKnown.find(backend);
  if (it != kKnown.end()) return it->second;
  return kPalette[position % kPalette.size()];
}

std::string type_text(const ir::Value& v) { return v.type ? v.type->to_string() : "?"; }

// Long reasons wrapped at word boundaries so a label stays readable.
void add_wrapped(std::vector<std::string>& lines, const std::string& text, size_t width = 56) {
  std::string line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line = "  " + word;
    } else {
      line += (line.empty() ? "" : " ") + word;
    }
    pos = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
}

const ir::Graph* body_of(const ir::Node& n) {
  auto it = n.attrs.find("body");
  if (it == n.attrs.end()) return nullptr;
  const auto* body = std::get_if<std::shared_ptr<const ir::Graph>>(&it->second);
  return body == nullptr ? nullptr : body->get();
}

// Base op and post-ops of a fused_post_ops_internal node; empty post-ops when it has none
// (the node then only carries activation layouts and is drawn as a plain node).
std::pair<std::string, std::vector<std::string>> post_ops_of(const ir::Node& n) {
  std::pair<std::string, std::vector<std::string>> out;
  auto base = n.attrs.find("base_op");
  auto post = n.attrs.find("post_ops");
  if (base != n.attrs.end()) {
    if (const auto* s = std::get_if<std::string>(&base->second)) out.first = *s;
  }
  if (post != n.attrs.end()) {
    if (const auto* v = std::get_if<std::vector<std::string>>(&post->second)) out.second = *v;
  }
  return out;
}

// Where each outer input goes and each outer output comes from, in drawn node ids.
struct Unit {
  std::vector<std::vector<std::string>> input_targets;  // per input position
  std::vector<std::string> output_sources;              // per output position
};

class Builder {
 public:
  Builder(const StagedGraph& s, const std::vector<std::string>& backends)
      : s_(s), g_(s.graph), backends_(backends) {}

  DrawnGraph build(const std::string& model);

 private:
  // Colour and placement of node `id` ("not placed yet" before lowering).
  const passes::NodePlacement* placement(ir::NodeId id) const {
    if (!s_.placed) return nullptr;
    auto it = s_.placements.find(id);
    return it == s_.placements.end() ? nullptr : &it->second;
  }
  std::string fill_for(const passes::NodePlacement* p) {
    const std::string backend = p == nullptr ? std::string(kNotPlaced) : p->backend;
    used_.insert(backend);
    if (p == nullptr) return std::string(kNotPlacedColour);
    auto it = std::find(backends_.begin(), backends_.end(), p->backend);
    return backend_colour(p->backend, static_cast<size_t>(it - backends_.begin()));
  }
  // Placement lines of a node's label and its tooltip; counts fallbacks.
  void describe_placement(const passes::NodePlacement* p, std::vector<std::string>& lines,
                          bool& fallback, std::string& tooltip) {
    if (p == nullptr) return;
    fallback = p->path != "kernel";
    if (fallback) {
      ++d_.fallbacks;
      lines.push_back(fmt::format("fallback: {} on {}", p->path, p->backend));
    }
    // Also for a node on a later backend of the chain through its own kernel: why not earlier.
    for (const std::string& why : p->rejected) add_wrapped(lines, "rejected " + why);
    tooltip = fmt::format("{} via {}", p->backend, p->path);
    for (const std::string& why : p->rejected) tooltip += "; rejected " + why;
  }
  // "const W f32[64,3,7,7]" for a constant input, "folded const ..." when a pass made it;
  // small ones (shape arithmetic, scalars) with their values.
  std::string constant_line(ir::ValueId v) const {
    const ir::Value& val = g_.value(v);
    const bool folded = s_.import_constants.count(val.name) == 0;
    std::string line =
        fmt::format("{}{} {}", folded ? "folded const " : "const ", val.name, type_text(val));
    const Tensor& t = *val.constant;
    if (t.defined() && t.numel() <= kShownValues) {
      std::vector<std::string> values;
      for (int64_t i = 0; i < t.numel(); ++i) {
        values.push_back(is_floating(t.dtype()) ? fmt::format("{:g}", t.element_as_double(i))
                                                : std::to_string(t.element_as_int64(i)));
      }
      line += fmt::format(" = [{}]", fmt::join(values, ", "));
    }
    return line;
  }
  DrawnNode& add_node(std::string id, std::vector<std::string> lines, std::string fill,
                      int cluster) {
    DrawnNode n;
    n.id = std::move(id);
    n.lines = std::move(lines);
    n.fill = std::move(fill);
    n.cluster = cluster;
    d_.nodes.push_back(std::move(n));
    return d_.nodes.back();
  }
  // Adds the cluster of fused node `id` (name, op and placement); returns its index.
  int add_cluster(ir::NodeId id) {
    const ir::Node& n = g_.node(id);
    const passes::NodePlacement* p = placement(id);
    DrawnCluster cl;
    cl.id = fmt::format("cluster_n{}", id);
    cl.lines = {n.name, p == nullptr ? n.op : fmt::format("{} [{}]", n.op, p->backend)};
    cl.fill = fill_for(p);
    describe_placement(p, cl.lines, cl.fallback, cl.tooltip);
    d_.clusters.push_back(std::move(cl));
    return static_cast<int>(d_.clusters.size()) - 1;
  }
  Unit plain(ir::NodeId id);
  Unit fused_elementwise(ir::NodeId id, const ir::Graph& body);
  Unit fused_post_ops(ir::NodeId id, const std::string& base,
                      const std::vector<std::string>& post_ops);

  const StagedGraph& s_;
  const ir::Graph& g_;
  const std::vector<std::string>& backends_;
  DrawnGraph d_;
  std::set<std::string> used_;
};

Unit Builder::plain(ir::NodeId id) {
  const ir::Node& n = g_.node(id);
  const passes::NodePlacement* p = placement(id);
  std::vector<std::string> lines = {n.name};
  std::string op = n.op;
  if (n.op == kFusedPostOps) {
    const std::string base = post_ops_of(n).first;
    if (!base.empty()) op += " (" + base + ")";
  }
  lines.push_back(p == nullptr ? op : fmt::format("{} [{}]", op, p->backend));
  for (ir::ValueId v : n.inputs) {
    if (v != ir::kNoValue && g_.value(v).is_constant()) lines.push_back(constant_line(v));
  }
  DrawnNode& dn = add_node(fmt::format("n{}", id), std::move(lines), fill_for(p), -1);
  describe_placement(p, dn.lines, dn.fallback, dn.tooltip);
  Unit u;
  u.input_targets.assign(n.inputs.size(), {dn.id});
  u.output_sources.assign(n.outputs.size(), dn.id);
  return u;
}

Unit Builder::fused_elementwise(ir::NodeId id, const ir::Graph& body) {
  const ir::Node& n = g_.node(id);
  const int c = add_cluster(id);
  const std::string fill = d_.clusters.back().fill;

  // Body input k is the fused node's input k (operator-fusion builds it so).
  std::map<ir::ValueId, size_t> input_pos;
  for (size_t k = 0; k < body.inputs().size(); ++k) input_pos[body.inputs()[k]] = k;
  Unit u;
  u.input_targets.resize(n.inputs.size());
  std::map<ir::ValueId, std::string> produced;  // body value -> drawn node
  Result<std::vector<ir::NodeId>> order = body.topological_order();
  const std::vector<ir::NodeId> ids = order.is_ok() ? *order : body.node_ids();
  for (ir::NodeId b : ids) {
    const ir::Node& bn = body.node(b);
    const std::string bid = fmt::format("n{}_b{}", id, b);
    std::vector<std::string> lines = {bn.op};
    for (ir::ValueId v : bn.inputs) {
      if (v == ir::kNoValue) continue;
      auto pos = input_pos.find(v);
      if (pos != input_pos.end() && pos->second < n.inputs.size()) {
        const ir::ValueId outer = n.inputs[pos->second];
        if (g_.value(outer).is_constant()) {
          lines.push_back(constant_line(outer));
        } else {
          u.input_targets[pos->second].push_back(bid);
        }
      } else if (auto pr = produced.find(v); pr != produced.end()) {
        d_.edges.push_back({pr->second, bid, type_text(body.value(v))});
      } else if (body.value(v).is_constant()) {
        lines.push_back("const " + type_text(body.value(v)));
      }
    }
    add_node(bid, std::move(lines), fill, c);
    for (ir::ValueId o : bn.outputs) produced[o] = bid;
  }
  for (ir::ValueId o : body.outputs()) {
    auto pr = produced.find(o);
    u.output_sources.push_back(pr == produced.end() ? std::string() : pr->second);
  }
  u.output_sources.resize(n.outputs.size());
  return u;
}

Unit Builder::fused_post_ops(ir::NodeId id, const std::string& base,
                             const std::vector<std::string>& post_ops) {
  const ir::Node& n = g_.node(id);
  const int c = add_cluster(id);
  const std::string fill = d_.clusters.back().fill;

  // The base op reads inputs 0..2; the first "add" post-op reads the residual (input 3).
  size_t residual_at = post_ops.size();
  for (size_t k = 0; k < post_ops.size(); ++k) {
    if (post_ops[k] == "add") {
      residual_at = k;
      break;
    }
  }
  std::vector<std::string> ids;
  std::vector<std::vector<std::string>> lines(post_ops.size() + 1);
  lines[0] = {base};
  ids.push_back(fmt::format("n{}_base", id));
  for (size_t k = 0; k < post_ops.size(); ++k) {
    lines[k + 1] = {post_ops[k]};
    ids.push_back(fmt::format("n{}_post{}", id, k));
  }
  Unit u;
  u.input_targets.resize(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ir::ValueId v = n.inputs[i];
    if (v == ir::kNoValue) continue;
    const size_t at = i == kResidualInput && residual_at < post_ops.size() ? residual_at + 1 : 0;
    if (g_.value(v).is_constant()) {
      lines[at].push_back(constant_line(v));
    } else {
      u.input_targets[i].push_back(ids[at]);
    }
  }
  const std::string out_type = n.outputs.empty() ? "?" : type_text(g_.value(n.outputs[0]));
  for (size_t k = 0; k < ids.size(); ++k) {
    add_node(ids[k], std::move(lines[k]), fill, c);
    if (k > 0) d_.edges.push_back({ids[k - 1], ids[k], out_type});
  }
  u.output_sources.assign(n.outputs.size(), ids.back());
  return u;
}

DrawnGraph Builder::build(const std::string& model) {
  std::map<ir::ValueId, std::string> source;  // value -> drawn node producing it
  for (size_t k = 0; k < g_.inputs().size(); ++k) {
    const ir::ValueId v = g_.inputs()[k];
    DrawnNode& dn =
        add_node(fmt::format("input{}", k), {"input " + g_.value(v).name, type_text(g_.value(v))},
                 std::string(kInputColour), -1);
    dn.kind = DrawnNode::Kind::kInput;
    source[v] = dn.id;
  }
  Result<std::vector<ir::NodeId>> order = g_.topological_order();
  const std::vector<ir::NodeId> ids = order.is_ok() ? *order : g_.node_ids();
  std::vector<std::pair<ir::NodeId, Unit>> units;
  for (ir::NodeId id : ids) {
    const ir::Node& n = g_.node(id);
    const ir::Graph* body = n.op == kFusedElementwise ? body_of(n) : nullptr;
    std::pair<std::string, std::vector<std::string>> post;
    if (n.op == kFusedPostOps) post = post_ops_of(n);
    Unit u = body != nullptr        ? fused_elementwise(id, *body)
             : !post.second.empty() ? fused_post_ops(id, post.first, post.second)
                                    : plain(id);
    for (size_t k = 0; k < n.outputs.size() && k < u.output_sources.size(); ++k) {
      if (!u.output_sources[k].empty()) source[n.outputs[k]] = u.output_sources[k];
    }
    units.emplace_back(id, std::move(u));
  }
  for (const auto& [id, u] : units) {
    const ir::Node& n = g_.node(id);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ir::ValueId v = n.inputs[i];
      if (v == ir::kNoValue) continue;
      auto src = source.find(v);
      if (src == source.end()) continue;  // a constant, listed in the consumer's label
      for (const std::string& to : u.input_targets[i]) {
        d_.edges.push_back({src->second, to, type_text(g_.value(v))});
      }
    }
  }
  for (size_t k = 0; k < g_.outputs().size(); ++k) {
    const ir::ValueId v = g_.outputs()[k];
    std::vector<std::string> lines = {"output " + g_.value(v).name, type_text(g_.value(v))};
    if (g_.value(v).is_constant()) lines.push_back(constant_line(v));
    DrawnNode& dn =
        add_node(fmt::format("output{}", k), std::move(lines), std::string(kOutputColour), -1);
    dn.kind = DrawnNode::Kind::kOutput;
    auto src = source.find(v);
    if (src != source.end()) d_.edges.push_back({src->second, dn.id, type_text(g_.value(v))});
  }

  // Title: what is drawn, how the node count went through the passes, what folding did.
  d_.title.push_back(fmt::format("{}: stage {}", model, s_.stage));
  std::string counts;
  for (const auto& [stage, n] : s_.node_counts) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", stage, n);
  }
  d_.title.push_back("nodes after each stage: " + counts);
  size_t folded = 0;
  size_t constants = 0;
  for (size_t v = 0; v < g_.num_values(); ++v) {
    const ir::Value& val = g_.value(static_cast<ir::ValueId>(v));
    if (!val.is_constant()) continue;
    ++constants;
    if (s_.import_constants.count(val.name) == 0) ++folded;
  }
  for (size_t k = 1; k < s_.node_counts.size(); ++k) {
    if (s_.node_counts[k].first != "constant-folding") continue;
    const size_t before = s_.node_counts[k - 1].second;
    const size_t after = s_.node_counts[k].second;
    d_.title.push_back(fmt::format("constant-folding folded away {} node(s)",
                                   before > after ? before - after : 0));
  }
  d_.title.push_back(
      fmt::format("{} constant(s), listed in their consumers; {} made by passes (\"folded const\")",
                  constants, folded));
  if (s_.placed) {
    d_.title.push_back(
        fmt::format("fallbacks (red border, reason in the label): {}", d_.fallbacks));
  }
  d_.title.push_back(fmt::format("fused groups (boxes around their body): {}", d_.clusters.size()));
  if (!s_.placed) {
    d_.legend.emplace_back(std::string(kNotPlaced), std::string(kNotPlacedColour));
  } else {
    for (size_t k = 0; k < backends_.size(); ++k) {
      if (used_.count(backends_[k]) != 0) {
        d_.legend.emplace_back(backends_[k], backend_colour(backends_[k], k));
      }
    }
    for (const std::string& b : used_) {  // placed outside the chain (e.g. cpu appended)
      if (std::find(backends_.begin(), backends_.end(), b) == backends_.end()) {
        d_.legend.emplace_back(b, backend_colour(b, backends_.size()));
      }
    }
  }
  return std::move(d_);
}

}  // namespace

std::vector<std::string> stage_names() {
  std::vector<std::string> out = {"import"};
  for (std::string& p : runtime::split_list(passes::kStandardPipeline)) out.push_back(std::move(p));
  out.emplace_back("final");
  return out;
}

Result<StagedGraph> run_to_stage(ir::Graph imported, const std::string& stage,
                                 const std::vector<std::string>& backends) {
  const std::vector<std::string> stages = stage_names();
  if (std::find(stages.begin(), stages.end(), stage) == stages.end()) {
    return invalid_argument("unknown stage '{}' (stages: {})", stage, fmt::join(stages, ", "));
  }
  StagedGraph s;
  s.stage = stage;
  s.graph = std::move(imported);
  for (size_t v = 0; v < s.graph.num_values(); ++v) {
    const ir::Value& val = s.graph.value(static_cast<ir::ValueId>(v));
    if (val.is_constant()) s.import_constants.insert(val.name);
  }
  s.node_counts.emplace_back("import", s.graph.num_nodes());
  if (stage == "import") return s;
  passes::PassContext ctx;
  ctx.backends = backends;
  for (const std::string& pass : runtime::split_list(passes::kStandardPipeline)) {
    if (Status st = passes::run_pipeline(s.graph, pass, ctx); !st.is_ok()) {
      return st.with_prefix(fmt::format("stage '{}': ", pass));
    }
    s.node_counts.emplace_back(pass, s.graph.num_nodes());
    if (pass == "backend-lowering") s.placed = true;
    if (pass == stage) break;
  }
  s.placements = std::move(ctx.placements);
  return s;
}

DrawnGraph build_drawing(const StagedGraph& s, const std::string& model,
                         const std::vector<std::string>& backends) {
  return Builder(s, backends).build(model);
}

Result<Format> format_for(const std::string& path) {
  const size_t dot = path.find_last_of('.');
  const size_t slash = path.find_last_of('/');
  std::string ext = dot == std::string::npos || (slash != std::string::npos && dot < slash)
                        ? ""
                        : path.substr(dot);
  std::string lower = ext;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == ".svg") return Format::kSvg;
  if (lower == ".png") return Format::kPng;
  if (lower == ".dot" || lower == ".gv") return Format::kDot;
  return invalid_argument("-o {}: unknown format '{}' (the extension picks it: .svg, .png, .dot)",
                          path, ext.empty() ? "(no extension)" : ext);
}

}  // namespace frame::cli::viz
