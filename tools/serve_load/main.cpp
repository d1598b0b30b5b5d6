// frame_serve_load: a load generator for `frame serve` (docs/serving.md, "Load and latency").
// N client threads, each on its own keep-alive connection (REST) or channel (gRPC), send M
// inference requests built from .npy inputs; every response is checked against an in-process
// run of the same model (--check), and the run reports throughput, client latency percentiles,
// the server's own time per REST request (the Frame-Server-Time-Us header) and the server's RSS
// at chosen request counts. Prints one `RESULT {json}` line.
//
// Requests cycle through --variants copies of the inputs (float inputs scaled by 1 + k/64), so
// a server that cached one answer would be caught by the check.
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "frame/core/npy.h"
#include "frame/onnx/session.h"
#include "frame/runtime/threads.h"
#include "frame/serve/protocol.h"
#include "grpc_predict_v2.grpc.pb.h"

namespace {

using frame::Tensor;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Options {
  std::string url;
  std::string grpc;
  std::string model;
  std::vector<std::string> inputs;
  std::string encoding = "binary";
  int clients = 16;
  int requests = 500;
  int variants = 8;
  std::string check;
  double rtol = 0;
  double atol = 0;
  int rss_pid = 0;
  std::vector<int64_t> rss_at;
  std::string token;
  bool until_refused = false;
  bool in_process = false;
  int threads = 0;  // compute threads of the --check session (0: all cores)
};

struct Variant {
  std::vector<std::pair<std::string, Tensor>> inputs;
  frame::runtime::TensorMap expected;  // empty without --check
  std::string json_body;
  std::string binary_body;
  size_t binary_header = 0;
  inference::ModelInferRequest grpc;
};

// The resident set of process `pid` in KiB, from /proc/PID/status: {VmRSS, RssAnon}, -1 where a
// field is missing. RssAnon (heap, stacks, arenas) is what a leak grows; VmRSS also counts the
// mapped files (code, the model), whose pages the kernel drops and faults back in at will.
std::pair<int64_t, int64_t> rss_kb(int pid) {
  std::ifstream f(fmt::format("/proc/{}/status", pid));
  std::string line;
  std::pair<int64_t, int64_t> kb{-1, -1};
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) kb.first = std::stoll(line.substr(6));
    if (line.rfind("RssAnon:", 0) == 0) kb.second = std::stoll(line.substr(8));
  }
  return kb;
}

// Element i of `t` as double (16-bit floats widened).
double element(const Tensor& t, int64_t i) { return t.element_as_double(i); }

// Compares one returned output with the in-process result: equal shape, and every element
// within atol + rtol * |expected| (bit-equal floats when both are 0).
bool matches(const Tensor& want, frame::DTypeCode dtype, const std::vector<int64_t>& shape,
             const std::function<double(int64_t)>& got, const Options& o) {
  if (dtype != want.dtype() || shape != want.shape()) return false;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = element(want, i), g = got(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::abs(w - g) > o.atol + o.rtol * std::abs(w)) return false;
  }
  return true;
}

Tensor scaled(const Tensor& t, int k) {
  Tensor c = t.clone();
  const float s = 1.0f + static_cast<float>(k) / 64.0f;
  if (c.dtype() == frame::DTypeCode::kFloat32) {
    for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] *= s;
  } else if (c.dtype() == frame::DTypeCode::kFloat64) {
    for (int64_t i = 0; i < c.numel(); ++i) c.data<double>()[i] *= s;
  }
  return c;
}

