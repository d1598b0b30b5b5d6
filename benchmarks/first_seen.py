#!/usr/bin/python3
"""The cost of a first-seen input shape in a frame Session, beyond the run itself.

Usage (run with /usr/bin/python3 after the README's test command built build/python):
  benchmarks/first_seen.py [--models bert,resnet50] [--threads 1] [--shapes 6] [--repeat 10]

What a user of a model with dynamic axes sees when a request brings a shape the session has not
compiled: for each model, one `frame.InferenceSession` (default options: tiered compiles on,
docs/adr/0007-first-seen-shapes.md) runs each of --shapes new shapes --repeat + 2 times:
  first   the first-seen run: import + the first-seen tier's compile + the run;
  second  the key's second run: its full compile (tier-up) + the run;
  steady  the median of the remaining runs (the full plan).
It prints, per shape, first - steady (what a first-seen shape costs beyond its run), the
issue's budget max(2 x steady, 1 ms), second - steady, and the session's cache counters; every
run's output is checked against PyTorch's (same module, scale-aware tolerance of compare.py).
Models (torch.manual_seed(0), opset 14, exported to benchmarks/.work/first_seen/):
  bert      shape_stream.py's BERT-style encoder, input_ids int64 [batch, seq], shapes
            (batch, seq) = (1, 7), (2, 19), (3, 33), (4, 48), (5, 11), (8, 64), ...
  resnet50  torchvision resnet50(weights=None), BatchNorm statistics calibrated on a fixed
            batch, image f32 [1, 3, H, W] with H, W dynamic, sizes 160..288.
Exit status 0 when every output agreed, 1 otherwise, 2 when a prerequisite is missing.
"""

import argparse
import os
import statistics
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import compare  # noqa: E402  (output checks)
import shape_stream  # noqa: E402  (the BERT-style encoder and its export)

ROOT = compare.ROOT
OPSET = 14


def log(msg):
    print("[first_seen] " + msg, flush=True)


def resnet50():
    import torch
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None)
    # Running statistics from one fixed random batch keep activations O(1) (torchvision's
    # initialisation alone makes the logits nearly constant, and the check would test nothing).
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        model(torch.randn(4, 3, 224, 224, generator=torch.Generator().manual_seed(4321)))
    return model.eval()


def export(name, out_dir):
    """(onnx path, torch module, input name) for `name`, exported once into out_dir."""
    import torch
    if name == "bert":
        path, model, in_name, _ = shape_stream.export("bert", out_dir)
        return path, model, in_name
    model = resnet50()
    path = os.path.join(out_dir, "resnet50.onnx")
    if not os.path.exists(path):
        torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), path, opset_version=OPSET,
                          input_names=["image"], output_names=["logits"],
                          dynamic_axes={"image": {2: "h", 3: "w"}})
    return path, model, "image"


def inputs_for(name, count):
    import numpy as np
    rng = np.random.default_rng(7)
    if name == "bert":
        shapes = [(1, 7), (2, 19), (3, 33), (4, 48), (5, 11), (8, 64), (6, 25), (7, 40)]
        return [rng.integers(0, 1000, size=s, dtype=np.int64) for s in shapes[:count]]
    sizes = [(160, 160), (192, 256), (224, 224), (256, 192), (288, 288), (208, 240)]
    return [rng.standard_normal((1, 3) + s, dtype=np.float32) for s in sizes[:count]]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="bert,resnet50")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--shapes", type=int, default=6)
    p.add_argument("--repeat", type=int, default=10, help="steady runs per shape (10)")
    p.add_argument("--work-dir", default=os.path.join(BENCH, ".work", "first_seen"))
    args = p.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    try:
        import frame
        import torch
    except ImportError as e:
        print("first_seen.py: %s (run scripts/test.sh first; use /usr/bin/python3)" % e)
        return 2
    os.makedirs(args.work_dir, exist_ok=True)
    ok = True
    for name in args.models.split(","):
        path, model, in_name = export(name, args.work_dir)
        opts = frame.SessionOptions()
        opts.threads = args.threads
        sess = frame.InferenceSession(path, sess_options=opts)
        log("%s, %d thread(s): ms per run" % (name, args.threads))
        print("| shape | first | second | steady | first - steady | budget max(2 x steady, 1) "
              "| second - steady |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for x in inputs_for(name, args.shapes):
            with torch.no_grad():
                ref = model(torch.from_numpy(x)).numpy()
            times = []
            for _ in range(args.repeat + 2):
                t0 = time.perf_counter()
                out = sess.run(None, {in_name: x})[0]
                times.append((time.perf_counter() - t0) * 1e3)
                c = compare.check_output_array(out, ref)
                if not c["ok"]:
                    ok = False
                    log("%s %s: output differs from PyTorch: %s" % (name, x.shape, c))
            steady = statistics.median(times[2:])
            print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
                "x".join(map(str, x.shape)), times[0], times[1], steady, times[0] - steady,
                max(2 * steady, 1.0), times[1] - steady))
        log("%s cache: %s" % (name, sess.cache_stats()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
