#!/usr/bin/env python3
"""A client of `frame serve` (docs/serving.md) on the standard library and numpy.

Reads a model's metadata, then runs one inference three ways and prints each output's shape and
top values: REST with JSON tensors, REST with the binary tensor data extension, and gRPC when
the `grpc` and `grpc_tools` modules import (Debian: python3-grpcio python3-grpc-tools; the
stubs are generated at run time from src/serve/proto/grpc_predict_v2.proto).

    build/frame serve --model-repository repo &
    /usr/bin/python3 examples/serve_client.py --model small_cnn \
        --input input=models/small_cnn.input.npy

Inputs without --input get random values of the declared shape (-1 dims become 1).
"""
import argparse
import json
import os
import ssl
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

# Protocol datatype <-> numpy dtype, little-endian as the protocol's binary formats are. BF16
# has no numpy dtype; BYTES is not a frame type.
DTYPES = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype("<u1"),
    "UINT16": np.dtype("<u2"),
    "UINT32": np.dtype("<u4"),
    "UINT64": np.dtype("<u8"),
    "INT8": np.dtype("<i1"),
    "INT16": np.dtype("<i2"),
    "INT32": np.dtype("<i4"),
    "INT64": np.dtype("<i8"),
    "FP16": np.dtype("<f2"),
    "FP32": np.dtype("<f4"),
    "FP64": np.dtype("<f8"),
}
DATATYPE_OF = {dt.newbyteorder("="): name for name, dt in DTYPES.items()}

PROTO = Path(__file__).resolve().parents[1] / "src" / "serve" / "proto" / "grpc_predict_v2.proto"


class Rest:
    """The REST endpoints of one server."""

    def __init__(self, url, token=None, cafile=None):
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.context = ssl.create_default_context(cafile=cafile) if cafile else None

    def call(self, method, path, body=None, headers=None):
        """Returns (response headers, body bytes); raises RuntimeError with the server's error."""
        req = urllib.request.Request(self.url + path, data=body, method=method,
                                     headers={**self.headers, **(headers or {})})
        try:
            with urllib.request.urlopen(req, context=self.context) as resp:
                return resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                text = json.loads(text)["error"]
            except (ValueError, KeyError, TypeError):
                pass
            raise RuntimeError(f"{method} {path}: HTTP {e.code}: {text}") from None

    def metadata(self, model):
        return json.loads(self.call("GET", f"/v2/models/{model}")[1])

    def infer_json(self, model, inputs):
        request = {"inputs": [{"name": name, "shape": list(a.shape),
                               "datatype": DATATYPE_OF[a.dtype.newbyteorder("=")],
                               "data": a.ravel().tolist()} for name, a in inputs.items()]}
        _, body = self.call("POST", f"/v2/models/{model}/infer", json.dumps(request).encode(),
                            {"Content-Type": "application/json"})
        response = json.loads(body)
        return {o["name"]: np.array(o["data"], dtype=DTYPES[o["datatype"]]).reshape(o["shape"])
                for o in response["outputs"]}

    def infer_binary(self, model, inputs):
        """Inputs and outputs as raw little-endian bytes after the JSON header."""
        arrays = [np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")) for a in inputs.values()]
        request = {
            "inputs": [{"name": name, "shape": list(a.shape),
                        "datatype": DATATYPE_OF[a.dtype.newbyteorder("=")],
                        "parameters": {"binary_data_size": a.nbytes}}
                       for name, a in zip(inputs, arrays)],
            "parameters": {"binary_data_output": True},
        }
        header = json.dumps(request).encode()
        headers, body = self.call(
            "POST", f"/v2/models/{model}/infer", header + b"".join(a.tobytes() for a in arrays),
            {"Content-Type": "application/octet-stream",
             "Inference-Header-Content-Length": str(len(header))})
        n = int(headers.get("Inference-Header-Content-Length", len(body)))
        response = json.loads(body[:n])
        outputs, offset = {}, n
        for o in response["outputs"]:
            dtype = DTYPES[o["datatype"]]
            size = o.get("parameters", {}).get("binary_data_size")
            if size is None:  # this output came as JSON
                outputs[o["name"]] = np.array(o["data"], dtype=dtype).reshape(o["shape"])
                continue
            outputs[o["name"]] = np.frombuffer(body, dtype, size // dtype.itemsize,
                                               offset).reshape(o["shape"])
            offset += size
        return outputs


def grpc_client(address, token=None, cafile=None):
    """A function running ModelInfer over gRPC, or None when grpc/grpc_tools do not import."""
    try:
        import grpc
        from grpc_tools import protoc
    except ImportError:
        return None
    out = tempfile.mkdtemp(prefix="frame_serve_stubs_")
    # grpc_tools ships the protobuf well-known types in grpc_tools/_proto.
    well_known = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    rc = protoc.main(["protoc", f"-I{PROTO.parent}", f"-I{well_known}", f"--python_out={out}",
                      f"--grpc_python_out={out}", str(PROTO)])
    if rc != 0:
        raise RuntimeError(f"grpc_tools.protoc failed on {PROTO} (exit {rc})")
    sys.path.insert(0, out)
    import grpc_predict_v2_pb2 as pb
    import grpc_predict_v2_pb2_grpc as pb_grpc

    if cafile:
        with open(cafile, "rb") as f:
            channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(f.read()))
    else:
        channel = grpc.insecure_channel(address)
    stub = pb_grpc.GRPCInferenceServiceStub(channel)
    metadata = [("authorization", f"Bearer {token}")] if token else []

    def infer(model, inputs):
        request = pb.ModelInferRequest(model_name=model)
        for name, a in inputs.items():
            a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
            request.inputs.add(name=name, datatype=DATATYPE_OF[a.dtype.newbyteorder("=")],
                               shape=list(a.shape))
            request.raw_input_contents.append(a.tobytes())
        try:
            response = stub.ModelInfer(request, metadata=metadata, timeout=60)
        except grpc.RpcError as e:
            raise RuntimeError(f"ModelInfer: {e.code().name}: {e.details()}") from None
        return {o.name: np.frombuffer(raw, DTYPES[o.datatype]).reshape(list(o.shape))
                for o, raw in zip(response.outputs, response.raw_output_contents)}

    return infer


