"""1x1 stride-1 unpadded channel-first convolution (pointwise, as in MobileNet / ResNet
bottlenecks) with constant weights, float32: per image Y[O, P] = W[O, C] @ X[C, P].

The work is cut into units of (image, block of output positions, block of output channels),
taken dynamically by the pool's threads. A unit packs its positions of X (every input channel)
into panels of 2 vectors' width in a per-thread buffer, once, and reuses them for all its
output channels: each tile of Y (`tile_rows`: 6 x 16 in 12 <8 x float> registers, with
AVX-512 up to 14 x 32 in <16 x float> ones) is accumulated over the whole reduction in
registers and stored straight into Y (no KC blocking, no tile buffer, no store callback; the
driver of gemm_core re-packed X for every shard and every KC block, which dominated when the
reduction is long and the plane small). The weights are packed at compile time into the tile's row
panels (gemm_core.pack_a_panels). The epilogue runs over the unit's rows afterwards, while
they are still in cache.

Stem convolutions (few input channels, a short reduction: 3x3 or 7x7 over RGB) take the same
path with the unit's im2col columns as B (rows of the unit's width, read in place), instead of
the gemm driver's KC-blocked tiles and per-tile store callback, which cost more than the 27-long
reduction itself.

With AVX-512, 1x1 convolutions on planes of a multiple of 16 positions (28x28, 56x56,
112x112, ...) take `_emit_wide` instead: no packing at all, each 32-position line of X is read
in place into two zmm registers and feeds a tile of 8-14 output channels (`wide_rows`), with a
software prefetch of the same rows one tile ahead. Packing had been a pass over X that stalled
on memory before any arithmetic. Tiles one vector wide (up to 28 channels x 16 positions) had
a broadcast per FMA, as many loads as the two load ports issue: 2 threads, aligned operands,
ResNet-50's 1x1 convolutions on 56x56 / 28x28 took 1.27-1.67x onnxruntime's time with them,
0.9-1.2x with two vectors (2026-12-04, Xeon Ice Lake).

Small planes (7x7 at batch 1: fewer positions than fill 16-wide tiles well) go to
conv_strips, which computes Y^T with positions as row tiles.
"""

from __future__ import annotations

import llvmlite.ir as ir

from . import conv_strips
from .gemm_core import gemm_tile, pack_a_panels
from .im2col import geom_args, im2col_cf_fn
from .llvm_util import (
    F32,
    F32P,
    I64,
    const,
    entry_alloca,
    fma,
    for_carry,
    for_range,
    free,
    gep,
    i64,
    imin,
    load,
    malloc,
    new_function,
    prefetch,
    splat,
    store,
    vector_width,
    vload,
    vstore,
)
from .parallel import clamp_threads, parallel

# The AVX2 tile of the packing kernel (its weights are packed for it here, whatever tile
# gemm_core uses); NR is also the wide kernel's vector of positions.
MR, NR = 6, 16
PACK_BUDGET = 64 * 1024  # bytes of packed X per unit (stays in L2 while all rows use it)
STEM_K = 160  # longest reduction of a stem convolution served here (3 x 7 x 7 = 147)
MIN_UNITS = 16  # units per call when the shape allows: several shards per thread
PF_DIST = 1  # tiles ahead that the wide kernel prefetches X
WIDE_VECS = 2  # zmm vectors per row of the wide kernel's tile


def tile_rows(O: int) -> tuple[int, int]:
    """(rows, vector width) of the packing kernel's tile for O output channels, whose rows are
    two vectors: up to 14 x 32 in zmm accumulators with AVX-512 (`wide_rows`; a 6 x 16 tile of
    ymm there ran at half the FMA throughput), 6 x 16 in ymm otherwise."""
    return (wide_rows(O, 2), 16) if vector_width() == 16 else (MR, 8)


def wide(win) -> bool:
    """Whether a 1x1 convolution takes the AVX-512 kernel that reads X in place
    (`_emit_wide`): its rows of X must start on cache lines (planes of a multiple of 16
    positions; 64-byte aligned buffers). Measured against the packing kernel (2 threads,
    interleaved, aligned buffers): 0.65-0.77 of its time on MobileNet's projections on
    56x56 / 112x112 planes at batch 8, 0.72-0.86 on ResNet's 56x56 / 28x28 ones; on 35x35
    planes (rows straddling cache lines) 1.14-1.27, so those keep the packing kernel."""
    return vector_width() == 16 and is_1x1(win) and win.P % NR == 0


