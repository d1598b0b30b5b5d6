#!/usr/bin/python3
"""Varying input shapes: frame's Session against ONNX Runtime (CPU) on streams of inputs.

Usage (from anywhere; run with /usr/bin/python3, which has torch, torchvision, onnx, numpy):
  benchmarks/shape_stream.py [--models bert,wav2vec,deeplab] [--threads 1,2] [--quick]

What a user of a model with dynamic axes sees: a stream of inputs whose shapes change from run
to run, each fed once. frame runs them through `onnx::open_session` + `runtime::Session::run`
(default SessionOptions, num_threads = the thread count), which specializes and compiles the
graph for every shape key it has not seen; ONNX Runtime 1.30 runs the same model with its
dynamic axes in one session. What it does (benchmarks/README.md "shape_stream.py" says more):
 1. builds frame_bench_driver and ort_bench_driver and installs onnxruntime-node 1.30.0 the
    way compare.py does (its helpers, imported);
 2. exports three models with torch 1.13 (opset 14, torch.manual_seed(0), dynamic_axes) into
    benchmarks/.work/streams/ and writes each stream: one .npy per run and a manifest
    (benchmarks/drivers/driver_common.h, --stream):
      bert     token + learned position embedding (vocab 1000, d 64), 2 encoder layers (4
               heads, ff 256); input_ids int64 [batch, seq]; 512 distinct shapes, batch 1-8 x
               seq 1-64, each once, shuffled (fixed seed)
      wav2vec  conv feature extractor (Conv1d 1->64 k10 s5, GroupNorm, GELU, 2x Conv1d 64->64
               k3 s2 + GELU), LayerNorm, 2 encoder layers; waveform f32 [batch, 16000];
               20 random waveforms of batch 1: one shape, different values
      deeplab  torchvision deeplabv3_mobilenet_v3_large (21 classes, no aux head, batch-norm
               statistics calibrated on a fixed random batch); image f32 [1, 3, H, W];
               100 distinct sizes, H and W multiples of 8 in 128..256 (fixed seed)
    --quick cuts every stream to its first 40 runs;
 3. for each model and thread count, one process per engine (the order alternates between
    thread counts) runs the whole stream --passes times (2): the first pass is what a new
    stream costs, the second the steady state once every shape has been seen;
 4. checks the outputs of every K-th run of each pass (K chosen for ~10 checks per pass)
    against PyTorch's, with compare.py's scale-aware tolerance, and writes the report
    (benchmarks/.work/STREAMS.md unless --out): mean ms per run of each pass, frame/ORT,
    frame's compiles and compile time, first-seen-shape vs repeated-shape runs, session open
    vs CreateSession, peak RSS, the load during each section and the output checks.
Exit status: 0 when both engines ran every stream and every checked output agreed, 1
otherwise (the report is written either way), 2 when a prerequisite is missing.
"""

import argparse
import datetime
import glob
import hashlib
import json
import os
import random
import statistics
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import compare  # noqa: E402  (build, ORT install, driver runs, output checks)

ROOT = compare.ROOT
OPSET = 14
ENGINES = ("frame", "ort")
MODELS = ("bert", "wav2vec", "deeplab")
QUICK_RUNS = 40
CHECKS = 10  # outputs checked per pass of a stream


def log(msg):
    print("[shape_stream] " + msg, flush=True)


# ---------------------------------------------------------------------------------------------
# Models (built after torch.manual_seed(0)) and their streams.