def make_inputs(metadata, files):
    """The model's inputs: from NAME=FILE.npy where given, else random of the declared shape."""
    rng = np.random.default_rng(0)
    inputs = {}
    for t in metadata["inputs"]:
        name, dtype = t["name"], DTYPES.get(t["datatype"])
        if name in files:
            inputs[name] = np.load(files[name])
            continue
        if dtype is None:
            raise SystemExit(f"input '{name}' is {t['datatype']}: give it with --input {name}=FILE.npy")
        shape = [d if d >= 0 else 1 for d in t["shape"]]
        if dtype.kind == "f":
            inputs[name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            inputs[name] = rng.integers(0, 2, shape).astype(dtype)
        else:
            inputs[name] = rng.integers(0, 10, shape).astype(dtype)
    return inputs


def show(how, outputs, k=5):
    for name, a in outputs.items():
        flat = a.ravel()
        top = np.argsort(-flat.astype(np.float64), kind="stable")[:k]
        values = ", ".join(f"[{i}] {flat[i]:.6g}" for i in top)
        print(f"{how:>12}: {name} {a.dtype.name}{list(a.shape)} top {len(top)}: {values}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8000", help="REST base URL")
    p.add_argument("--grpc", default="127.0.0.1:8001", help="gRPC HOST:PORT ('' skips gRPC)")
    p.add_argument("--model", default="small_cnn", help="model name (its repository directory)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    p.add_argument("--token", default=os.environ.get("FRAME_SERVE_TOKEN"),
                   help="bearer token (default: $FRAME_SERVE_TOKEN)")
    p.add_argument("--ca", help="PEM CA certificate for a server started with --tls-cert")
    args = p.parse_args()
    files = dict(s.split("=", 1) for s in args.input)

    rest = Rest(args.url, args.token, args.ca)
    metadata = rest.metadata(args.model)
    print(f"model {metadata['name']} versions {metadata.get('versions', [])}")
    for kind in ("inputs", "outputs"):
        for t in metadata[kind]:
            print(f"  {kind[:-1]} {t['name']}: {t['datatype']}{t['shape']}")
    inputs = make_inputs(metadata, files)
    show("REST JSON", rest.infer_json(args.model, inputs))
    show("REST binary", rest.infer_binary(args.model, inputs))
    if args.grpc:
        infer = grpc_client(args.grpc, args.token, args.ca)
        if infer is None:
            print("gRPC skipped: the grpc and grpc_tools modules do not import")
        else:
            show("gRPC", infer(args.model, inputs))


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(f"serve_client: {e}")
