#!/usr/bin/python3
"""Writes swish.onnx (y = com.example::Swish(x), x f32[2,3]), an input x.npy and the expected
output expected.npy (numpy) into the directory given: make_model.py OUT_DIR."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, save

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
node = helper.make_node("Swish", ["x"], ["y"], domain="com.example", name="swish")
model = helper.make_model(helper.make_graph([node], "swish", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17),
                                         helper.make_opsetid("com.example", 1)])
save(model, os.path.join(out, "swish.onnx"))
xv = np.array([[-3.0, -1.0, 0.0], [0.5, 2.0, 6.0]], np.float32)
np.save(os.path.join(out, "x.npy"), xv)
np.save(os.path.join(out, "expected.npy"), (xv / (1.0 + np.exp(-xv.astype(np.float64))))
        .astype(np.float32))
