"""Depthwise convolution (groups == input channels, one input channel per group), float32.

Channel-first 2-D planes with output rows of <= 32 (stride 1 or 2, windows <= 7x7): _cf_rows,
each output row a few 16-lane (or 8-lane) vectors over column phases of a padded scratch.
Other channel-first planes with rows of >= 8 outputs: per (image, channel) plane, the plane is
copied into a zero-padded scratch plane, then each output row accumulates KD*KH*KW shifted input
rows scaled by one weight each (LLVM vectorises the row loops; stride-1 rows are contiguous).
Other channel-first rows of < 8 outputs (rows that would be all scalar tails) interleave 8
channels into a local blocked scratch and vectorise over the channels (multiplier 1).
Channel-last: per output position the taps accumulate whole channel vectors. Channel
multipliers (Og > 1) are supported.
"""

from __future__ import annotations

from contextlib import contextmanager

import llvmlite.ir as ir

from .common import KernelInfo, epilogue_plane, epilogue_row, kernel_function, shape_of
from .llvm_util import (
    F32,
    F32P,
    I32,
    V8F,
    clamp,
    const,
    fma,
    for_range,
    free,
    gep,
    i32,
    i64,
    imin,
    load,
    malloc,
    memcpy,
    memset0,
    splat,
    store,
    vload,
    vstore,
)
from .parallel import clamp_threads, parallel


def emit_depthwise(
    llmod, name, in_types, out_types, win, G, Og, kax, cl, epilogue=None, const_inputs=()
):
    from .conv import _runtime_permute, canonical_weight

    nd = win.nd
    packed = 1 in tuple(const_inputs)
    kf = kernel_function(llmod, name, in_types, out_types, epilogue)
    w, wbuf = kf.ins[1], None
    O = G * Og
    if cl:
        natural = (nd + 1, nd) + tuple(range(nd))
    else:
        natural = tuple(range(nd + 2))
    if not packed and tuple(kax) != natural:
        wbuf = _runtime_permute(kf, w, shape_of(in_types[1]), kax, nd, cl)
        w = wbuf
    if cl:
        _cl(kf, w, win, G, Og, O)
    elif _rows_usable(win, Og):
        _cf_rows(kf, w, win, G)
    elif _flat_usable(win, Og):
        _cf_flat(kf, w, win, G)
    elif Og == 1 and win.osp[2] < BLOCKED_OW and win.KK <= 49:
        _cf_blocked(kf, w, win, G)
    else:
        _cf(kf, w, win, G, Og, O)
    if wbuf is not None:
        free(kf.b, wbuf)
    kf.b.ret_void()
    if not packed:
        return KernelInfo(kf.fn)
    if cl:  # [tap][O]
        pre = lambda wv: canonical_weight(wv, kax).reshape(O, -1).T.copy()  # noqa: E731
    else:  # [O][tap]
        pre = lambda wv: canonical_weight(wv, kax).reshape(O, -1).copy()  # noqa: E731
    return KernelInfo(kf.fn, {1: pre})


BLOCKED_OW = 8  # channel-first rows narrower than this (no full vector) take the blocked path


