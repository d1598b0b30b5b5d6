"""`frame serve` over gRPC, checked by a client generated at test time from the project's
src/serve/proto/grpc_predict_v2.proto (grpc_tools.protoc): health, metadata, inference with raw
contents for every datatype and typed contents for every datatype that has a typed field,
output selection, errors and their status codes, the repository extension, the receive limit,
bearer tokens, TLS and startup failures. Expected values come from numpy. One server for most
of the module; about 10 s."""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import types

import numpy as np
import pytest
from onnx import helper

from conftest import SOURCE_DIR, model_bytes, vinfo
from serve_util import DATATYPES, FRAME_CLI, ServerProcess, add_model, identity_model

grpc = pytest.importorskip("grpc")
protoc = pytest.importorskip("grpc_tools.protoc")

PROTO_DIR = os.path.join(SOURCE_DIR, "src", "serve", "proto")
NP_OF = {name: dt for name, dt, _ in DATATYPES}
# The typed field of InferTensorContents per datatype (FP16 and BF16 travel only raw).
TYPED_FIELD = {"BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents",
               "INT32": "int_contents", "INT64": "int64_contents", "UINT8": "uint_contents",
               "UINT16": "uint_contents", "UINT32": "uint_contents",
               "UINT64": "uint64_contents", "FP32": "fp32_contents", "FP64": "fp64_contents"}
# The receive limit of the module's server: every request of the module fits but one.
MAX_REQUEST_BYTES = 64 << 10
TIMEOUT = 20  # seconds per call

pytestmark = pytest.mark.skipif(not os.path.exists(FRAME_CLI), reason="no frame binary")


def _write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def ident_model(elem: int) -> bytes:
    """out = Identity(in) over [-1] of one element type."""
    return model_bytes([helper.make_node("Identity", ["in"], ["out"])],
                       [vinfo("in", elem, ("N",))], [vinfo("out", elem, ("N",))])


def make_grpc_repository(root: str) -> str:
    """add_relu (1: relu(x + y), 2: relu(x - y)), dtypes (one Identity per datatype), ident_<T>
    (one Identity over [-1] per datatype), reload_me (add_relu's version 1, for unload/load) and
    broken (not an ONNX file)."""
    _write(os.path.join(root, "add_relu", "1", "model.onnx"), add_model("Add"))
    _write(os.path.join(root, "add_relu", "2", "model.onnx"), add_model("Sub"))
    _write(os.path.join(root, "dtypes", "model.onnx"), identity_model())
    for name, _, elem in DATATYPES:
        _write(os.path.join(root, f"ident_{name}", "model.onnx"), ident_model(elem))
    _write(os.path.join(root, "reload_me", "model.onnx"), add_model("Add"))
    _write(os.path.join(root, "broken", "model.onnx"), b"not an onnx model")
    return root


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """The generated messages (pb2) and service stubs (pb2_grpc) of the project's .proto."""
    out = str(tmp_path_factory.mktemp("grpc_stubs"))
    rc = protoc.main(["grpc_tools.protoc", f"-I{PROTO_DIR}", f"--python_out={out}",
                      f"--grpc_python_out={out}", os.path.join(PROTO_DIR, "grpc_predict_v2.proto")])
    assert rc == 0
    sys.path.insert(0, out)
    try:
        pb2 = importlib.import_module("grpc_predict_v2_pb2")
        pb2_grpc = importlib.import_module("grpc_predict_v2_pb2_grpc")
    finally:
        sys.path.remove(out)
    return types.SimpleNamespace(pb2=pb2, grpc=pb2_grpc)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return make_grpc_repository(str(tmp_path_factory.mktemp("grpc_repo")))


@pytest.fixture(scope="module")
def server(repo):
    s = ServerProcess(repo, "--max-request-bytes", str(MAX_REQUEST_BYTES))
    assert s.grpc_port is not None, "".join(s.stdout_lines)
    yield s
    assert s.stop() == 0


def make_stub(pb, port: int, credentials=None):
    target = f"127.0.0.1:{port}"
    options = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
    channel = (grpc.secure_channel(target, credentials, options=options) if credentials
               else grpc.insecure_channel(target, options=options))
    return channel, pb.grpc.GRPCInferenceServiceStub(channel)


@pytest.fixture(scope="module")
def stub(pb, server):
    channel, s = make_stub(pb, server.grpc_port)
    yield s
    channel.close()


