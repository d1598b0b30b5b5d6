"""Models whose shapes depend on computed data run as static stages and eager nodes
(docs/adr/0008-data-dependent-shapes.md). Expected values come from numpy and torchvision."""
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import frame

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")


def _model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def _f(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _i(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.INT64, shape)


def _nonzero_model():
    # y = (x * 2)[x > 0] reshaped to [count, 1]; cnt = count; z = x + 1 (no data dependence).
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["x2"]),
        helper.make_node("Greater", ["x", "zero"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Reshape", ["nz", "minus1"], ["idx"]),
        helper.make_node("Gather", ["x2", "idx"], ["sel"]),
        helper.make_node("Shape", ["sel"], ["cnt"]),
        helper.make_node("Concat", ["cnt", "one"], ["shape2"], axis=0),
        helper.make_node("Reshape", ["sel", "shape2"], ["y"]),
        helper.make_node("Add", ["x", "onef"], ["z"]),
    ]
    inits = [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
             helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
             helper.make_tensor("onef", TensorProto.FLOAT, [], [1.0]),
             helper.make_tensor("minus1", TensorProto.INT64, [1], [-1]),
             helper.make_tensor("one", TensorProto.INT64, [1], [1])]
    return _model(nodes, [_f("x", ["n"])], [_f("y", None), _i("cnt", [1]), _f("z", ["n"])], inits)


def no_interpreter():
    # For tests that count the stages' compiles: the interpreted tier (ADR 0007 stage C) would
    # serve a stage's first-seen boundary shapes without one.
    opts = frame.SessionOptions()
    opts.interpret_first_seen = False
    return opts


def test_nonzero_of_a_computed_value_feeds_gather_and_reshape():
    sess = frame.InferenceSession(_nonzero_model(), sess_options=no_interpreter())
    stages = sess.stages()
    assert any("eager NonZero" in s for s in stages), stages
    rng = np.random.default_rng(0)
    # Small boundaries after the NonZero are folded node by node; 200,000 elements (800 KB)
    # are past the fold limit, so that stage is compiled and cached like any session's.
    seen = set()
    for n in [7, 7, 12, 1, 200_000, 200_000]:
        x = rng.standard_normal(n).astype(np.float32)
        misses = sess.cache_stats()["misses"]
        y, cnt, z = sess.run(None, {"x": x})
        compiled = sess.cache_stats()["misses"] - misses
        # The first stage compiles once per length; the one after NonZero only when its
        # boundary is large (then once per new count: the second 200,000 draw has another).
        assert compiled == (0 if n in seen else 1) + (1 if n == 200_000 else 0), n
        seen.add(n)
        expected = (x * 2)[x > 0].reshape(-1, 1)
        np.testing.assert_array_equal(y, expected)
        np.testing.assert_array_equal(cnt, [expected.shape[0]])
        np.testing.assert_array_equal(z, x + 1)


def test_nothing_selected_is_a_normal_result_and_the_next_run_selects_again():
    sess = frame.InferenceSession(_nonzero_model())
    x = np.array([-1.0, -2.0, -3.0], np.float32)
    y, cnt, _ = sess.run(None, {"x": x})
    assert y.shape == (0, 1) and cnt.tolist() == [0]
    x = np.array([-1.0, 2.0, 3.0], np.float32)
    y, cnt, _ = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, [[4.0], [6.0]])


