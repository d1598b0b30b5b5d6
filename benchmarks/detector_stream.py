#!/usr/bin/python3
"""Object detectors (data-dependent shapes): per-image latency of frame against ONNX Runtime.

Usage (run with /usr/bin/python3, which has torch, torchvision, onnx, numpy):
  benchmarks/detector_stream.py [--models fasterrcnn_mobilenet_v3_large_320_fpn,...]
                                [--threads 1,2] [--images 20] [--out FILE]

What a user of a detector sees: a stream of different images of one size, each fed once, so
the number of detections changes from image to image. frame runs them through
`onnx::open_session` + `Session::run` (a staged model, docs/adr/0008-data-dependent-shapes.md:
its backbone stage is compiled once for the image size, its post-processing stages once per
new count); ONNX Runtime 1.30 runs the same export in one session. Both through the C API
stream drivers of benchmarks/shape_stream.py (--stream, one process per engine and thread
count, the order alternating). The models are tests/python/detectors.py's exports (random
deterministic weights, heads calibrated to give a handful of detections with distinct scores);
the images are its synthetic scenes (seeds 100..). Every 5th image of each engine is checked
against PyTorch eager with detectors.match (same detections, IoU >= 0.99, scores, boxes).
The report gives the first image apart (it compiles everything) and the mean of the others.
Exit status: 0 when both engines ran every stream and every checked image matched.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "python"))

import compare  # noqa: E402
import shape_stream  # noqa: E402

DEFAULT = ("fasterrcnn_mobilenet_v3_large_320_fpn,ssdlite320_mobilenet_v3_large,"
           "retinanet_resnet50_fpn")
ENGINES = ("frame", "ort")
EVERY = 5


def log(msg):
    print("[detector_stream] " + msg, flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default=DEFAULT)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--images", type=int, default=20)
    p.add_argument("--build-dir", default=None)
    p.add_argument("--out", default=os.path.join(HERE, ".work", "DETECTORS.md"))
    p.add_argument("--timeout", type=int, default=1800)
    args = p.parse_args()
    try:
        compare.require_python_modules()
        ort_lib = compare.ensure_ort()
        drivers = compare.ensure_build(args.build_dir, 2)
    except compare.Missing as e:
        print("detector_stream.py: missing prerequisite: %s" % e, file=sys.stderr)
        return 2
    import numpy as np
    import detectors

    base = os.path.join(HERE, ".work", "detectors")
    os.makedirs(base, exist_ok=True)
    threads = [int(t) for t in args.threads.split(",")]
    rows, bad = [], []
    for name in [m for m in args.models.split(",") if m]:
        spec = detectors.MODELS[name]
        h, w = spec.sizes[0]
        path = detectors.cached_export(name, os.path.join(base, "models"))
        out_names = detectors.onnx_output_names(path)
        images = [detectors.image(100 + i, h, w) for i in range(args.images)]
        stream_dir = os.path.join(base, name)
        manifest = shape_stream.write_stream(name, [x for x in images], "image", stream_dir)
        refs = {i: detectors.reference(name, images[i]) for i in range(0, len(images), EVERY)}
        counts = [len(r["boxes"]) for r in refs.values()]
        log("%s: %d images %dx%d, detections in the checked ones: %s" % (
            name, len(images), h, w, counts))
        import onnx
        graph_outputs = [o.name for o in onnx.load(path, load_external_data=False).graph.output]
        for ti, t in enumerate(threads):
            res = {}
            for e in (ENGINES if ti % 2 == 0 else ENGINES[::-1]):
                save = os.path.join(base, "outputs", name, "%s-%dT" % (e, t))
                os.makedirs(save, exist_ok=True)
                cmd = shape_stream.stream_cmd(e, drivers, ort_lib, path, manifest, t, 1, EVERY,
                                              save)
                r = compare.run_driver(cmd, args.timeout, dict(os.environ))
                if "error" in r:
                    log("%s %dT %s: ERROR %s" % (name, t, e, r["error"]))
                    bad.append((name, t, e))
                    continue
                ok = True
                for i, ref in refs.items():
                    actual = [np.load(os.path.join(save, "run%d_%s.npy" % (i, o)))
                              for o in graph_outputs]
                    text, good = detectors.match(ref, actual, out_names)
                    if not good:
                        ok = False
                        log("%s %dT %s image %d: %s" % (name, t, e, i, text))
                if not ok:
                    bad.append((name, t, e))
                runs = r["run_ms"]
                res[e] = {"first": runs[0], "rest": statistics.mean(runs[1:]) if len(runs) > 1
                          else runs[0], "rss": r["max_rss_kib"] / 1024.0, "ok": ok,
                          "compiles": r.get("compiles")}
                log("%s %dT %s: first %.1f ms, then %.1f ms/image, compiles %s, %s" % (
                    name, t, e, res[e]["first"], res[e]["rest"], res[e]["compiles"],
                    "outputs match PyTorch" if ok else "MISMATCH"))
            if len(res) == 2:
                rows.append((name, t, res["frame"], res["ort"]))
    lines = ["# Detectors: per-image latency, frame vs ONNX Runtime 1.30", "",
             "`" + " ".join(["/usr/bin/python3", "benchmarks/detector_stream.py"] + sys.argv[1:])
             + "`, %s" % time.strftime("%Y-%m-%d %H:%M"), "",
             "| model | threads | frame first ms | ORT first ms | frame ms/image (2..N) | "
             "ORT ms/image | frame/ORT | frame compiles | outputs |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, t, f, o in rows:
        lines.append("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.2f | %s | %s |" % (
            name, t, f["first"], o["first"], f["rest"], o["rest"], f["rest"] / o["rest"],
            f["compiles"], "ok" if f["ok"] and o["ok"] else "MISMATCH"))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
