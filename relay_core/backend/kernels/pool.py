"""Pooling: nn.{max,avg,lp}_pool{1,2,3}d, nn.global_*_pool*d, nn.adaptive_*_pool*d and
nn.max_pool*d_with_argmax.

Semantics follow the op registry (PyTorch / ONNX): `ceil_mode` windows must start inside the
input or its left padding; padding never contributes to max / lp; average divides by the number
of input elements in the window, or with `count_include_pad` by the window clipped to the padded
input (never counting the extra ceil-mode area); lp is (sum |x|^p)^(1/p); adaptive bin i covers
[floor(i*n/o), ceil((i+1)*n/o)).

Channel-first data: per (image, channel) plane and output row, each window tap is one pass over
the row (LLVM vectorises it; stride-1 taps read contiguous input). Channel-last data: per output
position, each tap is one pass over the channels. Global pools reduce with 8-wide vectors.
Argmax and adaptive pools (and layouts that differ between input and output) use scalar loops.
"""

from __future__ import annotations

from ...ops.nn_util import fit_window
from .common import KernelInfo, attr, epilogue_row, kernel_function, shape_of
from .conv_generic import canonical_strides
from .geometry import Window, data_view, layout_axes, ntuple, pad3, resolve_pads
from .llvm_util import (
    F32,
    I64,
    call_intrinsic,
    compute_type,
    const,
    entry_alloca,
    for_range,
    free,
    gep,
    i64,
    is_float_dtype,
    load,
    load_as,
    malloc,
    store,
    store_from,
    unravel,
    vload,
)
from .parallel import clamp_threads, parallel

DATA_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _reduce_ops(b, kind: str, dtype: str, p: float):
    """(init, combine(acc, x), finish(acc, count)) in compute_type(dtype)."""
    t = compute_type(dtype)
    isf = is_float_dtype(dtype)
    if kind == "max":
        if isf:
            init = const(t, float("-inf"))
            comb = lambda acc, x: b.select(b.fcmp_unordered(">", x, acc), x, acc)  # noqa: E731
        else:
            bits = t.width
            lo = 0 if dtype.startswith("uint") or dtype == "bool" else -(1 << (bits - 1))
            init = const(t, lo)
            cmp = "icmp_unsigned" if lo == 0 else "icmp_signed"
            comb = lambda acc, x: b.select(getattr(b, cmp)(">", x, acc), x, acc)  # noqa: E731
        return init, comb, lambda acc, cnt: acc
    init = const(t, 0.0)
    if kind == "avg":
        return init, lambda acc, x: b.fadd(acc, x), lambda acc, cnt: b.fdiv(acc, cnt)
    # lp
    if p == 1.0:
        comb = lambda acc, x: b.fadd(acc, call_intrinsic(b, "fabs", [x]))  # noqa: E731
    elif p == 2.0:
        comb = lambda acc, x: b.fadd(acc, b.fmul(x, x))  # noqa: E731
    else:
        comb = lambda acc, x: b.fadd(  # noqa: E731
            acc, call_intrinsic(b, "pow", [call_intrinsic(b, "fabs", [x]), const(t, p)])
        )
    if p == 2.0:
        fin = lambda acc, cnt: call_intrinsic(b, "sqrt", [acc])  # noqa: E731
    elif p == 1.0:
        fin = lambda acc, cnt: acc  # noqa: E731
    else:
        fin = lambda acc, cnt: call_intrinsic(b, "pow", [acc, const(t, 1.0 / p)])  # noqa: E731
    return init, comb, fin


def _window(in_types, out_types, attrs, nd):
    layout = attr(attrs, "layout", DATA_LAYOUTS[nd])
    xs, ys = shape_of(in_types[0]), shape_of(out_types[0])
    N, C, sp, cl = data_view(xs, layout, nd)
    _, _, osp, _ = data_view(ys, attr(attrs, "out_layout", "") or layout, nd)
    k = ntuple(attr(attrs, "pool_size", 1), nd)
    s = ntuple(attr(attrs, "strides", 1), nd)
    d = ntuple(attr(attrs, "dilation", 1), nd)
    pb, pe = resolve_pads(attrs, nd, sp[3 - nd :], k, s, d)
    osp_nd, sp_nd = osp[3 - nd :], sp[3 - nd :]
    k = tuple(fit_window(sp_nd[a], k[a], d[a], (pb[a], pe[a]), osp_nd[a]) for a in range(nd))
    return Window(
        nd, N, C, sp, osp, pad3(k, 1), pad3(s, 1), pad3(d, 1), pad3(pb, 0), pad3(pe, 0)
    ), cl


