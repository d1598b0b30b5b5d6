"""frame.compare: a layer-by-layer comparison of two runs of one model (docs/debugging.md)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _frame

Chain = Union[str, Sequence[str]]


def _chain(chain: Optional[Chain], what: str) -> List[str]:
    if chain is None:
        return ["auto"]
    if isinstance(chain, str):
        items = [c.strip() for c in chain.split(",")]
    elif isinstance(chain, (list, tuple)):
        items = list(chain)
    else:
        raise TypeError(f"{what}: expected a comma-separated str or a list of backend names, "
                        f"got {type(chain).__name__}")
    if not items or any(not isinstance(c, str) or not c for c in items):
        raise ValueError(f"{what}: expected backend names, e.g. 'onednn,cpu', got {chain!r}")
    return items


def compare(model: Any, feeds: Mapping[str, Any], backends: Optional[Chain] = None,
            reference: Chain = "cpu", threads: int = 1, rtol: Optional[float] = None,
            atol: Optional[float] = None) -> Dict[str, Any]:
    """Runs `model` (a path, bytes or frame.Graph) on the chain `backends` (default "auto")
    and on `reference` (default "cpu", the reference kernels) with the same `feeds` ({input
    name: numpy array}), compares every value both runs produce, by ONNX value name (a fused
    group at its outputs), under BUILD-011's deep-network tolerance (f32: rtol 1e-3, atol 1e-4),
    and returns the report: ``ok``, ``first_divergence`` (an index into ``values`` or None),
    ``values`` (one dict per value in the tested run's order: value, node, op, backend, path,
    fused_ops, type, reference_node, reference_backend, reference_type, max_abs_error,
    max_rel_error, worst_ratio, mismatches, numel, rtol, atol, ok, message), ``only_in_target``
    and ``only_in_reference``. The class's atol is scaled by max(1, largest |reference|) of each
    float value (docs/debugging.md). `rtol` / `atol` replace the class's for every dtype, used
    as given (integers included: atol=1 accepts a quantized model's one-step requantization
    differences); finite and >= 0. Models with sequence or optional inputs or outputs are
    refused (NotImplementedError). Each run compiles in full (no first-seen tier) with `threads`
    kernel threads. Errors: as opening the model and running it (ValueError, KeyError for an
    unknown input, RuntimeError), naming which run failed."""
    tested_chain = _chain(backends, "backends")
    reference_chain = _chain(reference, "reference")
    if not isinstance(feeds, Mapping):
        raise TypeError(f"feeds: expected a dict of input name -> numpy array, got "
                        f"{type(feeds).__name__}")

    def session(chain: List[str], what: str) -> _frame.InferenceSession:
        opts = _frame.SessionOptions()
        opts.threads = threads
        opts.tiered_compile = False
        try:
            return _frame.InferenceSession(model, sess_options=opts, backends=chain)
        except (ValueError, KeyError, LookupError) as e:
            if "unknown backend" in str(e):  # say which chain named it
                raise type(e)(f"{what}: {e}") from e
            raise

    tested = session(tested_chain, "backends")
    ref = session(reference_chain, "reference")
    report = json.loads(tested._compare_with(ref, dict(feeds), tested_chain, reference_chain,
                                             rtol, atol))
    report["model"] = os.fspath(model) if isinstance(model, (str, os.PathLike)) else ""
    return report
