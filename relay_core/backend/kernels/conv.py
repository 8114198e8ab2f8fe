"""nn.conv1d / nn.conv2d / nn.conv3d on the sgemm engine.

Channel-first data (NCW, NCHW, NCDHW): per image, group and chunk of output positions, an
im2col chunk col[Cg*KK, Pc] (kept in L2) is the GEMM's B operand, the weights (packed into
MR-row panels at compile time when constant) are A, and C rows are output channels: each tile
lands directly in the NCHW output. 1x1 stride-1 convolutions skip im2col (B is the input).
The epilogue runs per output row after a chunk.
Channel-last data (NWC, NHWC, NDHWC): C[position, channel] = col[P, KK*Cg] @ W[KK*Cg, O], the
weights packed into NR-column panels; the epilogue runs on tiles in registers. MR x NR is the
GEMM tile of the target being built (gemm_core.gemm_tile).
Channel-first convolutions (groups 1, constant weights) on small output planes (14x14 and
less), strided ones, windows whose strips pack straight from X (Inception's 1x7 / 7x1, 5x5) and
1x1 ones at batch 1 use conv_strips (Y^T with output positions as
the rows of the tiles); other 1x1 stride-1 ones and stems conv_pointwise (X packed once per
unit, tiles accumulated over the whole reduction). On small planes at batch >= 4, what is left
for the im2col path (few input channels, FORCE="im2col") has work units of several whole
images, their im2col columns side by side in one GEMM (images_per_unit). 3x3 stride-1
convolutions with constant weights (>= 16 channels) use Winograd F(2x2, 3x3) (conv_winograd,
conv_winograd_cl), before conv_strips. Depthwise convolutions go to conv_depthwise; other dtypes
and layouts to conv_generic.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from ...ir.types import TensorType
from ..derived import DerivedPrepack
from . import conv_grouped as grouped
from . import conv_pointwise as pointwise
from . import conv_strips as strips
from . import conv_winograd as winograd
from . import conv_winograd_cl as winograd_cl
from .common import (
    Epi,
    Epilogue,
    KernelInfo,
    attr,
    epilogue_plane,
    epilogue_row,
    kernel_function,
    preferred_variant,
    requested_image_stride,
    shape_of,
)
from .gemm_core import (
    PackedA,
    PackedB,
    RawA,
    RawB,
    StridedB,
    free_buffers,
    gemm_call,
    gemm_tile,
    k_block,
    pack_a_panels,
    pack_b_panels,
    plain_store_fn,
    store_function,
    thread_buffers,
    transposed_store_fn,
)
from .geometry import SPATIAL, Window, data_view, layout_axes, ntuple, pad3, resolve_pads
from .im2col import geom_args, im2col_cf_fn, im2col_cl_fn
from .llvm_util import (
    F32P,
    I64,
    for_range,
    free,
    gep,
    i64,
    imax,
    imin,
    malloc,
    memcpy,
    memset0,
)
from .parallel import clamp_threads, parallel, split_range

L2_BUDGET = 256 * 1024  # bytes of im2col chunk per thread
# Benchmarks and tests only: "im2col" skips the specialised paths (strips, pointwise, Winograd),
# "winograd" takes Winograd and "strips" conv_strips whenever their constraints hold. None: the
# usable() rules.
FORCE: str | None = None
DATA_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
KERNEL_LAYOUTS = {1: "OIW", 2: "OIHW", 3: "OIDHW"}


def conv_window(in_types, out_types, attrs, nd: int, transpose: bool = False):
    """(Window, groups, O, Cg, Og, kernel axes, channel_last) of a convolution call."""
    layout = attr(attrs, "data_layout", DATA_LAYOUTS[nd])
    default_k = ("IO" if transpose else "OI") + SPATIAL[nd]
    klayout = attr(attrs, "kernel_layout", default_k) or default_k
    xs, ws, ys = (shape_of(t) for t in (in_types[0], in_types[1], out_types[0]))
    N, C, sp, cl = data_view(xs, layout, nd)
    _, O, osp, _ = data_view(ys, attr(attrs, "out_layout", "") or layout, nd)
    kax = layout_axes(klayout, nd, "I" if transpose else "O", "O" if transpose else "I")
    ks = tuple(ws[a] for a in kax[2:])
    G = int(attr(attrs, "groups", 1))
    strides = ntuple(attr(attrs, "strides", 1), nd)
    dil = ntuple(attr(attrs, "dilation", 1), nd)
    in_sp = sp[3 - nd :]
    if transpose:
        pb, pe = resolve_pads({"padding": attr(attrs, "padding", 0)}, nd, in_sp, ks, strides, dil)
    else:
        pb, pe = resolve_pads(attrs, nd, in_sp, ks, strides, dil)
    win = Window(
        nd, N, C, sp, osp, pad3(ks, 1), pad3(strides, 1), pad3(dil, 1), pad3(pb, 0), pad3(pe, 0)
    )
    Cg = C // G
    Og = O // G
    return win, G, O, Cg, Og, kax, cl


def canonical_weight(w: np.ndarray, kax: tuple) -> np.ndarray:
    """Weights as (O, I, KD, KH, KW) float32 (unit dims added for 1-D / 2-D kernels)."""
    wc = np.asarray(w, np.float32).transpose(kax)
    return wc.reshape(wc.shape[:2] + pad3(wc.shape[2:], 1))


def emit_conv(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=(), nd=2):
    """Convolution of rank `nd` (1, 2 or 3): `void name(x*, w*, y*, [extras...], i32 nthreads)`."""
    layout = attr(attrs, "data_layout", DATA_LAYOUTS[nd])
    out_layout = attr(attrs, "out_layout", "") or layout
    dts = (in_types[0].dtype, in_types[1].dtype, out_types[0].dtype)
    win, G, O, Cg, Og, kax, cl = conv_window(in_types, out_types, attrs, nd)
    fast = dts == ("float32",) * 3 and out_layout == layout and win.N * O * win.P > 0
    if not fast or Cg * win.KK == 0:
        from .conv_generic import emit_generic_conv

        return emit_generic_conv(llmod, name, in_types, out_types, attrs, epilogue, nd)
    if G > 1 and Cg == 1:
        from .conv_depthwise import emit_depthwise

        return emit_depthwise(
            llmod, name, in_types, out_types, win, G, Og, kax, cl, epilogue, const_inputs
        )
    packed = 1 in tuple(const_inputs)
    unpadded = not any(win.pb) and not any(win.pe)
    if packed and G == 1 and win.KK == win.IP == win.P == 1 and unpadded:
        return _as_dense(llmod, name, win, O, kax, cl, epilogue)
    kf = kernel_function(llmod, name, in_types, out_types, epilogue)
    # strips, pointwise, channel-first Winograd and units of whole images can write images
    # `ys` elements apart (output_image_stride)
    ys = requested_image_stride() if not cl and G == 1 else None
    kf.ys = ys
    # a preferred variant (a batch-block kernel taking its element kernel's) forces its path
    pref = preferred_variant() or (None,)
    force = FORCE or (pref[0] if pref[0] in ("strips", "pointwise", "winograd") else None)
    tr = pref[1] if force == "winograd" and FORCE is None else None
    special = force not in ("im2col", "strips")  # the rules below, or forced Winograd
    wino = special and winograd.usable(win, G, Cg, Og, packed, force == "winograd")
    pw = special and pointwise.usable(win, G, Cg, Og, packed, cl)
    if force == "strips" or (force is None and not wino):
        if strips.usable(win, G, Cg, O, packed, cl, force == "strips"):
            prepack = strips.emit(kf, win, O, Cg)
            kf.b.ret_void()
            return KernelInfo(kf.fn, {1: _with_axes(prepack, kax)}, ("strips",), ys)
    if pw and (
        images_per_unit(win, G, Cg, packed, cl) == 1
        or force == "pointwise"
        or strips.pointwise_batched(win)
    ):
        prepack = pointwise.emit(kf, win, O, Cg)
        kf.b.ret_void()
        return KernelInfo(kf.fn, {1: _with_axes(prepack, kax)}, ("pointwise",), ys)
    if wino:
        if cl:
            pp, variant = winograd_cl.emit(kf, kf.ins[1], win, O, Cg), ("winograd_cl",)
        else:
            pp, tr = winograd.emit(kf, kf.ins[1], win, O, Cg, tr)
            variant = ("winograd", tr)
        kf.b.ret_void()
        pp = _with_axes(pp, kax, shape_of(in_types[1]))
        return KernelInfo(kf.fn, {1: pp}, variant, None if cl else ys)
    if force is None and grouped.usable(win, G, Cg, Og, packed, cl):
        prepack = grouped.emit(kf, win, G, O, Cg)
        kf.b.ret_void()
        return KernelInfo(kf.fn, {1: _with_axes(prepack, kax)}, ("grouped",))
    w = kf.ins[1]
    wbuf = None
    natural = tuple(range(nd + 2)) if not cl else (nd + 1, nd) + tuple(range(nd))
    if not packed and tuple(kax) != natural:
        wbuf = _runtime_permute(kf, w, shape_of(in_types[1]), kax, nd, cl)
        w = wbuf
    ipu = images_per_unit(win, G, Cg, packed, cl)
    if ipu > 1:  # constant weights (packed): no run-time permute
        prepack = _conv_cf_grouped(kf, w, win, O, Cg, ipu)
        kf.b.ret_void()
        return KernelInfo(kf.fn, {1: _with_axes(prepack, kax)}, None, kf.ys)
    kf.ys = None  # the paths below write contiguous images
    if cl:
        prepack = _conv_cl(kf, w, win, G, O, Cg, Og, packed)
    else:
        prepack = _conv_cf(kf, w, win, G, O, Cg, Og, packed)
    if wbuf is not None:
        free(kf.b, wbuf)
    kf.b.ret_void()
    return KernelInfo(kf.fn, {1: _with_axes(prepack, kax)} if packed else {})


def _as_dense(llmod, name, win: Window, O: int, kax, cl: bool, epilogue) -> KernelInfo:
    """A 1x1 convolution of a 1x1 plane (the head of MobileNetV3 / V4, LCNet, HGNetV2 after
    global pooling, in either data layout) is a dense layer: x (N, C) times the weights (O, C).
    gemm_ops streams the weights for the few rows of a batch; the convolution kernels had one
    output position per image to tile (1024 -> 2048 at batch 8: 2.9 ms against 0.7)."""
    from .gemm_ops import emit_dense, prepack_b

    info = emit_dense(
        llmod,
        name,
        [TensorType((win.N, win.C), "float32"), TensorType((O, win.C), "float32")],
        [TensorType((win.N, O), "float32")],
        None,
        _dense_epilogue(Epi(epilogue), win.nd, cl),
        const_inputs=(1,),
    )
    pack = prepack_b(True)
    return KernelInfo(info.func, {1: _with_axes(lambda wc: pack(wc.reshape(O, win.C)), kax)})


def _dense_epilogue(ep: Epi, nd: int, cl: bool):
    """The convolution's epilogue called with the dense kernel's (row, column) indices, the
    unit spatial axes at 0. The dense kernel's vectors run along the channels: an epilogue
    built from the fused group takes the channel axis last (`Epi.permuted`) so that its lanes
    do too; a plain callable is applied lane by lane."""
    if not ep:
        return None
    zeros = [i64(0)] * nd
    last = ep if cl else ep.permuted([0, *range(2, 2 + nd), 1])
    if last is not None:  # indices (n, 0.., o)

        def fn(b, v, idx, extras):
            return last(b, v, [idx[0], *zeros, *idx[1:]], extras)

        return Epilogue(fn, ep.extra_types)

    def per_lane(b, v, idx, extras):  # indices (n, o, 0..)
        if not isinstance(v.type, ir.VectorType):
            return ep(b, v, [idx[0], idx[1], *zeros, *idx[2:]], extras)
        out = v
        for k in range(v.type.count):
            lane = ir.Constant(ir.IntType(32), k)
            at = [idx[0], b.add(idx[1], i64(k)), *zeros, *idx[2:]]
            out = b.insert_element(out, ep(b, b.extract_element(v, lane), at, extras), lane)
        return out

    return Epilogue(per_lane, ep.extra_types)


def _with_axes(prepack, kax, wshape=None):
    fn = lambda w: prepack(canonical_weight(w, kax))  # noqa: E731
    if isinstance(prepack, DerivedPrepack):  # computed at load time: from the weight's strides
        st = [int(np.prod(wshape[a + 1 :])) for a in range(len(wshape))]
        return prepack.reading(fn, tuple(st[a] for a in kax))
    return fn


def _runtime_permute(kf, w, wshape, kax, nd, cl):
    """Copy non-constant weights into the layout the kernel reads: OI+spatial (channel-first)
    or spatial+IO (channel-last)."""
    b = kf.b
    dst_axes = ([kax[0], kax[1]] + list(kax[2:])) if not cl else (list(kax[2:]) + [kax[1], kax[0]])
    dims = [wshape[a] for a in dst_axes]
    total = int(np.prod(dims))
    buf = b.bitcast(malloc(b, i64(4 * max(total, 1))), F32P)
    src_strides = [int(np.prod(wshape[a + 1 :])) for a in range(len(wshape))]
    with for_range(b, 0, total, name="wp") as i:
        rem, off = i, i64(0)
        for d, a in reversed(list(zip(dims, dst_axes))):
            off = b.add(off, b.mul(b.urem(rem, i64(d)), i64(src_strides[a])))
            rem = b.udiv(rem, i64(d))
        b.store(b.load(gep(b, w, off)), gep(b, buf, i))
    return buf


def _chunk(P: int, K: int, NR: int) -> int:
    """Output positions per im2col chunk: a multiple of NR near K x chunk floats = the L2 budget,
    chosen so that two threads get equal shares of the chunks."""
    c0 = max(4 * NR, (L2_BUDGET // (4 * max(K, 1))) // NR * NR)
    if c0 >= P:
        return -(-P // NR) * NR

    def cost(c):
        n = -(-P // c)
        first = min(P, -(-n // 2) * c)  # thread 0 takes the first half of the chunks
        return (max(first, P - first), abs(c - c0))

    return min((NR * j for j in range(max(1, c0 // (2 * NR)), 2 * c0 // NR + 1)), key=cost)


def _spatial_prefix(b, win: Window, r):
    """The spatial indices before W of output row r (= od * OH + oh)."""
    if win.nd == 1:
        return []
    if win.nd == 2:
        return [r]
    return [b.udiv(r, i64(win.osp[1])), b.urem(r, i64(win.osp[1]))]


def _conv_cf(kf, w, win: Window, G, O, Cg, Og, packed):
    """Channel-first convolution; returns the weight prepack (canonical -> A panels)."""
    Kg = Cg * win.KK
    P, IP = win.P, win.IP
    MR, NR = gemm_tile().mr, gemm_tile().nr
    # 1x1 stride-1 unpadded: B is the input itself, packed by the driver (reading it strided
    # in place would alias L1 sets whenever the plane is an even number of cache lines)
    direct = win.KK == 1 and win.s == (1, 1, 1) and win.pb == (0, 0, 0) and win.sp == win.osp
    # few input channels: B read in place (its Kg rows fit L1 whatever their alignment; rows
    # are read in whole 16-float panels, so the plane must be a multiple of 16)
    inplace = direct and Kg <= 64 and P % NR == 0
    pc_max = _chunk(P, Kg, NR)
    nchunks = -(-P // pc_max)
    ld = pc_max if (pc_max // 16) % 2 else pc_max + 16  # odd number of cache lines per row
    base_units = win.N * G * nchunks
    flops = 2.0 * win.N * O * P * Kg
    nt = clamp_threads(kf.b, kf.nthreads, flops, base_units * max(1, -(-Og // MR)))
    # few output positions: C^T = col^T @ W^T wastes less of the NR-wide tiles (positions become
    # MR-row tiles, output channels NR-column ones); the tiles are stored transposed
    tr = P < 128 and (-(-P // NR) * NR) / P > (-(-P // MR) * MR) / P + 0.1 and Og >= NR
    store_fn = transposed_store_fn(kf.b.module) if tr else plain_store_fn(kf.b.module)
    npan = -(-Og // NR)
    OW = win.osp[2]
    # K in as few blocks as gemm_core allows when the weights are packed and the other operand
    # is not packed at run time into a KC-row buffer (k_block)
    b_packs = not tr and direct and not inplace
    kcb = k_block(Kg, packed and not b_packs)

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        col = None if direct else b.bitcast(malloc(b, i64(4 * Kg * ld)), F32P)
        if tr:
            bw = PackedB(wp) if packed else RawB(wp, 1, 1)
            abuf, bbuf = thread_buffers(b, RawA(x, 1, 1), bw, pc_max, Og, Kg, kcb)
        else:
            b_kind = RawB(x, P, 1) if b_packs else StridedB(x, 1)
            abuf, bbuf = thread_buffers(
                b, PackedA(wp) if packed else RawA(wp, Kg, 1), b_kind, Og, pc_max, Kg, kcb
            )
        bu_n = i64(base_units)
        parts = sh.parts(b, base_units)
        u0, u1 = sh.range(b, b.mul(bu_n, parts))
        with for_range(b, u0, u1, name="unit") as u:
            bu = b.udiv(u, parts)
            part = b.urem(u, parts)
            n = b.udiv(bu, i64(G * nchunks))
            g = b.urem(b.udiv(bu, i64(nchunks)), i64(G))
            ch = b.urem(bu, i64(nchunks))
            p0 = b.mul(ch, i64(pc_max))
            pc = imin(b, i64(pc_max), b.sub(i64(P), p0))
            xg = gep(b, x, b.mul(b.add(b.mul(n, i64(win.C)), b.mul(g, i64(Cg))), i64(IP)))
            ybase = gep(b, y, b.add(b.mul(b.add(b.mul(n, i64(O)), b.mul(g, i64(Og))), i64(P)), p0))
            if not direct:
                b.call(im2col_cf_fn(b.module), [xg, col, i64(ld), p0, pc, *geom_args(win, Cg)])
            if tr:  # A = positions x K (the im2col chunk read transposed), B = weight panels
                c0, c1 = split_range(b, Og, part, parts, NR)
                a = RawA(gep(b, xg, p0), 1, P) if direct else RawA(col, 1, ld)
                if packed:
                    bsrc = PackedB(gep(b, wp, b.mul(g, i64(npan * Kg * NR))))
                else:
                    bsrc = RawB(gep(b, wp, b.mul(g, i64(Og * Kg))), 1, Kg)
                gemm_call(b, a, bsrc, Kg, 0, pc, c0, c1, store_fn, [ybase, i64(P)], abuf, bbuf, kcb)
            else:  # A = weight panels, B = the im2col chunk (or the input for 1x1)
                c0, c1 = split_range(b, Og, part, parts, MR)
                if inplace:
                    bsrc = StridedB(gep(b, xg, p0), P)
                else:
                    bsrc = RawB(gep(b, xg, p0), P, 1) if direct else StridedB(col, ld)
                wg = gep(b, wp, b.mul(g, i64(Og * Kg)))
                a = PackedA(wg) if packed else RawA(wg, Kg, 1)
                gemm_call(b, a, bsrc, Kg, c0, c1, 0, pc, store_fn, [ybase, i64(P)], abuf, bbuf, kcb)
            if kf.ep:
                _epilogue_chunk(
                    b, kf.ep, extras, y, win, O, n, b.mul(g, i64(Og)), c0, c1, p0, pc, OW
                )
        sh.end(b)
        free_buffers(b, col, abuf, bbuf)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)

    def prepack(wc):
        wc = wc.reshape(G, Og, Kg)
        if tr:
            return np.concatenate([pack_b_panels(wc[g].T, NR).ravel() for g in range(G)])
        return np.concatenate([pack_a_panels(wc[g], MR) for g in range(G)])

    return prepack


GROUP_COL_BYTES = 4 << 20  # im2col bytes of a unit of several images
GROUP_MAX_P = 128  # planes of fewer output positions are grouped (14x14 ones measured no faster)


def images_per_unit(win: Window, G: int, Cg: int, packed: bool, cl: bool) -> int:
    """Images per work unit of the channel-first im2col path: small planes (7x7, 14x14 in
    ResNets) fill few of the GEMM's NR-wide column tiles per image, and every image streams
    all the weights once (a 2048x512 1x1 convolution on 7x7: 4 MB of weights per 49
    positions). Several images in one unit: their im2col columns side by side, one GEMM.
    Chosen to minimise computed columns (rounded up to NR) over rounds of two threads, with
    at least two units."""
    N, P = win.N, win.P
    if cl or not packed or G != 1 or N < 2 or P >= GROUP_MAX_P or win.nd != 2:
        return 1
    NR = gemm_tile().nr
    Kg = Cg * win.KK

    def rup(v):
        return -(-v // NR) * NR

    best, best_cost = 1, -(-N // 2) * rup(P)
    for ipu in range(2, N // 2 + 1):
        if 4 * Kg * ((ipu - 1) * P + rup(P)) > GROUP_COL_BYTES:
            break
        units = -(-N // ipu)
        cost = -(-units // 2) * rup(ipu * P)  # rounds of two units x columns
        if cost <= best_cost:  # ties: more images, fewer passes over the weights
            best, best_cost = ipu, cost
    return best


def _conv_cf_grouped(kf, w, win: Window, O, Cg, ipu):
    """Channel-first convolution (groups 1, constant weights) whose work units are `ipu`
    whole images: the images' im2col columns side by side in one chunk, one GEMM into a
    per-thread [O, ld] buffer, then each image's rows copied out (and the epilogue)."""
    Kg = Cg * win.KK
    P, IP = win.P, win.IP
    MR, NR = gemm_tile().mr, gemm_tile().nr
    N = win.N
    ld = max(-(-ipu * P // NR) * NR, (ipu - 1) * P + -(-P // NR) * NR)  # im2col pads rows
    ld = ld if (ld // 16) % 2 else ld + 16  # odd number of cache lines per row
    units0 = -(-N // ipu)
    flops = 2.0 * N * O * P * Kg
    nt = clamp_threads(kf.b, kf.nthreads, flops, units0 * max(1, -(-O // MR)))
    store_fn = plain_store_fn(kf.b.module)
    OW = win.osp[2]
    ys = kf.ys or O * P  # elements between output images

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        col = b.bitcast(malloc(b, i64(4 * Kg * ld)), F32P)
        memset0(b, col, i64(4 * Kg * ld))  # columns past the last image's padding
        yb = b.bitcast(malloc(b, i64(4 * O * ld)), F32P)
        parts = sh.parts(b, units0)
        u0, u1 = sh.range(b, b.mul(i64(units0), parts))
        with for_range(b, u0, u1, name="unit") as u:
            ng, part = b.udiv(u, parts), b.urem(u, parts)
            n0 = b.mul(ng, i64(ipu))
            nimg = imin(b, i64(ipu), b.sub(i64(N), n0))
            with for_range(b, 0, nimg, name="img") as im:
                xg = gep(b, x, b.mul(b.add(n0, im), i64(win.C * IP)))
                dst = gep(b, col, b.mul(im, i64(P)))
                geo = geom_args(win, Cg)
                b.call(im2col_cf_fn(b.module), [xg, dst, i64(ld), i64(0), i64(P), *geo])
            c0, c1 = split_range(b, O, part, parts, MR)
            tc = b.mul(nimg, i64(P))
            gemm_call(b, PackedA(wp), StridedB(col, ld), Kg, c0, c1, 0, tc, store_fn, [yb, i64(ld)])
            with for_range(b, 0, nimg, name="oimg") as im:
                n = b.add(n0, im)
                with for_range(b, c0, c1, name="orow") as m:
                    src = gep(b, yb, b.add(b.mul(m, i64(ld)), b.mul(im, i64(P))))
                    dst = gep(b, y, b.add(b.mul(n, i64(ys)), b.mul(m, i64(P))))
                    memcpy(b, dst, src, i64(4 * P))
                if kf.ep:
                    ep_args = (n, i64(0), c0, c1, i64(0), i64(P), OW, ys)
                    _epilogue_chunk(b, kf.ep, extras, y, win, O, *ep_args)
        sh.end(b)
        free_buffers(b, col, yb)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)
    return lambda wc: pack_a_panels(wc.reshape(O, Kg), MR)


def _epilogue_chunk(b, ep, extras, y, win, O, n, c0, m0, m1, p0, pc, OW, ys=None):
    """Epilogue over y[n, c0 + m, p0:p0+pc] for m in [m0, m1), one output row at a time, or
    as one run per channel when the epilogue depends on (image, channel) only (rows of 7 or 14
    would be all or mostly scalar tails). `ys`: elements between images of y (O * P: none)."""
    ys = O * win.P if ys is None else ys
    if ep.invariant_from(2):
        with for_range(b, m0, m1, name="em") as m:
            c = b.add(c0, m)
            plane = gep(b, y, b.add(b.mul(n, i64(ys)), b.mul(c, i64(win.P))))
            epilogue_plane(b, ep, extras, gep(b, plane, p0), pc, [n, c], win.nd)
        return
    if ep.flat_from(2, win.osp[3 - win.nd :]):  # a residual: one run per channel too
        zeros = [i64(0)] * (win.nd - 1)
        with for_range(b, m0, m1, name="em") as m:
            c = b.add(c0, m)
            plane = gep(b, y, b.add(b.mul(n, i64(ys)), b.mul(c, i64(win.P))))
            epilogue_row(b, ep, extras, gep(b, plane, p0), pc, [n, c, *zeros], p0)
        return
    p1 = b.add(p0, pc)
    r0 = b.udiv(p0, i64(OW))
    r1 = b.udiv(b.sub(p1, i64(1)), i64(OW))
    with for_range(b, m0, m1, name="em") as m:
        c = b.add(c0, m)
        plane = gep(b, y, b.add(b.mul(n, i64(ys)), b.mul(c, i64(win.P))))
        with for_range(b, r0, b.add(r1, i64(1)), name="er") as r:
            rbase = b.mul(r, i64(OW))
            a = imax(b, p0, rbase)
            e = imin(b, p1, b.add(rbase, i64(OW)))
            prefix = [n, c] + _spatial_prefix(b, win, r)
            epilogue_row(b, ep, extras, gep(b, plane, a), b.sub(e, a), prefix, b.sub(a, rbase))


def _conv_cl(kf, w, win: Window, G, O, Cg, Og, packed):
    """Channel-last convolution; returns the weight prepack (canonical -> B panels)."""
    Kg = Cg * win.KK
    P, IP, C = win.P, win.IP, win.C
    MR, NR = gemm_tile().mr, gemm_tile().nr
    npan = -(-Og // NR)
    direct = win.KK == 1 and win.s == (1, 1, 1) and win.pb == (0, 0, 0) and win.sp == win.osp
    pc_max = P if direct else max(MR, min(P, L2_BUDGET // (4 * max(Kg, 1)) // MR * MR))
    nchunks = -(-P // pc_max)
    base_units = win.N * G * nchunks
    flops = 2.0 * win.N * O * P * Kg
    nt = clamp_threads(kf.b, kf.nthreads, flops, base_units * max(1, -(-P // MR)))
    OD, OH, OW = win.osp
    extra_t = [e.type for e in kf.extras]
    kcb = k_block(Kg, packed)

    def index_fn(b, f, m, o):
        p = b.add(f[2], m)
        sp = [b.urem(p, i64(OW))]
        if win.nd >= 2:
            sp.insert(0, b.urem(b.udiv(p, i64(OW)), i64(OH)))
        if win.nd == 3:
            sp.insert(0, b.udiv(p, i64(OW * OH)))
        return [f[1], *sp, b.add(f[3], o)]

    store_fn = (
        store_function(
            kf.b.module,
            f"{kf.fn.name}.store",
            [F32P, I64, I64, I64, *extra_t],
            c_of=lambda b, f: (f[0], O),
            ep=kf.ep,
            index_fn=index_fn,
            extras_of=lambda b, f: f[4:],
            vector_ok=Og >= 8,
        )
        if kf.ep
        else plain_store_fn(kf.b.module)
    )

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        col = None if direct else b.bitcast(malloc(b, i64(4 * Kg * pc_max)), F32P)
        bu_n = i64(base_units)
        parts = sh.parts(b, base_units)
        bw = gep(b, wp, i64(0))
        b0 = PackedB(bw) if packed else RawB(bw, O, 1)
        a0 = RawA(x, 0, 1)
        abuf, bbuf = thread_buffers(b, a0, b0, pc_max, Og, Kg, kcb)
        u0, u1 = sh.range(b, b.mul(bu_n, parts))
        with for_range(b, u0, u1, name="unit") as u:
            bu = b.udiv(u, parts)
            part = b.urem(u, parts)
            n = b.udiv(bu, i64(G * nchunks))
            g = b.urem(b.udiv(bu, i64(nchunks)), i64(G))
            ch = b.urem(bu, i64(nchunks))
            p0 = b.mul(ch, i64(pc_max))
            pc = imin(b, i64(pc_max), b.sub(i64(P), p0))
            o0, o1 = split_range(b, Og, part, parts, NR)
            xg = gep(b, x, b.add(b.mul(n, i64(IP * C)), b.mul(g, i64(Cg))))
            if direct:
                a = RawA(gep(b, xg, b.mul(p0, i64(C))), C, 1)
            else:
                b.call(im2col_cl_fn(b.module), [xg, col, i64(C), p0, pc, *geom_args(win, Cg)])
                a = RawA(col, Kg, 1)
            if packed:
                bsrc = PackedB(gep(b, wp, b.mul(g, i64(npan * Kg * NR))))
            else:
                bsrc = RawB(gep(b, wp, b.mul(g, i64(Og))), O, 1)
            ybase = gep(b, y, b.add(b.mul(b.add(b.mul(n, i64(P)), p0), i64(O)), b.mul(g, i64(Og))))
            ctx = [ybase, i64(O)] if not kf.ep else [ybase, n, p0, b.mul(g, i64(Og)), *extras]
            gemm_call(b, a, bsrc, Kg, 0, pc, o0, o1, store_fn, ctx, abuf, bbuf, kcb)
        sh.end(b)
        free_buffers(b, abuf, bbuf, col)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)

    def prepack(wc):
        kd, kh, kw = wc.shape[2:]
        wg = wc.reshape(G, Og, Cg, kd, kh, kw).transpose(0, 3, 4, 5, 2, 1).reshape(G, Kg, Og)
        return np.concatenate([pack_b_panels(wg[g], NR).ravel() for g in range(G)])

    return prepack


def emit_conv1d(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
    return emit_conv(llmod, name, in_types, out_types, attrs, epilogue, const_inputs, nd=1)


def emit_conv2d(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
    return emit_conv(llmod, name, in_types, out_types, attrs, epilogue, const_inputs, nd=2)


def emit_conv3d(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
    return emit_conv(llmod, name, in_types, out_types, attrs, epilogue, const_inputs, nd=3)
