"""`frame serve` over REST, checked by a client written from the Open Inference Protocol (KServe
v2) with urllib and numpy: every endpoint, every datatype, JSON and binary tensor data, versions,
repository load/unload, errors, dynamic batching, metrics, bearer tokens and graceful shutdown.
Expected values come from numpy or from an in-process frame run of the same model (bit for bit).
One server for the module; about 10 s."""

from __future__ import annotations

import http.client as http_client
import json
import os
import signal
import socket
import threading
import time

import numpy as np
import pytest

import frame
from conftest import SOURCE_DIR
from serve_util import (DATATYPES, MLP_B, MLP_W, ServerProcess, binary_request,
                        decode_binary_response, http, make_repository, post_json)

NP_OF = {name: dt for name, dt, _ in DATATYPES}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return make_repository(str(tmp_path_factory.mktemp("repo")))


@pytest.fixture(scope="module")
def server(repo):
    s = ServerProcess(repo, "--max-request-bytes", str(4 << 20), "--read-timeout", "5",
                      grpc=False)
    yield s
    assert s.stop() == 0


def infer_url(server, model, version=None):
    v = f"/versions/{version}" if version else ""
    return f"{server.url}/v2/models/{model}{v}/infer"


def add_relu_inputs(n=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = rng.standard_normal((n, 4)).astype(np.float32)
    return x, y


def json_inputs(**arrays):
    return [{"name": k, "shape": list(v.shape), "datatype": "FP32", "data": v.ravel().tolist()}
            for k, v in arrays.items()]


def test_health_and_server_metadata(server):
    assert http("GET", server.url + "/v2/health/live")[0] == 200
    assert http("GET", server.url + "/v2/health/ready")[0] == 200
    status, _, body = http("GET", server.url + "/v2")
    meta = json.loads(body)
    assert status == 200 and meta["name"] == "frame" and meta["version"] == frame.__version__
    assert "binary_tensor_data" in meta["extensions"]
    assert "model_repository" in meta["extensions"]


def test_model_metadata_and_readiness(server):
    status, _, body = http("GET", server.url + "/v2/models/add_relu")
    meta = json.loads(body)
    assert status == 200
    assert meta["versions"] == ["1", "2"] and meta["platform"] == "onnx"
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]},
                              {"name": "y", "datatype": "FP32", "shape": [-1, 4]}]
    assert meta["outputs"] == [{"name": "r", "datatype": "FP32", "shape": [-1, 4]}]
    # With max_batch_size, dim 0 is the batch dim: -1 even where the model fixes it.
    meta = json.loads(http("GET", server.url + "/v2/models/mlp_batched/versions/1")[2])
    assert meta["inputs"][0]["shape"] == [-1, 4]
    assert http("GET", server.url + "/v2/models/add_relu/ready")[0] == 200
    assert http("GET", server.url + "/v2/models/add_relu/versions/1/ready")[0] == 200
    # A model that failed to load is known but not ready (400); an unknown one is 404.
    assert http("GET", server.url + "/v2/models/broken/ready")[0] == 400
    assert http("GET", server.url + "/v2/models/nope/ready")[0] == 404
    assert http("GET", server.url + "/v2/models/add_relu/versions/7")[0] == 404


