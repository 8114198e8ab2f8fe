"""float32 nn.dense, nn.matmul and nn.batch_matmul with run-time extents.

A shape-generic build of a transformer sees dense layers on (batch, sequence, features) and
attention products on (batch, heads, sequence, sequence): more than the batch axis is dynamic,
so the per-batch-element kernels (lower.block_images) cannot serve them and the products fell
to tensor expressions (DistilBERT at batch 1 x 64 tokens: 446 ms against 42 for the static
build). These kernels take every extent of both operands at run time
(`void name(A*, B*, C*, i64 a_dims..., i64 b_dims..., i32 nthreads)`; an extent known at
compile time is used as the constant and its argument ignored) and drive the shared GEMM engine
(gemm_core) over run-time ranges: the product is cut into units of one batch matrix x one block
of MC rows x one run of column panels, as many as the shards need, taken dynamically.

Operands follow numpy's matmul with optional transposes; both have at least two dims. A
constant B without batch dims (dense weights) is packed into panels at compile time; batch dims
broadcast at run time (an extent of 1 reads the same matrix). An elementwise consumer (bias,
GELU, a residual add, attention's scale and mask) is applied to each tile as it is stored, as
in the static kernels: its indices come from the run-time extents, which the group passes after
the operands' (`n_env` of them: the epilogue's index expressions may use them).
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from .common import Epi, KernelInfo, WithEnv, attr, epilogue_row
from .gemm_core import (
    PackedA,
    PackedB,
    RawA,
    RawB,
    free_buffers,
    gemm_call,
    gemm_tile,
    k_block,
    plain_store_fn,
    store_function,
    thread_buffers,
)
from .gemm_ops import pack_a_once, prepack_b, rows_in_place_pay
from .llvm_util import (
    F32P,
    I32,
    I64,
    as_i64,
    extents,
    for_range,
    free,
    gep,
    i64,
    imax,
    imin,
    llvm_type,
    new_function,
    product,
    ptr,
    unravel,
)
from .parallel import clamp_threads_at_run_time, parallel


def _ceil_div(b, x, d):
    d = as_i64(b, d)
    return b.udiv(b.add(as_i64(b, x), b.sub(d, i64(1))), d)


def _forms(opname: str, attrs) -> tuple[bool, bool]:
    if opname == "nn.dense":
        return False, True
    ta = bool(attr(attrs, "transpose_a", False))
    tb = bool(attr(attrs, "transpose_b", opname == "nn.batch_matmul"))
    return ta, tb


def supports(opname: str, in_types, out_types) -> bool:
    """Whether a dynamic kernel serves this call (float32, both operands at least 2-D)."""
    if len(in_types) != 2 or len(out_types) != 1:
        return False
    a, w = in_types
    if any(t.dtype != "float32" for t in (a, w, out_types[0])):
        return False
    if opname == "nn.dense" and len(w.shape) != 2:
        return False
    return len(a.shape) >= 2 and len(w.shape) >= 2


def _emit(opname, llmod, name, in_types, out_types, attrs, const_inputs, epilogue=None, n_env=0):
    if not supports(opname, in_types, out_types):
        raise NotImplementedError(f"{opname}: no run-time-shaped kernel for {in_types}")
    ta, tb = _forms(opname, attrs)
    sa, sb = tuple(in_types[0].shape), tuple(in_types[1].shape)
    folded = len(sb) == 2 and not ta  # A's batch dims fold into M (rows contiguous across them)
    out_rank = len(sa) if folded else max(len(sa), len(sb))
    if epilogue is not None and len(out_types[0].shape) != out_rank:
        raise NotImplementedError(f"{opname}: output rank {len(out_types[0].shape)}")
    ep = Epi(epilogue)
    static_b = all(isinstance(d, int) for d in sb)
    packed = 1 in tuple(const_inputs) and static_b and len(sb) == 2 and math.prod(sb) > 0
    extra_t = [ptr(llvm_type(t.dtype)) for t in ep.extra_types]
    args = [F32P, F32P, F32P, *extra_t] + [I64] * (len(sa) + len(sb) + n_env) + [I32]
    fn, b = new_function(llmod, name, args)
    a_ptr, b_ptr, c_ptr = fn.args[:3]
    extras = list(fn.args[3 : 3 + len(extra_t)])
    dim_args = list(fn.args[3 + len(extra_t) : -1 - n_env])
    env = list(fn.args[len(fn.args) - 1 - n_env : -1])
    nthreads = fn.args[-1]

    da, db = extents(sa, dim_args[: len(sa)]), extents(sb, dim_args[len(sa) :])
    # A (.., M, K) or (.., K, M); B (.., K, N) or (.., N, K)
    M, K = (da[-1], da[-2]) if ta else (da[-2], da[-1])
    N = db[-2] if tb else db[-1]
    abatch, bbatch = da[:-2], db[:-2]
    m_dims = [M]  # the output axes GEMM row m runs over
    if folded:  # rows of A are contiguous across its batch dims: one product
        m_dims = [*abatch, M]
        M = b.mul(product(b, abatch), M)
        abatch = []
    rank = max(len(abatch), len(bbatch))
    abatch = [i64(1)] * (rank - len(abatch)) + abatch
    bbatch = [i64(1)] * (rank - len(bbatch)) + bbatch
    # output batch extents and per-dim strides (0 where an extent of 1 broadcasts)
    obatch, a_str, b_str = [], [], []
    acc_a, acc_b = b.mul(M, K), b.mul(K, N)
    for x, y in zip(reversed(abatch), reversed(bbatch)):
        x1, y1 = b.icmp_signed("==", x, i64(1)), b.icmp_signed("==", y, i64(1))
        obatch.append(b.select(x1, y, x))
        a_str.append(b.select(x1, i64(0), acc_a))
        b_str.append(b.select(y1, i64(0), acc_b))
        acc_a, acc_b = b.mul(acc_a, x), b.mul(acc_b, y)
    obatch.reverse(), a_str.reverse(), b_str.reverse()
    nbatch = product(b, obatch)
    MN = b.mul(M, N)

    # the epilogue's indices of output row m of batch matrix bidx; whether it needs them
    # (a bias and an activation depend on the last axis only: no divisions)
    used = ep.axes_used() if ep else set()
    by_row = used is None or bool(used - {out_rank - 1})

    def row_index(b, bidx, m, obatch, m_dims):
        if not by_row:
            return [i64(0)] * (out_rank - 1)
        if folded:
            return unravel(b, m, m_dims)
        return unravel(b, bidx, obatch) + [m]

    with b.if_then(b.icmp_signed("==", K, i64(0))):  # an empty reduction: zeros
        with for_range(b, 0, b.mul(nbatch, MN), name="z") as i:
            b.store(ir.Constant(ir.FloatType(), 0.0), gep(b, c_ptr, i))
        if ep:
            with for_range(b, 0, b.mul(nbatch, M), name="zr") as r:
                prefix = row_index(b, b.udiv(r, M), b.urem(r, M), obatch, m_dims)
                p = gep(b, c_ptr, b.mul(r, N))
                epilogue_row(b, WithEnv(ep, env), extras, p, N, prefix, 0)
        b.ret_void()

    t = gemm_tile()
    MB, NR = t.mc, t.nr
    kcb = k_block(sb[-1] if tb else sb[-2], True) if packed else k_block(0, False)
    # against weights packed at compile time A is packed once too (pack_a_once below), as the
    # static kernel does when it cuts the product by columns: the packed-A microkernel
    # prefetches (DistilBERT with dynamic batch and sequence, 8 x 128 and 1 x 128 tokens: 0.94
    # of its time against A read in place, 2026-12-05)
    in_place = not packed and not ta and isinstance(sa[-1], int) and rows_in_place_pay(sa[-1])
    mblocks = _ceil_div(b, M, MB)
    npan = _ceil_div(b, N, NR)
    flops = b.mul(b.mul(nbatch, MN), K)
    nt = clamp_threads_at_run_time(b, nthreads, b.mul(flops, i64(2)))
    store_fn = plain_store_fn(llmod)
    ctx_extra = []  # after (C, ldc) in the store function's context: bidx, extras, extents
    if ep:
        nm = len(m_dims) if folded else 0
        ctx_t = [F32P, I64, I64, *extra_t] + [I64] * (nm + rank + n_env)
        ne = len(extra_t)

        def index_fn(b, f, m, n):
            bidx, ex = f[2], f[3 + ne :]
            md, ob, en = ex[:nm], ex[nm : nm + rank], ex[nm + rank :]
            return [*row_index(b, bidx, m, ob, md), n, *en]

        store_fn = store_function(
            llmod,
            f"{name}.store",
            ctx_t,
            c_of=lambda b, f: (f[0], f[1]),
            ep=ep,
            index_fn=index_fn,
            extras_of=lambda b, f: f[3 : 3 + ne],
        )
        ctx_extra = [*extras, *(m_dims if folded else []), *obatch, *env]
    # one product (no batch dims) read through packing: pack A once, by all threads, rather
    # than once per column run (DistilBERT's 64 x 768 x 3072 packed its A 8 times)
    packed_a = None
    if rank == 0 and not in_place:
        rs, cs = (1, M) if ta else (K, 1)
        packed_a = pack_a_once(b, name, a_ptr, rs, cs, M, K, nt)
    shared = [a_ptr, b_ptr, c_ptr, M, N, K, nbatch, mblocks, npan, *obatch, *a_str, *b_str]
    shared += [packed_a] if packed_a is not None else []
    n_shared = len(shared)
    shared += ctx_extra

    def body(b, vals, sh):
        a_p, b_p, c_p, M, N, K, nbatch, mblocks, npan = vals[:9]
        ob = vals[9 : 9 + rank]
        ast = vals[9 + rank : 9 + 2 * rank]
        bst = vals[9 + 2 * rank : 9 + 3 * rank]
        a_rs, a_cs = (1, M) if ta else (K, 1)  # A[m, k] = A[m * rs + k * cs]
        b_rs, b_cs = (1, K) if tb else (N, 1)
        # column runs: enough units for the shards, whole panels each
        per = b.mul(nbatch, mblocks)
        runs = imin(b, imax(b, _ceil_div(b, sh.n, imax(b, per, i64(1))), i64(1)), npan)
        pan_run = _ceil_div(b, npan, runs)
        runs = _ceil_div(b, npan, pan_run)
        a0 = RawA(a_p, a_rs, a_cs)
        b0 = PackedB(b_p) if packed else RawB(b_p, b_rs, b_cs)
        abuf, bbuf = thread_buffers(b, a0, b0, kc_block=kcb)
        u0, u1 = sh.range(b, b.mul(per, runs))
        with for_range(b, u0, u1, name="unit") as u:
            run = b.urem(u, runs)
            rest = b.udiv(u, runs)
            mb = b.urem(rest, mblocks)
            bidx = b.udiv(rest, mblocks)
            a_off, b_off, r = i64(0), i64(0), bidx
            for k in reversed(range(rank)):
                ix = b.urem(r, ob[k])
                r = b.udiv(r, ob[k])
                a_off = b.add(a_off, b.mul(ix, ast[k]))
                b_off = b.add(b_off, b.mul(ix, bst[k]))
            m0 = b.mul(mb, i64(MB))
            m1 = imin(b, b.add(m0, i64(MB)), M)
            n0 = b.mul(b.mul(run, pan_run), i64(NR))
            n1 = imin(b, b.add(n0, b.mul(pan_run, i64(NR))), N)
            if packed_a is not None:
                asrc = PackedA(vals[n_shared - 1])
            else:
                asrc = RawA(gep(b, a_p, a_off), a_rs, a_cs)
            bsrc = PackedB(b_p) if packed else RawB(gep(b, b_p, b_off), b_rs, b_cs)
            ctx = [gep(b, c_p, b.mul(bidx, b.mul(M, N))), N]
            if ep:
                ctx += [bidx, *vals[n_shared:]]
            gemm_call(b, asrc, bsrc, K, m0, m1, n0, n1, store_fn, ctx, abuf, bbuf, kcb, in_place)
        sh.end(b)
        free_buffers(b, abuf, bbuf)

    parallel(b, name, shared, nt, body)
    if packed_a is not None:
        free(b, packed_a)
    b.ret_void()
    prepack = {1: prepack_b(tb)} if packed else {}
    return KernelInfo(fn, prepack)


def emit_dynamic_dense(
    llmod, name, in_types, out_types, attrs, const_inputs=(), epilogue=None, n_env=0
):
    args = (llmod, name, in_types, out_types, attrs, const_inputs, epilogue, n_env)
    return _emit("nn.dense", *args)


def emit_dynamic_matmul(
    llmod, name, in_types, out_types, attrs, const_inputs=(), epilogue=None, n_env=0
):
    args = (llmod, name, in_types, out_types, attrs, const_inputs, epilogue, n_env)
    return _emit("nn.matmul", *args)


def emit_dynamic_batch_matmul(
    llmod, name, in_types, out_types, attrs, const_inputs=(), epilogue=None, n_env=0
):
    args = (llmod, name, in_types, out_types, attrs, const_inputs, epilogue, n_env)
    return _emit("nn.batch_matmul", *args)
