"""float32 products with few rows (M <= small_m()): batch-1 dense layers, recurrent cells,
attention with one query. Dispatched by gemm_ops before the blocked engine of gemm_core.

With one to four rows there is nothing to block for: every element of B is read once per call
and used M times, so the product runs at the speed B streams from cache or memory. The blocked
engine pays for its generality there: per-call packing buffers (malloc) and, for a B that is not
constant, a packed copy of B; a 16-column tile per store callback; one row's microkernel has too
few independent accumulators. Here each thread walks its columns directly:

- panel form (B constant, read in gemm_core's 16-column panels packed at compile time; or B
  row-major at run time, read in place): P panels at once, one broadcast of A[m, k] feeding
  P * 16 columns, P chosen so that M * P * 16 / width accumulators are enough to cover the FMA
  latency (8 or more) and fit the register file;
- dot form (B[k, n] contiguous in k: a transposed run-time B, as in q @ k^T or a dense layer
  with non-constant weights): for each (m, n) a dot product over K with 4 vector accumulators;
- rows form (AVX-512, more rows against a constant B of at most ROWS_MAX_B_BYTES, no batch):
  blocks of small_m() rows, each the panel form over all of B, which stays in the core's L2;
  threads take whole blocks. Faster than the blocked engine there (no per-call packing of A,
  no per-tile store callbacks; the epilogue in registers).

The epilogue is applied in registers (8-wide pieces) before the one store of each element.
Threads split the columns (or the batch) into the pool's shards only when B is large.
"""

from __future__ import annotations

import dataclasses
import math

import llvmlite.ir as ir

from .gemm_core import gemm_tile
from .llvm_util import (
    F32,
    I32,
    as_i64,
    const,
    fma,
    for_carry,
    for_range,
    gep,
    i64,
    imin,
    load,
    splat,
    store,
    vector_width,
    vload,
    vstore,
)
from .parallel import clamp_threads, parallel

# The most rows taken here: M rows x 2 vectors of accumulators for one 16-column panel (or 32
# with AVX-512) must fit the register file beside A's broadcast and B's loads. With 16-float
# vectors (32 registers) 8 rows fit: a batch-8 recurrent step (8 x 1024 x 256) ran 3-6% faster
# here than in the blocked engine (its A packing, malloc and store callbacks per tile cost more
# than they save at 8 rows), the LSTM benchmark at batch 8 ~3% (2026-12-02, 1 thread).
SMALL_M = 4  # 8-float vectors (AVX2: 16 registers)
SMALL_M_WIDE = 8  # 16-float vectors (AVX-512: 32 registers)
# Below this many multiply-adds a second thread costs more (dispatch, a cold L2) than it saves.
PARALLEL_MIN_FLOPS = 2e6
# Taller products against a small constant B (AVX-512 only) run as blocks of small_m() rows, each
# streaming B as the few-rows form does: an LSTM's input projections (the whole sequence at
# once, 512 x 1024 x 128 and x 256 at batch 8) ran at 86-91 GFLOP/s in the blocked engine and
# at ~105 as 8-row blocks (1 thread, Zen 4), as fast as the recurrent 8-row steps. B must stay
# in a core's L2 across the blocks.
ROWS_MAX_B_BYTES = 1 << 20


def small_m() -> int:
    """The most rows a product may have to take the small-M path on the target."""
    return SMALL_M_WIDE if vector_width() == 16 else SMALL_M


def form(plan, packed: bool) -> str | None:
    """'panel', 'dot', 'rows' (blocks of small_m() rows, each as 'panel') or None (the blocked
    engine) for a planned product."""
    if plan.M * plan.N * plan.K == 0:
        return None
    R = small_m()
    if plan.M > R:
        # a last block of a few rows streams all of B for them: not for one block and a little
        # (9 x 1024 x 256: 8 + 1 rows 10% slower than the blocked engine)
        nfull, rem = divmod(plan.M, R)
        rows = packed and not plan.batch and vector_width() == 16
        rows = rows and (rem == 0 or 2 * rem >= R or nfull >= 2)
        return "rows" if rows and 4 * plan.K * plan.N <= ROWS_MAX_B_BYTES else None
    if packed or plan.b_cs == 1 and plan.N >= gemm_tile().nr:
        return "panel"
    if plan.b_rs == 1 and plan.a_cs == 1:
        return "dot"
    return None


