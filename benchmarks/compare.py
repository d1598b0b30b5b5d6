#!/usr/bin/python3
"""frame side by side with ONNX Runtime (CPU) and PyTorch eager on the benchmark model set.

Usage (from anywhere; run with /usr/bin/python3, which has torch, onnx and numpy):
  benchmarks/compare.py [--set curated|broad|all | --models a,b] [--threads 1,2] [--repeat R]
                        [--processes P] [--quick]

What it does (benchmarks/README.md says more):
 1. builds frame_bench_driver and ort_bench_driver (in build/ when scripts/test.sh made it,
    else in build-bench/), installs onnxruntime-node 1.30.0 from npm into benchmarks/.ort/
    when absent (its libonnxruntime.so.1 is what ort_bench_driver loads);
 2. exports every model of the chosen set of benchmarks/models.py (default all: the curated
    seven and the broad set of issue 23) with torch 1.13 (fixed seeds, static shapes, opset
    14) into benchmarks/.work/models/, with the inputs and PyTorch's output as .npy (cached
    per model, keyed on the source that builds it);
 3. for each model and thread count, runs P processes of each engine round-robin (the engine
    order rotates per round, so drift in the machine hits every engine alike); each process
    loads, compiles, warms up and times R runs;
 4. checks every engine's output against PyTorch's (BUILD-011 deep-network f32 tolerance,
    scale-aware: |a - r| <= 1e-3 * |r| + 1e-4 * max|r|, output finite and not all zero; float16
    models 1e-2 and 1e-2) and
    writes the report: median, min and max latency, the ratios frame/ORT and frame/torch,
    load+compile vs ORT session creation, peak RSS, the micro-benchmarks (median of 3
    repetitions), the load average around every section (ratios measured on an overloaded
    machine are marked unreliable) and each engine's thread wait policy.
Only a full default run (every model of --set all, threads 1,2, every engine, not --quick) writes
benchmarks/RESULTS.md; any other run writes benchmarks/.work/RESULTS.quick.md (git-ignored)
unless --out names a file.
Exit status: 0 when every engine ran every model and every output agreed, 1 otherwise (the
report is written either way), 2 when a prerequisite is missing (the message names it).
"""

import argparse
import datetime
import glob
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")
ORT_VERSION = "1.30.0"
ORT_DIR = os.path.join(BENCH, ".ort")
# Output agreement, scale-aware: |a - r| <= RTOL * |r| + ATOL_REL * max|r| elementwise, r the
# PyTorch reference. RTOL and ATOL_REL are BUILD-011's kDeepNetwork f32 rtol and atol
# (tests/common/tolerance.h), the atol taken relative to the reference's largest magnitude so
# the check is as strict for logits of size 1e-3 as for size 5 (an absolute 1e-4 passes an
# all-zero output whenever the reference is smaller than that). A reference whose largest
# magnitude is below MIN_REF_SCALE, or that is not finite, cannot check anything: that model
# fails the check (models.py must produce outputs of a sensible size); an output that is all
# zero or has a NaN/Inf where the reference has none fails too.
RTOL, ATOL_REL = 1e-3, 1e-4
MIN_REF_SCALE = 1e-3
# Float16 models (models.FLOAT16), against the same reference: half precision keeps 11
# significant bits, so each of ResNet-18's ~20 layers rounds its activations by up to 2^-11
# relative and the errors add up (frame and ORT land at ~1e-3 * max|r|): 1% of |r| plus 1%
# of max|r|. Only those models get it.
FP16_RTOL, FP16_ATOL_REL = 1e-2, 1e-2
ENGINES = ("frame", "ort", "torch")


def mark_export_failed(summary, model, threads, engines, error):
    """Logs that `model` could not be exported and records that error for every thread count
    and engine, so the report lists the model as failed and the run goes on with the others."""
    log("%s: export failed: %s" % (model, error))
    for t in threads:
        for eng in engines:
            summary[(model, t, eng)] = {"error": "export failed: %s" % str(error)[:300]}


class Missing(Exception):
    """A prerequisite is absent; the message says which and how to get it."""


def log(msg):
    print("[compare] " + msg, flush=True)


def require_python_modules():
    missing = []
    for mod in ("numpy", "onnx", "torch", "torchvision"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    if missing:
        raise Missing("Python modules %s are missing from %s; run scripts/bootstrap.sh (Debian "
                      "python3-numpy python3-onnx python3-torch python3-torchvision) and use "
                      "/usr/bin/python3" % (", ".join(missing), sys.executable))


def find_ort_lib():
    hits = sorted(glob.glob(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node", "bin",
                                         "napi-v*", "linux", "x64", "libonnxruntime.so.1")))
    return hits[-1] if hits else None


def ensure_ort():
    """Path of libonnxruntime.so.1 from npm onnxruntime-node, installing it when absent."""
    lib = find_ort_lib()
    pkg = os.path.join(ORT_DIR, "node_modules", "onnxruntime-node", "package.json")
    if lib and os.path.exists(pkg) and json.load(open(pkg)).get("version") == ORT_VERSION:
        return lib
    if platform.machine() not in ("x86_64", "AMD64"):
        raise Missing("ONNX Runtime comparison needs linux x64 (this is %s)" % platform.machine())
    npm = shutil.which("npm")
    if npm is None:
        raise Missing("npm is missing: install Debian package npm (or nodejs) to fetch "
                      "onnxruntime-node %s, or put it under %s yourself" % (ORT_VERSION, ORT_DIR))
    os.makedirs(ORT_DIR, exist_ok=True)
    log("installing onnxruntime-node@%s into %s (npm, --ignore-scripts)" % (ORT_VERSION, ORT_DIR))
    r = subprocess.run([npm, "install", "--ignore-scripts", "--no-audit", "--no-fund",
                        "--prefix", ORT_DIR, "onnxruntime-node@" + ORT_VERSION],
                       capture_output=True, text=True)
    lib = find_ort_lib()
    if r.returncode != 0 or lib is None:
        raise Missing("npm install onnxruntime-node@%s failed (exit %d): %s" %
                      (ORT_VERSION, r.returncode, (r.stderr or r.stdout).strip()[-800:]))
    return lib


def run_checked(cmd, what):
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise Missing("%s failed (exit %d): %s\n%s" % (what, r.returncode, " ".join(cmd),
                                                       (r.stdout + r.stderr).strip()[-3000:]))
    return r


