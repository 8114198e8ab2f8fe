"""Progress events: long steps announce themselves to whoever listens.

The core only calls `stage` / `progress`; a front end subscribes (relay_import's CLI prints one
line per stage on stderr). With no listener an event costs one empty-list check.

    >>> with relay_core.events.listening(print):
    ...     relay_core.build(mod)
    Event(kind='start', stage='optimising', ...)
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Event:
    kind: str  # "start", "progress" or "end"
    stage: str  # "converting model.onnx", "optimising", "compiling", ...
    detail: str = ""  # "61 kernels"
    done: int = 0  # progress: units done of `total`
    total: int = 0
    seconds: float = 0.0  # end: the stage's wall time
    note: str = ""  # end: how it ended, e.g. "cache hit"


_listeners: list[Callable[[Event], None]] = []
_lock = threading.Lock()


def emit(event: Event) -> None:
    for fn in tuple(_listeners):
        fn(event)


@contextlib.contextmanager
def listening(fn: Callable[[Event], None]) -> Iterator[None]:
    """Call `fn(event)` for every event while the block runs."""
    with _lock:
        _listeners.append(fn)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(fn)


class Stage:
    """A running stage: report `progress(done, total)`; `note("cache hit")` for its end line."""

    def __init__(self, name: str, detail: str):
        self.name, self.detail, self.end_note = name, detail, ""
        self.t0 = time.perf_counter()

    def progress(self, done: int, total: int) -> None:
        if _listeners:
            emit(Event("progress", self.name, self.detail, done, total))

    def note(self, text: str) -> None:
        self.end_note = text


@contextlib.contextmanager
def stage(name: str, detail: str = "") -> Iterator[Stage]:
    """Announce a stage; its end (with wall time) is announced even when it fails."""
    st = Stage(name, detail)
    if not _listeners:
        yield st
        return
    emit(Event("start", name, detail))
    try:
        yield st
    except BaseException:
        st.end_note = "failed"
        raise
    finally:
        secs = time.perf_counter() - st.t0
        emit(Event("end", name, detail, seconds=secs, note=st.end_note))


__all__ = ["Event", "emit", "listening", "stage", "Stage"]