def _batched_nms_model():
    # torchvision's batched_nms export: If(numel(boxes) == 0, empty, NMS(boxes + offsets)).
    then_g = helper.make_graph(
        [helper.make_node("Constant", [], ["empty"],
                          value=helper.make_tensor("e", TensorProto.INT64, [0], []))],
        "then", [], [_i("empty", [0])])
    else_g = helper.make_graph([
        helper.make_node("Unsqueeze", ["boxes", "ax0"], ["b3"]),
        helper.make_node("Unsqueeze", ["scores", "ax0"], ["s2"]),
        helper.make_node("Unsqueeze", ["s2", "ax0"], ["s3"]),
        helper.make_node("NonMaxSuppression", ["b3", "s3", "maxout", "iou"], ["sel"]),
        helper.make_node("Gather", ["sel", "two"], ["col"], axis=1),
        helper.make_node("Squeeze", ["col", "ax1"], ["keep"]),
    ], "else", [], [_i("keep", None)])
    nodes = [
        helper.make_node("Greater", ["raw_scores", "thr"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Reshape", ["nz", "minus1"], ["idx"]),
        helper.make_node("Gather", ["raw_boxes", "idx"], ["boxes"], axis=0),
        helper.make_node("Gather", ["raw_scores", "idx"], ["scores"], axis=0),
        helper.make_node("Size", ["boxes"], ["numel"]),
        helper.make_node("Equal", ["numel", "zero_i"], ["is_empty"]),
        helper.make_node("If", ["is_empty"], ["keep"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Gather", ["boxes", "keep"], ["kept_boxes"], axis=0),
        helper.make_node("Gather", ["scores", "keep"], ["kept_scores"], axis=0),
    ]
    inits = [helper.make_tensor("thr", TensorProto.FLOAT, [], [0.2]),
             helper.make_tensor("minus1", TensorProto.INT64, [1], [-1]),
             helper.make_tensor("zero_i", TensorProto.INT64, [], [0]),
             helper.make_tensor("ax0", TensorProto.INT64, [1], [0]),
             helper.make_tensor("ax1", TensorProto.INT64, [1], [1]),
             helper.make_tensor("two", TensorProto.INT64, [1], [2]),
             helper.make_tensor("maxout", TensorProto.INT64, [1], [2**63 - 1]),
             helper.make_tensor("iou", TensorProto.FLOAT, [1], [0.5])]
    return _model(nodes, [_f("raw_boxes", ["n", 4]), _f("raw_scores", ["n"])],
                  [_f("kept_boxes", None), _f("kept_scores", None)], inits)


def _boxes(rng, n):
    xy = rng.random((n, 2), dtype=np.float32) * 100
    wh = rng.random((n, 2), dtype=np.float32) * 40 + 1
    return np.concatenate([xy, xy + wh], 1), rng.permutation(n).astype(np.float32) / n


def _nms_expected(boxes, scores):
    keep = scores > 0.2
    b, s = torch.from_numpy(boxes[keep]), torch.from_numpy(scores[keep])
    k = torchvision.ops.nms(b, s, 0.5).numpy()
    return boxes[keep][k], scores[keep][k]


def test_nms_inside_an_if_branch_matches_torchvision_and_handles_no_boxes():
    sess = frame.InferenceSession(_batched_nms_model())
    assert any("eager If" in s for s in sess.stages())
    rng = np.random.default_rng(1)
    for n in [50, 80, 50, 3]:
        boxes, scores = _boxes(rng, n)
        kb, ks = sess.run(None, {"raw_boxes": boxes, "raw_scores": scores})
        eb, es = _nms_expected(boxes, scores)
        np.testing.assert_array_equal(kb, eb)
        np.testing.assert_array_equal(ks, es)
    # No score above the threshold: the If takes its empty branch.
    boxes, scores = _boxes(rng, 10)
    kb, ks = sess.run(None, {"raw_boxes": boxes, "raw_scores": scores * 0.1})
    assert kb.shape == (0, 4) and ks.shape == (0,)
    kb, _ = sess.run(None, {"raw_boxes": boxes, "raw_scores": scores})
    assert kb.shape[0] == _nms_expected(boxes, scores)[0].shape[0] > 0


def test_concurrent_runs_with_different_counts_are_correct():
    sess = frame.InferenceSession(_batched_nms_model())
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(6):
                boxes, scores = _boxes(rng, int(rng.integers(5, 60)))
                kb, ks = sess.run(None, {"raw_boxes": boxes, "raw_scores": scores})
                eb, es = _nms_expected(boxes, scores)
                np.testing.assert_array_equal(kb, eb)
                np.testing.assert_array_equal(ks, es)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_specializations_stay_bounded_over_many_counts():
    opts = no_interpreter()
    opts.max_specializations = 4
    sess = frame.InferenceSession(_batched_nms_model(), sess_options=opts)
    rng = np.random.default_rng(2)
    for i in range(40):
        boxes, scores = _boxes(rng, 10 + i)
        sess.run(None, {"raw_boxes": boxes, "raw_scores": scores})
    stats = sess.cache_stats()
    # Each stage session keeps at most 4 specializations.
    stage_count = sum(1 for s in sess.stages() if s.strip().startswith("stage"))
    assert stats["entries"] <= 4 * stage_count, (stats, sess.stages())
    assert stats["evictions"] > 0


def test_compress_and_unique_of_computed_values():
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["cond"]),
        helper.make_node("Compress", ["x", "cond"], ["pos"], axis=0),
        helper.make_node("Abs", ["x"], ["ax"]),
        helper.make_node("Floor", ["ax"], ["fx"]),
        helper.make_node("Unique", ["fx"], ["u", "ui", "uinv", "uc"], sorted=1),
    ]
    inits = [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])]
    m = _model(nodes, [_f("x", ["n"])],
               [_f("pos", None), _f("u", None), _i("ui", None), _i("uinv", None),
                _i("uc", None)], inits, opset=11)
    sess = frame.InferenceSession(m)
    rng = np.random.default_rng(3)
    for n in [20, 9]:
        x = (rng.standard_normal(n) * 3).astype(np.float32)
        pos, u, ui, uinv, uc = sess.run(None, {"x": x})
        np.testing.assert_array_equal(pos, x[x > 0])
        eu, eui, euinv, euc = np.unique(np.floor(np.abs(x)), return_index=True,
                                        return_inverse=True, return_counts=True)
        np.testing.assert_array_equal(u, eu)
        np.testing.assert_array_equal(ui, eui)
        np.testing.assert_array_equal(uinv, euinv)
        np.testing.assert_array_equal(uc, euc)


