"""Progress display for long steps (conversion, compilation, verification) on a terminal."""

from __future__ import annotations

import contextlib
import sys
import time


@contextlib.contextmanager
def progress(what: str, quiet: bool = False):
    """A spinner with elapsed time while the block runs (stderr, only on a terminal)."""
    if quiet or not sys.stderr.isatty():
        yield
        return
    try:
        from rich.console import Console
    except ImportError:
        t0 = time.perf_counter()
        yield
        print(f"{what}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        return
    console = Console(stderr=True)
    t0 = time.perf_counter()
    with console.status(f"{what}..."):
        yield
    console.print(f"[green]✓[/green] {what} ({time.perf_counter() - t0:.1f} s)")
