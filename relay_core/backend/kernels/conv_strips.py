"""Channel-first convolutions on small output planes (ResNet's and MobileNet's 7x7 and 14x14
layers), strided ones, windows packed straight from X on any plane and 1x1 ones at batch 1
(`usable`), groups 1, constant weights, float32:
Y^T[P, O] = col^T[P, K] @ W^T[K, O], K = Cg x window.

Output positions are the rows of the product: a plane of 49 positions fills 7 row tiles of 7
exactly, where 16- or 32-wide column tiles of positions compute 64 (a third wasted). Output
channels are the columns, in panels of `nv` vectors of the target's width (2 x 16 with
AVX-512), the weights packed into such panels at compile time (gemm_core.pack_b_panels).

The columns (X itself for a 1x1 stride-1 convolution, else im2col of a few input channels at a
time into a small buffer) are packed once per thread and image (or row block) into strips of
`mr` positions, k-major ([k][mr], zero padded), so that a tile's k step reads mr consecutive
floats: read in place from X, every k touched a cache line of its own (a 49-float row apart)
and the microkernel ran at half the rate. Each tile accumulates over the whole reduction in
registers (mr x nv accumulators) and is stored transposed into Y: 8 x 8 blocks transposed in
registers, each output channel's mr positions one masked store (scalar stores of the tile were
a quarter of the time for reductions of 64 - 160). A strip stays in L1 while the unit's weight
panels (at most W_BUDGET bytes, in L2) stream past it.
"""

from __future__ import annotations

import llvmlite.ir as ir

from .gemm_core import gemm_tile, pack_b_panels
from .im2col import geom_args, im2col_cf_fn
from .llvm_util import (
    F32,
    F32P,
    I1,
    I32,
    I64,
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
    masked_load,
    masked_store,
    new_function,
    splat,
    store,
    vector_width,
    vload,
    vstore,
)
from .parallel import clamp_threads, parallel

MIN_UNITS = 16  # units per call when the shape allows: several shards per thread
W_BUDGET = 256 * 1024  # bytes of weight panels per unit (a quarter of L2)
COL_BUDGET = 64 * 1024  # bytes of im2col rows per call of im2col (a few input channels)
# the reduction loop unrolled 4 times (its index and pointer updates had ALU ops compete with
# the FMAs' ports) and cut into blocks of KBLOCK (a block of a weight panel, 32 KB, stays in
# L1 while the unit's strips pass): 1x1 and 3x3 convolutions on 7x7 - 17x17 planes took
# 0.88-0.97 of the time of one loop over the whole reduction (1 and 2 threads, interleaved)
UNROLL = 4
KBLOCK = 256
MAX_P = 256  # output planes of fewer positions (per image) are served here (14x14 and less)