def _valid_range(b, o_count, k, s, d, pb, lo_bound, hi_bound):
    """[lo, hi) of output positions o in [0, o_count) with lo_bound <= o*s + k*d - pb < hi_bound
    (k may be an i64 value)."""
    from .llvm_util import clamp, floordiv_rt

    off = b.sub(b.mul(k, i64(d)), i64(pb))
    lo = floordiv_rt(b, b.add(b.sub(i64(lo_bound), off), i64(s - 1)), i64(s))
    hi = floordiv_rt(b, b.add(b.sub(i64(hi_bound), off), i64(s - 1)), i64(s))
    lo = clamp(b, lo, i64(0), i64(o_count))
    return lo, clamp(b, hi, lo, i64(o_count))


def emit_pool(kind: str, nd: int):
    """Generator for nn.{kind}_pool{nd}d."""

    def emit(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
        win, cl = _window(in_types, out_types, attrs, nd)
        layout = attr(attrs, "layout", DATA_LAYOUTS[nd])
        dtype = in_types[0].dtype
        kf = kernel_function(llmod, name, in_types, out_types, epilogue)
        cip = bool(attr(attrs, "count_include_pad", False))
        p = float(attr(attrs, "p", 2.0))
        same_layout = (attr(attrs, "out_layout", "") or layout) == layout
        if win.N * win.C * win.P == 0:
            pass
        elif (
            same_layout
            and not cl
            and dtype == "float32"
            and kind != "lp"
            and win.s[2] in (1, 2)
            and win.KK <= 49
        ):
            _pool_cf_registers(kf, kind, win, cip)
        elif same_layout and not cl:
            _pool_cf(kf, kind, win, dtype, cip, p)
        elif same_layout and dtype == "float32" and kind != "lp" and win.KK <= 64:
            _pool_cl_registers(kf, kind, win, cip)
        elif same_layout:
            _pool_cl(kf, kind, win, dtype, cip, p)
        else:
            _pool_scalar(kf, kind, win, dtype, cip, p, in_types, out_types, attrs, nd)
        kf.b.ret_void()
        return KernelInfo(kf.fn)

    return emit


def _col_counts(b, win, cip, buf):
    """buf[ow] = number of counted window columns of output column ow (float)."""
    W, OW, KW = win.sp[2], win.osp[2], win.k[2]
    lo_b, hi_b = (-win.pb[2], W + win.pe[2]) if cip else (0, W)
    with for_range(b, 0, OW, name="cc") as ow:
        store(b, const(buf.type.pointee, 0.0), buf, ow)
    with for_range(b, 0, KW, name="ck") as kw:
        lo, hi = _valid_range(b, OW, kw, win.s[2], win.d[2], win.pb[2], lo_b, hi_b)
        with for_range(b, lo, hi, name="cq") as ow:
            old = load(b, buf, ow)
            store(b, b.fadd(old, const(old.type, 1.0)), buf, ow)


def _pool_cf(kf, kind, win, dtype, cip, p):
    t = compute_type(dtype)
    D, H, W = win.sp
    OD, OH, OW = win.osp
    KD, KH, KW = win.k
    units = win.N * win.C
    nt = clamp_threads(kf.b, kf.nthreads, float(units * win.P * win.KK), units)

    def body(b, vals, sh):
        x, y = vals[0], vals[1]
        extras = vals[2:]
        init, comb, fin = _reduce_ops(b, kind, dtype, p)
        acc = b.bitcast(malloc(b, i64(8 * OW)), t.as_pointer())
        cols = None
        if kind == "avg":
            cols = b.bitcast(malloc(b, i64(8 * OW)), t.as_pointer())
            _col_counts(b, win, cip, cols)
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="u") as u:
            xp = gep(b, x, b.mul(u, i64(win.IP)))
            yp = gep(b, y, b.mul(u, i64(win.P)))
            with for_range(b, 0, OD * OH, name="r") as r:
                od, oh = b.udiv(r, i64(OH)), b.urem(r, i64(OH))
                with for_range(b, 0, OW, name="a0") as q:
                    store(b, init, acc, q)
                rows = entry_alloca(b, I64)
                b.store(i64(0), rows)
                with for_range(b, 0, KD * KH, name="t") as tt:
                    kd, kh = b.udiv(tt, i64(KH)), b.urem(tt, i64(KH))
                    idd = b.sub(
                        b.add(b.mul(od, i64(win.s[0])), b.mul(kd, i64(win.d[0]))), i64(win.pb[0])
                    )
                    ih = b.sub(
                        b.add(b.mul(oh, i64(win.s[1])), b.mul(kh, i64(win.d[1]))), i64(win.pb[1])
                    )
                    inside = b.and_(_in(b, idd, 0, D), _in(b, ih, 0, H))
                    if kind == "avg":
                        counted = (
                            inside
                            if not cip
                            else b.and_(
                                _in(b, idd, -win.pb[0], D + win.pe[0]),
                                _in(b, ih, -win.pb[1], H + win.pe[1]),
                            )
                        )
                        b.store(b.add(b.load(rows), b.zext(counted, I64)), rows)
                    with b.if_then(inside):
                        src = gep(b, xp, b.mul(b.add(b.mul(idd, i64(H)), ih), i64(W)))
                        with for_range(b, 0, KW, name="kw") as kw:
                            lo, hi = _valid_range(b, OW, kw, win.s[2], win.d[2], win.pb[2], 0, W)
                            s0 = gep(b, src, b.sub(b.mul(kw, i64(win.d[2])), i64(win.pb[2])))
                            with for_range(b, lo, hi, name="q") as q:
                                xv = load_as(b, s0, b.mul(q, i64(win.s[2])), dtype)
                                store(b, comb(load(b, acc, q), xv), acc, q)
                yrow = gep(b, yp, b.mul(r, i64(OW)))
                nrows = b.uitofp(b.load(rows), t) if kind == "avg" else None
                with for_range(b, 0, OW, name="f") as q:
                    cnt = b.fmul(nrows, load(b, cols, q)) if kind == "avg" else None
                    store_from(b, fin(load(b, acc, q), cnt), yrow, q, dtype)
                if kf.ep:
                    n, c = b.udiv(u, i64(win.C)), b.urem(u, i64(win.C))
                    sp = [od, oh][3 - win.nd :] if win.nd > 1 else []
                    epilogue_row(b, kf.ep, extras, yrow, OW, [n, c, *sp], 0, dtype)
        sh.end(b)
        free(b, acc)
        if cols is not None:
            free(b, cols)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)


