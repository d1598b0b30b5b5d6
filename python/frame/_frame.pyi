# Type stubs of the compiled module frame._frame (PY-020). tests/python/test_stubs.py checks
# that every public symbol of the module is here with the same parameters, and nothing more.
from os import PathLike
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

_Dim = Union[int, str, None]
_DTypeLike = Union[str, npt.DTypeLike]

class LoadLimits:
    """Limits of the ONNX import (onnx::LoadLimits); the defaults are the C++ ones."""

    max_model_bytes: int
    max_tensor_bytes: int
    max_initializer_bytes: int
    max_nesting_depth: int
    max_nodes: int
    max_attribute_elements: int
    def __init__(self) -> None: ...

class RunOptions:
    """Options of one run (ONNX Runtime style): set terminate from another thread to stop a run between nodes."""

    terminate: bool
    logid: str
    def __init__(self) -> None: ...

class SessionOptions:
    """Options of an InferenceSession (ONNX Runtime style)."""

    threads: int
    intra_op_num_threads: int
    @property
    def backends(self) -> Tuple[str, ...]: ...
    @backends.setter
    def backends(self, value: Sequence[str]) -> None: ...
    strict: bool
    enable_profiling: bool
    @property
    def disabled_passes(self) -> Tuple[str, ...]: ...
    @disabled_passes.setter
    def disabled_passes(self, value: Sequence[str]) -> None: ...
    max_specializations: int
    max_cache_bytes: int
    cache_dir: str
    max_cache_dir_bytes: int
    tiered_compile: bool
    interpret_first_seen: bool
    background_compile: bool
    max_memory_bytes: int
    max_tensor_bytes: int
    load_limits: LoadLimits
    def __init__(self) -> None: ...

class NodeArg:
    """A declared model input or output."""

    @property
    def name(self) -> str: ...
    @property
    def shape(self) -> Optional[List[_Dim]]: ...
    @property
    def type(self) -> str: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...

class InferenceSession:
    """An ONNX model ready to run; thread-safe."""

    def __init__(
        self,
        path_or_bytes: Union[str, bytes, PathLike[str], Graph],
        sess_options: Optional[SessionOptions] = None,
        backends: Optional[Sequence[str]] = None,
        threads: Optional[int] = None,
    ) -> None: ...
    def run(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Mapping[str, Union[npt.NDArray[Any], Sequence[npt.NDArray[Any]], None]],
        run_options: Any = None,
    ) -> List[Any]: ...  # an ndarray; a list of ndarrays for a sequence; None for an absent optional
    def run_async(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Mapping[str, Union[npt.NDArray[Any], Sequence[npt.NDArray[Any]], None]],
        callback: Optional[Callable[[Optional[List[Any]], Any, str], None]] = None,
        user_data: Any = None,
        run_options: Any = None,
    ) -> Any: ...  # None with a callback; else a concurrent.futures.Future of run()'s list
    def get_inputs(self) -> List[NodeArg]: ...
    def get_outputs(self) -> List[NodeArg]: ...
    def get_overridable_initializers(self) -> List[NodeArg]: ...
    def placement(self) -> List[Dict[str, Any]]: ...
    def report(self) -> Optional[Dict[str, Any]]: ...
    def profile(self) -> Dict[str, Any]: ...
    def cache_stats(self) -> Dict[str, int]: ...
    def stages(self) -> List[str]: ...
    def shape_determining_inputs(self) -> List[str]: ...
    def get_session_options(self) -> SessionOptions: ...

class Value:
    """A value of a Graph under construction."""

    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> Optional[np.dtype[Any]]: ...
    @property
    def shape(self) -> Optional[List[int]]: ...

_Attr = Union[int, float, str, Sequence[int], Sequence[float], Sequence[str], npt.NDArray[Any]]

class Graph:
    """A graph built op by op; compile it with frame.compile."""

    def __init__(self, name: str = "graph") -> None: ...
    def input(self, name: str, dtype: _DTypeLike, shape: Sequence[int]) -> Value: ...
    def constant(self, value: npt.NDArray[Any], name: Optional[str] = None) -> Value: ...
    def add_node(
        self,
        op: str,
        inputs: Sequence[Union[Value, npt.NDArray[Any], None]],
        attrs: Optional[Mapping[str, _Attr]] = None,
        name: Optional[str] = None,
        num_outputs: Optional[int] = None,
    ) -> Union[Value, List[Value]]: ...
    def output(self, values: Union[Value, Sequence[Value]]) -> None: ...
    @property
    def inputs(self) -> List[Value]: ...
    @property
    def outputs(self) -> List[Value]: ...
    @property
    def name(self) -> str: ...
    @property
    def num_nodes(self) -> int: ...

class Executable:
    """A compiled graph; run is thread-safe."""

    def run(self, inputs: Mapping[str, npt.NDArray[Any]]) -> Dict[str, npt.NDArray[Any]]: ...
    def placement(self) -> List[Dict[str, Any]]: ...
    def report(self) -> Dict[str, Any]: ...
    @property
    def input_signature(self) -> List[Tuple[str, np.dtype[Any], List[int]]]: ...
    @property
    def output_signature(self) -> List[Tuple[str, np.dtype[Any], List[int]]]: ...

def compile(
    graph: Graph,
    backends: Sequence[str] = ...,
    strict: bool = False,
    threads: int = 0,
    *,
    max_memory_bytes: int = ...,
    max_tensor_bytes: int = ...,
) -> Executable: ...
def load_onnx(
    path: Union[str, PathLike[str]],
    input_shapes: Mapping[str, Sequence[int]] = ...,
    *,
    limits: Optional[LoadLimits] = None,
) -> Graph: ...
def load_plugin(path: Union[str, PathLike[str]]) -> Dict[str, Any]: ...
def backends() -> List[Dict[str, Any]]: ...
def register_op(
    name: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    attrs: Optional[Mapping[str, _Attr]] = None,
    traits: Sequence[str] = ...,
    shape_fn: Optional[
        Callable[
            [List[Tuple[np.dtype[Any], List[int]]], Dict[str, Any]],
            Sequence[Tuple[_DTypeLike, Sequence[int]]],
        ]
    ] = None,
    *,
    cpu_kernel: Callable[
        [List[npt.NDArray[Any]], Dict[str, Any]],
        Union[npt.NDArray[Any], Sequence[npt.NDArray[Any]]],
    ],
    doc: str = "",
) -> None: ...
def map_onnx_op(domain: str, op_type: str, op: str) -> None: ...
def _ops_json() -> str: ...
def _kernels_json() -> str: ...
def _model_metadata(model: bytes) -> Dict[str, Any]: ...