def ensure_build(build_dir, jobs):
    """Configures (FRAME_BUILD_BENCHMARKS=ON) and builds the two drivers; returns their dir."""
    for tool in ("cmake", "ninja"):
        if shutil.which(tool) is None:
            raise Missing("%s is missing: run scripts/bootstrap.sh (README 'Set up')" % tool)
    if build_dir is None:
        build_dir = "build" if os.path.exists(os.path.join(ROOT, "build", "CMakeCache.txt")) \
            else "build-bench"
    bdir = os.path.join(ROOT, build_dir)
    cmd = ["cmake", "-S", ROOT, "-B", bdir, "-DFRAME_BUILD_BENCHMARKS=ON"]
    if not os.path.exists(os.path.join(bdir, "CMakeCache.txt")):
        cmd += ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DFRAME_BUILD_TESTS=OFF"]
        if shutil.which("ccache"):
            cmd += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    log("configuring %s" % bdir)
    run_checked(cmd, "cmake configure")
    log("building frame_bench_driver ort_bench_driver in %s (-j%d)" % (bdir, jobs))
    t0 = time.time()
    run_checked(["cmake", "--build", bdir, "-j", str(jobs), "--target", "frame_bench_driver",
                 "ort_bench_driver"], "build")
    log("built in %.0f s" % (time.time() - t0))
    return os.path.join(bdir, "benchmarks")


def build_micro(drivers_dir, jobs):
    """Builds frame_micro_benchmarks; returns its path or None when Google Benchmark is absent."""
    bdir = os.path.dirname(drivers_dir)
    r = subprocess.run(["cmake", "--build", bdir, "-j", str(jobs), "--target",
                        "frame_micro_benchmarks"], cwd=ROOT, capture_output=True, text=True)
    exe = os.path.join(drivers_dir, "frame_micro_benchmarks")
    if r.returncode != 0 or not os.path.exists(exe):
        log("frame_micro_benchmarks not built (libbenchmark-dev missing?): %s" %
            (r.stdout + r.stderr).strip()[-300:])
        return None
    return exe


MICRO_KEYS = ("GB/s", "GFLOP/s", "ns_per_node", "nodes")


def run_micro(exe, min_time, repetitions, threads, timeout, env):
    """Runs the micro-benchmarks of one thread count (names ending in /threads:T), each
    `repetitions` times; returns {name: {counters..., 'ms', 'label', 'reps'}} with the median
    over repetitions (Google Benchmark's `median` aggregate) and every repetition's counters in
    'reps', or {'error': ...}."""
    cmd = [exe, "--benchmark_format=json", "--benchmark_min_time=%g" % min_time,
           "--benchmark_filter=/threads:%d(/|$)" % threads,
           "--benchmark_repetitions=%d" % repetitions]
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                           env=env)
        data = json.loads(r.stdout)
    except (subprocess.TimeoutExpired, ValueError) as e:
        return {"error": "frame_micro_benchmarks: %s" % e}
    out, reps = {}, {}
    for b in data.get("benchmarks", []):
        name = b.get("run_name", b["name"]).replace("/manual_time", "")
        if b.get("error_occurred"):
            out[name] = {"error": b.get("error_message", "error")}
            continue
        counters = {k: v for k, v in b.items() if k in MICRO_KEYS}
        ms = b["real_time"] if b.get("time_unit") == "ms" else b["real_time"] / 1e6
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                label = b.get("label") or out.get(name, {}).get("label", "")
                out[name] = dict(counters, ms=ms, label=label)
        elif repetitions == 1 or b.get("run_type") is None:
            out[name] = dict(counters, ms=ms, label=b.get("label", ""))
        else:
            reps.setdefault(name, []).append(counters)
            out.setdefault(name, {})["label"] = b.get("label", "")
    for name, rr in reps.items():
        if name in out and "error" not in out[name]:
            out[name]["reps"] = rr
    return out


