#!/usr/bin/python3
"""Sums an ONNX Runtime profile per node and per op type, to set next to `frame run --profile`.

Usage:
  benchmarks/ort_profile.py PROFILE.json [--runs N] [--top K] [--frame FRAME.json]

PROFILE.json is what `ort_bench_driver --profile PREFIX` makes ORT write (Chrome trace
format): one event with "cat": "Node" and a name ending in "_kernel_time" per kernel call, its
"dur" in microseconds, "args" holding "op_name". The warm-up and timed runs are all in it, so
per-run figures divide by --runs (default: the call count of the most-called node, i.e. every
Run of the session). Prints ms per run per node (top K, default 40) and per op type, each with
its share of the sum of all kernel times.

--frame FRAME.json (the output of `frame run MODEL --profile --json`) sets the two side by
side per frame node: ORT's time for the node of the same ONNX name (ORT names its NCHWc
convs NAME_output_0_nchwc; nodes ORT fused under another name count as unmatched), sorted by
the difference, largest first.
"""
import argparse
import collections
import json
import sys


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile")
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--frame", default="")
    a = ap.parse_args(argv)
    with open(a.profile) as f:
        events = json.load(f)
    per_node = collections.defaultdict(float)
    calls = collections.Counter()
    op_of = {}
    for e in events:
        name = e.get("name", "")
        if e.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        node = name[: -len("_kernel_time")]
        per_node[node] += e.get("dur", 0) / 1000.0
        calls[node] += 1
        op_of[node] = e.get("args", {}).get("op_name", "?")
    if not per_node:
        print("no kernel events in %s" % a.profile, file=sys.stderr)
        return 1
    runs = a.runs or max(calls.values())
    total = sum(per_node.values()) / runs
    print("ORT kernel time per run: %.3f ms over %d nodes (%d runs)" % (total, len(per_node), runs))
    print("%9s %6s  %-24s %s" % ("ms/run", "%", "op", "node"))
    for node, ms in sorted(per_node.items(), key=lambda kv: -kv[1])[: a.top]:
        print("%9.3f %5.1f%%  %-24s %s" % (ms / runs, 100 * ms / runs / total, op_of[node], node))
    per_op = collections.defaultdict(float)
    for node, ms in per_node.items():
        per_op[op_of[node]] += ms / runs
    print("\nper op type:")
    for op, ms in sorted(per_op.items(), key=lambda kv: -kv[1]):
        print("%9.3f %5.1f%%  %s" % (ms, 100 * ms / total, op))
    if a.frame:
        side_by_side(a.frame, {n: ms / runs for n, ms in per_node.items()}, a.top)
    return 0


def base_name(ort_node):
    """The ONNX node name an ORT profile node stands for (its layout transformer renames)."""
    for suffix in ("_output_0_nchwc", "_nchwc"):
        if ort_node.endswith(suffix):
            return ort_node[: -len(suffix)]
    return ort_node


def side_by_side(frame_json, ort_ms, top):
    with open(frame_json) as f:
        prof = json.load(f)["profile"]
    runs = prof["runs"]
    by_base = collections.defaultdict(float)
    for n, ms in ort_ms.items():
        by_base[base_name(n)] += ms
    rows, matched = [], 0.0
    for node in prof["nodes"]:
        f_ms = node["ms"] / runs
        o_ms = by_base.get(node["node"])
        if o_ms is not None:
            matched += o_ms
        rows.append((f_ms - (o_ms or 0.0), f_ms, o_ms, node["op"], node["node"]))
    print("\nframe %.3f ms/run (kernels), ORT %.3f ms/run, of which matched by name %.3f"
          % (prof["nodes_ms"] / runs, sum(ort_ms.values()), matched))
    print("%9s %9s %9s  %-24s %s" % ("frame ms", "ORT ms", "diff", "frame op", "node"))
    for diff, f_ms, o_ms, op, node in sorted(rows, key=lambda r: -r[0])[:top]:
        o = "%9.3f" % o_ms if o_ms is not None else "%9s" % "-"
        print("%9.3f %s %9.3f  %-24s %s" % (f_ms, o, diff, op, node))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