def wide_rows(O: int, nvec: int = 1) -> int:
    """Output channels per tile of the AVX-512 kernel whose rows are nvec vectors: a divisor
    of O in lo..hi (no tail tile), O itself when smaller, else hi rows and a tail. One
    vector: 12..28 rows; more: 16 // nvec .. 28 // nvec rows (16-28 accumulators)."""
    hi = 28 // nvec
    lo = 12 if nvec == 1 else 16 // nvec
    if O <= hi:
        return O
    for d in range(hi, lo - 1, -1):
        if O % d == 0:
            return d
    return hi if nvec > 1 else 24


def is_1x1(win) -> bool:
    """1x1, stride 1, unpadded: X itself is the GEMM's B operand."""
    return (
        win.KK == 1
        and win.s == (1, 1, 1)
        and win.pb == (0, 0, 0)
        and win.pe == (0, 0, 0)
        and win.sp == win.osp
    )


def usable(win, G: int, Cg: int, Og: int, packed: bool, cl: bool) -> bool:
    """A channel-first convolution with constant weights that is 1x1 (stride 1, unpadded), or
    a stem: few input channels (<= 4) and a short reduction (Cg * window <= STEM_K), whose
    columns an im2col chunk per unit provides."""
    if not (packed and G == 1 and not cl):
        return False
    return is_1x1(win) or (Cg <= 4 and Cg * win.KK <= STEM_K)