def _v8_pieces(b, v):
    """v as 8-wide pieces (the epilogue's vector type)."""
    n = v.type.count
    if n == 8:
        return [v]
    und = ir.Constant(v.type, ir.Undefined)
    return [
        b.shuffle_vector(v, und, ir.Constant(ir.VectorType(I32, 8), list(range(s, s + 8))))
        for s in range(0, n, 8)
    ]


class _Out:
    """Stores of finished values of C (+ the epilogue) for one batch element."""

    def __init__(self, ep, extras, plan, c_ptr, bidx, index_fn, m0=None):
        self.ep, self.extras, self.plan = ep, extras, plan
        self.c, self.bidx, self.index_fn = c_ptr, bidx, index_fn
        self.m0 = m0  # the first row of a block of rows (None: 0)

    def vector(self, b, v, m, n):
        """C[m, n : n + len(v)] = ep(v): every column valid."""
        if self.m0 is not None:
            m = b.add(self.m0, m)
        for j, piece in enumerate(_v8_pieces(b, v)):
            col = b.add(n, i64(8 * j))
            if self.ep:
                piece = self.ep(b, piece, self.index_fn(b, self.bidx, m, col), self.extras)
            vstore(b, piece, self.c, b.add(b.mul(m, i64(self.plan.N)), col))

    def lanes(self, b, v, m, n, valid):
        """The first `valid` (i64) lanes of v to C[m, n ...]."""
        for lane in range(v.type.count):
            with b.if_then(b.icmp_signed("<", i64(lane), valid)):
                self.scalar(b, b.extract_element(v, i64(lane)), m, b.add(n, i64(lane)))

    def scalar(self, b, x, m, n):
        if self.m0 is not None:
            m = b.add(self.m0, m)
        if self.ep:
            x = self.ep(b, x, self.index_fn(b, self.bidx, m, n), self.extras)
        store(b, x, self.c, b.add(b.mul(m, i64(self.plan.N)), n))


def _panels(b, plan, a, a_rs, a_cs, panel_ptr, ldb, out, n_of, p0, p1, P, W, tail=None):
    """Panels [p0, p1) in groups of P: C[:, n_of(p) : +16] = A @ panel(p), panel(p)[k, j] =
    panel_ptr(p)[k * ldb + j]. `tail`: the number of valid columns of the panels (all 16
    when None)."""
    M, K = plan.M, plan.K
    nv = gemm_tile().nr // W
    vt = ir.VectorType(F32, W)
    zero = const(vt, 0.0)
    with for_range(b, p0, p1, P, name="pg") as p:
        bases = [panel_ptr(b.add(p, i64(q))) for q in range(P)]

        def step(k, accs):
            bvals = [
                vload(b, base, b.add(b.mul(k, ldb), i64(W * j)), W)
                for base in bases
                for j in range(nv)
            ]
            out_ = []
            for m in range(M):
                am = splat(b, load(b, a, b.add(b.mul(i64(m), a_rs), b.mul(k, a_cs))), W)
                for t, bv in enumerate(bvals):
                    out_.append(fma(b, am, bv, accs[m * len(bvals) + t]))
            return out_

        accs = for_carry(b, 0, K, [zero] * (M * P * nv), step, name="gk")
        for m in range(M):
            for q in range(P):
                n = n_of(b.add(p, i64(q)))
                for j in range(nv):
                    v = accs[m * P * nv + q * nv + j]
                    col = b.add(n, i64(W * j))
                    if tail is None:
                        out.vector(b, v, i64(m), col)
                    else:
                        out.lanes(b, v, i64(m), col, b.sub(tail, i64(W * j)))


