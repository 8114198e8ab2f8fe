"""The runtime's thread pool (relay_core/backend/c/relay_pool.c): every shard runs exactly once,
whatever the thread count, with regions inside regions, and with several callers at once; and
compiled models give the interpreter's results with any thread count and from several Python
threads calling one module."""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np
import pytest

import relay_core
from tests.backend.support import run_in_threads

TASK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)

SRC = """#[version = "0.0.5"]
def @main(%x: Tensor[(64, 256), float32], %w: Tensor[(256, 256), float32],
          %e: Tensor[(512, 1024), float32], %img: Tensor[(1, 8, 32, 32), float32],
          %k: Tensor[(16, 8, 3, 3), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.softmax(%0);
  %2 = tanh(multiply(%e, 0.5f));
  %3 = nn.conv2d(%img, %k, padding=[1, 1, 1, 1]);
  (%1, add(%2, 1f), nn.relu(%3))
}
"""


@pytest.fixture(scope="module")
def model():
    mod = relay_core.parse(SRC)
    lib = relay_core.build(mod)
    return mod, lib


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    shapes = [(64, 256), (256, 256), (512, 1024), (1, 8, 32, 32), (16, 8, 3, 3)]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _check(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)


def _want(mod, args):
    out = relay_core.evaluate(mod, *args)
    return [np.asarray(o) for o in out]


@pytest.fixture(scope="module")
def pool(model):
    """relay_parallel / relay_task_next of the model's own lib.so."""
    _, lib = model
    so = ctypes.CDLL(os.path.join(lib.path, "lib.so"))
    so.relay_parallel.argtypes = [TASK, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64]
    so.relay_parallel.restype = None
    so.relay_task_next.argtypes = [ctypes.c_void_p]
    so.relay_task_next.restype = ctypes.c_int64
    so.relay_pool_workers.restype = ctypes.c_int32
    return so


def _region(so, nthreads, nshards, inner=None):
    """Runs one region; returns {shard: count}, the worker ids seen, the shard count given."""
    seen: dict[int, int] = {}
    workers = set()
    given = []
    lock = threading.Lock()

    def body(ctx, task, n, worker):
        given.append(n)
        while True:
            s = so.relay_task_next(task)
            if s < 0:
                break
            with lock:
                seen[s] = seen.get(s, 0) + 1
                workers.add(worker)
            if inner is not None:
                inner()

    cb = TASK(body)
    so.relay_parallel(cb, None, nthreads, nshards)
    return seen, workers, given


@pytest.mark.parametrize("nthreads", [1, 2, 3, 4, 8])
def test_every_shard_runs_once(pool, nthreads):
    for nshards in (1, 2, 7, 64):
        for _ in range(20):
            seen, workers, given = _region(pool, nthreads, nshards)
            n = given[0]
            assert all(g == n for g in given)
            assert seen == {s: 1 for s in range(n)}
            assert workers <= set(range(nthreads))
            if nthreads == 1:
                assert n == 1  # one thread: the loop is one shard, run inline


def test_spin_setting_at_run_time(pool):
    """relay_pool_set_spin_us returns the previous setting (the default, or RELAY_SPIN_US /
    RELAY_WAIT_POLICY when set), and regions run whatever it is (0: workers sleep at once)."""
    import os

    pool.relay_pool_set_spin_us.argtypes = [ctypes.c_int64]
    pool.relay_pool_set_spin_us.restype = ctypes.c_int64
    first = pool.relay_pool_set_spin_us(0)
    try:
        if not (os.environ.get("RELAY_SPIN_US") or os.environ.get("RELAY_WAIT_POLICY")):
            assert first == 100
        for _ in range(20):
            seen, _, given = _region(pool, 2, 16)
            assert seen == {s: 1 for s in range(given[0])}
        assert pool.relay_pool_set_spin_us(-5) == 0  # negative: no spinning
        assert pool.relay_pool_set_spin_us(250) == 0
        assert pool.relay_pool_set_spin_us(first) == 250
    finally:
        pool.relay_pool_set_spin_us(first)


def _first_shards(so, nthreads: int, nshards: int) -> dict[int, int]:
    """{worker: its first shard} of one region in which no thread asks for a second shard before
    every thread has taken its first (each waits, at most 10 s)."""
    import time

    first: dict[int, int] = {}
    lock = threading.Lock()
    t_end = time.monotonic() + 10.0

    def body(ctx, task, n, worker):
        while True:
            s = so.relay_task_next(task)
            if s < 0:
                break
            with lock:
                first.setdefault(worker, s)
            while len(first) < nthreads and time.monotonic() < t_end:
                time.sleep(0.0005)

    so.relay_parallel(TASK(body), None, nthreads, nshards)
    return first


@pytest.mark.parametrize("nthreads", [2, 3])
def test_each_thread_takes_its_own_block_first(pool, nthreads):
    """Shards are dealt in contiguous blocks, one per thread, and each thread starts with its own
    (with one shared counter, worker 1 would take shard 1)."""
    nshards = 4 * nthreads
    for _ in range(5):
        first = _first_shards(pool, nthreads, nshards)
        assert first == {w: w * nshards // nthreads for w in range(nthreads)}


def test_region_inside_a_region_runs_inline(pool):
    inner_counts = []

    def inner():
        seen, workers, given = _region(pool, 4, 16)
        inner_counts.append((seen, given[0]))

    seen, _, given = _region(pool, 2, 8, inner)
    assert seen == {s: 1 for s in range(given[0])}
    assert len(inner_counts) == given[0]
    for s, n in inner_counts:
        assert n == 1 and s == {0: 1}  # inline: one shard on the calling thread


def test_concurrent_regions_from_several_threads(pool):
    def caller(k):
        for _ in range(30):
            seen, _, given = _region(pool, 2 + k % 3, 5 + k)
            assert seen == {s: 1 for s in range(given[0])}

    run_in_threads(caller, 4)


@pytest.mark.parametrize("nthreads", [1, 2, 3, 4])
def test_model_matches_interpreter_with_any_thread_count(model, nthreads):
    mod, lib = model
    args = _inputs(nthreads)
    want = _want(mod, args)
    old, lib.num_threads = lib.num_threads, nthreads
    try:
        for _ in range(3):
            _check(lib(*args), want)
    finally:
        lib.num_threads = old


def test_many_calls_and_several_python_threads(model):
    mod, lib = model
    feeds = [_inputs(10 + k) for k in range(4)]
    wants = [_want(mod, f) for f in feeds]
    old, lib.num_threads = lib.num_threads, 2

    def caller(k):
        for _ in range(25):
            _check(lib(*feeds[k]), wants[k])

    try:
        run_in_threads(caller, 4)
    finally:
        lib.num_threads = old


def test_fork_child_gets_a_fresh_pool(model, pool):
    """After fork() the child has no workers: its first region starts new ones (no waiting on
    the parent's threads, which do not exist in the child)."""
    import warnings

    mod, lib = model
    args = _inputs(3)
    want = _want(mod, args)
    lib.num_threads = 2
    lib(*args)  # the parent's workers are running
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() of a threaded process
        pid = os.fork()
    if pid == 0:  # the child: report through the exit status only
        code = 1
        try:
            for _ in range(5):
                _check(lib(*args), want)
            seen, _, given = _region(pool, 2, 8)
            code = 0 if seen == {s: 1 for s in range(given[0])} else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
