"""ONNX Runtime's Python API over frame (docs/python.md, "Drop-in for ONNX Runtime").

Replacing ``import onnxruntime`` (or ``import onnxruntime as ort``) by ``import
frame.onnxruntime as onnxruntime`` makes scripts written for ONNX Runtime run on frame::

    import frame.onnxruntime as ort
    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    y = sess.run(None, {sess.get_inputs()[0].name: x})[0]

Sessions are ``frame.InferenceSession`` underneath (any shapes the model allows, one compiled
specialization per shape key, ADR 0006); this module only translates ONNX Runtime's names,
options, providers and exceptions. What differs from ONNX Runtime is listed in docs/python.md.
"""

from __future__ import annotations

import ctypes
import datetime
import enum
import json
import os
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _async, _frame
from .capi.onnxruntime_pybind11_state import (
    EngineError,
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoaded,
    NoModel,
    NoSuchFile,
    NotImplemented,
    RuntimeException,
)

__version__: str = _frame.__version__

__all__ = [
    "EPFail",
    "EngineError",
    "ExecutionMode",
    "Fail",
    "GraphOptimizationLevel",
    "IOBinding",
    "InferenceSession",
    "InvalidArgument",
    "InvalidGraph",
    "InvalidProtobuf",
    "ModelLoaded",
    "ModelMetadata",
    "NoModel",
    "NoSuchFile",
    "NodeArg",
    "NotImplemented",
    "OrtValue",
    "RunOptions",
    "RuntimeException",
    "SessionOptions",
    "__version__",
    "get_all_providers",
    "get_available_providers",
    "get_device",
]

# ---------------------------------------------------------------------------------------------
# Providers: ONNX Runtime execution provider names -> frame backend chains.

# Every provider name this module knows, in ONNX Runtime's priority order.
_ALL_PROVIDERS = [
    "CUDAExecutionProvider",
    "OpenVINOExecutionProvider",
    "DnnlExecutionProvider",
    "CPUExecutionProvider",
]
# The frame backend each provider needs to be available ("" = always there).
_PROVIDER_BACKEND = {
    "CUDAExecutionProvider": "cuda",
    "OpenVINOExecutionProvider": "intel_gpu",
    "DnnlExecutionProvider": "onednn",
    "CPUExecutionProvider": "",
}


def get_all_providers() -> List[str]:
    """Every execution provider name frame.onnxruntime maps to a backend chain, in priority
    order, whether or not this build and machine can run it."""
    return list(_ALL_PROVIDERS)


def _available_backends() -> set:
    return {b["name"] for b in _frame.backends() if b["available"]}


def get_available_providers() -> List[str]:
    """The providers this build and machine can run, in priority order, CPUExecutionProvider
    last (as ONNX Runtime lists them)."""
    have = _available_backends()
    return [p for p in _ALL_PROVIDERS if not _PROVIDER_BACKEND[p] or _PROVIDER_BACKEND[p] in have]


def get_device() -> str:
    """The device sessions run on by default: "CPU" (as ONNX Runtime's CPU build says)."""
    return "CPU"


def _provider_list(providers: Optional[Sequence[Any]],
                   provider_options: Optional[Sequence[Dict[str, Any]]]
                   ) -> List[Tuple[str, Dict[str, str]]]:
    """Normalizes ORT's two provider forms (names with a parallel options list, or
    (name, options) tuples) to [(name, {str: str})], dropping unavailable providers with a
    warning as ONNX Runtime does. Errors: ValueError for a malformed list."""
    if providers is None:
        return [("CPUExecutionProvider", {})]
    if isinstance(providers, str):
        providers = [providers]
    if provider_options is not None and len(provider_options) != len(providers):
        raise ValueError("'providers' and 'provider_options' should be the same length if both "
                         "are given.")
    available = get_available_providers()
    out: List[Tuple[str, Dict[str, str]]] = []
    for k, p in enumerate(providers):
        if isinstance(p, tuple):
            if len(p) != 2 or not isinstance(p[0], str) or not isinstance(p[1], dict):
                raise ValueError("A provider tuple must be (name, options dict), got %r" % (p,))
            name, opts = p
        elif isinstance(p, str):
            name = p
            opts = (provider_options[k] if provider_options is not None else None) or {}
        else:
            raise ValueError("Each provider must be a name or a (name, options) tuple, got %r"
                             % (p,))
        if any(name == seen for seen, _ in out):
            continue  # a provider listed twice: the first entry counts
        if name not in available:
            warnings.warn("Specified provider '%s' is not in available provider names. "
                          "Available providers: '%s'" % (name, ", ".join(available)))
            continue
        out.append((name, {str(key): str(value) for key, value in opts.items()}))
    if not out:
        out.append(("CPUExecutionProvider", {}))
    return out