def transposed(P: int, O: int) -> bool:
    """Few positions: Y^T = X^T W^T (conv_strips) wastes less of the tiles (positions
    become its row tiles, output channels column panels of the packed weights) than this
    kernel's 16-wide column tiles of positions."""
    mr = conv_strips.tile(gemm_tile().width, P)[0]
    col_waste = (-(-P // NR) * NR) / P
    row_waste = (-(-P // mr) * mr) / P
    return P < 128 and col_waste > row_waste + 0.1 and O >= NR


def blocking(N: int, O: int, K: int, P: int, mr: int, nr: int) -> tuple[int, int]:
    """(nr-column panels per unit, mr-row panels per unit)."""
    npan = -(-P // nr)
    nrp = -(-O // mr)
    # split the positions first (X is packed once per row block, so row blocks repeat packing)
    want = -(-MIN_UNITS // N)
    cbp = max(1, min(npan, PACK_BUDGET // (4 * nr * max(K, 1)), -(-npan // want)))
    ncb = -(-npan // cbp)
    cbp = -(-npan // ncb)
    nrb = max(1, min(nrp, -(-MIN_UNITS // (N * ncb))))
    rbp = -(-nrp // nrb)
    return cbp, rbp


def _ukr_fn(llmod: ir.Module, mr: int, w: int) -> ir.Function:
    """tile = A (K x mr, A[k, i] at a[k * lda + i]) @ B panel (K rows of 2 * w, stride ldb);
    stored as c[i * ldc + j] for j < nv (vectors when nv == 2 * w). w: 8 (AVX2) or 16."""
    nr = 2 * w
    name = f"relay.pw.ukr{mr}w{w}"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    args = [I64, F32P, I64, F32P, I64, F32P, I64, I64]
    fn, b = new_function(llmod, name, args, internal=True)
    K, ap, lda, bp, ldb, cp, ldc, nv = fn.args
    sets = {1: 4, 2: 2, 3: 2}.get(mr, 1)  # independent accumulators against the FMA latency
    zero = const(ir.VectorType(F32, w), 0.0)

    def one(k, accs):
        bk = b.mul(k, ldb)
        b0 = vload(b, bp, bk, w)
        b1 = vload(b, bp, b.add(bk, i64(w)), w)
        ak = b.mul(k, lda)
        out = []
        for i in range(mr):
            av = splat(b, load(b, ap, b.add(ak, i64(i))), w)
            out.append(fma(b, av, b0, accs[2 * i]))
            out.append(fma(b, av, b1, accs[2 * i + 1]))
        return out

    def step(k, accs):
        n = 2 * mr
        out = []
        for s_ in range(sets):
            out += one(b.add(k, i64(s_)), accs[s_ * n : (s_ + 1) * n])
        return out

    main = b.mul(b.udiv(K, i64(sets)), i64(sets)) if sets > 1 else K
    accs = for_carry(b, 0, main, [zero] * (2 * mr * sets), step, step=sets, name="kk")
    if sets > 1:
        accs = list(for_carry(b, main, K, accs[: 2 * mr], one, name="kt")) + list(accs[2 * mr :])
        total = accs[: 2 * mr]
        for s_ in range(1, sets):
            total = [b.fadd(x, y) for x, y in zip(total, accs[s_ * 2 * mr : (s_ + 1) * 2 * mr])]
        accs = total
    tile = entry_alloca(b, F32, mr * nr, name="tile")
    with b.if_else(b.icmp_signed("==", nv, i64(nr))) as (full, part):
        with full:
            for j, v in enumerate(accs):
                vstore(b, v, cp, b.add(b.mul(i64(j // 2), ldc), i64(w * (j % 2))))
        with part:
            for j, v in enumerate(accs):
                vstore(b, v, tile, (j // 2) * nr + w * (j % 2))
            for i in range(mr):
                with for_range(b, 0, nv, name=f"t{i}") as q:
                    store(b, load(b, tile, b.add(i64(i * nr), q)), cp, b.add(b.mul(i64(i), ldc), q))
    b.ret_void()
    return fn


def _wide_fn(llmod: ir.Module, mr: int, nvec: int = 1) -> ir.Function:
    """tile = A (K x mr, A[k, i] at a[k * mr + i]) @ X (K rows of 16 * nvec positions read in
    place at stride ldb), in mr * nvec <16 x float> accumulators, stored as
    c[i * ldc : i * ldc + 16 * nvec]. Prefetches the same rows PF_DIST tiles ahead: K rows are
    too many streams for the hardware prefetchers."""
    name = f"relay.pw.w{mr}" if nvec == 1 else f"relay.pw.w{mr}x{nvec}"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    args = [I64, F32P, F32P, I64, F32P, I64]
    fn, b = new_function(llmod, name, args, internal=True)
    K, ap, bp, ldb, cp, ldc = fn.args
    zero = const(ir.VectorType(F32, 16), 0.0)
    n = mr * nvec

    def one(k, accs):
        bk = b.mul(k, ldb)
        bv = [vload(b, bp, b.add(bk, i64(NR * v)), 16) for v in range(nvec)]
        for v in range(nvec):
            prefetch(b, bp, b.add(bk, i64(NR * (v + nvec * PF_DIST))), 2)
        ak = b.mul(k, i64(mr))
        out = []
        for i in range(mr):
            av = splat(b, load(b, ap, b.add(ak, i64(i))), 16)
            out += [fma(b, av, bv[v], accs[nvec * i + v]) for v in range(nvec)]
        return out

    if n >= 8:
        accs = for_carry(b, 0, K, [zero] * n, one, name="kk")
    else:  # two sets of accumulators against the FMA latency

        def two(k, accs):
            return one(k, accs[:n]) + one(b.add(k, i64(1)), accs[n:])

        main = b.mul(b.udiv(K, i64(2)), i64(2))
        accs = for_carry(b, 0, main, [zero] * (2 * n), two, step=2, name="kk")
        accs = list(for_carry(b, main, K, accs[:n], one, name="kt")) + list(accs[n:])
        accs = [b.fadd(x, y) for x, y in zip(accs[:n], accs[n:])]
    for j, v in enumerate(accs):
        vstore(b, v, cp, b.add(b.mul(i64(j // nvec), ldc), i64(NR * (j % nvec))))
    b.ret_void()
    return fn


def _unit(b, u, ncb: int, nrb: int):
    """(image, column block, row block) of work unit u: units run image-major, then column
    blocks, then row blocks."""
    return (
        b.udiv(u, i64(ncb * nrb)),
        b.urem(b.udiv(u, i64(nrb)), i64(ncb)),
        b.urem(u, i64(nrb)),
    )


def _pack_x(b, x, buf, n, p0, pc, K, P, nr: int):
    """buf[j][k][0:nr] = X[n, k, p0 + nr j : p0 + nr j + nr], zero padded past pc positions;
    read row by row (contiguous)."""
    nfull = b.udiv(pc, i64(nr))
    tail = b.urem(pc, i64(nr))
    xn = gep(b, x, b.add(b.mul(n, i64(K * P)), p0))
    with for_range(b, 0, K, name="pk") as k:
        src = gep(b, xn, b.mul(k, i64(P)))
        with for_range(b, 0, nfull, name="pj") as j:
            s = b.mul(j, i64(nr))
            d = b.add(b.mul(j, i64(K * nr)), b.mul(k, i64(nr)))
            for v in range(0, nr, 8):
                vstore(b, vload(b, src, b.add(s, i64(v))), buf, b.add(d, i64(v)))
        with b.if_then(b.icmp_signed(">", tail, i64(0))):
            s = b.mul(nfull, i64(nr))
            d = b.add(b.mul(nfull, i64(K * nr)), b.mul(k, i64(nr)))
            with for_range(b, 0, nr, name="pt") as q:
                ok = b.icmp_signed("<", q, tail)
                v = load(b, src, b.add(s, imin(b, q, b.sub(tail, i64(1)))))
                store(b, b.select(ok, v, const(F32, 0.0)), buf, b.add(d, q))


def emit(kf, win, O: int, Cg: int):
    """Emit the body of kf (x, packed w, y[, extras]) for Cg input channels; returns the weight
    prepack."""
    from .conv import _epilogue_chunk

    N, P = win.N, win.P
    stem = not is_1x1(win)
    K = Cg * win.KK
    if not stem and transposed(P, O):
        return conv_strips.emit(kf, win, O, K)
    if not stem and wide(win):
        return _emit_wide(kf, win, O, K)
    mr, w = tile_rows(O)
    nr = 2 * w
    cbp, rbp = blocking(N, O, K, P, mr, nr)
    CB, RB = cbp * nr, rbp * mr
    ncb, nrb = -(-P // CB), -(-O // RB)
    units = N * ncb * nrb
    O6 = O // mr * mr
    ukr = _ukr_fn(kf.b.module, mr, w)
    ukr_tail = _ukr_fn(kf.b.module, O - O6, w) if O6 < O else None
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * N * O * P * K, units)
    OW = win.osp[2]
    ys = kf.ys or O * P  # elements between output images
    ldb = i64(CB if stem else nr)  # B panels: im2col rows of CB, or packed panels of nr

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        buf = b.bitcast(malloc(b, i64(4 * K * CB)), F32P)
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="unit") as u:
            n, cb, rb = _unit(b, u, ncb, nrb)
            p0 = b.mul(cb, i64(CB))
            pc = imin(b, i64(CB), b.sub(i64(P), p0))
            yn = gep(b, y, b.add(b.mul(n, i64(ys)), p0))
            if stem:  # the unit's im2col columns, rows of CB floats (zero padded past pc)
                xg = gep(b, x, b.mul(n, i64(win.C * win.IP)))
                geo = geom_args(win, Cg)
                b.call(im2col_cf_fn(b.module), [xg, buf, i64(CB), p0, pc, *geo])
            else:
                _pack_x(b, x, buf, n, p0, pc, K, P, nr)
            r0 = b.mul(rb, i64(RB))
            r1 = imin(b, b.add(r0, i64(RB)), i64(O))
            r1f = imin(b, r1, i64(O6))
            npan = b.udiv(b.add(pc, i64(nr - 1)), i64(nr))

            def row_panel(fn, r, rows):  # mr (or fewer) output channels x the positions
                with for_range(b, 0, npan, name="jp") as j:
                    col = b.mul(j, i64(nr))
                    nv = imin(b, i64(nr), b.sub(pc, col))
                    bpan = gep(b, buf, b.mul(j, i64(nr if stem else K * nr)))
                    args = [i64(K), gep(b, wp, b.mul(r, i64(K))), i64(rows), bpan, ldb]
                    b.call(fn, args + [gep(b, yn, b.add(b.mul(r, i64(P)), col)), i64(P), nv])

            # rows outer: each row panel's stores stream along its rows (columns outer would
            # touch every row of the block, a page each, per column panel: DTLB misses)
            with for_range(b, r0, r1f, mr, name="ip") as r:
                row_panel(ukr, r, mr)
            if ukr_tail is not None:
                with b.if_then(b.icmp_signed(">", r1, i64(O6))):
                    row_panel(ukr_tail, i64(O6), O - O6)
            if kf.ep:
                _epilogue_chunk(b, kf.ep, extras, y, win, O, n, i64(0), r0, r1, p0, pc, OW, ys)
        sh.end(b)
        free(b, buf)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [kf.ins[1]] + kf.outs + kf.extras, nt, body)

    def prepack(wc):
        return pack_a_panels(wc.reshape(O, K), mr)

    return prepack


def _wide_tiles(b, ukrs, wp, K: int, row, src, ldb: int, yn, P: int, pc) -> None:
    """One tile of output channels from `row` (weights packed in tiles of K x mr) over pc
    positions (a multiple of 16): tiles of 16 * WIDE_VECS positions, then one of 16 if left;
    B read in place from src (rows ldb apart), Y rows P apart. ukrs: (wide, 16-wide)."""
    W = NR * WIDE_VECS
    wr = gep(b, wp, b.mul(row, i64(K)))
    yr = gep(b, yn, b.mul(row, i64(P)))
    nfull = b.udiv(pc, i64(W))
    with for_range(b, 0, nfull, name="jp") as j:
        col = b.mul(j, i64(W))
        b.call(ukrs[0], [i64(K), wr, gep(b, src, col), i64(ldb), gep(b, yr, col), i64(P)])
    if WIDE_VECS > 1:
        col = b.mul(nfull, i64(W))
        with for_range(b, col, pc, NR, name="jt") as c:
            b.call(ukrs[1], [i64(K), wr, gep(b, src, c), i64(ldb), gep(b, yr, c), i64(P)])


def _emit_wide(kf, win, O: int, K: int):
    """AVX-512, planes of a multiple of 16 positions: X read in place (no packing), tiles of
    mr output channels x 16 * WIDE_VECS positions in zmm accumulators (`wide_rows`). Units
    as in `emit`; the unit's X (K x CB) stays in L2 for its row tiles."""
    from .conv import _epilogue_chunk

    N, P = win.N, win.P
    mr = wide_rows(O, WIDE_VECS)
    W = NR * WIDE_VECS
    cbp, rbp = blocking(N, O, K, P, mr, W)
    CB, RB = cbp * W, rbp * mr
    ncb, nrb = -(-P // CB), -(-O // RB)
    units = N * ncb * nrb
    Om = O // mr * mr
    llmod = kf.b.module
    ukrs = (_wide_fn(llmod, mr, WIDE_VECS), _wide_fn(llmod, mr))
    tail = (_wide_fn(llmod, O - Om, WIDE_VECS), _wide_fn(llmod, O - Om)) if Om < O else None
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * N * O * P * K, units)
    OW = win.osp[2]
    ys = kf.ys or O * P  # elements between output images

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="unit") as u:
            n, cb, rb = _unit(b, u, ncb, nrb)
            p0 = b.mul(cb, i64(CB))
            pc = imin(b, i64(CB), b.sub(i64(P), p0))
            xn = gep(b, x, b.add(b.mul(n, i64(K * P)), p0))
            yn = gep(b, y, b.add(b.mul(n, i64(ys)), p0))
            r0 = b.mul(rb, i64(RB))
            r1 = imin(b, b.add(r0, i64(RB)), i64(O))
            r1f = imin(b, r1, i64(Om))
            with for_range(b, r0, r1f, mr, name="ip") as r:
                _wide_tiles(b, ukrs, wp, K, r, xn, P, yn, P, pc)
            if tail is not None:
                with b.if_then(b.icmp_signed(">", r1, i64(Om))):
                    _wide_tiles(b, tail, wp, K, i64(Om), xn, P, yn, P, pc)
            if kf.ep:
                _epilogue_chunk(b, kf.ep, extras, y, win, O, n, i64(0), r0, r1, p0, pc, OW, ys)
        sh.end(b)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [kf.ins[1]] + kf.outs + kf.extras, nt, body)

    def prepack(wc):
        return pack_a_panels(wc.reshape(O, K), mr)

    return prepack
