#!/usr/bin/env python3
"""`frame serve` against in-process runs (docs/serving.md, "Load and latency"; issue targets in
benchmarks/README.md): one run on this machine, loopback, the load generator's clients on the
same cores as the server (so the server's own time per request is reported too).

  /usr/bin/python3 benchmarks/serve_bench.py [--build build] [--rounds 2] [--quick]

Cells:
  overhead   bundled small CNN (f32[1,3,32,32]), 1 client: in-process Session::run time vs the
             server's own time per REST request (binary and JSON; Frame-Server-Time-Us) and
             the client latency over REST binary, REST JSON and gRPC.
  resnet18   torchvision ResNet-18 (random weights) f32[1,3,224,224], binary data, 16 clients:
             server throughput vs in-process throughput at the same thread count, for two
             configs: the default (1 instance on all cores) against 1 in-process caller on all
             cores, and `"instances": <cores>, "threads": 1` against <cores> in-process
             callers of 1 thread each.
  batching   an MLP (784-512-512-10) and a BERT-style encoder (d 64, 2 layers, seq 32) at 16
             clients, 1 row per request: throughput with dynamic batching (max_batch_size 16)
             vs without.
Every response is checked against an in-process run (batched cells within 1e-4).
Writes benchmarks/.work/serve/SERVE.md and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORK = os.path.join(HERE, ".work", "serve")


def log(msg):
    print("[serve_bench] " + msg, flush=True)


def export_models(out):
    """ResNet-18, the MLP and the BERT-style encoder with a dynamic batch dim; inputs as .npy."""
    import torch
    import torchvision
    from torch import nn
    sys.path.insert(0, HERE)
    import shape_stream  # noqa: E402  (the BERT-style encoder of the varying-shapes benchmark)
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    done = os.path.join(out, "stamp")
    if os.path.exists(done):
        return
    specs = []
    resnet = torchvision.models.resnet18(weights=None).eval()
    specs.append(("resnet18", resnet, torch.randn(1, 3, 224, 224), "input", "logits"))
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                        nn.Linear(512, 10)).eval()
    specs.append(("mlp", mlp, torch.randn(1, 784), "input", "logits"))
    bert, _, _, _, _, _ = shape_stream.build_model("bert")
    specs.append(("bert", bert, torch.randint(0, 1000, (1, 32)), "input_ids", "hidden"))
    for name, model, example, i, o in specs:
        torch.onnx.export(model, (example,), os.path.join(out, name + ".onnx"), opset_version=17,
                          input_names=[i], output_names=[o],
                          dynamic_axes={i: {0: "batch"}, o: {0: "batch"}})
        np.save(os.path.join(out, name + ".npy"), example.numpy())
        log("exported " + name)
    open(done, "w").write("ok")


class Server:
    def __init__(self, frame, repo):
        self.proc = subprocess.Popen([frame, "serve", "--model-repository", repo, "--http-port",
                                      "0", "--grpc-port", "0"], stdout=subprocess.PIPE,
                                     text=True)
        self.http = self.grpc = None
        for line in self.proc.stdout:
            m = re.match(r"frame serve: (HTTP|gRPC) listening on [^:]+:(\d+)", line)
            if m and m.group(1) == "HTTP":
                self.http = int(m.group(2))
            elif m:
                self.grpc = int(m.group(2))
            if line.startswith("frame serve: ready"):
                break

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


def load(build, *args):
    p = subprocess.run([os.path.join(build, "frame_serve_load"), *args], capture_output=True,
                       text=True, timeout=1200)
    line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    if not line:
        raise RuntimeError(p.stdout + p.stderr)
    r = json.loads(line[-1][7:])
    if r["errors"] or r["mismatches"]:
        raise RuntimeError("load failed: %s" % r)
    return r


def make_repo(root, models):
    """models: name -> (onnx path, config dict)."""
    for name, (path, config) in models.items():
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        dst = os.path.join(d, "model.onnx")
        if not os.path.exists(dst):
            os.symlink(os.path.abspath(path), dst)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(config, f)
    return root


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="fewer requests (a smoke run)")
    a = ap.parse_args()
    frame = os.path.join(a.build, "frame")
    n = 50 if a.quick else 400
    models = os.path.join(WORK, "models")
    export_models(models)
    cnn = os.path.join(ROOT, "models", "small_cnn.onnx")
    cnn_in = os.path.join(ROOT, "models", "small_cnn.input.npy")
    repo = make_repo(os.path.join(WORK, "repo"), {
        "small_cnn": (cnn, {}),
        "resnet18": (os.path.join(models, "resnet18.onnx"), {}),
        "resnet18_1t": (os.path.join(models, "resnet18.onnx"),
                        {"instances": os.cpu_count(), "threads": 1}),
        "mlp": (os.path.join(models, "mlp.onnx"), {}),
        "mlp_batched": (os.path.join(models, "mlp.onnx"),
                        {"max_batch_size": 16, "max_queue_delay_us": 1000}),
        "bert": (os.path.join(models, "bert.onnx"), {}),
        "bert_batched": (os.path.join(models, "bert.onnx"),
                         {"max_batch_size": 16, "max_queue_delay_us": 1000}),
    })
    rows = []
    for rnd in range(a.rounds):
        s = Server(frame, repo)
        try:
            url, grpc = "http://127.0.0.1:%d" % s.http, "127.0.0.1:%d" % s.grpc
            common = ["--model", "small_cnn", "--input", "input=" + cnn_in, "--check", cnn,
                      "--clients", "1", "--requests", str(n * 2)]
            inproc = load(a.build, "--in-process", *common)
            binary = load(a.build, "--url", url, *common)
            js = load(a.build, "--url", url, "--encoding", "json", *common)
            g = load(a.build, "--grpc", grpc, *common)
            base = inproc["latency_us"]["p50"]
            rows.append(("overhead", rnd, {
                "in-process run p50 us": base,
                "REST binary: server time p50 - run": binary["server_us"]["p50"] - base,
                "REST JSON: server time p50 - run": js["server_us"]["p50"] - base,
                "REST binary: client p50 - run": binary["latency_us"]["p50"] - base,
                "REST JSON: client p50 - run": js["latency_us"]["p50"] - base,
                "gRPC: server time p50 - run": g["server_us"]["p50"] - base,
                "gRPC: client p50 - run": g["latency_us"]["p50"] - base}))
            rin = os.path.join(models, "resnet18.npy")
            rmod = os.path.join(models, "resnet18.onnx")
            # The server's first run of a shape is the first compile tier (runtime
            # SessionOptions.tiered_compile), a few ulps from the full compile the check uses.
            common = ["--input", "input=" + rin, "--check", rmod, "--variants", "4", "--rtol",
                      "1e-4", "--atol", "1e-5"]
            cores = str(os.cpu_count())
            ip = load(a.build, "--in-process", "--model", "resnet18", *common, "--clients", "1",
                      "--requests", str(n // 4))
            sv = load(a.build, "--url", url, "--model", "resnet18", *common, "--clients", "16",
                      "--requests", str(n // 16))
            ip1 = load(a.build, "--in-process", "--model", "resnet18", *common, "--clients",
                       cores, "--threads", "1", "--requests", str(n // 4 // int(cores)))
            sv1 = load(a.build, "--url", url, "--model", "resnet18_1t", *common, "--clients",
                       "16", "--requests", str(n // 16))
            rows.append(("resnet18", rnd, {
                "in-process req/s (1 caller, all cores)": ip["throughput_rps"],
                "served req/s (16 clients, binary; 1 instance, all cores)": sv["throughput_rps"],
                "ratio": sv["throughput_rps"] / ip["throughput_rps"],
                "server time p50 us": sv["server_us"]["p50"],
                "client p99 us": sv["latency_us"]["p99"],
                "in-process req/s (%s callers, 1 thread each)" % cores: ip1["throughput_rps"],
                "served req/s (16 clients; %s instances, 1 thread each)" % cores:
                    sv1["throughput_rps"],
                "ratio (1 thread each)": sv1["throughput_rps"] / ip1["throughput_rps"],
                "client p99 us (1 thread each)": sv1["latency_us"]["p99"]}))
            for name, inp in [("mlp", "input"), ("bert", "input_ids")]:
                common = ["--input", "%s=%s" % (inp, os.path.join(models, name + ".npy")),
                          "--check", os.path.join(models, name + ".onnx"), "--clients", "16",
                          "--requests", str(n), "--rtol", "1e-4", "--atol", "1e-4"]
                plain = load(a.build, "--url", url, "--model", name, *common)
                batched = load(a.build, "--url", url, "--model", name + "_batched", *common)
                rows.append(("batching " + name, rnd, {
                    "req/s without": plain["throughput_rps"],
                    "req/s with": batched["throughput_rps"],
                    "ratio": batched["throughput_rps"] / plain["throughput_rps"],
                    "p99 us without": plain["latency_us"]["p99"],
                    "p99 us with": batched["latency_us"]["p99"]}))
        finally:
            s.stop()
    lines = ["# frame serve against in-process runs", "",
             "One run of benchmarks/serve_bench.py (%d rounds), loopback, clients on the same "
             "cores; %s." % (a.rounds, time.strftime("%Y-%m-%d")), ""]
    for cell in dict.fromkeys(r[0] for r in rows):
        lines.append("## " + cell)
        lines.append("")
        keys = list(next(r[2] for r in rows if r[0] == cell).keys())
        lines.append("| round | " + " | ".join(keys) + " |")
        lines.append("|---" * (len(keys) + 1) + "|")
        for c, rnd, v in rows:
            if c == cell:
                lines.append("| %d | " % rnd + " | ".join("%.3g" % v[k] for k in keys) + " |")
        lines.append("")
    os.makedirs(WORK, exist_ok=True)
    text = "\n".join(lines)
    open(os.path.join(WORK, "SERVE.md"), "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