def _cf_blocked(kf, w, win, G):
    """Channel-first, multiplier 1, narrow planes (rows of < 8 outputs would be all scalar
    tails): per (image, block of 8 channels), the 8 planes are interleaved into a zero-padded
    scratch [Dp][Hp][Wp][8] (a local NCHW8c block), every output position accumulates its taps
    as <8 x float> vectors over the 8 channels, and the block is written back plane by plane."""
    D, H, W = win.sp
    OD, OH, OW = win.osp
    KD, KH, KW = win.k
    Dp, Hp, Wp = (n + b_ + e for n, b_, e in zip(win.sp, win.pb, win.pe))
    KK = KD * KH * KW
    P = win.P
    nblk = -(-G // 8)
    units = win.N * nblk
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * win.N * G * P * KK, units)
    taps = [(kd, kh, kw) for kd in range(KD) for kh in range(KH) for kw in range(KW)]
    # an epilogue of (image, channel) only runs over whole planes (rows of < 8: all tails)
    invariant = kf.ep.invariant_from(2) if kf.ep else False

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        pad = b.bitcast(malloc(b, i64(4 * 8 * Dp * Hp * Wp)), F32P)
        memset0(b, pad, i64(4 * 8 * Dp * Hp * Wp))
        obuf = b.bitcast(malloc(b, i64(4 * 8 * P)), F32P)
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="u") as u:
            n = b.udiv(u, i64(nblk))
            c0 = b.mul(b.urem(u, i64(nblk)), i64(8))
            nc = imin(b, i64(8), b.sub(i64(G), c0))
            # interleave the block's planes (the border stays zero)
            with for_range(b, 0, nc, name="ci") as c:
                src = gep(b, x, b.mul(b.add(b.mul(n, i64(G)), b.add(c0, c)), i64(win.IP)))
                with for_range(b, 0, D * H, name="cr") as r:
                    dd, hh = b.udiv(r, i64(H)), b.urem(r, i64(H))
                    prow = b.add(
                        b.mul(b.add(dd, i64(win.pb[0])), i64(Hp)), b.add(hh, i64(win.pb[1]))
                    )
                    prow = b.add(b.mul(prow, i64(Wp)), i64(win.pb[2]))
                    with for_range(b, 0, W, name="cw") as j:
                        v = load(b, src, b.add(b.mul(r, i64(W)), j))
                        store(b, v, pad, b.add(b.mul(b.add(prow, j), i64(8)), c))
            # the weights of each tap for the 8 channels (lanes past G repeat the last channel)
            wvs = []
            for t in range(KK):
                vec = const(V8F, 0.0)
                for lane in range(8):
                    ch = imin(b, b.add(c0, i64(lane)), i64(G - 1))
                    vec = b.insert_element(
                        vec, load(b, wp, b.add(b.mul(ch, i64(KK)), i64(t))), i32(lane)
                    )
                wvs.append(vec)
            with for_range(b, 0, OD * OH, name="orow") as r:
                od, oh = b.udiv(r, i64(OH)), b.urem(r, i64(OH))
                rows = []
                for kd, kh, _ in taps[::KW]:
                    pd_ = b.add(b.mul(od, i64(win.s[0])), i64(kd * win.d[0]))
                    ph_ = b.add(b.mul(oh, i64(win.s[1])), i64(kh * win.d[1]))
                    rows.append(b.mul(b.add(b.mul(pd_, i64(Hp)), ph_), i64(Wp)))
                with for_range(b, 0, OW, name="ow") as q:
                    acc = const(V8F, 0.0)
                    t = 0
                    for prow in rows:
                        for kw in range(KW):
                            col = b.add(b.mul(q, i64(win.s[2])), i64(kw * win.d[2]))
                            xv = vload(b, pad, b.mul(b.add(prow, col), i64(8)))
                            acc = fma(b, wvs[t], xv, acc)
                            t += 1
                    vstore(b, acc, obuf, b.mul(b.add(b.mul(r, i64(OW)), q), i64(8)))
            # write back plane by plane, then the epilogue on each output row
            with for_range(b, 0, nc, name="co") as c:
                o = b.add(c0, c)
                plane = gep(b, y, b.mul(b.add(b.mul(n, i64(G)), o), i64(P)))
                with for_range(b, 0, P, name="cp") as p_:
                    store(b, load(b, obuf, b.add(b.mul(p_, i64(8)), c)), plane, p_)
                if kf.ep and invariant:
                    epilogue_plane(b, kf.ep, extras, plane, P, [n, o], win.nd)
                elif kf.ep:
                    with for_range(b, 0, OD * OH, name="er") as r:
                        yrow = gep(b, plane, b.mul(r, i64(OW)))
                        sp = {1: [], 2: [r], 3: [b.udiv(r, i64(OH)), b.urem(r, i64(OH))]}[win.nd]
                        epilogue_row(b, kf.ep, extras, yrow, OW, [n, o, *sp], 0)
        sh.end(b)
        free(b, pad)
        free(b, obuf)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)