def _blocks(OW: int, W: int, KW: int, sw: int, dw: int, direct: bool, widths) -> list:
    """(start, end, width) of the column blocks reduced in registers: the widest first, each
    block's loads (w * sw floats from each tap) inside the row when the planes are read in
    place (the padded scratch plane is wide enough for any); the columns after the last end
    are masked blocks of 8 (loads of the valid windows' columns only)."""
    out, q = [], 0
    for w in widths:
        end = OW
        if direct:
            qmax = (W - (KW - 1) * dw - w * sw) // sw  # last start whose loads stay in the row
            end = min(OW, qmax + w) if qmax >= 0 else 0
        n = max(0, (end - q) // w)
        if n:
            out.append((q, q + n * w, w))
            q += n * w
    return out


def _pool_cf_registers(kf, kind, win, cip):
    """float32 channel-first max / avg pooling: each plane is copied into a padded scratch plane
    (padding -inf for max, 0 for avg), or read in place when no window reaches the padding,
    then a vector of output columns at a time (16 with AVX-512, then 8, then a masked 8 for
    the last ones) is reduced over the window in a register (stride-2 rows deinterleaved with a
    shuffle). The masked tail was a scalar loop: SqueezeNet's 111 -> 55 pool at batch 8 spent
    more of its time in the 7 scalar columns per row than in the 48 vector ones."""
    from .conv_depthwise import _tap_rows
    from .llvm_util import (
        I32,
        lanes_below,
        masked_load,
        masked_store,
        memset0,
        splat,
        vector_width,
        vstore,
    )

    D, H, W = win.sp
    OD, OH, OW = win.osp
    KD, KH, KW = win.k
    need = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(win.osp, win.s, win.k, win.d)]
    # every window inside the input (no padding read: SqueezeNet's ceil-mode pools): the taps
    # read the planes in place; the copy into a padded plane was a pass as long as the pooling
    direct = all(p_ == 0 and n_ <= sz for p_, n_, sz in zip(win.pb, need, win.sp))
    VW = vector_width()
    widths = (VW, 8) if VW > 8 else (8,)
    if direct:  # blocks whose vector loads stay within the row; the rest masked
        Dp, Hp, Wp = win.sp
    else:  # the padded plane, 2 vectors wider: every block's loads stay inside
        Dp, Hp, Wp = (max(n + p, nn) for n, p, nn in zip(win.sp, win.pb, need))
        Wp += 2 * VW
    blocks = _blocks(OW, W, KW, win.s[2], win.d[2], direct, widths)
    tail = blocks[-1][1] if blocks else 0
    units = win.N * win.C
    nt = clamp_threads(kf.b, kf.nthreads, float(units * win.P * win.KK), units)
    fill = float("-inf") if kind == "max" else 0.0
    sw, dw = win.s[2], win.d[2]

    def body(b, vals, sh):
        from llvmlite import ir

        x, y = vals[0], vals[1]
        extras = vals[2:]
        pad = None
        if not direct:
            size = Dp * Hp * Wp
            pad = b.bitcast(malloc(b, i64(4 * size)), F32.as_pointer())
            if fill == 0.0:
                memset0(b, pad, i64(4 * size))
            else:
                with for_range(b, 0, size, name="pf") as j:
                    store(b, const(F32, fill), pad, j)
        cols = None
        if kind == "avg":
            cols = b.bitcast(malloc(b, i64(4 * (OW + VW))), F32.as_pointer())
            _col_counts(b, win, cip, cols)
        even = {w: ir.Constant(ir.VectorType(I32, w), list(range(0, 2 * w, 2))) for w in widths}
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="u") as u:
            src = gep(b, x, b.mul(u, i64(win.IP)))
            if not direct:
                with for_range(b, 0, D * H, name="cr") as r:
                    dd, hh = b.udiv(r, i64(H)), b.urem(r, i64(H))
                    prow = b.add(
                        b.mul(
                            b.add(
                                b.mul(b.add(dd, i64(win.pb[0])), i64(Hp)), b.add(hh, i64(win.pb[1]))
                            ),
                            i64(Wp),
                        ),
                        i64(win.pb[2]),
                    )
                    with for_range(b, 0, W, name="cw") as j:
                        store(b, load(b, src, b.add(b.mul(r, i64(W)), j)), pad, b.add(prow, j))
            yp = gep(b, y, b.mul(u, i64(win.P)))
            with for_range(b, 0, OD * OH, name="r") as r:
                od, oh = b.udiv(r, i64(OH)), b.urem(r, i64(OH))
                rows = _tap_rows(b, win, src if direct else pad, Hp, Wp, od, oh)
                yrow = gep(b, yp, b.mul(r, i64(OW)))
                nrows = None
                if kind == "avg":  # window rows counted at this output row
                    lo_b = [-v for v in win.pb] if cip else [0, 0, 0]
                    hi_b = [n_ + e for n_, e in zip(win.sp, win.pe)] if cip else list(win.sp)
                    cnt = i64(0)
                    for kd in range(KD):
                        idd = b.sub(
                            b.add(b.mul(od, i64(win.s[0])), i64(kd * win.d[0])), i64(win.pb[0])
                        )
                        for kh in range(KH):
                            ih = b.sub(
                                b.add(b.mul(oh, i64(win.s[1])), i64(kh * win.d[1])), i64(win.pb[1])
                            )
                            ok = b.and_(_in(b, idd, lo_b[0], hi_b[0]), _in(b, ih, lo_b[1], hi_b[1]))
                            cnt = b.add(cnt, b.zext(ok, I64))
                    nrows = b.sitofp(cnt, F32)

                def reduce(width, q, nv=None):
                    """Columns q .. q + width; nv: only the first nv are read (the tail)."""
                    acc = None
                    for prow in rows:
                        for kw in range(KW):
                            base = b.add(b.mul(q, i64(sw)), i64(kw * dw))
                            if nv is not None:  # lanes of the window's valid columns only
                                if sw == 1:
                                    xv = masked_load(b, prow, base, lanes_below(width, nv), fill)
                                else:
                                    lo = masked_load(
                                        b, prow, base, lanes_below(width, 2 * nv - 1), fill
                                    )
                                    hb = b.add(base, i64(width))
                                    hi = masked_load(
                                        b, prow, hb, lanes_below(width, 2 * nv - 1 - width), fill
                                    )
                                    xv = b.shuffle_vector(lo, hi, even[width])
                            elif sw == 1:
                                xv = vload(b, prow, base, width)
                            else:
                                lo = vload(b, prow, base, width)
                                hi = vload(b, prow, b.add(base, i64(width)), width)
                                xv = b.shuffle_vector(lo, hi, even[width])
                            if acc is None:
                                acc = xv
                            elif kind == "max":
                                acc = b.select(b.fcmp_unordered(">", xv, acc), xv, acc)
                            else:
                                acc = b.fadd(acc, xv)
                    if kind == "avg":
                        cv = vload(b, cols, q, width)
                        acc = b.fdiv(acc, b.fmul(cv, splat(b, nrows, width)))
                    return acc

                for q0, q1, w in blocks:
                    with for_range(b, q0, q1, w, name=f"q{w}") as q:
                        vstore(b, reduce(w, q), yrow, q)
                for q in range(tail, OW, 8):  # the last columns: masked blocks of 8
                    nv = min(8, OW - q)
                    masked_store(b, reduce(8, i64(q), nv), yrow, i64(q), lanes_below(8, nv))
                if kf.ep:
                    n, c = b.udiv(u, i64(win.C)), b.urem(u, i64(win.C))
                    sp = [od, oh][3 - win.nd :] if win.nd > 1 else []
                    epilogue_row(b, kf.ep, extras, yrow, OW, [n, c, *sp], 0)
        sh.end(b)
        if pad is not None:
            free(b, pad)
        if cols is not None:
            free(b, cols)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)


