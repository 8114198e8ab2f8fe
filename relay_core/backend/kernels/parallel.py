"""Multithreading inside generated kernels through libgomp's `GOMP_parallel`.

`parallel(b, name, shared, nthreads, body)` outlines `body` into an internal function
`void body(i8* data)`; `data` points at a struct holding the `shared` values, which the body
sees as ordinary values. With one thread the body is called directly (no dispatch cost).
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

_counter = itertools.count()

Body = Callable[[ir.IRBuilder, list, ir.Value, ir.Value], None]


def parallel(
    b: ir.IRBuilder, name: str, shared: Sequence[ir.Value], nthreads: ir.Value, body: Body
) -> None:
    """Run `body(builder, shared_values, tid, nt)` on `nthreads` threads (tid, nt are i64)."""
    llmod = b.module
    st = ir.LiteralStructType([v.type for v in shared])
    fn, fb = new_function(llmod, f"{name}.par{next(_counter)}", [I8P], internal=True)
    data = fb.bitcast(fn.args[0], ir.PointerType(st))
    vals = [fb.load(fb.gep(data, [i32(0), i32(k)])) for k in range(len(shared))]
    tid = fb.call(declare(llmod, "omp_get_thread_num", I32, []), [])
    nt = fb.call(declare(llmod, "omp_get_num_threads", I32, []), [])
    body(fb, vals, fb.sext(tid, I64), fb.sext(nt, I64))
    fb.ret_void()

    slot = entry_alloca(b, st)
    for k, v in enumerate(shared):
        b.store(v, b.gep(slot, [i32(0), i32(k)]))
    p = b.bitcast(slot, I8P)
    fnptr_t = ir.PointerType(ir.FunctionType(VOID, [I8P]))
    gomp = declare(llmod, "GOMP_parallel", VOID, [fnptr_t, I8P, I32, I32])
    with b.if_else(b.icmp_signed(">", nthreads, i32(1))) as (many, one):
        with many:
            b.call(gomp, [fn, p, nthreads, i32(0)])
        with one:
            b.call(fn, [p])


MIN_PARALLEL_WORK = 2e5  # ~ the flops of 10 us of vectorised work: several times a dispatch


def clamp_threads(b: ir.IRBuilder, nthreads: ir.Value, work: float, max_useful: int | None = None):
    """The thread count to use: 1 when `work` (flops, or comparable operation counts) is too
    small to pay for a GOMP dispatch (~3 us), otherwise `nthreads` capped at `max_useful` (the
    number of independent work units)."""
    if work < MIN_PARALLEL_WORK or (max_useful is not None and max_useful <= 1):
        return i32(1)
    n = b.select(b.icmp_signed("<", nthreads, i32(1)), i32(1), nthreads)
    if max_useful is not None:
        n = b.select(b.icmp_signed(">", n, i32(max_useful)), i32(max_useful), n)
    return n


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
