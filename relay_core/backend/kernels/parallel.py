"""Multithreading inside generated kernels through the runtime's thread pool
(relay_core/backend/c/relay_pool.c).

`parallel(b, name, shared, nthreads, body)` outlines `body` into an internal function
`void body(i8* data, i8* task, i64 nshards, i64 worker)`; `data` points at a struct holding the
`shared` values, which the body sees as ordinary values. `relay_parallel` runs it on the calling
thread and up to nthreads - 1 pool workers. The work is cut into `nshards` shards (several per
thread) that the threads take one at a time, so a descheduled thread delays one shard, not the
region:

    def body(b, vals, sh):
        scratch = malloc(...)              # once per participating thread
        u0, u1 = sh.range(b, units)        # opens the loop over the shards this thread takes
        ...                                # work on units [u0, u1)
        sh.end(b)                          # closes it (implicit when nothing follows)
        free(b, scratch)

`sh.n` is the shard count (an i64 value: divide work into `sh.n` parts, not into threads);
`sh.worker` identifies the thread among those running the region (0 .. nthreads-1), for
per-thread scratch indexed by thread. With one thread the region is one shard run inline.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import llvmlite.ir as ir

from .llvm_util import (
    I8P,
    I32,
    I64,
    VOID,
    as_i64,
    declare,
    entry_alloca,
    i32,
    i64,
    imin,
    new_function,
)

# Shards per thread: enough that a thread that falls behind (descheduled by another process)
# leaves most of the work to the others; few enough that each shard is long against a claim
# (one compare-and-swap) and keeps its cache blocking.
SHARDS_PER_THREAD = 4

TASK_FN = ir.FunctionType(VOID, [I8P, I8P, I64, I64])


def task_next(llmod: ir.Module) -> ir.Function:
    return declare(llmod, "relay_task_next", I64, [I8P])


def pool_call(b: ir.IRBuilder, fn: ir.Function, data: ir.Value, nthreads: ir.Value) -> None:
    """`relay_parallel(fn, data, nthreads, nshards)` with SHARDS_PER_THREAD shards per thread
    (one shard when nthreads <= 1)."""
    llmod = b.module
    rp = declare(llmod, "relay_parallel", VOID, [ir.PointerType(TASK_FN), I8P, I32, I64])
    nt64 = b.sext(nthreads, I64)
    many = b.icmp_signed(">", nt64, i64(1))
    nshards = b.select(many, b.mul(nt64, i64(SHARDS_PER_THREAD)), i64(1))
    b.call(rp, [fn, data, nthreads, nshards])


class Shards:
    """The shard loop of one participating thread (see the module docstring)."""

    def __init__(self, fn: ir.Function):
        self.task, self.n, self.worker = fn.args[1], fn.args[2], fn.args[3]
        self._exit = None
        self._head = None

    def range(self, b: ir.IRBuilder, total, unit: int = 1) -> tuple[ir.Value, ir.Value]:
        """Opens the loop over the shards this thread takes; returns the current shard's share
        [begin, end) of range(total), in whole `unit`s."""
        if self._head is not None:
            raise ValueError("one shard loop per parallel body")
        self._head = b.append_basic_block("shard.head")
        body = b.append_basic_block("shard.body")
        self._exit = b.append_basic_block("shard.end")
        b.branch(self._head)
        b.position_at_end(self._head)
        s = b.call(task_next(b.module), [self.task])
        b.cbranch(b.icmp_signed("<", s, i64(0)), self._exit, body)
        b.position_at_end(body)
        return split_range(b, total, s, self.n, unit)

    def parts(self, b: ir.IRBuilder, units: int) -> ir.Value:
        """How many parts to cut each of `units` work units into (e.g. ranges of output
        channels) so that every thread gets work: the thread count when there are few units
        and they do not divide evenly among the threads, else 1. Counted in threads, not
        shards: every part repeats its unit's shared set-up (an im2col chunk, a Winograd input
        transform), so cutting by shards (4 per thread) repeated it up to 8 times with 2
        threads and made ResNet-18 no faster on 2 threads than on 1."""
        many = b.icmp_unsigned(">=", self.n, i64(SHARDS_PER_THREAD))
        threads = b.select(many, b.udiv(self.n, i64(SHARDS_PER_THREAD)), i64(1))
        bu = i64(units)
        few = b.and_(
            b.icmp_unsigned("!=", b.urem(bu, threads), i64(0)),
            b.icmp_unsigned("<", bu, b.mul(threads, i64(4))),
        )
        return b.select(few, threads, i64(1))

    def end(self, b: ir.IRBuilder) -> None:
        """Closes the shard loop (code after it runs once per participating thread)."""
        if self._head is None or self._exit is None:
            return
        b.branch(self._head)
        b.position_at_end(self._exit)
        self._exit = None


Body = Callable[[ir.IRBuilder, list, Shards], None]


def parallel(
    b: ir.IRBuilder, name: str, shared: Sequence[ir.Value], nthreads: ir.Value, body: Body
) -> None:
    """Run `body(builder, shared_values, shards)` on up to `nthreads` threads of the pool."""
    llmod = b.module
    st = ir.LiteralStructType([v.type for v in shared])
    # numbered within the module (not per process): the same kernels give the same IR text
    num = next(i for i in itertools.count() if f"{name}.par{i}" not in llmod.globals)
    fn, fb = new_function(llmod, f"{name}.par{num}", list(TASK_FN.args), internal=True)
    data = fb.bitcast(fn.args[0], ir.PointerType(st))
    vals = [fb.load(fb.gep(data, [i32(0), i32(k)])) for k in range(len(shared))]
    sh = Shards(fn)
    body(fb, vals, sh)
    if sh._head is None:  # noqa: SLF001 - a body without a shard loop: run it by the first taker
        raise ValueError(f"{name}: a parallel body must take its work with shards.range")
    sh.end(fb)
    fb.ret_void()

    slot = entry_alloca(b, st)
    for k, v in enumerate(shared):
        b.store(v, b.gep(slot, [i32(0), i32(k)]))
    pool_call(b, fn, b.bitcast(slot, I8P), nthreads)


MIN_PARALLEL_WORK = 2e5  # ~ the flops of 10 us of vectorised work: several times a dispatch


def clamp_threads(b: ir.IRBuilder, nthreads: ir.Value, work: float, max_useful: int | None = None):
    """The thread count to use: 1 when `work` (flops, or comparable operation counts) is too
    small to pay for a pool dispatch (~1-3 us), otherwise `nthreads` capped at `max_useful` (the
    number of independent work units)."""
    if work < MIN_PARALLEL_WORK or (max_useful is not None and max_useful <= 1):
        return i32(1)
    n = b.select(b.icmp_signed("<", nthreads, i32(1)), i32(1), nthreads)
    if max_useful is not None:
        n = b.select(b.icmp_signed(">", n, i32(max_useful)), i32(max_useful), n)
    return n


def clamp_threads_at_run_time(b: ir.IRBuilder, nthreads: ir.Value, work: ir.Value) -> ir.Value:
    """clamp_threads for `work` (an i64 value) known at run time only: 1 below
    MIN_PARALLEL_WORK, else `nthreads`."""
    small = b.icmp_unsigned("<", work, i64(int(MIN_PARALLEL_WORK)))
    return b.select(small, i32(1), nthreads)


def split_range(b: ir.IRBuilder, total, tid, nt, unit: int = 1) -> tuple[ir.Value, ir.Value]:
    """This thread's share [begin, end) of range(total), in whole `unit`s, balanced."""
    total = as_i64(b, total)
    units = b.udiv(b.add(total, i64(unit - 1)), i64(unit))
    per = b.udiv(units, nt)
    rem = b.urem(units, nt)
    begin = b.add(b.mul(tid, per), imin(b, tid, rem))
    extra = b.zext(b.icmp_signed("<", tid, rem), I64)
    end = b.add(begin, b.add(per, extra))
    begin = imin(b, b.mul(begin, i64(unit)), total)
    end = imin(b, b.mul(end, i64(unit)), total)
    return begin, end