def _group_size(M: int, W: int) -> int:
    """Panels per group: >= 8 accumulators where possible, within the register file."""
    nv = gemm_tile().nr // W
    regs = 24 if W == 16 else 12
    p = max(1, 8 // (M * nv))
    while p > 1 and M * p * nv > regs:
        p -= 1
    return p


def _panel_body(b, plan, packed, a, b_mat, out, p0, p1):
    """Columns of panels [p0, p1) of one batch element."""
    M, N, K = plan.M, plan.N, plan.K
    W = vector_width()
    NR = gemm_tile().nr  # the width of the panels gemm_ops packs constant B in
    a_rs, a_cs = i64(plan.a_rs), i64(plan.a_cs)
    nfull = N // NR
    if packed:
        ldb = i64(NR)

        def panel_ptr(p):
            return gep(b, b_mat, b.mul(p, i64(K * NR)))

    else:
        ldb = i64(plan.b_rs)

        def panel_ptr(p):
            return gep(b, b_mat, b.mul(p, i64(NR)))

    def n_of(p):
        return b.mul(p, i64(NR))

    P = _group_size(M, W)
    end_full = imin(b, p1, i64(nfull))
    start = imin(b, p0, end_full)
    ngroup = b.mul(b.udiv(b.sub(end_full, start), i64(P)), i64(P))
    mid = b.add(start, ngroup)
    if P > 1:
        _panels(b, plan, a, a_rs, a_cs, panel_ptr, ldb, out, n_of, start, mid, P, W)
    else:
        mid = start
    _panels(b, plan, a, a_rs, a_cs, panel_ptr, ldb, out, n_of, mid, end_full, 1, W)
    rem = N - nfull * NR
    if not rem:
        return
    # this shard holds the last, partial panel (an empty shard [npan, npan) does not)
    has_tail = b.and_(b.icmp_signed(">", p1, i64(nfull)), b.icmp_signed("<=", p0, i64(nfull)))
    if packed:  # the last panel is zero padded: full loads, partial stores
        with b.if_then(has_tail):
            _panels(
                b, plan, a, a_rs, a_cs, panel_ptr, ldb, out, n_of,
                i64(nfull), i64(nfull + 1), 1, W, tail=i64(rem),
            )  # fmt: skip
        return
    with b.if_then(has_tail):  # run-time B: the last columns with scalars
        with for_range(b, nfull * NR, N, name="tn") as n:
            for m in range(M):

                def dot(k, acc, m=m, n=n):
                    av = load(b, a, b.add(b.mul(i64(m), a_rs), b.mul(k, a_cs)))
                    bv = load(b, b_mat, b.add(b.mul(k, ldb), n))
                    return [fma(b, av, bv, acc[0])]

                (acc,) = for_carry(b, 0, K, [const(F32, 0.0)], dot, name="tk")
                out.scalar(b, acc, i64(m), n)


def _dot_body(b, plan, a, b_mat, out, n0, n1):
    """C[m, n] = dot(A[m, :], B[:, n]) for n in [n0, n1): A rows and B columns contiguous."""
    M, K = plan.M, plan.K
    W = vector_width()
    U = 4
    vt = ir.VectorType(F32, W)
    b_cs = i64(plan.b_cs)
    kmain = K // (W * U) * (W * U)
    kvec = K // W * W
    with for_range(b, n0, n1, name="dn") as n:
        col = gep(b, b_mat, b.mul(n, b_cs))
        for m in range(M):
            row = gep(b, a, i64(m * plan.a_rs))

            def step(k, accs, row=row, col=col):
                return [
                    fma(b, vload(b, row, b.add(k, i64(W * u)), W),
                        vload(b, col, b.add(k, i64(W * u)), W), accs[u])
                    for u in range(U)
                ]  # fmt: skip

            accs = for_carry(b, 0, kmain, [const(vt, 0.0)] * U, step, step=W * U, name="dk")
            acc = accs[0]
            for u in range(1, U):
                acc = b.fadd(acc, accs[u])

            def vstep(k, accs, row=row, col=col):
                return [fma(b, vload(b, row, k, W), vload(b, col, k, W), accs[0])]

            if kvec > kmain:
                (acc,) = for_carry(b, kmain, kvec, [acc], vstep, step=W, name="dv")
            s = _hsum(b, acc)

            def sstep(k, accs, row=row, col=col):
                return [fma(b, load(b, row, k), load(b, col, k), accs[0])]

            if K > kvec:
                (s,) = for_carry(b, kvec, K, [s], sstep, name="ds")
            out.scalar(b, s, i64(m), n)


def _hsum(b, v):
    """The sum of v's lanes: halves added log2(width) times (not a chain of width adds)."""
    n = v.type.count
    while n > 1:
        n //= 2
        lo, hi = (
            b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, n), list(range(s, s + n))))
            for s in (0, n)
        )
        v = b.fadd(lo, hi)
    return b.extract_element(v, i64(0))


