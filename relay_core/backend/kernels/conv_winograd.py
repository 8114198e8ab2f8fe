"""Winograd F(2x2, 3x3) for float32 channel-first 3x3 stride-1 convolutions (groups 1, constant
weights): 2.25x fewer multiplications than im2col + GEMM.

Each 2x2 output tile needs a 4x4 input patch d; with U = G g G^T (the weights, transformed at
compile time) and V = B^T d B (the patch), the tile is A^T [sum_c U_c * V_c] A. The sum over
channels, for each of the 16 positions xi of the 4x4 transformed tile, is a GEMM
M_xi[o, t] = U_xi[o, c] @ V_xi[c, t] over tiles t, run on the sgemm engine with U_xi prepacked.
Tiles are processed in chunks of whole tile rows, or units of several whole small images
(`plan`: chunk widths that fill the GEMM's NR-wide tiles, shared well by two threads): the input
transform works on 8 tiles at a time (stride-2 patch columns deinterleaved with shuffles) from a
zero-padded slab of the chunk's input rows; the output transform writes 8 tiles' 2x2 outputs
with interleaving shuffles. F(2, 3)'s transforms only add and halve, so results stay within a
few ulp of the direct convolution.
"""

from __future__ import annotations

import functools

import llvmlite.ir as ir
import numpy as np

from ..derived import WINOGRAD_F23, DerivedPrepack
from .gemm_core import (
    PackedA,
    PackedB,
    RawA,
    StridedB,
    Tile,
    free_buffers,
    gemm_call,
    gemm_tile,
    k_block,
    pack_a_panels,
    plain_store_fn,
    thread_buffers,
    transposed_store_fn,
)
from .llvm_util import (
    F32,
    F32P,
    I32,
    I64,
    const,
    for_range,
    gep,
    half_rate_512,
    i64,
    imin,
    load,
    malloc,
    memset0,
    store,
    vector_width,
    vload,
    vstore,
)
from .parallel import clamp_threads, parallel, split_range

G_MAT = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64)
BUDGET = 1 << 20  # bytes of V + M per thread
XI_SKEW = 16
TR_MAX_TILES = 64  # chunks of fewer tiles may use the transposed product
UNIT_COST = 8  # a unit's fixed cost (a pass over all 16 U_xi, loop set-up) in GEMM columns
PLAN_BUDGET = 2 << 20  # bytes of V + M per chunk of the channel-first kernel (plan)
# Few output positions against large weights: the 16 transformed weight matrices (1.78x the
# weights' bytes) stream from memory for a product of few columns, where a direct kernel reads
# 9 / 16 of the bytes. ResNet-50 at batch 1 (2 threads, interleaved with onnxruntime, Xeon Ice
# Lake): its three 512-channel 3x3 convolutions on 7x7 planes took 2.0-2.1 ms each in the model
# through Winograd (16.8 MB of transformed weights each; 1.2 ms alone, the weights in cache),
# 1.66 through conv_strips; the model 1.35 -> 1.31x onnxruntime's time, ResNet-18 1.27 -> 1.18x.
# Not on AVX2: on AMD EPYC Zen 3 (32 MB L3, interleaved, 30 rounds, 2026-12-05) Winograd took
# 0.90 of ResNet-18's time at batch 1 through those convolutions, 0.98 of ResNet-50's.
MIN_POSITIONS = 100  # output positions (all images) below which ...
STREAMED_BYTES = 2 << 20  # ... transformed weights of more bytes than this go to direct kernels
WIDE_PLANE = 784  # output positions per image (28 x 28) from which few channels suffice


def usable(win, G: int, Cg: int, Og: int, packed: bool, force: bool = False) -> bool:
    """Whether a convolution is one Winograd F(2x2, 3x3) serves well (force: whether it can
    serve it at all)."""
    can = (
        packed
        and G == 1
        and win.nd == 2
        and win.k == (1, 3, 3)
        and win.s == (1, 1, 1)
        and win.d == (1, 1, 1)
    )
    if force or not can:
        return can
    if win.N * win.P < MIN_POSITIONS and 16 * 4 * Cg * Og > STREAMED_BYTES and vector_width() == 16:
        return False
    if not (worth_transforms(win.P, Cg, Og) or many_tiles(win.N * win.P, Cg, Og, win.P)):
        return False
    return Cg >= 16 and Og >= 16 and win.osp[1] >= 4 and win.osp[2] >= 4


