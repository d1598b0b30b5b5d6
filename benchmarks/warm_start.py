#!/usr/bin/python3
"""Warm start: process start to first result, frame with its compile cache on disk against
ONNX Runtime loading the optimized model file it saved before.

Usage (run with /usr/bin/python3, which has torch, torchvision, onnx, numpy):
  benchmarks/warm_start.py [--models resnet50,bert] [--threads 1] [--rounds 5]

Each measurement is one driver process (benchmarks/drivers/, `--warmup 0 --runs 1 --idle-ms 0`,
the last so that no idle window for measuring CPU use follows the result): it
loads the model, prepares it and runs it once. The time is from the parent's spawn of the
process to the arrival of its RESULT line on the pipe (exec, dynamic loading, load, compile or
cache read, one run, the output written: process start to first result, the issue's measure);
the process's whole wall time (with its exit: destructors, unmapping) is reported beside it.
Medians over --rounds rounds, with the cells of one round interleaved. Per model and thread
count:
  frame cold        frame_bench_driver through a Session without a cache (open_session,
                    the compile, one run: what `frame run` and Python do)
  frame first       through a Session with an empty --cache-dir (compile, then the entry
                    and the weight blobs are written)
  frame warm        the same Session over the filled directory (no import, no pass)
  ORT cold          ort_bench_driver, CreateSession of the model (all optimizations)
  ORT save          the same with --save-optimized FILE (ORT's optimized model file)
  ORT warm          CreateSession of FILE, with --opt-level 0 and with all optimizations
                    again; the faster of the two is ORT's warm time
The page cache holds every file in every cell (each was read in the round before). frame's
warm output is checked bit for bit against its cold output, and every output against PyTorch
(compare.py's tolerance). The models: torchvision ResNet-50 (random weights, torch.manual_
seed(0), input 1x3x224x224) and shape_stream.py's BERT-style encoder (input_ids [4, 48]).
Writes benchmarks/.work/WARM_START.md (or --out). Exit status 0 when every cell ran and every
check passed, 1 otherwise, 2 when a prerequisite is missing.
"""

import argparse
import datetime
import os
import shutil
import statistics
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import compare  # noqa: E402
import shape_stream  # noqa: E402

MODELS = ("resnet50", "bert")
CELLS = ("frame_cold", "frame_first", "frame_warm", "ort_cold", "ort_save", "ort_warm0",
         "ort_warm99")


def log(msg):
    print("[warm_start] " + msg, flush=True)


def prepare_model(name, work):
    """(onnx path, input name, input .npy path, reference output array)."""
    import numpy as np
    import torch
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    if name == "resnet50":
        import torchvision
        torch.manual_seed(0)
        model = torchvision.models.resnet50().eval()
        x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))
        path = os.path.join(d, "resnet50.onnx")
        if not os.path.exists(path):
            torch.onnx.export(model, (x,), path, opset_version=14, input_names=["input"],
                              output_names=["output"])
        with torch.no_grad():
            ref = model(x).numpy()
        in_name, arr = "input", x.numpy()
    else:
        path, model, in_name, _ = shape_stream.export("bert", d)
        ids = torch.randint(0, 1000, (4, 48), generator=torch.Generator().manual_seed(2))
        ref = shape_stream.references(model, [ids.numpy()], 1)[0]
        arr = ids.numpy()
    npy = os.path.join(d, "input.npy")
    np.save(npy, arr)
    return path, in_name, npy, ref


def run_to_result(cmd, timeout):
    """Runs one driver; its RESULT dict with result_s (spawn to the RESULT line, which the
    drivers flush) and process_s (spawn to exit), or {'error': message}."""
    import json
    import subprocess
    import time
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=compare.ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    res, lines = None, []
    for line in p.stdout:
        if line.startswith("RESULT ") and res is None:
            res = json.loads(line[len("RESULT "):])
            res["result_s"] = time.perf_counter() - t0
        lines.append(line)
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        return {"error": "timed out after %d s" % timeout}
    err = p.stderr.read()
    if res is None:
        msg = (err.strip() or "".join(lines).strip() or "no output").splitlines()
        return {"error": "exit %d: %s" % (p.returncode, msg[-1][:300] if msg else "")}
    res["process_s"] = time.perf_counter() - t0
    return res


