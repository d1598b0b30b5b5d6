"""The threads that carry asynchronous runs (``InferenceSession.run_async``; docs/python.md,
"Asynchronous runs"): one small bounded pool per process, created on first use, whose threads
only call ``InferenceSession.run`` (which releases the GIL while frame computes; kernel work
stays on the OpenMP pool of each run). Python joins it at exit, after the queued runs end."""

from __future__ import annotations

import concurrent.futures
import os
import sys
import threading
import traceback
from typing import Any, Callable, Optional

_lock = threading.Lock()
_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None


def _forget_pool_in_child() -> None:
    # A fork()ed child has the pool object but none of its threads: make a new one on first use.
    global _lock, _pool
    _lock = threading.Lock()
    _pool = None


os.register_at_fork(after_in_child=_forget_pool_in_child)


def max_workers() -> int:
    """Threads of the pool: the cores, at least 2 and at most 8."""
    return max(2, min(8, os.cpu_count() or 2))


def executor() -> concurrent.futures.ThreadPoolExecutor:
    """The process's pool of asynchronous-run threads."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(max_workers=max_workers(),
                                                          thread_name_prefix="frame-async")
        return _pool


def on_done(callback: Callable[[Any, Any, str], None],
            user_data: Any) -> Callable[[concurrent.futures.Future], None]:
    """A done-callback for a run's Future that calls ONNX Runtime's form of callback:
    ``callback(outputs, user_data, "")`` on success, ``callback(None, user_data, err)`` with
    ``err`` the exception's class and message on failure. An exception the callback itself
    raises is printed to stderr with its traceback (as an uncaught exception in a thread is)."""

    def done(f: concurrent.futures.Future) -> None:
        err = f.exception()
        try:
            if err is None:
                callback(f.result(), user_data, "")
            else:
                callback(None, user_data, "%s: %s" % (type(err).__name__, err))
        except BaseException:  # noqa: B902 -- reported, never lost silently
            print("frame: exception in a run_async callback:", file=sys.stderr)
            traceback.print_exc()

    return done