def test_a_loop_whose_body_holds_nonzero_computes_its_condition_and_scans():
    # Each iteration i keeps x[x > i] (NonZero + Gather: a data-dependent count), scans its sum,
    # adds it to a carried total and continues while something was kept (cond from the body).
    body = helper.make_graph([
        helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
        helper.make_node("Greater", ["x", "i_f"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Reshape", ["nz", "minus1"], ["idx"]),
        helper.make_node("Gather", ["x", "idx"], ["sel"], axis=0),
        helper.make_node("ReduceSum", ["sel"], ["s"], keepdims=0),
        helper.make_node("Add", ["acc", "s"], ["acc_out"]),
        helper.make_node("Shape", ["sel"], ["shp"]),
        helper.make_node("Greater", ["shp", "zero_i"], ["gt"]),
        helper.make_node("Squeeze", ["gt", "ax0"], ["c_out"]),
    ], "body", [_i("i", []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                _f("acc", [])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), _f("acc_out", []),
         _f("s", [])])
    nodes = [helper.make_node("Loop", ["m", "", "acc0"], ["total", "sums"], body=body)]
    inits = [helper.make_tensor("m", TensorProto.INT64, [], [10]),
             helper.make_tensor("acc0", TensorProto.FLOAT, [], [0.0]),
             helper.make_tensor("minus1", TensorProto.INT64, [1], [-1]),
             helper.make_tensor("zero_i", TensorProto.INT64, [1], [0]),
             helper.make_tensor("ax0", TensorProto.INT64, [1], [0])]
    m = _model(nodes, [_f("x", ["n"])], [_f("total", []), _f("sums", None)], inits)
    sess = frame.InferenceSession(m)
    assert any("eager Loop" in s for s in sess.stages()), sess.stages()
    for x in ([0.5, 2.5, 1.5, 3.5], [5.0, 0.25], [-1.0], [9.5] * 3):
        x = np.array(x, np.float32)
        sums = []
        for i in range(10):
            sel = x[x > i]
            sums.append(sel.sum())
            if sel.size == 0:
                break
        total, got = sess.run(None, {"x": x})
        np.testing.assert_allclose(got, np.array(sums, np.float32), rtol=1e-6)
        np.testing.assert_allclose(total, np.float32(sum(sums)), rtol=1e-6)


def test_loop_over_a_computed_count_whose_carried_value_grows():
    # torchvision's mask paste: for each selected row, concatenate a row-dependent slice onto a
    # carried tensor that starts empty; the trip count is the NonZero count.
    body = helper.make_graph([
        helper.make_node("Gather", ["sel", "i"], ["v"], axis=0),
        helper.make_node("Mul", ["v", "three"], ["v3"]),
        helper.make_node("Unsqueeze", ["v3", "ax0"], ["row"]),
        helper.make_node("Concat", ["acc", "row"], ["acc_out"], axis=0),
        helper.make_node("Identity", ["c"], ["c_out"]),
    ], "body", [_i("i", []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                _f("acc", None)],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), _f("acc_out", None)])
    nodes = [
        helper.make_node("Gather", ["x", "zero_i"], ["x0"], axis=1),
        helper.make_node("Greater", ["x0", "zero"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Reshape", ["nz", "minus1"], ["idx"]),
        helper.make_node("Gather", ["x", "idx"], ["sel"], axis=0),
        helper.make_node("Shape", ["sel"], ["shape"]),
        helper.make_node("Gather", ["shape", "ax0"], ["count"], axis=0),
        helper.make_node("Squeeze", ["count", "ax0"], ["trips"]),
        helper.make_node("Loop", ["trips", "yes", "empty"], ["pasted"], body=body),
    ]
    inits = [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
             helper.make_tensor("three", TensorProto.FLOAT, [], [3.0]),
             helper.make_tensor("minus1", TensorProto.INT64, [1], [-1]),
             helper.make_tensor("ax0", TensorProto.INT64, [1], [0]),
             helper.make_tensor("yes", TensorProto.BOOL, [], [True]),
             helper.make_tensor("empty", TensorProto.FLOAT, [0, 4], []),
             helper.make_tensor("zero_i", TensorProto.INT64, [], [0])]
    m = _model(nodes, [_f("x", ["n", 4])], [_f("pasted", None)], inits)
    sess = frame.InferenceSession(m)
    rng = np.random.default_rng(4)
    for n in [6, 9, 6, 5]:
        x = rng.standard_normal((n, 4)).astype(np.float32)
        if n == 5:
            x[:, 0] = -np.abs(x[:, 0]) - 1  # nothing selected: zero iterations
        (pasted,) = sess.run(None, {"x": x})
        sel = x[x[:, 0] > 0]
        np.testing.assert_array_equal(pasted, (sel * 3).reshape(-1, 4))


def test_if_branches_are_scopes_of_their_own():
    # Both branches name a Constant 'k' (valid ONNX: each branch is its own scope).
    def branch(name, k):
        return helper.make_graph([
            helper.make_node("Constant", [], ["k"],
                             value=helper.make_tensor("kv", TensorProto.INT64, [], [k])),
            helper.make_node("NonZero", ["x"], ["nz"]),
            helper.make_node("Add", ["nz", "k"], ["out_" + name]),
        ], name, [], [_i("out_" + name, None)])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["c"]),
        helper.make_node("If", ["c"], ["y"], then_branch=branch("then", 10),
                         else_branch=branch("else", -100)),
    ]
    m = _model(nodes, [_f("x", [3])], [_i("y", None)],
               [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])])
    sess = frame.InferenceSession(m)
    for x in ([1.0, 0.0, 2.0], [-1.0, 0.0, -2.0]):
        x = np.array(x, np.float32)
        (y,) = sess.run(None, {"x": x})
        np.testing.assert_array_equal(y, np.array(np.nonzero(x)) + (10 if x.sum() > 0 else -100))