def cell_cmd(cell, drivers, ort_lib, model, in_name, npy, threads, work, save_dir):
    # --idle-ms 0: no idle window after the run (the drivers' CPU-use measurement would add
    # 200 ms of sleep between the first result and the exit to every cell).
    common = ["--input", "%s=%s" % (in_name, npy), "--threads", str(threads), "--warmup", "0",
              "--runs", "1", "--idle-ms", "0", "--save-dir", save_dir]
    frame = [os.path.join(drivers, "frame_bench_driver"), "--model", model] + common
    ort = [os.path.join(drivers, "ort_bench_driver"), "--lib", ort_lib] + common
    cache = os.path.join(work, "frame_cache")
    optimized = os.path.join(work, "ort_optimized.onnx")
    if cell == "frame_cold":
        return frame + ["--session"]
    if cell == "frame_first":
        shutil.rmtree(cache, ignore_errors=True)
        return frame + ["--cache-dir", cache]
    if cell == "frame_warm":
        return frame + ["--cache-dir", cache]
    if cell == "ort_cold":
        return ort + ["--model", model]
    if cell == "ort_save":
        return ort + ["--model", model, "--save-optimized", optimized]
    if cell == "ort_warm0":
        return ort + ["--model", optimized, "--opt-level", "0"]
    return ort + ["--model", optimized]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--threads", default="1", help="comma-separated thread counts (1)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--build-dir", default=None)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--work-dir", default=os.path.join(BENCH, ".work"))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    names = [n for n in args.models.split(",") if n]
    if any(n not in MODELS for n in names):
        p.error("--models takes a subset of " + ",".join(MODELS))
    threads = [int(t) for t in args.threads.split(",")]
    try:
        compare.require_python_modules()
        ort_lib = compare.ensure_ort()
        drivers = compare.ensure_build(args.build_dir, args.jobs)
    except compare.Missing as e:
        print("warm_start.py: missing prerequisite: %s" % e, file=sys.stderr)
        return 2
    import numpy as np
    import torch
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    base = os.path.join(args.work_dir, "warm_start")
    ok = True
    rows, notes = [], []
    for name in names:
        model, in_name, npy, ref = prepare_model(name, base)
        out_shape = ",".join(str(d) for d in ref.shape)
        out_name = "output" if name == "resnet50" else "hidden"
        for t in threads:
            work = os.path.join(base, name, "t%d" % t)
            os.makedirs(work, exist_ok=True)
            times = {c: [] for c in CELLS}
            whole = {c: [] for c in CELLS}
            inside = {c: [] for c in CELLS}
            outputs = {}
            for r in range(args.rounds):
                for cell in CELLS:
                    save = os.path.join(work, "out_" + cell)
                    os.makedirs(save, exist_ok=True)
                    cmd = cell_cmd(cell, drivers, ort_lib, model, in_name, npy, t, work, save)
                    if cell.startswith("ort"):
                        cmd += ["--output", "%s=%s" % (out_name, out_shape)]
                    res = run_to_result(cmd, 600)
                    if "error" in res:
                        log("%s %s t%d: %s" % (name, cell, t, res["error"]))
                        ok = False
                        continue
                    times[cell].append(res["result_s"] * 1e3)
                    whole[cell].append(res["process_s"] * 1e3)
                    inside[cell].append(res["load_ms"] + res["compile_ms"] + res["run_ms"][0])
                    if cell == "frame_warm" and res.get("disk_hits") != 1:
                        notes.append("%s t%d round %d: the warm frame run read no entry (%s)" %
                                     (name, t, r, res))
                        ok = False
                    outputs[cell] = os.path.join(save, out_name + ".npy")
                log("%s t%d round %d: %s" % (name, t, r, ", ".join(
                    "%s %.0f" % (c, times[c][-1]) for c in CELLS if times[c])))
            checks = {}
            for cell, path in outputs.items():
                checks[cell] = compare.check_output(path, ref)
                ok = ok and checks[cell]["ok"]
            if "frame_cold" in outputs and "frame_warm" in outputs:
                same = np.array_equal(np.load(outputs["frame_cold"]),
                                      np.load(outputs["frame_warm"]))
                checks["warm_bitwise"] = same
                ok = ok and same
            med = {c: statistics.median(v) if v else float("nan") for c, v in times.items()}
            med_in = {c: statistics.median(v) if v else float("nan") for c, v in inside.items()}
            med_whole = {c: statistics.median(v) if v else float("nan") for c, v in whole.items()}
            rows.append((name, t, med, med_in, med_whole, checks))
    out = args.out or os.path.join(args.work_dir, "WARM_START.md")
    lines = ["# Warm start: process start to first result", "",
             "Written by `benchmarks/warm_start.py` on %s, %s; git %s. Median of %d rounds, "
             "cells interleaved; ms from process start to first result (in parentheses: load + "
             "compile + first run as the driver times them)." % (
                 datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                 compare.machine_facts().get("cpu", "?"), compare.git_rev(), args.rounds), "",
             "| model | threads | frame cold | frame first (fills the cache) | frame warm | "
             "warm / cold | ORT cold | ORT save | ORT warm (level 0 / all) | frame warm / ORT "
             "warm | checks |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, t, med, med_in, _, checks in rows:
        ort_warm = min(med["ort_warm0"], med["ort_warm99"])
        bad = [c for c, v in checks.items() if v is not True and not (isinstance(v, dict) and
                                                                     v["ok"])]
        lines.append(
            "| %s | %d | %.0f (%.0f) | %.0f (%.0f) | %.0f (%.0f) | %.2f | %.0f (%.0f) | %.0f | "
            "%.0f / %.0f | %.2f | %s |" % (
                name, t, med["frame_cold"], med_in["frame_cold"], med["frame_first"],
                med_in["frame_first"], med["frame_warm"], med_in["frame_warm"],
                med["frame_warm"] / med["frame_cold"], med["ort_cold"], med_in["ort_cold"],
                med["ort_save"], med["ort_warm0"], med["ort_warm99"], med["frame_warm"] / ort_warm,
                "all pass; warm bit-identical to cold" if not bad else "FAILED: " + ", ".join(bad)))
    lines += ["", "Whole process wall time, exit included (median ms):", "",
              "| model | threads | " + " | ".join(CELLS) + " |",
              "|---|---:|" + "---:|" * len(CELLS)]
    for name, t, _, _, med_whole, _ in rows:
        lines.append("| %s | %d | " % (name, t) +
                     " | ".join("%.0f" % med_whole[c] for c in CELLS) + " |")
    lines += [""] + ["- " + n for n in notes]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    log("wrote " + out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