def _in(b, v, lo, hi):
    return b.and_(b.icmp_signed(">=", v, i64(lo)), b.icmp_signed("<", v, i64(hi)))


def _pool_cl_registers(kf, kind, win, cip):
    """float32 channel-last max / avg pooling: per output position, the window's taps are
    reduced in registers 8 channels at a time (taps outside the input read a clamped address
    and are replaced by -inf / 0)."""
    from .llvm_util import V8F, clamp, splat, vstore

    D, H, W = win.sp
    OD, OH, OW = win.osp
    C = win.C
    units = win.N * OD * OH
    nt = clamp_threads(kf.b, kf.nthreads, float(win.N * C * win.P * win.KK), units)
    lo_b = [-v for v in win.pb] if cip else [0, 0, 0]
    hi_b = [n + e for n, e in zip(win.sp, win.pe)] if cip else list(win.sp)
    taps = [
        (kd, kh, kw) for kd in range(win.k[0]) for kh in range(win.k[1]) for kw in range(win.k[2])
    ]
    c8 = C // 8 * 8
    fill = float("-inf") if kind == "max" else 0.0

    def body(b, vals, sh):
        x, y = vals[0], vals[1]
        extras = vals[2:]
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="u") as u:
            n = b.udiv(u, i64(OD * OH))
            r = b.urem(u, i64(OD * OH))
            od, oh = b.udiv(r, i64(OH)), b.urem(r, i64(OH))
            xn = gep(b, x, b.mul(n, i64(win.IP * C)))
            with for_range(b, 0, OW, name="ow") as ow:
                info, cnt = [], i64(0)
                for tap in taps:
                    pos = [
                        b.sub(b.add(b.mul(q, i64(s_)), i64(k * d_)), i64(p_))
                        for q, k, s_, d_, p_ in zip((od, oh, ow), tap, win.s, win.d, win.pb)
                    ]
                    ok = b.and_(
                        b.and_(_in(b, pos[0], 0, D), _in(b, pos[1], 0, H)), _in(b, pos[2], 0, W)
                    )
                    counted = b.and_(
                        b.and_(_in(b, pos[0], lo_b[0], hi_b[0]), _in(b, pos[1], lo_b[1], hi_b[1])),
                        _in(b, pos[2], lo_b[2], hi_b[2]),
                    )
                    cnt = b.add(cnt, b.zext(counted, I64))
                    cl = [clamp(b, v, i64(0), i64(lim - 1)) for v, lim in zip(pos, (D, H, W))]
                    ip = b.add(b.mul(b.add(b.mul(cl[0], i64(H)), cl[1]), i64(W)), cl[2])
                    info.append((gep(b, xn, b.mul(ip, i64(C))), ok))
                cntf = b.sitofp(cnt, F32) if kind == "avg" else None
                yrow = gep(b, y, b.mul(b.add(b.mul(u, i64(OW)), ow), i64(C)))

                def reduce(width, c):
                    t = V8F if width == 8 else F32
                    acc = None
                    for xp, ok in info:
                        xv = (vload if width == 8 else load)(b, xp, c)
                        xv = b.select(ok, xv, const(t, fill))
                        if acc is None:
                            acc = xv
                        elif kind == "max":
                            acc = b.select(b.fcmp_unordered(">", xv, acc), xv, acc)
                        else:
                            acc = b.fadd(acc, xv)
                    if kind == "avg":
                        acc = b.fdiv(acc, splat(b, cntf) if width == 8 else cntf)
                    (vstore if width == 8 else store)(b, acc, yrow, c)

                with for_range(b, 0, c8, 8, name="c8") as c:
                    reduce(8, c)
                with for_range(b, c8, C, name="c1") as c:
                    reduce(1, c)
                if kf.ep:
                    sp = [od, oh, ow][3 - win.nd :]
                    epilogue_row(b, kf.ep, extras, yrow, C, [n, *sp], 0)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)