def worth_transforms(P: int, C: int, O: int) -> bool:
    """Whether the transforms, per tile proportional to C + O, pay for the product's 2.25x
    fewer multiplies, proportional to C x O: h = C O / (C + O) large enough, or planes large
    enough for the 16 products to be efficient. Against conv_strips (2 threads, interleaved):
    DenseNet's 128 -> 32 (h 26) on 14x14 / 7x7 took 0.3-0.6 of Winograd's time, SqueezeNet's
    16 -> 64 to 64 -> 256 on 55x55 to 13x13 at batch 1 0.65-0.85, 64 -> 64 on 14x14 0.6-0.8;
    on 28x28 and larger planes (P >= 784) Winograd won from h = 21 (Inception's 32 -> 64 on
    147x147, 64 -> 96 on 35x35; ResNet's 64 -> 64 on 56x56), on smaller ones from h = 64
    (ResNet's 256 -> 256 on 14x14)."""
    h = C * O / (C + O)
    return h >= 64 or (P >= WIDE_PLANE and h >= 20)


MANY_POSITIONS = 20000  # output positions of all images from which h >= 16 suffices
AVX2_POSITIONS = 4000  # on AVX2, from which h >= 8 suffices
HALF_RATE_POSITIONS = 3100  # the same on Zen 4 (AVX-512 at half rate) ...
HALF_RATE_MIN_PLANE = 1000  # ... on planes of this many positions or more


def many_tiles(NP: int, C: int, O: int, P: int) -> bool:
    """Enough tiles over all images (NP output positions) for h = C O / (C + O) >= 16: with 32
    or fewer output channels conv_strips packs its windows for one or two panels of weights and
    runs at half the FMA rate. Against conv_strips (2 threads, interleaved, Xeon Ice Lake):
    Inception-v3's 32 -> 32 on 147x147 took 0.51 of its time at batch 8 (0.95 at batch 1, NP
    21609), 32 -> 32 on 56x56 at batch 8 0.76; on 28x28 at batch 8 (NP 6272) 2.4, and on 56x56
    at batch 1 1.2, so those keep conv_strips there. On AVX2 (16 registers: conv_strips' tiles
    are 6 x 16) Winograd wins from h = 8 and 4000 positions (AMD EPYC Zen 3, alone, interleaved
    with onnxruntime, batch 8): SqueezeNet's 16 -> 64 on 55x55 0.76 of conv_strips' time,
    32 -> 128 on 27x27 0.61, 16 -> 16 on 56x56 0.65, 32 -> 32 on 28x28 0.75, 16 -> 32 on 28x28
    the same; SqueezeNet at batch 8 0.91 of its time. Below: 24 -> 64 on 14x14 and 64 -> 256
    on 13x13 at batch 8 (1352-1568 positions) the same time, SqueezeNet at batch 1 (16 -> 64
    on 55x55, 3025 positions) 1.01. On Zen 4 (AVX-512 at half rate, `half_rate_512`) the
    Intel rule above left SqueezeNet's, HGNetV2's and RegNet-style narrow convolutions on the
    direct kernels; there Winograd took (2 threads, interleaved, against the kernel the rules
    chose): batch 8, 16 -> 64 on 55x55 0.73, 16 -> 16 on 56x56 0.57; batch 1, 16 -> 16 on
    56x56 0.77, 24 -> 24 0.62, 32 -> 32 0.75, 16 -> 32 0.94, 16 -> 16 on 112x112 0.76. Not on
    28x28 planes (P < 1000): 32 -> 32 took 1.22 (batch 1) and 1.64 (batch 8; 16 -> 16 0.68
    there), nor below 3100 positions (16 -> 64 on 55x55 at batch 1: 1.04). P: positions per
    image."""
    if vector_width() == 8:
        return NP >= AVX2_POSITIONS and C * O >= 8 * (C + O)
    if half_rate_512():
        ok = NP >= HALF_RATE_POSITIONS and P >= HALF_RATE_MIN_PLANE
        return ok and C * O >= 8 * (C + O)
    return NP >= MANY_POSITIONS and C * O >= 16 * (C + O)