def test_infer_json_versions_and_outputs(server):
    x, y = add_relu_inputs()
    doc = {"id": "req-7", "inputs": json_inputs(x=x, y=y)}
    status, out = post_json(infer_url(server, "add_relu"), doc)
    assert status == 200, out
    assert out["id"] == "req-7" and out["model_name"] == "add_relu"
    # Unversioned: the highest version, relu(x - y).
    assert out["model_version"] == "2"
    r = out["outputs"][0]
    assert r["name"] == "r" and r["datatype"] == "FP32" and r["shape"] == [3, 4]
    np.testing.assert_array_equal(np.array(r["data"], np.float32).reshape(3, 4),
                                  np.maximum(x - y, 0))
    status, out = post_json(infer_url(server, "add_relu", 1), doc)
    assert out["model_version"] == "1"
    np.testing.assert_array_equal(np.array(out["outputs"][0]["data"], np.float32).reshape(3, 4),
                                  np.maximum(x + y, 0))
    # Nested data (row-major) and an explicit outputs list.
    nested = {"inputs": [{"name": "x", "shape": [3, 4], "datatype": "FP32", "data": x.tolist()},
                         {"name": "y", "shape": [3, 4], "datatype": "FP32", "data": y.tolist()}],
              "outputs": [{"name": "r"}]}
    status, out = post_json(infer_url(server, "add_relu", 1), nested)
    assert status == 200
    np.testing.assert_array_equal(np.array(out["outputs"][0]["data"], np.float32).reshape(3, 4),
                                  np.maximum(x + y, 0))


def test_small_cnn_equals_in_process_run(server):
    x = np.load(os.path.join(SOURCE_DIR, "models", "small_cnn.input.npy"))
    want = frame.InferenceSession(os.path.join(SOURCE_DIR, "models", "small_cnn.onnx")).run(
        None, {"input": x})[0]
    # JSON: floats travel in their shortest round-trip form, so bit for bit.
    status, out = post_json(infer_url(server, "small_cnn"),
                            {"inputs": [{"name": "input", "shape": list(x.shape),
                                         "datatype": "FP32", "data": x.ravel().tolist()}]})
    assert status == 200
    got = np.array(out["outputs"][0]["data"], np.float32).reshape(out["outputs"][0]["shape"])
    np.testing.assert_array_equal(got, want)
    # Binary tensor data both ways.
    body, headers = binary_request([("input", x, "FP32")])
    status, rh, rb = http("POST", infer_url(server, "small_cnn"), body, headers)
    assert status == 200 and rh["Content-Type"] == "application/octet-stream"
    np.testing.assert_array_equal(decode_binary_response(rh, rb, NP_OF)["probs"], want)


def test_every_datatype_json_and_binary(server):
    rng = np.random.default_rng(1)
    arrays = {}
    for name, dt, _ in DATATYPES:
        if name == "BOOL":
            a = rng.integers(0, 2, (2, 3)).astype(np.bool_)
        elif name in ("FP16", "FP32", "FP64"):
            a = (rng.integers(-64, 64, (2, 3)) / 8).astype(dt)  # exact in every float type
        elif name == "BF16":
            a = np.array([[0x3F80, 0xBF80, 0x4000], [0x0000, 0x3E00, 0xC2C8]], np.uint16)
        else:
            info = np.iinfo(dt)
            a = np.array([[info.min, info.max, 0], [1, info.max - 1, info.min + 1]], dt)
        arrays[name] = a
    # Binary: every element type as raw bytes, returned bit for bit.
    body, headers = binary_request([(f"in_{n}", arrays[n], n) for n, _, _ in DATATYPES])
    status, rh, rb = http("POST", infer_url(server, "dtypes"), body, headers)
    assert status == 200, rb
    got = decode_binary_response(rh, rb, NP_OF)
    for n, _, _ in DATATYPES:
        np.testing.assert_array_equal(got[f"out_{n}"], arrays[n], err_msg=n)
    # JSON: numbers (BF16 and FP16 as their float values), booleans as true/false.
    def as_json(n, a):
        if n == "BF16":
            return (a.astype(np.uint32) << 16).view(np.float32).ravel().tolist()
        return a.ravel().tolist()
    doc = {"inputs": [{"name": f"in_{n}", "shape": [2, 3], "datatype": n,
                       "data": as_json(n, arrays[n])} for n, _, _ in DATATYPES]}
    status, out = post_json(infer_url(server, "dtypes"), doc)
    assert status == 200, out
    for o in out["outputs"]:
        n = o["datatype"]
        assert o["name"] == f"out_{n}"
        if n == "BF16":
            want = as_json(n, arrays[n])
            np.testing.assert_array_equal(np.array(o["data"], np.float32), want)
        else:
            np.testing.assert_array_equal(np.array(o["data"], NP_OF[n]).reshape(2, 3), arrays[n],
                                          err_msg=n)