def build_model(name):
    """(module in eval mode, example input for the export, input name, output name,
    dynamic axes of the input and of the output)."""
    import torch
    from torch import nn
    torch.manual_seed(0)

    def encoder_layers():
        return nn.ModuleList([nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256,
                                                         batch_first=True) for _ in range(2)])

    if name == "bert":
        class Bert(nn.Module):
            def __init__(self):
                super().__init__()
                self.tok = nn.Embedding(1000, 64)
                self.pos = nn.Embedding(64, 64)
                self.layers = encoder_layers()

            def forward(self, ids):
                pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
                x = self.tok(ids) + self.pos(pos)
                for layer in self.layers:
                    x = layer(x)
                return x

        ids = torch.randint(0, 1000, (2, 16), generator=torch.Generator().manual_seed(1))
        return (Bert().eval(), ids, "input_ids", "hidden", {0: "batch", 1: "seq"},
                {0: "batch", 1: "seq"})
    if name == "wav2vec":
        class Wav2Vec(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = nn.Sequential(
                    nn.Conv1d(1, 64, 10, stride=5), nn.GroupNorm(64, 64), nn.GELU(),
                    nn.Conv1d(64, 64, 3, stride=2), nn.GELU(),
                    nn.Conv1d(64, 64, 3, stride=2), nn.GELU())
                self.norm = nn.LayerNorm(64)
                self.layers = encoder_layers()

            def forward(self, wave):
                x = self.features(wave.unsqueeze(1)).transpose(1, 2)
                x = self.norm(x)
                for layer in self.layers:
                    x = layer(x)
                return x

        wave = torch.randn(1, 16000, generator=torch.Generator().manual_seed(1))
        return Wav2Vec().eval(), wave, "waveform", "hidden", {0: "batch"}, {0: "batch"}
    if name == "deeplab":
        import torchvision

        class DeepLab(nn.Module):  # the model returns a dict; export one tensor
            def __init__(self):
                super().__init__()
                self.net = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
                    weights=None, weights_backbone=None, num_classes=21, aux_loss=False)

            def forward(self, x):
                return self.net(x)["out"]

        model = DeepLab()
        # torchvision's initialisation (running mean 0, var 1) makes every logit equal its
        # class's bias (spatial spread ~1e-9), so an output check would test nothing. Running
        # statistics from one fixed random batch give logits that vary over the image (O(1)).
        calib = torch.Generator().manual_seed(4321)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.reset_running_stats()
                    m.momentum = None  # cumulative average: the calibration batch's statistics
            model.train()
            model(torch.randn(4, 3, 192, 192, generator=calib))
        image = torch.randn(1, 3, 160, 200, generator=torch.Generator().manual_seed(1))
        return (model.eval(), image, "image", "logits", {2: "height", 3: "width"},
                {2: "height", 3: "width"})
    raise ValueError("unknown model %s" % name)


def stream_inputs(name, quick):
    """The stream of `name`: a list of input arrays, one per run, in run order."""
    import numpy as np
    rng = random.Random(2024)
    runs = []
    if name == "bert":
        shapes = [(b, s) for b in range(1, 9) for s in range(1, 65)]  # 512, every pair once
        rng.shuffle(shapes)
        for i, shape in enumerate(shapes):
            runs.append(np.random.default_rng(1000 + i).integers(0, 1000, shape, dtype=np.int64))
    elif name == "wav2vec":
        for i in range(20):
            runs.append(np.random.default_rng(1000 + i).standard_normal((1, 16000),
                                                                        dtype=np.float32))
    elif name == "deeplab":
        sizes = list(range(128, 257, 8))
        pairs = rng.sample([(h, w) for h in sizes for w in sizes], 100)
        for i, (h, w) in enumerate(pairs):
            runs.append(np.random.default_rng(1000 + i).standard_normal((1, 3, h, w),
                                                                        dtype=np.float32))
    return runs[:QUICK_RUNS] if quick else runs