def micro_section(micro, mark):
    if micro is None:
        return []
    L = ["\n## Micro-benchmarks (frame_micro_benchmarks)\n"]
    if "error" in micro:
        return L + ["error: %s" % micro["error"]]

    def val(name, key, fmt="%.3g"):
        b = micro.get(name, {})
        if "error" in b:
            return "error: " + b["error"]
        if key not in b:
            return "–"
        reps = [r[key] for r in b.get("reps", []) if key in r]
        if len(reps) > 1:  # the spread says how far one repetition can be trusted
            return "%s (%s–%s)" % (fmt % b[key], fmt % min(reps), fmt % max(reps))
        return fmt % b[key]

    L.append("Same binary, one process per thread count; each benchmark repeated, the median "
             "repetition shown (Google Benchmark's median aggregate), the range over repetitions "
             "in parentheses. GB/s = bytes read + "
             "written / time (decimal). Labels say where frame placed the nodes. † = that "
             "thread count's process ran while the machine was overloaded.\n")
    L.append("| measure | 1 thread | 2 threads | frame placement |")
    L.append("|---|---:|---:|---|")
    for title, bench, key, f in (
            ("per-node overhead, 10,000 add nodes on f32[1] (ns/node)", "BM_NodeOverhead",
             "ns_per_node", "%.0f"),
            ("fused chain of 8 elementwise ops, 16M f32 (GB/s)", "BM_FusedChain8", "GB/s", "%.3g"),
            ("tanh-GELU + bias + ReLU, 1024x4096 (GB/s)", "BM_GeluBiasRelu", "GB/s", "%.3g"),
            ("STREAM copy, 16M f32 (GB/s)", "BM_StreamCopy", "GB/s", "%.3g"),
            ("STREAM triad, 16M f32 (GB/s)", "BM_StreamTriad", "GB/s", "%.3g")):
        L.append("| %s | %s | %s | %s |" % (
            title, mark(val(bench + "/threads:1", key, f), ("micro", 1)),
            mark(val(bench + "/threads:2", key, f), ("micro", 2)),
            micro.get(bench + "/threads:1", {}).get("label", "")))
    shares = []
    for t in (1, 2):
        chain = micro.get("BM_FusedChain8/threads:%d" % t, {}).get("GB/s")
        copy = micro.get("BM_StreamCopy/threads:%d" % t, {}).get("GB/s")
        if chain and copy:
            shares.append(mark("%.1f%% at %d thread(s)" % (100.0 * chain / copy, t), ("micro", t)))
    if shares:
        L.append("\nFused chain / STREAM copy bandwidth: %s (target: at least 70%% at 2)." %
                 ", ".join(shares))
    L.append("\nsgemm GFLOP/s (2*M*N*K / time); frame: a one-node matmul graph (B constant).\n")
    L.append("| M x K x N | threads | frame default backends | frame cpu | oneDNN dnnl_sgemm | "
             "frame default / oneDNN |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for t in (1, 2):
        for m, k, n in ((64, 784, 512), (128, 768, 768), (1024, 1024, 1024)):
            suffix = "/M:%d/K:%d/N:%d/threads:%d" % (m, k, n, t)
            d = micro.get("BM_SgemmFrameDefault" + suffix, {}).get("GFLOP/s")
            o = micro.get("BM_SgemmOneDnn" + suffix, {}).get("GFLOP/s")
            L.append("| %dx%dx%d | %d | %s | %s | %s | %s |" % (
                m, k, n, t, val("BM_SgemmFrameDefault" + suffix, "GFLOP/s", "%.1f"),
                val("BM_SgemmFrameCpu" + suffix, "GFLOP/s", "%.1f"),
                val("BM_SgemmOneDnn" + suffix, "GFLOP/s", "%.1f"),
                mark(ratio(d, o), ("micro", t))))
    return L


def micro_targets(micro, mark):
    if not micro or "error" in micro:
        return []
    out = []
    for t in (1, 2):
        b = micro.get("BM_NodeOverhead/threads:%d" % t, {})
        if "ns_per_node" in b:
            out.append("| per-node overhead <= 1 us, %dT | %.0f ns | %s |" % (
                t, b["ns_per_node"],
                mark("met" if b["ns_per_node"] <= 1000 else "**missed**", ("micro", t))))
    chain = micro.get("BM_FusedChain8/threads:2", {}).get("GB/s")
    copy = micro.get("BM_StreamCopy/threads:2", {}).get("GB/s")
    copy1 = micro.get("BM_StreamCopy/threads:1", {}).get("GB/s")
    if chain and copy:
        verdict = mark("met" if chain >= 0.7 * copy else "**missed**", ("micro", 2))
        # Memory bandwidth of one core rarely saturates the machine: a copy that gained little
        # from the second thread means the 2-thread baseline itself was disturbed.
        if copy1 and copy / copy1 < 1.3:
            verdict += " (unreliable: STREAM copy gained only %.2fx from 2 threads)" % (copy / copy1)
        out.append("| fused 8-op chain >= 70%% of copy GB/s, 2T | %.1f of %.1f GB/s (%.0f%%) | %s |"
                   % (chain, copy, 100 * chain / copy, verdict))
    return out


def export_model(name, out_dir):
    """Exports `name` to out_dir/<name>.onnx with its inputs and expected output as .npy;
    cached by a stamp. Returns {'onnx', 'expected.npy', 'stamp': path, 'inputs': ordered
    [(ONNX input name, .npy path)]}. A model's one input "input" is <name>.input.npy (as
    before models could have several); others are <name>.input.<input name>.npy.

    The stamp is per model: torch's and torchvision's versions, the opset, this function's
    source and models.source_digest(name) (the source of the model's builder and of every
    helper it uses, scripts/export_models.py's included). Editing one builder re-exports that
    model alone; editing a shared helper (calibrate, build) re-exports the models using it."""
    import inspect
    import numpy as np
    import onnx
    import torch
    import torchvision
    import models

    def path(suffix):
        return os.path.join(out_dir, "%s.%s" % (name, suffix))
    paths = {k: path(k) for k in ("onnx", "expected.npy", "stamp")}
    digest = hashlib.sha256(inspect.getsource(export_model).encode())
    digest.update(models.source_digest(name).encode())
    stamp = "torch %s torchvision %s opset %d source %s" % (
        torch.__version__, torchvision.__version__, models.OPSET, digest.hexdigest()[:16])
    if os.path.exists(paths["stamp"]) and open(paths["stamp"]).read().startswith(stamp + "\n"):
        # the stamp's later lines name the input files
        paths["inputs"] = [tuple(line.split("=", 1))
                           for line in open(paths["stamp"]).read().splitlines()[1:]]
        if paths["inputs"] and all(os.path.exists(p) for k, p in paths.items() if k != "inputs") \
                and all(os.path.exists(p) for _, p in paths["inputs"]):
            return paths
    model, inputs = models.build(name)
    args = tuple(inputs.values())
    expected = reference_output(model, args)
    if any(isinstance(m, nn_fast_path_modules()) for m in model.modules()):
        # Under no_grad torch 1.13 runs fused kernels for nn.MultiheadAttention and the
        # encoder layers; export traces the composite path (as with grad enabled): check they
        # agree before trusting `expected` (as scripts/export_models.py does).
        with torch.no_grad():
            fast = model(*args)
        c = check_output_array(model(*args).detach().numpy(), fast.numpy())
        if not c.get("ok"):
            raise RuntimeError("%s: fast path and composite path differ: %s" % (name, c))
    t0 = time.time()
    torch.onnx.export(model, args, paths["onnx"], opset_version=models.OPSET,
                      do_constant_folding=True, input_names=list(inputs),
                      output_names=["output"])
    if name in models.FLOAT16:
        models.to_float16(paths["onnx"])
    onnx.checker.check_model(onnx.load(paths["onnx"]), full_check=True)
    paths["inputs"] = []
    for in_name, tensor in inputs.items():
        p = path("input.npy" if list(inputs) == ["input"] else "input.%s.npy" % in_name)
        np.save(p, tensor.numpy())
        paths["inputs"].append((in_name, p))
    np.save(paths["expected.npy"], expected.numpy())
    problem = reference_problem(expected.numpy()) or reference_degenerate(expected.numpy())
    if problem:  # the output check of every engine fails on it, or means little; say why
        log("%s: WARNING %s" % (name, problem))
    with open(paths["stamp"], "w") as f:
        f.write("\n".join([stamp] + ["%s=%s" % kv for kv in paths["inputs"]]) + "\n")
    log("exported %s in %.1f s (%d bytes)" % (name, time.time() - t0,
                                                os.path.getsize(paths["onnx"])))
    return paths


def reference_output(model, args):
    """PyTorch's output for `args`, computed in float64 (a copy of the module and the float
    inputs converted; integer inputs stay), returned as float32. A float32 reference carries
    float32 rounding of its own: on the deepest models (FCN ResNet-50, 1M outputs) it is
    1e-4 * max|r| away from the exact result, as far as ONNX Runtime's and frame's outputs are,
    so checking a float32 engine against it would count the reference's error twice."""
    import copy
    import torch
    model64 = copy.deepcopy(model).double()
    args64 = tuple(a.double() if a.is_floating_point() else a for a in args)
    with torch.no_grad():
        return model64(*args64).float()


def nn_fast_path_modules():
    """The torch 1.13 modules with a fused no_grad inference path that export does not take."""
    from torch import nn
    return (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerEncoder)


def run_driver(cmd, timeout, env=None):
    """Runs one driver process; returns its RESULT dict or {'error': message}."""
    t0 = time.time()
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                           env=env)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after %d s" % timeout}
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[len("RESULT "):])
            res["process_s"] = time.time() - t0
            return res
    msg = (r.stderr.strip() or r.stdout.strip() or "no output").splitlines()
    return {"error": "exit %d: %s" % (r.returncode, msg[-1][:300] if msg else "")}


def engine_cmd(engine, drivers, ort_lib, model, paths, out_shape, threads, warmup, warmup_ms,
               runs,
               save_dir):
    """One driver's command line; every graph input is an --input NAME=FILE.npy, in the
    model's argument order (the torch driver passes them positionally in that order)."""
    common = ["--threads", str(threads), "--warmup", str(warmup), "--warmup-ms", str(warmup_ms),
              "--runs", str(runs)]
    if save_dir:
        common += ["--save-dir", save_dir]
    inputs = []
    for name, npy in paths["inputs"]:
        inputs += ["--input", "%s=%s" % (name, npy)]
    shape = ",".join(str(d) for d in out_shape)
    if engine == "frame":
        return [os.path.join(drivers, "frame_bench_driver"), "--model", paths["onnx"]] + \
            inputs + ["--output", "output=" + shape] + common
    if engine == "ort":
        return [os.path.join(drivers, "ort_bench_driver"), "--lib", ort_lib, "--model",
                paths["onnx"]] + inputs + ["--output", "output=" + shape] + common
    return [sys.executable, os.path.join(BENCH, "drivers", "torch_driver.py"), "--model",
            model] + inputs + common


