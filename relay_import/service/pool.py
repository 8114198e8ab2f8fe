"""Worker processes for untrusted work: conversion, verification and compilation.

Each worker is a long-lived process (forkserver by default, so a replacement starts in
milliseconds) with an address-space limit (RLIMIT_AS), no core files, and a CPU-time limit per
job (RLIMIT_CPU, counting every thread). The parent adds a wall-clock deadline: a job that
overruns it has its worker killed. A worker that dies for any reason is replaced; the job's
caller gets an ApiError naming the stage (`worker_crashed`, `cpu_limit`, `worker_timeout`), and
every other job and the service go on. concurrent.futures' pool is not used because one dead
worker breaks all of its pending futures.

`run` blocks; the service calls it from a thread, `convert-batch` directly.
"""

from __future__ import annotations

import glob
import itertools
import multiprocessing as mp
import os
import queue
import shutil
import signal
import threading
import time
import traceback
import uuid

from .errors import ApiError


def _signame(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


class _Worker:
    def __init__(self, pool: WorkerPool, slot: int):
        self.slot = slot
        self.tmp = os.path.join(pool.root, f"worker-{slot}-{next(pool._serial)}")
        os.makedirs(self.tmp, exist_ok=True)
        parent, child = pool.ctx.Pipe()
        self.conn = parent
        self.proc = pool.ctx.Process(
            target=_worker_main,
            args=(child, pool.memory, self.tmp, pool.env, pool.ctx.get_start_method()),
            name=f"relay-worker-{slot}",
            daemon=True,
        )
        self.proc.start()
        child.close()
        self.jobs = 0

    def stop(self, kill: bool = False) -> None:
        if self.proc.is_alive():
            if kill:
                self.proc.kill()
            else:
                try:
                    self.conn.send(None)
                except OSError:
                    pass
                self.proc.join(2)
                if self.proc.is_alive():
                    self.proc.kill()
        self.proc.join(5)
        self.conn.close()
        _cleanup_after(self.proc.pid, self.tmp)


class WorkerPool:
    """`size` worker processes; `run(stage, task, kwargs)` runs tasks.TASKS[task] in one."""

    def __init__(
        self,
        size: int,
        root: str,
        memory: int = 4 << 30,
        cpu: float = 300.0,
        timeout: float = 600.0,
        max_jobs: int = 32,
        mp_context: str = "forkserver",
        recycle_after: int = 100,
        on_event=None,
    ):
        self.size = max(1, int(size))
        self.root = root
        self.memory, self.cpu, self.timeout = memory, cpu, timeout
        self.max_jobs = max_jobs
        self.recycle_after = recycle_after
        self.on_event = on_event or (lambda kind, **kw: None)
        self.ctx = mp.get_context(mp_context)
        if mp_context == "forkserver":
            self.ctx.set_forkserver_preload(["relay_import.service.tasks"])
        self.env = {k: os.environ[k] for k in ("RELAY_CACHE_DIR",) if k in os.environ}
        self._serial = itertools.count()
        self._idle: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._pending = 0
        self._busy: set[_Worker] = set()
        self._closing = False
        self._started = False

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> WorkerPool:
        with self._lock:
            if not self._started:
                os.makedirs(self.root, exist_ok=True)
                for slot in range(self.size):
                    self._idle.put(self._new_worker(slot))
                self._started = True
        return self

    def _new_worker(self, slot: int) -> _Worker:
        try:
            return _Worker(self, slot)
        except OSError:
            if self.ctx.get_start_method() != "forkserver":
                raise
            # the forkserver's socket lives in the temp dir, and a long TMPDIR makes its path
            # too long for AF_UNIX: spawn fresh interpreters instead (slower to start)
            self.ctx = mp.get_context("spawn")
            return _Worker(self, slot)

    def close(self, timeout: float = 10.0) -> None:
        """Refuse new jobs, let running ones finish up to `timeout`, then stop every worker."""
        self._closing = True
        deadline = time.monotonic() + timeout
        while self._busy and time.monotonic() < deadline:
            time.sleep(0.05)
        for w in list(self._busy):
            w.stop(kill=True)
        while True:
            try:
                w = self._idle.get_nowait()
            except queue.Empty:
                break
            if w is not None:
                w.stop()
        self._idle.put(None)

    def pids(self) -> list[int]:
        ws = list(self._busy) + [w for w in list(self._idle.queue) if w is not None]
        return [w.proc.pid for w in ws if w.proc.pid]

    @property
    def pending(self) -> int:
        return self._pending

    # -- jobs ----------------------------------------------------------------------------------
    def run(self, stage: str, task: str, kwargs: dict, timeout: float | None = None):
        """Run one job; returns the task's result or raises ApiError."""
        if self._closing:
            raise ApiError("shutting_down", "the service is shutting down; retry elsewhere")
        with self._lock:
            if self._pending >= self.max_jobs:
                raise ApiError(
                    "too_many_requests",
                    f"{self._pending} conversion jobs are running or queued; retry later",
                    retry_after=5,
                )
            self._pending += 1
        self.start()
        try:
            w = self._idle.get()
            if w is None:  # closed while we waited
                self._idle.put(None)
                raise ApiError("shutting_down", "the service is shutting down; retry elsewhere")
            self._busy.add(w)
            try:
                w = self._fresh(w)
                try:
                    return self._run_on(w, stage, task, kwargs, timeout or self.timeout)
                except _NotStarted:
                    # it died before taking the job (killed while idle: its exit status can
                    # arrive after the job was sent): the job runs once more, on a new worker
                    self._busy.discard(w)
                    w = self._replace(w, "died")
                    self._busy.add(w)
                    return self._run_on(w, stage, task, kwargs, timeout or self.timeout)
            finally:
                self._busy.discard(w)
                self._idle.put(self._after(w))
        finally:
            with self._lock:
                self._pending -= 1

    def _fresh(self, w: _Worker) -> _Worker:
        """A live worker in `w`'s slot (one that died while idle is replaced)."""
        if w.proc.is_alive():
            return w
        self._busy.discard(w)
        nw = self._replace(w, "died")
        self._busy.add(nw)
        return nw

    def _after(self, w: _Worker) -> _Worker | None:
        if self._closing:
            w.stop(kill=not w.proc.is_alive())
            return None
        if not w.proc.is_alive():
            return self._replace(w, "died")
        if w.jobs >= self.recycle_after:
            return self._replace(w, "recycled")
        return w

    def _replace(self, w: _Worker, reason: str) -> _Worker:
        self.on_event("restart", reason=reason)
        w.stop()
        return self._new_worker(w.slot)

    def _run_on(self, w: _Worker, stage: str, task: str, kwargs: dict, timeout: float):
        w.jobs += 1
        t0 = time.perf_counter()
        job_id = uuid.uuid4().hex[:12]
        try:
            deadline = time.monotonic() + timeout
            try:  # the worker acknowledges the job before it runs it
                w.conn.send((job_id, task, kwargs, self.cpu))
                ack = w.conn.recv() if w.conn.poll(timeout) else None
            except (EOFError, OSError):
                w.proc.join(5)
                raise _NotStarted from None
            if ack is None or not w.conn.poll(max(0.0, deadline - time.monotonic())):
                w.proc.kill()
                raise ApiError(
                    "worker_timeout",
                    f"the {stage} stage took longer than {timeout:g} s; its worker was stopped",
                    stage=stage,
                )
            status, payload = w.conn.recv()
        except ApiError as e:
            self.on_event("job", stage=stage, outcome=e.code, seconds=time.perf_counter() - t0)
            raise
        except (EOFError, OSError, BrokenPipeError):
            w.proc.join(5)
            err = _death(stage, w.proc.exitcode)
            self.on_event("job", stage=stage, outcome=err.code, seconds=time.perf_counter() - t0)
            raise err from None
        self.on_event(
            "job",
            stage=stage,
            outcome=status if status == "ok" else payload["code"],
            seconds=time.perf_counter() - t0,
        )
        if status == "ok":
            return payload
        if payload.get("code") == "memory_limit":
            w.jobs = self.recycle_after  # a heap that hit its limit is not reused
        raise ApiError(stage=stage, **payload)


class _NotStarted(Exception):
    """The worker died before it acknowledged the job."""


def _death(stage: str, exitcode: int | None) -> ApiError:
    if exitcode is not None and exitcode < 0:
        sig = -exitcode
        if sig == signal.SIGXCPU:
            return ApiError(
                "cpu_limit",
                f"the {stage} stage used more CPU time than a job may; its worker was stopped",
                stage=stage,
            )
        how = f"was killed by {_signame(sig)}"
    else:
        how = f"exited with status {exitcode}"
    return ApiError(
        "worker_crashed",
        f"the worker running the {stage} stage {how}; the service is still up",
        stage=stage,
    )


def _cleanup_after(pid: int | None, tmp: str) -> None:
    """Remove a dead worker's temp dir and the compile-cache build dirs it left half-written."""
    shutil.rmtree(tmp, ignore_errors=True)
    cache = os.environ.get("RELAY_CACHE_DIR")
    if pid and cache:
        for d in glob.glob(os.path.join(glob.escape(cache), f"relay-build-{pid}-*")):
            shutil.rmtree(d, ignore_errors=True)


# -- inside the worker ---------------------------------------------------------------------------


def _worker_main(conn, memory: int, tmp: str, env: dict, method: str = "forkserver") -> None:
    import resource
    import sys
    import tempfile

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if method == "forkserver":
        # die with the forkserver (which dies with the service). Not for spawned workers:
        # their parent is the service thread that started them, and threads come and go.
        _die_with_parent()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    os.environ.update(env)
    os.environ["TMPDIR"] = tmp
    tempfile.tempdir = tmp
    from . import tasks

    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if msg is None:
            return
        job_id, task, kwargs, cpu = msg
        try:
            conn.send(("started", job_id))
        except OSError:
            return
        if cpu:
            used = resource.getrusage(resource.RUSAGE_SELF)
            soft = int(used.ru_utime + used.ru_stime + cpu) + 1
            _, hard = resource.getrlimit(resource.RLIMIT_CPU)
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        try:
            result = ("ok", tasks.lookup(task)(**kwargs))
        except ApiError as e:
            result = ("error", {"code": e.code, "message": e.message, **e.extra})
        except BaseException as e:  # noqa: BLE001 - a worker answers every job
            from relay_core.errors import RelayError

            if isinstance(e, (RelayError, MemoryError)):
                err = _from_relay(e, tmp, kwargs)
                result = ("error", {"code": err.code, "message": err.message, **err.extra})
            elif type(e).__module__.split(".")[0] in _SOURCE_RUNTIMES:
                from .errors import scrub

                runtime = type(e).__module__.split(".")[0]
                first = scrub(str(e), tmp).strip().splitlines()[:1]
                result = (
                    "error",
                    {
                        "code": "source_runtime_failed",
                        "message": f"{runtime} could not run the model: "
                        + (first[0][:500] if first else type(e).__name__),
                    },
                )
            else:
                print(f"relay serve: job {job_id} ({task}) failed:", file=sys.stderr)
                traceback.print_exc()
                result = (
                    "error",
                    {
                        "code": "internal_error",
                        "message": f"an unexpected error (id {job_id}); the server log has it",
                        "status": 500,
                    },
                )
        try:
            conn.send(result)
        except (OSError, ValueError):
            return


# a source framework's own error while verifying is about the model, not the service
_SOURCE_RUNTIMES = ("onnxruntime", "onnx", "tensorflow", "keras", "torch")


def _from_relay(e, tmp: str, kwargs: dict) -> ApiError:
    from .errors import from_relay_error

    prefixes = [tmp, os.environ.get("RELAY_CACHE_DIR", ""), os.path.expanduser("~")]
    prefixes += [os.path.dirname(v) for v in kwargs.values() if isinstance(v, str) and "/" in v]
    return from_relay_error(e, *prefixes)


def _die_with_parent() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
