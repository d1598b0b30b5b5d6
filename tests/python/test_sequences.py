"""Sequences and optionals as values of a run (docs/adr/0008-data-dependent-shapes.md,
"Sequences and optionals"): Python takes and returns a list of arrays for a sequence and None
for an absent optional, as ONNX Runtime does. Expected values come from numpy."""
import json
import os
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper

import frame


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def _f(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _seq(name, elem=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_sequence_value_info(name, elem, shape)


def _opt(name, elem=TensorProto.FLOAT, shape=None):
    return helper.make_value_info(
        name, helper.make_optional_type_proto(helper.make_tensor_type_proto(elem, shape)))


def test_split_map_and_concat_match_numpy():
    # rows = split(x, 1, axis 0, keepdims 0); each row * 2 + its index-free bias; stacked back
    # along a new axis 1, and concatenated along axis 0.
    body = helper.make_graph(
        [helper.make_node("Mul", ["r", "two"], ["m"]), helper.make_node("Add", ["m", "b"], ["o"])],
        "body", [_f("r", None), _f("b", None)], [_f("o", None)],
        initializer=[helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])])
    nodes = [
        helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
        helper.make_node("SequenceMap", ["rows", "b"], ["mapped"], body=body),
        helper.make_node("ConcatFromSequence", ["mapped"], ["stacked"], axis=1, new_axis=1),
        helper.make_node("ConcatFromSequence", ["mapped"], ["flat"], axis=0),
        helper.make_node("SequenceLength", ["mapped"], ["count"]),
    ]
    m = _model(nodes, [_f("x", ["n", 3]), _f("b", [3])],
               [_f("stacked", None), _f("flat", None),
                helper.make_tensor_value_info("count", TensorProto.INT64, [])])
    sess = frame.InferenceSession(m)
    assert sess.stages(), "a model with sequence ops runs as stages"
    rng = np.random.default_rng(1)
    b = rng.standard_normal(3).astype(np.float32)
    for n in (4, 1, 7):
        x = rng.standard_normal((n, 3)).astype(np.float32)
        stacked, flat, count = sess.run(None, {"x": x, "b": b})
        rows = [x[i] * 2 + b for i in range(n)]
        np.testing.assert_allclose(stacked, np.stack(rows, axis=1), rtol=1e-6)
        np.testing.assert_allclose(flat, np.concatenate(rows, axis=0), rtol=1e-6)
        assert count == n


def test_sequence_inputs_and_outputs_are_lists_of_arrays():
    # out = seq with x inserted at position p, at = seq[-1], len = len(seq) + 1.
    nodes = [
        helper.make_node("SequenceInsert", ["seq", "x", "p"], ["out"]),
        helper.make_node("SequenceAt", ["seq", "minus1"], ["at"]),
        helper.make_node("SequenceLength", ["out"], ["len"]),
    ]
    inits = [helper.make_tensor("minus1", TensorProto.INT64, [], [-1])]
    m = _model(nodes, [_seq("seq"), _f("x", None),
                       helper.make_tensor_value_info("p", TensorProto.INT64, [])],
               [_seq("out"), _f("at", None), helper.make_tensor_value_info("len", TensorProto.INT64, [])],
               inits)
    sess = frame.InferenceSession(m)
    assert sess.get_inputs()[0].type == "seq(tensor(float))"
    assert sess.get_outputs()[0].type == "seq(tensor(float))"
    seq = [np.arange(k + 1, dtype=np.float32) * (k + 1) for k in range(3)]
    x = np.full((2, 2), 7.0, np.float32)
    out, at, length = sess.run(None, {"seq": seq, "x": x, "p": np.array(1, np.int64)})
    expected = seq[:1] + [x] + seq[1:]
    assert isinstance(out, list) and len(out) == 4
    for got, want in zip(out, expected):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(at, seq[-1])
    assert length == 4
    # The output does not alias the caller's arrays.
    before = [a.copy() for a in seq]
    for a in out:
        a[...] = -1
    for a, b in zip(seq, before):
        np.testing.assert_array_equal(a, b)
    # A position out of range and a tensor where a sequence goes are errors naming them.
    with pytest.raises(Exception, match="position 9 is out of range"):
        sess.run(None, {"seq": seq, "x": x, "p": np.array(9, np.int64)})
    with pytest.raises(Exception, match="input 'seq' is a tensor"):
        sess.run(None, {"seq": x, "x": x, "p": np.array(0, np.int64)})
    with pytest.raises(Exception, match="input 'seq' element 1 is i64"):
        sess.run(None, {"seq": [seq[0], np.zeros(2, np.int64)], "x": x,
                        "p": np.array(0, np.int64)})


