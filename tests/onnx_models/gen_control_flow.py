#!/usr/bin/env python3
"""Writes the control-flow test models (ONNX If, Loop, Scan) with inputs and expected outputs.

Layout: OUT/<case>/model.onnx and OUT/<case>/<run>/{in_<name>.npy, out_<name>.npy}. Expected
outputs are computed with numpy from each model's ONNX semantics, written out by hand per case
(the onnx package here, 1.12, predates onnx.reference); never from frame. Read by
tests/cpp/onnx/control_flow_test.cpp.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model(graph, opset):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def save(out, case, m, runs=None, ref=None):
    """runs: run name -> feeds; ref(feeds) -> list of expected outputs (numpy). Without runs,
    only the model (the test classifies its inputs or expects it to be refused)."""
    d = os.path.join(out, case)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    names = [o.name for o in m.graph.output]
    for run, feeds in (runs or {}).items():
        rd = os.path.join(d, run)
        os.makedirs(rd, exist_ok=True)
        for k, v in feeds.items():
            np.save(os.path.join(rd, "in_%s.npy" % k), v)
        for k, v in zip(names, ref(feeds)):
            np.save(os.path.join(rd, "out_%s.npy" % k), np.asarray(v))


def const_node(name, value):
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(
        name + "_t", onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[value.dtype], value.shape, value.flatten()))


def loop_body(nodes, name, carried_in, outs):
    """A Loop body (i, cond_in, *carried_in) -> (cond_out, *outs) that passes the condition
    through unchanged before `nodes`."""
    return helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"])] + nodes,
                             name, [vi("i", I64, []), vi("cond_in", B, [])] + carried_in,
                             [vi("cond_out", B, [])] + outs)


def if_runtime(out):
    # then: x + 1; else: x * y (y captured from the outer graph). Same shapes.
    then_g = helper.make_graph(
        [const_node("one", np.ones((1,), np.float32)), helper.make_node("Add", ["x", "one"], ["t"])],
        "then_body", [], [vi("t", F, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Mul", ["x", "y"], ["e"])], "else_body", [],
                               [vi("e", F, [2, 3])])
    g = helper.make_graph(
        [helper.make_node("If", ["cond"], ["z"], then_branch=then_g, else_branch=else_g)],
        "if_runtime", [vi("cond", B, []), vi("x", F, [2, 3]), vi("y", F, [2, 3])],
        [vi("z", F, [2, 3])])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    save(out, "if_runtime", model(g, 13), {
        "true": {"cond": np.array(True), "x": x, "y": y},
        "false": {"cond": np.array(False), "x": x, "y": y}},
        lambda f: [f["x"] + 1 if f["cond"] else f["x"] * f["y"]])


def if_const(out):
    # The condition is an initializer: the If becomes its then branch (x - 2).
    then_g = helper.make_graph(
        [const_node("two", np.full((1,), 2, np.float32)), helper.make_node("Sub", ["x", "two"], ["t"])],
        "then_body", [], [vi("t", F, [4])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else_body", [],
                               [vi("e", F, [4])])
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["z"], then_branch=then_g, else_branch=else_g)],
        "if_const", [vi("x", F, [4])], [vi("z", F, [4])],
        initializer=[helper.make_tensor("c", B, [], [True])])
    save(out, "if_const", model(g, 11),
         {"run": {"x": np.arange(4, dtype=np.float32)}}, lambda f: [f["x"] - 2])


def if_const_passthrough(out):
    # The condition is an initializer (false) and the else branch returns the captured x
    # itself, which is also what the graph outputs.
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then_body", [],
                               [vi("t", F, [3])])
    else_g = helper.make_graph([], "else_body", [], [vi("x", F, [3])])
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["z"], then_branch=then_g, else_branch=else_g)],
        "if_const_passthrough", [vi("x", F, [3])], [vi("z", F, [3])],
        initializer=[helper.make_tensor("c", B, [], [False])])
    save(out, "if_const_passthrough", model(g, 13),
         {"run": {"x": np.array([1, -2, 3], np.float32)}}, lambda f: [f["x"]])


def if_shapes(out):
    # then: Transpose(x) [3,2]; else: x [2,3]: the condition decides the output shape.
    then_g = helper.make_graph([helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0])],
                               "then_body", [], [vi("t", F, ["p", "q"])])
    else_g = helper.make_graph([helper.make_node("Relu", ["x"], ["e"])], "else_body", [],
                               [vi("e", F, ["p", "q"])])
    g = helper.make_graph(
        [helper.make_node("If", ["cond"], ["z"], then_branch=then_g, else_branch=else_g)],
        "if_shapes", [vi("cond", B, []), vi("x", F, [2, 3])], [vi("z", F, ["p", "q"])])
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0
    save(out, "if_shapes", model(g, 13), {
        "true": {"cond": np.array(True), "x": x},
        "false": {"cond": np.array(False), "x": x}},
        lambda f: [f["x"].T.copy() if f["cond"] else np.maximum(f["x"], 0)])


def loop_scan(out):
    # for i < M: y = y + x * i (x captured); scan out: y * 2. Trip count and cond are bound as
    # constants by the test (scan outputs need a static trip count).
    body = loop_body([
        helper.make_node("Cast", ["i"], ["fi"], to=F),
        helper.make_node("Mul", ["x", "fi"], ["xi"]),
        helper.make_node("Add", ["y_in", "xi"], ["y_out"]),
        const_node("two", np.full((1,), 2, np.float32)),
        helper.make_node("Mul", ["y_out", "two"], ["s"]),
    ], "loop_body", [vi("y_in", F, [3])], [vi("y_out", F, [3]), vi("s", F, [3])])
    g = helper.make_graph([helper.make_node("Loop", ["M", "cond", "y0"], ["y", "scan"], body=body)],
                          "loop_scan", [vi("M", I64, []), vi("cond", B, []), vi("y0", F, [3]),
                                        vi("x", F, [3])],
                          [vi("y", F, [3]), vi("scan", F, [None, 3])])
    save(out, "loop_scan", model(g, 13), {"run": {
        "M": np.array(4, np.int64), "cond": np.array(True),
        "y0": np.array([1, 2, 3], np.float32), "x": np.array([0.5, -1, 2], np.float32)}},
        ref_loop_scan)


def loop_nested(out):
    # Loop with a run-time trip count and no scan outputs; its body holds an If (condition:
    # i is even) whose then branch holds another Loop reading `x` from the outermost graph
    # (a capture two levels deep). acc += (even ? sum_{k<2} x : -x).
    inner_body = helper.make_graph([
        helper.make_node("Identity", ["c_in"], ["c_out"]),
        helper.make_node("Add", ["a_in", "x"], ["a_out"]),
    ], "inner_body", [vi("k", I64, []), vi("c_in", B, []), vi("a_in", F, [2])],
        [vi("c_out", B, []), vi("a_out", F, [2])])
    then_g = helper.make_graph([
        const_node("two", np.array(2, np.int64)),
        const_node("zeros", np.zeros((2,), np.float32)),
        helper.make_node("Loop", ["two", "", "zeros"], ["t"], body=inner_body),
    ], "then_body", [], [vi("t", F, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else_body", [],
                               [vi("e", F, [2])])
    body = loop_body([
        const_node("two_i", np.array(2, np.int64)),
        const_node("zero_i", np.array(0, np.int64)),
        helper.make_node("Mod", ["i", "two_i"], ["r"]),
        helper.make_node("Equal", ["r", "zero_i"], ["even"]),
        helper.make_node("If", ["even"], ["d"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Add", ["acc_in", "d"], ["acc_out"]),
    ], "outer_body", [vi("acc_in", F, [2])], [vi("acc_out", F, [2])])
    g = helper.make_graph([helper.make_node("Loop", ["M", "", "acc0"], ["acc"], body=body)],
                          "loop_nested", [vi("M", I64, []), vi("acc0", F, [2]), vi("x", F, [2])],
                          [vi("acc", F, [2])])
    x = np.array([1.5, -2.0], np.float32)
    acc0 = np.array([0.25, 1.0], np.float32)
    save(out, "loop_nested", model(g, 13), {
        "m3": {"M": np.array(3, np.int64), "acc0": acc0, "x": x},
        "m0": {"M": np.array(0, np.int64), "acc0": acc0, "x": x}}, ref_loop_nested)


def loop_unroll(out):
    # As ONNX test_loop11: the body slices a constant table at [i, i+1), a shape that is static
    # only for a known i, so the loop is unrolled (M and cond bound as constants by the test).
    table = np.array([1, 2, 3, 4, 5], np.float32)
    body = loop_body([
        const_node("table", table),
        const_node("one", np.array(1, np.int64)),
        helper.make_node("Add", ["i", "one"], ["end"]),
        helper.make_node("Unsqueeze", ["i"], ["start1"], axes=[0]),
        helper.make_node("Unsqueeze", ["end"], ["end1"], axes=[0]),
        helper.make_node("Slice", ["table", "start1", "end1"], ["t"]),
        helper.make_node("Mul", ["t", "w"], ["tw"]),
        helper.make_node("Add", ["y_in", "tw"], ["y_out"]),
        helper.make_node("Identity", ["y_out"], ["scan_out"]),
    ], "slice_body", [vi("y_in", F, [1])], [vi("y_out", F, [1]), vi("scan_out", F, [1])])
    g = helper.make_graph([helper.make_node("Loop", ["M", "cond", "y0"], ["y", "scan"], body=body)],
                          "loop_unroll", [vi("M", I64, []), vi("cond", B, []), vi("y0", F, [1]),
                                          vi("w", F, [1])],
                          [vi("y", F, [1]), vi("scan", F, [None, 1])])

    def ref(f):
        y = f["y0"].copy()
        scans = []
        for i in range(int(f["M"])):
            y = y + table[i:i + 1] * f["w"]
            scans.append(y.copy())
        return [y, np.stack(scans)]

    save(out, "loop_unroll", model(g, 11), {"run": {
        "M": np.array(4, np.int64), "cond": np.array(True), "y0": np.array([0.5], np.float32),
        "w": np.array([-2], np.float32)}}, ref)


def while_body(with_scan):
    nodes = [
        const_node("two", np.full((1,), 2, np.float32)),
        helper.make_node("Mul", ["y_in", "two"], ["y_out"]),
        helper.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0),
        helper.make_node("Less", ["total", "limit"], ["cond_out"]),
    ]
    outs = [vi("cond_out", B, []), vi("y_out", F, [2])]
    if with_scan:
        nodes.append(helper.make_node("Identity", ["y_out"], ["s"]))
        outs.append(vi("s", F, [2]))
    return helper.make_graph(nodes, "while_body", [vi("i", I64, []), vi("cond_in", B, []),
                                                   vi("y_in", F, [2])], outs)


def loop_while(out):
    # No trip count; the body decides when to stop (sum(y) < limit, limit captured): fine
    # without scan outputs (every shape static), an error with them (loop_while_scan).
    g = helper.make_graph([helper.make_node("Loop", ["", "cond", "y0"], ["y"], body=while_body(False))],
                          "loop_while", [vi("cond", B, []), vi("y0", F, [2]), vi("limit", F, [])],
                          [vi("y", F, [2])])

    def ref(f):
        y = f["y0"].copy()
        c = bool(f["cond"])
        while c:
            y = y * 2
            c = bool(y.sum() < f["limit"])
        return [y]

    save(out, "loop_while", model(g, 13), {
        "run": {"cond": np.array(True), "y0": np.array([0.5, 1], np.float32),
                "limit": np.array(40, np.float32)},
        "skip": {"cond": np.array(False), "y0": np.array([0.5, 1], np.float32),
                 "limit": np.array(40, np.float32)}}, ref)
    g2 = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "y0"], ["y", "s"], body=while_body(True))],
        "loop_while_scan", [vi("M", I64, []), vi("y0", F, [2]), vi("limit", F, [])],
        [vi("y", F, [2]), vi("s", F, [None, 2])])
    save(out, "loop_while_scan", model(g2, 13))


def loop_capture_shape(out):
    # The body reshapes with `shape`, a graph input captured from the outer graph: `shape` is
    # shape-determining through the body (model only; the test classifies its inputs).
    body = loop_body([
        helper.make_node("Reshape", ["y_in", "shape"], ["r"]),
        helper.make_node("Relu", ["r"], ["rr"]),
        const_node("back", np.array([6], np.int64)),
        helper.make_node("Reshape", ["rr", "back"], ["y_out"]),
    ], "reshape_body", [vi("y_in", F, [6])], [vi("y_out", F, [6])])
    g = helper.make_graph([helper.make_node("Loop", ["M", "", "y0"], ["y"], body=body)],
                          "loop_capture_shape", [vi("M", I64, []), vi("y0", F, [6]),
                                                 vi("shape", I64, [2])], [vi("y", F, [6])])
    save(out, "loop_capture_shape", model(g, 13))


def loop_carried_change(out):
    # The carried value grows by one element per iteration: not static (ARCH-044).
    body = loop_body([helper.make_node("Concat", ["v_in", "v_in"], ["v_out"], axis=0)],
                     "grow_body", [vi("v_in", F, [2])], [vi("v_out", F, ["n"])])
    g = helper.make_graph([helper.make_node("Loop", ["M", "", "v0"], ["v"], body=body)],
                          "loop_carried_change", [vi("M", I64, []), vi("v0", F, [2])],
                          [vi("v", F, ["n"])])
    save(out, "loop_carried_change", model(g, 13))


def ref_loop_scan(f):
    y = f["y0"].copy()
    scans = []
    for i in range(int(f["M"])):
        y = y + f["x"] * np.float32(i)
        scans.append(y * 2)
    return [y, np.stack(scans).astype(np.float32)]


def ref_loop_nested(f):
    acc = f["acc0"].copy()
    for i in range(int(f["M"])):
        acc = acc + (f["x"] + f["x"] if i % 2 == 0 else -f["x"])
    return [acc]


def ref_scan9(f):
    s = f["s0"].copy()
    y1 = np.zeros((2, 4), np.float32)
    y2 = np.zeros((4, 2), np.float32)
    for t in range(4):
        a = f["a"][t]
        b = f["b"][:, 3 - t]
        s = s + a * b
        y1[:, t] = s
        y2[3 - t] = a - b
    return [s, y1, y2]


def ref_scan11(f):
    s = f["s0"].copy()
    y = np.zeros((3, 5), np.float32)
    for t in range(5):
        s = s + f["a"][:, t] * f["w"]
        y[:, t] = s
    return [s, y]


def ref_scan8(f):
    s_all, y_all = [], []
    for r in range(2):
        s = f["s0"][r].copy()
        ys = []
        for t in range(3):
            a = f["a"][r, t]
            b = f["b"][r, 2 - t]
            s = s + a * b
            ys.append(a - b)
        s_all.append(s)
        y_all.append(np.stack(ys))
    return [np.stack(s_all).astype(np.float32), np.stack(y_all).astype(np.float32)]


def scan_body_two(with_state_copy=False):
    # state s, scan slices a [2] and b [2]: s' = s + a * b; scan outputs: [s',] a - b.
    nodes = [
        helper.make_node("Mul", ["a", "b"], ["ab"]),
        helper.make_node("Add", ["s_in", "ab"], ["s_out"]),
        helper.make_node("Sub", ["a", "b"], ["d"]),
    ]
    outs = [vi("s_out", F, [2]), vi("d", F, [2])]
    if with_state_copy:
        nodes.append(helper.make_node("Identity", ["s_out"], ["s_copy"]))
        outs.insert(1, vi("s_copy", F, [2]))
    return helper.make_graph(nodes, "scan_body", [vi("s_in", F, [2]), vi("a", F, [2]),
                                                  vi("b", F, [2])], outs)


def scan9(out):
    # a scans along axis 0 forward, b along axis 1 in reverse; the first scan output stacks
    # along axis 1, the second in reverse along axis 0.
    g = helper.make_graph([helper.make_node(
        "Scan", ["s0", "a", "b"], ["s", "y1", "y2"], body=scan_body_two(True), num_scan_inputs=2,
        scan_input_axes=[0, 1], scan_input_directions=[0, 1], scan_output_axes=[1, 0],
        scan_output_directions=[0, 1])],
        "scan9", [vi("s0", F, [2]), vi("a", F, [4, 2]), vi("b", F, [2, 4])],
        [vi("s", F, [2]), vi("y1", F, [2, 4]), vi("y2", F, [4, 2])])
    rng = np.random.default_rng(2)
    save(out, "scan9", model(g, 9), {"run": {
        "s0": np.array([0.5, -1], np.float32),
        "a": rng.standard_normal((4, 2)).astype(np.float32),
        "b": rng.standard_normal((2, 4)).astype(np.float32)}}, ref_scan9)


def scan11(out):
    # Opset 11 allows negative axes; w is captured from the outer graph.
    body = helper.make_graph([
        helper.make_node("Mul", ["a", "w"], ["aw"]),
        helper.make_node("Add", ["s_in", "aw"], ["s_out"]),
        helper.make_node("Identity", ["s_out"], ["y"]),
    ], "scan_body", [vi("s_in", F, [3]), vi("a", F, [3])], [vi("s_out", F, [3]), vi("y", F, [3])])
    g = helper.make_graph([helper.make_node(
        "Scan", ["s0", "a"], ["s", "y"], body=body, num_scan_inputs=1, scan_input_axes=[-1],
        scan_output_axes=[-1])],
        "scan11", [vi("s0", F, [3]), vi("a", F, [3, 5]), vi("w", F, [3])],
        [vi("s", F, [3]), vi("y", F, [3, 5])])
    rng = np.random.default_rng(3)
    save(out, "scan11", model(g, 11), {"run": {
        "s0": np.zeros(3, np.float32), "a": rng.standard_normal((3, 5)).astype(np.float32),
        "w": np.array([1, -2, 0.5], np.float32)}}, ref_scan11)


def scan8(out):
    # Opset 8: batch axis 0, sequence axis 1, sequence_lens omitted, b reversed.
    g = helper.make_graph([helper.make_node(
        "Scan", ["", "s0", "a", "b"], ["s", "y"], body=scan_body_two(), num_scan_inputs=2,
        directions=[0, 1])],
        "scan8", [vi("s0", F, [2, 2]), vi("a", F, [2, 3, 2]), vi("b", F, [2, 3, 2])],
        [vi("s", F, [2, 2]), vi("y", F, [2, 3, 2])])
    rng = np.random.default_rng(4)
    save(out, "scan8", model(g, 8), {"run": {
        "s0": rng.standard_normal((2, 2)).astype(np.float32),
        "a": rng.standard_normal((2, 3, 2)).astype(np.float32),
        "b": rng.standard_normal((2, 3, 2)).astype(np.float32)}}, ref_scan8)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    a = p.parse_args()
    for f in (if_runtime, if_const, if_const_passthrough, if_shapes, loop_scan, loop_nested, loop_unroll, loop_while, loop_capture_shape,
              loop_carried_change, scan9, scan11, scan8):
        f(a.out)
    with open(os.path.join(a.out, "stamp"), "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()