def _pool_cl(kf, kind, win, dtype, cip, p):
    t = compute_type(dtype)
    D, H, W = win.sp
    OD, OH, OW = win.osp
    KD, KH, KW = win.k
    C = win.C
    units = win.N * OD * OH
    nt = clamp_threads(kf.b, kf.nthreads, float(win.N * C * win.P * win.KK), units)
    lo_b = [-v for v in win.pb] if cip else [0, 0, 0]
    hi_b = [n + e for n, e in zip(win.sp, win.pe)] if cip else list(win.sp)

    def body(b, vals, sh):
        x, y = vals[0], vals[1]
        extras = vals[2:]
        init, comb, fin = _reduce_ops(b, kind, dtype, p)
        acc = b.bitcast(malloc(b, i64(8 * C)), t.as_pointer())
        cnt = entry_alloca(b, I64)
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="u") as u:
            n = b.udiv(u, i64(OD * OH))
            r = b.urem(u, i64(OD * OH))
            od, oh = b.udiv(r, i64(OH)), b.urem(r, i64(OH))
            xn = gep(b, x, b.mul(n, i64(win.IP * C)))
            with for_range(b, 0, OW, name="ow") as ow:
                with for_range(b, 0, C, name="a0") as c:
                    store(b, init, acc, c)
                b.store(i64(0), cnt)
                with for_range(b, 0, win.KK, name="t") as tt:
                    kw = b.urem(tt, i64(KW))
                    kh = b.urem(b.udiv(tt, i64(KW)), i64(KH))
                    kd = b.udiv(tt, i64(KW * KH))
                    pos = [
                        b.sub(b.add(b.mul(q, i64(s)), b.mul(k, i64(d))), i64(pp))
                        for q, k, s, d, pp in zip((od, oh, ow), (kd, kh, kw), win.s, win.d, win.pb)
                    ]
                    inside = b.and_(
                        b.and_(_in(b, pos[0], 0, D), _in(b, pos[1], 0, H)), _in(b, pos[2], 0, W)
                    )
                    counted = b.and_(
                        b.and_(_in(b, pos[0], lo_b[0], hi_b[0]), _in(b, pos[1], lo_b[1], hi_b[1])),
                        _in(b, pos[2], lo_b[2], hi_b[2]),
                    )
                    b.store(b.add(b.load(cnt), b.zext(counted, I64)), cnt)
                    with b.if_then(inside):
                        ip = b.add(b.mul(b.add(b.mul(pos[0], i64(H)), pos[1]), i64(W)), pos[2])
                        xrow = gep(b, xn, b.mul(ip, i64(C)))
                        with for_range(b, 0, C, name="c") as c:
                            store(b, comb(load(b, acc, c), load_as(b, xrow, c, dtype)), acc, c)
                yrow = gep(b, y, b.mul(b.add(b.mul(u, i64(OW)), ow), i64(C)))
                cntf = b.sitofp(b.load(cnt), t) if is_float_dtype(dtype) else None
                with for_range(b, 0, C, name="f") as c:
                    store_from(b, fin(load(b, acc, c), cntf), yrow, c, dtype)
                if kf.ep:
                    sp = [od, oh, ow][3 - win.nd :]
                    epilogue_row(b, kf.ep, extras, yrow, C, [n, *sp], 0, dtype)
        sh.end(b)
        free(b, acc)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)


