// `frame viz MODEL -o graph.svg|png|dot [--stage PASS] [--shape NAME=d0,..]
// [--input NAME=FILE.npy ..] [--backend LIST]`: the graph after a pass of the pipeline, drawn by
// the Graphviz libraries (docs/cli.md "frame viz"): nodes coloured by backend, fused groups as
// clusters with their body, fallbacks with the reason, shapes and dtypes on edges, constants
// made by folding marked, graph inputs and outputs as distinct shapes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "frame/onnx/onnx.h"
#include "frame/onnx/session.h"
#include "model_util.h"
#include "viz_graph.h"

namespace frame::cli {
namespace {

struct VizOptions {
  std::string model;
  std::string output;
  std::string stage = "final";
  std::string backend = "auto";
  std::vector<std::string> shapes;
  std::vector<std::string> inputs;
  std::vector<std::string> plugins;
} g_viz;

int fail(const Status& s) {
  std::fprintf(stderr, "frame viz: %s\n", s.message().c_str());
  return kExitError;
}

// The graph to draw, as imported: with --input, the specialization a session compiles for
// those values and shapes (ADR 0006; other inputs get random values of their declared or
// --shape shape); otherwise the model with its --shape dims.
Result<ir::Graph> load_graph(const VizOptions& o, const std::map<std::string, Shape>& shapes,
                             const std::vector<std::string>& backends) {
  onnx::LoadOptions lo;
  lo.input_shapes = shapes;
  if (!o.inputs.empty()) {
    FRAME_ASSIGN_OR_RETURN(auto files, parse_inputs(o.inputs));
    FRAME_ASSIGN_OR_RETURN(runtime::TensorMap given, read_input_files(files));
    runtime::SessionOptions so;
    so.compile.backends = backends;
    Result<runtime::Session> session = [&] {
      Progress p("loading " + o.model);
      return onnx::open_session(o.model, so);
    }();
    FRAME_RETURN_IF_ERROR(session.status());
    FRAME_RETURN_IF_ERROR(complete_inputs(*session, shapes, given).status());
    const std::vector<std::string>& sdi = session->shape_determining_inputs();
    lo.input_shapes.clear();
    for (const auto& [name, t] : given) {
      if (std::find(sdi.begin(), sdi.end(), name) != sdi.end()) {
        lo.constant_inputs[name] = t;
      } else {
        lo.input_shapes[name] = t.shape();
      }
    }
  }
  Progress p("loading " + o.model);
  return onnx::load(o.model, lo);
}

int run_viz() {
  const VizOptions& o = g_viz;
  if (Status s = load_plugins(o.plugins); !s.is_ok()) return fail(s);
  // Checked by the option validators; repeated here for the format value.
  Result<viz::Format> format = viz::format_for(o.output);
  if (!format.is_ok()) {
    std::fprintf(stderr, "frame viz: %s\n", format.status().message().c_str());
    return kExitUsage;
  }
  if (!viz::have_graphviz()) return fail(viz::render({}, *format, o.output));
  // Bad option values are usage errors (exit 2, docs/cli.md).
  Result<std::map<std::string, Shape>> shapes = parse_shapes(o.shapes);
  if (!shapes.is_ok()) return usage_error("viz", shapes.status());
  Result<std::vector<std::string>> backends = backends_for(o.backend);
  if (!backends.is_ok()) return usage_error("viz", backends.status());
  if (Result<std::map<std::string, std::string>> files = parse_inputs(o.inputs); !files.is_ok()) {
    return usage_error("viz", files.status());
  }
  Result<ir::Graph> graph = load_graph(o, *shapes, *backends);
  if (!graph.is_ok()) {
    // A shape function rejected a non-constant shape input (ARCH-044): say what to pass first.
    if (o.inputs.empty() &&
        graph.status().message().find("must be a constant") != std::string::npos) {
      return fail(Status(graph.status().code(),
                         "the model has shape-determining inputs (their values decide output "
                         "shapes): pass their values with --input NAME=FILE.npy to draw the "
                         "specialization a session compiles for them (ADR 0006)\n  " +
                             graph.status().message()));
    }
    return fail(graph.status());
  }
  Result<viz::StagedGraph> staged = [&] {
    Progress p("running the pipeline to stage " + o.stage);
    return viz::run_to_stage(std::move(*graph), o.stage, *backends);
  }();
  if (!staged.is_ok()) return fail(staged.status());
  const viz::DrawnGraph drawing = viz::build_drawing(*staged, o.model, *backends);
  {
    Progress p("drawing " + o.output);
    if (Status s = viz::render(drawing, *format, o.output); !s.is_ok()) return fail(s);
  }
  size_t ops = 0;
  for (const viz::DrawnNode& n : drawing.nodes) ops += n.kind == viz::DrawnNode::Kind::kOp;
  std::printf("wrote %s (stage %s: %zu op nodes, %zu fused groups, %zu fallbacks)\n",
              o.output.c_str(), o.stage.c_str(), ops, drawing.clusters.size(), drawing.fallbacks);
  return 0;
}

CommandRegistration reg{Command{
    [](CLI::App& app) {
      CLI::App* sub = app.add_subcommand(
          "viz", "Draw a model's graph after a pass (Graphviz: .svg, .png or .dot)");
      sub->add_option("model", g_viz.model, "ONNX model file")->required();
      sub->add_option("-o,--output", g_viz.output,
                      "Picture to write; the extension picks the format (.svg, .png, .dot)")
          ->required()
          ->check(CLI::Validator(
              [](std::string& v) -> std::string {
                Result<viz::Format> f = viz::format_for(v);
                return f.is_ok() ? std::string() : f.status().message();
              },
              "FILE.svg|png|dot"));
      const std::vector<std::string> stages = viz::stage_names();
      sub->add_option("--stage", g_viz.stage,
                      fmt::format("Draw the graph after this stage: {} (default final = the "
                                  "compiled graph)",
                                  fmt::join(stages, ", ")))
          ->check(CLI::Validator(
              [stages](std::string& v) -> std::string {
                if (std::find(stages.begin(), stages.end(), v) != stages.end()) return {};
                return fmt::format("unknown stage '{}' (stages: {})", v, fmt::join(stages, ", "));
              },
              "PASS"));
      add_backend_options(sub, g_viz.backend, g_viz.plugins);
      sub->add_option("--shape", g_viz.shapes, "NAME=d0,d1,... concrete shape of a dynamic input");
      sub->add_option("--input", g_viz.inputs,
                      "NAME=FILE.npy: draw the specialization for this input's value and "
                      "shape (ADR 0006); other inputs get random values");
      return sub;
    },
    run_viz}};

}  // namespace
}  // namespace frame::cli
