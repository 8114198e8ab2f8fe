"""The float32 GEMM engine: a register-blocked FMA microkernel and its blocked driver.

The tile follows the target's features (`gemm_tile()`): with AVX2 an MR x NR = 6x16 tile of C
in 12 <8 x float> accumulators; with AVX-512 (avx512f) a wider one in <16 x float> accumulators.
Every kernel that packs operands or pads buffers for the engine asks `gemm_tile()` when it is
emitted, so packed weights, buffers and microkernels agree for the target being built.

C[m, n] (+)= sum_k A[m, k] * B[k, n], BLIS-style: for each NC block of columns and KC block of
the reduction, B is packed into NR-wide panels (or read from panels packed at compile time, or
from a zero-padded strided buffer such as an im2col chunk); for each MC block of rows, A is
packed into MR-row panels (or read prepacked); the microkernel keeps an MR x NR tile of C in
registers over KC steps of one broadcast of A and NR / width loads of B per row.
Rows left over (M % MR) use microkernels for fewer rows; columns left over (N % NR) read
zero-padded panels and store only the valid columns.

Compile time matters (a model has dozens of GEMMs and convolutions): the driver, packers and
microkernels are emitted once per LLVM module and shared. Each kernel adds only a *store*
function, called once per tile with the tile in a small buffer: it adds the tile to C (or sets
it, for the first KC block) and applies the kernel's epilogue after the last KC block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from .common import Epi
from .llvm_util import (
    F32,
    F32P,
    I1,
    I8P,
    I32,
    I64,
    VOID,
    as_i64,
    const,
    entry_alloca,
    fma,
    for_carry,
    for_range,
    free,
    gep,
    i32,
    i64,
    imin,
    load,
    malloc,
    new_function,
    prefetch,
    splat,
    store,
    vload,
    vstore,
)

KC, NC = 256, 2048
MC_TARGET = 72  # rows of A per packed block: MC is the multiple of MR nearest below or at it
# Against B panels packed at compile time, K is cut into as few blocks as possible, none longer
# than this: every K block is one more pass of each tile through `store`, which reloads a C
# tile that has left the cache. Single thread, CPU time, 3 alternating runs (2026-12-03, Zen 4):
# BERT / ViT dense products 1024 x 768 x 768 / 3072, 1024 x 3072 x 768, 1576 x 384 / 1536 x
# 1536 / 384 ran at 96-98 GFLOP/s with K whole against 78-89 with K blocks of 256; blocks of
# 768 and 1024 fell between. Panels of K x 32 floats outgrow L1 but stream from L2 at this
# intensity (24 FMAs per 128 bytes of B).
KC_PACKED = 3072
WHOLE_K = True  # False: blocks of KC everywhere (kept for A/B measurements)


@dataclass(frozen=True)
class Tile:
    """The microkernel's shape: mr rows x nr = nv * width columns of C, in mr * nv vectors of
    `width` floats."""

    mr: int
    nv: int
    width: int

    @property
    def nr(self) -> int:
        return self.nv * self.width

    @property
    def mc(self) -> int:
        return max(self.mr, MC_TARGET // self.mr * self.mr)

    @property
    def vec(self) -> ir.VectorType:
        return ir.VectorType(F32, self.width)


AVX2_TILE = Tile(6, 2, 8)
AVX512_TILE = Tile(12, 2, 16)


def gemm_tile() -> Tile:
    """The tile for the target being built (llvm_target.host(), after RELAY_CPU_FEATURES)."""
    from ..llvm_target import host

    return _tile_for(host()[2])


def _tile_for(features: str) -> Tile:
    on = set(f[1:] for f in features.split(",") if f.startswith("+"))
    return AVX512_TILE if "avx512f" in on else AVX2_TILE


A_RAW, A_PACKED, A_ROWS = 0, 1, 2
B_RAW, B_PACKED, B_STRIDED = 0, 1, 2

# ---------------------------------------------------------------------------------------------
# Operand descriptions (strides in elements; Python ints or i64 values).


@dataclass
class PackedA:
    """A packed at compile time by `pack_a_panels`: 6-row panels over the whole K."""

    ptr: ir.Value


@dataclass
class RawA:
    """A[m, k] = ptr[m * rs + k * cs]; packed into a thread buffer per MC x KC block."""

    ptr: ir.Value
    rs: object
    cs: object


@dataclass
class PackedB:
    """B packed at compile time by `pack_b_panels`: 16-column panels over the whole K."""

    ptr: ir.Value


@dataclass
class RawB:
    """B[k, n] = ptr[k * rs + n * cs]; packed into a thread buffer per KC x NC block."""

    ptr: ir.Value
    rs: object
    cs: object


@dataclass
class StridedB:
    """B[k, n] = ptr[k * ld + n], each row readable (zero padded) up to a multiple of 16."""

    ptr: ir.Value
    ld: object


# ---------------------------------------------------------------------------------------------
# Compile-time packing (numpy).


def pack_b_panels(bmat: np.ndarray, NR: int) -> np.ndarray:
    """(K, N) -> (ceil(N/NR), K, NR) float32, zero padded: the layout PackedB reads."""
    k, n = bmat.shape
    npan = -(-n // NR)
    padded = np.zeros((k, npan * NR), np.float32)
    padded[:, :n] = bmat
    return np.ascontiguousarray(padded.reshape(k, npan, NR).transpose(1, 0, 2))


def pack_a_panels(amat: np.ndarray, MR: int) -> np.ndarray:
    """(M, K) -> flat float32: for each MR-row panel (the last one may be shorter, mr rows),
    its K x mr transpose. The layout PackedA reads."""
    m, k = amat.shape
    out = np.empty(m * k, np.float32)
    for r in range(0, m, MR):
        mr = min(MR, m - r)
        out[r * k : (r + mr) * k] = np.ascontiguousarray(amat[r : r + mr].T, np.float32).ravel()
    return out


# ---------------------------------------------------------------------------------------------
# Shared functions (one copy per module).


def _shared(llmod: ir.Module, name: str, args: list, build: Callable) -> ir.Function:
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    fn, b = new_function(llmod, name, args, internal=True)
    build(b, *fn.args)
    b.ret_void()
    return fn


# Software prefetch (into L1) in the packed-A microkernel: B's row k + PF_B and A's column
# k + PF_A while step k runs (0: off). A panel of K x 32 floats streams from L2 or further,
# and the hardware prefetchers alone left the FMAs waiting. Interleaved in one process
# (Xeon Ice Lake, 2 threads, 11-15 rounds, against an identical build; 2026-12-05):
# BERT / ViT dense products 1024 x 768..3072 x 768..3072 and 1576 x 384 / 1536 0.91-0.95 of
# the time, 128 x 768 / 3072 x 768 0.94; BERT-base at batch 8 0.925 (model), ResNet-50 b8 0.95
# (its im2col / Winograd products). Not in the in-place-A kernel: its MR row pointers leave
# no registers (the attention products got 1.1-1.2x slower); the conv_strips kernel (weights
# in panels as here) showed no gain on ResNet-50.
PF_B = 16
PF_A = 32


def _ukr_body(
    b, t: Tile, mr: int, kc, a_elem, b_ptr, ldb, tile, unroll: bool = True, prefetch_a=None
) -> None:
    """tile[0:mr, 0:NR] = A (mr x kc, element (i, k) loaded by a_elem(k, i)) @ B-panel (kc rows
    of NR, row stride ldb): one broadcast of A per row and k, nv vectors of B per k.

    Fewer than 8 independent accumulators and the FMA latency (4 cycles, 2 ports) would bound
    the loop: those keep `sets` copies of the accumulators, one per k modulo `sets`, added up
    at the end. unroll=False keeps LLVM from unrolling the k loop."""
    nv, w, NR = t.nv, t.width, t.nr
    n = nv * mr
    sets = 1 if n >= 8 else -(-8 // n)
    zero = const(t.vec, 0.0)

    def one(k, accs):
        bk = b.mul(k, ldb)
        if prefetch_a is not None and PF_B:
            ahead = b.mul(b.add(k, i64(PF_B)), ldb)
            for v in range(0, NR, 16):  # a cache line each
                prefetch(b, b_ptr, b.add(ahead, i64(v)), 3)
        if prefetch_a is not None and PF_A:
            prefetch_a(b.add(k, i64(PF_A)))
        bv = [vload(b, b_ptr, b.add(bk, i64(w * v)), w) for v in range(nv)]
        out = []
        for i in range(mr):
            av = splat(b, a_elem(k, i), w)
            out += [fma(b, av, bv[v], accs[nv * i + v]) for v in range(nv)]
        return out

    def step(k, accs):  # `sets` consecutive k, each into its own accumulators
        out = []
        for s_ in range(sets):
            out += one(b.add(k, i64(s_)), accs[s_ * n : (s_ + 1) * n])
        return out

    main = b.mul(b.udiv(kc, i64(sets)), i64(sets)) if sets > 1 else kc
    accs = for_carry(b, 0, main, [zero] * (n * sets), step, step=sets, name="kk")
    if not unroll:
        _no_unroll(b.block.parent, "kk.body")
    if sets > 1:
        first = for_carry(b, main, kc, accs[:n], one, name="kt")
        accs = list(first) + list(accs[n:])
        total = accs[:n]
        for s_ in range(1, sets):
            total = [b.fadd(x, y) for x, y in zip(total, accs[s_ * n : (s_ + 1) * n])]
        accs = total
    for j, v in enumerate(accs):
        vstore(b, v, tile, (j // nv) * NR + w * (j % nv))


def _ukr_fn(llmod, t: Tile, mr: int) -> ir.Function:
    """tile[0:mr, 0:NR] = A-panel (kc x mr) @ B-panel (kc rows of NR, row stride ldb)."""

    def build(b, kc, a_ptr, b_ptr, ldb, tile):
        def a_elem(k, i):
            return load(b, a_ptr, b.add(b.mul(k, i64(mr)), i64(i)))

        def prefetch_a(k):
            prefetch(b, a_ptr, b.mul(k, i64(mr)), 3)

        _ukr_body(b, t, mr, kc, a_elem, b_ptr, ldb, tile, prefetch_a=prefetch_a)

    return _shared(llmod, f"relay.sgemm.ukr{mr}", [I64, F32P, F32P, I64, F32P], build)


def _ukr_rows_fn(llmod, t: Tile, mr: int) -> ir.Function:
    """The microkernel of `_ukr_fn` for an unpacked A (A_ROWS): mr rows of kc read in place
    (row stride lda), the same loads from mr row pointers instead of one panel. Its k loop is
    not unrolled (unrolled by 2 in the shared driver it spilled accumulators: 30 GFLOP/s)."""

    def build(b, kc, a_ptr, lda, b_ptr, ldb, tile):
        rows = [gep(b, a_ptr, b.mul(lda, i64(i))) for i in range(mr)]
        _ukr_body(b, t, mr, kc, lambda k, i: load(b, rows[i], k), b_ptr, ldb, tile, unroll=False)

    return _shared(llmod, f"relay.sgemm.ukrrows{mr}", [I64, F32P, I64, F32P, I64, F32P], build)


def _no_unroll(fn: ir.Function, body: str) -> None:
    """llvm.loop.unroll.disable on the back edge of the loop whose body block is named `body`
    (the last block branching to its head)."""
    head = body.replace(".body", ".head")
    latch = [
        blk
        for blk in fn.blocks
        if blk.is_terminated
        and blk.terminator.opname == "br"
        and any(getattr(o, "name", None) == head for o in blk.terminator.operands)
    ]
    mod = fn.module
    off = mod.add_metadata([ir.MetaDataString(mod, "llvm.loop.unroll.disable")])
    loop_id = mod.add_metadata([off])
    loop_id.operands = (loop_id, off)  # a loop ID refers to itself
    latch[-1].terminator.set_metadata("llvm.loop", loop_id)


def pack_a_fn(llmod, t: Tile) -> ir.Function:
    """abuf <- A[i0:i0+mc, p0:p0+kc] (A[m,k] = a[m*rs + k*cs]) as MR-row panels, the last one
    mc % MR rows; panel r starts at r * kc."""
    MR = t.mr

    def build(b, a, rs, cs, abuf, i0, mc, p0, kc):
        nfull = b.mul(b.udiv(mc, i64(MR)), i64(MR))
        with for_range(b, 0, nfull, MR, name="pa") as r:
            dst = gep(b, abuf, b.mul(r, kc))
            rows = [b.mul(b.add(i0, b.add(r, i64(i))), rs) for i in range(MR)]
            with for_range(b, 0, kc, name="pak") as k:
                col = b.mul(b.add(p0, k), cs)
                for i in range(MR):
                    v = load(b, a, b.add(rows[i], col))
                    store(b, v, dst, b.add(b.mul(k, i64(MR)), i64(i)))
        rem = b.sub(mc, nfull)
        with b.if_then(b.icmp_signed(">", rem, i64(0))):
            dst = gep(b, abuf, b.mul(nfull, kc))
            with for_range(b, 0, kc, name="pat") as k:
                col = b.mul(b.add(p0, k), cs)
                with for_range(b, 0, rem, name="pai") as i:
                    v = load(b, a, b.add(b.mul(b.add(i0, b.add(nfull, i)), rs), col))
                    store(b, v, dst, b.add(b.mul(k, rem), i))

    return _shared(llmod, "relay.sgemm.pack_a", [F32P, I64, I64, F32P, I64, I64, I64, I64], build)


def _pack_b_fn(llmod, t: Tile) -> ir.Function:
    """bbuf <- B[p0:p0+kc, j0:j0+nc] (B[k,n] = b[k*rs + n*cs]) as NR-column panels, zero
    padded; panel j starts at j * kc."""
    NR, w = t.nr, t.width

    def build(b, src, rs, cs, bbuf, p0, kc, j0, nc):
        nfull = b.mul(b.udiv(nc, i64(NR)), i64(NR))
        contiguous = b.icmp_signed("==", cs, i64(1))
        with for_range(b, 0, nfull, NR, name="pb") as j:
            dst = gep(b, bbuf, b.mul(j, kc))
            with b.if_else(contiguous) as (then, other):
                with then:
                    with for_range(b, 0, kc, name="pbk") as k:
                        s = b.add(b.mul(b.add(p0, k), rs), b.add(j0, j))
                        d = b.mul(k, i64(NR))
                        for v in range(t.nv):
                            o = i64(w * v)
                            vstore(b, vload(b, src, b.add(s, o), w), dst, b.add(d, o))
                with other:
                    with for_range(b, 0, NR, name="pbj") as jj:
                        colo = b.mul(b.add(j0, b.add(j, jj)), cs)
                        with for_range(b, 0, kc, name="pbk2") as k:
                            v = load(b, src, b.add(b.mul(b.add(p0, k), rs), colo))
                            store(b, v, dst, b.add(b.mul(k, i64(NR)), jj))
        rem = b.sub(nc, nfull)
        with b.if_then(b.icmp_signed(">", rem, i64(0))):
            dst = gep(b, bbuf, b.mul(nfull, kc))
            with for_range(b, 0, kc, name="pbt") as k:
                with for_range(b, 0, NR, name="pbtj") as jj:
                    inside = b.icmp_signed("<", jj, rem)
                    colo = b.mul(b.add(j0, b.add(nfull, imin(b, jj, b.sub(rem, i64(1))))), cs)
                    v = load(b, src, b.add(b.mul(b.add(p0, k), rs), colo))
                    store(
                        b, b.select(inside, v, const(F32, 0.0)), dst, b.add(b.mul(k, i64(NR)), jj)
                    )

    return _shared(llmod, "relay.sgemm.pack_b", [F32P, I64, I64, F32P, I64, I64, I64, I64], build)


STORE_FN_T = ir.FunctionType(VOID, [I8P, F32P, I64, I64, I64, I64, I1, I1])

# The driver's parameters, in order.
_DRIVER_ARGS = [
    ("a", F32P),
    ("a_rs", I64),
    ("a_cs", I64),
    ("a_kind", I32),
    ("b", F32P),
    ("b_rs", I64),
    ("b_cs", I64),
    ("b_kind", I32),
    ("m0", I64),
    ("m1", I64),
    ("n0", I64),
    ("n1", I64),
    ("K", I64),
    ("kcb", I64),
    ("abuf", F32P),
    ("bbuf", F32P),
    ("store", STORE_FN_T.as_pointer()),
    ("ctx", I8P),
]


def _driver_fn(llmod, t: Tile) -> ir.Function:
    """The blocked loops (jc, pc, ic, jr, ir) calling packers, microkernels and `store`.

    a_kind: A_RAW (a_rs, a_cs strides), A_PACKED (pack_a_panels over K) or A_ROWS (rows of
    stride a_rs, columns contiguous: read in place by the microkernel, never packed).
    b_kind: B_RAW (b_rs, b_cs), B_PACKED (pack_b_panels over K) or B_STRIDED (row stride b_rs).
    """

    def build(
        b,
        a,
        a_rs,
        a_cs,
        a_kind,
        bp,
        b_rs,
        b_cs,
        b_kind,
        m0,
        m1,
        n0,
        n1,
        K,
        kcb,
        abuf,
        bbuf,
        store_fn,
        ctx,
    ):
        MR, NR, MC = t.mr, t.nr, t.mc
        pack_a, pack_b = pack_a_fn(llmod, t), _pack_b_fn(llmod, t)
        ukrs = [_ukr_fn(llmod, t, r) for r in range(1, MR + 1)]
        ukrs_rows = [_ukr_rows_fn(llmod, t, r) for r in range(1, MR + 1)]
        tile = entry_alloca(b, F32, MR * NR, name="tile")
        a_raw = b.icmp_signed("==", a_kind, i32(A_RAW))
        a_rows = b.icmp_signed("==", a_kind, i32(A_ROWS))
        b_raw = b.icmp_signed("==", b_kind, i32(B_RAW))
        b_packed = b.icmp_signed("==", b_kind, i32(B_PACKED))
        with for_range(b, n0, n1, NC, name="jc") as jc:
            nc = imin(b, i64(NC), b.sub(n1, jc))
            with for_range(b, 0, K, kcb, name="pc") as pc:
                kc = imin(b, kcb, b.sub(K, pc))
                first = b.icmp_signed("==", pc, i64(0))
                last = b.icmp_signed("==", b.add(pc, kc), K)
                with b.if_then(b_raw):
                    b.call(pack_b, [bp, b_rs, b_cs, bbuf, pc, kc, jc, nc])
                with for_range(b, m0, m1, MC, name="ic") as ic:
                    mc = imin(b, i64(MC), b.sub(m1, ic))
                    with b.if_then(a_raw):
                        b.call(pack_a, [a, a_rs, a_cs, abuf, ic, mc, pc, kc])
                    with for_range(b, 0, nc, NR, name="jr") as jr:
                        nv = imin(b, i64(NR), b.sub(nc, jr))
                        col = b.add(jc, jr)
                        # B panel: thread buffer / prepacked panels / strided rows
                        p_raw = gep(b, bbuf, b.mul(jr, kc))
                        p_pk = gep(b, bp, b.add(b.mul(col, K), b.mul(pc, i64(NR))))
                        p_st = gep(b, bp, b.add(b.mul(pc, b_rs), col))
                        bpan = b.select(b_raw, p_raw, b.select(b_packed, p_pk, p_st))
                        ldb = b.select(b.or_(b_raw, b_packed), i64(NR), b_rs)
                        with for_range(b, 0, mc, MR, name="ir") as ir_:
                            mr = imin(b, i64(MR), b.sub(mc, ir_))
                            row = b.add(ic, ir_)
                            # A panel: thread buffer / prepacked (row * K + pc * mr)
                            ap = b.select(
                                a_raw,
                                gep(b, abuf, b.mul(ir_, kc)),
                                gep(b, a, b.add(b.mul(row, K), b.mul(pc, mr))),
                            )
                            with b.if_else(a_rows) as (in_place, panels):
                                with in_place:
                                    ar = gep(b, a, b.add(b.mul(row, a_rs), pc))
                                    _call_ukr(b, ukrs_rows, mr, [kc, ar, a_rs, bpan, ldb, tile])
                                with panels:
                                    _call_ukr(b, ukrs, mr, [kc, ap, bpan, ldb, tile])
                            b.call(store_fn, [ctx, tile, row, col, mr, nv, first, last])

    return _shared(llmod, "relay.sgemm.block", [t for _, t in _DRIVER_ARGS], build)


def _call_ukr(b, ukrs, mr, args):
    MR = len(ukrs)
    end = b.append_basic_block("mr.end")
    blocks = [b.append_basic_block(f"mr{r}") for r in range(1, MR + 1)]
    sw = b.switch(mr, blocks[-1])
    for r in range(1, MR):
        sw.add_case(i64(r), blocks[r - 1])
    for r, blk in enumerate(blocks, 1):
        b.position_at_end(blk)
        b.call(ukrs[r - 1], args)
        b.branch(end)
    b.position_at_end(end)


# ---------------------------------------------------------------------------------------------
# Per-kernel pieces.


def store_function(
    llmod: ir.Module,
    name: str,
    ctx_types: list,
    c_of: Callable,
    ep: Epi | None = None,
    index_fn: Callable | None = None,
    extras_of: Callable | None = None,
    vector_ok: bool = True,
    col_major: bool = False,
) -> ir.Function:
    """A store function for gemm_call: C[m:m+mr, n:n+nv] = (first ? 0 : C) + tile, then the
    epilogue when `last`. col_major: C[m, n] is at C + n * ldc + m (a transposed output).

    ctx_types: the fields of the context struct gemm_call passes; c_of(b, fields) -> (C, ldc);
    index_fn(b, fields, m, n) -> the output's indices of C[m, n]; extras_of(b, fields) -> the
    epilogue's extra pointers. vector_ok=False when no row of C holds NR consecutive elements
    of the output's last axis (then everything is stored with scalars). Vectors given to the
    epilogue are <8 x float> whatever the tile's width.
    """
    NR = gemm_tile().nr
    st = ir.LiteralStructType(ctx_types)
    fn = ir.Function(llmod, STORE_FN_T, name=name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("optsize")  # keeps O3 from unrolling / vectorising the scalar edge loops
    fn.attributes.add("minsize")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx, tile, m, n, mr, nv, first, last = fn.args
    sp = b.bitcast(ctx, st.as_pointer())
    fields = [b.load(b.gep(sp, [i32(0), i32(k)])) for k in range(len(ctx_types))]
    cptr, ldc = c_of(b, fields)
    ldc = as_i64(b, ldc)
    ep = ep if ep else None
    extras = extras_of(b, fields) if (ep is not None and extras_of) else []

    def put(val, off, mi, ni):
        if ep is None:
            return (vstore if isinstance(val.type, ir.VectorType) else store)(b, val, cptr, off)
        with b.if_else(last) as (lt, lf):
            with lt:
                v2 = ep(b, val, index_fn(b, fields, mi, ni), extras)
                (vstore if isinstance(val.type, ir.VectorType) else store)(b, v2, cptr, off)
            with lf:
                (vstore if isinstance(val.type, ir.VectorType) else store)(b, val, cptr, off)

    vector_ok = vector_ok and not col_major
    full = b.icmp_signed("==", nv, i64(NR)) if vector_ok else ir.Constant(I1, 0)
    with b.if_else(full) as (then, other):
        with then:
            if vector_ok:
                with for_range(b, 0, mr, name="si") as i:
                    mi = b.add(m, i)
                    row = b.mul(mi, ldc)
                    for v in range(NR // 8):
                        off = b.add(row, b.add(n, i64(8 * v)))
                        val = vload(b, tile, b.add(b.mul(i, i64(NR)), i64(8 * v)))
                        val = b.select(first, val, b.fadd(val, vload(b, cptr, off)))
                        put(val, off, mi, b.add(n, i64(8 * v)))
        with other:
            # a partial tile: whole 8-column vectors, then scalars
            n8 = b.and_(nv, i64(~7)) if vector_ok else i64(0)
            with for_range(b, 0, mr, name="ti") as i:
                mi = b.add(m, i)
                row = b.mul(mi, ldc)
                if vector_ok:
                    with for_range(b, 0, n8, 8, name="tv") as j:
                        off = b.add(row, b.add(n, j))
                        val = vload(b, tile, b.add(b.mul(i, i64(NR)), j))
                        val = b.select(first, val, b.fadd(val, vload(b, cptr, off)))
                        put(val, off, mi, b.add(n, j))
                with for_range(b, n8, nv, name="tj") as j:
                    if col_major:
                        off = b.add(b.mul(b.add(n, j), ldc), mi)
                    else:
                        off = b.add(row, b.add(n, j))
                    val = load(b, tile, b.add(b.mul(i, i64(NR)), j))
                    val = b.select(first, val, b.fadd(val, load(b, cptr, off)))
                    put(val, off, mi, b.add(n, j))
    b.ret_void()
    return fn


def plain_store_fn(llmod: ir.Module) -> ir.Function:
    """The shared store function without epilogue; its context is (float* C, i64 ldc)."""
    fn = llmod.globals.get("relay.sgemm.store_plain")
    if fn is not None:
        return fn
    return store_function(llmod, "relay.sgemm.store_plain", [F32P, I64], lambda b, f: (f[0], f[1]))


def transposed_store_fn(llmod: ir.Module) -> ir.Function:
    """Shared store without epilogue writing C[m, n] at C + n * ldc + m; context (C, ldc)."""
    fn = llmod.globals.get("relay.sgemm.store_t")
    if fn is not None:
        return fn
    return store_function(
        llmod, "relay.sgemm.store_t", [F32P, I64], lambda b, f: (f[0], f[1]), col_major=True
    )


def gemm_call(
    b: ir.IRBuilder,
    a,
    bsrc,
    K: int,
    m0,
    m1,
    n0,
    n1,
    store_fn,
    ctx_values,
    abuf=None,
    bbuf=None,
    kc_block: int = KC,
    a_in_place: bool = False,
) -> None:
    """Emit a call of the shared driver: C[m0:m1, n0:n1] = A @ B through `store_fn`, whose
    context struct holds `ctx_values`. m0 must be a multiple of MR for PackedA, n0 a multiple
    of NR for PackedB; abuf / bbuf are thread buffers (thread_buffers) for RawA / RawB.
    a_in_place: a RawA with contiguous rows (cs == 1) is read in place by the microkernel
    (A_ROWS), not packed (see a_in_place_pays)."""
    llmod = b.module
    driver = _driver_fn(llmod, gemm_tile())
    st = ir.LiteralStructType([v.type for v in ctx_values])
    slot = entry_alloca(b, st)
    for k, v in enumerate(ctx_values):
        b.store(v, b.gep(slot, [i32(0), i32(k)]))
    null = ir.Constant(F32P, None)
    if isinstance(a, RawA) and a_in_place:
        if not (isinstance(a.cs, int) and a.cs == 1):
            raise ValueError("a_in_place needs A's columns contiguous (cs == 1)")
        a_args = [a.ptr, as_i64(b, a.rs), i64(1), i32(A_ROWS)]
    elif isinstance(a, RawA):
        a_args = [a.ptr, as_i64(b, a.rs), as_i64(b, a.cs), i32(A_RAW)]
    else:
        a_args = [a.ptr, i64(0), i64(0), i32(A_PACKED)]
    if isinstance(bsrc, RawB):
        b_args = [bsrc.ptr, as_i64(b, bsrc.rs), as_i64(b, bsrc.cs), i32(B_RAW)]
    elif isinstance(bsrc, PackedB):
        b_args = [bsrc.ptr, i64(0), i64(0), i32(B_PACKED)]
    else:
        b_args = [bsrc.ptr, as_i64(b, bsrc.ld), i64(1), i32(B_STRIDED)]
    args = a_args + b_args + [as_i64(b, v) for v in (m0, m1, n0, n1)]
    args += [as_i64(b, K), i64(kc_block)]  # K: an int or a run-time i64
    args += [abuf if abuf is not None else null, bbuf if bbuf is not None else null]
    args += [store_fn, b.bitcast(slot, I8P)]
    b.call(driver, args)


def k_block(K: int, b_packed: bool) -> int:
    """The K block for a product of reduction length K (see KC_PACKED): K in equal blocks of
    at most KC_PACKED against packed B, KC against B packed at run time (its thread buffer
    holds a KC x NC block)."""
    if not (b_packed and WHOLE_K):
        return KC
    return -(-K // -(-K // KC_PACKED))


def buffer_sizes(a, bsrc, M: int, N: int, K: int, kc_block: int = KC) -> tuple[int, int]:
    """Floats needed per thread for packing A and B at run time, for a product of at most
    M x N x K (small products get small buffers)."""
    t = gemm_tile()
    mc = min(t.mc, -(-M // t.mr) * t.mr)
    kc = min(kc_block, K)
    nc = min(NC, -(-N // t.nr) * t.nr)
    return (mc * kc if isinstance(a, RawA) else 0), (kc * nc if isinstance(bsrc, RawB) else 0)


def thread_buffers(
    b: ir.IRBuilder,
    a,
    bsrc,
    M: int = 1 << 30,
    N: int = 1 << 30,
    K: int = 1 << 30,
    kc_block: int = KC,
):
    """malloc the per-thread packing buffers (None when not needed) for products of at most
    M x N x K; pair with free_buffers."""
    na, nb = buffer_sizes(a, bsrc, M, N, K, kc_block)
    abuf = b.bitcast(malloc(b, i64(4 * na)), F32P) if na else None
    bbuf = b.bitcast(malloc(b, i64(4 * nb)), F32P) if nb else None
    return abuf, bbuf


def free_buffers(b: ir.IRBuilder, *bufs) -> None:
    for p in bufs:
        if p is not None:
            free(b, p)


def choose_split(M: int, N: int) -> str:
    """Split a GEMM between threads along 'm' or 'n' (the side with more columns of work)."""
    return "n" if N >= M else "m"