def test_binary_output_selection(server):
    x, y = add_relu_inputs(2, seed=3)
    body, headers = binary_request([("x", x, "FP32"), ("y", y, "FP32")], outputs=["r"],
                                   binary_output=False)
    status, rh, rb = http("POST", infer_url(server, "add_relu", 1), body, headers)
    assert status == 200
    np.testing.assert_array_equal(decode_binary_response(rh, rb, NP_OF)["r"],
                                  np.maximum(x + y, 0))
    # binary_data_output without binary inputs: a JSON request, a binary answer.
    doc = {"inputs": json_inputs(x=x, y=y), "parameters": {"binary_data_output": True}}
    status, rh, rb = http("POST", infer_url(server, "add_relu", 1), json.dumps(doc).encode())
    assert status == 200 and "Inference-Header-Content-Length" in rh
    np.testing.assert_array_equal(decode_binary_response(rh, rb, NP_OF)["r"],
                                  np.maximum(x + y, 0))


@pytest.mark.parametrize("body,needle", [
    (b'{"inputs": [', "malformed JSON"),
    (b'{"inputs": [{"name": "x"', "malformed JSON"),
    (b'[1, 2]', "JSON object"),
    (b'{"inputs": 3}', "'inputs'"),
    (b'[' * 100 + b']' * 100, "deeper than 64"),
    (json.dumps({"inputs": [{"name": "x", "shape": [3, 4], "datatype": "FP32",
                             "data": [1.0] * 12}]}).encode(), "missing input 'y'"),
    (json.dumps({"inputs": [{"name": "x", "shape": [3, 5], "datatype": "FP32",
                             "data": [1.0] * 15},
                            {"name": "y", "shape": [3, 5], "datatype": "FP32",
                             "data": [1.0] * 15}]}).encode(), "input 'x': expected shape"),
    (json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP64",
                             "data": [1.0] * 4},
                            {"name": "y", "shape": [1, 4], "datatype": "FP32",
                             "data": [1.0] * 4}]}).encode(), "expected datatype FP32, got FP64"),
    (json.dumps({"inputs": [{"name": "q", "shape": [1], "datatype": "FP32",
                             "data": [1.0]}]}).encode(), "no input 'q'"),
    (json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32",
                             "data": [1.0] * 3}]}).encode(), "has 3 elements"),
    (json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "BYTES",
                             "data": ["a"] * 4}]}).encode(), "BYTES"),
    (json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32",
                             "data": ["a"] * 4}]}).encode(), "element 0"),
    (json.dumps({"inputs": [{"name": "x", "shape": [-1, 4], "datatype": "FP32",
                             "data": []}]}).encode(), "not a non-negative integer"),
    (json.dumps({"inputs": [{"name": "x", "shape": [1 << 40, 1 << 40], "datatype": "FP32",
                             "data": []}]}).encode(), "input 'x'"),
    (json.dumps({"inputs": json_inputs(x=np.zeros((1, 4), np.float32),
                                       y=np.zeros((1, 4), np.float32)),
                 "outputs": [{"name": "zz"}]}).encode(), "no output 'zz'"),
    (json.dumps({"inputs": json_inputs(x=np.zeros((1, 4), np.float32),
                                       y=np.zeros((1, 4), np.float32)),
                 "outputs": [{"name": "r"}, {"name": "r"}]}).encode(), "requested twice"),
    (b'{"inputs":[{"name":"x","shape":[1,2],"datatype":"FP32","data":[1e400,1]}]}', "malformed"),
    (b'{"inputs":[{"name":"x","shape":[1,2],"datatype":"FP32","data":[1e40,1]}]}', "element 0"),
    (b'{"inputs":[{"name":"x","shape":[1,1],"datatype":"FP16","data":[70000]}]}', "element 0"),
])
def test_bad_requests_get_400_naming_the_fault(server, body, needle):
    status, _, rb = http("POST", infer_url(server, "add_relu"), body,
                         {"Content-Type": "application/json"})
    assert status == 400, rb
    assert needle in json.loads(rb)["error"]