def export(name, out_dir):
    """Exports `name` to out_dir/<name>.onnx (dynamic axes); cached by a stamp of this file and
    torch's version. Returns (path, model, input name, output name)."""
    import onnx
    import torch
    model, example, in_name, out_name, in_axes, out_axes = build_model(name)
    path = os.path.join(out_dir, name + ".onnx")
    stamp_path = path + ".stamp"
    with open(os.path.abspath(__file__), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    stamp = "torch %s opset %d shape_stream %s" % (torch.__version__, OPSET, digest)
    if os.path.exists(path) and os.path.exists(stamp_path) and open(stamp_path).read() == stamp:
        return path, model, in_name, out_name
    t0 = time.time()
    torch.onnx.export(model, (example,), path, opset_version=OPSET, do_constant_folding=True,
                      input_names=[in_name], output_names=[out_name],
                      dynamic_axes={in_name: in_axes, out_name: out_axes})
    onnx.checker.check_model(onnx.load(path), full_check=True)
    with open(stamp_path, "w") as f:
        f.write(stamp)
    log("exported %s in %.1f s (%d bytes)" % (name, time.time() - t0, os.path.getsize(path)))
    return path, model, in_name, out_name


def write_stream(name, runs, in_name, stream_dir):
    """Writes one .npy per run and the manifest (paths relative to it); returns its path."""
    import numpy as np
    in_dir = os.path.join(stream_dir, "inputs")
    os.makedirs(in_dir, exist_ok=True)
    for old in glob.glob(os.path.join(in_dir, "*.npy")):
        os.remove(old)
    lines = ["# %s: %d runs, one line per run (benchmarks/drivers/driver_common.h --stream)" %
             (name, len(runs))]
    for i, x in enumerate(runs):
        np.save(os.path.join(in_dir, "run%d.npy" % i), x)
        lines.append("%s=inputs/run%d.npy" % (in_name, i))
    manifest = os.path.join(stream_dir, "stream.txt")
    with open(manifest, "w") as f:
        f.write("\n".join(lines) + "\n")
    return manifest


def references(model, runs, every):
    """PyTorch's output for every `every`-th run, {run index: array}. Grad stays enabled, so
    torch 1.13's TransformerEncoderLayer takes its composite path, the one the export traced
    (under no_grad it would take the fused fast path)."""
    import torch
    grad = any(isinstance(m, torch.nn.TransformerEncoderLayer) for m in model.modules())
    out = {}
    with torch.set_grad_enabled(grad):
        for i in range(0, len(runs), every):
            out[i] = model(torch.from_numpy(runs[i])).detach().numpy()
    return out


# ---------------------------------------------------------------------------------------------
# Runs and checks.

def stream_cmd(engine, drivers, ort_lib, onnx_path, manifest, threads, passes, every, save_dir):
    common = ["--model", onnx_path, "--stream", manifest, "--threads", str(threads),
              "--passes", str(passes), "--save-every", str(every), "--save-dir", save_dir]
    if engine == "frame":
        return [os.path.join(drivers, "frame_bench_driver")] + common
    return [os.path.join(drivers, "ort_bench_driver"), "--lib", ort_lib] + common


def check_saved(save_dir, refs, n_runs, passes, out_name):
    """Every saved output of every pass against its reference (compare.py's check_output):
    {'ok', 'n' (outputs checked), 'scaled' (worst max|a - r| / max|r|)}, plus 'note' and
    'where' for the first output that failed."""
    res = {"ok": True, "n": 0, "scaled": 0.0, "max_abs": 0.0}
    for p in range(passes):
        for line, expected in sorted(refs.items()):
            i = p * n_runs + line
            c = compare.check_output(os.path.join(save_dir, "run%d_%s.npy" % (i, out_name)),
                                     expected)
            res["n"] += 1
            if "max_abs" in c:
                res["scaled"] = max(res["scaled"], c["scaled"])
                res["max_abs"] = max(res["max_abs"], c["max_abs"])
            if not c["ok"] and res["ok"]:
                res.update(ok=False, note=c.get("note", "outside tolerance"),
                           where="run %d (pass %d, line %d)" % (i, p + 1, line))
    if res["n"] == 0:
        res.update(ok=False, note="nothing checked")
    return res


def mean(xs):
    return statistics.mean(xs) if xs else None


def summarize(res, keys, passes):
    """Per-pass means and first-seen vs repeated (pass 1) from one driver's RESULT."""
    runs = res["run_ms"]
    n = len(keys)
    if len(runs) != n * passes:
        return {"error": "%d run times for %d runs x %d passes" % (len(runs), n, passes)}
    seen, first, repeated = set(), [], []
    for k, ms in zip(keys, runs[:n]):
        (repeated if k in seen else first).append(ms)
        seen.add(k)
    s = {"pass_means": [mean(runs[p * n:(p + 1) * n]) for p in range(passes)],
         "first_seen": mean(first), "n_first": len(first),
         "repeated": mean(repeated), "n_repeated": len(repeated),
         "setup_ms": res["load_ms"] + res["compile_ms"], "rss_mib": res["max_rss_kib"] / 1024.0,
         "total_s": sum(runs) / 1000.0}
    for key in ("compiles", "background_compiles", "cache_hits", "evictions", "pass_compiles",
                "compile_ms_total",
                "max_specializations", "placements", "backends", "wait_policy", "version"):
        if key in res:
            s[key] = res[key]
    return s


# ---------------------------------------------------------------------------------------------
# Report.

def fmt(v, f="%.2f"):
    return "–" if v is None else f % v


def write_report(path, plan, summary, checks, facts, monitor, elapsed):
    mark_keys = {k for k, rec in monitor.sections.items() if rec.get("unreliable")}

    def mark(text, key):
        return text + " †" if key in mark_keys and text != "–" else text

    L = ["# Varying shapes: frame Session vs ONNX Runtime %s (CPU)\n" % compare.ORT_VERSION]
    L.append("Generated by `%s` on %s (%.0f s), commit %s.%s\n" % (
        plan["command"], datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), elapsed,
        compare.git_rev(), " **Quick run** (every stream cut to its first %d runs)." % QUICK_RUNS
        if plan["quick"] else ""))
    L.append("Machine: %s, %s cores (affinity %s), %s GiB; ISA: %s. 1-minute load average "
             "before %s, after %s.\n" % (
                 facts.get("cpu"), facts.get("cores"), facts.get("affinity"),
                 facts.get("memory_gib"), facts.get("flags") or "?", plan["load_start"],
                 compare.load_average()))
    frame_info = next((s for (m, t, e), s in summary.items() if e == "frame" and "backends" in s),
                      {})
    L.append("Each stream is fed once per pass, in order, through one process per engine and "
             "thread count: frame `onnx::open_session` + `Session::run` (default "
             "SessionOptions, num_threads = threads, so at most %s specializations cached; "
             "backends %s; OpenMP wait policy %s), ONNX Runtime one session with the model's "
             "dynamic axes (intra-op threads = threads, inter-op 1, all graph optimizations), "
             "`Run` with ORT-allocated outputs. Every input was read before the first run. "
             "ms/run: mean wall time of one `run`/`Run` call (frame's includes specializing "
             "and compiling a new shape key), outputs allocated and released. Pass 2 repeats "
             "the stream in the same process: with every shape seen, it is the steady state, "
             "unless the stream has more shapes than frame's cache holds.\n" % (
                 frame_info.get("max_specializations", "?"), frame_info.get("backends", "?"),
                 frame_info.get("wait_policy", "?")))
    L.append("| model | threads | runs/pass | frame ms/run | ORT ms/run | frame/ORT | "
             "frame compiles (per pass) | frame compile ms | pass 2 frame ms/run | "
             "pass 2 ORT ms/run | pass 2 frame/ORT | outputs frame / ORT |")
    L.append("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|")
    for m in plan["models"]:
        for t in plan["threads"]:
            f, o = summary.get((m, t, "frame"), {}), summary.get((m, t, "ort"), {})
            fp, op = f.get("pass_means", [None]), o.get("pass_means", [None])
            f2 = fp[1] if len(fp) > 1 else None
            o2 = op[1] if len(op) > 1 else None
            cells = [m, str(t), str(plan["runs"].get(m, "–")),
                     fmt(fp[0]), fmt(op[0]),
                     mark(compare.ratio(fp[0], op[0]), (m, t)),
                     ("%s (%s)%s" % (f["compiles"], ", ".join(str(c) for c in f["pass_compiles"]),
                                     " + %d in the background" % f["background_compiles"]
                                     if f.get("background_compiles") else "")
                      if "compiles" in f else "–"),
                     fmt(f.get("compile_ms_total"), "%.0f"),
                     fmt(f2), fmt(o2), mark(compare.ratio(f2, o2), (m, t)),
                     " / ".join(check_cell(checks.get((m, t, e))) for e in ENGINES)]
            L.append("| " + " | ".join(cells) + " |")

    L.append("\nFirst-seen vs repeated shapes (pass 1: a run is *repeated* when an earlier run "
             "of the stream had the same input shape; bert and deeplab have none), session set-up "
             "(frame: `open_session`; ORT: `CreateSession`) and peak RSS (VmHWM; it includes "
             "every input of the stream, held in memory).\n")
    L.append("| model | threads | frame first-seen ms (n) | frame repeated ms (n) | "
             "ORT first-seen ms (n) | ORT repeated ms (n) | frame open ms | ORT CreateSession "
             "ms | peak RSS frame | peak RSS ORT | load during |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for m in plan["models"]:
        for t in plan["threads"]:
            f, o = summary.get((m, t, "frame"), {}), summary.get((m, t, "ort"), {})
            rec = monitor.sections.get((m, t), {})

            def fr(s, key):
                n = s.get("n_first" if key == "first_seen" else "n_repeated")
                return "–" if s.get(key) is None else "%.2f (%d)" % (s[key], n)

            during = rec.get("during")
            L.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                m, t, fr(f, "first_seen"), fr(f, "repeated"), fr(o, "first_seen"),
                fr(o, "repeated"), fmt(f.get("setup_ms"), "%.1f"), fmt(o.get("setup_ms"), "%.1f"),
                fmt(f.get("rss_mib"), "%.0f MiB"), fmt(o.get("rss_mib"), "%.0f MiB"),
                ("%.2f%s" % (during, " **unreliable** †" if rec.get("unreliable") else ""))
                if during is not None else "–"))

    L.append("\nOutputs: the outputs of every K-th run of each pass (stream lines 0, K, 2K, ...) "
             "against PyTorch's (torch 1.13, same module), compare.py's scale-aware "
             "BUILD-011 tolerance |a - r| <= %g * |r| + %g * max|r| elementwise (output finite, "
             "not all zero, max|r| >= %g). In parentheses: outputs checked, worst max|a - r| / "
             "max|r|. Load during: outside load + threads (compare.py's LoadMonitor); † marks a "
             "section run on an overloaded machine (at or above %s cores + 0.5).\n" % (
                 compare.RTOL, compare.ATOL_REL, compare.MIN_REF_SCALE, monitor.cores))
    L.append("| model | K | max\\|r\\| |")
    L.append("|---|---:|---:|")
    for m in plan["models"]:
        L.append("| %s | %s | %s |" % (m, plan["every"].get(m, "–"),
                                       fmt(plan["ref_scale"].get(m), "%.3g")))
    errors = [(k, s["error"]) for k, s in summary.items() if "error" in s]
    errors += [(k, "output check: %s%s" % (c.get("note", "outside tolerance"),
                                            " at %s" % c["where"] if "where" in c else ""))
               for k, c in checks.items() if not c.get("ok") and c.get("note") != "did not run"]
    if errors:
        L.append("\n## Errors\n")
        for (m, t, e), msg in sorted(errors):
            L.append("- %s, %s, %d thread(s): %s" % (m, e, t, msg.replace("|", "\\|")))
    with open(path, "w") as fh:
        fh.write("\n".join(L) + "\n")


