// Profile: per-node times summed over runs, merged under a lock at the end of each run, and
// their JSON / Chrome trace form (docs/architecture/execution-model.md "Profiling").

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "frame/runtime/compile.h"

namespace frame::runtime {

Profile::Profile() : origin_(std::chrono::steady_clock::now()) {}

Profile::Profile(const Profile& other) {
  std::lock_guard lock(other.mu_);
  nodes = other.nodes;
  events = other.events;
  runs = other.runs;
  run_ns = other.run_ns;
  origin_ = other.origin_;
  threads_ = other.threads_;
  layout_ = other.layout_;
  rows_ = other.rows_;
}

Profile& Profile::operator=(const Profile& other) {
  if (this == &other) return *this;
  Profile copy(other);
  std::lock_guard lock(mu_);
  nodes = std::move(copy.nodes);
  events = std::move(copy.events);
  runs = copy.runs;
  run_ns = copy.run_ns;
  origin_ = copy.origin_;
  threads_ = std::move(copy.threads_);
  layout_ = copy.layout_;
  rows_ = std::move(copy.rows_);
  return *this;
}

std::vector<size_t> Profile::by_time() const {
  std::lock_guard lock(mu_);
  std::vector<size_t> idx(nodes.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::stable_sort(idx.begin(), idx.end(),
                   [&](size_t a, size_t b) { return nodes[a].total_ns > nodes[b].total_ns; });
  return idx;
}

void Profile::clear() {
  std::lock_guard lock(mu_);
  nodes.clear();
  events.clear();
  runs = 0;
  run_ns = 0;
  threads_.clear();
  layout_ = nullptr;
  rows_.clear();
}

namespace {

std::string row_key(const NodeProfile& n) {
  return n.node + '\x1f' + n.op + '\x1f' + n.backend + '\x1f' + n.path;
}

}  // namespace

size_t Profile::row_for(const NodeProfile& step) {
  if (rows_.empty()) {
    for (size_t i = 0; i < nodes.size(); ++i) rows_.emplace(row_key(nodes[i]), i);
  }
  auto [it, added] = rows_.emplace(row_key(step), nodes.size());
  if (added) {
    nodes.push_back(step);
    nodes.back().total_ns = nodes.back().calls = 0;
  }
  return it->second;
}

int Profile::thread_id() {
  const std::thread::id self = std::this_thread::get_id();
  auto it = std::find(threads_.begin(), threads_.end(), self);
  const int tid = static_cast<int>(it - threads_.begin());
  if (it == threads_.end()) threads_.push_back(self);
  return tid;
}

void Profile::add_call(size_t row, int64_t start_ns, int64_t dur_ns, int tid) {
  nodes[row].total_ns += dur_ns;
  ++nodes[row].calls;
  if (events.size() < kMaxTraceEvents) events.push_back(TraceEvent{row, start_ns, dur_ns, tid});
}

void Profile::add_step(const NodeProfile& step, std::chrono::steady_clock::time_point start,
                       int64_t dur_ns) {
  std::lock_guard lock(mu_);
  const size_t row = row_for(step);
  add_call(row, std::chrono::duration_cast<std::chrono::nanoseconds>(start - origin_).count(),
           dur_ns, thread_id());
}

void Profile::add_run(int64_t run_time_ns) {
  std::lock_guard lock(mu_);
  ++runs;
  run_ns += run_time_ns;
}

void Profile::merge_steps(const Profile& other) {
  if (&other == this) return;
  Profile copy(other);
  std::lock_guard lock(mu_);
  const int64_t shift =
      std::chrono::duration_cast<std::chrono::nanoseconds>(copy.origin_ - origin_).count();
  std::vector<int> tids;
  for (size_t t = 0; t < copy.threads_.size(); ++t) {
    auto it = std::find(threads_.begin(), threads_.end(), copy.threads_[t]);
    tids.push_back(static_cast<int>(it - threads_.begin()));
    if (it == threads_.end()) threads_.push_back(copy.threads_[t]);
  }
  std::vector<size_t> rows;
  for (const NodeProfile& n : copy.nodes) rows.push_back(row_for(n));
  for (size_t i = 0; i < copy.nodes.size(); ++i) {
    nodes[rows[i]].total_ns += copy.nodes[i].total_ns;
    nodes[rows[i]].calls += copy.nodes[i].calls;
  }
  for (const TraceEvent& e : copy.events) {
    if (events.size() >= kMaxTraceEvents) break;
    const int tid =
        static_cast<size_t>(e.thread) < tids.size() ? tids[static_cast<size_t>(e.thread)] : 0;
    events.push_back(TraceEvent{rows[e.node], e.start_ns + shift, e.dur_ns, tid});
  }
}

void Profile::merge_run(const std::vector<NodeProfile>& layout,
                        const std::vector<int64_t>& start_ns, const std::vector<int64_t>& dur_ns,
                        int64_t run_time_ns) {
  std::lock_guard lock(mu_);
  if (nodes.empty()) {
    nodes = layout;
    for (NodeProfile& n : nodes) n.total_ns = n.calls = 0;
    layout_ = &layout;
  }
  ++runs;
  run_ns += run_time_ns;
  if (dur_ns.size() != layout.size() || start_ns.size() != layout.size()) return;
  const int tid = thread_id();
  const int64_t origin =
      std::chrono::duration_cast<std::chrono::nanoseconds>(origin_.time_since_epoch()).count();
  // The first executable's steps are the first rows, in its order; another executable's
  // (another specialization, another stage) add to the rows of the same node, op, backend and
  // path, appending the ones not seen yet.
  const bool same = &layout == layout_ && layout.size() <= nodes.size();
  for (size_t s = 0; s < layout.size(); ++s) {
    const size_t row = same ? s : row_for(layout[s]);
    add_call(row, start_ns[s] - origin, dur_ns[s], tid);
  }
}

std::string Profile::to_json() const {
  std::lock_guard lock(mu_);
  nlohmann::ordered_json j;
  nlohmann::ordered_json trace = nlohmann::ordered_json::array();
  for (const TraceEvent& e : events) {
    const NodeProfile& n = nodes[e.node];
    trace.push_back({{"name", n.node},
                     {"cat", n.op},
                     {"ph", "X"},
                     {"ts", static_cast<double>(e.start_ns) / 1e3},
                     {"dur", static_cast<double>(e.dur_ns) / 1e3},
                     {"pid", 1},
                     {"tid", e.thread},
                     {"args", {{"op", n.op}, {"backend", n.backend}, {"path", n.path}}}});
  }
  j["traceEvents"] = std::move(trace);
  j["displayTimeUnit"] = "ms";
  j["runs"] = runs;
  j["run_ms"] = static_cast<double>(run_ns) / 1e6;
  int64_t node_ns = 0;
  for (const NodeProfile& n : nodes) node_ns += n.total_ns;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  std::vector<size_t> order(nodes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return nodes[a].total_ns > nodes[b].total_ns; });
  for (size_t i : order) {
    const NodeProfile& n = nodes[i];
    list.push_back(
        {{"node", n.node},
         {"op", n.op},
         {"backend", n.backend},
         {"path", n.path},
         {"inputs", n.input_types},
         {"outputs", n.output_types},
         {"fused_ops", n.fused_ops},
         {"ms", static_cast<double>(n.total_ns) / 1e6},
         {"percent",
          run_ns > 0 ? 100.0 * static_cast<double>(n.total_ns) / static_cast<double>(run_ns) : 0.0},
         {"calls", n.calls}});
  }
  j["nodes_ms"] = static_cast<double>(node_ns) / 1e6;
  j["nodes"] = std::move(list);
  return j.dump(1);
}

}  // namespace frame::runtime