def test_bad_binary_framing(server):
    x, y = add_relu_inputs(1)
    body, headers = binary_request([("x", x, "FP32"), ("y", y, "FP32")])
    for length, needle in [(str(len(body) + 10), "exceeds the body"), ("abc", "not a non-negative"),
                           ("5", "malformed JSON")]:
        status, _, rb = http("POST", infer_url(server, "add_relu"), body,
                             {**headers, "Inference-Header-Content-Length": length})
        assert status == 400 and needle in json.loads(rb)["error"], rb
    # Bytes left over after the declared binary inputs.
    status, _, rb = http("POST", infer_url(server, "add_relu"), body + b"\0" * 4, headers)
    assert status == 400 and "binary data" in json.loads(rb)["error"]


def test_unknown_models_paths_and_oversized_bodies(server):
    status, out = post_json(infer_url(server, "nope"), {"inputs": []})
    assert status == 404 and "unknown model 'nope'" in out["error"]
    status, out = post_json(infer_url(server, "add_relu", 9), {"inputs": []})
    assert status == 404 and "no version '9'" in out["error"]
    status, _, rb = http("GET", server.url + "/v3/whatever")
    assert status == 404 and "error" in json.loads(rb)
    # A model that failed to load: 503 naming why.
    x, y = add_relu_inputs(1)
    status, out = post_json(infer_url(server, "broken"), {"inputs": json_inputs(x=x, y=y)})
    assert status == 503 and "broken" in out["error"]
    status, _, rb = http("POST", infer_url(server, "add_relu"), b"[" + b"0," * (3 << 20) + b"0]")
    assert status == 413
    # A NUL in a name is not a path to a model (and not a new metrics series).
    assert http("GET", server.url + "/v2/models/add_relu%00x")[0] == 404
    assert post_json(server.url + "/v2/repository/models/add_relu%00x/load", {})[0] == 404


def test_repository_index_unload_and_load(server):
    status, index = post_json(server.url + "/v2/repository/index", {})
    assert status == 200
    rows = {(r["name"], r.get("version")): r for r in index}
    assert rows[("add_relu", "1")]["state"] == "READY"
    assert rows[("broken", "1")]["state"] == "UNAVAILABLE" and rows[("broken", "1")]["reason"]
    assert "max_batch_sise" in rows[("bad_config", "1")]["reason"]
    reason = rows[("fixed_batch", "1")]["reason"]
    assert "max_batch_size needs dim 0" in reason and "'input'" in reason
    # An output whose dim 0 is not the batch dim (a reduction over it) would mix requests.
    reason = rows[("batch_reduced", "1")]["reason"]
    assert "max_batch_size needs dim 0" in reason and "'z'" in reason
    assert ("add_relu", "007") not in rows
    status, ready = post_json(server.url + "/v2/repository/index", {"ready": True})
    assert all(r["state"] == "READY" for r in ready) and len(ready) < len(index)

    x, y = add_relu_inputs(1)
    doc = {"inputs": json_inputs(x=x, y=y)}
    assert post_json(server.url + "/v2/repository/models/mlp/unload", {})[0] == 200
    status, out = post_json(infer_url(server, "mlp"), {"inputs": json_inputs(x=x)})
    assert status == 503 and "not ready" in out["error"]
    assert http("GET", server.url + "/v2/models/mlp/ready")[0] == 400
    assert post_json(server.url + "/v2/repository/models/mlp/load", {})[0] == 200
    status, out = post_json(infer_url(server, "mlp"), {"inputs": json_inputs(x=x)})
    assert status == 200
    np.testing.assert_allclose(np.array(out["outputs"][0]["data"], np.float32).reshape(1, 3),
                               x @ MLP_W + MLP_B, rtol=1e-6, atol=1e-6)
    assert post_json(server.url + "/v2/repository/models/nope/load", {})[0] == 404
    assert post_json(infer_url(server, "add_relu"), doc)[0] == 200


