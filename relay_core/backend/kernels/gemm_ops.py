"""nn.dense, nn.matmul and nn.batch_matmul.

All three are one matrix product with numpy matmul semantics (1-D promotion, batch
broadcasting, optional transposes): dense is matmul(x, w, transpose_b=True), batch_matmul defaults
to transpose_b=True as in TVM. float32 runs on the packed microkernel engine (gemm_core), or,
with at most gemv.small_m() rows, on the streaming kernels of gemv (batch-1 layers; also taller
products against a small constant B, in blocks of small_m() rows); other
dtypes (float64, float16, integer -> int32 / int64) on the simple loops of gemm_generic.
A constant right-hand side (`const_inputs` containing 1) is packed into panels at compile time.
When B has no batch dims and A is not transposed, A's batch dims fold into M: one large GEMM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from . import gemv
from .common import KernelInfo, attr, epilogue_row, kernel_function, shape_of
from .gemm_core import (
    PackedA,
    PackedB,
    RawA,
    RawB,
    choose_split,
    free_buffers,
    gemm_call,
    gemm_tile,
    k_block,
    pack_a_fn,
    pack_b_panels,
    store_function,
    thread_buffers,
)
from .llvm_util import (
    F32P,
    I64,
    as_i64,
    compute_type,
    const,
    for_range,
    free,
    gep,
    i64,
    imin,
    malloc,
    store_from,
    unravel,
)
from .parallel import clamp_threads, parallel, split_range


@dataclass
class MatmulPlan:
    """A batched product C[bi] = A[bi] @ B[bi] over contiguous row-major operands."""

    batch: tuple  # output batch dims (after folding)
    M: int
    N: int
    K: int
    a_rs: int
    a_cs: int
    b_rs: int
    b_cs: int
    a_bstrides: tuple  # per output batch dim, in elements of A (0: broadcast)
    b_bmat: tuple  # per output batch dim, in whole B matrices (0: broadcast)
    nb_mats: int  # number of B matrices
    out_dims: tuple  # output shape (for epilogue indices)
    m_dims: tuple  # output dims that the GEMM row index m ranges over (row-major)
    has_n: bool


def _bcast_strides(shape, out_batch, core: int) -> tuple:
    """Element strides of `shape`'s batch dims aligned to `out_batch` (0 where broadcast)."""
    strides, acc = [], core
    for d in reversed(shape):
        strides.append(0 if d == 1 else acc)
        acc *= d
    strides.reverse()
    pad = len(out_batch) - len(shape)
    return (0,) * pad + tuple(strides)


def plan_matmul(sa, sb, ta: bool, tb: bool) -> MatmulPlan:
    """Shapes and strides of numpy's matmul(A^ta, B^tb) as one batched GEMM."""
    if len(sa) == 1:
        M, K, a_rs, a_cs, abatch = 1, sa[0], sa[0], 1, ()
    else:
        r, c = sa[-2:]
        M, K = (c, r) if ta else (r, c)
        a_rs, a_cs = (1, c) if ta else (c, 1)
        abatch = tuple(sa[:-2])
    if len(sb) == 1:
        N, b_rs, b_cs, bbatch = 1, 1, 1, ()
    else:
        r, c = sb[-2:]
        N = r if tb else c
        b_rs, b_cs = (1, c) if tb else (c, 1)
        bbatch = tuple(sb[:-2])
    batch = tuple(np.broadcast_shapes(abatch, bbatch))
    has_m, has_n = len(sa) > 1, len(sb) > 1
    out_dims = batch + ((M,) if has_m else ()) + ((N,) if has_n else ())
    nb = math.prod(bbatch)
    if nb == 1 and not (ta and len(sa) > 1) and math.prod(abatch) > 1:
        # fold A's batch into M: rows of A are contiguous across batches
        m_dims = batch + ((M,) if has_m else ())
        M = math.prod(m_dims)
        return MatmulPlan((), M, N, K, a_rs, a_cs, b_rs, b_cs, (), (), 1, out_dims, m_dims, has_n)
    return MatmulPlan(
        batch,
        M,
        N,
        K,
        a_rs,
        a_cs,
        b_rs,
        b_cs,
        _bcast_strides(abatch, batch, M * K),
        _bcast_strides(bbatch, batch, 1),
        nb,
        out_dims,
        (M,) if has_m else (),
        has_n,
    )


