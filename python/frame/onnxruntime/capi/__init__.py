"""ONNX Runtime's ``onnxruntime.capi`` package layout, so scripts that import its exception
classes from ``capi.onnxruntime_pybind11_state`` run unchanged (docs/python.md)."""