def test_keep_alive_connection_serves_many_requests(server):
    conn = http_client.HTTPConnection("127.0.0.1", server.http_port, timeout=10)
    x, y = add_relu_inputs(2, seed=5)
    body = json.dumps({"inputs": json_inputs(x=x, y=y)})
    for _ in range(20):
        conn.request("POST", "/v2/models/add_relu/versions/1/infer", body,
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        out = json.loads(r.read())
        assert r.status == 200
        np.testing.assert_array_equal(
            np.array(out["outputs"][0]["data"], np.float32).reshape(2, 4), np.maximum(x + y, 0))
    conn.close()


def test_slow_and_vanishing_clients_do_not_stop_the_server(server):
    # A client that sends half a request and goes away, one that stalls past the read timeout.
    s = socket.create_connection(("127.0.0.1", server.http_port))
    s.sendall(b"POST /v2/models/add_relu/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
              b"\r\n{\"inputs\"")
    s.close()
    stall = socket.create_connection(("127.0.0.1", server.http_port))
    stall.sendall(b"GET /v2/health/live HTTP/1.1\r\n")
    x, y = add_relu_inputs(1)
    assert post_json(infer_url(server, "add_relu"), {"inputs": json_inputs(x=x, y=y)})[0] == 200
    stall.close()


def test_dynamic_batching_gives_each_request_its_rows(server):
    rng = np.random.default_rng(11)
    inputs = [rng.standard_normal((int(n), 4)).astype(np.float32)
              for n in rng.integers(1, 3, size=12)]
    results = [None] * len(inputs)

    def one(i):
        results[i] = post_json(infer_url(server, "mlp_batched"),
                               {"id": str(i), "inputs": json_inputs(x=inputs[i])})

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (status, out) in enumerate(results):
        assert status == 200, out
        assert out["id"] == str(i)
        got = np.array(out["outputs"][0]["data"], np.float32).reshape(out["outputs"][0]["shape"])
        np.testing.assert_allclose(got, inputs[i] @ MLP_W + MLP_B, rtol=1e-5, atol=1e-5)
    metrics = http("GET", server.url + "/metrics")[2].decode()
    rows = sum(len(a) for a in inputs)
    total = [l for l in metrics.splitlines() if l.startswith('frame_serve_batch_size_sum{model="mlp_batched"}')]
    count = [l for l in metrics.splitlines() if l.startswith('frame_serve_batch_size_count{model="mlp_batched"}')]
    assert float(total[0].split()[-1]) == rows
    # 12 requests within one 50 ms window: fewer batches than requests.
    assert float(count[0].split()[-1]) < len(inputs)
    # Over max_batch_size: refused, naming the limit.
    status, out = post_json(infer_url(server, "mlp_batched"),
                            {"inputs": json_inputs(x=np.zeros((9, 4), np.float32))})
    assert status == 400 and "max_batch_size 8" in out["error"]


def test_metrics(server):
    x, y = add_relu_inputs(1)
    post_json(infer_url(server, "add_relu"), {"inputs": json_inputs(x=x, y=y)})
    # A refused request of its own (the test then does not depend on an earlier one's).
    status, _, _ = http("POST", infer_url(server, "add_relu"), b'{"inputs":[]}',
                        {"Content-Type": "application/json"})
    assert status == 400
    status, headers, body = http("GET", server.url + "/metrics")
    text = body.decode()
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert 'frame_serve_requests_total{model="add_relu",protocol="rest"}' in text
    assert 'frame_serve_request_failures_total{model="add_relu",reason="invalid_argument"}' in text
    assert "frame_serve_request_duration_us_bucket" in text
    assert 'frame_serve_cache_misses_total{model="add_relu",version="2"}' in text
    assert 'frame_serve_interpreted_runs_total{model="add_relu",version="2"}' in text


def test_bearer_token_and_graceful_shutdown(repo):
    s = ServerProcess(repo, "--bearer-token", "s3cret", grpc=False)
    try:
        assert http("GET", s.url + "/v2/health/ready")[0] == 200
        assert http("GET", s.url + "/v2")[0] == 401
        assert http("GET", s.url + "/v2", headers={"Authorization": "Bearer wrong"})[0] == 401
        auth = {"Authorization": "Bearer s3cret"}
        assert http("GET", s.url + "/v2", headers=auth)[0] == 200
        assert http("GET", s.url + "/v2", headers={"Authorization": "bearer s3cret"})[0] == 200
        # Requests waiting in the batcher's 1 s window when SIGTERM arrives still complete.
        results = []
        x = np.ones((1, 4), np.float32)

        def one():
            results.append(post_json(infer_url(s, "mlp_slow_batch"),
                                     {"inputs": json_inputs(x=x)}, auth))

        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.4)
        s.proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join()
        assert s.proc.wait(timeout=30) == 0
        assert len(results) == 4
        for status, out in results:
            assert status == 200, out
            np.testing.assert_allclose(
                np.array(out["outputs"][0]["data"], np.float32).reshape(1, 3),
                x @ MLP_W + MLP_B, rtol=1e-5, atol=1e-5)
    finally:
        if s.proc.poll() is None:
            s.proc.kill()