def infer_request(pb, model: str, inputs, outputs=None, version: str = "", request_id: str = ""):
    """A ModelInferRequest with every input as raw contents; inputs: (name, array, datatype)."""
    req = pb.pb2.ModelInferRequest(model_name=model, model_version=version, id=request_id)
    for name, arr, dt in inputs:
        t = req.inputs.add(name=name, datatype=dt)
        t.shape.extend(arr.shape)
        req.raw_input_contents.append(np.ascontiguousarray(arr).tobytes())
    for name in outputs or []:
        req.outputs.add(name=name)
    return req


def outputs_of(resp) -> dict:
    """Output arrays of a response, which must carry raw contents only."""
    assert len(resp.raw_output_contents) == len(resp.outputs)
    out = {}
    for o, raw in zip(resp.outputs, resp.raw_output_contents):
        assert not o.HasField("contents")
        out[o.name] = np.frombuffer(raw, dtype=NP_OF[o.datatype]).reshape(tuple(o.shape))
    return out


def expect_error(fn, req, code, *fragments):
    """Calls fn(req) expecting gRPC status `code` with every fragment in the message."""
    with pytest.raises(grpc.RpcError) as e:
        fn(req, timeout=TIMEOUT)
    assert e.value.code() == code, e.value.details()
    for f in fragments:
        assert f in e.value.details(), (f, e.value.details())
    return e.value.details()


def random_array(name: str, shape, rng) -> np.ndarray:
    """Random values of a datatype (BF16: the bits of bfloat16 values, as uint16)."""
    if name == "BOOL":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if name == "BF16":
        f = rng.standard_normal(shape).astype(np.float32)
        return (f.view(np.uint32) >> 16).astype(np.uint16)
    dt = np.dtype(NP_OF[name])
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)


def add_relu_inputs(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, 4)).astype(np.float32),
            rng.standard_normal((n, 4)).astype(np.float32))


def test_health(pb, stub):
    assert stub.ServerLive(pb.pb2.ServerLiveRequest(), timeout=TIMEOUT).live
    assert stub.ServerReady(pb.pb2.ServerReadyRequest(), timeout=TIMEOUT).ready


def test_server_metadata(pb, stub):
    m = stub.ServerMetadata(pb.pb2.ServerMetadataRequest(), timeout=TIMEOUT)
    assert m.name == "frame"
    assert m.version
    assert "model_repository" in m.extensions


def test_model_metadata(pb, stub):
    m = stub.ModelMetadata(pb.pb2.ModelMetadataRequest(name="add_relu"), timeout=TIMEOUT)
    assert m.name == "add_relu" and list(m.versions) == ["1", "2"] and m.platform == "onnx"
    assert [(t.name, t.datatype, list(t.shape)) for t in m.inputs] == [
        ("x", "FP32", [-1, 4]), ("y", "FP32", [-1, 4])]
    assert [(t.name, t.datatype, list(t.shape)) for t in m.outputs] == [("r", "FP32", [-1, 4])]
    m = stub.ModelMetadata(pb.pb2.ModelMetadataRequest(name="dtypes", version="1"),
                           timeout=TIMEOUT)
    assert [(t.name, t.datatype, list(t.shape)) for t in m.inputs] == [
        (f"in_{name}", name, [2, 3]) for name, _, _ in DATATYPES]
    expect_error(stub.ModelMetadata, pb.pb2.ModelMetadataRequest(name="nope"),
                 grpc.StatusCode.NOT_FOUND, "nope")
    expect_error(stub.ModelMetadata, pb.pb2.ModelMetadataRequest(name="add_relu", version="9"),
                 grpc.StatusCode.NOT_FOUND, "9")


def test_model_ready(pb, stub):
    ready = lambda **kw: stub.ModelReady(pb.pb2.ModelReadyRequest(**kw), timeout=TIMEOUT).ready
    assert ready(name="add_relu")
    assert ready(name="add_relu", version="1")
    assert not ready(name="broken")
    expect_error(stub.ModelReady, pb.pb2.ModelReadyRequest(name="nope"),
                 grpc.StatusCode.NOT_FOUND)