def test_an_absent_optional_is_none_and_a_present_one_its_array():
    # y = has(o) ? get(o) + 1 : zeros(1); has = has(o); o passes through.
    then_g = helper.make_graph([helper.make_node("OptionalGetElement", ["o"], ["e"]),
                                helper.make_node("Add", ["e", "one"], ["t"])],
                               "then", [], [_f("t", None)])
    else_g = helper.make_graph([], "else", [], [_f("zero1", None)],
                               initializer=[helper.make_tensor("zero1", TensorProto.FLOAT, [1], [0.0])])
    nodes = [
        helper.make_node("OptionalHasElement", ["o"], ["has"]),
        helper.make_node("If", ["has"], ["y"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Identity", ["o"], ["o_out"]),
    ]
    inits = [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])]
    m = _model(nodes, [_opt("o")],
               [_f("y", None), helper.make_tensor_value_info("has", TensorProto.BOOL, []),
                _opt("o_out")], inits)
    sess = frame.InferenceSession(m)
    assert sess.get_inputs()[0].type == "optional(tensor(float))"
    x = np.array([1.5, -2.0, 3.0], np.float32)
    y, has, o = sess.run(None, {"o": x})
    np.testing.assert_array_equal(y, x + 1)
    assert bool(has) is True
    np.testing.assert_array_equal(o, x)
    y, has, o = sess.run(None, {"o": None})
    np.testing.assert_array_equal(y, np.zeros(1, np.float32))
    assert bool(has) is False
    assert o is None