# ---------------------------------------------------------------------------------------------
# Scalar paths: any layouts, argmax, adaptive bins.


def _pool_scalar(
    kf,
    kind,
    win,
    dtype,
    cip,
    p,
    in_types,
    out_types,
    attrs,
    nd,
    argmax=False,
    storage_order=0,
    bins=None,
):
    """One output element at a time; `bins(b, o_idx3) -> (starts3, ends3)` for adaptive pools."""
    layout = attr(attrs, "layout", DATA_LAYOUTS[nd])
    out_layout = attr(attrs, "out_layout", "") or layout
    xs, ys = shape_of(in_types[0]), shape_of(out_types[0])
    xax, yax = layout_axes(layout, nd, "N", "C"), layout_axes(out_layout, nd, "N", "C")
    xst, yst = canonical_strides(xs, xax, nd), canonical_strides(ys, yax, nd)
    if storage_order == 1:  # ONNX: spatial axes flattened column-major (first axis fastest)
        cs, span = [0, 0, 0], 1
        for a in range(3 - nd, 3):
            cs[a] = span
            span *= win.sp[a]
        ist = [span * win.C, span] + cs
    else:
        ist = xst
    total = win.N * win.C * win.P
    t = compute_type(dtype)
    nt = clamp_threads(kf.b, kf.nthreads, float(total * win.KK), total)
    OD, OH, OW = win.osp
    lo_b = [-v for v in win.pb] if cip else [0, 0, 0]
    hi_b = [n + e for n, e in zip(win.sp, win.pe)] if cip else list(win.sp)

    def body(b, vals, sh):
        x, y = vals[0], vals[1]
        yi = vals[2] if argmax else None
        extras = vals[3:] if argmax else vals[2:]
        init, comb, fin = _reduce_ops(b, "max" if argmax else kind, dtype, p)
        acc = entry_alloca(b, t)
        cnt = entry_alloca(b, I64)
        best = entry_alloca(b, I64)
        u0, u1 = sh.range(b, total)
        with for_range(b, u0, u1, name="e") as e:
            n, c, od, oh, ow = unravel(b, e, (win.N, win.C, OD, OH, OW))
            b.store(init, acc)
            b.store(i64(0), cnt)
            b.store(i64(-1), best)
            if bins is not None:
                starts, ends = bins(b, (od, oh, ow))
                ranges = [(s_, b.sub(e_, s_)) for s_, e_ in zip(starts, ends)]
            else:
                ranges = None
            kk = win.KK if bins is None else None
            span = kk if kk is not None else b.mul(ranges[0][1], b.mul(ranges[1][1], ranges[2][1]))
            with for_range(b, 0, span, name="t") as tt:
                if bins is None:
                    kw = b.urem(tt, i64(win.k[2]))
                    kh = b.urem(b.udiv(tt, i64(win.k[2])), i64(win.k[1]))
                    kd = b.udiv(tt, i64(win.k[2] * win.k[1]))
                    pos = [
                        b.sub(b.add(b.mul(q, i64(s)), b.mul(k, i64(d))), i64(pp))
                        for q, k, s, d, pp in zip((od, oh, ow), (kd, kh, kw), win.s, win.d, win.pb)
                    ]
                else:
                    (sd_, ld_), (sh_, lh_), (sw_, lw_) = ranges
                    pos = [
                        b.add(sd_, b.udiv(tt, b.mul(lh_, lw_))),
                        b.add(sh_, b.urem(b.udiv(tt, lw_), lh_)),
                        b.add(sw_, b.urem(tt, lw_)),
                    ]
                inside = b.and_(
                    b.and_(_in(b, pos[0], 0, win.sp[0]), _in(b, pos[1], 0, win.sp[1])),
                    _in(b, pos[2], 0, win.sp[2]),
                )
                counted = b.and_(
                    b.and_(_in(b, pos[0], lo_b[0], hi_b[0]), _in(b, pos[1], lo_b[1], hi_b[1])),
                    _in(b, pos[2], lo_b[2], hi_b[2]),
                )
                b.store(b.add(b.load(cnt), b.zext(counted if bins is None else inside, I64)), cnt)
                with b.if_then(inside):
                    xo = b.add(b.mul(n, i64(xst[0])), b.mul(c, i64(xst[1])))
                    for v, s_ in zip(pos, xst[2:]):
                        xo = b.add(xo, b.mul(v, i64(s_)))
                    xv = load_as(b, x, xo, dtype)
                    old = b.load(acc)
                    new = comb(old, xv)
                    b.store(new, acc)
                    if argmax:
                        io = b.add(b.mul(n, i64(ist[0])), b.mul(c, i64(ist[1])))
                        for v, s_ in zip(pos, ist[2:]):
                            io = b.add(io, b.mul(v, i64(s_)))
                        first = b.icmp_signed("<", b.load(best), i64(0))
                        better = b.or_(first, _gt(b, xv, old, dtype))
                        b.store(b.select(better, io, b.load(best)), best)
            yo = b.add(b.mul(n, i64(yst[0])), b.mul(c, i64(yst[1])))
            for v, s_ in zip((od, oh, ow), yst[2:]):
                yo = b.add(yo, b.mul(v, i64(s_)))
            cntf = b.sitofp(b.load(cnt), t) if is_float_dtype(dtype) else None
            val = fin(b.load(acc), cntf)
            if kf.ep and not argmax:
                canon = [n, c, od, oh, ow][:2] + [od, oh, ow][3 - nd :]
                idx = [None] * (nd + 2)
                for ci, a in enumerate(yax):
                    idx[a] = canon[ci]
                val = kf.ep(b, val, idx, extras)
            store_from(b, val, y, yo, dtype)
            if argmax:
                store(b, b.load(best), yi, yo)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)


