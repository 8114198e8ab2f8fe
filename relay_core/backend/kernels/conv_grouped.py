"""Grouped convolutions (RegNet / ResNeXt: groups of 2-64 input channels), computed directly
from a zero-padded copy of the group's input rows instead of im2col.

A work unit is (image, group, band of output rows). It copies the band's input rows of the
group's Cg channels into a per-thread buffer, zero padded, and split into stride phases (for
stride 2: even / odd rows x even / odd columns), rows of Wph = OW + (KW - 1) * dw // sw floats.
Outputs are then computed on a grid of the same width: grid position q = row * Wph + col reads,
for tap (kh, kw) of channel c, buffer element q + off(c, kh, kw), a constant offset. So every
tap of 16 consecutive grid positions is one unaligned zmm load, and a tile of mr output
channels x 16 positions is mr zmm accumulators fed by Cg * KH * KW loads (`_tile_fn`, the taps
unrolled with their offsets built in; with AVX2 two ymm loads per tap and 3-6 rows of two
ymm accumulators, `tile_rows`). The tiles go to a second per-thread buffer on the grid; the
valid columns (col < OW) are copied out to Y, then the epilogue runs over them.

Against the im2col paths it replaces (the group's im2col columns read in place by the same
zmm tiles on planes of a multiple of 16 positions, im2col + gemm_core on the others), the copy
is KH * KW / stride^2 times smaller than the im2col columns, and any plane size takes it. The
cost is the grid's extra columns: (KW - 1) * dw // sw per output row (2 of 58 on 56x56, 2 of 16
on 14x14, 2 of 9 on 7x7). Single thread, RegNetY's 3x3 groups of 16 at batch 4: 0.25-0.65 of
the in-place im2col kernel's time at stride 1, 0.78-0.89 at stride 2; 0.29-0.36 of im2col +
gemm_core on 14x14 and 7x7 planes. AVX2 (Zen 3, 2 threads, in the model): RegNetY-400MF's
groups of 8 at 79-83 GFLOP/s (17-47 with im2col), RegNetX-1.6GF's groups of 24 at 118-131.
"""

from __future__ import annotations

import llvmlite.ir as ir

from .conv_depthwise import split_row
from .conv_pointwise import wide_rows
from .gemm_core import pack_a_panels
from .llvm_util import (
    F32,
    F32P,
    I64,
    const,
    fma,
    for_carry,
    for_range,
    free,
    gep,
    i64,
    imin,
    load,
    malloc,
    memcpy,
    memset0,
    new_function,
    prefetch,
    splat,
    vector_width,
    vload,
    vstore,
)
from .parallel import clamp_threads, parallel

NR = 16  # grid positions per tile (one zmm, two ymm)
BUF_BUDGET = 96 * 1024  # bytes of the band's padded input copy (stays in L2 for all its tiles)
MIN_UNITS = 16  # units per call when the shape allows


def tile_rows(Og: int) -> int | None:
    """Output channels per tile (mr), a divisor of the group's Og, or None. The tile is mr x 16
    grid positions: one zmm per row with AVX-512 (`wide_rows`: 12-28 rows); two ymm per row
    with AVX2 (3-6 rows: 2 * mr of its 16 registers accumulate, two hold the loads)."""
    if vector_width() == 16:
        mr = wide_rows(Og)
        return mr if Og % mr == 0 else None
    if Og <= 6:
        return Og
    return next((d for d in (6, 5, 4, 3) if Og % d == 0), None)


def usable(win, G: int, Cg: int, Og: int, packed: bool, cl: bool) -> bool:
    """Constant weights, channel-first 1-D / 2-D, and a group's output channels a whole number
    of tiles."""
    return (
        G > 1
        and Cg > 1
        and packed
        and not cl
        and win.nd <= 2
        and win.k[0] == 1
        and win.sp[0] == 1
        and tile_rows(Og) is not None
    )


