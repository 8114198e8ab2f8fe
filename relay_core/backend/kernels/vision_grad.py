"""vision.roi_align_grad and vision.roi_pool_grad: scalar kernels following the references
(relay_core/ops/vision_grad.py) step by step, with the forward kernels' per-roi iteration
(relay_core/backend/kernels/vision.py): box arithmetic in the boxes' compute dtype, run-time
sample counts (sample_ratio <= 0), float64 accumulation.

d data is a scatter: work is split by channel (each thread owns whole channels of d data, so
no two threads add to one element), accumulated in a float64 scratch per thread and converted
at the end. d rois (roi_align) sums over channels per roi: a second pass split by roi. In max
mode the gradient goes to the first maximal weighted corner in the reference's order (y sample,
y corner, x sample, x corner; roi_pool: row-major over the window), a NaN counting as maximal.
"""

from __future__ import annotations

from .common import KernelInfo, attr, kernel_function, shape_of
from .llvm_util import (
    F32,
    F64,
    I1,
    I64,
    call_intrinsic,
    clamp,
    compute_type,
    const,
    convert,
    entry_alloca,
    for_range,
    free,
    i64,
    load_as,
    malloc,
    memset0,
    store_from,
)
from .parallel import clamp_threads, parallel
from .vision import _load_box, _roi_common


def _setup(llmod, name, in_types, out_types, attrs, epilogue):
    if epilogue is not None:  # two outputs: nothing to fuse into
        raise NotImplementedError("roi gradients take no epilogue")
    fwd = in_types[:-1]
    N, C, H, W, K, ph, pw, xst, gst, _ = _roi_common(fwd, in_types[-1:], attrs)
    shape_of(out_types[0])
    kf = kernel_function(llmod, name, in_types, out_types)
    return fwd, (N, C, H, W, K, ph, pw, xst, gst), kf


def _first_max(b, t, best, have):
    """Whether t replaces the running maximum: the first value, a larger one, or the first NaN
    (numpy's argmax)."""
    h = b.load(have)
    old = b.load(best)
    nan_t = b.fcmp_unordered("uno", t, t)
    nan_old = b.fcmp_unordered("uno", old, old)
    better = b.or_(b.fcmp_ordered(">", t, old), b.and_(nan_t, b.not_(nan_old)))
    return b.or_(b.not_(h), better)


def _dx_pass(kf, in_types, dims, nt_work, scatter):
    """Zero-initialised float64 scratch per channel, `scatter(b, vals, c, scratch)` for every
    roi, then the scratch converted into d data."""
    N, C, H, W, K, ph, pw, xst, gst = dims
    xdt = in_types[0].dtype
    if not N * C * H * W:
        return
    plane = N * H * W
    nt = clamp_threads(kf.b, kf.nthreads, nt_work, C)

    def body(b, vals, sh):
        dx = vals[len(in_types)]
        scratch = b.bitcast(malloc(b, i64(plane * 8)), F64.as_pointer())
        c0, c1 = sh.range(b, C)
        with for_range(b, c0, c1, name="c") as c:
            memset0(b, scratch, i64(plane * 8))
            scatter(b, vals, c, scratch)
            with for_range(b, 0, N, name="n") as n:
                with for_range(b, 0, H, name="y") as yy:
                    with for_range(b, 0, W, name="x") as xx:
                        so = b.add(b.mul(b.add(b.mul(n, i64(H)), yy), i64(W)), xx)
                        v = b.load(b.gep(scratch, [so]))
                        o = b.add(
                            b.add(b.mul(n, i64(xst[0])), b.mul(c, i64(xst[1]))),
                            b.add(b.mul(yy, i64(xst[3])), b.mul(xx, i64(xst[4]))),
                        )
                        store_from(b, convert(b, v, "float64", xdt), dx, o, xdt)
        sh.end(b)
        free(b, scratch)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs, nt, body)