def test_writing_into_an_output_does_not_change_the_model():
    # 'w' (an initializer) is both an output and an operand after the NonZero.
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Reshape", ["nz", "minus1"], ["idx"]),
        helper.make_node("Gather", ["w", "idx"], ["z"], axis=0),
        helper.make_node("Identity", ["w"], ["w_out"]),
    ]
    inits = [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
             helper.make_tensor("minus1", TensorProto.INT64, [1], [-1]),
             helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])]
    m = _model(nodes, [_f("x", [3])], [_f("z", None), _f("w_out", [3])], inits)
    sess = frame.InferenceSession(m)
    x = np.array([1.0, -1.0, 1.0], np.float32)
    z, w_out = sess.run(None, {"x": x})
    z[...] = -7
    w_out[...] = -7
    z, w_out = sess.run(None, {"x": x})
    np.testing.assert_array_equal(z, [1.0, 3.0])
    np.testing.assert_array_equal(w_out, [1.0, 2.0, 3.0])


def test_an_eager_node_over_the_memory_limit_is_an_error_naming_it():
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="big_nonzero")]
    m = _model(nodes, [_f("x", ["n"])], [_i("nz", None)])
    opts = frame.SessionOptions()
    opts.max_memory_bytes = 1 << 20
    sess = frame.InferenceSession(m, sess_options=opts)
    with pytest.raises(ValueError, match="big_nonzero.*over the limit"):
        sess.run(None, {"x": np.ones(200_000, np.float32)})
    (nz,) = sess.run(None, {"x": np.array([0.0, 1.0], np.float32)})
    np.testing.assert_array_equal(nz, [[1]])


