"""Compile units (split.py) to object code in parallel, through the per-kernel cache.

llvmlite runs every call into LLVM under one process-wide lock, so two threads of one process
never optimise at once. The units are therefore shared between this process (one thread) and
`jobs - 1` worker processes (llvm_worker.py, started once per process and reused by later
builds; they start while the model is being lowered). Largest units go first, each executor
taking the next when done. `RELAY_COMPILE_JOBS` sets the number of executors (default: the
cores this process may use, at most 8); 1 compiles everything here.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from . import llvm_worker
from .llvm_target import BuildError

_WORKER = os.path.abspath(llvm_worker.__file__)
# run by path without putting this directory first on sys.path (its modules would shadow others)
_BOOT = "import runpy, sys; sys.path[:1] = []; runpy.run_path(sys.argv[1], run_name='__main__')"


def jobs() -> int:
    raw = os.environ.get("RELAY_COMPILE_JOBS", "").strip()
    if raw:
        try:
            n = int(raw)
        except ValueError:
            n = 0
        if n < 1:
            from ..errors import RelayError

            raise RelayError(f"RELAY_COMPILE_JOBS={raw!r}: expected a positive integer")
        return n
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


class _Worker:
    def __init__(self):
        import llvmlite

        env = dict(os.environ)
        site = os.path.dirname(os.path.dirname(os.path.abspath(llvmlite.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, _WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

    def compile(self, req):
        llvm_worker.send(self.proc.stdin, req)
        return llvm_worker.recv(self.proc.stdout)

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass


_lock = threading.Lock()
_idle: list[_Worker] = []
_count = 0
_broken = False  # a worker failed to start or died: compile here from then on


def _take(limit: int) -> _Worker | None:
    global _count
    with _lock:
        if _idle:
            return _idle.pop()
        if _broken or _count >= limit:
            return None
        _count += 1
    try:
        return _Worker()
    except OSError:
        _drop(None)
        return None


def _give(w: _Worker) -> None:
    with _lock:
        _idle.append(w)


def _drop(w: _Worker | None) -> None:
    global _count, _broken
    with _lock:
        _count -= 1
        _broken = True
    if w is not None:
        w.close()


def warm(n: int | None = None) -> None:
    """Start the worker processes now (they import llvmlite while the caller lowers)."""
    n = jobs() if n is None else n
    started = [w for w in (_take(n - 1) for _ in range(n - 1)) if w is not None]
    for w in started:
        _give(w)


@atexit.register
def _shutdown() -> None:
    with _lock:
        ws = list(_idle)
        _idle.clear()
    for w in ws:
        w.close()


@dataclass
class Compiled:
    obj: bytes
    opt_s: float = 0.0
    emit_s: float = 0.0
    where: str = "here"  # "here", "worker" or "cache"


def compile_all(texts: list[tuple[str, int]], target: tuple, n_jobs: int | None = None):
    """[(IR text, opt level)] -> [Compiled], in order. `target` is (triple, cpu, features)."""
    n_jobs = jobs() if n_jobs is None else n_jobs
    results: list = [None] * len(texts)
    order = iter(sorted(range(len(texts)), key=lambda i: -len(texts[i][0])))
    take = threading.Lock()
    errors: list = []

    def nxt():
        with take:
            return None if errors else next(order, None)

    def here(i):
        text, level = texts[i]
        try:
            obj, a, b = llvm_worker.compile_text(text, *target, level)
        except llvm_worker.IRError as e:
            raise _InvalidIR(i, str(e)) from None
        results[i] = Compiled(obj, a, b, "here")

    def run_here():
        try:
            while (i := nxt()) is not None:
                here(i)
        except BaseException as e:
            errors.append(e)

    def run_worker(w: _Worker):
        try:
            while (i := nxt()) is not None:
                text, level = texts[i]
                try:
                    r = w.compile((text, *target, level))
                except (EOFError, OSError):  # the worker died: this unit and the rest here
                    _drop(w)
                    w = None
                    here(i)
                    run_here()
                    return
                if r[0] != "ok":
                    raise _InvalidIR(i, str(r[1]))
                results[i] = Compiled(r[1], r[2], r[3], "worker")
        except BaseException as e:
            errors.append(e)
        finally:
            if w is not None:
                _give(w)

    threads = []
    if len(texts) > 1:
        for _ in range(min(n_jobs - 1, len(texts) - 1)):
            w = _take(n_jobs - 1)
            if w is None:
                break
            t = threading.Thread(target=run_worker, args=(w,), daemon=True)
            t.start()
            threads.append(t)
    run_here()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


class _InvalidIR(BuildError):
    """A unit's text did not parse or verify (index into compile_all's texts); build_objects
    names its kernels (InvalidKernelIR)."""

    def __init__(self, index: int, detail: str):
        super().__init__(f"generated LLVM IR is invalid: {detail}")
        self.index, self.detail = index, detail


class InvalidKernelIR(BuildError):
    """The code generated for some kernels is not valid LLVM IR: a compiler bug. `kernels`
    names them; the compiler adds their ops to the message."""

    def __init__(self, kernels, detail: str, ops: str = ""):
        self.kernels, self.detail, self.ops = list(kernels), detail, ops
        what = ", ".join(self.kernels) or "the entry function"
        lines = [ln.strip() for ln in detail.splitlines()]
        first = next((ln for ln in lines if "error:" in ln), lines[0] if lines else "")
        super().__init__(
            f"internal error: the code generated for {what}"
            + (f" ({ops})" if ops else "")
            + f" is not valid LLVM IR ({first}). This is a bug in relay_core's code generation;"
            " please report it with the model. Meanwhile the model may build with opt_level=0"
            " or run with the interpreter (relay_core.evaluate)."
        )


def build_objects(main, units, level_of, target, cache, n_jobs=None):
    """Objects for the main unit and the kernel units, through `cache` (a KernelCache or None).
    `level_of(unit)` picks the optimisation level. Returns (objects, per-unit records, stats)."""
    t0 = time.perf_counter()
    todo, records = [], []
    objs: list = [None] * (len(units) + 1)
    for k, u in enumerate([main, *units]):
        level = level_of(u)
        key = cache.key(u.text, level) if cache is not None and u.name else None
        rec = {"name": u.name or "(entry)", "kernels": u.kernels, "bytes": len(u.text)}
        rec.update(level=level, key=key, where="cache", opt_s=0.0, emit_s=0.0)
        records.append(rec)
        obj = cache.get(key) if key else None
        if obj is not None:
            objs[k] = obj
        else:
            todo.append(k)
    t1 = time.perf_counter()
    texts = [([main, *units][k].text, records[k]["level"]) for k in todo]
    try:
        done = compile_all(texts, target, n_jobs)
    except _InvalidIR as e:
        raise InvalidKernelIR(records[todo[e.index]]["kernels"], e.detail) from None
    t2 = time.perf_counter()
    for k, c in zip(todo, done):
        objs[k] = c.obj
        records[k].update(where=c.where, opt_s=c.opt_s, emit_s=c.emit_s)
        if records[k]["key"]:
            cache.put(records[k]["key"], c.obj)
    evicted = cache.evict() if cache is not None and cache.written else 0
    t3 = time.perf_counter()
    stats = {
        "cache lookup": t1 - t0,
        "llvm wall": t2 - t1,
        "cache store": t3 - t2,
        "evicted_bytes": evicted,
        "jobs": jobs() if n_jobs is None else n_jobs,
    }
    return objs, records, stats
