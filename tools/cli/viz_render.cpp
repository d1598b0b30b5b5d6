// `frame viz`: drawing a DrawnGraph with the Graphviz libraries (cgraph builds the graph, gvc
// lays it out with `dot` and renders it). Built only when CMake found libgvc and libcgraph
// (FRAME_HAVE_GRAPHVIZ); otherwise render() says so.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model_util.h"
#include "viz_graph.h"

#ifdef FRAME_HAVE_GRAPHVIZ
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#endif

namespace frame::cli::viz {

#ifdef FRAME_HAVE_GRAPHVIZ
namespace {

// A label in Graphviz's escString form: lines centred ("\n"), backslashes kept literal.
std::string label_text(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (k > 0) out += "\\n";
    for (char c : lines[k]) {
      if (c == '\\') out += '\\';
      out += c;
    }
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The title lines and the legend as one HTML-like graph label (no extra nodes or clusters).
std::string legend_html(const DrawnGraph& d) {
  std::string h = R"(<table border="0" cellborder="0" cellspacing="1" cellpadding="1">)";
  for (size_t k = 0; k < d.title.size(); ++k) {
    h += fmt::format(R"(<tr><td align="left">{}{}{}</td></tr>)", k == 0 ? "<b>" : "",
                     html_escape(d.title[k]), k == 0 ? "</b>" : "");
  }
  // Swatches as coloured squares in the text: cells of their own would stretch to the
  // title's width.
  for (const auto& [name, colour] : d.legend) {
    h += fmt::format(
        R"(<tr><td align="left"><font color="{}" point-size="16">&#9632;</font> {}</td></tr>)",
        colour, html_escape(name));
  }
  h += R"(<tr><td align="left"><font color="red" point-size="16">&#9633;</font> fallback (red )"
       R"(border)</td></tr>)";
  h += "</table>";
  return h;
}

// cgraph's setters take char* for historical reasons; they copy the strings.
void set(void* obj, const char* name, const std::string& value) {
  agsafeset(obj, const_cast<char*>(name), const_cast<char*>(value.c_str()), const_cast<char*>(""));
}

struct GvcDeleter {
  void operator()(GVC_t* c) const { gvFreeContext(c); }
};
struct GraphDeleter {
  void operator()(Agraph_t* g) const { agclose(g); }
};

}  // namespace

bool have_graphviz() { return true; }

Status render(const DrawnGraph& d, Format format, const std::string& path) {
  std::unique_ptr<GVC_t, GvcDeleter> gvc(gvContext());
  if (!gvc) return internal_error("Graphviz: cannot create a context");
  std::unique_ptr<Agraph_t, GraphDeleter> g(
      agopen(const_cast<char*>("frame"), Agdirected, nullptr));
  if (!g) return internal_error("Graphviz: cannot create a graph");
  Agraph_t* root = g.get();
  set(root, "fontname", "Helvetica");
  set(root, "fontsize", "11");
  set(root, "labelloc", "t");
  set(root, "labeljust", "l");
  // An HTML-like string: agstrdup_html marks it, agsafeset keeps the mark.
  char* legend = agstrdup_html(root, const_cast<char*>(legend_html(d).c_str()));
  agsafeset(root, const_cast<char*>("label"), legend, const_cast<char*>(""));
  agstrfree(root, legend);
  agattr(root, AGNODE, const_cast<char*>("fontname"), const_cast<char*>("Helvetica"));
  agattr(root, AGNODE, const_cast<char*>("fontsize"), const_cast<char*>("10"));
  agattr(root, AGEDGE, const_cast<char*>("fontname"), const_cast<char*>("Helvetica"));
  agattr(root, AGEDGE, const_cast<char*>("fontsize"), const_cast<char*>("8"));

  std::vector<Agraph_t*> clusters;
  for (const DrawnCluster& c : d.clusters) {
    Agraph_t* sg = agsubg(root, const_cast<char*>(c.id.c_str()), 1);
    set(sg, "label", label_text(c.lines));
    set(sg, "style", "filled,rounded");
    set(sg, "fillcolor", c.fill + "40");  // the backend's colour, lighter than its nodes
    set(sg, "color", c.fallback ? "red" : "#555555");
    set(sg, "penwidth", c.fallback ? "3" : "1");
    if (!c.tooltip.empty()) set(sg, "tooltip", c.tooltip);
    clusters.push_back(sg);
  }
  std::map<std::string, Agnode_t*> nodes;
  for (const DrawnNode& n : d.nodes) {
    Agraph_t* owner = n.cluster >= 0 ? clusters[static_cast<size_t>(n.cluster)] : root;
    Agnode_t* an = agnode(owner, const_cast<char*>(n.id.c_str()), 1);
    nodes[n.id] = an;
    set(an, "label", label_text(n.lines));
    set(an, "fillcolor", n.fill);
    switch (n.kind) {
      case DrawnNode::Kind::kInput:
        set(an, "shape", "invhouse");
        set(an, "style", "filled");
        break;
      case DrawnNode::Kind::kOutput:
        set(an, "shape", "house");
        set(an, "style", "filled");
        break;
      case DrawnNode::Kind::kOp:
        set(an, "shape", "box");
        set(an, "style", "filled,rounded");
        break;
    }
    if (n.fallback) {
      set(an, "color", "red");
      set(an, "penwidth", "3");
    }
    if (!n.tooltip.empty()) set(an, "tooltip", n.tooltip);
  }
  for (const DrawnEdge& e : d.edges) {
    auto from = nodes.find(e.from);
    auto to = nodes.find(e.to);
    if (from == nodes.end() || to == nodes.end()) {
      return internal_error("viz: edge {} -> {} names a node not drawn", e.from, e.to);
    }
    Agedge_t* ae = agedge(root, from->second, to->second, nullptr, 1);
    set(ae, "label", label_text({e.label}));
  }

  // Rendered to memory, then written by us: Graphviz's own file output leaves a truncated
  // file on a write error and, for svg/png, calls exit(1) inside gvwrite.
  std::string data;
  if (format == Format::kDot) {
    char* buf = nullptr;
    size_t len = 0;
    std::FILE* mem = open_memstream(&buf, &len);
    if (mem == nullptr) return internal_error("viz: open_memstream: {}", std::strerror(errno));
    const int rc = agwrite(root, mem);
    const bool closed = std::fclose(mem) == 0;
    if (buf != nullptr) data.assign(buf, len);
    std::free(buf);
    if (rc != 0 || !closed) return internal_error("Graphviz: cannot write the graph as dot");
  } else if (gvLayout(gvc.get(), root, "dot") != 0) {
    return unimplemented(
        "Graphviz could not lay out the graph with 'dot' (is the dot layout plugin of libgvc "
        "installed?)");
  } else {
    const char* renderer = format == Format::kSvg ? "svg" : "png";
    char* buf = nullptr;
    unsigned int len = 0;
    const int rc = gvRenderData(gvc.get(), root, renderer, &buf, &len);
    if (rc == 0 && buf != nullptr) data.assign(buf, len);
    if (buf != nullptr) gvFreeRenderData(buf);
    gvFreeLayout(gvc.get(), root);
    if (rc != 0) {
      return unimplemented("-o {}: Graphviz has no '{}' renderer (plugin missing)", path, renderer);
    }
  }
  return write_file_replacing(path, data);
}

#else

bool have_graphviz() { return false; }

Status render(const DrawnGraph&, Format, const std::string&) {
  return unimplemented(
      "this frame was built without Graphviz (install libgraphviz-dev, e.g. "
      "scripts/bootstrap.sh --main, and rebuild)");
}

#endif

}  // namespace frame::cli::viz