def test_httplib_refusals_are_explained(server):
    # A POST without Content-Length (curl -X POST without -d) and a large form-urlencoded body
    # (curl -d without a Content-Type) are refused by the HTTP layer; the error says why.
    s = socket.create_connection(("127.0.0.1", server.http_port))
    s.sendall(b"POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    reply = b""
    while chunk := s.recv(4096):
        reply += chunk
    s.close()
    assert reply.startswith(b"HTTP/1.1 411") and b"Content-Length" in reply
    # Chunked bodies (cpp-httplib would not bound them) and two lengths (request smuggling).
    for head in [b"Transfer-Encoding: chunked\r\n", b"Content-Length: 2\r\nContent-Length: 5\r\n"]:
        s = socket.create_connection(("127.0.0.1", server.http_port))
        s.sendall(b"POST /v2/models/add_relu/infer HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n")
        reply = s.recv(4096)
        s.close()
        assert reply.split(b" ")[1] in (b"411", b"400"), reply
    x = np.zeros((1, 3, 32, 32), np.float32)
    body = json.dumps({"inputs": [{"name": "input", "shape": [1, 3, 32, 32], "datatype": "FP32",
                                   "data": x.ravel().tolist()}]}).encode()
    status, _, rb = http("POST", infer_url(server, "small_cnn"), body,
                         {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 413 and "application/json" in json.loads(rb)["error"]


def test_http_port_taken_is_an_error(repo, server):
    import subprocess
    from serve_util import FRAME_CLI
    p = subprocess.run([FRAME_CLI, "serve", "--model-repository", repo, "--http-port",
                        str(server.http_port), "--grpc-port", "-1"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 1 and f"cannot bind 127.0.0.1:{server.http_port}" in p.stderr


def test_stalled_client_does_not_hold_the_exit(repo):
    # A client that sent half a request line keeps a worker reading; SIGTERM still ends the
    # process within --exit-timeout (plus a second), exit code 0.
    s = ServerProcess(repo, "--exit-timeout", "1", "--read-timeout", "30", grpc=False)
    stall = socket.create_connection(("127.0.0.1", s.http_port))
    stall.sendall(b"GET /v2/health/li")
    time.sleep(0.2)
    t0 = time.time()
    assert s.stop(timeout=20) == 0
    assert time.time() - t0 < 6
    stall.close()