void build_bodies(Variant& v, const std::string& model) {
  json doc = {{"inputs", json::array()}};
  json bin = {{"inputs", json::array()}, {"parameters", {{"binary_data_output", true}}}};
  std::string blobs;
  v.grpc.set_model_name(model);
  for (const auto& [name, t] : v.inputs) {
    const std::string dt(frame::serve::datatype_name(t.dtype()));
    json data = json::array();
    for (int64_t i = 0; i < t.numel(); ++i) data.push_back(element(t, i));
    doc["inputs"].push_back(
        {{"name", name}, {"shape", t.shape()}, {"datatype", dt}, {"data", data}});
    bin["inputs"].push_back({{"name", name},
                             {"shape", t.shape()},
                             {"datatype", dt},
                             {"parameters", {{"binary_data_size", t.nbytes()}}}});
    blobs.append(static_cast<const char*>(t.raw_data()), t.nbytes());
    auto* in = v.grpc.add_inputs();
    in->set_name(name);
    in->set_datatype(dt);
    for (int64_t d : t.shape()) in->add_shape(d);
    v.grpc.add_raw_input_contents(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
  }
  v.json_body = doc.dump();
  v.binary_body = bin.dump();
  v.binary_header = v.binary_body.size();
  v.binary_body += blobs;
}

struct Tally {
  std::mutex mu;
  std::vector<double> latency_us;
  std::vector<double> server_us;
  std::atomic<int64_t> done{0};
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> mismatches{0};
  std::atomic<int64_t> ok{0};
  std::atomic<int64_t> unavailable{0};  // 503 / UNAVAILABLE answers
  std::atomic<int64_t> refused{0};      // no answer: the connection failed or was closed
  std::string first_error;
  std::map<std::string, int64_t> kinds;  // errors by transport and code, e.g. "grpc 14"
  void error(const std::string& kind, const std::string& e) {
    ++errors;
    std::lock_guard lock(mu);
    ++kinds[kind];
    if (first_error.empty()) first_error = e;
  }
};

// Checks a REST response body (JSON or binary extension) against the variant's expected outputs.
bool check_rest(const Variant& v, const httplib::Result& res, const Options& o) {
  if (v.expected.empty()) return true;
  const std::string& body = res->body;
  size_t n = body.size();
  if (res->has_header("Inference-Header-Content-Length")) {
    n = std::stoull(res->get_header_value("Inference-Header-Content-Length"));
  }
  json doc = json::parse(body.substr(0, n), nullptr, false);
  if (doc.is_discarded()) return false;
  size_t offset = n;
  for (const json& out : doc["outputs"]) {
    auto it = v.expected.find(out["name"].get<std::string>());
    if (it == v.expected.end()) return false;
    auto dtype = frame::serve::parse_datatype(out["datatype"].get<std::string>());
    if (!dtype.is_ok()) return false;
    const std::vector<int64_t> shape = out["shape"].get<std::vector<int64_t>>();
    if (out.contains("data")) {
      const json& data = out["data"];
      // JSON numbers are decimal: read them as the output's own type before comparing.
      const bool narrow = *dtype != frame::DTypeCode::kFloat64;
      auto value = [&](int64_t i) {
        const double x = data[static_cast<size_t>(i)].get<double>();
        return narrow ? static_cast<double>(static_cast<float>(x)) : x;
      };
      if (!matches(it->second, *dtype, shape, value, o)) {
        return false;
      }
    } else {
      const size_t size = out["parameters"]["binary_data_size"].get<size_t>();
      if (offset + size > body.size() || size != it->second.nbytes()) return false;
      auto got = Tensor::empty(*dtype, shape);
      if (!got.is_ok()) return false;
      std::memcpy(got->raw_data(), body.data() + offset, size);
      offset += size;
      if (!matches(
              it->second, *dtype, shape, [&](int64_t i) { return element(*got, i); }, o)) {
        return false;
      }
    }
  }
  return true;
}

bool check_grpc(const Variant& v, const inference::ModelInferResponse& r, const Options& o) {
  if (v.expected.empty()) return true;
  if (r.outputs_size() != r.raw_output_contents_size()) return false;
  for (int k = 0; k < r.outputs_size(); ++k) {
    auto it = v.expected.find(r.outputs(k).name());
    if (it == v.expected.end()) return false;
    auto dtype = frame::serve::parse_datatype(r.outputs(k).datatype());
    if (!dtype.is_ok()) return false;
    std::vector<int64_t> shape(r.outputs(k).shape().begin(), r.outputs(k).shape().end());
    const std::string& raw = r.raw_output_contents(k);
    auto got = Tensor::empty(*dtype, shape);
    if (!got.is_ok() || raw.size() != got->nbytes()) return false;
    std::memcpy(got->raw_data(), raw.data(), raw.size());
    if (!matches(
            it->second, *dtype, shape, [&](int64_t i) { return element(*got, i); }, o)) {
      return false;
    }
  }
  return true;
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(i), v.end());
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  // The OpenMP wait policy `frame serve` runs with (frame/runtime/threads.h), so --in-process
  // measures what the server's sessions do.
  frame::runtime::use_recommended_wait_policy(argv);
  Options o;
  CLI::App app{"Load generator for frame serve: many clients, every response checked"};
  app.add_option("--url", o.url, "REST base URL, e.g. http://127.0.0.1:8000");
  app.add_option("--grpc", o.grpc, "gRPC address, e.g. 127.0.0.1:8001");
  app.add_option("--model", o.model, "Model name")->required();
  app.add_option("--input", o.inputs, "NAME=FILE.npy (repeatable)")->required();
  app.add_option("--encoding", o.encoding, "REST body: binary or json")
      ->check(CLI::IsMember({"binary", "json"}));
  app.add_option("--clients", o.clients, "Concurrent clients")->check(CLI::Range(1, 1024));
  app.add_option("--requests", o.requests, "Requests per client")->check(CLI::Range(1, 10000000));
  app.add_option("--variants", o.variants, "Distinct inputs cycled")->check(CLI::Range(1, 1024));
  app.add_option("--check", o.check, "ONNX model to compute the expected outputs in process");
  app.add_option("--rtol", o.rtol, "Relative tolerance of the check (0: exact)");
  app.add_option("--atol", o.atol, "Absolute tolerance of the check (0: exact)");
  app.add_option("--rss-pid", o.rss_pid, "Server process whose RSS is sampled");
  app.add_option("--rss-at", o.rss_at, "Request counts at which the RSS is sampled")
      ->delimiter(',');
  app.add_option("--token", o.token, "Bearer token");
  app.add_flag("--until-refused", o.until_refused,
               "A client stops at its first failed connection (a server stopping under load)");
  app.add_flag("--in-process", o.in_process,
               "No server: the clients call the --check model's Session::run directly (the "
               "in-process throughput to compare with)");
  app.add_option("--threads", o.threads,
                 "Compute threads of the --check session, so of --in-process runs (0: all "
                 "cores; with --clients 2 --threads 1, two runs of one thread each, as a "
                 "server with \"instances\": 2, \"threads\": 1)")
      ->check(CLI::Range(0, 1024));
  CLI11_PARSE(app, argc, argv);
  if (o.url.empty() + o.grpc.empty() + !o.in_process != 2 || (o.in_process && o.check.empty())) {
    std::fprintf(stderr, "error: give one of --url, --grpc and --in-process (with --check)\n");
    return 2;
  }

  std::vector<std::pair<std::string, Tensor>> base;
  for (const std::string& spec : o.inputs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "error: --input %s: expected NAME=FILE.npy\n", spec.c_str());
      return 2;
    }
    auto t = frame::read_npy(spec.substr(eq + 1));
    if (!t.is_ok()) {
      std::fprintf(stderr, "error: %s\n", t.status().message().c_str());
      return 2;
    }
    base.emplace_back(spec.substr(0, eq), std::move(t).value());
  }
  std::optional<frame::runtime::Session> reference;
  if (!o.check.empty()) {
    frame::runtime::SessionOptions options;
    options.compile.num_threads = o.threads;
    auto s = frame::onnx::open_session(o.check, options);
    if (!s.is_ok()) {
      std::fprintf(stderr, "error: %s\n", s.status().message().c_str());
      return 2;
    }
    reference = std::move(s).value();
  }
  std::vector<Variant> variants(static_cast<size_t>(o.variants));
  // The expected outputs are computed on a thread that ends before the clients start: a thread
  // that ran a session keeps an OpenMP team, and one more team than cores makes libgomp stop
  // spinning, which would slow the --in-process clients (see src/serve/model.cpp).
  int setup_rc = 0;
  std::thread setup([&] {
    for (int k = 0; k < o.variants && setup_rc == 0; ++k) {
      Variant& v = variants[static_cast<size_t>(k)];
      frame::runtime::TensorMap feed;
      for (const auto& [name, t] : base) {
        v.inputs.emplace_back(name, scaled(t, k));
        feed.emplace(name, v.inputs.back().second);
      }
      if (reference) {
        // The full compile, as a server's recurring shapes run it (a first-seen shape's first
        // tier may differ in the last bits; runtime::SessionOptions::tiered_compile).
        if (auto prepared = reference->prepare(feed); !prepared.is_ok()) {
          std::fprintf(stderr, "error: in-process compile: %s\n",
                       prepared.status().message().c_str());
          setup_rc = 2;
          return;
        }
        auto out = reference->run(feed);
        if (!out.is_ok()) {
          std::fprintf(stderr, "error: in-process run: %s\n", out.status().message().c_str());
          setup_rc = 2;
          return;
        }
        v.expected = std::move(out).value();
      }
      build_bodies(v, o.model);
    }
  });
  setup.join();
  if (setup_rc != 0) return setup_rc;

  Tally tally;
  const int64_t total = int64_t{o.clients} * o.requests;
  std::sort(o.rss_at.begin(), o.rss_at.end());
  std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> rss;
  std::mutex rss_mu;
  auto after_request = [&](int64_t n) {
    if (o.rss_pid <= 0) return;
    if (std::binary_search(o.rss_at.begin(), o.rss_at.end(), n)) {
      std::lock_guard lock(rss_mu);
      rss.emplace_back(n, rss_kb(o.rss_pid));
    }
  };
  const std::string path = fmt::format("/v2/models/{}/infer", o.model);
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      std::vector<double> lat, server;
      lat.reserve(static_cast<size_t>(o.requests));
      std::unique_ptr<httplib::Client> http;
      std::unique_ptr<inference::GRPCInferenceService::Stub> stub;
      if (!o.url.empty()) {
        http = std::make_unique<httplib::Client>(o.url);
        http->set_keep_alive(true);
        http->set_tcp_nodelay(true);
        http->set_read_timeout(120, 0);
        if (!o.token.empty()) http->set_bearer_token_auth(o.token);
      } else if (!o.grpc.empty()) {
        grpc::ChannelArguments args;
        args.SetMaxReceiveMessageSize(-1);
        // One channel per client, as separate client processes would have.
        args.SetInt("frame.client", c);
        stub = inference::GRPCInferenceService::NewStub(
            grpc::CreateCustomChannel(o.grpc, grpc::InsecureChannelCredentials(), args));
      }
      for (int r = 0; r < o.requests; ++r) {
        const Variant& v = variants[static_cast<size_t>((c + r) % o.variants)];
        const Clock::time_point t0 = Clock::now();
        bool ok = false, same = true;
        if (o.in_process) {
          frame::runtime::TensorMap feed;
          for (const auto& [name, t] : v.inputs) feed.emplace(name, t);
          auto out = reference->run(feed);
          if (!out.is_ok()) tally.error("run", out.status().message());
          ok = out.is_ok();
        } else if (http) {
          const bool binary = o.encoding == "binary";
          httplib::Headers headers;
          if (binary) {
            headers.emplace("Inference-Header-Content-Length", std::to_string(v.binary_header));
          }
          auto res = http->Post(path, headers, binary ? v.binary_body : v.json_body,
                                binary ? "application/octet-stream" : "application/json");
          if (!res) {
            tally.error("rest connection",
                        fmt::format("REST: {}", httplib::to_string(res.error())));
            ++tally.refused;
            if (o.until_refused) break;
          } else if (res->status != 200) {
            if (res->status == 503) ++tally.unavailable;
            tally.error(fmt::format("rest {}", res->status),
                        fmt::format("REST {}: {}", res->status, res->body));
          } else {
            ok = true;
            same = check_rest(v, res, o);
            if (res->has_header("Frame-Server-Time-Us")) {
              server.push_back(std::stod(res->get_header_value("Frame-Server-Time-Us")));
            }
          }
        } else {
          grpc::ClientContext ctx;
          if (!o.token.empty()) ctx.AddMetadata("authorization", "Bearer " + o.token);
          inference::ModelInferResponse resp;
          grpc::Status s = stub->ModelInfer(&ctx, v.grpc, &resp);
          if (!s.ok()) {
            tally.error(
                fmt::format("grpc {}", static_cast<int>(s.error_code())),
                fmt::format("gRPC {}: {}", static_cast<int>(s.error_code()), s.error_message()));
            // UNAVAILABLE is both a refused request and a channel that cannot connect.
            if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
              const bool answered = s.error_message().find("shutting down") != std::string::npos ||
                                    s.error_message().find("queue") != std::string::npos;
              ++(answered ? tally.unavailable : tally.refused);
              if (!answered && o.until_refused) break;
            }
            // A call the server had not started when it began to stop is cancelled.
            if (s.error_code() == grpc::StatusCode::CANCELLED) {
              ++tally.refused;
              if (o.until_refused) break;
            }
          } else {
            ok = true;
            same = check_grpc(v, resp, o);
            const auto& trailers = ctx.GetServerTrailingMetadata();
            if (auto it = trailers.find("frame-server-time-us"); it != trailers.end()) {
              server.push_back(std::stod(std::string(it->second.data(), it->second.size())));
            }
          }
        }
        lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        if (ok) ++tally.ok;
        if (ok && !same) ++tally.mismatches;
        after_request(++tally.done);
      }
      std::lock_guard lock(tally.mu);
      tally.latency_us.insert(tally.latency_us.end(), lat.begin(), lat.end());
      tally.server_us.insert(tally.server_us.end(), server.begin(), server.end());
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  json result = {{"requests", total},
                 {"ok", tally.ok.load()},
                 {"errors", tally.errors.load()},
                 {"unavailable", tally.unavailable.load()},
                 {"refused", tally.refused.load()},
                 {"mismatches", tally.mismatches.load()},
                 {"seconds", seconds},
                 {"throughput_rps", static_cast<double>(tally.ok.load()) / seconds},
                 {"latency_us",
                  {{"p50", percentile(tally.latency_us, 0.50)},
                   {"p90", percentile(tally.latency_us, 0.90)},
                   {"p99", percentile(tally.latency_us, 0.99)}}}};
  if (!tally.server_us.empty()) {
    result["server_us"] = {{"p50", percentile(tally.server_us, 0.50)},
                           {"p99", percentile(tally.server_us, 0.99)}};
  }
  if (!rss.empty()) {
    json r = json::object(), anon = json::object();
    for (const auto& [n, kb] : rss) {
      r[std::to_string(n)] = kb.first;
      anon[std::to_string(n)] = kb.second;
    }
    result["rss_kb"] = r;
    result["rss_anon_kb"] = anon;
  }
  if (!tally.first_error.empty()) result["first_error"] = tally.first_error;
  if (!tally.kinds.empty()) result["error_kinds"] = tally.kinds;
  std::printf("RESULT %s\n", result.dump().c_str());
  return tally.errors.load() == 0 && tally.mismatches.load() == 0 ? 0 : 1;
}