def prepack_b(tb: bool):
    """The compile-time transform of a constant B (any batch dims) into NR-column panels."""
    NR = gemm_tile().nr

    def pack(w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, np.float32)
        if w.ndim == 1:
            mats = w.reshape(1, -1, 1)
        else:
            mats = w.reshape(-1, *w.shape[-2:])
            if tb:
                mats = mats.transpose(0, 2, 1)
        return np.stack([pack_b_panels(m, NR) for m in mats])

    return pack


def emit_matmul(
    llmod,
    name,
    in_types,
    out_types,
    attrs,
    epilogue=None,
    const_inputs=(),
    transpose_a=None,
    transpose_b=None,
):
    """`void name(A*, B*, C*, [extras...], i32 nthreads)`: numpy matmul with transposes."""
    ta = bool(attr(attrs, "transpose_a", False)) if transpose_a is None else transpose_a
    tb = bool(attr(attrs, "transpose_b", False)) if transpose_b is None else transpose_b
    sa, sb = shape_of(in_types[0]), shape_of(in_types[1])
    if len(sa) < 2:
        ta = False
    if len(sb) < 2:
        tb = False
    plan = plan_matmul(sa, sb, ta, tb)
    dts = (in_types[0].dtype, in_types[1].dtype, out_types[0].dtype)
    if dts != ("float32",) * 3:
        from .gemm_generic import emit_generic_matmul

        return emit_generic_matmul(llmod, name, in_types, out_types, plan, epilogue)
    packed = 1 in tuple(const_inputs) and plan.M * plan.N * plan.K > 0
    kf = kernel_function(llmod, name, in_types, out_types, epilogue)
    _sgemm_body(kf, plan, packed)
    kf.b.ret_void()
    prepack = {1: prepack_b(tb)} if packed else {}
    return KernelInfo(kf.fn, prepack)


