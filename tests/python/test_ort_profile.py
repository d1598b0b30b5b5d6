"""benchmarks/ort_profile.py (benchmarks/README.md): an ONNX Runtime profile written by hand (two
runs of three nodes, one renamed the way ORT's NCHWc transformer renames a conv) is summed per
node and per op type with the per-run figures worked out here, and set next to a `frame run
--profile --json` document node by node. Pure Python, well under a second."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import SOURCE_DIR

SCRIPT = os.path.join(SOURCE_DIR, "benchmarks", "ort_profile.py")


def node_event(name: str, op: str, dur_us: int) -> dict:
    return {"cat": "Node", "name": name + "_kernel_time", "dur": dur_us, "ph": "X",
            "args": {"op_name": op}}


def test_sums_per_node_and_op_and_sets_frame_alongside(tmp_path):
    events = [{"cat": "Session", "name": "model_run", "dur": 9999}]
    for _ in range(2):  # two runs
        events += [node_event("/conv/Conv_output_0_nchwc", "Conv", 3000),
                   node_event("/relu/Relu", "Relu", 500),
                   node_event("/fc/Gemm", "Gemm", 1500)]
        events.append({"cat": "Node", "name": "/fc/Gemm_fence_before", "dur": 7})  # not a kernel
    ort = tmp_path / "ort.json"
    ort.write_text(json.dumps(events))
    # frame: 4 runs; conv 2.0 ms per run, gemm 1.0 ms per run, a node ORT does not have.
    fr = {"profile": {"runs": 4, "run_ms": 14.0, "nodes_ms": 13.2, "nodes": [
        {"node": "/conv/Conv", "op": "fused_post_ops_internal", "ms": 8.0},
        {"node": "/fc/Gemm", "op": "gemm", "ms": 4.0},
        {"node": "/extra/Add", "op": "add", "ms": 1.2}]}}
    fj = tmp_path / "frame.json"
    fj.write_text(json.dumps(fr))
    r = subprocess.run([sys.executable, SCRIPT, str(ort), "--frame", str(fj)],
                       capture_output=True, text=True, check=True)
    out = r.stdout
    # Per run: conv 3.0 ms, relu 0.5, gemm 1.5; 5.0 ms over 3 nodes and 2 runs.
    assert "ORT kernel time per run: 5.000 ms over 3 nodes (2 runs)" in out
    assert "    3.000  60.0%  Conv" in out
    assert "    1.500  30.0%  Gemm" in out
    assert "    0.500  10.0%  Relu" in out
    # Side by side: frame 13.2 / 4 = 3.300 ms of kernels; ORT's conv matched through its
    # _output_0_nchwc name (3.0 ms) and the gemm (1.5 ms): 4.5 matched.
    assert "frame 3.300 ms/run (kernels), ORT 5.000 ms/run, of which matched by name 4.500" in out
    rows = [line.split() for line in out.splitlines() if line.strip().endswith(("/conv/Conv",
                                                                                "/fc/Gemm",
                                                                                "/extra/Add"))]
    by_node = {row[-1]: row for row in rows if len(row) == 5}
    assert by_node["/conv/Conv"][:3] == ["2.000", "3.000", "-1.000"]
    assert by_node["/fc/Gemm"][:3] == ["1.000", "1.500", "-0.500"]
    assert by_node["/extra/Add"][:3] == ["0.300", "-", "0.300"]
    # Sorted by the difference, largest first.
    order = [row[-1] for row in rows if len(row) == 5]
    assert order == ["/extra/Add", "/fc/Gemm", "/conv/Conv"]


def test_a_profile_without_kernel_events_is_an_error(tmp_path):
    p = tmp_path / "empty.json"
    p.write_text(json.dumps([{"cat": "Session", "name": "model_run", "dur": 1}]))
    r = subprocess.run([sys.executable, SCRIPT, str(p)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "no kernel events" in r.stderr