def test_infer_fp32_versions_and_id(pb, stub):
    x, y = add_relu_inputs()
    inputs = [("x", x, "FP32"), ("y", y, "FP32")]
    resp = stub.ModelInfer(infer_request(pb, "add_relu", inputs, version="1", request_id="r-17"),
                           timeout=TIMEOUT)
    assert resp.model_name == "add_relu" and resp.model_version == "1" and resp.id == "r-17"
    assert [(o.name, o.datatype, list(o.shape)) for o in resp.outputs] == [("r", "FP32", [3, 4])]
    np.testing.assert_array_equal(outputs_of(resp)["r"], np.maximum(x + y, 0))
    # No version: the highest, 2 = relu(x - y).
    resp = stub.ModelInfer(infer_request(pb, "add_relu", inputs), timeout=TIMEOUT)
    assert resp.model_version == "2" and resp.id == ""
    np.testing.assert_array_equal(outputs_of(resp)["r"], np.maximum(x - y, 0))


def test_infer_every_datatype_raw(pb, stub):
    rng = np.random.default_rng(1)
    arrays = {name: random_array(name, (2, 3), rng) for name, _, _ in DATATYPES}
    req = infer_request(pb, "dtypes", [(f"in_{n}", a, n) for n, a in arrays.items()])
    out = outputs_of(stub.ModelInfer(req, timeout=TIMEOUT))
    assert sorted(out) == sorted(f"out_{n}" for n in arrays)
    for name, a in arrays.items():
        got = out[f"out_{name}"]
        assert got.dtype == a.dtype and got.shape == (2, 3), name
        assert got.tobytes() == a.tobytes(), name


@pytest.mark.parametrize("name", list(TYPED_FIELD))
def test_infer_typed_contents(pb, stub, name):
    a = random_array(name, (5,), np.random.default_rng(2))
    req = pb.pb2.ModelInferRequest(model_name=f"ident_{name}")
    t = req.inputs.add(name="in", datatype=name, shape=[5])
    getattr(t.contents, TYPED_FIELD[name]).extend(a.tolist())
    out = outputs_of(stub.ModelInfer(req, timeout=TIMEOUT))["out"]
    assert out.dtype == a.dtype and out.tobytes() == a.tobytes()


def test_infer_typed_fp32_computes(pb, stub):
    x, y = add_relu_inputs(n=2, seed=3)
    req = pb.pb2.ModelInferRequest(model_name="add_relu", model_version="1")
    for name, arr in (("x", x), ("y", y)):
        t = req.inputs.add(name=name, datatype="FP32", shape=list(arr.shape))
        t.contents.fp32_contents.extend(arr.ravel().tolist())
    out = outputs_of(stub.ModelInfer(req, timeout=TIMEOUT))
    np.testing.assert_array_equal(out["r"], np.maximum(x + y, 0))


def test_output_selection(pb, stub):
    rng = np.random.default_rng(4)
    arrays = {name: random_array(name, (2, 3), rng) for name, _, _ in DATATYPES}
    inputs = [(f"in_{n}", a, n) for n, a in arrays.items()]
    resp = stub.ModelInfer(infer_request(pb, "dtypes", inputs, outputs=["out_INT8", "out_FP64"]),
                           timeout=TIMEOUT)
    assert [o.name for o in resp.outputs] == ["out_INT8", "out_FP64"]
    out = outputs_of(resp)
    assert out["out_INT8"].tobytes() == arrays["INT8"].tobytes()
    assert out["out_FP64"].tobytes() == arrays["FP64"].tobytes()
    expect_error(stub.ModelInfer, infer_request(pb, "dtypes", inputs, outputs=["out_nope"]),
                 grpc.StatusCode.INVALID_ARGUMENT, "out_nope")


def test_raw_bool_bytes_are_normalised(pb, stub):
    req = pb.pb2.ModelInferRequest(model_name="ident_BOOL")
    req.inputs.add(name="in", datatype="BOOL", shape=[4])
    req.raw_input_contents.append(bytes([0, 1, 2, 255]))
    out = outputs_of(stub.ModelInfer(req, timeout=TIMEOUT))["out"]
    assert out.view(np.uint8).tolist() == [0, 1, 1, 1]


def test_timeout_parameter(pb, stub):
    x, y = add_relu_inputs()
    req = infer_request(pb, "add_relu", [("x", x, "FP32"), ("y", y, "FP32")], version="1")
    req.parameters["timeout"].int64_param = 10_000_000
    np.testing.assert_array_equal(outputs_of(stub.ModelInfer(req, timeout=TIMEOUT))["r"],
                                  np.maximum(x + y, 0))
    req.parameters["timeout"].int64_param = 2**63 - 1  # longer than the clock: no limit
    stub.ModelInfer(req, timeout=TIMEOUT)
    req.parameters["timeout"].int64_param = -1
    expect_error(stub.ModelInfer, req, grpc.StatusCode.INVALID_ARGUMENT, "timeout")
    req.parameters["timeout"].string_param = "1s"
    expect_error(stub.ModelInfer, req, grpc.StatusCode.INVALID_ARGUMENT, "timeout")


