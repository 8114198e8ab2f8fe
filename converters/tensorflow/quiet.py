"""TensorFlow's own log output, silenced while we import it and load a model.

TF 2.21 writes its start-up lines (absl's "All log messages before absl::InitializeLog()",
oneDNN, CPU-feature notices) from C++ straight to file descriptor 2, at import and at the first
op, whatever TF_CPP_MIN_LOG_LEVEL says; its Python side logs through the `tensorflow` and `absl`
loggers. For a user of the converter, and in the CLI whose errors are one line, that is noise:
inside `quiet()` descriptor 2 goes to a scratch file that is dropped, and those loggers only pass
errors. `RELAY_TF_LOGS=1` keeps everything (for debugging TF itself).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import threading

_lock = threading.Lock()
_depth = 0
_saved_fd: int | None = None


def quiet_loggers() -> None:
    """Before TF is imported: its C++ log level, and its Python loggers at ERROR."""
    if os.environ.get("RELAY_TF_LOGS") == "1":
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name in ("tensorflow", "absl", "keras", "h5py"):
        logging.getLogger(name).setLevel(logging.ERROR)


@contextlib.contextmanager
def quiet():
    """Native output to stderr (descriptor 2) is dropped inside the block (re-entrant; it is
    process-wide, so other threads' native stderr is dropped meanwhile too)."""
    global _depth, _saved_fd
    if os.environ.get("RELAY_TF_LOGS") == "1":
        yield
        return
    quiet_loggers()
    sink = None
    with _lock:
        if _depth == 0:
            try:
                sys.stderr.flush()
                sink = tempfile.TemporaryFile()
                _saved_fd = os.dup(2)
                os.dup2(sink.fileno(), 2)
            except (OSError, ValueError, AttributeError):  # no descriptor 2 to redirect
                if sink is not None:
                    sink.close()
                sink, _saved_fd = None, None
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved_fd is not None:
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    sys.stderr.flush()
                os.dup2(_saved_fd, 2)
                os.close(_saved_fd)
                _saved_fd = None
            if sink is not None:
                sink.close()