def _backend_chain(providers: List[Tuple[str, Dict[str, str]]]) -> List[str]:
    """The frame backend chain of available providers: CPUExecutionProvider alone is frame's
    default chain ("auto": the optimized backends, then cpu); otherwise each provider's
    backend in order, then cpu."""
    if [p for p, _ in providers] == ["CPUExecutionProvider"]:
        return ["auto"]
    chain: List[str] = []
    have = _available_backends()
    for name, opts in providers:
        if name == "OpenVINOExecutionProvider":
            # OpenVINO's device_type picks the device: a GPU runs on intel_gpu, any other
            # device (CPU, the default) on frame's CPU chain.
            backends = (["intel_gpu"] if "GPU" in opts.get("device_type", "").upper()
                        else ["onednn", "cpu"])
        elif name == "CPUExecutionProvider":
            backends = ["onednn", "cpu"]
        else:
            backends = [_PROVIDER_BACKEND[name]]
        chain += [b for b in backends if b in have and b not in chain]
    if "cpu" not in chain:
        chain.append("cpu")
    return chain


# ---------------------------------------------------------------------------------------------
# Options.

class GraphOptimizationLevel(enum.IntEnum):
    """ONNX Runtime's optimization levels, mapped to frame passes (docs/python.md):
    ORT_DISABLE_ALL turns off constant folding (beyond the shape arithmetic every static graph
    needs, ARCH-044), CSE and operator fusion; ORT_ENABLE_BASIC turns off operator fusion;
    EXTENDED and ALL are frame's full pipeline."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


_DISABLED_PASSES = {
    GraphOptimizationLevel.ORT_DISABLE_ALL: ["constant-folding", "cse", "operator-fusion"],
    GraphOptimizationLevel.ORT_ENABLE_BASIC: ["operator-fusion"],
    GraphOptimizationLevel.ORT_ENABLE_EXTENDED: [],
    GraphOptimizationLevel.ORT_ENABLE_ALL: [],
}


class ExecutionMode(enum.IntEnum):
    """ONNX Runtime's execution modes. frame runs nodes in order with parallel kernels in
    both (ORT_PARALLEL's inter-op parallelism is not implemented; the value is accepted)."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


def _set_entry(config: Dict[str, str], key: str, value: str) -> None:
    config[str(key)] = str(value)


def _get_entry(config: Dict[str, str], key: str, owner: str) -> str:
    if key not in config:  # ONNX Runtime's message
        raise Fail("%s does not have configuration with key: %s" % (owner, key))
    return config[key]


class SessionOptions:
    """ONNX Runtime's SessionOptions. Fields that change what frame does: intra_op_num_threads
    (compute threads per run; 0 = all cores), graph_optimization_level, enable_profiling,
    profile_file_prefix, register_custom_ops_library (a frame plugin) and
    add_free_dimension_override_by_name. Accepted for compatibility and without effect in
    frame: inter_op_num_threads, execution_mode, log_severity_level, log_verbosity_level,
    logid, enable_cpu_mem_arena, enable_mem_pattern, enable_mem_reuse (frame always plans
    memory at compile time into one arena per run slot), use_deterministic_compute (frame's
    kernels are deterministic for a given thread count) and session config entries.
    optimized_model_filepath warns and writes nothing."""

    def __init__(self) -> None:
        self.intra_op_num_threads: int = 0
        self.inter_op_num_threads: int = 0
        self.graph_optimization_level: GraphOptimizationLevel = (
            GraphOptimizationLevel.ORT_ENABLE_ALL)
        self.execution_mode: ExecutionMode = ExecutionMode.ORT_SEQUENTIAL
        self.enable_profiling: bool = False
        self.profile_file_prefix: str = "onnxruntime_profile_"
        self.optimized_model_filepath: str = ""
        self.log_severity_level: int = 2
        self.log_verbosity_level: int = 0
        self.logid: str = ""
        self.enable_cpu_mem_arena: bool = True
        self.enable_mem_pattern: bool = True
        self.enable_mem_reuse: bool = True
        self.use_deterministic_compute: bool = False
        self._config: Dict[str, str] = {}
        self._free_dims: Dict[str, int] = {}

    def add_session_config_entry(self, config_key: str, config_value: str) -> None:
        """Stores a session config entry (ORT's "session.*" keys); frame reads none of them."""
        _set_entry(self._config, config_key, config_value)

    def get_session_config_entry(self, config_key: str) -> str:
        """The value stored for `config_key`. Errors: Fail when the key was never set."""
        return _get_entry(self._config, config_key, "SessionOptions")

    def register_custom_ops_library(self, library_path: str) -> None:
        """Loads a frame plugin (docs/python.md, "Plugins and backends") into the process: its
        ops, kernels and ONNX mappings are then available to every session. Errors: NoSuchFile
        for a missing file, Fail when the library is not a frame plugin or is refused."""
        if not os.path.exists(library_path):
            raise NoSuchFile(2, "No such file or directory", library_path)
        try:
            _frame.load_plugin(library_path)
        except (RuntimeError, ValueError, KeyError) as e:
            raise Fail(str(e)) from e

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Fixes the symbolic input dimension `dim_name` to `dim_value`: get_inputs() shows the
        value and a run whose input has another size there is refused (InvalidArgument)."""
        if int(dim_value) < 0:
            raise InvalidArgument("dim_value must be >= 0, got %d" % dim_value)
        self._free_dims[str(dim_name)] = int(dim_value)

    def _native(self, backends: List[str]) -> Any:
        o = _frame.SessionOptions()
        o.threads = max(0, int(self.intra_op_num_threads))
        o.backends = backends
        o.enable_profiling = bool(self.enable_profiling)
        try:
            level = GraphOptimizationLevel(self.graph_optimization_level)
        except ValueError:
            raise InvalidArgument("graph_optimization_level %r is not a GraphOptimizationLevel"
                                  % (self.graph_optimization_level,)) from None
        o.disabled_passes = _DISABLED_PASSES[level]
        return o


class RunOptions:
    """ONNX Runtime's RunOptions. `terminate`, set from another thread, stops a run that holds
    these options before its next node with Fail (a run not started yet fails at once). The
    log fields and run config entries are accepted and stored."""

    def __init__(self) -> None:
        self._native = _frame.RunOptions()
        self.log_severity_level: int = 2
        self.log_verbosity_level: int = 0
        self.only_execute_path_to_fetches: bool = False
        self._config: Dict[str, str] = {}

    @property
    def terminate(self) -> bool:
        """Stop runs holding these options (before their next node)."""
        return self._native.terminate

    @terminate.setter
    def terminate(self, value: bool) -> None:
        self._native.terminate = bool(value)

    @property
    def logid(self) -> str:
        """A name for the run (stored only)."""
        return self._native.logid

    @logid.setter
    def logid(self, value: str) -> None:
        self._native.logid = str(value)

    def add_run_config_entry(self, config_key: str, config_value: str) -> None:
        """Stores a run config entry; frame reads none of them."""
        _set_entry(self._config, config_key, config_value)

    def get_run_config_entry(self, config_key: str) -> str:
        """The value stored for `config_key`. Errors: Fail when the key was never set."""
        return _get_entry(self._config, config_key, "RunOptions")


# ---------------------------------------------------------------------------------------------
# Values.

_ONNX_DTYPE = {  # numpy dtype -> (ONNX TensorProto data type, ORT type string)
    np.dtype(np.float32): (1, "tensor(float)"),
    np.dtype(np.uint8): (2, "tensor(uint8)"),
    np.dtype(np.int8): (3, "tensor(int8)"),
    np.dtype(np.uint16): (4, "tensor(uint16)"),
    np.dtype(np.int16): (5, "tensor(int16)"),
    np.dtype(np.int32): (6, "tensor(int32)"),
    np.dtype(np.int64): (7, "tensor(int64)"),
    np.dtype(np.bool_): (9, "tensor(bool)"),
    np.dtype(np.float16): (10, "tensor(float16)"),
    np.dtype(np.float64): (11, "tensor(double)"),
    np.dtype(np.uint32): (12, "tensor(uint32)"),
    np.dtype(np.uint64): (13, "tensor(uint64)"),
}


def _contiguous(a: Any) -> np.ndarray:
    # np.ascontiguousarray would make a 0-d array 1-d.
    a = np.asarray(a)
    return a if a.flags.c_contiguous else np.array(a, order="C")


def _numpy_dtype(element_type: Any) -> np.dtype:
    # A numpy type, or an ONNX TensorProto data type code (1 = FLOAT), as ORT accepts.
    if isinstance(element_type, int) and not isinstance(element_type, bool):
        for dtype, (code, _) in _ONNX_DTYPE.items():
            if code == element_type:
                return dtype
        raise InvalidArgument("unsupported ONNX element type code %d" % element_type)
    return np.dtype(element_type)


def _check_cpu(device_type: str, device_id: int) -> None:
    if str(device_type).lower() != "cpu" or int(device_id) != 0:
        raise Fail("frame.onnxruntime holds values on the CPU only; got device '%s' id %d"
                   % (device_type, device_id))


class OrtValue:
    """ONNX Runtime's OrtValue: a tensor on the CPU. ortvalue_from_numpy borrows the array's
    memory (no copy; keep the array alive, as with ONNX Runtime)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    @staticmethod
    def ortvalue_from_numpy(numpy_obj: np.ndarray, device_type: str = "cpu",
                            device_id: int = 0) -> "OrtValue":
        """An OrtValue over `numpy_obj` (made C-contiguous first when it is not). Errors: Fail
        for a device other than cpu."""
        _check_cpu(device_type, device_id)
        return OrtValue(_contiguous(numpy_obj))

    @staticmethod
    def ortvalue_from_shape_and_type(shape: Optional[Sequence[int]] = None,
                                     element_type: Any = None, device_type: str = "cpu",
                                     device_id: int = 0) -> "OrtValue":
        """An uninitialized tensor of `shape` and numpy `element_type` (e.g. np.float32).
        Errors: InvalidArgument when either is missing, Fail for a device other than cpu."""
        if shape is None or element_type is None:
            raise InvalidArgument("ortvalue_from_shape_and_type needs a shape and an element_type")
        _check_cpu(device_type, device_id)
        if any(int(d) < 0 for d in shape):
            raise InvalidArgument("negative dimension in shape %s" % list(shape))
        return OrtValue(np.empty([int(d) for d in shape], dtype=_numpy_dtype(element_type)))

    def numpy(self) -> np.ndarray:
        """The tensor as an ndarray (the same memory)."""
        return self._array

    def shape(self) -> List[int]:
        """The tensor's shape."""
        return list(self._array.shape)

    def data_type(self) -> str:
        """ORT's type string, e.g. "tensor(float)"."""
        return _ONNX_DTYPE.get(self._array.dtype, (0, "tensor(undefined)"))[1]

    def element_type(self) -> int:
        """The ONNX TensorProto data type code of the elements (1 = FLOAT, 7 = INT64, ...)."""
        return _ONNX_DTYPE.get(self._array.dtype, (0, ""))[0]

    def is_tensor(self) -> bool:
        """True: every OrtValue here holds a tensor."""
        return True

    def is_tensor_sequence(self) -> bool:
        """False: sequences are returned as lists of arrays."""
        return False

    def has_value(self) -> bool:
        """True: an OrtValue here always holds a value."""
        return True

    def device_name(self) -> str:
        """"cpu"."""
        return "cpu"

    def data_ptr(self) -> int:
        """The address of the first element."""
        return int(self._array.ctypes.data)


class NodeArg:
    """A model input or output as ONNX Runtime describes it: name, shape (ints; str for a
    symbolic dim; None for an unknown one) and type ("tensor(float)")."""

    def __init__(self, name: str, shape: Optional[List[Any]], type: str) -> None:
        self.name = name
        self.shape = shape
        self.type = type

    def __repr__(self) -> str:
        return "NodeArg(name='%s', type='%s', shape=%s)" % (self.name, self.type, self.shape)


class ModelMetadata:
    """ONNX Runtime's ModelMetadata: the ModelProto's descriptive fields."""

    def __init__(self, fields: Dict[str, Any]) -> None:
        self.producer_name: str = fields["producer_name"]
        self.graph_name: str = fields["graph_name"]
        self.domain: str = fields["domain"]
        self.description: str = fields["description"]
        self.graph_description: str = fields["graph_description"]
        self.version: int = fields["version"]
        self.custom_metadata_map: Dict[str, str] = dict(fields["metadata_props"])


# ---------------------------------------------------------------------------------------------
# Errors: frame's exception types -> ONNX Runtime's classes.

def _load_error(e: Exception) -> Exception:
    if isinstance(e, FileNotFoundError):
        return NoSuchFile(e.errno, e.strerror, e.filename)
    if isinstance(e, OSError):
        return Fail(str(e))
    if isinstance(e, NotImplementedError):
        return NotImplemented(str(e))
    msg = e.args[0] if e.args and isinstance(e.args[0], str) else str(e)
    if isinstance(e, ValueError) and "protobuf" in msg.lower():
        return InvalidProtobuf(msg)
    if isinstance(e, (ValueError, KeyError)):
        return InvalidGraph(msg)
    return Fail(msg)


def _run_error(e: Exception) -> Exception:
    msg = e.args[0] if e.args and isinstance(e.args[0], str) else str(e)
    if isinstance(e, NotImplementedError):
        return NotImplemented(msg)
    if isinstance(e, (ValueError, KeyError)):
        return InvalidArgument(msg)
    return Fail(msg)


_FRAME_ERRORS = (ValueError, KeyError, RuntimeError)  # NotImplementedError is a RuntimeError


# ---------------------------------------------------------------------------------------------
# Sessions.

class InferenceSession:
    """ONNX Runtime's InferenceSession over frame.InferenceSession.

    path_or_bytes: a model path (str or os.PathLike) or the serialized ModelProto.
    providers: execution provider names or (name, options) tuples (get_available_providers();
    an unavailable one is skipped with a warning); None = ["CPUExecutionProvider"].
    Errors: NoSuchFile (missing file), InvalidProtobuf (not a ModelProto), InvalidGraph (a
    graph frame cannot import), NotImplemented (an unsupported op or dtype), Fail (other)."""

    def __init__(self, path_or_bytes: Union[str, bytes, "os.PathLike[str]"],
                 sess_options: Optional[SessionOptions] = None,
                 providers: Optional[Sequence[Any]] = None,
                 provider_options: Optional[Sequence[Dict[str, Any]]] = None,
                 **kwargs: Any) -> None:
        if isinstance(path_or_bytes, (bytes, bytearray)):
            self._model: Union[str, bytes] = bytes(path_or_bytes)
            self._model_path = ""
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self._model = os.fspath(path_or_bytes)
            self._model_path = self._model
        else:
            raise TypeError("Unable to load from type '%s'" % type(path_or_bytes).__name__)
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise TypeError("sess_options: expected frame.onnxruntime.SessionOptions, got %s"
                            % type(sess_options).__name__)
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        self._create(providers, provider_options)

    def _create(self, providers: Optional[Sequence[Any]],
                provider_options: Optional[Sequence[Dict[str, Any]]]) -> None:
        opts = self._sess_options
        self._providers = _provider_list(providers, provider_options)
        native = opts._native(_backend_chain(self._providers))
        if opts.optimized_model_filepath:
            warnings.warn("frame.onnxruntime: optimized_model_filepath is not supported; "
                          "nothing is written to '%s' (docs/python.md)"
                          % opts.optimized_model_filepath)
        try:
            self._sess = _frame.InferenceSession(self._model, sess_options=native)
        except (OSError,) + _FRAME_ERRORS as e:
            raise _load_error(e) from e
        self._free_dims = dict(opts._free_dims)
        self._inputs = [self._node_arg(a) for a in self._sess.get_inputs()]
        self._outputs = [NodeArg(a.name, a.shape, a.type) for a in self._sess.get_outputs()]
        self._output_names = [o.name for o in self._outputs]
        self._profiling_start_ns = time.time_ns() if opts.enable_profiling else 0
        self._metadata: Optional[ModelMetadata] = None

    def _node_arg(self, a: Any) -> NodeArg:
        shape = a.shape
        if shape is not None and self._free_dims:
            shape = [self._free_dims.get(d, d) if isinstance(d, str) else d for d in shape]
        return NodeArg(a.name, shape, a.type)

    # --- description -------------------------------------------------------------------------

    def get_inputs(self) -> List[NodeArg]:
        """The graph inputs a run takes (initializers excluded), in model order."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The graph outputs, in model order."""
        return list(self._outputs)

    def get_overridable_initializers(self) -> List[NodeArg]:
        """Initializers a feed may override (an initializer that is also a graph input; ONNX IR
        spec, "Graphs"), in model order. A run that feeds one uses the fed value; the others
        keep the stored one."""
        return [self._node_arg(a) for a in self._sess.get_overridable_initializers()]

    def get_modelmeta(self) -> ModelMetadata:
        """The model's producer, graph name, domain, descriptions, version and custom metadata
        (ModelProto.metadata_props). Errors: as opening the model."""
        if self._metadata is None:
            try:
                data = self._model if isinstance(self._model, bytes) else open(
                    self._model, "rb").read()
                self._metadata = ModelMetadata(_frame._model_metadata(data))
            except FileNotFoundError as e:
                raise NoSuchFile(e.errno, e.strerror, e.filename) from e
            except _FRAME_ERRORS as e:
                raise _load_error(e) from e
        return self._metadata

    def get_providers(self) -> List[str]:
        """The providers this session uses, in priority order."""
        return [p for p, _ in self._providers]

    def get_provider_options(self) -> Dict[str, Dict[str, str]]:
        """Each provider's options as given (values as strings)."""
        return {p: dict(o) for p, o in self._providers}

    def set_providers(self, providers: Optional[Sequence[Any]] = None,
                      provider_options: Optional[Sequence[Dict[str, Any]]] = None) -> None:
        """Re-creates the session with other providers (compiled specializations are
        dropped)."""
        self._create(providers, provider_options)

    def get_session_options(self) -> SessionOptions:
        """The SessionOptions this session was created with."""
        return self._sess_options

    def get_profiling_start_time_ns(self) -> int:
        """When profiling started (time.time_ns() at session creation); 0 without profiling."""
        return self._profiling_start_ns

    # --- runs --------------------------------------------------------------------------------

    def _check_feed(self, input_feed: Dict[str, Any]) -> None:
        if not self._free_dims:
            return
        for arg in self._inputs:
            x = input_feed.get(arg.name)
            if arg.shape is None or x is None or not hasattr(x, "shape"):
                continue
            for k, (want, got) in enumerate(zip(arg.shape, x.shape)):
                if isinstance(want, int) and want != got:
                    raise InvalidArgument(
                        "Got invalid dimensions for input: %s for the following indices\n"
                        " index: %d Got: %d Expected: %d" % (arg.name, k, got, want))

    def _check_run(self, input_feed: Dict[str, Any], run_options: Optional[RunOptions]) -> None:
        if run_options is not None and getattr(run_options, "terminate", False):
            raise Fail("Exiting due to terminate flag being set to true.")
        self._check_feed(input_feed)

    def _run_into(self, input_feed: Dict[str, Any], outputs: Dict[str, np.ndarray],
                  run_options: Optional[RunOptions]) -> Dict[str, np.ndarray]:
        # Outputs bound to memory: the kernels write there; the others get arrays allocated for
        # them (returned by name). No copies.
        self._check_run(input_feed, run_options)
        try:
            return self._sess._run_into(input_feed, outputs,
                                        getattr(run_options, "_native", run_options))
        except _FRAME_ERRORS as e:
            raise _run_error(e) from e

    def run(self, output_names: Optional[Sequence[str]], input_feed: Dict[str, Any],
            run_options: Optional[RunOptions] = None) -> List[Any]:
        """Runs the model. output_names: names to return, None or [] for every output.
        Returns a list of ndarrays in the order asked (a name asked twice gives two distinct
        arrays). Errors: InvalidArgument (unknown input or output name, wrong dtype or shape),
        NotImplemented, Fail (RunOptions.terminate set, or a kernel failure)."""
        self._check_run(input_feed, run_options)
        names = list(output_names) if output_names else list(self._output_names)
        unique = list(dict.fromkeys(names))
        try:
            # frame.onnxruntime.RunOptions wraps a frame.RunOptions; either may be given.
            values = self._sess.run(unique, input_feed, getattr(run_options, "_native",
                                                                 run_options))
        except _FRAME_ERRORS as e:
            raise _run_error(e) from e
        by_name = dict(zip(unique, values))
        out, seen = [], set()
        for n in names:
            v = by_name[n]
            out.append(np.copy(v) if n in seen and isinstance(v, np.ndarray) else v)
            seen.add(n)
        return out

    def run_async(self, output_names: Optional[Sequence[str]], input_feed: Dict[str, Any],
                  callback: Callable[[List[Any], Any, str], None], user_data: Any,
                  run_options: Optional[RunOptions] = None) -> None:
        """Starts a run on one of a small set of frame threads and returns at once; when it
        ends, `callback(outputs, user_data, err)` is called on that thread with err == "" on
        success, or outputs None and err the error's message. Many runs may be in flight on
        one session; the GIL is released while frame computes."""
        future = _async.executor().submit(self.run, output_names, dict(input_feed), run_options)
        future.add_done_callback(_async.on_done(callback, user_data))

    def run_with_ort_values(self, output_names: Optional[Sequence[str]],
                            input_dict_ort_values: Dict[str, OrtValue],
                            run_options: Optional[RunOptions] = None) -> List[OrtValue]:
        """Like run, with OrtValue inputs and outputs."""
        feed = {k: (v.numpy() if isinstance(v, OrtValue) else v)
                for k, v in input_dict_ort_values.items()}
        return [OrtValue(v) for v in self.run(output_names, feed, run_options)]

    def io_binding(self) -> "IOBinding":
        """A new IOBinding for this session."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: "IOBinding",
                           run_options: Optional[RunOptions] = None) -> None:
        """Runs with the binding's inputs; outputs bound to memory are written there, the
        others are held by the binding (get_outputs, copy_outputs_to_cpu)."""
        iobinding._run(run_options)

    def end_profiling(self) -> str:
        """Writes the profile of every run so far as a Chrome trace (a JSON list of events,
        "ph": "X", microseconds) to `<profile_file_prefix>_<date>.json` in the working
        directory and returns the file name; "" when profiling is off."""
        if not self._sess_options.enable_profiling:
            return ""
        profile = self._sess.profile()
        stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        name = "%s_%s.json" % (self._sess_options.profile_file_prefix, stamp)
        with open(name, "w") as f:
            json.dump(profile.get("traceEvents", []), f)
        return name


class IOBinding:
    """ONNX Runtime's IOBinding on the CPU: inputs bound once and reused by every
    run_with_iobinding; outputs bound by name (the run's own arrays, read with get_outputs or
    copy_outputs_to_cpu) or to caller memory (an OrtValue, or element type + shape + address),
    which each run writes into."""

    def __init__(self, session: InferenceSession) -> None:
        self._session = session
        self._inputs: Dict[str, np.ndarray] = {}
        self._outputs: Dict[str, Optional[np.ndarray]] = {}  # None: the run allocates
        self._results: List[np.ndarray] = []

    def bind_cpu_input(self, name: str, arr_on_cpu: np.ndarray) -> None:
        """Binds input `name` to an ndarray (used without a copy where contiguous)."""
        self._inputs[name] = _contiguous(arr_on_cpu)

    def bind_input(self, name: str, device_type: str, device_id: int, element_type: Any,
                   shape: Sequence[int], buffer_ptr: int) -> None:
        """Binds input `name` to memory at address `buffer_ptr` holding a C-contiguous tensor
        of numpy `element_type` and `shape`. Errors: Fail for a device other than cpu."""
        _check_cpu(device_type, device_id)
        self._inputs[name] = _array_at(buffer_ptr, element_type, shape)

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        """Binds input `name` to an OrtValue."""
        self._inputs[name] = ortvalue.numpy()

    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0,
                    element_type: Any = None, shape: Optional[Sequence[int]] = None,
                    buffer_ptr: Optional[int] = None) -> None:
        """Binds output `name`: with element type, shape and address, each run writes the
        output there; with only a name, each run's own array is kept. Errors: Fail for a
        device other than cpu."""
        _check_cpu(device_type, device_id)
        if buffer_ptr is None:
            self._outputs[name] = None
        else:
            if element_type is None or shape is None:
                raise InvalidArgument("bind_output with buffer_ptr needs element_type and shape")
            self._outputs[name] = _array_at(buffer_ptr, element_type, shape)

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        """Binds output `name` to an OrtValue's memory, which each run writes into."""
        self._outputs[name] = ortvalue.numpy()

    def clear_binding_inputs(self) -> None:
        """Forgets every bound input."""
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        """Forgets every bound output and the last run's outputs."""
        self._outputs.clear()
        self._results = []

    def synchronize_inputs(self) -> None:
        """Nothing to do on the CPU (ORT waits for device copies here)."""

    def synchronize_outputs(self) -> None:
        """Nothing to do on the CPU (ORT waits for device copies here)."""

    def get_outputs(self) -> List[OrtValue]:
        """The last run's outputs, in binding order, as OrtValues."""
        return [OrtValue(r) for r in self._results]

    def copy_outputs_to_cpu(self) -> List[np.ndarray]:
        """Copies of the last run's outputs, in binding order."""
        return [np.copy(r) for r in self._results]

    def _run(self, run_options: Optional[RunOptions]) -> None:
        bound = {n: a for n, a in self._outputs.items() if a is not None}
        if bound:
            # Outputs in caller memory: one run writing there, no copy; the other outputs are
            # allocated for the run (as ONNX Runtime does), not copied.
            allocated = self._session._run_into(self._inputs, bound, run_options)
            self._results = [bound[n] if n in bound else allocated[n] for n in self._outputs]
            return
        names = list(self._outputs) or None
        values = self._session.run(names, self._inputs, run_options)
        results = []
        for name, v in zip(names or self._session._output_names, values):
            dst = self._outputs.get(name)
            if dst is None:
                results.append(v)
                continue
            if dst.shape != v.shape or dst.dtype != v.dtype:
                raise InvalidArgument(
                    "output '%s': the bound buffer is %s%s, the run produced %s%s"
                    % (name, dst.dtype, list(dst.shape), v.dtype, list(v.shape)))
            np.copyto(dst, v)
            results.append(dst)
        self._results = results


def _array_at(buffer_ptr: int, element_type: Any, shape: Sequence[int]) -> np.ndarray:
    dtype = _numpy_dtype(element_type)
    shape = [int(d) for d in shape]
    if any(d < 0 for d in shape):
        raise InvalidArgument("negative dimension in shape %s" % shape)
    count = int(np.prod(shape)) if shape else 1
    if not buffer_ptr and count > 0:
        raise InvalidArgument("buffer_ptr is null for a buffer of %d elements" % count)
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(int(buffer_ptr))
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)