def emit_roi_align_grad(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
    fwd, dims, kf = _setup(llmod, name, in_types, out_types, attrs, epilogue)
    N, C, H, W, K, ph, pw, xst, gst = dims
    xdt, gdt, rdt = in_types[0].dtype, in_types[-1].dtype, in_types[1].dtype
    ft = F64 if rdt == "float64" else F32
    half = attr(attrs, "coordinate_transformation_mode", "half_pixel") == "half_pixel"
    scale = float(attr(attrs, "spatial_scale", 1.0))
    ratio = int(attr(attrs, "sample_ratio", 0))
    is_max = attr(attrs, "mode", "avg") == "max"
    ncol = shape_of(in_types[1])[1]
    work = 50.0 * K * C * ph * pw

    def f64(b, v):
        return b.fpext(v, F64) if v.type == F32 else v

    def axis(b, start, bin_, grid, p, g, size):
        """Sample g of bin p along an axis: (low, high, w_low, w_high, d w_high / d pos,
        d pos / d bin); weights and slopes in float64, as the reference's _axis_grad."""
        gf = b.sitofp(g, ft)
        pf = b.sitofp(p, ft)
        pos = b.fadd(
            b.fadd(start, b.fmul(pf, bin_)),
            b.fdiv(b.fmul(b.fadd(gf, const(ft, 0.5)), bin_), b.sitofp(grid, ft)),
        )
        dbin = f64(b, b.fadd(pf, b.fdiv(b.fadd(gf, const(ft, 0.5)), b.sitofp(grid, ft))))
        valid = b.and_(
            b.fcmp_ordered(">=", pos, const(ft, -1.0)),
            b.fcmp_ordered("<=", pos, const(ft, float(size))),
        )
        moves = b.fcmp_ordered(">", pos, const(ft, 0.0))
        pos = b.select(b.fcmp_ordered("<", pos, const(ft, 0.0)), const(ft, 0.0), pos)
        low = b.fptosi(call_intrinsic(b, "floor", [pos]), I64)
        edge = b.icmp_signed(">=", low, i64(size - 1))
        low = b.select(edge, i64(size - 1), low)
        high = b.select(edge, i64(size - 1), b.add(low, i64(1)))
        pos = b.select(edge, b.sitofp(low, ft), pos)
        lw = f64(b, b.fsub(pos, b.sitofp(low, ft)))
        z, one = const(F64, 0.0), const(F64, 1.0)
        v = b.select(valid, one, z)
        slope = b.select(b.and_(b.and_(valid, moves), b.not_(edge)), one, z)
        return low, high, b.fmul(b.fsub(one, lw), v), b.fmul(lw, v), slope, dbin

    def roi(b, vals, k):
        bi, (x1, y1, x2, y2) = _load_box(b, vals, fwd, k, N)
        sc, off = const(ft, scale), const(ft, 0.5 if half else 0.0)
        x1, y1, x2, y2 = (b.fsub(b.fmul(v, sc), off) for v in (x1, y1, x2, y2))
        rw, rh = b.fsub(x2, x1), b.fsub(y2, y1)
        one, z = const(F64, 1.0), const(F64, 0.0)
        sw = sh = one
        if not half:  # malformed rois become 1x1 (and lose their size derivative)
            f1 = const(ft, 1.0)
            sw = b.select(b.fcmp_ordered(">=", rw, f1), one, z)
            sh = b.select(b.fcmp_ordered(">=", rh, f1), one, z)
            rw = b.select(b.fcmp_ordered("<", rw, f1), f1, rw)
            rh = b.select(b.fcmp_ordered("<", rh, f1), f1, rh)
        bh, bw = b.fdiv(rh, const(ft, float(ph))), b.fdiv(rw, const(ft, float(pw)))
        if ratio > 0:
            gh = gw = i64(ratio)
        else:
            gh = b.fptosi(call_intrinsic(b, "ceil", [bh]), I64)
            gw = b.fptosi(call_intrinsic(b, "ceil", [bw]), I64)
        ok = b.and_(b.icmp_signed(">", gh, i64(0)), b.icmp_signed(">", gw, i64(0)))
        return dict(bi=bi, x1=x1, y1=y1, bh=bh, bw=bw, gh=gh, gw=gw, ok=ok, sw=sw, sh=sh)

    def each_corner(b, vals, k, c, r, on_corner):
        """on_corner(b, yy, xx, wy, wx, sy, sx, dby, dbx, coef, corner) for every corner that
        gets gradient from output (k, c, i, j): all four of every sample (avg) or the first
        maximal weighted one (max). sy / sx: d w / d pos of the corner."""
        x, g = vals[0], vals[len(in_types) - 1]
        plane = b.add(b.mul(r["bi"], i64(xst[0])), b.mul(c, i64(xst[1])))
        gh, gw = r["gh"], r["gw"]

        def px(yy, xx):
            o = b.add(plane, b.add(b.mul(yy, i64(xst[3])), b.mul(xx, i64(xst[4]))))
            return convert(b, load_as(b, x, o, xdt), xdt, "float64")

        def corners(ay):
            yl, yh, wyl, wyh, sl, _ = ay
            neg = b.fneg(sl)
            return ((0, yl, wyl, neg), (1, yh, wyh, sl))

        if is_max:
            best = entry_alloca(b, F64)
            have = entry_alloca(b, I1)
            sel = [entry_alloca(b, I64) for _ in range(4)]  # gy, y corner, gx, x corner
        with b.if_then(r["ok"]):
            with for_range(b, 0, ph, name="i") as i:
                with for_range(b, 0, pw, name="j") as j:
                    go = b.add(
                        b.add(b.mul(k, i64(gst[0])), b.mul(c, i64(gst[1]))),
                        b.add(b.mul(i, i64(gst[3])), b.mul(j, i64(gst[4]))),
                    )
                    gv = convert(b, load_as(b, g, go, gdt), gdt, "float64")
                    if not is_max:
                        coef = b.fdiv(gv, b.sitofp(b.mul(gh, gw), F64))
                    else:
                        b.store(const(I1, 0), have)
                        b.store(const(F64, 0.0), best)
                    with for_range(b, 0, gh, name="gy") as gy:
                        ay = axis(b, r["y1"], r["bh"], gh, i, gy, H)
                        for yc, yy, wy, sy in corners(ay):
                            with for_range(b, 0, gw, name="gx") as gx:
                                ax_ = axis(b, r["x1"], r["bw"], gw, j, gx, W)
                                for xc, xx, wx, sx in corners(ax_):
                                    v = px(yy, xx)
                                    if not is_max:
                                        on_corner(b, yy, xx, wy, wx, sy, sx, ay[5], ax_[5], coef, v)
                                        continue
                                    t = b.fmul(v, b.fmul(wy, wx))
                                    with b.if_then(_first_max(b, t, best, have)):
                                        b.store(t, best)
                                        b.store(const(I1, 1), have)
                                        for s, val in zip(sel, (gy, i64(yc), gx, i64(xc))):
                                            b.store(val, s)
                    if is_max:
                        with b.if_then(b.load(have)):
                            gy, yc, gx, xc = (b.load(s) for s in sel)
                            ay = axis(b, r["y1"], r["bh"], gh, i, gy, H)
                            ax_ = axis(b, r["x1"], r["bw"], gw, j, gx, W)
                            (_, yl, wyl, syl), (_, yh, wyh, syh) = corners(ay)
                            (_, xl, wxl, sxl), (_, xh, wxh, sxh) = corners(ax_)
                            hy = b.icmp_signed("!=", yc, i64(0))
                            hx = b.icmp_signed("!=", xc, i64(0))
                            yy, wy, sy = (
                                b.select(hy, h, lo) for h, lo in ((yh, yl), (wyh, wyl), (syh, syl))
                            )
                            xx, wx, sx = (
                                b.select(hx, h, lo) for h, lo in ((xh, xl), (wxh, wxl), (sxh, sxl))
                            )
                            on_corner(b, yy, xx, wy, wx, sy, sx, ay[5], ax_[5], gv, px(yy, xx))

    def scatter(b, vals, c, scratch):
        with for_range(b, 0, K, name="k") as k:
            r = roi(b, vals, k)

            def add(b, yy, xx, wy, wx, sy, sx, dby, dbx, coef, v):
                so = b.add(b.mul(b.add(b.mul(r["bi"], i64(H)), yy), i64(W)), xx)
                p = b.gep(scratch, [so])
                b.store(b.fadd(b.load(p), b.fmul(coef, b.fmul(wy, wx))), p)

            each_corner(b, vals, k, c, r, add)

    _dx_pass(kf, in_types, dims, work, scatter)

    # d rois: per roi, sums over channels, bins and samples of d out / d sample position
    if K:
        nt = clamp_threads(kf.b, kf.nthreads, work, K)

        def body(b, vals, sh):
            dr = vals[len(in_types) + 1]
            acc = [entry_alloca(b, F64) for _ in range(4)]  # sum dpy, sum dpy*dby, dpx, dpx*dbx
            k0, k1 = sh.range(b, K)
            with for_range(b, k0, k1, name="k") as k:
                for a in acc:
                    b.store(const(F64, 0.0), a)
                if N * C * H * W:
                    r = roi(b, vals, k)

                    def add(b, yy, xx, wy, wx, sy, sx, dby, dbx, coef, v):
                        s = b.fmul(coef, v)
                        py = b.fmul(b.fmul(s, sy), wx)
                        qx = b.fmul(b.fmul(s, wy), sx)
                        for a, t in zip(acc, (py, b.fmul(py, dby), qx, b.fmul(qx, dbx))):
                            b.store(b.fadd(b.load(a), t), a)

                    with for_range(b, 0, C, name="c") as c:
                        each_corner(b, vals, k, c, r, add)
                    sy_, syb, sx_, sxb = (b.load(a) for a in acc)
                    gyb = b.fdiv(b.fmul(syb, r["sh"]), const(F64, float(ph)))
                    gxb = b.fdiv(b.fmul(sxb, r["sw"]), const(F64, float(pw)))
                    sc = b.fpext(const(ft, scale), F64) if ft == F32 else const(F64, scale)
                    box = [b.fsub(sx_, gxb), b.fsub(sy_, gyb), gxb, gyb]
                    box = [b.fmul(v, sc) for v in box]
                else:
                    box = [const(F64, 0.0)] * 4
                cols = ([const(F64, 0.0)] if ncol == 5 else []) + box
                for q, v in enumerate(cols):
                    o = b.add(b.mul(k, i64(ncol)), i64(q))
                    store_from(b, convert(b, v, "float64", rdt), dr, o, rdt)

        parallel(kf.b, kf.fn.name, kf.ins + kf.outs, nt, body)
    kf.b.ret_void()
    return KernelInfo(kf.fn)


def emit_roi_pool_grad(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
    fwd, dims, kf = _setup(llmod, name, in_types, out_types, attrs, epilogue)
    N, C, H, W, K, ph, pw, xst, gst = dims
    xdt, gdt, rdt = in_types[0].dtype, in_types[-1].dtype, in_types[1].dtype
    ft = F64 if rdt == "float64" else F32
    scale = float(attr(attrs, "spatial_scale", 1.0))
    ncol = shape_of(in_types[1])[1]

    def scatter(b, vals, c, scratch):
        x, g = vals[0], vals[len(in_types) - 1]
        t = compute_type(xdt)
        best = entry_alloca(b, t)
        have = entry_alloca(b, I1)
        at = entry_alloca(b, I64)
        with for_range(b, 0, K, name="k") as k:
            bi, box = _load_box(b, vals, fwd, k, N)
            # C round(): halves away from zero
            x1, y1, x2, y2 = (
                b.fptosi(call_intrinsic(b, "round", [b.fmul(v, const(ft, scale))]), I64)
                for v in box
            )
            rh = b.add(b.sub(y2, y1), i64(1))
            rw = b.add(b.sub(x2, x1), i64(1))
            rh = b.select(b.icmp_signed("<", rh, i64(1)), i64(1), rh)
            rw = b.select(b.icmp_signed("<", rw, i64(1)), i64(1), rw)
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
                    b.store(const(I1, 0), have)
                    b.store(const(t, 0.0), best)
                    b.store(i64(0), at)
                    with for_range(b, hs, he, name="yy") as yy:
                        with for_range(b, ws, we, name="xx") as xx:
                            o = b.add(plane, b.add(b.mul(yy, i64(xst[3])), b.mul(xx, i64(xst[4]))))
                            v = load_as(b, x, o, xdt)
                            with b.if_then(_first_max(b, v, best, have)):
                                b.store(v, best)
                                b.store(const(I1, 1), have)
                                so = b.add(b.mul(b.add(b.mul(bi, i64(H)), yy), i64(W)), xx)
                                b.store(so, at)
                    with b.if_then(b.load(have)):
                        go = b.add(
                            b.add(b.mul(k, i64(gst[0])), b.mul(c, i64(gst[1]))),
                            b.add(b.mul(i, i64(gst[3])), b.mul(j, i64(gst[4]))),
                        )
                        gv = convert(b, load_as(b, g, go, gdt), gdt, "float64")
                        p = b.gep(scratch, [b.load(at)])
                        b.store(b.fadd(b.load(p), gv), p)

    _dx_pass(kf, in_types, dims, 50.0 * K * C * ph * pw, scatter)
    # d rois is zero: the output is piecewise constant in the (rounded) rois
    b = kf.b
    with for_range(b, 0, K * ncol, name="r") as q:
        store_from(b, const(compute_type(rdt), 0.0), kf.outs[1], q, rdt)
    kf.b.ret_void()
    return KernelInfo(kf.fn)