def emit_small_m(kf, plan, packed: bool, how: str, batch_offset, index_fn) -> None:
    """The body of a gemm_ops kernel for a product that `form` accepted.

    batch_offset(b, bidx, batch, strides) -> element offset; index_fn(b, bidx, m, n) -> the
    output's indices of C[bidx][m, n]."""
    if how == "rows":
        _emit_rows(kf, plan, index_fn)
        return
    M, N, K = plan.M, plan.N, plan.K
    nbatch = math.prod(plan.batch)
    NR = gemm_tile().nr
    npan = -(-N // NR)
    cols = npan if how == "panel" else N
    work = 2.0 * nbatch * M * N * K
    # columns in shards when there is one batch element; else whole batch elements
    units = cols if nbatch == 1 else nbatch
    nt = clamp_threads(kf.b, kf.nthreads, work if work >= PARALLEL_MIN_FLOPS else 0.0, units)
    bmat = npan * K * NR if packed else K * N

    def one(b, vals, bidx, c0, c1):
        a_ptr, b_ptr, c_ptr, extras = vals[0], vals[1], vals[2], vals[3:]
        a = gep(b, a_ptr, batch_offset(b, bidx, plan.batch, plan.a_bstrides))
        mat = batch_offset(b, bidx, plan.batch, plan.b_bmat)
        b_mat = gep(b, b_ptr, b.mul(as_i64(b, mat), i64(bmat)))
        c = gep(b, c_ptr, b.mul(bidx, i64(M * N)))
        out = _Out(kf.ep, extras, plan, c, bidx, index_fn)
        if how == "panel":
            _panel_body(b, plan, packed, a, b_mat, out, c0, c1)
        else:
            _dot_body(b, plan, a, b_mat, out, c0, c1)

    def body(b, vals, sh):
        u0, u1 = sh.range(b, units)
        if nbatch == 1:
            one(b, vals, i64(0), u0, u1)
        else:
            with for_range(b, u0, u1, name="bu") as bidx:
                one(b, vals, bidx, i64(0), i64(cols))
        sh.end(b)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)


def _emit_rows(kf, plan, index_fn) -> None:
    """A product with more rows than small_m() against a constant B packed in panels: blocks of
    small_m() rows (the last one shorter), each streaming all of B; threads take blocks."""
    R = small_m()
    M, N, K = plan.M, plan.N, plan.K
    npan = -(-N // gemm_tile().nr)
    nfull, rem = divmod(M, R)
    nblocks = nfull + (rem > 0)
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * M * N * K, nblocks)
    full = dataclasses.replace(plan, M=R)
    last = dataclasses.replace(plan, M=rem) if rem else None

    def block(b, vals, r, sub):
        a_ptr, b_ptr, c_ptr, extras = vals[0], vals[1], vals[2], vals[3:]
        m0 = b.mul(r, i64(R))
        a = gep(b, a_ptr, b.mul(m0, i64(plan.a_rs)))
        out = _Out(kf.ep, extras, plan, c_ptr, i64(0), index_fn, m0)
        _panel_body(b, sub, True, a, b_ptr, out, i64(0), i64(npan))

    def body(b, vals, sh):
        r0, r1 = sh.range(b, nblocks)
        with for_range(b, r0, imin(b, r1, i64(nfull)), name="rb") as r:
            block(b, vals, r, full)
        if last is not None:
            mine = b.and_(b.icmp_signed(">", r1, i64(nfull)), b.icmp_signed("<=", r0, i64(nfull)))
            with b.if_then(mine):
                block(b, vals, i64(nfull), last)
        sh.end(b)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)