def test_profiling_a_staged_model_shows_its_stages_and_eager_nodes():
    opts = frame.SessionOptions()
    opts.enable_profiling = True
    sess = frame.InferenceSession(_nonzero_model(), opts)
    rng = np.random.default_rng(3)
    for n in (9, 300_000):  # folded tail, then a compiled tail
        sess.run(None, {"x": rng.standard_normal(n).astype(np.float32)})
    prof = sess.profile()
    assert prof["runs"] == 2
    rows = prof["nodes"]
    eager = [r for r in rows if r["path"] == "eager"]
    assert [r["op"] for r in eager] == ["NonZero"] and eager[0]["calls"] == 2, rows
    assert any(r["path"] == "folded" for r in rows), rows
    # The compiled stages' own nodes are there too (Mul of the first stage, Gather after it).
    ops = {r["op"] for r in rows if r["path"] not in ("eager", "folded")}
    assert "gather" in ops and ({"mul", "add"} & ops or any("fused" in o for o in ops)), ops


def test_a_small_tail_holding_an_if_is_folded_not_compiled_per_count():
    # After NonZero: y = sel squeezed to a scalar when one value is kept, else sel (torchvision's
    # batched_nms tail). The If's condition is computed from the count, so folding the tail
    # inlines the chosen branch; no stage is compiled per new count.
    then_g = helper.make_graph([helper.make_node("Squeeze", ["sel"], ["t"])], "then", [],
                               [_f("t", None)])
    else_g = helper.make_graph([helper.make_node("Identity", ["sel"], ["e"])], "else", [],
                               [_f("e", None)])
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Reshape", ["nz", "minus1"], ["idx"]),
        helper.make_node("Gather", ["x", "idx"], ["sel"], axis=0),
        helper.make_node("Shape", ["sel"], ["shp"]),
        helper.make_node("Equal", ["shp", "one"], ["single1"]),
        helper.make_node("Squeeze", ["single1", "ax0"], ["single"]),
        helper.make_node("If", ["single"], ["y"], then_branch=then_g, else_branch=else_g),
    ]
    inits = [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
             helper.make_tensor("minus1", TensorProto.INT64, [1], [-1]),
             helper.make_tensor("one", TensorProto.INT64, [1], [1]),
             helper.make_tensor("ax0", TensorProto.INT64, [1], [0])]
    sess = frame.InferenceSession(_model(nodes, [_f("x", ["n"])], [_f("y", None)], inits),
                                  sess_options=no_interpreter())
    rng = np.random.default_rng(5)
    misses = None
    for k in (3, 1, 5, 0, 1, 7, 2):
        x = -np.abs(rng.standard_normal(9)).astype(np.float32) - 0.5
        x[rng.choice(9, k, replace=False)] = rng.uniform(0.5, 2.0, k).astype(np.float32)
        (y,) = sess.run(None, {"x": x})
        sel = x[x > 0]
        np.testing.assert_array_equal(y, sel[0] if k == 1 else sel)
        assert y.shape == (() if k == 1 else (k,))
        if misses is None:
            misses = sess.cache_stats()["misses"]
    assert sess.cache_stats()["misses"] == misses, sess.stages()
