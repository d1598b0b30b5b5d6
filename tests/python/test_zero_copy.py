"""numpy in and out without copies: outputs are owned by frame memory, inputs are borrowed.

tracemalloc sees numpy's allocations (numpy reports them to it) but not frame's, so a copy of
an input shows up as traced memory and a borrowed one does not."""

from __future__ import annotations

import tracemalloc

import numpy as np

import frame
from conftest import add_relu_model

N = 1 << 20  # 4 MiB of float32 per input


def _session():
    return frame.InferenceSession(add_relu_model(("N",)), threads=1)


def test_outputs_are_handed_over_without_copy():
    sess = _session()
    x = np.ones(8, np.float32)
    (r,) = sess.run(None, {"x": x, "y": x})
    assert not r.flags.owndata
    assert type(r.base).__name__ == "PyCapsule"  # owns the frame Tensor
    assert not np.shares_memory(r, x)
    r[0] = 7  # writable, and independent of a later run
    (r2,) = sess.run(None, {"x": x, "y": x})
    assert r2[0] == 2 and r[0] == 7


def _traced_peak(sess, x, y) -> int:
    sess.run(None, {"x": x, "y": y})  # compile outside the measurement
    tracemalloc.start()
    try:
        sess.run(None, {"x": x, "y": y})
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_contiguous_inputs_are_borrowed_and_strided_ones_copied():
    sess = _session()
    x = np.linspace(-1, 1, N, dtype=np.float32)
    assert _traced_peak(sess, x, x) < N  # no input copy (4 MiB each)
    strided = np.linspace(-1, 1, 2 * N, dtype=np.float32)[::2]
    assert _traced_peak(sess, strided, strided) >= 2 * N * 4  # both copied once
    (r,) = sess.run(None, {"x": strided, "y": x})
    np.testing.assert_array_equal(r, np.maximum(strided + x, 0))


def test_fortran_order_input_gives_correct_result():
    sess = frame.InferenceSession(add_relu_model((3, 4)))
    x = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4) - 6)
    (r,) = sess.run(None, {"x": x, "y": x})
    np.testing.assert_array_equal(r, np.maximum(2 * x, 0))


def test_byte_swapped_input_is_converted():
    sess = frame.InferenceSession(add_relu_model((2, 2)))
    x = np.array([[1, -2], [3, -4]], dtype=">f4")
    (r,) = sess.run(None, {"x": x, "y": x})
    np.testing.assert_array_equal(r, np.array([[2, 0], [6, 0]], np.float32))