def reference_problem(expected):
    """Why `expected` cannot serve as a reference (not finite, or too small), else None."""
    import numpy as np
    if expected.size == 0:
        return None
    if not np.all(np.isfinite(expected)):
        return "reference has NaN/Inf"
    scale = float(np.max(np.abs(expected)))
    if scale < MIN_REF_SCALE:
        return "reference max|r| = %.2g < %g: too small to check anything" % (scale, MIN_REF_SCALE)
    return None


def reference_degenerate(expected):
    """Why `expected`, though finite and large enough, checks little, else None: so few
    distinct values at 1e-4 * max|r| resolution that a wrong output could match it (a
    segmentation model whose every pixel is its class's bias has 21), or a largest magnitude
    far above O(1). A warning at export, not a failed check: models.py should avoid it."""
    import numpy as np
    if expected.size < 8 or reference_problem(expected):
        return None
    scale = float(np.max(np.abs(expected)))
    distinct = np.unique(np.round(expected.astype(np.float64) / scale, 4)).size
    if distinct < min(64, expected.size // 4):
        return "reference has only %d distinct values (of %d): degenerate" % (
            distinct, expected.size)
    if scale > 100:
        return "reference max|r| = %.3g: not O(1)" % scale
    return None


def check_output(path, expected, rtol=RTOL, atol_rel=ATOL_REL):
    """Scale-aware agreement of the output at `path` with `expected` (see RTOL, ATOL_REL):
    {'ok', 'max_abs', 'scaled' (max|a - r| / max|r|)} or {'ok': False, 'note'}."""
    import numpy as np
    if not os.path.exists(path):
        return {"ok": False, "note": "no output written"}
    return check_output_array(np.load(path), expected, rtol, atol_rel)


def model_tolerance(name):
    """(rtol, atol_rel) of model `name`'s output check: FP16_* for float16 models."""
    import models
    return (FP16_RTOL, FP16_ATOL_REL) if name in models.FLOAT16 else (RTOL, ATOL_REL)


def check_output_array(got, expected, rtol=RTOL, atol_rel=ATOL_REL):
    """check_output for an output array in memory."""
    import numpy as np
    if got.shape != expected.shape:
        return {"ok": False, "note": "shape %s, expected %s" % (got.shape, expected.shape)}
    if got.size == 0:
        return {"ok": True, "max_abs": 0.0, "scaled": 0.0}
    problem = reference_problem(expected)
    if problem:
        return {"ok": False, "note": problem}
    g, r = got.astype(np.float64), expected.astype(np.float64)
    if not np.all(np.isfinite(g)):
        return {"ok": False, "note": "%d NaN/Inf in the output" % int(np.sum(~np.isfinite(g)))}
    if not np.any(g):
        return {"ok": False, "note": "output is all zero"}
    scale = float(np.max(np.abs(r)))
    err = np.abs(g - r)
    ok = bool(np.all(err <= rtol * np.abs(r) + atol_rel * scale))
    max_abs = float(np.max(err))
    return {"ok": ok, "max_abs": max_abs, "scaled": max_abs / scale}


def merge_checks(a, b):
    """The worse of two output checks of one engine (thread counts are checked separately)."""
    if a is None:
        return b
    if "max_abs" not in a or "max_abs" not in b:
        return a if "max_abs" not in a else b
    return {"ok": a["ok"] and b["ok"], "max_abs": max(a["max_abs"], b["max_abs"]),
            "scaled": max(a["scaled"], b["scaled"])}


def frame_vs_ort(work_dir, m, threads):
    """Max |frame - ORT| over the thread counts, divided by the reference's max|r|, or None."""
    import numpy as np
    ref = os.path.join(work_dir, "models", "%s.expected.npy" % m)
    scale = float(np.max(np.abs(np.load(ref)))) if os.path.exists(ref) else 0.0
    if not scale > 0:
        return None
    worst = None
    for t in threads:
        f = os.path.join(work_dir, "outputs", m, "frame-%dT" % t, "output.npy")
        o = os.path.join(work_dir, "outputs", m, "ort-%dT" % t, "output.npy")
        if os.path.exists(f) and os.path.exists(o):
            a, b = np.load(f), np.load(o)
            if a.shape == b.shape:
                d = float(np.nanmax(np.abs(a.astype(np.float64) - b))) / scale if a.size else 0.0
                worst = d if worst is None else max(worst, d)
    return worst


def ref_scale(work_dir, m):
    """max|r| of model m's reference output, formatted, or a dash."""
    import numpy as np
    ref = os.path.join(work_dir, "models", "%s.expected.npy" % m)
    if not os.path.exists(ref):
        return "–"
    r = np.load(ref)
    return "%.3g" % float(np.max(np.abs(r))) if r.size else "–"


def machine_facts():
    facts = {"cpu": platform.processor() or platform.machine(), "flags": "",
             "cores": os.cpu_count()}
    try:
        info = open("/proc/cpuinfo").read()
        for line in info.splitlines():
            if line.startswith("model name"):
                facts["cpu"] = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                keep = [f for f in flags if f.startswith(("avx", "fma", "f16c", "amx", "sse4"))]
                facts["flags"] = " ".join(sorted(keep))
                break
        mem = [l for l in open("/proc/meminfo").read().splitlines() if l.startswith("MemTotal")]
        facts["memory_gib"] = round(int(mem[0].split()[1]) / 2**20, 1) if mem else None
    except OSError:
        pass
    facts["affinity"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    facts["loadavg"] = load_average()
    return facts


def load_average():
    """1-minute load average: other work on the machine skews timings, 2-thread ones most."""
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


# ONNX Runtime's CPU thread pool is its own (not OpenMP): intra-op workers spin before they
# sleep (session option session.intra_op.allow_spinning, default 1, which the driver leaves as
# is); OMP_* and GOMP_* variables do not reach it.
ORT_WAIT_POLICY = "own thread pool, spinning (allow_spinning default 1; not OMP_*)"


def gomp_wait_policy(env):
    """libgomp's wait policy as `env` sets it (read once when libgomp loads), in the words of
    frame's runtime::openmp_wait_policy()."""
    policy, spin = env.get("OMP_WAIT_POLICY"), env.get("GOMP_SPINCOUNT")
    if policy is None and spin is None:
        return "libgomp default (spin ~300000 iterations, then sleep)"
    return (policy or "default") + (", GOMP_SPINCOUNT=" + spin if spin is not None else "")


def log_section(what, rec):
    log("%s: 1-min load %s -> %s, outside load %s%s" % (
        what, rec["load_before"], rec["load_after"],
        "%.2f" % rec["outside"] if rec["outside"] is not None else "?",
        " (UNRELIABLE: load during it %.2f on %d cores)" % (rec["during"], os.cpu_count() or 1)
        if rec["unreliable"] else ""))


def runnable_threads_of_tree(pid):
    """Threads in state R of process `pid` and all its descendants (compare.py's own tree)."""
    n, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for tid in tids:
            try:
                with open("/proc/%d/task/%s/stat" % (p, tid)) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "R":
                        n += 1
                with open("/proc/%d/task/%s/children" % (p, tid)) as f:
                    todo += [int(c) for c in f.read().split()]
            except (OSError, IndexError, ValueError):
                pass
    return n


class LoadMonitor:
    """Measures how busy the machine was with other work during each section of the run.

    The 1-minute load average (/proc/loadavg) before and after a section is reported as is, but
    it also counts this run's own drivers (a 2-thread driver alone pushes it towards 2), so the
    verdict uses a sampled figure instead: every SAMPLE_S seconds, the machine's runnable
    threads (/proc/loadavg field 4) minus those of compare.py and its children. Its mean over
    the section is the outside load; with the section's own threads it is the load during the
    section, and the section is unreliable when that was at or above the core count plus half a
    thread (the engines could not have had their threads' cores to themselves).
    """
    SAMPLE_S = 0.25

    def __init__(self):
        self.cores = os.cpu_count() or 1
        self.sections = {}
        self._samples = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    @staticmethod
    def _outside():
        """Runnable threads on the machine now, other than compare.py's tree, or None."""
        try:
            total = int(open("/proc/loadavg").read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return None
        return max(0, total - runnable_threads_of_tree(os.getpid()))

    def _add(self, sample):
        with self._lock:
            if self._samples is not None and sample is not None:
                self._samples.append(sample)

    def _loop(self):
        while not self._stop.wait(self.SAMPLE_S):
            self._add(self._outside())

    def begin(self):
        with self._lock:
            self._samples = []
        self._add(self._outside())  # a section shorter than SAMPLE_S still gets samples
        return load_average()

    def end(self, key, threads, load_before):
        """Records section `key` run with `threads` threads; returns its record."""
        self._add(self._outside())
        with self._lock:
            samples, self._samples = self._samples or [], None
        outside = statistics.mean(samples) if samples else None
        rec = {"load_before": load_before, "load_after": load_average(), "threads": threads,
               "outside": outside, "samples": len(samples)}
        rec["during"] = None if outside is None else outside + threads
        rec["unreliable"] = rec["during"] is not None and rec["during"] >= self.cores + 0.5
        self.sections[key] = rec
        return rec

    def unreliable(self, *keys):
        return any(self.sections.get(k, {}).get("unreliable") for k in keys)

    def stop(self):
        self._stop.set()


def git_rev():
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return rev + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


def summarize(results):
    """Median/min/max over every timed run of every process, median setup, max RSS."""
    ok = [r for r in results if "error" not in r]
    if not ok:
        return {"error": results[0]["error"] if results else "not run"}
    runs = [t for r in ok for t in r["run_ms"]]
    s = {"median": statistics.median(runs), "min": min(runs), "max": max(runs), "n": len(runs),
         "setup": statistics.median(r["load_ms"] + r["compile_ms"] for r in ok),
         "load": statistics.median(r["load_ms"] for r in ok),
         "rss_mib": max(r["max_rss_kib"] for r in ok) / 1024.0,
         "version": ok[0].get("version", "")}
    for key in ("placements", "backends", "fused_groups"):
        if key in ok[0]:
            s[key] = ok[0][key]
    # CPU time per timed run (every thread) and CPU use while the driver sleeps after its runs
    # (drivers/driver_common.h, CpuUse); medians over processes.
    for key, field in (("cpu_ms", "cpu_ms_per_run"), ("idle_pct", "idle_cpu_pct")):
        vals = [r[field] for r in ok if field in r]
        if vals:
            s[key] = statistics.median(vals)
    if len(ok) < len(results):
        s["partial"] = next(r["error"] for r in results if "error" in r)
    return s


# The idle window after a driver's timed runs (drivers/driver_common.h, kIdleWindowMs).
IDLE_WINDOW_MS = 200

def fmt_ms(v):
    return "%.3g ms" % v if v < 100 else "%.0f ms" % v


def ratio(a, b):
    return "%.2f" % (a / b) if a and b else "–"


def unreliable_marker(plan):
    """mark(text, *section_keys): `text` plus " †" when any of those sections was overloaded."""
    sections = plan.get("sections", {})

    def mark(text, *keys):
        bad = any(sections.get(k, {}).get("unreliable") for k in keys)
        return text + " †" if bad and text not in ("–", "n/a") else text
    return mark


def write_report(path, args, facts, plan, summary, checks, elapsed, micro):
    import models
    threads = plan["threads"]
    mark = unreliable_marker(plan)
    L = []
    if plan.get("full"):
        L.append("# frame vs ONNX Runtime vs PyTorch: latest results\n")
    else:
        L.append("# frame vs ONNX Runtime vs PyTorch: partial or quick run\n")
        L.append("A check of the harness (--quick, or a subset of models, thread counts or "
                 "engines), not numbers to quote: only a full default run writes "
                 "benchmarks/RESULTS.md.\n")
    L.append("Written by `benchmarks/compare.py` (see benchmarks/README.md for what each number "
             "means). Compare ratios, not absolute times: machines of this kind differ. "
             "A ratio marked † was measured while the machine was overloaded (see \"Load "
             "during each section\"): do not trust it.\n")
    L.append("- date (UTC): %s" % datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"))
    L.append("- command: `%s`" % plan["command"])
    L.append("- frame commit: %s" % git_rev())
    L.append("- machine: %s; %s logical CPUs (%s usable), %s GiB; ISA: %s" % (
        facts["cpu"], facts["cores"], facts.get("affinity"), facts.get("memory_gib"),
        facts["flags"]))
    L.append("- 1-minute load average: %s at start, %s at the end (a load near the core count "
             "before the run means other processes shared the cores)" % (
                 plan.get("load_start"), facts.get("loadavg")))
    vers = {}
    for (m, t, e), s in summary.items():
        if "version" in s:
            vers.setdefault(e, s["version"])
    L.append("- engines: frame (default backends: %s; runs %s), ONNX Runtime %s (CPU, C API, "
             "inputs and outputs bound to caller memory), PyTorch %s eager (no_grad)" % (
                 plan.get("frame_backends", "?"), plan.get("frame_run_form", "?"),
                 vers.get("ort", "?"), vers.get("torch", "?")))
    wp = plan.get("wait_policy", {})
    L.append("- thread wait policy: frame %s (the driver's libgomp, from the environment; "
             "`frame run` instead re-executes itself with PASSIVE, GOMP_SPINCOUNT=30000, a "
             "bounded spin); ONNX Runtime %s; PyTorch %s (libgomp); micro-benchmarks %s (libgomp, shared by frame, "
             "dnnl_sgemm and STREAM)%s" % (
                 wp.get("frame", "?"), wp.get("ort", "?"), wp.get("torch", "?"),
                 wp.get("micro", "?"),
                 "; --env %s" % " ".join(plan["env"]) if plan.get("env") else ""))
    L.append("- timing: per model and thread count, %d process(es) per engine run round-robin; "
             "each process %d warm-up runs (and more until %.0f ms have passed) + %d timed runs; "
             "median, min and max over all timed runs; total wall time %.0f s\n" % (
                 plan["processes"], plan["warmup"], plan.get("warmup_ms", 0), plan["repeat"],
                 elapsed))

    L.append("## Latency (median, min–max over every timed run in parentheses)\n")
    head = "| model |"
    sep = "|---|"
    for t in threads:
        head += " frame %dT | ORT %dT | torch %dT | frame/ORT | frame/torch |" % (t, t, t)
        sep += "---:|---:|---:|---:|---:|"
    L += [head, sep]
    for m in plan["models"]:
        row = "| %s |" % models.MODELS[m][1]
        for t in threads:
            cells = []
            for e in ENGINES:
                s = summary.get((m, t, e), {"error": "not run"})
                if "error" in s:
                    cells.append("error" if e in plan["engines"] else "–")
                else:
                    cells.append("%s (%s–%s)" % (fmt_ms(s["median"]), fmt_ms(s["min"]),
                                                  fmt_ms(s.get("max", s["min"]))))
            f, o, p = (summary.get((m, t, e), {}).get("median") for e in ENGINES)
            row += " %s | %s | %s | %s | %s |" % (cells[0], cells[1], cells[2],
                                                 mark(ratio(f, o), (m, t)),
                                                 mark(ratio(f, p), (m, t)))
        L.append(row)

    L.append("\n## Load + compile, peak memory, threads\n")
    t0 = threads[0]
    L.append("frame: ONNX load + compile; ORT: session creation (load, optimize, prepare), "
             "both at %d thread(s), median over processes. Peak RSS: the driver process's "
             "high-water mark (VmHWM), largest over processes and thread counts.%s\n" % (
                 t0, " %dT/%dT: median at %d threads over median at %d (below 1 = faster)." % (
                     threads[-1], t0, threads[-1], t0) if len(threads) > 1 else ""))
    multi = len(threads) > 1
    scaling = " frame %dT/%dT | ORT %dT/%dT |" % (threads[-1], t0, threads[-1], t0) if multi else ""
    L.append("| model | frame load+compile | ORT session | frame/ORT | frame RSS | ORT RSS | "
             "torch RSS | frame/ORT RSS |%s frame placement |" % scaling)
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|%s---|" % ("---:|---:|" if multi else ""))
    for m in plan["models"]:
        f = summary.get((m, t0, "frame"), {})
        o = summary.get((m, t0, "ort"), {})
        rss = {e: max([summary.get((m, t, e), {}).get("rss_mib", 0) for t in threads])
               for e in ENGINES}
        fl = summary.get((m, threads[-1], "frame"), {})
        ol = summary.get((m, threads[-1], "ort"), {})
        place = ", ".join("%s %d" % kv for kv in sorted(f.get("placements", {}).items()))
        if f.get("fused_groups"):
            place += "; %d fused group(s)" % f["fused_groups"]
        both = ((m, t0), (m, threads[-1]))
        scale_cells = " %s | %s |" % (mark(ratio(fl.get("median"), f.get("median")), *both),
                                      mark(ratio(ol.get("median"), o.get("median")), *both)) \
            if multi else ""
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s |%s %s |" % (
            m, fmt_ms(f["setup"]) if "setup" in f else "–",
            fmt_ms(o["setup"]) if "setup" in o else "–",
            mark(ratio(f.get("setup"), o.get("setup")), (m, t0)),
            "%.0f MiB" % rss["frame"] if rss["frame"] else "–",
            "%.0f MiB" % rss["ort"] if rss["ort"] else "–",
            "%.0f MiB" % rss["torch"] if rss["torch"] else "–",
            ratio(rss["frame"], rss["ort"]), scale_cells, place or "–"))

    cpu_rows = [(m, t) for m in plan["models"] for t in threads
                if "cpu_ms" in summary.get((m, t, "frame"), {})
                or "cpu_ms" in summary.get((m, t, "ort"), {})]
    if cpu_rows:
        L.append("\n## CPU use\n")
        L.append("CPU time per timed run, summed over the process's threads (clock_gettime "
                 "CLOCK_PROCESS_CPUTIME_ID around the timed runs, divided by their number), and "
                 "the CPU the process burns while idle for %d ms right after its last run, in "
                 "percent of one core (threads left spinning: ONNX Runtime's pool spins by "
                 "default, libgomp for its GOMP_SPINCOUNT); medians over processes. A latency "
                 "bought with more CPU shows here.\n" % IDLE_WINDOW_MS)
        L.append("| model | threads | frame CPU ms/run | ORT CPU ms/run | frame/ORT | "
                 "frame CPU / wall | ORT CPU / wall | frame idle CPU | ORT idle CPU |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")

        def cpu_cells(s):
            if "cpu_ms" not in s:
                return "–", "–", "–"
            return (fmt_ms(s["cpu_ms"]), "%.2f" % (s["cpu_ms"] / s["median"]),
                    "%.0f%%" % s["idle_pct"])
        for m, t in cpu_rows:
            f = summary.get((m, t, "frame"), {})
            o = summary.get((m, t, "ort"), {})
            fc, fw, fi = cpu_cells(f)
            oc, ow, oi = cpu_cells(o)
            L.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                m, t, fc, oc, mark(ratio(f.get("cpu_ms"), o.get("cpu_ms")), (m, t)), fw, ow,
                fi, oi))

    L.append("\n## Outputs agree?\n")
    L.append("Each engine's output at every thread count (first process) against PyTorch's "
             "exported reference r (computed in float64, stored as float32), scale-aware "
             "BUILD-011 deep-network f32 tolerance: "
             "|a - r| <= %g * |r| + %g * max|r| for every element, the output finite and not "
             "all zero, and max|r| >= %g (a smaller reference checks nothing). In parentheses: "
             "max|a - r| / max|r| over thread counts. Last column: max|frame - ORT| / max|r|. "
             "max|r| is the reference's largest magnitude. Float16 models (%s) are checked "
             "with rtol %g and atol %g * max|r| (half precision's rounding; PyTorch runs "
             "them in float32).\n" % (RTOL, ATOL_REL, MIN_REF_SCALE,
                                           ", ".join(sorted(models.FLOAT16)) or "none",
                                           FP16_RTOL, FP16_ATOL_REL))
    L.append("| model | max\\|r\\| | frame | ORT | torch | frame vs ORT |")
    L.append("|---|---:|---|---|---|---|")
    for m in plan["models"]:
        cells = []
        for e in ENGINES:
            c = checks.get((m, e))
            if c is None:
                cells.append("–")
            elif "max_abs" in c:
                cells.append("%s (%.2g)" % ("ok" if c["ok"] else "**differs**", c["scaled"]))
            else:
                cells.append("**%s**" % c["note"])
        d = frame_vs_ort(plan["work_dir"], m, threads)
        cells.append("%.2g" % d if d is not None else "–")
        L.append("| %s | %s | %s |" % (m, ref_scale(plan["work_dir"], m), " | ".join(cells)))

    errors = [(k, s["error"]) for k, s in summary.items() if "error" in s]
    errors += [(k, s["partial"]) for k, s in summary.items() if "partial" in s]
    if errors:
        L.append("\n## Errors\n")
        for (m, t, e), msg in sorted(errors):
            L.append("- %s, %s, %d thread(s): %s" % (m, e, t, msg.replace("|", "\\|")))

    L += micro_section(micro, mark)

    L.append("\n## Load during each section\n")
    L.append("1-minute load average (/proc/loadavg) before and after each section, which also "
             "counts this run's own drivers; outside load: runnable threads of other processes, "
             "sampled every %g s during the section and averaged; load during = outside load + "
             "the section's threads. A section is unreliable (†) when the load during it was at "
             "or above the core count (%s) + 0.5: the engine's threads had to share cores with "
             "other work.\n" % (LoadMonitor.SAMPLE_S, plan.get("cores")))
    L.append("| section | threads | 1-min load before | after | outside load | load during | "
             "verdict |")
    L.append("|---|---:|---:|---:|---:|---:|---|")
    for key, rec in plan.get("sections", {}).items():
        L.append("| %s | %d | %s | %s | %s | %s | %s |" % (
            "micro-benchmarks" if key[0] == "micro" else key[0], rec["threads"],
            rec["load_before"], rec["load_after"],
            "%.2f" % rec["outside"] if rec["outside"] is not None else "–",
            "%.2f" % rec["during"] if rec["during"] is not None else "–",
            "**unreliable** †" if rec["unreliable"] else "ok"))

    L.append("\n## Targets (issue 8)\n")
    L += targets(plan, summary, micro, mark)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def targets(plan, summary, micro, mark):
    def med(m, t, e):
        return summary.get((m, t, e), {}).get("median")

    def verdict(ok):
        return "n/a" if ok is None else ("met" if ok else "**missed**")

    import models
    # Issue 8's targets are about the curated set; the broad set is measured, not targeted.
    curated = [m for m in plan["models"] if m in models.SETS["curated"]]
    out = ["| target | measured | verdict |", "|---|---|---|"]
    if not curated:
        out.append("| per-model targets: no curated model in this run | – | n/a |")
    for m in curated:
        limit = 0.5 if m == "gelu" else 1.0
        for t in plan["threads"]:
            f, o = med(m, t, "frame"), med(m, t, "ort")
            r = f / o if f and o else None
            out.append("| frame/ORT <= %.1f, %s, %dT | %s | %s |" % (
                limit, m, t, "%.2f" % r if r else "–",
                mark(verdict(None if r is None else r <= limit), (m, t))))
    if 1 in plan["threads"] and 2 in plan["threads"]:
        for m in curated:
            a, b = med(m, 1, "frame"), med(m, 2, "frame")
            need = 1.6 if m in ("resnet18", "conv3") else 1.0
            sp = a / b if a and b else None
            out.append("| frame 2T speed-up >= %.1f, %s | %s | %s |" % (
                need, m, "%.2f" % sp if sp else "–",
                mark(verdict(None if sp is None else sp >= need), (m, 1), (m, 2))))
    t0 = plan["threads"][0]
    if "resnet18" in plan["models"]:
        f = summary.get(("resnet18", t0, "frame"), {})
        o = summary.get(("resnet18", t0, "ort"), {})
        if "setup" in f and "setup" in o:
            out.append("| ResNet-18 load+compile <= ORT session | %s vs %s | %s |" % (
                fmt_ms(f["setup"]), fmt_ms(o["setup"]),
                mark(verdict(f["setup"] <= o["setup"]), ("resnet18", t0))))
        rf = max([summary.get(("resnet18", t, "frame"), {}).get("rss_mib", 0)
                  for t in plan["threads"]])
        ro = max([summary.get(("resnet18", t, "ort"), {}).get("rss_mib", 0)
                  for t in plan["threads"]])
        if rf and ro:
            out.append("| ResNet-18 peak RSS <= ORT | %.0f vs %.0f MiB | %s |" % (
                rf, ro, verdict(rf <= ro)))
    out += micro_targets(micro, mark)
    if micro is None:
        out.append("\nThe elementwise-bandwidth and per-node-overhead targets come from "
                   "`frame_micro_benchmarks`, skipped in this run (--no-micro).")
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    p.add_argument("--models", default=None,
                   help="comma-separated models, from any set (instead of --set)")
    p.add_argument("--set", default=None, choices=("curated", "broad", "all"),
                   help="model set: curated (the 7 of issue 8), broad (issue 23), all "
                        "(default; --quick alone: curated)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (1,2)")
    p.add_argument("--repeat", type=int, default=20, help="timed runs per process (20)")
    p.add_argument("--warmup", type=int, default=5, help="untimed runs per process (5)")
    p.add_argument("--warmup-ms", type=float, default=1000,
                   help="and untimed runs until this many ms have passed (1000): runs right "
                        "after a process starts are slower for a while on this machine, so a "
                        "run count alone favours the engine whose set-up took longer")
    p.add_argument("--processes", type=int, default=3, help="processes per engine (3)")
    p.add_argument("--quick", action="store_true",
                   help="1 process, 2 warm-up, 5 timed runs, the curated set unless --set or "
                        "--models says otherwise: proves the harness in minutes")
    p.add_argument("--engines", default=",".join(ENGINES), help="subset of frame,ort,torch")
    p.add_argument("--build-dir", default=None,
                   help="build directory (default: build/ if configured, else build-bench/)")
    p.add_argument("--jobs", type=int, default=2, help="parallel compile jobs (2)")
    p.add_argument("--out", default=None,
                   help="report path (default: benchmarks/RESULTS.md for a full default run, "
                        "else WORK_DIR/RESULTS.quick.md)")
    p.add_argument("--work-dir", default=os.path.join(BENCH, ".work"),
                   help="exported models and outputs (benchmarks/.work)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per driver process (900)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="set in every driver's environment (repeatable), e.g. "
                        "OMP_WAIT_POLICY=PASSIVE to compare thread wait policies")
    p.add_argument("--no-micro", action="store_true",
                   help="skip frame_micro_benchmarks (per-node overhead, GB/s, sgemm)")
    p.add_argument("--micro-min-time", type=float, default=0.5,
                   help="Google Benchmark min time per micro-benchmark, s (0.5; --quick 0.1)")
    p.add_argument("--micro-repetitions", type=int, default=3,
                   help="repetitions of each micro-benchmark, median reported (3)")
    args = p.parse_args()
    if args.quick:
        args.processes, args.warmup, args.repeat = 1, 2, 5
        args.warmup_ms = min(args.warmup_ms, 300)
        args.micro_min_time = min(args.micro_min_time, 0.1)

    sys.path.insert(0, BENCH)
    try:
        require_python_modules()
        import models
        if args.models is not None and args.set is not None:
            p.error("--models and --set exclude each other")
        # --quick checks the harness: the curated seven do that in a minute, where the broad
        # set's PyTorch runs alone (seconds per run on its generic BLAS) take ~20 minutes.
        default_set = "curated" if args.quick else "all"
        names = models.SETS[args.set or default_set] if args.models is None else \
            [n.strip() for n in args.models.split(",") if n.strip()]
        unknown = [n for n in names if n not in models.MODELS]
        if unknown:
            p.error("unknown model(s) %s; choose from %s" % (unknown, ", ".join(models.MODELS)))
        engines = [e.strip() for e in args.engines.split(",") if e.strip()]
        if any(e not in ENGINES for e in engines):
            p.error("--engines takes a subset of " + ",".join(ENGINES))
        threads = [int(t) for t in args.threads.split(",")]
        if any(t < 1 for t in threads):
            p.error("--threads takes thread counts of at least 1")
        # Only a full default run may replace the tracked RESULTS.md; partial or quick runs go
        # to the git-ignored work directory unless --out says otherwise.
        full = (not args.quick and set(names) == set(models.MODELS) and
                sorted(threads) == [1, 2] and set(engines) == set(ENGINES))
        out_path = args.out or (os.path.join(BENCH, "RESULTS.md") if full else
                                os.path.join(args.work_dir, "RESULTS.quick.md"))
        ort_lib = ensure_ort() if "ort" in engines else None
        drivers = ensure_build(args.build_dir, args.jobs)
        micro_exe = None if args.no_micro else build_micro(drivers, args.jobs)
    except Missing as e:
        print("compare.py: missing prerequisite: %s" % e, file=sys.stderr)
        return 2

    env = dict(os.environ)
    for kv in args.env:
        if "=" not in kv:
            p.error("--env takes KEY=VALUE, got %r" % kv)
        env[kv.split("=", 1)[0]] = kv.split("=", 1)[1]
    if not full and args.out is None:
        log("partial or quick run: the report goes to %s (benchmarks/RESULTS.md is written "
            "only by a full default run, or with --out)" % os.path.relpath(out_path, ROOT))
    import numpy as np
    import torch
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    start = time.time()
    model_dir = os.path.join(args.work_dir, "models")
    os.makedirs(model_dir, exist_ok=True)
    monitor = LoadMonitor()
    plan = {"models": names, "threads": threads, "engines": engines, "load_start": load_average(),
            "work_dir": args.work_dir, "full": full, "env": args.env,
            "wait_policy": {"ort": ORT_WAIT_POLICY, "torch": gomp_wait_policy(env),
                            "micro": gomp_wait_policy(env)},
            "processes": args.processes, "warmup": args.warmup, "warmup_ms": args.warmup_ms,
            "repeat": args.repeat,
            "command": "/usr/bin/python3 benchmarks/compare.py " + " ".join(sys.argv[1:])}
    results, summary, checks = {}, {}, {}
    for m in names:
        try:
            paths = export_model(m, model_dir)
        except Exception as e:  # report the model as failed, go on with the others
            mark_export_failed(summary, m, threads, engines, e)
            continue
        expected = np.load(paths["expected.npy"])
        for t in threads:
            load_before = monitor.begin()
            for rnd in range(args.processes):
                order = engines[rnd % len(engines):] + engines[:rnd % len(engines)]
                for e in order:
                    save = None
                    if rnd == 0:  # outputs of the first round, at every thread count
                        save = os.path.join(args.work_dir, "outputs", m, "%s-%dT" % (e, t))
                        os.makedirs(save, exist_ok=True)
                        for old in glob.glob(os.path.join(save, "*.npy")):
                            os.remove(old)
                    cmd = engine_cmd(e, drivers, ort_lib, m, paths, expected.shape, t,
                                     args.warmup, args.warmup_ms, args.repeat, save)
                    res = run_driver(cmd, args.timeout, env)
                    results.setdefault((m, t, e), []).append(res)
                    if save:
                        c = check_output(os.path.join(save, "output.npy"), expected,
                                         *model_tolerance(m)) \
                            if "error" not in res else {"ok": False, "note": "did not run"}
                        checks[(m, e)] = merge_checks(checks.get((m, e)), c)
                    if "error" in res:
                        log("%s %dT %s: ERROR %s" % (m, t, e, res["error"]))
                    else:
                        log("%s %dT %s: median %.3f ms (%.1f s)" % (
                            m, t, e, statistics.median(res["run_ms"]), res["process_s"]))
                        if e == "frame":
                            plan["frame_backends"] = res.get("backends", "?")
                            plan["frame_run_form"] = res.get("run_form", "?")
                            plan["wait_policy"]["frame"] = res.get("wait_policy", "?")
            log_section("%s %dT" % (m, t), monitor.end((m, t), t, load_before))
            for e in engines:
                summary[(m, t, e)] = summarize(results[(m, t, e)])
    micro = None
    if micro_exe:
        micro = {}
        for t in (1, 2):  # one process per thread count, so each gets its own load verdict
            log("running frame_micro_benchmarks at %d thread(s) (min time %g s, %d "
                "repetition(s) each)" % (t, args.micro_min_time, args.micro_repetitions))
            load_before = monitor.begin()
            part = run_micro(micro_exe, args.micro_min_time, args.micro_repetitions, t,
                             args.timeout, env)
            log_section("micro %dT" % t, monitor.end(("micro", t), t, load_before))
            if "error" in part:
                micro = part
                break
            micro.update(part)
    elif not args.no_micro:
        micro = {"error": "frame_micro_benchmarks could not be built (libbenchmark-dev?)"}
    elapsed = time.time() - start
    with open(os.path.join(args.work_dir, "raw_results.json"), "w") as f:
        json.dump({"runs": {"%s/%d/%s" % k: v for k, v in results.items()},
                   "sections": {"%s/%d" % k: v for k, v in monitor.sections.items()},
                   "micro": micro}, f, indent=1)
    monitor.stop()
    plan["sections"] = monitor.sections
    plan["cores"] = monitor.cores
    write_report(out_path, args, machine_facts(), plan, summary, checks, elapsed, micro)
    log("wrote %s (%.0f s)" % (out_path, elapsed))
    bad = [k for k, s in summary.items() if "error" in s or "partial" in s]
    bad += [k for k, c in checks.items() if not c.get("ok")]
    bad += [k for k, b in (micro or {}).items() if k == "error" or "error" in b]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
