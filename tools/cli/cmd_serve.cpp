// `frame serve --model-repository DIR`: the models of DIR over the Open Inference Protocol,
// REST and gRPC (docs/serving.md). Runs until SIGTERM or SIGINT, then stops accepting, lets
// in-flight requests finish within --exit-timeout and exits 0.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include "commands.h"
#include "frame/serve/server.h"
#include "model_util.h"

namespace frame::cli {
namespace {

struct ServeCliOptions {
  serve::ServerOptions server;
  int exit_timeout_s = 30;
  std::vector<std::string> plugins;
} g_serve;

int run_serve() {
  if (Status s = load_plugins(g_serve.plugins); !s.is_ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  serve::ServerOptions options = g_serve.server;
  if (options.bearer_token.empty()) {
    if (const char* t = std::getenv("FRAME_SERVE_TOKEN")) options.bearer_token = t;
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    std::fprintf(stderr, "error: --tls-cert and --tls-key go together\n");
    return 2;
  }
  // Every thread the server starts inherits this mask, so SIGTERM and SIGINT reach only the
  // sigwait below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A client that goes away mid-response must not kill the server.
  std::signal(SIGPIPE, SIG_IGN);

  Result<std::unique_ptr<serve::Server>> server = serve::Server::start(options);
  if (!server.is_ok()) {
    std::fprintf(stderr, "error: %s\n", server.status().message().c_str());
    return 1;
  }
  if ((*server)->http_port() >= 0) {
    std::printf("frame serve: HTTP listening on %s:%d%s\n", options.host.c_str(),
                (*server)->http_port(), options.tls_cert_file.empty() ? "" : " (TLS)");
  }
  if ((*server)->grpc_port() >= 0) {
    std::printf("frame serve: gRPC listening on %s:%d%s\n", options.host.c_str(),
                (*server)->grpc_port(), options.tls_cert_file.empty() ? "" : " (TLS)");
  }
  std::printf("frame serve: ready\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::printf("frame serve: %s received, finishing in-flight requests\n",
              sig == SIGTERM ? "SIGTERM" : "SIGINT");
  std::fflush(stdout);
  // stop() waits for in-flight requests up to the exit timeout, then closes the transports;
  // a client that holds a connection open without finishing a request (a slow or stalled
  // sender) would keep cpp-httplib's worker past it, so the process ends at the deadline
  // whatever is left.
  auto stopping = std::async(std::launch::async, [&] {
    const bool clean = (*server)->stop(std::chrono::seconds(g_serve.exit_timeout_s));
    server->reset();
    return clean;
  });
  if (stopping.wait_for(std::chrono::seconds(g_serve.exit_timeout_s) + std::chrono::seconds(1)) !=
      std::future_status::ready) {
    std::printf(
        "frame serve: stopped (connections still open after --exit-timeout %d s were "
        "dropped)\n",
        g_serve.exit_timeout_s);
    std::fflush(stdout);
    std::_Exit(0);
  }
  if (!stopping.get()) {
    std::fprintf(stderr, "frame serve: requests still running after --exit-timeout %d s\n",
                 g_serve.exit_timeout_s);
  }
  std::printf("frame serve: stopped\n");
  std::fflush(stdout);
  return 0;
}

CommandRegistration reg{Command{
    [](CLI::App& app) {
      CLI::App* sub = app.add_subcommand(
          "serve", "Serve a model repository over the Open Inference Protocol (REST and gRPC)");
      serve::ServerOptions& o = g_serve.server;
      sub->add_option("--model-repository", o.model_repository,
                      "Directory with one subdirectory per model (docs/serving.md)")
          ->required();
      sub->add_option("--host", o.host, "Address to listen on (default 127.0.0.1)");
      sub->add_option("--http-port", o.http_port,
                      "REST port (default 8000; 0: a free port, printed; -1: no REST)")
          ->check(int_in_range(-1, 65535));
      sub->add_option("--grpc-port", o.grpc_port,
                      "gRPC port (default 8001; 0: a free port, printed; -1: no gRPC)")
          ->check(int_in_range(-1, 65535));
      sub->add_option("--http-threads", o.http_threads,
                      "REST worker threads: concurrent keep-alive connections (default 64)")
          ->check(int_in_range(1, 4096));
      sub->add_option("--max-request-bytes", o.max_request_bytes,
                      "Largest REST body or gRPC message, bytes (default 268435456)")
          ->check(CLI::Range(size_t{1024}, size_t{1} << 40));
      sub->add_option("--tls-cert", o.tls_cert_file, "PEM certificate chain: TLS on both ports");
      sub->add_option("--tls-key", o.tls_key_file, "PEM private key of --tls-cert");
      sub->add_option("--bearer-token", o.bearer_token,
                      "Require 'Authorization: Bearer TOKEN' (also FRAME_SERVE_TOKEN)");
      sub->add_option("--read-timeout", o.read_timeout_s,
                      "Seconds a connection may idle or take to send a request (default 30)")
          ->check(int_in_range(1, 3600));
      sub->add_flag("--access-log", o.access_log,
                    "One JSON line per request (REST and gRPC) on stderr");
      sub->add_option("--exit-timeout", g_serve.exit_timeout_s,
                      "Seconds to finish in-flight requests after SIGTERM/SIGINT (default 30)")
          ->check(int_in_range(0, 3600));
      sub->add_option("--plugin", g_serve.plugins,
                      "Shared library with custom ops to load first (repeatable)");
      return sub;
    },
    run_serve}};

}  // namespace
}  // namespace frame::cli