class _Geo:
    """The band buffer's geometry for `band` output rows per unit."""

    def __init__(self, win, Cg: int, band: int):
        _, sh, sw = win.s
        _, dh, dw = win.d
        _, KH, KW = win.k
        self.sh, self.sw = sh, sw
        self.band = band
        self.halo = (KH - 1) * dh // sh
        self.R = band + self.halo  # rows of each phase plane
        # grid (and phase plane) width: the outputs' taps, and every input column (split_row
        # writes them all)
        self.Wph = max(win.osp[2] + (KW - 1) * dw // sw, -(-(win.sp[2] + win.pb[2]) // sw))
        self.PS = self.R * self.Wph  # floats per phase plane
        self.CS = sh * sw * self.PS  # floats per channel
        self.taps = [
            (((kh * dh) % sh) * sw + (kw * dw) % sw) * self.PS
            + (kh * dh // sh) * self.Wph
            + kw * dw // sw
            for kh in range(KH)
            for kw in range(KW)
        ]
        self.npan = -(-band * self.Wph // NR)  # 16-position tiles of the band's grid
        self.ldc = self.npan * NR
        # the last tile reads up to NR - 1 + max column tap past the last plane
        self.size = Cg * self.CS + NR + (KW - 1) * dw // sw


def bands(win, G: int, Cg: int) -> int:
    """Output rows per unit: the padded copy within BUF_BUDGET, and MIN_UNITS units when the
    shape allows; rows split evenly between bands."""
    OH = win.osp[1]
    g1 = _Geo(win, Cg, 1)
    row = 4 * Cg * g1.sh * g1.sw * g1.Wph
    most = max(1, BUF_BUDGET // row - g1.halo)
    nb = max(-(-OH // most), min(OH, -(-MIN_UNITS // (win.N * G))))
    return -(-OH // nb)


def _tile_fn(llmod: ir.Module, mr: int, Cg: int, geo: _Geo) -> ir.Function:
    """tile(wp, bp, cp, ldc): mr output channels x 16 grid positions from bp (the band buffer at
    the tile's first position); weights packed K x mr (a[(c * KK + t) * mr + i]); stored as
    c[i * ldc : i * ldc + 16]."""
    KK = len(geo.taps)
    W = vector_width()
    nv = NR // W  # vectors per tile row
    sig = ".".join(str(v) for v in (mr, W, Cg, geo.CS, *geo.taps))
    name = f"relay.grp.t{sig}"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    fn, b = new_function(llmod, name, [F32P, F32P, F32P, I64], internal=True)
    wp, bp, cp, ldc = fn.args
    zero = const(ir.VectorType(F32, W), 0.0)
    n = mr * nv  # accumulators per set
    sets = 2 if n < 8 else 1  # independent accumulators against the FMA latency

    def chan(c, accs):
        base = b.mul(c, i64(geo.CS))
        wc = b.mul(c, i64(KK * mr))
        accs = list(accs)
        for t, off in enumerate(geo.taps):
            bvs = [vload(b, bp, b.add(base, i64(off + v * W)), W) for v in range(nv)]
            s = (t % sets) * n
            for i in range(mr):
                a = splat(b, load(b, wp, b.add(wc, i64(t * mr + i))), W)
                for v, bv in enumerate(bvs):
                    accs[s + i * nv + v] = fma(b, a, bv, accs[s + i * nv + v])
        return accs

    accs = for_carry(b, 0, Cg, [zero] * (n * sets), chan, name="c")
    if sets > 1:
        accs = [b.fadd(x, y) for x, y in zip(accs[:n], accs[n:])]
    for k, v in enumerate(accs):
        i, j = divmod(k, nv)
        vstore(b, v, cp, b.add(b.mul(i64(i), ldc), i64(j * W)))
    b.ret_void()
    return fn


def _copy_band(b, x, buf, win, Cg: int, geo: _Geo, oh0) -> None:
    """buf[c][phase][r][q] = padded X[c, (oh0 + r) * sh + ph, q * sw + pw] for the group's
    channels (x at the group's first plane). Columns outside the input are never written (zero
    since the buffer was cleared); rows outside it are cleared here (another band wrote them)."""
    H, W = win.sp[1], win.sp[2]
    sh, sw, Wph = geo.sh, geo.sw, geo.Wph
    with for_range(b, 0, Cg, name="bc") as c:
        xc = gep(b, x, b.mul(c, i64(H * W)))
        for ph in range(sh):
            phases = gep(b, buf, b.add(b.mul(c, i64(geo.CS)), i64(ph * sw * geo.PS)))
            with for_range(b, 0, geo.R, name="br") as r:
                ih = b.sub(b.add(b.mul(b.add(oh0, r), i64(sh)), i64(ph)), i64(win.pb[1]))
                prow = b.mul(r, i64(Wph))
                inside = b.and_(b.icmp_signed(">=", ih, i64(0)), b.icmp_signed("<", ih, i64(H)))
                with b.if_else(inside) as (yes, no):
                    with yes:
                        srow = gep(b, xc, b.mul(ih, i64(W)))
                        split_row(b, srow, phases, prow, W, win.pb[2], sw, geo.PS)
                        # the next band's row: 16 channels' short rows are too many streams
                        # for the hardware prefetchers (stride 2 from 112x112: 0.82 of the time)
                        nxt = gep(b, xc, b.mul(b.add(ih, i64(sh * geo.band)), i64(W)))
                        for q in range(0, W, NR):
                            prefetch(b, nxt, i64(q), 2)
                    with no:
                        for pw in range(sw):
                            memset0(b, gep(b, phases, b.add(prow, i64(pw * geo.PS))), 4 * Wph)


def emit(kf, win, G: int, O: int, Cg: int):
    """Emit the body of kf (x, packed w, y[, extras]); returns the weight prepack."""
    from .conv import _epilogue_chunk

    N = win.N
    Og = O // G
    KK = win.KK
    K = Cg * KK
    OH, OW = win.osp[1], win.osp[2]
    H, W = win.sp[1], win.sp[2]
    band = bands(win, G, Cg)
    nb = -(-OH // band)
    geo = _Geo(win, Cg, band)
    mr = tile_rows(Og)
    units = N * G * nb
    ukr = _tile_fn(kf.b.module, mr, Cg, geo)
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * N * O * win.P * K, units)

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        buf = b.bitcast(malloc(b, i64(4 * geo.size)), F32P)
        memset0(b, buf, 4 * geo.size)  # the slack past the last plane is read, never used
        ybuf = b.bitcast(malloc(b, i64(4 * Og * geo.ldc)), F32P)
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="unit") as u:
            n = b.udiv(u, i64(G * nb))
            g = b.urem(b.udiv(u, i64(nb)), i64(G))
            oh0 = b.mul(b.urem(u, i64(nb)), i64(band))
            rows = imin(b, i64(band), b.sub(i64(OH), oh0))
            xg = gep(b, x, b.mul(b.add(b.mul(n, i64(win.C)), b.mul(g, i64(Cg))), i64(H * W)))
            _copy_band(b, xg, buf, win, Cg, geo, oh0)
            c0 = b.mul(g, i64(Og))
            with for_range(b, 0, Og, mr, name="ip") as r:
                wr = gep(b, wp, b.mul(b.add(c0, r), i64(K)))
                yr = gep(b, ybuf, b.mul(r, i64(geo.ldc)))
                with for_range(b, 0, geo.npan, name="jp") as j:
                    col = b.mul(j, i64(NR))
                    b.call(ukr, [wr, gep(b, buf, col), gep(b, yr, col), i64(geo.ldc)])
            # valid columns out: row oi of channel i is ybuf[i * ldc + oi * Wph : ... + OW]
            with for_range(b, 0, Og, name="oc") as i:
                plane = b.add(b.mul(n, i64(O)), b.add(c0, i))
                yc = gep(b, y, b.add(b.mul(plane, i64(OH * OW)), b.mul(oh0, i64(OW))))
                src = gep(b, ybuf, b.mul(i, i64(geo.ldc)))
                with for_range(b, 0, rows, name="or") as oi:
                    memcpy(
                        b,
                        gep(b, yc, b.mul(oi, i64(OW))),
                        gep(b, src, b.mul(oi, i64(geo.Wph))),
                        4 * OW,
                    )
            if kf.ep:
                p0 = b.mul(oh0, i64(OW))
                pc = b.mul(rows, i64(OW))
                _epilogue_chunk(
                    b, kf.ep, extras, y, win, O, n, i64(0), c0, b.add(c0, i64(Og)), p0, pc, OW
                )
        sh.end(b)
        free(b, ybuf)
        free(b, buf)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [kf.ins[1]] + kf.outs + kf.extras, nt, body)

    def prepack(wc):
        return pack_a_panels(wc.reshape(O, K), mr)

    return prepack
