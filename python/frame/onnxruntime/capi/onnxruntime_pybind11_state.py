"""The exception classes ONNX Runtime scripts catch, under ONNX Runtime's module path
(``onnxruntime.capi.onnxruntime_pybind11_state``). Each is also a subclass of the built-in
exception frame raises for the same failure (docs/python.md, "Errors"), so code written for
either API catches it:

==================  ===============================  ==========================================
class               also a subclass of               raised by frame.onnxruntime for
==================  ===============================  ==========================================
Fail                RuntimeError                     a run or session failure without a finer
                                                     class; RunOptions.terminate
InvalidArgument     ValueError, KeyError             a feed with a wrong name, dtype or shape
NoSuchFile          FileNotFoundError                a model path that does not exist
NoModel             ValueError                       (not raised: kept for scripts that catch it)
EngineError         RuntimeError                     (not raised)
RuntimeException    RuntimeError                     (not raised)
InvalidProtobuf     ValueError                       model bytes that are not an ONNX ModelProto
ModelLoaded         RuntimeError                     (not raised)
NotImplemented      NotImplementedError              an op or dtype frame does not support
InvalidGraph        ValueError                       a model frame cannot import (bad graph)
EPFail              RuntimeError                     (not raised)
==================  ===============================  ==========================================
"""

from __future__ import annotations

__all__ = [
    "EPFail",
    "EngineError",
    "Fail",
    "InvalidArgument",
    "InvalidGraph",
    "InvalidProtobuf",
    "ModelLoaded",
    "NoModel",
    "NoSuchFile",
    "NotImplemented",
    "RuntimeException",
]


class Fail(RuntimeError):
    """A failure without a finer class (ORT status FAIL)."""


class InvalidArgument(ValueError, KeyError):
    """A bad argument: unknown input name, wrong dtype or shape (ORT status INVALID_ARGUMENT).
    A ValueError and a KeyError, as frame raises one or the other for these."""

    def __str__(self) -> str:  # the message as given (KeyError would quote it)
        return BaseException.__str__(self)


class NoSuchFile(FileNotFoundError):
    """The model file does not exist (ORT status NO_SUCHFILE)."""


class NoModel(ValueError):
    """No model (ORT status NO_MODEL)."""


class EngineError(RuntimeError):
    """An engine error (ORT status ENGINE_ERROR)."""


class RuntimeException(RuntimeError):
    """A run-time exception (ORT status RUNTIME_EXCEPTION)."""


class InvalidProtobuf(ValueError):
    """The model is not a valid ONNX ModelProto (ORT status INVALID_PROTOBUF)."""


class ModelLoaded(RuntimeError):
    """The model is already loaded (ORT status MODEL_LOADED)."""


# ORT's name, kept although it shadows the builtin constant inside this module only.
class NotImplemented(NotImplementedError):  # noqa: A001
    """An op, dtype or feature frame does not support (ORT status NOT_IMPLEMENTED)."""


class InvalidGraph(ValueError):
    """A model whose graph frame cannot import (ORT status INVALID_GRAPH)."""


class EPFail(RuntimeError):
    """An execution provider failed (ORT status EP_FAIL)."""