def check_cell(c):
    if c is None:
        return "–"
    if c["ok"]:
        return "ok (%d, %.2g)" % (c["n"], c["scaled"])
    return "**%s** (%d, %.2g)" % (c.get("note", "differs"), c.get("n", 0), c.get("scaled", 0))


# ---------------------------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    p.add_argument("--models", default=",".join(MODELS), help="subset of " + ",".join(MODELS))
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (1,2)")
    p.add_argument("--passes", type=int, default=2,
                   help="times each process runs its stream (2: first pass + steady state)")
    p.add_argument("--quick", action="store_true",
                   help="cut every stream to its first %d runs" % QUICK_RUNS)
    p.add_argument("--build-dir", default=None,
                   help="build directory (default: build/ if configured, else build-bench/)")
    p.add_argument("--jobs", type=int, default=2, help="parallel compile jobs (2)")
    p.add_argument("--out", default=None, help="report path (default WORK_DIR/STREAMS.md)")
    p.add_argument("--work-dir", default=os.path.join(BENCH, ".work"),
                   help="models, streams and outputs go to WORK_DIR/streams (benchmarks/.work)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per driver process (1800)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="set in every driver's environment (repeatable)")
    args = p.parse_args()
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    if not names or any(n not in MODELS for n in names):
        p.error("--models takes a subset of " + ",".join(MODELS))
    threads = [int(t) for t in args.threads.split(",")]
    if any(t < 1 for t in threads):
        p.error("--threads takes thread counts of at least 1")
    if args.passes < 1:
        p.error("--passes must be at least 1")
    env = dict(os.environ)
    for kv in args.env:
        if "=" not in kv:
            p.error("--env takes KEY=VALUE, got %r" % kv)
        env[kv.split("=", 1)[0]] = kv.split("=", 1)[1]
    try:
        compare.require_python_modules()
        ort_lib = compare.ensure_ort()
        drivers = compare.ensure_build(args.build_dir, args.jobs)
    except compare.Missing as e:
        print("shape_stream.py: missing prerequisite: %s" % e, file=sys.stderr)
        return 2

    import numpy as np
    import torch
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    start = time.time()
    base = os.path.join(args.work_dir, "streams")
    os.makedirs(base, exist_ok=True)
    out_path = args.out or os.path.join(args.work_dir, "STREAMS.md")
    monitor = compare.LoadMonitor()
    plan = {"models": names, "threads": threads, "passes": args.passes, "quick": args.quick,
            "runs": {}, "every": {}, "ref_scale": {}, "load_start": compare.load_average(),
            "command": "/usr/bin/python3 benchmarks/shape_stream.py " + " ".join(sys.argv[1:])}
    summary, checks, raw = {}, {}, {}
    for m in names:
        try:
            onnx_path, model, in_name, out_name = export(m, base)
            runs = stream_inputs(m, args.quick)
            stream_dir = os.path.join(base, m)
            manifest = write_stream(m, runs, in_name, stream_dir)
            every = max(1, len(runs) // CHECKS)
            t0 = time.time()
            refs = references(model, runs, every)
            log("%s: %d runs, %d distinct shapes, references for every %d-th run (%.1f s)" % (
                m, len(runs), len({x.shape for x in runs}), every, time.time() - t0))
        except Exception as e:  # report the model as failed, go on with the others
            compare.mark_export_failed(summary, m, threads, ENGINES, e)
            continue
        plan["runs"][m], plan["every"][m] = len(runs), every
        plan["ref_scale"][m] = max(float(np.max(np.abs(r))) for r in refs.values())
        keys = [x.shape for x in runs]
        for ti, t in enumerate(threads):
            load_before = monitor.begin()
            order = ENGINES if ti % 2 == 0 else ENGINES[::-1]
            for e in order:
                save = os.path.join(base, "outputs", m, "%s-%dT" % (e, t))
                os.makedirs(save, exist_ok=True)
                for old in glob.glob(os.path.join(save, "*.npy")):
                    os.remove(old)
                cmd = stream_cmd(e, drivers, ort_lib, onnx_path, manifest, t, args.passes,
                                 every, save)
                res = compare.run_driver(cmd, args.timeout, env)
                raw["%s/%d/%s" % (m, t, e)] = res
                if "error" in res:
                    summary[(m, t, e)] = {"error": res["error"]}
                    checks[(m, t, e)] = {"ok": False, "note": "did not run"}
                    log("%s %dT %s: ERROR %s" % (m, t, e, res["error"]))
                    continue
                s = summarize(res, keys, args.passes)
                summary[(m, t, e)] = s
                checks[(m, t, e)] = check_saved(save, refs, len(runs), args.passes, out_name)
                log("%s %dT %s: %s ms/run per pass%s, %.1f s, outputs %s" % (
                    m, t, e, " / ".join(fmt(v, "%.3f") for v in s.get("pass_means", [])),
                    ", %d compiles %s" % (s["compiles"], s["pass_compiles"])
                    if "compiles" in s else "", res["process_s"], check_cell(checks[(m, t, e)])))
            compare.log_section("%s %dT" % (m, t), monitor.end((m, t), t, load_before))
    elapsed = time.time() - start
    monitor.stop()
    with open(os.path.join(base, "raw_results.json"), "w") as f:
        json.dump({"runs": raw, "sections": {"%s/%d" % k: v for k, v in
                                             monitor.sections.items()}}, f, indent=1)
    write_report(out_path, plan, summary, checks, compare.machine_facts(), monitor, elapsed)
    with open(out_path) as f:
        print(f.read())
    log("wrote %s (%.0f s)" % (out_path, elapsed))
    bad = [k for k, s in summary.items() if "error" in s]
    bad += [k for k, c in checks.items() if not c.get("ok")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
