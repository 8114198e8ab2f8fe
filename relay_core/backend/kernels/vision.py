"""vision.roi_align, vision.roi_pool and image.crop_and_resize: correct scalar kernels.

They follow the op registry's references operation by operation (box arithmetic in the boxes'
compute dtype, float64 accumulation), so that rounding ties resolve the same way. One work unit is
one (box, channel) pair; roi_align with a fixed sampling ratio takes a box and a block of channels
per unit, its sample positions and weights computed once for them. Batch indices outside the
batch are clamped (the reference raises).
"""

from __future__ import annotations

from .common import KernelFn, KernelInfo, attr, kernel_function, shape_of
from .conv_generic import canonical_strides
from .geometry import data_view, layout_axes, ntuple
from .llvm_util import (
    F32,
    F64,
    I32,
    I64,
    call_intrinsic,
    clamp,
    compute_type,
    const,
    convert,
    entry_alloca,
    for_range,
    i64,
    imax,
    imin,
    llvm_type,
    load_as,
    new_function,
    ptr,
    store_from,
)
from .parallel import clamp_threads, clamp_threads_at_run_time, parallel


def _roi_common(in_types, out_types, attrs, dynamic_k: bool = False):
    """Geometry of a roi op. `dynamic_k`: the boxes' count (output axis 0) is known at run time
    only (boxes from a detector's proposals): the strides do not depend on it (axis 0 of the
    output is outermost in every layout), K is None."""
    layout = attr(attrs, "layout", "NCHW")
    xs = shape_of(in_types[0])
    ys = tuple(out_types[0].shape)
    ax = layout_axes(layout, 2, "N", "C")
    if dynamic_k:
        if ax[0] != 0 or not all(isinstance(d, int) for d in ys[1:]):
            raise NotImplementedError("roi op with a run-time box count: layout or output")
        ys, K = (1,) + ys[1:], None
    else:
        ys, K = shape_of(out_types[0]), shape_of(in_types[1])[0]
    N, C, sp, _ = data_view(xs, layout, 2)
    H, W = sp[1], sp[2]
    xst = canonical_strides(xs, ax, 2)
    yst = canonical_strides(ys, ax, 2)
    ph, pw = ntuple(attr(attrs, "pooled_size", (1, 1)), 2)
    return N, C, H, W, K, ph, pw, xst, yst, ax


def _load_box(b, vals, in_types, k, N):
    """(batch index, x1, y1, x2, y2) of box k, coordinates in the boxes' compute type."""
    rois, rdt = vals[1], in_types[1].dtype
    if len(in_types) == 3:
        base = b.mul(k, i64(4))
        coords = [load_as(b, rois, b.add(base, i64(j)), rdt) for j in range(4)]
        idt = in_types[2].dtype
        bi = convert(b, load_as(b, vals[2], k, idt), idt, "int64")
    else:
        base = b.mul(k, i64(5))
        coords = [load_as(b, rois, b.add(base, i64(j)), rdt) for j in range(1, 5)]
        bi = b.fptosi(load_as(b, rois, base, rdt), I64)
    return clamp(b, bi, i64(0), i64(N - 1)), coords


def _ep_store(b, kf, extras, val, y, yo, dtype, k, c, i, j, ax):
    if kf.ep:
        canon = [k, c, i, j]
        idx = [None] * 4
        for q, a in enumerate(ax):
            idx[a] = canon[q]
        val = kf.ep(b, val, idx, extras)
    store_from(b, val, y, yo, dtype)