def test_none_for_a_required_input_is_an_error():
    m = _model([helper.make_node("SequenceLength", ["s"], ["n"])], [_seq("s")],
               [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    sess = frame.InferenceSession(m)
    with pytest.raises(Exception, match="input 's' is none"):
        sess.run(None, {"s": None})
    (n,) = sess.run(None, {"s": []})
    assert n == 0


def test_a_loop_builds_a_sequence_of_a_computed_length():
    # for i in range(m): seq.append(x[:i + 1] * i); the result is concatenated, and a large
    # concatenation feeds a MatMul stage that is compiled (past the fold limit).
    body = helper.make_graph([
        helper.make_node("Add", ["i", "one_i"], ["end"]),
        helper.make_node("Unsqueeze", ["end", "ax0"], ["end1"]),
        helper.make_node("Slice", ["x", "zero1", "end1"], ["part"]),
        helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["part", "i_f"], ["scaled"]),
        helper.make_node("SequenceInsert", ["s", "scaled"], ["s_out"]),
        helper.make_node("Identity", ["c"], ["c_out"]),
    ], "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                helper.make_tensor_value_info("c", TensorProto.BOOL, []), _seq("s")],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), _seq("s_out")])
    nodes = [
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
        helper.make_node("Loop", ["m", "", "empty"], ["seq"], body=body),
        helper.make_node("ConcatFromSequence", ["seq"], ["cat"], axis=0),
        helper.make_node("MatMul", ["cat", "w"], ["y"]),
    ]
    inits = [helper.make_tensor("one_i", TensorProto.INT64, [], [1]),
             helper.make_tensor("ax0", TensorProto.INT64, [1], [0]),
             helper.make_tensor("zero1", TensorProto.INT64, [1], [0])]
    rng = np.random.default_rng(2)
    w = rng.standard_normal((64, 8)).astype(np.float32)
    inits.append(helper.make_tensor("w", TensorProto.FLOAT, [64, 8], w.ravel()))
    m = _model(nodes, [helper.make_tensor_value_info("m", TensorProto.INT64, []),
                       _f("x", ["n", 64])], [_seq("seq"), _f("y", None)], inits)
    opts = frame.SessionOptions()
    opts.background_compile = False  # the stage compiles on its run's path: counted in misses
    sess = frame.InferenceSession(m, sess_options=opts)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    with pytest.raises(Exception, match="empty sequence"):  # ConcatFromSequence of nothing
        sess.run(None, {"m": np.array(0, np.int64), "x": x})
    for trips, n in ((3, 5), (80, 100), (3, 5)):
        x = rng.standard_normal((n, 64)).astype(np.float32)
        seq, y = sess.run(None, {"m": np.array(trips, np.int64), "x": x})
        expected = [x[:i + 1] * i for i in range(trips)]
        assert len(seq) == trips
        for got, want in zip(seq, expected):
            np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_allclose(y, np.concatenate(expected) @ w, rtol=1e-4, atol=1e-4)
    # 80 trips concatenate 3,240 rows (829 KB): that MatMul stage was compiled, not folded.
    assert sess.cache_stats()["misses"] >= 1


def test_frame_run_reads_a_directory_as_a_sequence_and_none_as_an_absent_optional(tmp_path):
    cli = os.environ.get("FRAME_CLI")
    if not cli:
        pytest.skip("FRAME_CLI is not set (ctest sets it)")
    # out = seq + [x]; n = len(out); has = has(o); o_out = o.
    nodes = [helper.make_node("SequenceInsert", ["seq", "x"], ["out"]),
             helper.make_node("SequenceLength", ["out"], ["n"]),
             helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("Identity", ["o"], ["o_out"])]
    m = _model(nodes, [_seq("seq"), _f("x", [2]), _opt("o", shape=[3])],
               [_seq("out"), helper.make_tensor_value_info("n", TensorProto.INT64, []),
                helper.make_tensor_value_info("has", TensorProto.BOOL, []), _opt("o_out")],
               opset=18)
    path = tmp_path / "m.onnx"
    path.write_bytes(m)
    seq_dir = tmp_path / "seq"
    seq_dir.mkdir()
    elements = [np.arange(3, dtype=np.float32), np.ones((2, 2), np.float32)]
    for k, e in enumerate(elements):
        np.save(seq_dir / f"{k}.npy", e)
    x = np.array([5.0, 6.0], np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    done = subprocess.run([cli, "run", str(path), "--input", f"seq={seq_dir}", "--input",
                           f"x={tmp_path / 'x.npy'}", "--input", "o=none", "--output-dir",
                           str(out), "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    j = json.loads(done.stdout)
    outputs = {o["name"]: o for o in j["outputs"]}
    assert outputs["out"]["kind"] == "sequence"
    assert [e["shape"] for e in outputs["out"]["elements"]] == [[3], [2, 2], [2]]
    assert outputs["o_out"]["kind"] == "none"
    for k, want in enumerate(elements + [x]):
        np.testing.assert_array_equal(np.load(out / "out" / f"{k}.npy"), want)
    assert not (out / "out" / "3.npy").exists()
    assert np.load(out / "n.npy") == 3
    assert not np.load(out / "has.npy")
    assert not (out / "o_out.npy").exists()  # an absent optional writes nothing
    # The written sequence reads back as an input; a present optional is its .npy file.
    np.save(tmp_path / "o.npy", np.array([1, 2, 3], np.float32))
    again = subprocess.run([cli, "run", str(path), "--input", f"seq={out / 'out'}", "--input",
                            f"x={tmp_path / 'x.npy'}", "--input", f"o={tmp_path / 'o.npy'}",
                            "--json"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    outputs = {o["name"]: o for o in json.loads(again.stdout)["outputs"]}
    assert outputs["n"]["first"] == [4]
    assert outputs["has"]["first"] == [1]
    assert outputs["o_out"]["shape"] == [3]
    # A gap in a sequence directory is an error naming the missing file.
    (seq_dir / "1.npy").rename(seq_dir / "2.npy")
    gap = subprocess.run([cli, "run", str(path), "--input", f"seq={seq_dir}", "--input",
                          f"x={tmp_path / 'x.npy'}", "--input", "o=none"], capture_output=True,
                         text=True, timeout=120)
    assert gap.returncode != 0 and "has 2.npy but no 1.npy" in gap.stderr, gap.stderr
    # A later run whose optional is absent removes the stale file of an earlier present one.
    subprocess.run([cli, "run", str(path), "--input", f"seq={out / 'out'}", "--input",
                    f"x={tmp_path / 'x.npy'}", "--input", f"o={tmp_path / 'o.npy'}",
                    "--output-dir", str(out)], check=True, capture_output=True, timeout=120)
    assert (out / "o_out.npy").exists()
    subprocess.run([cli, "run", str(path), "--input", f"seq={out / 'out'}", "--input",
                    f"x={tmp_path / 'x.npy'}", "--input", "o=none", "--output-dir", str(out)],
                   check=True, capture_output=True, timeout=120)
    assert not (out / "o_out.npy").exists()


def test_an_output_of_another_kind_than_declared_is_an_error_naming_it():
    # y is declared a tensor but the graph computes a sequence (a malformed model).
    m = _model([helper.make_node("SequenceConstruct", ["x"], ["y"])], [_f("x", [3])],
               [_f("y", [3])])
    sess = frame.InferenceSession(m)
    with pytest.raises(Exception, match="output 'y' is declared a tensor, the graph computed seq"):
        sess.run(None, {"x": np.ones(3, np.float32)})


def test_an_omitted_optional_input_is_absent():
    m = _model([helper.make_node("OptionalHasElement", ["o"], ["has"])], [_opt("o")],
               [helper.make_tensor_value_info("has", TensorProto.BOOL, [])], opset=18)
    sess = frame.InferenceSession(m)
    assert not sess.run(None, {})[0]
    assert sess.run(None, {"o": np.ones(2, np.float32)})[0]


def test_a_loop_that_runs_no_iteration_scans_the_declared_element_shape():
    # The body holds a sequence op (an eager Loop); its scan output is declared f32[2].
    body = helper.make_graph([
        helper.make_node("SequenceConstruct", ["x"], ["s"]),
        helper.make_node("SequenceAt", ["s", "zero"], ["e"]),
        helper.make_node("Identity", ["c"], ["c_out"]),
    ], "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), _f("e", [2])],
        initializer=[helper.make_tensor("zero", TensorProto.INT64, [], [0])])
    nodes = [helper.make_node("Loop", ["m", ""], ["scan"], body=body)]
    m = _model(nodes, [helper.make_tensor_value_info("m", TensorProto.INT64, []), _f("x", [2])],
               [_f("scan", None)])
    sess = frame.InferenceSession(m)
    x = np.array([1.0, 2.0], np.float32)
    for trips in (0, 3):
        (scan,) = sess.run(None, {"m": np.array(trips, np.int64), "x": x})
        np.testing.assert_array_equal(scan, np.tile(x, (trips, 1)).reshape(trips, 2))
