"""nn.softmax, nn.log_softmax and nn.hardmax along any axis.

The tensor is viewed as (outer, L, inner) around the axis. inner == 1: each row is reduced with
8-wide vectors (max, then sum of exp(x - max) with the IR exp of llvm_math, then a scale pass).
inner > 1: the L rows of `inner` contiguous values are combined elementwise into max / sum rows,
again 8-wide. float64 / float16 use scalar code (libm exp / log for float64).
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from ..llvm_math import exp_f32, exp_nonpos_f32, log_f32
from .common import (
    Epi,
    KernelInfo,
    WithEnv,
    attr,
    epilogue_block,
    epilogue_row,
    kernel_function,
    shape_of,
)
from .llvm_util import (
    F32,
    F32P,
    I32,
    I64,
    V8F,
    call_intrinsic,
    compute_type,
    const,
    entry_alloca,
    extents,
    for_range,
    free,
    gep,
    i64,
    lanes_below,
    llvm_type,
    load,
    load_as,
    malloc,
    masked_load,
    masked_store,
    new_function,
    product,
    ptr,
    splat,
    store,
    store_from,
    unravel,
    vector_width,
    vload,
    vstore,
)
from .parallel import clamp_threads, clamp_threads_at_run_time, parallel


class _Ops:
    """Loads, stores and math at width 8 (float32 vectors) or 1 (scalars of any float dtype)."""

    def __init__(self, b, dtype: str, width: int):
        self.b, self.dtype, self.w = b, dtype, width
        self.t = V8F if width == 8 else compute_type(dtype)

    def ld(self, p, j):
        return vload(self.b, p, j) if self.w == 8 else load_as(self.b, p, j, self.dtype)

    def st(self, v, p, j):
        if self.w == 8:
            vstore(self.b, v, p, j)
        else:
            store_from(self.b, v, p, j, self.dtype)

    def ldacc(self, p, j):  # accumulator rows are in the compute type
        return vload(self.b, p, j) if self.w == 8 else load(self.b, p, j)

    def stacc(self, v, p, j):
        (vstore if self.w == 8 else store)(self.b, v, p, j)

    def c(self, v):
        return const(self.t, v)

    def max(self, a, x):
        return self.b.select(self.b.fcmp_unordered(">", x, a), x, a)

    def _f32(self) -> bool:
        return (self.t.element if self.w == 8 else self.t) == F32

    def exp(self, x):
        return exp_f32(self.b, x) if self._f32() else call_intrinsic(self.b, "exp", [x])

    def exp_shifted(self, x):  # e^x for x = value - max <= 0
        return exp_nonpos_f32(self.b, x) if self._f32() else call_intrinsic(self.b, "exp", [x])

    def log(self, x):
        return log_f32(self.b, x) if self._f32() else call_intrinsic(self.b, "log", [x])


def _vec_loop(b, n: int, dtype: str, body):
    """body(ops, j) over j in [0, n): 8 at a time for float32, then one at a time."""
    lo = 0
    if dtype == "float32" and n >= 8:
        lo = n // 8 * 8
        with for_range(b, 0, lo, 8, name="v") as j:
            body(_Ops(b, dtype, 8), j)
    if lo < n:
        with for_range(b, lo, n, name="s") as j:
            body(_Ops(b, dtype, 1), j)


def _hreduce(b, ops8, v, kind):
    s = b.extract_element(v, i64(0))
    for k in range(1, v.type.count):
        e = b.extract_element(v, i64(k))
        s = b.fadd(s, e) if kind == "sum" else b.select(b.fcmp_unordered(">", e, s), e, s)
    return s


def emit_softmax_family(kind: str):
    """kind: 'softmax', 'log_softmax' or 'hardmax'."""

    def emit(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
        shape = shape_of(in_types[0])
        dtype = in_types[0].dtype
        nd = len(shape)
        axis = int(attr(attrs, "axis", -1)) % max(nd, 1)
        outer = math.prod(shape[:axis]) if nd else 1
        L = shape[axis] if nd else 1
        inner = math.prod(shape[axis + 1 :]) if nd else 1
        kf = kernel_function(llmod, name, in_types, out_types, epilogue)
        if outer * L * inner:
            nt = clamp_threads(kf.b, kf.nthreads, 20.0 * outer * L * inner, outer)

            def body(b, vals, sh):
                x, y = vals[0], vals[1]
                extras = vals[2:]
                t = compute_type(dtype)
                rows = None
                if inner > 1:
                    rows = b.bitcast(malloc(b, i64(16 * inner)), t.as_pointer())
                u0, u1 = sh.range(b, outer)
                with for_range(b, u0, u1, name="o") as o:
                    xo = gep(b, x, b.mul(o, i64(L * inner)))
                    yo = gep(b, y, b.mul(o, i64(L * inner)))
                    if kind == "hardmax":
                        _hardmax(b, xo, yo, L, inner, dtype)
                    elif inner == 1 and dtype == "float32":
                        _row_f32(b, kind, xo, yo, L)
                    elif inner == 1:
                        _row(b, kind, xo, yo, L, dtype)
                    else:
                        _cols(b, kind, xo, yo, L, inner, dtype, rows)
                    epilogue_block(
                        b, kf.ep, extras, y, b.mul(o, i64(L * inner)), L * inner, shape, dtype
                    )
                sh.end(b)
                if rows is not None:
                    free(b, rows)

            parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)
        kf.b.ret_void()
        return KernelInfo(kf.fn)

    return emit


def _row_f32(b, kind, x, y, L):
    """Softmax / log_softmax of one contiguous float32 row at the target's vector width (16
    lanes with AVX-512): the L % width last values as one masked vector (lanes past the row
    read as -inf, which adds exp(-inf) = 0 to the sum), not one scalar exp each (ViT's rows of
    197: 5 scalar exps, each as dear as a vector one, beside 12 vectors). L: an int, or an i64
    value (a row length known at run time only)."""
    W = vector_width()
    vt = ir.VectorType(F32, W)
    if isinstance(L, int):  # the loops and the tail's mask known at compile time
        end, tail = L // W * W, L % W
        mask, has_tail = lanes_below(W, tail), bool(tail)
    else:
        end = b.mul(b.udiv(L, i64(W)), i64(W))
        rest = b.sub(L, end)
        lanes = ir.Constant(ir.VectorType(I64, W), list(range(W)))
        mask = b.icmp_signed("<", lanes, splat(b, rest, W))
        has_tail = b.icmp_signed(">", rest, i64(0))  # tested at run time

    def each(body):  # body(j, masked) over the row: whole vectors, then the masked rest
        if not isinstance(end, int) or end:
            with for_range(b, 0, end, W, name="v") as j:
                body(j, False)
        if isinstance(has_tail, ir.Value):
            with b.if_then(has_tail):
                body(end, True)
        elif has_tail:
            body(i64(end), True)

    def ld(p, j, masked, fill):
        if not masked:
            return vload(b, p, j, W)
        return masked_load(b, p, j, mask, fill)

    def st(v, p, j, masked):
        if masked:
            masked_store(b, v, p, j, mask)
        else:
            vstore(b, v, p, j)

    acc = entry_alloca(b, vt)
    b.store(const(vt, float("-inf")), acc)

    def pmax(j, masked):
        v, a = ld(x, j, masked, float("-inf")), b.load(acc)
        b.store(b.select(b.fcmp_unordered(">", v, a), v, a), acc)

    each(pmax)
    mx = _hreduce(b, None, b.load(acc), "max")
    mv = splat(b, mx, W)
    b.store(const(vt, 0.0), acc)

    def psum(j, masked):
        e = exp_nonpos_f32(b, b.fsub(ld(x, j, masked, float("-inf")), mv))
        if kind == "softmax":
            st(e, y, j, masked)
        b.store(b.fadd(b.load(acc), e), acc)

    each(psum)
    total = _hreduce(b, None, b.load(acc), "sum")
    if kind == "softmax":
        inv = splat(b, b.fdiv(const(F32, 1.0), total), W)
        each(lambda j, masked: st(b.fmul(ld(y, j, masked, 0.0), inv), y, j, masked))
    else:
        ll = splat(b, log_f32(b, total), W)
        each(lambda j, masked: st(b.fsub(b.fsub(ld(x, j, masked, 0.0), mv), ll), y, j, masked))


def emit_dynamic_softmax_family(kind: str):
    """The run-time-shaped kernel (`OpDef.dynamic_kernel`) of softmax / log_softmax over the
    last axis of a float32 tensor: `void name(x*, y*, extra*..., i64 x_dims..., i64 env...,
    i32 nthreads)`, rows taken by the threads as in the static kernel, the epilogue (a
    consumer fused into the group: HF attention's isnan / where) applied to each row after it.
    A shape-generic build of a transformer (dynamic batch and sequence) had these rows computed
    by tensor expressions: DistilBERT's attention softmax at batch 8 x 128 tokens took 3.4x the
    static kernel's time. Other axes and dtypes raise NotImplementedError (tensor expressions
    serve them)."""

    def emit(llmod, name, in_types, out_types, attrs, const_inputs=(), epilogue=None, n_env=0):
        args = (llmod, name, in_types, out_types, attrs, const_inputs, epilogue, n_env)
        return _emit_dynamic(kind, *args)

    return emit


def _emit_dynamic(
    kind, llmod, name, in_types, out_types, attrs, const_inputs=(), epilogue=None, n_env=0
):
    t = in_types[0]
    shape = tuple(t.shape)
    nd = len(shape)
    axis = int(attr(attrs, "axis", -1)) % max(nd, 1)
    if kind == "hardmax" or t.dtype != "float32" or nd == 0 or axis != nd - 1:
        raise NotImplementedError(f"{kind}: no run-time-shaped kernel for {t}")
    ep = Epi(epilogue)
    extra_t = [ptr(llvm_type(e.dtype)) for e in ep.extra_types]
    args = [F32P, F32P, *extra_t] + [I64] * (nd + n_env) + [I32]
    fn, b = new_function(llmod, name, args)
    x, y = fn.args[:2]
    ne = len(extra_t)
    extras = list(fn.args[2 : 2 + ne])
    dims = extents(shape, fn.args[2 + ne : 2 + ne + nd])
    env = list(fn.args[2 + ne + nd : -1])
    lead, L = dims[:-1], dims[-1]
    outer = product(b, lead)
    nt = clamp_threads_at_run_time(b, fn.args[-1], b.mul(b.mul(outer, L), i64(20)))

    def body(b, vals, sh):
        x, y, outer, L = vals[:4]
        lead = vals[4 : 3 + nd]
        extras = vals[3 + nd : 3 + nd + ne]
        env = vals[3 + nd + ne :]
        u0, u1 = sh.range(b, outer)
        with for_range(b, u0, u1, name="o") as o:
            off = b.mul(o, L)
            xo, yo = gep(b, x, off), gep(b, y, off)
            _row_f32(b, kind, xo, yo, L)
            if ep:
                epilogue_row(b, WithEnv(ep, env), extras, yo, L, unravel(b, o, lead), 0)
        sh.end(b)

    parallel(b, name, [x, y, outer, L, *lead, *extras, *env], nt, body)
    b.ret_void()
    return KernelInfo(fn)


def _row(b, kind, x, y, L, dtype):
    """Softmax / log_softmax of one contiguous row of L values."""
    t = compute_type(dtype)
    vec = dtype == "float32" and L >= 8
    m8 = entry_alloca(b, V8F) if vec else None
    s8 = entry_alloca(b, V8F) if vec else None
    m1 = entry_alloca(b, t)
    s1 = entry_alloca(b, t)
    b.store(const(t, float("-inf")), m1)
    b.store(const(t, 0.0), s1)
    if vec:
        b.store(const(V8F, float("-inf")), m8)
        b.store(const(V8F, 0.0), s8)

    def acc_slot(ops):
        return (m8, s8) if ops.w == 8 else (m1, s1)

    def pmax(ops, j):
        m, _ = acc_slot(ops)
        b.store(ops.max(b.load(m), ops.ld(x, j)), m)

    _vec_loop(b, L, dtype, pmax)
    mx = b.load(m1)
    if vec:
        mv = _hreduce(b, None, b.load(m8), "max")
        mx = b.select(b.fcmp_unordered(">", mv, mx), mv, mx)

    def psum(ops, j):
        _, s = acc_slot(ops)
        mm = splat(b, mx) if ops.w == 8 else mx
        e = ops.exp_shifted(b.fsub(ops.ld(x, j), mm))
        if kind == "softmax":
            ops.st(e, y, j) if dtype == "float32" else None
        b.store(b.fadd(b.load(s), e), s)

    _vec_loop(b, L, dtype, psum)
    total = b.load(s1)
    if vec:
        total = b.fadd(total, _hreduce(b, None, b.load(s8), "sum"))
    if kind == "softmax":
        inv = b.fdiv(const(t, 1.0), total)

        def scale(ops, j):
            iv = splat(b, inv) if ops.w == 8 else inv
            if dtype == "float32":
                ops.st(b.fmul(ops.ld(y, j), iv), y, j)
            else:  # recompute: y may be narrower than the compute type
                mm = mx
                ops.st(b.fmul(ops.exp_shifted(b.fsub(ops.ld(x, j), mm)), iv), y, j)

        _vec_loop(b, L, dtype, scale)
    else:
        lse = _Ops(b, dtype, 1).log(total)

        def sub(ops, j):  # (x - max) - log(sum), as numpy rounds it
            ll = splat(b, lse) if ops.w == 8 else lse
            mm = splat(b, mx) if ops.w == 8 else mx
            ops.st(b.fsub(b.fsub(ops.ld(x, j), mm), ll), y, j)

        _vec_loop(b, L, dtype, sub)


def _cols(b, kind, x, y, L, inner, dtype, rows):
    """Softmax along L for `inner` interleaved columns: rows[0:inner] max, rows[inner:] sum."""
    mrow, srow = rows, gep(b, rows, i64(inner))

    def init(ops, j):
        ops.stacc(ops.c(float("-inf")), mrow, j)
        ops.stacc(ops.c(0.0), srow, j)

    _vec_loop(b, inner, dtype, init)
    with for_range(b, 0, L, name="l") as l_:
        base = b.mul(l_, i64(inner))

        def pmax(ops, j):
            ops.stacc(ops.max(ops.ldacc(mrow, j), ops.ld(x, b.add(base, j))), mrow, j)

        _vec_loop(b, inner, dtype, pmax)
    with for_range(b, 0, L, name="l2") as l_:
        base = b.mul(l_, i64(inner))

        def psum(ops, j):
            e = ops.exp_shifted(b.fsub(ops.ld(x, b.add(base, j)), ops.ldacc(mrow, j)))
            ops.stacc(b.fadd(ops.ldacc(srow, j), e), srow, j)

        _vec_loop(b, inner, dtype, psum)
    if kind == "log_softmax":

        def lse(ops, j):
            ops.stacc(ops.log(ops.ldacc(srow, j)), srow, j)
    else:

        def lse(ops, j):
            ops.stacc(b.fdiv(ops.c(1.0), ops.ldacc(srow, j)), srow, j)

    _vec_loop(b, inner, dtype, lse)
    with for_range(b, 0, L, name="l3") as l_:
        base = b.mul(l_, i64(inner))

        def out(ops, j):
            xv = ops.ld(x, b.add(base, j))
            if kind == "log_softmax":
                v = b.fsub(b.fsub(xv, ops.ldacc(mrow, j)), ops.ldacc(srow, j))
            else:
                v = b.fmul(ops.exp_shifted(b.fsub(xv, ops.ldacc(mrow, j))), ops.ldacc(srow, j))
            ops.st(v, y, b.add(base, j))

        _vec_loop(b, inner, dtype, out)


def _hardmax(b, x, y, L, inner, dtype):
    """One-hot of the first maximum along L, for each of the `inner` columns."""
    t = compute_type(dtype)
    best = entry_alloca(b, t)
    arg = entry_alloca(b, i64(0).type)
    with for_range(b, 0, inner, name="c") as c:
        b.store(const(t, float("-inf")), best)
        b.store(i64(0), arg)
        with for_range(b, 0, L, name="l") as l_:
            v = load_as(b, x, b.add(b.mul(l_, i64(inner)), c), dtype)
            better = b.fcmp_ordered(">", v, b.load(best))
            b.store(b.select(better, v, b.load(best)), best)
            b.store(b.select(better, l_, b.load(arg)), arg)
        with for_range(b, 0, L, name="l2") as l_:
            one = b.select(b.icmp_signed("==", l_, b.load(arg)), const(t, 1.0), const(t, 0.0))
            store_from(b, one, y, b.add(b.mul(l_, i64(inner)), c), dtype)