def tile_rows(TH: int, TW: int, C: int, O: int) -> tuple[int, int]:
    """(tile rows per chunk, chunks): V and M of a chunk within BUDGET, and an even number of
    chunks when possible (two threads then split them evenly)."""
    rows = max(1, min(TH, BUDGET // (16 * 4 * (C + O)) // TW))
    for d in range(rows):  # nearest row counts first, larger ones preferred
        for r in (rows + d, rows - d):
            n = -(-TH // r)
            if 1 <= r <= TH and (n == 1 or n % 2 == 0) and 2 * r >= rows and 2 * rows >= r:
                return r, n
    return rows, -(-TH // rows)


def prepack(wc: np.ndarray, t: Tile) -> np.ndarray:
    """(O, C, 1, 3, 3) canonical weights -> 16 blocks of MR-row A panels of U_xi (O x C)."""
    w = wc.reshape(wc.shape[0], wc.shape[1], 3, 3).astype(np.float64)
    u = np.einsum("ai,ocij,bj->aboc", G_MAT, w, G_MAT)  # (4, 4, O, C)
    return np.concatenate(
        [pack_a_panels(u[a, b].astype(np.float32), t.mr) for a in range(4) for b in range(4)]
    )


def plan(N: int, TH: int, TW: int, C: int, O: int, NR: int) -> tuple[int, int, int]:
    """(tile rows per chunk, chunks per image, images per unit) for the channel-first kernel.

    The 16 GEMMs of a chunk have as many columns as the chunk has tiles, computed in NR-wide
    tiles: the plan minimises the columns computed in all (chunk widths rounded up to NR),
    as two threads taking the units in order share them (each unit also costs UNIT_COST
    columns), within PLAN_BUDGET bytes of V + M per chunk.
    Small images (one chunk each) are grouped into units of several images (a 7x7 output has
    16 tiles: half of a 32-wide tile; two images fill it)."""

    def rup(t):
        return -(-t // NR) * NR

    tpi = TH * TW
    per_col = 16 * 4 * (C + O)
    best = None
    for ipu in range(1, N + 1):
        for r in range(1, TH + 1) if ipu == 1 else (TH,):
            n = -(-TH // r)
            tc = ipu * r * TW
            if per_col * rup(tc) > PLAN_BUDGET and (r > 1 or ipu > 1):
                continue
            # units in the order the threads take them, each to the thread free first
            widths = [rup(r * TW)] * (n - 1) + [rup((TH - (n - 1) * r) * TW)]
            if ipu > 1:
                widths = [rup(min(ipu, N - g) * tpi) for g in range(0, N, ipu)]
            else:
                widths = widths * N
            loads = [0, 0]
            for wd in widths:
                loads[loads.index(min(loads))] += wd + UNIT_COST
            key = (max(loads), ipu, -r)
            if best is None or key < best[0]:
                best = (key, (r, n, ipu))
    return best[1]


def emit(kf, w, win, O, C, transposed: bool | None = None):
    """The kernel body (the caller made `kf` and handles the epilogue through `epilogue_rows`);
    returns (the weights' prepack, whether the product is transposed). `transposed`: take that
    form where it can serve (None: the rule below).

    Few tiles per chunk (small images): M_xi^T = V_xi^T @ U_xi^T instead, tiles as MR-row and
    output channels as NR-column tiles of the product (less of the NR-wide tiles is wasted),
    with U_xi^T in NR-column panels (conv_winograd_cl's layout) and tiles stored transposed."""
    from .conv import _epilogue_chunk

    H, W = win.sp[1], win.sp[2]
    OH, OW = win.osp[1], win.osp[2]
    pt, pl = win.pb[1], win.pb[2]
    TH, TW = -(-OH // 2), -(-OW // 2)
    MR, NR = gemm_tile().mr, gemm_tile().nr
    rows, nchunks, ipu = plan(win.N, TH, TW, C, O, NR)
    tpi = TH * TW  # tiles per image
    tc_max = ipu * rows * TW
    ld = -(-tc_max // NR) * NR
    ld = ld if (ld // 16) % 2 else ld + 16  # an odd number of cache lines per row
    # the transposed product packs V_xi^T per GEMM (strided reads): only worth it for chunks
    # of few tiles (a 7x7 output: 16 tiles, half of a 32-wide tile)
    tr = tc_max < TR_MAX_TILES and -(-tc_max // NR) * NR > -(-tc_max // MR) * MR + 0.1 * tc_max
    if transposed is not None:
        tr = transposed
    tr = tr and O >= NR
    npan = -(-O // NR)
    slab_w = 2 * TW + 2 + 16
    slab_h = 2 * rows + 2
    # V_xi / M_xi blocks apart by a whole number of pages plus XI_SKEW floats: the transforms
    # touch all 16 at once, which would otherwise map them to one L1 set
    vs, ms = C * ld + XI_SKEW, O * ld + XI_SKEW
    ngroups = -(-win.N // ipu)
    units0 = ngroups * nchunks
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * win.N * O * C * 16 * TH * TW, units0 * -(-O // MR))
    store_fn = transposed_store_fn(kf.b.module) if tr else plain_store_fn(kf.b.module)
    kcb = k_block(C, True)  # U is packed at compile time; V is read in place or packed by rows
    ys = kf.ys or O * OH * OW  # elements between output images

    def body(b, vals, sh):
        x, up, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        vb = b.bitcast(malloc(b, i64(4 * 16 * vs)), F32P)
        a0 = RawA(vb, 1, ld)
        abuf = thread_buffers(b, a0, PackedB(up), tc_max, O, C, kcb)[0] if tr else None
        mb = b.bitcast(malloc(b, i64(4 * 16 * ms)), F32P)
        slab = b.bitcast(malloc(b, i64(4 * slab_h * slab_w)), F32P)
        memset0(b, vb, i64(4 * 16 * vs))  # tile columns beyond a chunk stay zero
        bu = i64(units0)
        parts = sh.parts(b, units0)
        u0, u1 = sh.range(b, b.mul(bu, parts))
        with for_range(b, u0, u1, name="unit") as u:
            un, part = b.udiv(u, parts), b.urem(u, parts)
            ng, ch = b.udiv(un, i64(nchunks)), b.urem(un, i64(nchunks))
            n0 = b.mul(ng, i64(ipu))
            nimg = imin(b, i64(ipu), b.sub(i64(win.N), n0))
            ty0 = b.mul(ch, i64(rows))
            nty = imin(b, i64(rows), b.sub(i64(TH), ty0))
            tc = b.mul(nimg, b.mul(nty, i64(TW)))
            o0, o1 = split_range(b, O, part, parts, NR if tr else MR)
            fill = _shared(b.module, "relay.wino.fill", _fill_slab)
            geo = [i64(v) for v in (H, W, pt, pl, slab_w)]
            with for_range(b, 0, nimg, name="img") as im:
                xn = gep(b, x, b.mul(b.add(n0, im), i64(C * H * W)))
                vi = gep(b, vb, b.mul(im, i64(tpi)))
                with for_range(b, 0, C, name="c") as c:
                    b.call(fill, [gep(b, xn, b.mul(c, i64(H * W))), slab, ty0, nty, *geo])
                    vc = gep(b, vi, b.mul(c, i64(ld)))
                    # the transforms are emitted inline: constant strides make much better code
                    _input_transform(b, slab, vc, nty, i64(TW), i64(slab_w), i64(vs))
            with for_range(b, 0, 16, name="xi") as xi:
                vx = gep(b, vb, b.mul(xi, i64(vs)))
                cp = gep(b, mb, b.mul(xi, i64(ms)))
                if tr:  # A[t, c] = V_xi[c, t], B = U_xi^T panels, C[t, o] stored at o * ld + t
                    bsrc = PackedB(gep(b, up, b.mul(xi, i64(npan * C * NR))))
                    a = RawA(vx, 1, ld)
                    gemm_call(
                        b, a, bsrc, C, 0, tc, o0, o1, store_fn, [cp, i64(ld)], abuf, None, kcb
                    )
                else:
                    a = PackedA(gep(b, up, b.mul(xi, i64(O * C))))
                    bsrc = StridedB(vx, ld)
                    gemm_call(b, a, bsrc, C, o0, o1, 0, tc, store_fn, [cp, i64(ld)], kc_block=kcb)
            with for_range(b, 0, nimg, name="oimg") as im:
                n = b.add(n0, im)
                yn = gep(b, y, b.mul(n, i64(ys)))
                mi = gep(b, mb, b.mul(im, i64(tpi)))
                with for_range(b, o0, o1, name="o") as o:
                    mo, yo = gep(b, mi, b.mul(o, i64(ld))), gep(b, yn, b.mul(o, i64(OH * OW)))
                    _output_transform(b, mo, i64(ms), yo, ty0, nty, i64(TW), i64(OH), i64(OW))
                if kf.ep:
                    p0 = b.mul(ty0, i64(2 * OW))
                    pc = b.sub(imin(b, b.mul(b.add(ty0, nty), i64(2 * OW)), i64(OH * OW)), p0)
                    _epilogue_chunk(b, kf.ep, extras, y, win, O, n, i64(0), o0, o1, p0, pc, OW, ys)
        sh.end(b)
        free_buffers(b, vb, mb, slab, abuf)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)
    return derived_prepack(tr, O, C, gemm_tile()), tr


def derived_prepack(b_panels: bool, O: int, C: int, t: Tile) -> DerivedPrepack:
    """The weights' prepack (`prepack`, or conv_winograd_cl's B panels), 16/9 of the weights'
    bytes: artifacts store the weights and the runtime computes it at load time
    (backend/derived.py; relay_derive.c computes the same bytes)."""
    from . import conv_winograd_cl

    if b_panels:
        n = 16 * -(-O // t.nr) * t.nr * C
        fn = functools.partial(conv_winograd_cl.prepack, t=t)
        return DerivedPrepack(fn, WINOGRAD_F23, (1, t.nr, O, C), (n,))
    return DerivedPrepack(
        functools.partial(prepack, t=t), WINOGRAD_F23, (0, t.mr, O, C), (16 * O * C,)
    )


_SIGS = {"relay.wino.fill": [F32P, F32P] + [I64] * 7}  # shared helpers' argument types


def _shared(llmod, name, build):
    """The module's one copy of a helper, built by build(b, *args) on first use."""
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(llmod, ir.FunctionType(ir.VoidType(), _SIGS[name]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")  # one copy per module, however many convolutions call it
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    build(b, *fn.args)
    b.ret_void()
    return fn


def _fill_slab(b, plane, slab, ty0, nty, H, W, pt, pl, slab_w):
    """slab[r][j] = input[2*ty0 - pt + r][j - pl] (zero outside), r < 2*nty + 2."""
    r_in0 = b.sub(b.mul(ty0, i64(2)), pt)
    c_end = imin(b, b.add(pl, W), slab_w)
    with for_range(b, 0, b.add(b.mul(nty, i64(2)), i64(2)), name="sr") as r:
        ih = b.add(r_in0, r)
        srow = gep(b, slab, b.mul(r, slab_w))
        inside = b.and_(b.icmp_signed(">=", ih, i64(0)), b.icmp_signed("<", ih, H))
        with b.if_else(inside) as (then, other):
            with then:
                src = gep(b, plane, b.sub(b.mul(ih, W), pl))
                with for_range(b, 0, pl, name="sl") as j:
                    store(b, const(F32, 0.0), srow, j)
                with for_range(b, pl, c_end, name="sc") as j:
                    store(b, load(b, src, j), srow, j)
                with for_range(b, c_end, slab_w, name="sr") as j:
                    store(b, const(F32, 0.0), srow, j)
            with other:
                with for_range(b, 0, slab_w, name="sz") as j:
                    store(b, const(F32, 0.0), srow, j)


def _bt(b, d):
    """B^T d for d a list of 4 values (rows or columns of the patch)."""
    return [b.fsub(d[0], d[2]), b.fadd(d[1], d[2]), b.fsub(d[2], d[1]), b.fsub(d[1], d[3])]


def _at(b, m):
    """A^T m for m a list of 4 values."""
    return [b.fadd(b.fadd(m[0], m[1]), m[2]), b.fsub(b.fsub(m[1], m[2]), m[3])]


def _input_transform(b, slab, vc, nty, TW, slab_w, xi_stride):
    """V_xi[c][t] for the chunk's tiles (vc points at V_0[c][0]; V_xi at + xi * xi_stride)."""
    even = ir.Constant(ir.VectorType(I32, 8), list(range(0, 16, 2)))
    odd = ir.Constant(ir.VectorType(I32, 8), list(range(1, 16, 2)))
    nvec = b.and_(TW, i64(~7))
    with for_range(b, 0, nty, name="ty") as ty:
        rowp = [gep(b, slab, b.mul(b.add(b.mul(ty, i64(2)), i64(i)), slab_w)) for i in range(4)]
        tbase = b.mul(ty, TW)

        def patch(tx, width):
            d = []
            for i in range(4):
                base = b.mul(tx, i64(2))
                if width == 8:
                    lo, hi = vload(b, rowp[i], base), vload(b, rowp[i], b.add(base, i64(8)))
                    lo2, hi2 = (
                        vload(b, rowp[i], b.add(base, i64(2))),
                        vload(b, rowp[i], b.add(base, i64(10))),
                    )
                    d.append(
                        [
                            b.shuffle_vector(lo, hi, even),
                            b.shuffle_vector(lo, hi, odd),
                            b.shuffle_vector(lo2, hi2, even),
                            b.shuffle_vector(lo2, hi2, odd),
                        ]
                    )
                else:
                    d.append([load(b, rowp[i], b.add(base, i64(j))) for j in range(4)])
            return d

        def transform(tx, width):
            d = patch(tx, width)
            cols = [_bt(b, [d[i][j] for i in range(4)]) for j in range(4)]  # cols[j][a]
            t = b.add(tbase, tx)
            for a in range(4):
                v = _bt(b, [cols[j][a] for j in range(4)])
                for bb in range(4):
                    dst = gep(b, vc, b.mul(i64(a * 4 + bb), xi_stride))
                    (vstore if width == 8 else store)(b, v[bb], dst, t)

        with for_range(b, 0, nvec, 8, name="tx8") as tx:
            transform(tx, 8)
        with for_range(b, nvec, TW, name="tx1") as tx:
            transform(tx, 1)


def _output_transform(b, mo, xi_stride, yo, ty0, nty, TW, OH, OW):
    """y[2ty+i][2tx+j] from M_xi[o][t] (mo points at M_0[o][0]) for the chunk's tiles."""
    lo_mask = ir.Constant(ir.VectorType(I32, 8), [0, 8, 1, 9, 2, 10, 3, 11])
    hi_mask = ir.Constant(ir.VectorType(I32, 8), [4, 12, 5, 13, 6, 14, 7, 15])
    nvec = b.and_(b.udiv(OW, i64(2)), i64(~7))  # tile groups whose 16 output columns exist
    with for_range(b, 0, nty, name="oy") as ty:
        tbase = b.mul(ty, TW)
        oy = b.mul(b.add(ty0, ty), i64(2))

        def tiles(tx, width):
            t = b.add(tbase, tx)
            m = [
                [
                    (vload if width == 8 else load)(
                        b, gep(b, mo, b.mul(i64(a * 4 + c), xi_stride)), t
                    )
                    for c in range(4)
                ]
                for a in range(4)
            ]
            rows = [_at(b, [m[a][c] for a in range(4)]) for c in range(4)]  # rows[c][i]
            return [_at(b, [rows[c][i] for c in range(4)]) for i in range(2)]  # y[i][j]

        with for_range(b, 0, nvec, 8, name="ox8") as tx:
            yv = tiles(tx, 8)
            for i in range(2):
                row = b.add(oy, i64(i))
                with b.if_then(b.icmp_signed("<", row, OH)):
                    p = gep(b, yo, b.add(b.mul(row, OW), b.mul(tx, i64(2))))
                    vstore(b, b.shuffle_vector(yv[i][0], yv[i][1], lo_mask), p, 0)
                    vstore(b, b.shuffle_vector(yv[i][0], yv[i][1], hi_mask), p, 8)
        with for_range(b, nvec, TW, name="ox1") as tx:
            yv = tiles(tx, 1)
            for i in range(2):
                for j in range(2):
                    row, col = b.add(oy, i64(i)), b.add(b.mul(tx, i64(2)), i64(j))
                    ok = b.and_(b.icmp_signed("<", row, OH), b.icmp_signed("<", col, OW))
                    with b.if_then(ok):
                        store(b, yv[i][j], yo, b.add(b.mul(row, OW), col))