def test_infer_errors(pb, stub):
    x, y = add_relu_inputs()
    bad = grpc.StatusCode.INVALID_ARGUMENT
    good = [("x", x, "FP32"), ("y", y, "FP32")]
    expect_error(stub.ModelInfer, infer_request(pb, "nope", good), grpc.StatusCode.NOT_FOUND,
                 "nope")
    expect_error(stub.ModelInfer, infer_request(pb, "add_relu", good, version="9"),
                 grpc.StatusCode.NOT_FOUND, "9")
    # The model's checks: shape, datatype, unknown and missing inputs.
    x5 = np.zeros((3, 5), np.float32)
    expect_error(stub.ModelInfer, infer_request(pb, "add_relu", [("x", x5, "FP32"), good[1]]),
                 bad, "'x'")
    expect_error(stub.ModelInfer,
                 infer_request(pb, "add_relu", [("x", x.astype(np.float64), "FP64"), good[1]]),
                 bad, "'x'", "FP64")
    expect_error(stub.ModelInfer, infer_request(pb, "add_relu", good + [("w", x, "FP32")]), bad,
                 "'w'")
    expect_error(stub.ModelInfer, infer_request(pb, "add_relu", good[:1]), bad, "'y'")
    # The transport's checks.
    req = infer_request(pb, "add_relu", good)
    req.raw_input_contents[0] = req.raw_input_contents[0][:-1]
    expect_error(stub.ModelInfer, req, bad, "'x'", "47", "48")
    req = infer_request(pb, "add_relu", good)
    del req.raw_input_contents[1]
    expect_error(stub.ModelInfer, req, bad, "raw_input_contents")
    req = infer_request(pb, "add_relu", good)
    req.inputs[1].contents.fp32_contents.extend(y.ravel().tolist())
    expect_error(stub.ModelInfer, req, bad, "'y'", "raw")
    req = infer_request(pb, "add_relu", good)
    req.inputs[0].shape[0] = -3
    expect_error(stub.ModelInfer, req, bad, "'x'")
    req = infer_request(pb, "add_relu", good)
    del req.inputs[0].shape[:]
    req.inputs[0].shape.extend([2**62, 2**62])
    expect_error(stub.ModelInfer, req, bad, "'x'")
    for dt in ("FP8", "BYTES"):
        req = infer_request(pb, "add_relu", good)
        req.inputs[0].datatype = dt
        expect_error(stub.ModelInfer, req, bad, "'x'", dt)


def test_typed_contents_errors(pb, stub):
    bad = grpc.StatusCode.INVALID_ARGUMENT
    for name in ("FP16", "BF16"):
        req = pb.pb2.ModelInferRequest(model_name=f"ident_{name}")
        req.inputs.add(name="in", datatype=name, shape=[2]).contents.fp32_contents.extend([1, 2])
        expect_error(stub.ModelInfer, req, bad, "'in'", name, "raw")
    req = pb.pb2.ModelInferRequest(model_name="ident_FP32")
    req.inputs.add(name="in", datatype="FP32", shape=[3]).contents.fp32_contents.extend([1, 2])
    expect_error(stub.ModelInfer, req, bad, "'in'", "2", "3")
    req = pb.pb2.ModelInferRequest(model_name="ident_FP32")
    req.inputs.add(name="in", datatype="FP32", shape=[2]).contents.int64_contents.extend([1, 2])
    expect_error(stub.ModelInfer, req, bad, "'in'", "fp32_contents", "int64_contents")
    # A huge declared shape with few elements is refused before anything is allocated.
    req = pb.pb2.ModelInferRequest(model_name="ident_FP32")
    req.inputs.add(name="in", datatype="FP32", shape=[2**40]).contents.fp32_contents.append(1)
    expect_error(stub.ModelInfer, req, bad, "'in'", str(2**40))
    req = pb.pb2.ModelInferRequest(model_name="ident_INT8")
    req.inputs.add(name="in", datatype="INT8", shape=[2]).contents.int_contents.extend([1, 300])
    expect_error(stub.ModelInfer, req, bad, "'in'", "300")
    req = pb.pb2.ModelInferRequest(model_name="ident_UINT16")
    req.inputs.add(name="in", datatype="UINT16", shape=[1]).contents.uint_contents.append(70000)
    expect_error(stub.ModelInfer, req, bad, "'in'", "70000")