def emit_dense(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
    """nn.dense: x (..., K) @ w(N, K).T."""
    return emit_matmul(
        llmod,
        name,
        in_types,
        out_types,
        attrs,
        epilogue,
        const_inputs,
        transpose_a=False,
        transpose_b=True,
    )


def emit_batch_matmul(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
    """nn.batch_matmul: matmul with transpose_b=True by default (TVM)."""
    ta = bool(attr(attrs, "transpose_a", False))
    tb = bool(attr(attrs, "transpose_b", True))
    return emit_matmul(
        llmod,
        name,
        in_types,
        out_types,
        attrs,
        epilogue,
        const_inputs,
        transpose_a=ta,
        transpose_b=tb,
    )


# ---------------------------------------------------------------------------------------------


def batch_offset(b, bidx, batch: tuple, strides: tuple):
    """sum_i idx_i * strides_i for the row-major multi-index of flat `bidx` in `batch`."""
    if not batch or not any(strides):
        return i64(0)
    off = i64(0)
    for ix, s in zip(unravel(b, bidx, batch), strides):
        if s:
            off = b.add(off, b.mul(ix, i64(s)))
    return off


def out_indices(b, plan: MatmulPlan, bidx, m, n) -> list:
    """The output's logical multi-index of GEMM element (bidx, m, n)."""
    idx = unravel(b, bidx, plan.batch) if plan.batch else []
    if plan.m_dims:
        idx += unravel(b, m, plan.m_dims) if len(plan.m_dims) > 1 else [m]
    if plan.has_n:
        idx.append(n)
    return idx


def zero_fill(kf, out_dims: tuple, out_dtype: str) -> None:
    """An all-zero output (a product over K == 0), then the epilogue."""
    b = kf.b
    total = math.prod(out_dims)
    zero = const(compute_type(out_dtype), 0)
    with for_range(b, 0, total, name="z") as i:
        store_from(b, zero, kf.outs[0], i, out_dtype)
    if not kf.ep or total == 0:
        return
    if not out_dims:  # a scalar
        v = kf.ep(b, zero, [], kf.extras)
        store_from(b, v, kf.outs[0], 0, out_dtype)
        return
    last = out_dims[-1]
    with for_range(b, 0, total // last, name="zr") as r:
        prefix = unravel(b, r, out_dims[:-1]) if len(out_dims) > 1 else []
        p = gep(b, kf.outs[0], b.mul(r, i64(last)))
        epilogue_row(b, kf.ep, kf.extras, p, last, prefix, 0, out_dtype)


def _sgemm_body(kf, plan: MatmulPlan, packed: bool) -> None:
    M, N, K = plan.M, plan.N, plan.K
    if M * N == 0 or math.prod(plan.batch) == 0:
        return
    if K == 0:
        zero_fill(kf, plan.out_dims, "float32")
        return
    how = gemv.form(plan, packed)
    if how is not None:  # a few rows: stream B once, no packing, no tiles
        index_fn = lambda b, bidx, m, n: out_indices(b, plan, bidx, m, n)  # noqa: E731
        gemv.emit_small_m(kf, plan, packed, how, batch_offset, index_fn)
        return
    nbatch = math.prod(plan.batch)
    t = gemm_tile()
    MR, NR = t.mr, t.nr
    npan = -(-N // NR)
    split = choose_split(M, N)
    tiles = nbatch * (-(-N // NR) if split == "n" else -(-M // MR))
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * nbatch * M * N * K, tiles)
    extra_t = [e.type for e in kf.extras]
    store_fn = store_function(
        kf.b.module,
        f"{kf.fn.name}.store",
        [F32P, I64, *extra_t],
        c_of=lambda b, f: (f[0], N),
        ep=kf.ep,
        index_fn=lambda b, f, m, n: out_indices(b, plan, f[1], m, n),
        extras_of=lambda b, f: f[2:],
        vector_ok=plan.has_n and N >= 8,
    )
    bmat = npan * K * NR if packed else K * N
    # one row block against packed panels: stream each panel over the whole K (no K blocking)
    kcb = K if (M <= MR and packed) else k_block(K, packed)
    shared_a = _prepack_a(kf, plan, split, nt)
    # cutting a product by columns shares A between the parts, by rows B: many parts (shards,
    # taken dynamically) cost nothing more when that operand is packed once. Measured against a
    # part per thread (kernel-level A/B in one process, 2 threads, two runs, 2026-12-02): 0.88 of
    # its time on 197 x 1536 x 384 (ViT-S MLP), 0.90-0.95 on 128 x 3072 x 768 (GPT-2 MLP),
    # 0.92-1.03 on the other ViT-S / GPT-2 / LSTM products (none slower in both runs)
    fine = nbatch == 1 and (shared_a is not None if split == "n" else packed)
    in_place = shared_a is None and plan.a_cs == 1 and a_in_place_pays(plan)

    def body(b, vals, sh):
        a_ptr, b_ptr, c_ptr = vals[0], vals[1], vals[2]
        extras = vals[3:-1] if shared_a is not None else vals[3:]

        def a_src(bidx):
            if shared_a is not None:
                return PackedA(vals[-1])
            off = batch_offset(b, bidx, plan.batch, plan.a_bstrides)
            return RawA(gep(b, a_ptr, off), plan.a_rs, plan.a_cs)

        def b_src(bidx):
            mat = batch_offset(b, bidx, plan.batch, plan.b_bmat)
            p = gep(b, b_ptr, b.mul(mat, i64(bmat)))
            return PackedB(p) if packed else RawB(p, plan.b_rs, plan.b_cs)

        abuf, bbuf = thread_buffers(b, a_src(i64(0)), b_src(i64(0)), M, N, K, kcb)
        nbv = i64(nbatch)
        if fine:  # one product, its shared operand packed once: a part per shard
            parts = sh.n
        else:
            # whole products per unit when there are enough of them for the threads (cutting
            # one repeats its packing of A in every part); else cut each into a part per thread
            parts = sh.parts(b, nbatch)
        u0, u1 = sh.range(b, b.mul(nbv, parts))
        with for_range(b, u0, u1, name="unit") as u:
            bidx = b.udiv(u, parts)
            part = b.urem(u, parts)
            if split == "n":
                n0, n1 = split_range(b, N, part, parts, NR)
                m0, m1 = i64(0), i64(M)
            else:
                m0, m1 = split_range(b, M, part, parts, MR)
                n0, n1 = i64(0), i64(N)
            ctx = [gep(b, c_ptr, b.mul(bidx, i64(M * N))), bidx, *extras]
            gemm_call(
                b,
                a_src(bidx),
                b_src(bidx),
                K,
                m0,
                m1,
                n0,
                n1,
                store_fn,
                ctx,
                abuf,
                bbuf,
                kcb,
                a_in_place=in_place,
            )
        sh.end(b)
        free_buffers(b, abuf, bbuf)

    shared = kf.ins + kf.outs + kf.extras + ([shared_a] if shared_a is not None else [])
    parallel(kf.b, kf.fn.name, shared, nt, body)
    if shared_a is not None:
        free(kf.b, shared_a)


# None: a_in_place_pays decides; True / False: always / never (kept for A/B measurements).
A_IN_PLACE = None


def a_in_place_pays(plan: MatmulPlan) -> bool:
    """Read A's rows in place (gemm_core.A_ROWS) rather than pack them. Packing is a scalar
    copy of A that pays off only over many NR-column panels of B; the in-place microkernel
    issues the same loads (a broadcast per row and k) from MR row pointers. Kernel-level A/B,
    1 thread, load ~5 (2026-12-02): attention products 197 x 197 x 64 / 197 x 64 x 197 (ViT-S)
    0.92 / 0.74x, 128 x 128 x 64 / 128 x 64 x 128 (GPT-2) 0.86 / 0.78x; dense 1576 x
    384..1536 x 384..1536 and 1024 x 768 x 768 0.92-0.98x; 1024 x 768 x 3072 1.35x (below)."""
    if A_IN_PLACE is not None:
        return A_IN_PLACE
    return rows_in_place_pay(plan.a_rs)


def rows_in_place_pay(a_rs: int) -> bool:
    """a_in_place_pays for rows of A `a_rs` floats apart."""
    # the microkernel's MR row streams must not fall into few L1 sets (4 KB apart: 32 KB,
    # 8-way): K = 3072 (rows 12 KB apart) was 1.35x slower in place, K <= 1536 0.92-0.97x
    row_bytes = 4 * a_rs
    per_set = -(-gemm_tile().mr * math.gcd(row_bytes, 4096) // 4096)
    return per_set <= 4


def _prepack_a(kf, plan: MatmulPlan, split: str, nt):
    """A split by columns gives every shard all the rows of A, which each packed again (8
    times with 2 threads): pack A once into MR-row panels over the whole K (the PackedA
    layout), by all threads, before the product. Returns the buffer (free it after) or None."""
    M, K = plan.M, plan.K
    t = gemm_tile()
    if split != "n" or plan.batch or M <= t.mr or isinstance(nt, ir.Constant):
        return None
    pt = clamp_threads(kf.b, kf.nthreads, 8.0 * M * K, -(-M // t.mr))
    return pack_a_once(kf.b, kf.fn.name, kf.ins[0], plan.a_rs, plan.a_cs, M, K, pt)


def pack_a_once(b, name: str, a_ptr, rs, cs, M, K, nt):
    """A (A[m, k] = a_ptr[m * rs + k * cs]; ints or run-time i64 values) packed into MR-row
    panels over the whole K (the PackedA layout) in a new buffer (free it after), by up to `nt`
    threads."""
    t = gemm_tile()
    M, K, rs, cs = (as_i64(b, v) for v in (M, K, rs, cs))
    npan = b.udiv(b.add(M, i64(t.mr - 1)), i64(t.mr))
    buf = b.bitcast(malloc(b, b.mul(i64(4 * t.mr), b.mul(npan, K))), F32P)
    pack = pack_a_fn(b.module, t)

    def body(b, vals, sh):
        a_p, dst, M, K, rs, cs, npan = vals
        p0, p1 = sh.range(b, npan)
        r0 = b.mul(p0, i64(t.mr))
        rows = b.sub(imin(b, b.mul(p1, i64(t.mr)), M), r0)
        with b.if_then(b.icmp_signed(">", rows, i64(0))):
            d = gep(b, dst, b.mul(r0, K))
            b.call(pack, [a_p, rs, cs, d, r0, rows, i64(0), K])

    parallel(b, f"{name}.pack", [a_ptr, buf, M, K, rs, cs, npan], nt, body)
    return buf
