"""The service's worker pool: jobs run in processes with a memory limit, a CPU-time limit and
a wall-clock deadline; a worker that dies is replaced and its caller gets an error naming the
stage, while other jobs and the pool go on."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from relay_import.service.errors import ApiError
from relay_import.service.pool import WorkerPool

T = "tests.relay_import.worker_tasks:"


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    p = WorkerPool(
        2, str(tmp_path_factory.mktemp("pool")), memory=1 << 30, cpu=1, timeout=300, max_jobs=8
    )
    p.start()
    yield p
    p.close()


def code_of(pool, stage, task, timeout=None, **kw):
    with pytest.raises(ApiError) as e:
        pool.run(stage, T + task, kw, timeout=timeout)
    return e.value


def test_jobs_run_in_other_processes(pool):
    pids = {pool.run("convert", T + "ping", {})["pid"] for _ in range(4)}
    assert os.getpid() not in pids and pids <= set(pool.pids())


def test_memory_limit_is_a_clean_error_and_the_pool_goes_on(pool):
    e = code_of(pool, "compile", "allocate", nbytes=3 << 30)
    assert (e.code, e.extra["stage"], e.status) == ("memory_limit", "compile", 422)
    assert pool.run("convert", T + "allocate", {"nbytes": 1 << 20}) == {"first": 1}


def test_cpu_limit_kills_the_job(pool):
    e = code_of(pool, "verify", "burn", seconds=30)
    assert (e.code, e.extra["stage"]) == ("cpu_limit", "verify") and e.status >= 500
    assert pool.run("convert", T + "ping", {})["pid"] > 0


def test_wall_clock_deadline_kills_the_worker(pool):
    t0 = time.monotonic()
    e = code_of(pool, "compile", "sleep", timeout=3, seconds=60)
    assert (e.code, e.extra["stage"]) == ("worker_timeout", "compile")
    assert time.monotonic() - t0 < 30
    assert pool.run("convert", T + "ping", {})["pid"] > 0


def test_a_crash_names_the_stage(pool):
    e = code_of(pool, "compile", "crash")
    assert (e.code, e.extra["stage"], e.status) == ("worker_crashed", "compile", 500)
    assert "killed by SIG" in e.message  # SIGABRT (once seen as SIGKILL under heavy load)


def test_a_worker_killed_from_outside_fails_only_its_job(pool):
    results = {}

    def slow():
        try:
            results["slow"] = pool.run("compile", T + "sleep", {"seconds": 5})
        except ApiError as e:
            results["slow"] = e

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(1.0)
    busy = [w.proc.pid for w in list(pool._busy)]
    assert len(busy) == 1
    other = pool.run("convert", T + "ping", {})  # the other worker still answers
    os.kill(busy[0], signal.SIGKILL)
    t.join(30)
    e = results["slow"]
    assert isinstance(e, ApiError) and e.code == "worker_crashed" and "SIGKILL" in e.message
    assert other["pid"] != busy[0]
    assert pool.run("convert", T + "ping", {})["pid"] > 0


def test_dead_workers_leave_no_temp_dirs(pool):
    code_of(pool, "compile", "crash")
    pool.run("convert", T + "ping", {})
    dirs = [d for d in os.listdir(pool.root) if d.startswith("worker-")]
    assert len(dirs) == pool.size, dirs