def test_malformed_messages(pb, stub, server):
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
    try:
        call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                   request_serializer=lambda b: b,
                                   response_deserializer=lambda b: b)
        rng = np.random.default_rng(5)
        for n in (1, 7, 64, 300):
            for _ in range(10):
                with pytest.raises(grpc.RpcError):
                    call(rng.integers(0, 256, n, dtype=np.uint8).tobytes(), timeout=TIMEOUT)
    finally:
        channel.close()
    assert stub.ServerLive(pb.pb2.ServerLiveRequest(), timeout=TIMEOUT).live


def test_concurrent_infer(pb, stub):
    errors = []

    def worker(seed):
        try:
            for k in range(5):
                x, y = add_relu_inputs(n=1 + (seed + k) % 4, seed=seed * 10 + k)
                req = infer_request(pb, "add_relu", [("x", x, "FP32"), ("y", y, "FP32")],
                                    version="1", request_id=f"{seed}-{k}")
                resp = stub.ModelInfer(req, timeout=TIMEOUT)
                assert resp.id == f"{seed}-{k}"
                np.testing.assert_array_equal(outputs_of(resp)["r"], np.maximum(x + y, 0))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_repository_index(pb, stub):
    index = stub.RepositoryIndex(pb.pb2.RepositoryIndexRequest(), timeout=TIMEOUT).models
    by_key = {(m.name, m.version): m for m in index}
    assert by_key[("add_relu", "1")].state == "READY"
    assert by_key[("add_relu", "2")].state == "READY"
    broken = [m for m in index if m.name == "broken"]
    assert broken and all(m.state == "UNAVAILABLE" and m.reason for m in broken)
    ready = stub.RepositoryIndex(pb.pb2.RepositoryIndexRequest(ready=True), timeout=TIMEOUT)
    names = {m.name for m in ready.models}
    assert "add_relu" in names and "broken" not in names
    assert all(m.state == "READY" for m in ready.models)


def test_unload_and_load(pb, stub):
    x, y = add_relu_inputs()
    req = infer_request(pb, "reload_me", [("x", x, "FP32"), ("y", y, "FP32")])
    np.testing.assert_array_equal(outputs_of(stub.ModelInfer(req, timeout=TIMEOUT))["r"],
                                  np.maximum(x + y, 0))
    stub.RepositoryModelUnload(pb.pb2.RepositoryModelUnloadRequest(model_name="reload_me"),
                               timeout=TIMEOUT)
    assert not stub.ModelReady(pb.pb2.ModelReadyRequest(name="reload_me"), timeout=TIMEOUT).ready
    expect_error(stub.ModelInfer, req, grpc.StatusCode.UNAVAILABLE, "reload_me")
    index = stub.RepositoryIndex(pb.pb2.RepositoryIndexRequest(), timeout=TIMEOUT).models
    assert all(m.state == "UNAVAILABLE" for m in index if m.name == "reload_me")
    stub.RepositoryModelLoad(pb.pb2.RepositoryModelLoadRequest(model_name="reload_me"),
                             timeout=TIMEOUT)
    assert stub.ModelReady(pb.pb2.ModelReadyRequest(name="reload_me"), timeout=TIMEOUT).ready
    np.testing.assert_array_equal(outputs_of(stub.ModelInfer(req, timeout=TIMEOUT))["r"],
                                  np.maximum(x + y, 0))
    # Triton's unload_dependents is accepted (frame models have no dependents); a load's
    # config override is not supported, and says so.
    unload = pb.pb2.RepositoryModelUnloadRequest(model_name="reload_me")
    unload.parameters["unload_dependents"].bool_param = True
    stub.RepositoryModelUnload(unload, timeout=TIMEOUT)
    load = pb.pb2.RepositoryModelLoadRequest(model_name="reload_me")
    load.parameters["config"].string_param = "{}"
    expect_error(stub.RepositoryModelLoad, load, grpc.StatusCode.INVALID_ARGUMENT, "config")
    stub.RepositoryModelLoad(pb.pb2.RepositoryModelLoadRequest(model_name="reload_me"),
                             timeout=TIMEOUT)
    expect_error(stub.RepositoryModelLoad, pb.pb2.RepositoryModelLoadRequest(model_name="nope"),
                 grpc.StatusCode.NOT_FOUND, "nope")
    expect_error(stub.RepositoryModelUnload,
                 pb.pb2.RepositoryModelUnloadRequest(model_name="nope"),
                 grpc.StatusCode.NOT_FOUND, "nope")