# Benchmarks and tests only: "rows" / "legacy" force the choice between _cf_rows and the older
# channel-first paths (_cf_flat, _cf_blocked, _cf). None: the _rows_usable rule.
FORCE: str | None = None


# wider output rows keep _cf (measured: equal at 112). 32 before the stride-2 copy was
# vectorised; at 56 the row path then took 0.72-0.91 of _cf's time (3x3, stride 1 and 2, 32 to
# 144 channels, batch 1 and 8)
ROWS_MAX_OW = 56


def _rows_usable(win, Og) -> bool:
    """2-D, multiplier 1, equal strides of 1 or 2, undilated, windows of <= 7x7, output rows of
    <= ROWS_MAX_OW."""
    if FORCE == "legacy":
        return False
    return (
        (FORCE == "rows" or win.osp[2] <= ROWS_MAX_OW)
        and win.nd == 2
        and Og == 1
        and win.s[1] == win.s[2]
        and win.s[2] in (1, 2)
        and win.d == (1, 1, 1)
        and win.k[1] <= 7
        and win.k[2] <= 7
        and min(win.pb + win.pe) >= 0
    )


@contextmanager
def _plane_units(b, sh, x, win, G, pad_n: int, scratch_n: int = 0):
    """The per-thread frame of the channel-first paths: a zeroed scratch plane of pad_n floats
    (its border stays zero: only the interior is rewritten per plane), an optional scratch of
    scratch_n floats, and the loop over this thread's (image, channel) units. Yields
    (u, n, c, src plane, pad, scratch)."""
    pad = b.bitcast(malloc(b, i64(4 * pad_n)), F32P)
    memset0(b, pad, i64(4 * pad_n))
    scratch = b.bitcast(malloc(b, i64(4 * scratch_n)), F32P) if scratch_n else None
    u0, u1 = sh.range(b, win.N * G)
    with for_range(b, u0, u1, name="u") as u:
        n = b.udiv(u, i64(G))
        c = b.urem(u, i64(G))
        yield u, n, c, gep(b, x, b.mul(u, i64(win.IP))), pad, scratch
    sh.end(b)
    free(b, pad)
    if scratch is not None:
        free(b, scratch)


