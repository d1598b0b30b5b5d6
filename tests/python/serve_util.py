"""Helpers of the `frame serve` tests: a model repository of small ONNX models and a server
process on free loopback ports (docs/serving.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import numpy as np
from onnx import TensorProto, helper

from conftest import SOURCE_DIR, model_bytes, vinfo

FRAME_CLI = os.environ.get("FRAME_CLI", os.path.join(SOURCE_DIR, "build", "frame"))

# Every dtype the protocol and frame share: (datatype name, numpy dtype, ONNX element type).
DATATYPES = [
    ("BOOL", np.bool_, TensorProto.BOOL),
    ("UINT8", np.uint8, TensorProto.UINT8),
    ("UINT16", np.uint16, TensorProto.UINT16),
    ("UINT32", np.uint32, TensorProto.UINT32),
    ("UINT64", np.uint64, TensorProto.UINT64),
    ("INT8", np.int8, TensorProto.INT8),
    ("INT16", np.int16, TensorProto.INT16),
    ("INT32", np.int32, TensorProto.INT32),
    ("INT64", np.int64, TensorProto.INT64),
    ("FP16", np.float16, TensorProto.FLOAT16),
    ("BF16", np.uint16, TensorProto.BFLOAT16),  # numpy has no bfloat16: its bits as uint16
    ("FP32", np.float32, TensorProto.FLOAT),
    ("FP64", np.float64, TensorProto.DOUBLE),
]


def _write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def add_model(op: str) -> bytes:
    """r = relu(op(x, y)) over f32[N, 4]."""
    return model_bytes(
        [helper.make_node(op, ["x", "y"], ["z"]), helper.make_node("Relu", ["z"], ["r"])],
        [vinfo("x", TensorProto.FLOAT, ("N", 4)), vinfo("y", TensorProto.FLOAT, ("N", 4))],
        [vinfo("r", TensorProto.FLOAT, ("N", 4))])


def identity_model() -> bytes:
    """One Identity per datatype: in_<T> -> out_<T>, shape [2, 3]."""
    nodes, ins, outs = [], [], []
    for name, _, elem in DATATYPES:
        nodes.append(helper.make_node("Identity", [f"in_{name}"], [f"out_{name}"]))
        ins.append(vinfo(f"in_{name}", elem, (2, 3)))
        outs.append(vinfo(f"out_{name}", elem, (2, 3)))
    return model_bytes(nodes, ins, outs)


MLP_W = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5.5) / 4
MLP_B = np.array([0.5, -1.0, 2.0], dtype=np.float32)


def mlp_model() -> bytes:
    """y = x @ W + b over f32[N, 4] -> f32[N, 3]."""
    return model_bytes(
        [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])],
        [vinfo("x", TensorProto.FLOAT, ("N", 4))], [vinfo("y", TensorProto.FLOAT, ("N", 3))],
        initializers=[("W", MLP_W), ("b", MLP_B)])


def make_repository(root: str) -> str:
    """add_relu (versions 1: relu(x + y), 2: relu(x - y)), dtypes, small_cnn, mlp_batched
    (max_batch_size 8, 50 ms queue delay), mlp, mlp_slow_batch (1 s queue delay), broken (not an
    ONNX file), bad_config (an unknown key)."""
    _write(os.path.join(root, "add_relu", "1", "model.onnx"), add_model("Add"))
    _write(os.path.join(root, "add_relu", "2", "model.onnx"), add_model("Sub"))
    _write(os.path.join(root, "dtypes", "model.onnx"), identity_model())
    os.makedirs(os.path.join(root, "small_cnn"), exist_ok=True)
    shutil.copy(os.path.join(SOURCE_DIR, "models", "small_cnn.onnx"),
                os.path.join(root, "small_cnn", "model.onnx"))
    _write(os.path.join(root, "mlp_batched", "model.onnx"), mlp_model())
    _write(os.path.join(root, "mlp_batched", "config.json"),
           json.dumps({"max_batch_size": 8, "max_queue_delay_us": 50000,
                       "instances": 1}).encode())
    _write(os.path.join(root, "mlp", "model.onnx"), mlp_model())
    # Holds a batch open for 1 s: requests are in flight long enough to test shutdown.
    _write(os.path.join(root, "mlp_slow_batch", "model.onnx"), mlp_model())
    _write(os.path.join(root, "mlp_slow_batch", "config.json"),
           json.dumps({"max_batch_size": 64, "max_queue_delay_us": 1000000}).encode())
    _write(os.path.join(root, "broken", "model.onnx"), b"not an onnx model")
    _write(os.path.join(root, "bad_config", "model.onnx"), mlp_model())
    _write(os.path.join(root, "bad_config", "config.json"), b'{"max_batch_sise": 4}')
    # max_batch_size over a model whose dim 0 is fixed: refused at load, naming the input.
    os.makedirs(os.path.join(root, "fixed_batch"), exist_ok=True)
    shutil.copy(os.path.join(SOURCE_DIR, "models", "small_cnn.onnx"),
                os.path.join(root, "fixed_batch", "model.onnx"))
    _write(os.path.join(root, "fixed_batch", "config.json"), b'{"max_batch_size": 4}')
    _write(os.path.join(root, "batch_reduced", "model.onnx"), model_bytes(
        [helper.make_node("ReduceSum", ["x"], ["z"], keepdims=0, axes=[0])],
        [vinfo("x", TensorProto.FLOAT, ("N", "M"))], [vinfo("z", TensorProto.FLOAT, ("M",))],
        opset=12))
    _write(os.path.join(root, "batch_reduced", "config.json"), b'{"max_batch_size": 4}')
    # Not a canonical version number: ignored (with a message), never ordered before "2".
    _write(os.path.join(root, "add_relu", "007", "model.onnx"), add_model("Mul"))
    return root


class ServerProcess:
    """`frame serve` on free loopback ports, stopped with SIGTERM by stop()."""

    def __init__(self, repository: str, *args: str, grpc: bool = True):
        cmd = [FRAME_CLI, "serve", "--model-repository", repository, "--http-port", "0",
               "--grpc-port", "0" if grpc else "-1", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.http_port = None
        self.grpc_port = None
        self.stdout_lines: list[str] = []
        self.stderr_lines: list[str] = []
        # stderr is read all along (a full pipe would block the server); a server that is not
        # ready within 60 s is killed, which ends the startup loop below.
        self._err_reader = threading.Thread(target=self._drain_stderr, daemon=True)
        self._err_reader.start()
        watchdog = threading.Timer(60, self.proc.kill)
        watchdog.start()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.stdout_lines.append(line)
            m = re.match(r"frame serve: (HTTP|gRPC) listening on [^:]+:(\d+)", line)
            if m:
                if m.group(1) == "HTTP":
                    self.http_port = int(m.group(2))
                else:
                    self.grpc_port = int(m.group(2))
            if line.startswith("frame serve: ready"):
                break
        watchdog.cancel()
        if self.http_port is None and self.grpc_port is None:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("frame serve did not start: " + "".join(self.stdout_lines) +
                               "".join(self.stderr_lines))
        # Drain the rest of stdout so the server never blocks on a full pipe.
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        self.url = f"http://127.0.0.1:{self.http_port}"

    def _drain_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self.stdout_lines.append(line)

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def http(method: str, url: str, body: bytes | None = None, headers: dict | None = None,
         timeout: float = 30):
    """(status, headers, body bytes) of one request; HTTP errors are returned, not raised."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def post_json(url: str, doc: dict, headers: dict | None = None):
    """(status, decoded JSON) of a POST with a JSON body."""
    h = {"Content-Type": "application/json", **(headers or {})}
    status, _, body = http("POST", url, json.dumps(doc).encode(), h)
    return status, json.loads(body) if body else None