def tile(width: int, P: int = 0) -> tuple[int, int]:
    """(positions per tile, vectors of output channels per tile) for a vector width and planes
    of P positions: with AVX-512 (32 registers) 7 or 8 x 2 x 16 (14 or 16 accumulators), the
    strip that pads the plane less (49 = 7 x 7 positions, 64 = 8 x 8: eight strips of 8 took
    0.7-0.9 of ten strips of 7 on 8x8 planes); with AVX2 (16 registers) 6 x 2 x 8."""
    if width != 16:
        return (6, 2)
    return (8, 2) if P and -(-P // 8) * 8 < -(-P // 7) * 7 else (7, 2)


def usable(win, G: int, Cg: int, O: int, packed: bool, cl: bool, force: bool = False) -> bool:
    """Whether this kernel serves a convolution (force: whether it can at all: channel-first
    2-D, groups 1, constant weights). It does, measured against conv_pointwise and im2col +
    gemm_core (benchmarks/resnet_convs.py, one thread): output planes of fewer than MAX_P
    positions at any batch size, strided convolutions (ResNet's downsampling 1x1 and 3x3) and
    1x1 stride-1 ones at batch 1 on wide channels (ResNet's); not stems (Cg <= 4:
    conv_pointwise's im2col per unit, a reduction too short for the transposed stores here)
    nor what Winograd takes (the caller asks it first); windows on larger planes whose strips
    pack straight from X (`windowed`). conv_pointwise serves 1x1 ones on 28x28 and larger
    planes at batch 8, and at batch 1 when narrow (`narrow_1x1`)."""
    if not (packed and G == 1 and not cl and win.nd == 2):
        return False
    if force:
        return True
    if Cg <= 4:
        return False
    if pointwise_batched(win) or strided_window_batched(win):
        return False
    strided = win.s != (1, 1, 1)
    one = is_1x1(win) and win.N == 1 and not (narrow_1x1(Cg, O) or _pointwise_wide(win))
    return win.P < MAX_P or strided or one or windowed(win, O)


POINTWISE_MIN_P = 128  # (14x14 planes; on 7x7 the two kernels took the same time)


def strided_window_batched(win) -> bool:
    """A strided window (3x3 stride 2: MobileNetV4's and EfficientNet-style downsampling) on
    an output plane of MAX_P positions or more at batch 2 and more, which the im2col path
    serves. Alone, 2 threads, interleaved (AMD EPYC Zen 3), batch 8, im2col against
    conv_strips: 32 -> 32 on 112x112 0.78-0.89 of the time, 32 -> 96 and 64 -> 128 on
    56x56 0.91-0.94, 128 -> 128 on 56x56 0.94, 16 -> 64 and 24 -> 48 on 112x112 0.90-0.91;
    batch 2 and 4 0.85 and 0.92; at batch 1 conv_strips is as fast or faster (0.91-1.0), and
    on 14x14 outputs (fewer than MAX_P positions) too (256 -> 256: 1.07)."""
    return win.KK > 1 and win.s != (1, 1, 1) and win.N >= 2 and win.P >= MAX_P


def pointwise_batched(win) -> bool:
    """A 1x1 stride-1 convolution on a 14x14-sized plane at batch 2 and more on AVX2, which
    conv_pointwise serves (not conv_strips, not units of several images): its 16-position
    column tiles waste 6% of 196 positions (AVX-512's 32-wide ones 12.5%). Alone, 2 threads,
    interleaved (AMD EPYC Zen 3): MobileNet / EfficientNet expansions 64 -> 384, 96 -> 576,
    112 -> 672 at batch 8 0.76-0.83 of conv_strips' time, 256 -> 1024 0.87, projections
    384 -> 64 0.93, 1024 -> 256 0.99; batch 2 and 4 0.90 and 0.96."""
    return vector_width() == 8 and is_1x1(win) and win.N >= 2 and POINTWISE_MIN_P <= win.P < MAX_P


def windowed(win, O: int) -> bool:
    """A window (not 1x1) whose strips pack straight from X, on planes of any size, when the
    output channels fill the 32-wide column panels: Inception's 1x7 / 7x1 on 17x17 and 5x5 on
    35x35, 5x5 / 7x7 on 28x28 - 56x56 took 0.6-0.9 of the im2col path's time (2 threads,
    interleaved); with 16 output channels 1.2-1.6x. What Winograd takes it does not see."""
    return win.KK > 1 and O >= 32 and window_pack(win, tile(gemm_tile().width, win.P)[0])


def _pointwise_wide(win) -> bool:
    """conv_pointwise's AVX-512 in-place kernel serves this 1x1 convolution: at batch 1 on
    28x28 / 56x56 planes it took 0.80-0.97 of this kernel's time on wide channels too
    (256->64, 512->128, 64->256, 128->512)."""
    from .conv_pointwise import wide

    return wide(win)


def narrow_1x1(Cg: int, O: int) -> bool:
    """A 1x1 convolution whose few output channels (<= 48) fill little of this kernel's 32-wide
    column panels, or whose short reduction (<= 64 channels) expands (O > Cg): MobileNet's
    projections and expansions. On 28x28 to 112x112 planes at batch 1, 2 threads, conv_pointwise
    took 0.52-0.96 of this kernel's time on such convolutions (16->16 to 240->40 and 64->256),
    1.0-1.13 on wide ones (64->64, 128->512, 256->64, 512->128)."""
    return O <= 48 or (Cg <= 64 and O > Cg)


def is_1x1(win) -> bool:
    """1x1, stride 1, unpadded: X itself holds the columns."""
    return (
        win.KK == 1
        and win.s == (1, 1, 1)
        and win.pb == (0, 0, 0)
        and win.pe == (0, 0, 0)
        and win.sp == win.osp
    )


def _ukr_fn(llmod: ir.Module, mr: int, nv: int, w: int, blocked: bool) -> ir.Function:
    """c[j * ldc + i] = sum_k a[k * mr + i] * b[k * nv * w + j] for i < mv, j < nj: an
    mr x (nv * w) tile of Y^T over K, the whole reduction or (`blocked`) a block of it:
    started from zero (`first`) or from the partial sums in acc (mr * nv vectors), stored
    transposed into c (`last`) or back into acc. Unblocked, acc / first / last are unused."""
    name = f"relay.strips.ukr{mr}x{nv}x{w}u{UNROLL}{'b' if blocked else ''}"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    args = [I64, F32P, F32P, F32P, I64, I64, I64, F32P, I1, I1]
    fn, b = new_function(llmod, name, args, internal=True)
    K, ap, bp, cp, ldc, mv, nj, accp, first, last = fn.args
    nr = nv * w
    vt = ir.VectorType(F32, w)

    def step(k, accs):
        bk = b.mul(k, i64(nr))
        bv = [vload(b, bp, b.add(bk, i64(w * v)), w) for v in range(nv)]
        ak = b.mul(k, i64(mr))
        out = []
        for i in range(mr):
            av = splat(b, load(b, ap, b.add(ak, i64(i))), w)
            out += [fma(b, av, bv[v], accs[nv * i + v]) for v in range(nv)]
        return out

    zero = const(vt, 0.0)
    accs = [zero] * (mr * nv)
    if blocked:
        accs = [b.select(first, zero, vload(b, accp, j * w, w)) for j in range(mr * nv)]
    if UNROLL > 1:
        kmain = b.mul(b.udiv(K, i64(UNROLL)), i64(UNROLL))

        def steps(k, accs):
            for u in range(UNROLL):
                accs = step(b.add(k, i64(u)), accs)
            return accs

        accs = for_carry(b, 0, kmain, accs, steps, step=UNROLL, name="kk")
        accs = for_carry(b, kmain, K, accs, step, name="kt")
    else:
        accs = for_carry(b, 0, K, accs, step, name="kk")
    if blocked:
        with b.if_then(b.not_(last)):  # a partial sum: kept for the next block of K
            for j, v in enumerate(accs):
                vstore(b, v, accp, j * w)
            b.ret_void()
    with b.if_else(b.icmp_signed("==", nj, i64(nr))) as (full, part):
        with full:  # 8 x 8 blocks transposed in registers, each column a masked store
            mask = _lanes_below(b, mv)
            zero8 = const(ir.VectorType(F32, 8), 0.0)
            for v in range(nv):
                for g in range(w // 8):
                    lanes = ir.Constant(ir.VectorType(I32, 8), list(range(8 * g, 8 * g + 8)))
                    rows = [
                        accs[nv * i + v]
                        if w == 8
                        else b.shuffle_vector(
                            accs[nv * i + v], ir.Constant(vt, ir.Undefined), lanes
                        )
                        for i in range(mr)
                    ]
                    cols = _transpose8(b, rows + [zero8] * (8 - mr))
                    for j, col in enumerate(cols):
                        masked_store(b, col, cp, b.mul(i64(v * w + 8 * g + j), ldc), mask)
        with part:  # a partial panel (the last output channels)
            t = entry_alloca(b, F32, mr * nr, name="tile")
            for j, v in enumerate(accs):
                vstore(b, v, t, (j // nv) * nr + w * (j % nv))
            with for_range(b, 0, nj, name="tj") as q:
                row = gep(b, cp, b.mul(q, ldc))
                with for_range(b, 0, mv, name="ti") as i:
                    store(b, load(b, t, b.add(b.mul(i, i64(nr)), q)), row, i)
    b.ret_void()
    return fn


def _transpose8(b: ir.IRBuilder, r: list) -> list:
    """The columns of the 8 x 8 matrix whose rows are the <8 x float> values r."""

    def sh(x, y, idx):
        return b.shuffle_vector(x, y, ir.Constant(ir.VectorType(I32, 8), idx))

    lo, hi = [0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15]
    t = []
    for i in range(0, 8, 2):
        t += [sh(r[i], r[i + 1], lo), sh(r[i], r[i + 1], hi)]
    a, c = [0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]
    u = []
    for i in (0, 4):
        u += [sh(t[i], t[i + 2], a), sh(t[i], t[i + 2], c)]
        u += [sh(t[i + 1], t[i + 3], a), sh(t[i + 1], t[i + 3], c)]
    first, second = [0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]
    return [sh(u[j], u[j + 4], first) for j in range(4)] + [
        sh(u[j], u[j + 4], second) for j in range(4)
    ]


def _lanes_below(b: ir.IRBuilder, n):
    """<8 x i1>: lane i < n."""
    vi = ir.VectorType(I64, 8)
    nv = b.insert_element(ir.Constant(vi, ir.Undefined), n, i32(0))
    zeros = ir.Constant(ir.VectorType(I32, 8), [0] * 8)
    nv = b.shuffle_vector(nv, ir.Constant(vi, ir.Undefined), zeros)
    return b.icmp_signed("<", ir.Constant(vi, list(range(8))), nv)


def _pack_strips_fn(llmod: ir.Module, mr: int) -> ir.Function:
    """dst[s * sst + (k0 + k) * mr + i] = src[k * ld + pos0 + s * mr + i] for k < nrows and
    the strips s of npos positions (0 past npos). Strips are sst = K * mr + 8 floats apart: each
    k stores 8 floats (mr <= 8), the spill overwritten by the next k or landing in the gap."""
    name = f"relay.strips.pack{mr}"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    args = [F32P, I64, I64, I64, I64, F32P, I64, I64]
    fn, b = new_function(llmod, name, args, internal=True)
    src, ld, pos0, npos, nrows, dst, k0, K = fn.args
    ns = b.udiv(b.add(npos, i64(mr - 1)), i64(mr))
    sst = b.add(b.mul(K, i64(mr)), i64(8))
    with for_range(b, 0, ns, name="s") as s:
        ps = b.mul(s, i64(mr))
        valid = imin(b, i64(mr), b.sub(npos, ps))
        sp = gep(b, src, b.add(pos0, ps))
        dp = gep(b, dst, b.add(b.mul(s, sst), b.mul(k0, i64(mr))))
        with for_range(b, 0, nrows, name="k") as k:
            v = masked_load(b, sp, b.mul(k, ld), _lanes_below(b, valid), 0.0)
            vstore(b, v, dp, b.mul(k, i64(mr)))
    b.ret_void()
    return fn


def window_pack(win, mr: int) -> bool:
    """Whether `_pack_window_fn` packs this convolution's strips straight from X: 2-D (or 1-D)
    windows of column stride 1 or 2 on output rows of at least mr positions (a strip spans at
    most two rows)."""
    sw = win.s[2]
    return win.k[0] == 1 and win.sp[0] == 1 and sw in (1, 2) and win.osp[2] >= mr


def _pack_window_fn(llmod: ir.Module, win, Cg: int, mr: int) -> ir.Function:
    """dst[s * sst + k * mr + i] = the im2col column k of position p0 + s * mr + i (0 in the
    padding), k = (c * KH + kh) * KW + kw, for the strips s of npos positions (0 past npos):
    each k of a strip is one masked load of its row of X (2 mr lanes at column stride 2, every
    other one kept) and one store, instead of an im2col pass and a packing pass over its rows
    (5 cycles per element: a sixth of a 3x3 stride-2 convolution's time on 7x7 planes). A strip
    that crosses into the next output row (rows of 17, 35: not a multiple of mr) takes its
    later lanes from a second masked load, of that row's window, into the first's."""
    KH, KW = win.k[1], win.k[2]
    H, W, OW = win.sp[1], win.sp[2], win.osp[2]
    sh, sw, dh, dw, ph, pw = win.s[1], win.s[2], win.d[1], win.d[2], win.pb[1], win.pb[2]
    key = "_".join(str(v) for v in (Cg, H, W, OW, KH, KW, sh, sw, dh, dw, ph, pw))
    name = f"relay.strips.wpack{mr}.{key}"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    fn, b = new_function(llmod, name, [F32P, I64, I64, F32P], internal=True)
    x, p0, npos, dst = fn.args
    K = Cg * KH * KW
    sst = K * mr + 8
    L = 8 * sw  # lanes loaded: mr <= 8 positions at column stride sw
    vi = ir.VectorType(I32, L)
    iota = ir.Constant(vi, list(range(L)))
    keep = ir.Constant(ir.VectorType(I32, 8), [sw * i for i in range(8)])
    none = ir.Constant(ir.VectorType(I1, L), [0] * L)
    on_grid = ir.Constant(ir.VectorType(I1, L), [j % sw == 0 for j in range(L)])

    def segment(oh, col_base, lanes):
        """Per (kh, kw): the row offset of the window's first lane and its lane mask, for the
        lanes `lanes` of output row oh whose lane j reads input column col_base + kw * dw + j."""
        masks = []
        for kh in range(KH):
            ih = b.add(b.mul(oh, i64(sh)), i64(kh * dh - ph))
            ok = b.and_(b.icmp_signed(">=", ih, i64(0)), b.icmp_signed("<", ih, i64(H)))
            row = []
            for kw in range(KW):
                col0 = b.add(col_base, i64(kw * dw))
                cv = b.add(splat(b, b.trunc(col0, I32), L), iota)
                inside = b.and_(
                    b.icmp_signed(">=", cv, ir.Constant(vi, [0] * L)),
                    b.icmp_signed("<", cv, ir.Constant(vi, [W] * L)),
                )
                m = b.select(ok, b.and_(lanes, inside), none)
                row.append((b.add(b.mul(ih, i64(W)), col0), m))
            masks.append(row)
        return masks

    ns = b.udiv(b.add(npos, i64(mr - 1)), i64(mr))
    with for_range(b, 0, ns, name="s") as st:
        ps = b.add(p0, b.mul(st, i64(mr)))
        oh, ow0 = b.udiv(ps, i64(OW)), b.urem(ps, i64(OW))
        valid = imin(b, i64(mr), b.sub(npos, b.mul(st, i64(mr))))
        first = imin(b, valid, b.sub(i64(OW), ow0))  # positions in row oh
        below = b.icmp_signed("<", iota, splat(b, b.trunc(b.mul(first, i64(sw)), I32), L))
        segs = [segment(oh, b.sub(b.mul(ow0, i64(sw)), i64(pw)), b.and_(below, on_grid))]
        crosses = None
        if OW % mr:
            # lane j >= first * sw: output column j / sw - first of row oh + 1
            upto = b.icmp_signed("<", iota, splat(b, b.trunc(b.mul(valid, i64(sw)), I32), L))
            lanes2 = b.and_(b.and_(upto, b.xor(below, ir.Constant(below.type, [1] * L))), on_grid)
            base2 = b.sub(i64(-pw), b.mul(first, i64(sw)))
            segs.append(segment(b.add(oh, i64(1)), base2, lanes2))
            crosses = b.icmp_signed("<", first, valid)
        sbase = gep(b, dst, b.mul(st, i64(sst)))

        def channels(nseg):
            with for_range(b, 0, Cg, name="c") as c:
                xc = gep(b, x, b.mul(c, i64(H * W)))
                kc = b.mul(c, i64(KH * KW * mr))
                for kh in range(KH):
                    for kw in range(KW):
                        v = const(ir.VectorType(F32, L), 0.0)
                        for seg in segs[:nseg]:
                            off, m = seg[kh][kw]
                            # a window in the padding points before / past the plane: a plain
                            # GEP (an inbounds one would be poison); masked-off lanes not read
                            v = masked_load(b, b.gep(xc, [off], inbounds=False), i64(0), m, v)
                        if sw > 1:
                            v = b.shuffle_vector(v, ir.Constant(v.type, ir.Undefined), keep)
                        vstore(b, v, sbase, b.add(kc, i64((kh * KW + kw) * mr)))

        if crosses is None:
            channels(1)
        else:
            with b.if_else(crosses) as (two, one):
                with two:
                    channels(2)
                with one:
                    channels(1)
    b.ret_void()
    return fn


def blocking(N: int, O: int, K: int, P: int, mr: int, nr: int) -> tuple[int, int, int, int]:
    """(channel panels per unit, channel blocks, strips per unit, row blocks): channel blocks
    first (the columns are packed once per thread and row block; more row blocks repeat the
    weights)."""
    npan, nst = -(-O // nr), -(-P // mr)
    ncb = max(1, min(npan, -(-MIN_UNITS // N)))
    cbp = -(-npan // ncb)
    cbp = max(1, min(cbp, W_BUDGET // (4 * nr * max(K, 1))))
    ncb = -(-npan // cbp)
    nrb = max(1, min(nst, -(-MIN_UNITS // (N * ncb))))
    rbs = -(-nst // nrb)
    nrb = -(-nst // rbs)
    return cbp, ncb, rbs, nrb


def emit(kf, win, O: int, Cg: int):
    """The body of kf (x, packed w, y[, extras]) for a convolution of groups 1 and Cg input
    channels; returns the weight prepack."""
    from .conv import _epilogue_chunk

    N, P = win.N, win.P
    K = Cg * win.KK
    direct = is_1x1(win)
    w = gemm_tile().width
    mr, nv = tile(w, P)
    nr = nv * w
    cbp, ncb, rbs, nrb = blocking(N, O, K, P, mr, nr)
    CB, RB = cbp * nr, rbs * mr
    units = N * ncb * nrb
    nkb = -(-K // KBLOCK) if KBLOCK else 1
    KC = -(-K // nkb)
    ukr = _ukr_fn(kf.b.module, mr, nv, w, nkb > 1)
    pack = _pack_strips_fn(kf.b.module, mr)
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * N * O * P * K, units)
    OW = win.osp[2]
    ys = kf.ys or O * P  # elements between output images
    sst = K * mr + 8  # floats per packed strip, with the gap pack's spill lands in
    ldt = -(-min(RB, P) // 16) * 16 + 16  # im2col rows (im2col pads them to its NR)
    cc = max(1, min(Cg, COL_BUDGET // (4 * win.KK * ldt)))  # input channels per im2col call
    # windows: im2col specialised to the geometry (constant strides and bounds: 3-6% of a 3x3
    # stride-2 convolution's time, measured), in chunks of equal channel counts
    special = win.KK > 1
    if special:
        cc = max(d for d in range(1, cc + 1) if Cg % d == 0)

    wpack = None
    if not direct and window_pack(win, mr):
        wpack = _pack_window_fn(kf.b.module, win, Cg, mr)

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        buf = b.bitcast(malloc(b, i64(4 * rbs * sst)), F32P)
        acc = None  # partial sums per (strip, panel) tile between blocks of K
        if nkb > 1:
            acc = b.bitcast(malloc(b, i64(4 * rbs * cbp * mr * nr)), F32P)
        tmp = None
        if not direct and wpack is None:
            tmp = b.bitcast(malloc(b, i64(4 * (cc * win.KK * ldt + 8))), F32P)
        have = entry_alloca(b, I64, name="packed")  # the (image, row block) in buf, -1: none
        b.store(i64(-1), have)
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="unit") as u:
            # channel blocks fastest: a thread's consecutive units share its packed strips
            nr_, cb = b.udiv(u, i64(ncb)), b.urem(u, i64(ncb))
            n, rb = b.udiv(nr_, i64(nrb)), b.urem(nr_, i64(nrb))
            p0 = b.mul(rb, i64(RB))
            p1 = imin(b, b.add(p0, i64(RB)), i64(P))
            pc = b.sub(p1, p0)
            with b.if_then(b.icmp_signed("!=", b.load(have), nr_)):
                if direct:
                    xn = gep(b, x, b.mul(n, i64(K * P)))
                    b.call(pack, [xn, i64(P), p0, pc, i64(K), buf, i64(0), i64(K)])
                elif wpack is not None:
                    b.call(wpack, [gep(b, x, b.mul(n, i64(win.C * win.IP))), p0, pc, buf])
                else:
                    xn = gep(b, x, b.mul(n, i64(win.C * win.IP)))
                    if special:
                        im2col = im2col_cf_fn(b.module, win, cc)
                    else:
                        im2col = im2col_cf_fn(b.module)
                        geo = geom_args(win, Cg)[1:]
                    with for_range(b, 0, Cg, cc, name="cc") as c0:
                        ncc = imin(b, i64(cc), b.sub(i64(Cg), c0))
                        xc = gep(b, xn, b.mul(c0, i64(win.IP)))
                        if special:
                            b.call(im2col, [xc, tmp, i64(ldt), p0, pc])
                        else:
                            b.call(im2col, [xc, tmp, i64(ldt), p0, pc, ncc, *geo])
                        rows, k0 = b.mul(ncc, i64(win.KK)), b.mul(c0, i64(win.KK))
                        b.call(pack, [tmp, i64(ldt), i64(0), pc, rows, buf, k0, i64(K)])
                b.store(nr_, have)
            o0 = b.mul(cb, i64(CB))
            o1 = imin(b, b.add(o0, i64(CB)), i64(O))
            yn = gep(b, y, b.mul(n, i64(ys)))
            ns = b.udiv(b.add(pc, i64(mr - 1)), i64(mr))
            # K in blocks of KC: a block of a weight panel (KC x nr) stays in L1 while the
            # unit's strips pass; partial sums per (strip, panel) tile in acc
            with for_range(b, 0, nkb, name="kb") as kb:
                k0 = b.mul(kb, i64(KC))
                kc = imin(b, i64(KC), b.sub(i64(K), k0))
                first = b.icmp_signed("==", kb, i64(0))
                last = b.icmp_signed("==", kb, i64(nkb - 1))
                with for_range(b, o0, o1, nr, name="jp") as o:
                    nj = imin(b, i64(nr), b.sub(i64(O), o))
                    # panel o / nr starts at o * K
                    bpan = gep(b, wp, b.add(b.mul(o, i64(K)), b.mul(k0, i64(nr))))
                    ot = b.udiv(b.sub(o, o0), i64(nr))
                    with for_range(b, 0, ns, name="st") as s:
                        ps = b.add(p0, b.mul(s, i64(mr)))
                        mv = imin(b, i64(mr), b.sub(p1, ps))
                        a = gep(b, buf, b.add(b.mul(s, i64(sst)), b.mul(k0, i64(mr))))
                        c = gep(b, yn, b.add(b.mul(o, i64(P)), ps))
                        acc_t = ir.Constant(F32P, None)
                        if acc is not None:
                            t = b.mul(b.add(b.mul(s, i64(cbp)), ot), i64(mr * nr))
                            acc_t = gep(b, acc, t)
                        b.call(ukr, [kc, a, bpan, c, i64(P), mv, nj, acc_t, first, last])
            if kf.ep:
                _epilogue_chunk(b, kf.ep, extras, y, win, O, n, i64(0), o0, o1, p0, pc, OW, ys)
        sh.end(b)
        free(b, buf)
        if acc is not None:
            free(b, acc)
        if tmp is not None:
            free(b, tmp)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [kf.ins[1]] + kf.outs + kf.extras, nt, body)

    def prepack(wc):
        return pack_b_panels(wc.reshape(O, K).T, nr).ravel()

    return prepack