def _row_vector(OW: int) -> int:
    """Lanes per vector of an output row: 16 (one zmm with AVX-512) when it wastes no more
    lanes than 8 would (14, 28, 112: yes; 7, 56: no)."""
    return 16 if -(-OW // 16) * 16 == -(-OW // 8) * 8 else 8


def _cf_rows(kf, w, win, G):
    """Channel-first, multiplier 1, stride s in (1, 2): per (image, channel) plane, the input is
    copied into a zero-padded scratch split into s column phases (phase p holds the padded
    columns p, p + s, ...), so that each tap of an output row is one contiguous vector load:
    output (oh, ow) tap (kh, kw) reads phase kw % s, row s*oh + kh, column ow + kw // s. Every
    output row is computed as ceil(OW / V) vectors (unrolled; taps unrolled, weights held as
    splats) and stored whole: a vector running past its row writes into the next row, which is
    computed afterwards and overwrites it; only a store past the plane's end goes through a
    small tile. An epilogue of (image, channel) only runs as one vector loop over the plane
    afterwards, other epilogues over each row."""
    _, H, W = win.sp
    _, OH, OW = win.osp
    _, KH, KW = win.k
    s = win.s[2]
    P, KK = win.P, KH * KW
    V = _row_vector(OW)
    nblk = -(-OW // V)
    Hp = max(H + win.pb[1] + win.pe[1], s * (OH - 1) + KH)
    Wfull = max(W + win.pb[2] + win.pe[2], s * (OW - 1) + KW)
    Wq = -(-Wfull // s)  # columns per phase row
    PH = Hp * Wq  # floats per phase
    pad_n = s * PH + V  # + slack: the last row's last vector reads past the last phase
    units = win.N * G
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * units * P * KK, units)
    # an epilogue of (image, channel) only: one vector loop over the plane afterwards (applied
    # in registers before each row's store it cost more: its constants and the 25 weight
    # splats of a 5x5 window spill)
    invariant = bool(kf.ep) and kf.ep.invariant_from(2)

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        with _plane_units(b, sh, x, win, G, pad_n, V) as (u, n, c, src, pad, tile):
            # interior copy, split into column phases (the border stays zero: the interior is
            # the same for every plane)
            with for_range(b, 0, H, name="cr") as r:
                srow = gep(b, src, b.mul(r, i64(W)))
                prow = b.mul(b.add(r, i64(win.pb[1])), i64(Wq))
                split_row(b, srow, pad, prow, W, win.pb[2], s, PH)
            wo = gep(b, wp, b.mul(c, i64(KK)))
            wvs = [splat(b, load(b, wo, i64(t)), V) for t in range(KK)]
            plane = gep(b, y, b.mul(u, i64(P)))
            with for_range(b, 0, OH, name="oh") as r:
                rin = b.mul(r, i64(s * Wq))
                for jb in range(nblk):
                    acc = None
                    for kh in range(KH):
                        for kw in range(KW):
                            off = (kw % s) * PH + kh * Wq + jb * V + kw // s
                            xv = vload(b, pad, b.add(rin, i64(off)), V)
                            wv = wvs[kh * KW + kw]
                            acc = b.fmul(wv, xv) if acc is None else fma(b, wv, xv, acc)
                    start = b.add(b.mul(r, i64(OW)), i64(jb * V))
                    if jb < nblk - 1 or OW % V == 0:  # never past the plane's end
                        vstore(b, acc, plane, start)
                        continue
                    inside = b.icmp_signed("<=", b.add(start, i64(V)), i64(P))
                    with b.if_else(inside) as (fits, past):
                        with fits:
                            vstore(b, acc, plane, start)
                        with past:  # the plane's end: through the tile, this row's lanes only
                            vstore(b, acc, tile, i64(0))
                            cnt = min(V, OW - jb * V)
                            with for_range(b, 0, cnt, name="tl") as q:
                                store(b, load(b, tile, q), plane, b.add(start, q))
            if invariant:
                epilogue_plane(b, kf.ep, extras, plane, P, [n, c], 2)
            elif kf.ep:
                with for_range(b, 0, OH, name="er") as r:
                    yrow = gep(b, plane, b.mul(r, i64(OW)))
                    epilogue_row(b, kf.ep, extras, yrow, OW, [n, c, r], 0)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)


def split_row(b, srow, pad, prow, W: int, pb: int, s: int, PH: int) -> None:
    """Copy one input row of W floats into the s column phases of a zero-padded scratch: input
    column iw lands in phase (iw + pb) % s (phases PH floats apart) at column (iw + pb) // s of
    the row starting at pad[prow]; columns outside the input are not written. Stride 1 is a
    memcpy; stride 2 takes 32 floats per step as two 16-lane loads split into even and odd lanes
    (the scalar strided copy had cost more than the depthwise convolution's arithmetic), the
    last step overlapping the one before; other strides copy scalars."""
    if s == 1:
        memcpy(b, gep(b, pad, b.add(prow, i64(pb))), srow, 4 * W)
        return
    if s != 2:
        for ph in range(s):
            iw0 = (ph - pb) % s  # first input column landing in phase ph
            cnt = max(0, -(-(W - iw0) // s))
            if cnt == 0:
                continue
            dst = gep(b, pad, b.add(prow, i64(ph * PH + (iw0 + pb) // s)))
            with for_range(b, 0, cnt, name=f"cw{ph}") as m:
                store(b, load(b, srow, b.add(b.mul(m, i64(s)), i64(iw0))), dst, m)
        return
    # a step at an even input column t writes columns t / 2 + (0..15) of both phases
    de = b.add(prow, i64((pb % 2) * PH + pb // 2))
    do = b.add(prow, i64((1 - pb % 2) * PH + (pb + 1) // 2))
    masks = [ir.Constant(ir.VectorType(I32, 16), list(range(p, 32, 2))) for p in (0, 1)]

    def step(t):  # t: i64 value, even
        lo = vload(b, srow, t, 16)
        hi = vload(b, srow, b.add(t, i64(16)), 16)
        half = b.udiv(t, i64(2))
        for d, mask in zip((de, do), masks):
            vstore(b, b.shuffle_vector(lo, hi, mask), pad, b.add(d, half))

    with for_range(b, 0, W // 32, name="cq") as q:
        step(b.mul(q, i64(32)))
    done = W // 32 * 32
    if W >= 32 and W > done:  # the tail: one step overlapping the last, from an even column
        step(i64((W - 32) // 2 * 2))
        done = (W - 32) // 2 * 2 + 32
    for iw in range(done, W):  # what is left (< 32 columns, or 1), unrolled
        ph = (iw + pb) % 2
        store(b, load(b, srow, i64(iw)), pad, b.add(prow, i64(ph * PH + (iw + pb) // 2)))


FLAT_VEC = 16  # outputs per vector of the flat path (one zmm with AVX-512, two ymm otherwise)


def _flat_usable(win, Og) -> bool:
    """2-D, multiplier 1, stride 1, undilated, a window of <= 49 taps, rows that the row path
    would end with a scalar tail (widths that are not a multiple of 8)."""
    return (
        win.nd == 2
        and Og == 1
        and win.s == (1, 1, 1)
        and win.d == (1, 1, 1)
        and win.KK <= 49
        and win.osp[2] % 8 != 0
        and all(
            o + k - 1 <= n + b_ + e
            for o, k, n, b_, e in zip(win.osp, win.k, win.sp, win.pb, win.pe)
        )
    )


def _cf_flat(kf, w, win, G):
    """Channel-first, stride 1 (_flat_usable): per (image, channel) plane, the zero-padded
    plane [Hp][Wp] is a 1-D signal and output (oh, ow) is sum_t w_t * pad[oh*Wp + ow + kh*Wp +
    kw]: a 1-D convolution over the flat index q = oh*Wp + ow, computed FLAT_VEC outputs at a
    time over the whole plane (no per-row scalar tails; the Wp - OW columns past each row are
    computed and dropped). The rows are then compacted into the output and the epilogue runs
    over the plane (one vector loop when it depends on (image, channel) only)."""
    _, H, W = win.sp
    _, OH, OW = win.osp
    _, KH, KW = win.k
    Hp, Wp = OH + KH - 1, OW + KW - 1
    P, KK, V = win.P, win.KK, FLAT_VEC
    wide = -(-OH * Wp // V) * V
    # padded plane (+ slack: the last vector reads past the plane; it stays zero)
    pad_n = Hp * Wp + V
    units = win.N * G
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * units * P * KK, units)
    invariant = kf.ep.invariant_from(2) if kf.ep else False

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        with _plane_units(b, sh, x, win, G, pad_n, wide) as (u, n, c, src, pad, wbuf):
            with for_range(b, 0, H, name="cr") as r:
                dst = gep(b, pad, b.add(b.mul(b.add(r, i64(win.pb[1])), i64(Wp)), i64(win.pb[2])))
                memcpy(b, dst, gep(b, src, b.mul(r, i64(W))), i64(4 * W))
            wo = gep(b, wp, b.mul(c, i64(KK)))
            wvs = [splat(b, load(b, wo, i64(t)), V) for t in range(KK)]
            offs = [kh * Wp + kw for kh in range(KH) for kw in range(KW)]
            with for_range(b, 0, wide, V, name="q") as q:
                acc = None
                for t, off in enumerate(offs):
                    xv = vload(b, pad, b.add(q, i64(off)), V)
                    acc = b.fmul(wvs[t], xv) if acc is None else fma(b, wvs[t], xv, acc)
                vstore(b, acc, wbuf, q)
            plane = gep(b, y, b.mul(u, i64(P)))
            with for_range(b, 0, OH, name="oh") as r:
                yrow = gep(b, plane, b.mul(r, i64(OW)))
                memcpy(b, yrow, gep(b, wbuf, b.mul(r, i64(Wp))), i64(4 * OW))
                if kf.ep and not invariant:
                    epilogue_row(b, kf.ep, extras, yrow, OW, [n, c, r], 0)
            if kf.ep and invariant:
                epilogue_plane(b, kf.ep, extras, plane, P, [n, c], 2)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)


def _cf(kf, w, win, G, Og, O):
    D, H, W = win.sp
    OD, OH, OW = win.osp
    KD, KH, KW = win.k
    need = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(win.osp, win.s, win.k, win.d)]
    Dp, Hp, Wp = (max(n + p, nn) for n, p, nn in zip(win.sp, win.pb, need))
    Wp += 16  # slack: stride-2 vector rows read 16 floats per 8 outputs
    KK = KD * KH * KW
    fast = win.s[2] in (1, 2) and KK <= 49
    units = win.N * G
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * units * Og * win.P * KK, units)
    prefix_sp = {1: 0, 2: 1, 3: 2}[win.nd]
    # rows ending with a scalar tail: an epilogue of (image, channel) only runs over the plane
    plane_ep = bool(kf.ep) and OW % 8 != 0 and kf.ep.invariant_from(2)

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        with _plane_units(b, sh, x, win, G, Dp * Hp * Wp) as (u, n, c, src, pad, _):
            # interior copy (the border stays zero: the interior is the same for every plane)
            with for_range(b, 0, D * H, name="cr") as r:
                dd, hh = b.udiv(r, i64(H)), b.urem(r, i64(H))
                prow = b.add(
                    b.mul(
                        b.add(b.mul(b.add(dd, i64(win.pb[0])), i64(Hp)), b.add(hh, i64(win.pb[1]))),
                        i64(Wp),
                    ),
                    i64(win.pb[2]),
                )
                with for_range(b, 0, W, name="cw") as j:
                    store(b, load(b, src, b.add(b.mul(r, i64(W)), j)), pad, b.add(prow, j))
            with for_range(b, 0, Og, name="j") as j:
                o = b.add(b.mul(c, i64(Og)), j)
                wo = gep(b, wp, b.mul(o, i64(KK)))
                plane = gep(b, y, b.mul(b.add(b.mul(n, i64(O)), o), i64(win.P)))
                wts = [load(b, wo, i64(t)) for t in range(KK)] if fast else None
                wvs = [splat(b, v) for v in wts] if fast else None
                with for_range(b, 0, OD * OH, name="orow") as r:
                    od, oh = b.udiv(r, i64(OH)), b.urem(r, i64(OH))
                    yrow = gep(b, plane, b.mul(r, i64(OW)))
                    if fast:
                        _row_registers(b, win, pad, Hp, Wp, od, oh, yrow, wts, wvs)
                    else:
                        _row_memory(b, win, pad, Hp, Wp, od, oh, yrow, wo)
                    if kf.ep and not plane_ep:
                        sp = [od, oh][2 - prefix_sp :] if prefix_sp else []
                        epilogue_row(b, kf.ep, extras, yrow, OW, [n, o, *sp], 0)
                if plane_ep:
                    epilogue_plane(b, kf.ep, extras, plane, win.P, [n, o], win.nd)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)


def _tap_rows(b, win, pad, Hp, Wp, od, oh):
    """Pointers to the padded input row of each (kd, kh) window row for output row (od, oh)."""
    rows = []
    for kd in range(win.k[0]):
        pd_ = b.add(b.mul(od, i64(win.s[0])), i64(kd * win.d[0]))
        for kh in range(win.k[1]):
            ph_ = b.add(b.mul(oh, i64(win.s[1])), i64(kh * win.d[1]))
            rows.append(gep(b, pad, b.mul(b.add(b.mul(pd_, i64(Hp)), ph_), i64(Wp))))
    return rows


def _row_registers(b, win, pad, Hp, Wp, od, oh, yrow, wts, wvs):
    """One output row, 8 columns at a time accumulated in a register over all taps."""
    OW, KW = win.osp[2], win.k[2]
    sw, dw = win.s[2], win.d[2]
    rows = _tap_rows(b, win, pad, Hp, Wp, od, oh)
    even = ir.Constant(ir.VectorType(I32, 8), list(range(0, 16, 2)))
    nblk = OW // 8 * 8
    with for_range(b, 0, nblk, 8, name="q8") as q:
        acc = const(V8F, 0.0)
        for t, (prow, kw) in enumerate((r_, kw) for r_ in rows for kw in range(KW)):
            base = b.add(b.mul(q, i64(sw)), i64(kw * dw))
            if sw == 1:
                xv = vload(b, prow, base)
            else:
                lo, hi = vload(b, prow, base), vload(b, prow, b.add(base, i64(8)))
                xv = b.shuffle_vector(lo, hi, even)
            acc = fma(b, wvs[t], xv, acc)
        vstore(b, acc, yrow, q)
    with for_range(b, nblk, OW, name="q1") as q:
        acc = const(F32, 0.0)
        for t, (prow, kw) in enumerate((r_, kw) for r_ in rows for kw in range(KW)):
            xv = load(b, prow, b.add(b.mul(q, i64(sw)), i64(kw * dw)))
            acc = fma(b, wts[t], xv, acc)
        store(b, acc, yrow, q)


def _row_memory(b, win, pad, Hp, Wp, od, oh, yrow, wo):
    """One output row accumulated in memory, one pass per tap (large windows, strides > 2)."""
    OW, KW = win.osp[2], win.k[2]
    with for_range(b, 0, OW, name="zo") as q:
        store(b, const(F32, 0.0), yrow, q)
    with for_range(b, 0, win.k[0] * win.k[1], name="t") as t:
        kd, kh = b.udiv(t, i64(win.k[1])), b.urem(t, i64(win.k[1]))
        pd_ = b.add(b.mul(od, i64(win.s[0])), b.mul(kd, i64(win.d[0])))
        ph_ = b.add(b.mul(oh, i64(win.s[1])), b.mul(kh, i64(win.d[1])))
        prow = gep(b, pad, b.mul(b.add(b.mul(pd_, i64(Hp)), ph_), i64(Wp)))
        with for_range(b, 0, KW, name="kw") as kw:
            wv = load(b, wo, b.add(b.mul(t, i64(KW)), kw))
            srow = gep(b, prow, b.mul(kw, i64(win.d[2])))
            with for_range(b, 0, OW, name="q") as q:
                xv = load(b, srow, b.mul(q, i64(win.s[2])))
                acc = load(b, yrow, q)
                store(
                    b, b.fadd(acc, b.fmul(wv, xv, flags=["contract"]), flags=["contract"]), yrow, q
                )


def _cl_registers(kf, w, win, C):
    """Channel-last depthwise (multiplier 1): each output position accumulates its taps in
    registers, 8 channels at a time; positions whose window is inside the input skip the bounds
    checks, the others read clamped addresses with the weight masked to zero."""
    D, H, W = win.sp
    OD, OH, OW = win.osp
    KD, KH, KW = win.k
    units = win.N * OD * OH
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * win.N * win.P * C * win.KK, units)
    c8 = C // 8 * 8
    taps = [(kd, kh, kw) for kd in range(KD) for kh in range(KH) for kw in range(KW)]

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="u") as u:
            n = b.udiv(u, i64(OD * OH))
            r = b.urem(u, i64(OD * OH))
            od, oh = b.udiv(r, i64(OH)), b.urem(r, i64(OH))
            xn = gep(b, x, b.mul(n, i64(win.IP * C)))
            with for_range(b, 0, OW, name="ow") as ow:
                pos0 = [
                    b.sub(b.mul(q, i64(s_)), i64(p_))
                    for q, s_, p_ in zip((od, oh, ow), win.s, win.pb)
                ]
                # per tap: the clamped input position and whether it is inside
                tapinfo, inside_all = [], None
                for kd, kh, kw in taps:
                    pos = [b.add(p0, i64(k * d_)) for p0, k, d_ in zip(pos0, (kd, kh, kw), win.d)]
                    ok = None
                    for v, lim in zip(pos, (D, H, W)):
                        cnd = b.and_(
                            b.icmp_signed(">=", v, i64(0)), b.icmp_signed("<", v, i64(lim))
                        )
                        ok = cnd if ok is None else b.and_(ok, cnd)
                    cl = [clamp(b, v, i64(0), i64(lim - 1)) for v, lim in zip(pos, (D, H, W))]
                    ip = b.add(b.mul(b.add(b.mul(cl[0], i64(H)), cl[1]), i64(W)), cl[2])
                    tapinfo.append((gep(b, xn, b.mul(ip, i64(C))), ok))
                    inside_all = ok if inside_all is None else b.and_(inside_all, ok)
                yrow = gep(b, y, b.mul(b.add(b.mul(u, i64(OW)), ow), i64(C)))

                def accumulate(width, c, checked):
                    zero = const(V8F if width == 8 else F32, 0.0)
                    acc = zero
                    for t, (xp, ok) in enumerate(tapinfo):
                        ld = vload if width == 8 else load
                        xv = ld(b, xp, c)
                        wv = ld(b, wp, b.add(i64(t * C), c))
                        if checked:
                            wv = b.select(ok, wv, zero)
                        acc = fma(b, xv, wv, acc)
                    (vstore if width == 8 else store)(b, acc, yrow, c)

                with b.if_else(inside_all) as (fast, slow):
                    for checked, blk in ((False, fast), (True, slow)):
                        with blk:
                            with for_range(b, 0, c8, 8, name="c8") as c:
                                accumulate(8, c, checked)
                            with for_range(b, c8, C, name="c1") as c:
                                accumulate(1, c, checked)
                if kf.ep:
                    sp = [od, oh, ow][3 - win.nd :]
                    epilogue_row(b, kf.ep, extras, yrow, C, [n, *sp], 0)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)


def _cl(kf, w, win, G, Og, O):
    if Og == 1 and win.KK <= 49:
        return _cl_registers(kf, w, win, G)
    D, H, W = win.sp
    OD, OH, OW = win.osp
    KD, KH, KW = win.k
    C = G
    units = win.N * OD * OH
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * win.N * win.P * O * win.KK, units)

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="u") as u:
            n = b.udiv(u, i64(OD * OH))
            r = b.urem(u, i64(OD * OH))
            od, oh = b.udiv(r, i64(OH)), b.urem(r, i64(OH))
            xn = gep(b, x, b.mul(n, i64(win.IP * C)))
            with for_range(b, 0, OW, name="ow") as ow:
                yrow = gep(b, y, b.mul(b.add(b.mul(u, i64(OW)), ow), i64(O)))
                with for_range(b, 0, O, name="zo") as q:
                    store(b, const(F32, 0.0), yrow, q)
                with for_range(b, 0, win.KK, name="t") as t:
                    kw = b.urem(t, i64(KW))
                    kh = b.urem(b.udiv(t, i64(KW)), i64(KH))
                    kd = b.udiv(t, i64(KW * KH))
                    pos = [
                        b.sub(b.add(b.mul(q, i64(s)), b.mul(k, i64(d))), i64(p))
                        for q, k, s, d, p in zip((od, oh, ow), (kd, kh, kw), win.s, win.d, win.pb)
                    ]
                    ok = None
                    for v, lim in zip(pos, (D, H, W)):
                        cnd = b.and_(
                            b.icmp_signed(">=", v, i64(0)), b.icmp_signed("<", v, i64(lim))
                        )
                        ok = cnd if ok is None else b.and_(ok, cnd)
                    with b.if_then(ok):
                        ip = b.add(b.mul(b.add(b.mul(pos[0], i64(H)), pos[1]), i64(W)), pos[2])
                        xrow = gep(b, xn, b.mul(ip, i64(C)))
                        wrow = gep(b, wp, b.mul(t, i64(O)))
                        with for_range(b, 0, O, name="c") as q:
                            xv = load(b, xrow, b.udiv(q, i64(Og)) if Og > 1 else q)
                            acc = load(b, yrow, q)
                            prod = b.fmul(xv, load(b, wrow, q), flags=["contract"])
                            store(b, b.fadd(acc, prod, flags=["contract"]), yrow, q)
                if kf.ep:
                    sp = [od, oh, ow][3 - win.nd :]
                    epilogue_row(b, kf.ep, extras, yrow, O, [n, *sp], 0)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)