def _gt(b, x, y, dtype):
    if is_float_dtype(dtype):
        return b.fcmp_ordered(">", x, y)
    if dtype.startswith("uint") or dtype == "bool":
        return b.icmp_unsigned(">", x, y)
    return b.icmp_signed(">", x, y)


def emit_argmax_pool(nd: int):
    def emit(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
        win, _ = _window(in_types, out_types, attrs, nd)
        kf = kernel_function(llmod, name, in_types, out_types, None)
        if win.N * win.C * win.P:
            _pool_scalar(
                kf,
                "max",
                win,
                in_types[0].dtype,
                False,
                2.0,
                in_types,
                out_types,
                attrs,
                nd,
                argmax=True,
                storage_order=int(attr(attrs, "storage_order", 0)),
            )
        kf.b.ret_void()
        return KernelInfo(kf.fn)

    return emit


def emit_adaptive_pool(kind: str, nd: int):
    def emit(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
        layout = attr(attrs, "layout", DATA_LAYOUTS[nd])
        N, C, sp, _ = data_view(shape_of(in_types[0]), layout, nd)
        _, _, osp, _ = data_view(
            shape_of(out_types[0]), attr(attrs, "out_layout", "") or layout, nd
        )
        win = Window(nd, N, C, sp, osp, (1, 1, 1), (1, 1, 1), (1, 1, 1), (0, 0, 0), (0, 0, 0))
        kf = kernel_function(llmod, name, in_types, out_types, epilogue)

        def bins(b, o3):
            starts, ends = [], []
            for o, n_in, n_out in zip(o3, sp, osp):
                starts.append(b.udiv(b.mul(o, i64(n_in)), i64(n_out)))
                ends.append(
                    b.udiv(b.add(b.mul(b.add(o, i64(1)), i64(n_in)), i64(n_out - 1)), i64(n_out))
                )
            return starts, ends

        if N * C * win.P and win.IP:
            _pool_scalar(
                kf,
                kind,
                win,
                in_types[0].dtype,
                False,
                2.0,
                in_types,
                out_types,
                attrs,
                nd,
                bins=bins,
            )
        kf.b.ret_void()
        return KernelInfo(kf.fn)

    return emit


def emit_global_pool(kind: str, nd: int):
    def emit(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
        layout = attr(attrs, "layout", DATA_LAYOUTS[nd])
        N, C, sp, cl = data_view(shape_of(in_types[0]), layout, nd)
        dtype = in_types[0].dtype
        p = float(attr(attrs, "p", 2.0))
        same = (attr(attrs, "out_layout", "") or layout) == layout
        win = Window(nd, N, C, sp, (1, 1, 1), sp, (1, 1, 1), (1, 1, 1), (0, 0, 0), (0, 0, 0))
        kf = kernel_function(llmod, name, in_types, out_types, epilogue)
        if N * C and win.IP:
            if same and not cl and dtype == "float32" and kind != "lp":
                _global_cf_f32(kf, kind, win)
            elif same and cl:
                _pool_cl(kf, kind, win, dtype, False, p)
            else:
                _pool_scalar(kf, kind, win, dtype, False, p, in_types, out_types, attrs, nd)
        kf.b.ret_void()
        return KernelInfo(kf.fn)

    return emit


def _global_cf_f32(kf, kind, win):
    from .llvm_util import V8F, splat

    units = win.N * win.C
    IP = win.IP
    nt = clamp_threads(kf.b, kf.nthreads, float(units * IP), units)

    def body(b, vals, sh):
        x, y = vals[0], vals[1]
        extras = vals[2:]
        init, comb, fin = _reduce_ops(b, kind, "float32", 2.0)
        u0, u1 = sh.range(b, units)
        vacc = entry_alloca(b, V8F)
        sacc = entry_alloca(b, F32)
        with for_range(b, u0, u1, name="u") as u:
            xp = gep(b, x, b.mul(u, i64(IP)))
            b.store(splat(b, init), vacc)
            nvec = IP // 8 * 8
            with for_range(b, 0, nvec, 8, name="v") as j:
                b.store(comb(b.load(vacc), vload(b, xp, j)), vacc)
            v = b.load(vacc)
            s = init
            for lane in range(8):
                s = comb(s, b.extract_element(v, i64(lane)))
            b.store(s, sacc)
            with for_range(b, nvec, IP, name="s") as j:
                b.store(comb(b.load(sacc), load(b, xp, j)), sacc)
            val = fin(b.load(sacc), const(F32, float(IP)))
            if kf.ep:
                n, c = b.udiv(u, i64(win.C)), b.urem(u, i64(win.C))
                val = kf.ep(b, val, [n, c] + [i64(0)] * win.nd, extras)
            store(b, val, y, u)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)