def test_receive_limit(pb, stub):
    x = np.zeros((MAX_REQUEST_BYTES // 16 + 1, 4), np.float32)
    req = infer_request(pb, "add_relu", [("x", x, "FP32"), ("y", x, "FP32")])
    assert req.ByteSize() > MAX_REQUEST_BYTES
    expect_error(stub.ModelInfer, req, grpc.StatusCode.RESOURCE_EXHAUSTED)
    # The server goes on serving, on the same channel.
    assert stub.ServerLive(pb.pb2.ServerLiveRequest(), timeout=TIMEOUT).live
    x, y = add_relu_inputs()
    req = infer_request(pb, "add_relu", [("x", x, "FP32"), ("y", y, "FP32")], version="1")
    np.testing.assert_array_equal(outputs_of(stub.ModelInfer(req, timeout=TIMEOUT))["r"],
                                  np.maximum(x + y, 0))


def test_bearer_token(pb, repo):
    s = ServerProcess(repo, "--bearer-token", "s3cret")
    channel, stub = make_stub(pb, s.grpc_port)
    try:
        # Liveness and readiness need no token.
        assert stub.ServerLive(pb.pb2.ServerLiveRequest(), timeout=TIMEOUT).live
        assert stub.ServerReady(pb.pb2.ServerReadyRequest(), timeout=TIMEOUT).ready
        unauth = grpc.StatusCode.UNAUTHENTICATED
        expect_error(stub.ServerMetadata, pb.pb2.ServerMetadataRequest(), unauth)
        with pytest.raises(grpc.RpcError) as e:
            stub.ServerMetadata(pb.pb2.ServerMetadataRequest(), timeout=TIMEOUT,
                                metadata=[("authorization", "Bearer wrong")])
        assert e.value.code() == unauth
        good = [("authorization", "Bearer s3cret")]
        assert stub.ServerMetadata(pb.pb2.ServerMetadataRequest(), timeout=TIMEOUT,
                                   metadata=good).name == "frame"
        x, y = add_relu_inputs()
        req = infer_request(pb, "add_relu", [("x", x, "FP32"), ("y", y, "FP32")], version="1")
        expect_error(stub.ModelInfer, req, unauth)
        resp = stub.ModelInfer(req, timeout=TIMEOUT, metadata=good)
        np.testing.assert_array_equal(outputs_of(resp)["r"], np.maximum(x + y, 0))
    finally:
        channel.close()
        assert s.stop() == 0


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl to make a certificate")
def test_tls(pb, repo, tmp_path):
    cert, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    s = ServerProcess(repo, "--tls-cert", cert, "--tls-key", key)
    with open(cert, "rb") as f:
        creds = grpc.ssl_channel_credentials(root_certificates=f.read())
    channel, stub = make_stub(pb, s.grpc_port, creds)
    plain_channel, plain_stub = make_stub(pb, s.grpc_port)
    try:
        assert stub.ServerLive(pb.pb2.ServerLiveRequest(), timeout=TIMEOUT).live
        x, y = add_relu_inputs()
        req = infer_request(pb, "add_relu", [("x", x, "FP32"), ("y", y, "FP32")], version="1")
        np.testing.assert_array_equal(outputs_of(stub.ModelInfer(req, timeout=TIMEOUT))["r"],
                                      np.maximum(x + y, 0))
        # A plaintext client cannot talk to the TLS port.
        with pytest.raises(grpc.RpcError) as e:
            plain_stub.ServerLive(pb.pb2.ServerLiveRequest(), timeout=5)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        channel.close()
        plain_channel.close()
        assert s.stop() == 0


def run_serve_expecting_failure(repo, *args):
    cmd = [FRAME_CLI, "serve", "--model-repository", repo, "--http-port", "-1", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0, p.stdout
    return p.stderr


def test_grpc_port_taken(repo):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = run_serve_expecting_failure(repo, "--grpc-port", str(port))
    assert f"127.0.0.1:{port}" in err


def test_unreadable_tls_file(repo, tmp_path):
    missing = str(tmp_path / "missing.pem")
    err = run_serve_expecting_failure(repo, "--grpc-port", "0", "--tls-cert", missing,
                                      "--tls-key", missing)
    assert missing in err
