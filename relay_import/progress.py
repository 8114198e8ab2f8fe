"""One line per stage on stderr: `converting model.onnx… 0.4 s`, `compiling 61 kernels… 3.1 s`.

Stages come from relay_core.events (the compiler announces optimising / code generation /
compiling / cache hits) and from relay_import itself (converting, running the source runtime,
comparing layers). On a terminal a rich spinner shows the running stage and each finished stage
stays as a line; elsewhere (a pipe, a CI log) plain lines are written: the label when the stage
starts, so that a long compile shows what it is doing, and the time when it ends.

    >>> with relay_import.progress.reporting():
    ...     lib = relay_import.compile(relay_import.load("model.onnx"))
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TextIO

from relay_core.events import Event, listening

ELLIPSIS = "…"


def _label(ev: Event) -> str:
    return f"{ev.stage} {ev.detail}".strip()


def _end_text(ev: Event) -> str:
    t = f"{ev.seconds:.2f} s" if ev.seconds < 10 else f"{ev.seconds:.1f} s"
    return f"{ev.note} {t}" if ev.note else t


class PlainLines:
    """Plain text for logs: `label… ` at the start, the time and a newline at the end."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.open: list[str] = []  # stages started; the last one's line may be unfinished
        self.line_open = False

    def __call__(self, ev: Event) -> None:
        w = self.stream.write
        if ev.kind == "start":
            if self.line_open:  # a stage inside a stage: finish the outer's line first
                w("\n")
            w(f"{_label(ev)}{ELLIPSIS} ")
            self.line_open = True
            self.open.append(ev.stage)
        elif ev.kind == "progress":
            if self.line_open and ev.total:
                w(f"{ev.done}/{ev.total} ")
        elif ev.kind == "end":
            if self.open and self.open[-1] == ev.stage:
                self.open.pop()
            if not self.line_open:  # inner stages printed lines since: name this one again
                w(f"{_label(ev)}: ")
            w(_end_text(ev) + "\n")
            self.line_open = False
        self.stream.flush()


class RichLines:
    """On a terminal: a spinner for the running stage, a check-marked line for each finished."""

    def __init__(self, console):
        self.console = console
        self.status = None
        self.stack: list[Event] = []

    def _show(self) -> None:
        if not self.stack:
            if self.status is not None:
                self.status.stop()
                self.status = None
            return
        text = f"{_label(self.stack[-1])}{ELLIPSIS}"
        if self.status is None:
            self.status = self.console.status(text)
            self.status.start()
        else:
            self.status.update(text)

    def __call__(self, ev: Event) -> None:
        if ev.kind == "start":
            self.stack.append(ev)
        elif ev.kind == "progress":
            if self.status is not None and ev.total:
                self.status.update(f"{_label(ev)}{ELLIPSIS} {ev.done}/{ev.total}")
            return
        elif ev.kind == "end":
            if self.stack and self.stack[-1].stage == ev.stage:
                self.stack.pop()
            mark = "[red]✗[/red]" if ev.note == "failed" else "[green]✓[/green]"
            self.console.print(f"{mark} {_label(ev)} [dim]{_end_text(ev)}[/dim]", highlight=False)
        self._show()

    def close(self) -> None:
        self.stack.clear()
        self._show()


@contextlib.contextmanager
def reporting(quiet: bool = False, stream: TextIO | None = None) -> Iterator[None]:
    """Print every stage that runs inside the block (nothing when `quiet`)."""
    if quiet:
        yield
        return
    stream = stream or sys.stderr
    printer = None
    if stream.isatty():
        try:
            from rich.console import Console

            printer = RichLines(Console(file=stream))
        except ImportError:  # rich is a dependency, but plain lines need nothing
            printer = None
    if printer is None:
        printer = PlainLines(stream)
    try:
        with listening(printer):
            yield
    finally:
        if isinstance(printer, RichLines):
            printer.close()
        elif printer.line_open:
            stream.write("\n")
            stream.flush()


__all__ = ["reporting", "PlainLines", "RichLines"]
