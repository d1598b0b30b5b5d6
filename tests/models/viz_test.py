"""`frame viz` (docs/cli.md): renders models and checks the SVG's structure, not its pixels.

The expected counts come from the model's construction and from `frame inspect --json` of the
same model and backends (the compile report, a code path separate from the drawing):
  drawn nodes = op nodes (a fused group counts its ops) + graph inputs + graph outputs,
  clusters = fused_elementwise groups + lowering-fused (fused_post_ops) nodes.

Usage: viz_test.py --frame FRAME_CLI --out DIR                      (a model built here)
       viz_test.py --frame FRAME_CLI --out DIR --resnet18 MODELS_DIR --src SOURCE_DIR
"""

import argparse
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print(f"viz_test: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, expect_rc=0):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != expect_rc:
        fail(f"{' '.join(cmd)} exited {p.returncode}, expected {expect_rc}\n{p.stdout}{p.stderr}")
    return p


def norm(s):
    return " ".join(s.split())


class Svg:
    """The node and cluster groups of a Graphviz SVG, with their texts."""

    def __init__(self, path):
        root = ET.parse(path).getroot()
        self.nodes, self.clusters, self.edges = [], [], []
        self.graph_text = ""
        for g in root.iter(f"{SVG}g"):
            cls = g.get("class")
            texts = norm(" ".join("".join(t.itertext()) for t in g.iter(f"{SVG}text")))
            title = g.find(f"{SVG}title")
            item = {
                "title": title.text if title is not None else "",
                "text": texts,
                "red": any(e.get("stroke") == "red" for e in g.iter()
                           if e.tag in (f"{SVG}path", f"{SVG}polygon")),
                "fills": {e.get("fill") for e in g.iter()
                          if e.tag in (f"{SVG}path", f"{SVG}polygon")},
            }
            if cls == "node":
                self.nodes.append(item)
            elif cls == "cluster":
                self.clusters.append(item)
            elif cls == "edge":
                self.edges.append(item)
            elif cls == "graph":
                self.graph_text = texts


def expected_from_report(report):
    """(op nodes drawn, clusters) for the compiled graph, from the compile report."""
    groups = iter(report["fused_groups"])
    lowering = {f["node"]: f["ops"] for f in report["lowering_fused"]}
    ops = 0
    for p in report["placements"]:
        if p["op"] == "fused_elementwise_internal":
            ops += len(next(groups))
        elif p["node"] in lowering:
            ops += len(lowering[p["node"]])
        else:
            ops += 1
    return ops, len(report["fused_groups"]) + len(report["lowering_fused"])


def make_model(path):
    """x, y -> add, relu, mul, sigmoid (one elementwise group) -> flatten (no onednn kernel)
    -> add bias -> out; z + reduce_sum(constant_of_shape) -> out2, where the constant branch
    (2 nodes, 1 MiB + 1 KiB: too large for the importer's folding) is folded by the
    constant-folding pass."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper, save

    f32 = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", f32, [1, 4, 8, 8]),
              helper.make_tensor_value_info("y", f32, [1, 4, 8, 8]),
              helper.make_tensor_value_info("z", f32, [1025])]
    outputs = [helper.make_tensor_value_info("out", f32, [1, 256]),
               helper.make_tensor_value_info("out2", f32, [1025])]
    inits = [numpy_helper.from_array(np.full((1,), 2.0, np.float32), "two"),
             numpy_helper.from_array(np.ones(256, np.float32), "bias"),
             numpy_helper.from_array(np.array([256, 1025], np.int64), "big_shape"),
             numpy_helper.from_array(np.array([0], np.int64), "axes0")]
    one = numpy_helper.from_array(np.ones(1, np.float32), "one")
    nodes = [
        helper.make_node("Add", ["x", "y"], ["a"], name="add_xy"),
        helper.make_node("Relu", ["a"], ["b"], name="relu"),
        helper.make_node("Mul", ["b", "two"], ["c"], name="mul_two"),
        helper.make_node("Sigmoid", ["c"], ["d"], name="sigmoid"),
        helper.make_node("Flatten", ["d"], ["f"], name="flatten"),
        helper.make_node("Add", ["f", "bias"], ["out"], name="add_bias"),
        helper.make_node("ConstantOfShape", ["big_shape"], ["big"], name="big_ones", value=one),
        helper.make_node("ReduceSum", ["big", "axes0"], ["colsum"], name="colsum", keepdims=0),
        helper.make_node("Add", ["z", "colsum"], ["out2"], name="add_colsum"),
    ]
    graph = helper.make_graph(nodes, "viz", inputs, outputs, inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return len(nodes), len(inputs), len(outputs)


def check_small(frame, out):
    model = os.path.join(out, "viz.onnx")
    n_onnx, n_in, n_out = make_model(model)
    backends = {r["name"]: r for r in json.loads(run([frame, "backends", "--json"]).stdout)}
    # onednn has no flatten kernel, so with the chain "onednn" flatten falls back to cpu.
    onednn = backends.get("onednn", {}).get("status") == "available"
    chain = "onednn" if onednn else "cpu"

    # import: every ONNX node is a frame node (nothing folds at import), no group, not placed.
    svg_path = os.path.join(out, "import.svg")
    run([frame, "viz", model, "-o", svg_path, "--stage", "import", "--backend", chain])
    svg = Svg(svg_path)
    if len(svg.nodes) != n_onnx + n_in + n_out or svg.clusters:
        fail(f"import: {len(svg.nodes)} nodes, {len(svg.clusters)} clusters; expected "
             f"{n_onnx + n_in + n_out} nodes, 0 clusters")
    if "not placed yet" not in svg.graph_text or any(n["red"] for n in svg.nodes):
        fail("import: the legend should say 'not placed yet' and no node is a fallback")

    # operator-fusion: the group is a cluster of its 4 ops; constant folding removed 2 nodes.
    svg_path = os.path.join(out, "fusion.svg")
    run([frame, "viz", model, "-o", svg_path, "--stage", "operator-fusion", "--backend", chain])
    svg = Svg(svg_path)
    if len(svg.clusters) != 1 or len(svg.nodes) != (n_onnx - 2) + n_in + n_out:
        fail(f"operator-fusion: {len(svg.nodes)} nodes, {len(svg.clusters)} clusters; expected "
             f"{n_onnx - 2 + n_in + n_out} nodes (2 folded), 1 cluster")
    if "constant-folding folded away 2 node(s)" not in svg.graph_text:
        fail(f"operator-fusion: no folding note in the title: {svg.graph_text}")
    if not any("folded const colsum f32[1025]" in n["text"] for n in svg.nodes):
        fail("operator-fusion: the folded constant 'colsum' is not shown as such")

    # final: counts from the compile report of the same model and chain.
    svg_path = os.path.join(out, "final.svg")
    run([frame, "viz", model, "-o", svg_path, "--backend", chain])
    svg = Svg(svg_path)
    report = json.loads(run([frame, "inspect", model, "--json", "--backend", chain]).stdout)
    ops, clusters = expected_from_report(report)
    if clusters < 1:
        fail("final: the compile report has no fused group to draw")
    if len(svg.nodes) != ops + n_in + n_out or len(svg.clusters) != clusters:
        fail(f"final: {len(svg.nodes)} nodes, {len(svg.clusters)} clusters; the compile report "
             f"gives {ops + n_in + n_out} nodes, {clusters} clusters")
    for t in ("f32[1,4,8,8]", "f32[1,256]", "f32[1025]"):
        if not any(e["text"] == t for e in svg.edges):
            fail(f"final: no edge labelled {t}")
    for t in ("input x f32[1,4,8,8]", "output out2 f32[1025]"):
        if not any(n["text"] == t for n in svg.nodes):
            fail(f"final: no node '{t}'")
    fallbacks = [p for p in report["placements"] if p["path"] != "kernel"]
    red = [n for n in svg.nodes if n["red"]]
    if len(red) != len(fallbacks):
        fail(f"final: {len(red)} red nodes, the report has {len(fallbacks)} fallbacks")
    for p, n in zip(fallbacks, red):
        for want in [p["node"], f"fallback: {p['path']} on {p['backend']}"] + p["rejected"]:
            if norm(want) not in n["text"]:
                fail(f"final: fallback node '{p['node']}' lacks '{want}': {n['text']}")
    if onednn and not fallbacks:
        fail("final: flatten should fall back from onednn")
    if not onednn:
        print("viz_test: onednn not available here: no fallback to check")

    # Formats and usage errors.
    png = os.path.join(out, "final.png")
    run([frame, "viz", model, "-o", png, "--backend", chain])
    with open(png, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            fail("final.png is not a PNG")
    dot = os.path.join(out, "final.dot")
    run([frame, "viz", model, "-o", dot, "--backend", chain])
    text = open(dot).read()
    if not text.startswith("digraph") or len(re.findall(r"subgraph cluster_", text)) != clusters:
        fail("final.dot: not a digraph with one cluster per fused group")
    p = run([frame, "viz", model, "-o", os.path.join(out, "g.jpg")], expect_rc=2)
    if "unknown format '.jpg'" not in p.stderr:
        fail(f"-o g.jpg: {p.stderr}")
    p = run([frame, "viz", model, "-o", os.path.join(out, "no_such_dir", "g.svg")],
            expect_rc=1)
    if "cannot write '" + os.path.join(out, "no_such_dir", "g.svg") + "'" not in p.stderr:
        fail(f"-o into a missing directory: {p.stderr}")
    p = run([frame, "viz", model, "-o", svg_path, "--stage", "fusion"], expect_rc=2)
    if "unknown stage 'fusion'" not in p.stderr or "operator-fusion" not in p.stderr:
        fail(f"--stage fusion: {p.stderr}")
    check_shape_input(frame, out)
    print(f"viz_test: small model ok ({len(svg.nodes)} nodes, {len(svg.clusters)} clusters, "
          f"{len(red)} fallbacks)")


def check_shape_input(frame, out):
    """A Reshape whose target is a graph input (ADR 0006): drawn for the value given."""
    import numpy as np
    from onnx import TensorProto, helper, save

    model = os.path.join(out, "reshape_input.onnx")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6])
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "s"], ["y"], name="reshape")]
    graph = helper.make_graph(nodes, "g", [x, s], [y])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    target = os.path.join(out, "s.npy")
    np.save(target, np.array([3, 4], np.int64))
    svg_path = os.path.join(out, "reshape_input.svg")
    p = run([frame, "viz", model, "-o", svg_path, "--shape", "x=2,6"], expect_rc=1)
    if "--input NAME=FILE.npy" not in p.stderr or "'s'" not in p.stderr:
        fail(f"shape input without --input: {p.stderr}")
    run([frame, "viz", model, "-o", svg_path, "--shape", "x=2,6", "--input", f"s={target}"])
    svg = Svg(svg_path)
    # s is bound as a constant: one graph input left, y has the shape the value asks for.
    if not any(n["text"] == "output y f32[3,4]" for n in svg.nodes):
        fail("--input s=[3,4]: no node 'output y f32[3,4]'")
    if sum(n["text"].startswith("input ") for n in svg.nodes) != 1:
        fail("--input s=[3,4]: s should be a constant, not a graph input")


def check_resnet18(frame, out, models_dir, src):
    model = os.path.join(models_dir, "resnet18.onnx")
    if not os.path.isfile(model):
        os.makedirs(models_dir, exist_ok=True)
        run([sys.executable, os.path.join(src, "scripts", "export_models.py"), "--out",
             models_dir, "--only", "resnet18"])
    svg_path = os.path.join(out, "resnet18.svg")
    run([frame, "viz", model, "-o", svg_path])
    svg = Svg(svg_path)
    report = json.loads(run([frame, "inspect", model, "--json"]).stdout)
    ops, clusters = expected_from_report(report)
    if clusters < 1 or len(svg.clusters) != clusters or len(svg.nodes) != ops + 2:
        fail(f"resnet18: {len(svg.nodes)} nodes, {len(svg.clusters)} clusters; the compile "
             f"report gives {ops + 2} nodes, {clusters} fused groups")
    before = sum(report["op_counts_before"].values())
    svg_path = os.path.join(out, "resnet18_import.svg")
    run([frame, "viz", model, "-o", svg_path, "--stage", "import"])
    svg_import = Svg(svg_path)
    if len(svg_import.nodes) != before + 2 or svg_import.clusters:
        fail(f"resnet18 import: {len(svg_import.nodes)} nodes, expected {before} + 2")
    print(f"viz_test: resnet18 ok ({clusters} fused groups drawn, {before} nodes at import)")


def check_write_errors(frame, out):
    """A write error (file size limit) is frame's error naming the path, exit 1; an existing
    file is left as it was and no temporary file is left behind (every format)."""
    model = os.path.join(out, "viz.onnx")
    make_model(model)
    for ext in ("svg", "png", "dot"):
        path = os.path.join(out, f"limited.{ext}")
        with open(path, "w") as f:
            f.write("old")
        cmd = ["sh", "-c", 'trap "" XFSZ; ulimit -f 1; exec "$@"', "sh", frame, "viz", model,
               "-o", path]
        p = run(cmd, expect_rc=1)
        if f"cannot write '{path}'" not in p.stderr:
            fail(f"{ext}: the error does not name the path:\n{p.stderr}")
        with open(path) as f:
            if f.read() != "old":
                fail(f"{ext}: the existing file was clobbered")
        left = [n for n in os.listdir(out) if n.startswith(f".limited.{ext}.")]
        if left:
            fail(f"{ext}: temporary files left behind: {left}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frame", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--resnet18", metavar="MODELS_DIR")
    ap.add_argument("--src")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.resnet18:
        check_resnet18(a.frame, a.out, a.resnet18, a.src)
    else:
        check_small(a.frame, a.out)
        check_write_errors(a.frame, a.out)


if __name__ == "__main__":
    main()