def binary_request(inputs: list[tuple[str, np.ndarray, str]], outputs: list[str] | None = None,
                   binary_output: bool = True) -> tuple[bytes, dict]:
    """Body and headers of an infer request in the binary tensor data extension."""
    header = {"inputs": [], "parameters": {"binary_data_output": binary_output}}
    blobs = []
    for name, arr, dt in inputs:
        raw = np.ascontiguousarray(arr).tobytes()
        header["inputs"].append({"name": name, "shape": list(arr.shape), "datatype": dt,
                                 "parameters": {"binary_data_size": len(raw)}})
        blobs.append(raw)
    if outputs is not None:
        header["outputs"] = [{"name": n, "parameters": {"binary_data": True}} for n in outputs]
    text = json.dumps(header).encode()
    return text + b"".join(blobs), {"Inference-Header-Content-Length": str(len(text)),
                                    "Content-Type": "application/octet-stream"}


def decode_binary_response(headers: dict, body: bytes, dtypes: dict) -> dict:
    """Output arrays of a response in the binary extension; `dtypes` maps datatype to numpy."""
    n = int(headers.get("Inference-Header-Content-Length", len(body)))
    doc = json.loads(body[:n])
    out, offset = {}, n
    for o in doc["outputs"]:
        dt = dtypes[o["datatype"]]
        if "data" in o:
            out[o["name"]] = np.array(o["data"], dtype=dt).reshape(o["shape"])
            continue
        size = o["parameters"]["binary_data_size"]
        out[o["name"]] = np.frombuffer(body[offset:offset + size], dtype=dt).reshape(o["shape"])
        offset += size
    assert offset == len(body)
    return out