def emit_roi_align(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
    geo = _roi_common(in_types, out_types, attrs)
    kf = kernel_function(llmod, name, in_types, out_types, epilogue)
    K, C, ph, pw = geo[4], geo[1], geo[5], geo[6]
    nt = clamp_threads(kf.b, kf.nthreads, 50.0 * K * C * ph * pw, K * C)
    return _roi_align(kf, in_types, out_types, attrs, geo, i64(K), nt)


def emit_dynamic_roi_align(
    llmod, name, in_types, out_types, attrs, const_inputs=(), epilogue=None, n_env=0
):
    """vision.roi_align with the boxes' count known at run time (a detector's proposals): the
    inputs' extents follow the buffers (GroupLowering._try_dynamic_kernel), K is the boxes'."""
    if epilogue is not None:
        raise NotImplementedError("vision.roi_align with a run-time box count: no epilogue")
    geo = _roi_common(in_types, out_types, attrs, dynamic_k=True)
    C, ph, pw = geo[1], geo[5], geo[6]
    ranks = [len(t.shape) for t in in_types]
    args = [ptr(llvm_type(t.dtype)) for t in (*in_types, *out_types)]
    fn, b = new_function(llmod, name, args + [I64] * (sum(ranks) + n_env) + [I32])
    ni, no = len(in_types), len(out_types)
    kf = KernelFn(fn, b, list(fn.args[:ni]), list(fn.args[ni : ni + no]), [], fn.args[-1], None)
    K = fn.args[ni + no + ranks[0]]  # the boxes' axis 0
    work = b.mul(K, i64(50 * C * ph * pw))
    nt = clamp_threads_at_run_time(b, kf.nthreads, work)
    return _roi_align(kf, in_types, out_types, attrs, geo, K, nt)


emit_dynamic_roi_align.out_shape = lambda shapes, attrs, out_type: (
    shapes[1][0],
    *out_type.shape[1:],
)


def _roi_align(kf, in_types, out_types, attrs, geo, K, nt):
    """The kernel's body: one work unit per (box, channel), or with a fixed sampling ratio per
    (box, block of _ROI_CHANNELS channels) (`_roi_tables`); K an i64 value."""
    N, C, H, W, _, ph, pw, xst, yst, ax = geo
    dx, dy = in_types[0].dtype, out_types[0].dtype
    ft = F64 if in_types[1].dtype == "float64" else F32
    half = attr(attrs, "coordinate_transformation_mode", "half_pixel") == "half_pixel"
    scale = float(attr(attrs, "spatial_scale", 1.0))
    ratio = int(attr(attrs, "sample_ratio", 0))
    is_max = attr(attrs, "mode", "avg") == "max"
    ns = len(in_types) + 1 + len(kf.extras)  # shared: buffers, extras, then the unit count

    def axis(b, start, bin_, grid, p, g, size):
        """(low, high, w_low, w_high) of sample g of bin p along an axis of `size`; the
        weights in float64."""
        pos = b.fadd(
            b.fadd(start, b.fmul(b.sitofp(p, ft), bin_)),
            b.fdiv(b.fmul(b.fadd(b.sitofp(g, ft), const(ft, 0.5)), bin_), b.sitofp(grid, ft)),
        )
        valid = b.and_(
            b.fcmp_ordered(">=", pos, const(ft, -1.0)),
            b.fcmp_ordered("<=", pos, const(ft, float(size))),
        )
        pos = b.select(b.fcmp_ordered("<", pos, const(ft, 0.0)), const(ft, 0.0), pos)
        low = b.fptosi(call_intrinsic(b, "floor", [pos]), I64)
        edge = b.icmp_signed(">=", low, i64(size - 1))
        low = b.select(edge, i64(size - 1), low)
        high = b.select(edge, i64(size - 1), b.add(low, i64(1)))
        pos = b.select(edge, b.sitofp(low, ft), pos)
        lw = b.fsub(pos, b.sitofp(low, ft))
        hw = b.fsub(const(ft, 1.0), lw)
        zero = const(ft, 0.0)
        ws = (b.select(valid, hw, zero), b.select(valid, lw, zero))
        if ft == F32:
            ws = tuple(b.fpext(w, F64) for w in ws)
        return low, high, ws[0], ws[1]

    def box(b, vals, k):
        """(batch index, x1, y1, bin height, bin width) of box k, in the boxes' type."""
        bi, (x1, y1, x2, y2) = _load_box(b, vals, in_types, k, N)
        sc, off = const(ft, scale), const(ft, 0.5 if half else 0.0)
        x1, y1, x2, y2 = (b.fsub(b.fmul(v, sc), off) for v in (x1, y1, x2, y2))
        rw, rh = b.fsub(x2, x1), b.fsub(y2, y1)
        if not half:  # malformed rois become 1x1
            one = const(ft, 1.0)
            rw = b.select(b.fcmp_ordered("<", rw, one), one, rw)
            rh = b.select(b.fcmp_ordered("<", rh, one), one, rh)
        return bi, x1, y1, b.fdiv(rh, const(ft, float(ph))), b.fdiv(rw, const(ft, float(pw)))

    def channel(b, vals, acc, inner, bi, k, c, gh, gw, ok, x_samples, y_samples):
        """Every bin of channel c of box k: the samples of bin (i, j) along x are
        `x_samples(j, gx)` and along y `y_samples(i, gy)`, (position, weight) pairs."""
        x, y = vals[0], vals[len(in_types)]
        extras = vals[len(in_types) + 1 : ns]
        plane = b.add(b.mul(bi, i64(xst[0])), b.mul(c, i64(xst[1])))
        with for_range(b, 0, ph, name="i") as i:
            with for_range(b, 0, pw, name="j") as j:
                b.store(const(F64, float("-inf") if is_max else 0.0), acc)
                with for_range(b, 0, gw, name="gx") as gx:
                    for xx, wx in x_samples(j, gx):
                        b.store(const(F64, 0.0), inner)
                        with for_range(b, 0, gh, name="gy") as gy:
                            for yy, wy in y_samples(i, gy):
                                o = b.add(b.mul(yy, i64(xst[3])), b.mul(xx, i64(xst[4])))
                                v = convert(b, load_as(b, x, b.add(plane, o), dx), dx, "float64")
                                if is_max:
                                    t = b.fmul(v, b.fmul(wy, wx))
                                    old = b.load(acc)
                                    b.store(b.select(b.fcmp_unordered(">", t, old), t, old), acc)
                                else:
                                    b.store(b.fadd(b.load(inner), b.fmul(v, wy)), inner)
                        if not is_max:
                            b.store(b.fadd(b.load(acc), b.fmul(b.load(inner), wx)), acc)
                res = b.load(acc)
                if not is_max:
                    res = b.fdiv(res, b.sitofp(b.mul(gh, gw), F64))
                if ok is not None:
                    res = b.select(ok, res, const(F64, 0.0))
                yo = b.add(
                    b.add(b.mul(k, i64(yst[0])), b.mul(c, i64(yst[1]))),
                    b.add(b.mul(i, i64(yst[3])), b.mul(j, i64(yst[4]))),
                )
                val = convert(b, res, "float64", dy)
                _ep_store(b, kf, extras, val, y, yo, dy, k, c, i, j, ax)

    if ratio > 0:
        body = _roi_tables(geo, ratio, axis, box, channel)
        units = kf.b.mul(K, i64(-(-C // _ROI_CHANNELS)))
    else:

        def body(b, vals, sh):
            acc, inner = entry_alloca(b, F64), entry_alloca(b, F64)
            u0, u1 = sh.range(b, vals[-1])  # the unit count: the last shared value
            with for_range(b, u0, u1, name="u") as u:
                k, c = b.udiv(u, i64(C)), b.urem(u, i64(C))
                bi, x1, y1, bh, bw = box(b, vals, k)
                gh = b.fptosi(call_intrinsic(b, "ceil", [bh]), I64)
                gw = b.fptosi(call_intrinsic(b, "ceil", [bw]), I64)
                ok = b.and_(b.icmp_signed(">", gh, i64(0)), b.icmp_signed(">", gw, i64(0)))
                gh, gw = imax(b, gh, i64(1)), imax(b, gw, i64(1))

                def along(start, bin_, grid, size):
                    def samples(p, g):
                        low, high, w_low, w_high = axis(b, start, bin_, grid, p, g, size)
                        return ((low, w_low), (high, w_high))

                    return samples

                xs, ys = along(x1, bw, gw, W), along(y1, bh, gh, H)
                channel(b, vals, acc, inner, bi, k, c, gh, gw, ok, xs, ys)

        units = kf.b.mul(K, i64(C))
    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras + [units], nt, body)
    kf.b.ret_void()
    return KernelInfo(kf.fn)


# Channels per work unit of roi_align with a fixed sampling ratio (the sample positions and
# weights of a box are computed once per unit, then read for each of its channels).
_ROI_CHANNELS = 32


def _roi_tables(geo, R, axis, box, channel):
    """The parallel body of roi_align with sampling ratio R > 0: one work unit per (box, block
    of _ROI_CHANNELS channels). Each sample's (low, high, w_low, w_high) along y and x is
    computed once per unit into tables (the same operations as the per-channel form), then every
    channel accumulates from them in the same order: the results are the same bits. Faster R-CNN
    MobileNetV3 at 320 x 320 (150 boxes x 256 channels, 7 x 7 bins, ratio 2): 17.1 -> 9.8 ms
    (onnxruntime 10.7)."""
    _, C, H, W, _, ph, pw, _, _, _ = geo
    nb = -(-C // _ROI_CHANNELS)

    def body(b, vals, sh):
        acc, inner = entry_alloca(b, F64), entry_alloca(b, F64)
        g = i64(R)
        # per axis and (bin, sample): low, high positions and their weights
        tables = [[entry_alloca(b, t, n * R) for t in (I64, I64, F64, F64)] for n in (ph, pw)]
        u0, u1 = sh.range(b, vals[-1])  # the unit count: the last shared value
        with for_range(b, u0, u1, name="u") as u:
            k, cb = b.udiv(u, i64(nb)), b.urem(u, i64(nb))
            bi, x1, y1, bh, bw = box(b, vals, k)
            for (start, bin_, n, size), tab in zip(((y1, bh, ph, H), (x1, bw, pw, W)), tables):
                with for_range(b, 0, n * R, name="s") as q:
                    sample = axis(b, start, bin_, g, b.udiv(q, g), b.urem(q, g), size)
                    for t, v in zip(tab, sample):
                        b.store(v, b.gep(t, [q]))

            def read(tab):
                def samples(p, gq):
                    q = b.add(b.mul(p, g), gq)
                    lo, hi, wl, wh = (b.load(b.gep(t, [q])) for t in tab)
                    return ((lo, wl), (hi, wh))

                return samples

            c0 = b.mul(cb, i64(_ROI_CHANNELS))
            c1 = imin(b, b.add(c0, i64(_ROI_CHANNELS)), i64(C))
            with for_range(b, c0, c1, name="c") as c:
                channel(b, vals, acc, inner, bi, k, c, g, g, None, read(tables[1]), read(tables[0]))

    return body


def emit_roi_pool(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
    N, C, H, W, K, ph, pw, xst, yst, ax = _roi_common(in_types, out_types, attrs)
    dx = in_types[0].dtype
    ft = F64 if in_types[1].dtype == "float64" else F32
    t = compute_type(dx)
    scale = float(attr(attrs, "spatial_scale", 1.0))
    kf = kernel_function(llmod, name, in_types, out_types, epilogue)
    units = K * C
    nt = clamp_threads(kf.b, kf.nthreads, 50.0 * units * ph * pw, units)

    def body(b, vals, sh):
        x, y = vals[0], vals[len(in_types)]
        extras = vals[len(in_types) + 1 :]
        acc = entry_alloca(b, t)
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="u") as u:
            k, c = b.udiv(u, i64(C)), b.urem(u, i64(C))
            bi, box = _load_box(b, vals, in_types, k, N)
            # C round(): halves away from zero
            x1, y1, x2, y2 = (
                b.fptosi(call_intrinsic(b, "round", [b.fmul(v, const(ft, scale))]), I64)
                for v in box
            )
            rh = imax(b, b.add(b.sub(y2, y1), i64(1)), i64(1))
            rw = imax(b, b.add(b.sub(x2, x1), i64(1)), i64(1))
            bh = b.fdiv(b.sitofp(rh, ft), const(ft, float(ph)))
            bw = b.fdiv(b.sitofp(rw, ft), const(ft, float(pw)))
            plane = b.add(b.mul(bi, i64(xst[0])), b.mul(c, i64(xst[1])))

            def edge(idx, bin_, start, size, fn):
                v = b.fptosi(call_intrinsic(b, fn, [b.fmul(b.sitofp(idx, ft), bin_)]), I64)
                return clamp(b, b.add(v, start), i64(0), i64(size))

            with for_range(b, 0, ph, name="i") as i:
                hs = edge(i, bh, y1, H, "floor")
                he = edge(b.add(i, i64(1)), bh, y1, H, "ceil")
                with for_range(b, 0, pw, name="j") as j:
                    ws = edge(j, bw, x1, W, "floor")
                    we = edge(b.add(j, i64(1)), bw, x1, W, "ceil")
                    empty = b.or_(b.icmp_signed("<=", he, hs), b.icmp_signed("<=", we, ws))
                    b.store(const(t, float("-inf")), acc)
                    with b.if_then(b.not_(empty)):
                        with for_range(b, hs, he, name="yy") as yy:
                            with for_range(b, ws, we, name="xx") as xx:
                                o = b.add(
                                    plane, b.add(b.mul(yy, i64(xst[3])), b.mul(xx, i64(xst[4])))
                                )
                                v = load_as(b, x, o, dx)
                                old = b.load(acc)
                                gt = b.fcmp_unordered(">", v, old)
                                b.store(b.select(gt, v, old), acc)
                    res = b.select(empty, const(t, 0.0), b.load(acc))
                    yo = b.add(
                        b.add(b.mul(k, i64(yst[0])), b.mul(c, i64(yst[1]))),
                        b.add(b.mul(i, i64(yst[3])), b.mul(j, i64(yst[4]))),
                    )
                    _ep_store(b, kf, extras, res, y, yo, dx, k, c, i, j, ax)

    if units:
        parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)
    kf.b.ret_void()
    return KernelInfo(kf.fn)


def emit_crop_and_resize(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
    """TF CropAndResize: per box, resize_axis along H then W with tf_crop_and_resize
    coordinates (roi arithmetic in float32) and extrapolation outside the image."""
    layout = attr(attrs, "layout", "NCHW")
    xs, ys = shape_of(in_types[0]), shape_of(out_types[0])
    N, C, sp, _ = data_view(xs, layout, 2)
    H, W = sp[1], sp[2]
    ax = layout_axes(layout, 2, "N", "C")
    xst, yst = canonical_strides(xs, ax, 2), canonical_strides(ys, ax, 2)
    K = shape_of(in_types[1])[0]
    ch, cw = ntuple(attr(attrs, "crop_size", (1, 1)), 2)
    nearest = attr(attrs, "method", "bilinear") != "bilinear"
    extrap = float(attr(attrs, "extrapolation_value", 0.0))
    dx, dy, dbx = in_types[0].dtype, out_types[0].dtype, in_types[1].dtype
    kf = kernel_function(llmod, name, in_types, out_types, epilogue)
    units = K * C
    nt = clamp_threads(kf.b, kf.nthreads, 20.0 * units * ch * cw, units)

    def coord(b, o, start, end, in_len, out_len):
        """(p, r, outside) of output position o along one axis (see image._source_coords)."""
        s32 = b.fptrunc(start, F32) if start.type == F64 else start
        e32 = b.fptrunc(end, F32) if end.type == F64 else end
        d = b.fsub(e32, s32)
        width = out_len / in_len * in_len  # the reference's float "output length"
        base = b.fmul(s32, const(F32, float(in_len - 1)))
        if width == 1:
            xv = b.fadd(b.fdiv(b.fmul(d, const(F32, float(in_len - 1))), const(F32, 2.0)), base)
            xv = b.fpext(xv, F64)
        else:
            xv = b.fmul(b.fmul(b.sitofp(o, F64), b.fpext(d, F64)), const(F64, float(in_len - 1)))
            xv = b.fdiv(xv, const(F64, width - 1))
            xv = b.fadd(xv, b.fpext(base, F64))
        outside = b.or_(
            b.fcmp_ordered("<", xv, const(F64, 0.0)),
            b.fcmp_ordered(">", xv, const(F64, float(in_len - 1))),
        )
        p = call_intrinsic(b, "floor", [xv])
        r = b.fsub(xv, p)
        whole = b.fcmp_ordered("==", r, const(F64, 0.0))
        pi = b.fptosi(p, I64)
        pi = b.select(whole, b.sub(pi, i64(1)), pi)
        r = b.select(whole, const(F64, 1.0), r)
        return pi, r, outside

    def taps(b, p, r, in_len):
        """[(index, weight)] of the two neighbours (clipped), linear or round-prefer-ceil."""
        lo = clamp(b, p, i64(0), i64(in_len - 1))
        hi = clamp(b, b.add(p, i64(1)), i64(0), i64(in_len - 1))
        if nearest:
            right = b.fcmp_ordered(">=", r, const(F64, 0.5))
            one, zero = const(F64, 1.0), const(F64, 0.0)
            return [(lo, b.select(right, zero, one)), (hi, b.select(right, one, zero))]
        # max(0, 1 - |offset - r|) for offsets 0 and 1, rounded as the reference does
        return [
            (lo, b.fsub(const(F64, 1.0), r)),
            (hi, b.fsub(const(F64, 1.0), b.fsub(const(F64, 1.0), r))),
        ]

    def body(b, vals, sh):
        x, boxes, ind, y = vals[0], vals[1], vals[2], vals[3]
        extras = vals[4:]
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="u") as u:
            k, c = b.udiv(u, i64(C)), b.urem(u, i64(C))
            bx = [load_as(b, boxes, b.add(b.mul(k, i64(4)), i64(j)), dbx) for j in range(4)]
            idt = in_types[2].dtype
            bi = clamp(b, convert(b, load_as(b, ind, k, idt), idt, "int64"), i64(0), i64(N - 1))
            plane = b.add(b.mul(bi, i64(xst[0])), b.mul(c, i64(xst[1])))
            with for_range(b, 0, ch, name="i") as i:
                py, ry, oy = coord(b, i, bx[0], bx[2], H, ch)
                with for_range(b, 0, cw, name="j") as j:
                    pxx, rx, ox = coord(b, j, bx[1], bx[3], W, cw)
                    total = const(F64, 0.0)
                    for xx, wx in taps(b, pxx, rx, W):
                        col = const(F64, 0.0)
                        for yy, wy in taps(b, py, ry, H):
                            o = b.add(plane, b.add(b.mul(yy, i64(xst[3])), b.mul(xx, i64(xst[4]))))
                            v = convert(b, load_as(b, x, o, dx), dx, "float64")
                            col = b.fadd(col, b.fmul(v, wy))
                        col = b.select(oy, const(F64, extrap), col)
                        total = b.fadd(total, b.fmul(col, wx))
                    res = b.select(ox, const(F64, extrap), total)
                    yo = b.add(
                        b.add(b.mul(k, i64(yst[0])), b.mul(c, i64(yst[1]))),
                        b.add(b.mul(i, i64(yst[3])), b.mul(j, i64(yst[4]))),
                    )
                    _ep_store(
                        b, kf, extras, convert(b, res, "float64", dy), y, yo, dy, k, c, i, j, ax
                    )

    if units:
        parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)
    kf.b.ret_void()
    return KernelInfo(kf.fn)
