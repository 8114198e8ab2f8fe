"""nn.conv1d_transpose / conv2d_transpose / conv3d_transpose.

float32 channel-first: per image, group and range of output channels, a GEMM
cols[(o, tap), l] = W_g^T[(o, tap), c] @ X_g[c, l] over chunks of input positions l, then col2im
adds each column into the output (zeroed first). Threads own disjoint output channels, so the
scatter needs no synchronisation. Other dtypes and channel-last layouts use direct loops.
Weights are (in, out/groups, *kernel) in canonical order (IOHW); other kernel layouts are
transposed at compile time (constants) or at run time.
"""

from __future__ import annotations

from .common import KernelInfo, attr, epilogue_row, kernel_function, shape_of
from .conv_generic import canonical_strides
from .gemm_core import (
    RawA,
    RawB,
    StridedB,
    free_buffers,
    gemm_call,
    gemm_tile,
    plain_store_fn,
    thread_buffers,
)
from .gemm_generic import accumulate_dtype
from .geometry import layout_axes
from .llvm_util import (
    F32P,
    clamp,
    compute_type,
    const,
    convert,
    entry_alloca,
    floordiv_rt,
    for_range,
    free,
    gep,
    i64,
    imin,
    is_float_dtype,
    load,
    load_as,
    malloc,
    memset0,
    store,
    store_from,
)
from .parallel import clamp_threads, parallel, split_range

COLS_BUDGET = 1 << 20  # bytes of GEMM output columns per thread


def emit_conv_transpose(nd: int):
    def emit(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
        from .conv import _runtime_permute, conv_window

        win, G, O, Cg, Og, kax, cl = conv_window(in_types, out_types, attrs, nd, transpose=True)
        layout = attr(attrs, "data_layout", {1: "NCW", 2: "NCHW", 3: "NCDHW"}[nd])
        same = (attr(attrs, "out_layout", "") or layout) == layout
        dts = (in_types[0].dtype, in_types[1].dtype, out_types[0].dtype)
        kf = kernel_function(llmod, name, in_types, out_types, epilogue)
        if win.N * O * win.P == 0:
            kf.b.ret_void()
            return KernelInfo(kf.fn)
        if dts != ("float32",) * 3 or cl or not same or Cg * win.IP == 0:
            _direct(kf, win, G, O, Cg, Og, kax, in_types, out_types, attrs, nd)
            kf.b.ret_void()
            return KernelInfo(kf.fn)
        packed = 1 in tuple(const_inputs)
        w, wbuf = kf.ins[1], None
        canon = tuple(range(nd + 2))
        if not packed and tuple(kax) != canon:
            wbuf = _runtime_permute(kf, w, shape_of(in_types[1]), kax, nd, False)
            w = wbuf
        _gemm_col2im(kf, w, win, G, O, Cg, Og)
        if wbuf is not None:
            free(kf.b, wbuf)
        kf.b.ret_void()
        if packed and tuple(kax) != canon:
            from .conv import canonical_weight

            return KernelInfo(kf.fn, {1: lambda a: canonical_weight(a, kax)})
        return KernelInfo(kf.fn)

    return emit


def _gemm_col2im(kf, w, win, G, O, Cg, Og):
    KK, IP, P = win.KK, win.IP, win.P
    D, H, W = win.sp
    OD, OH, OW = win.osp
    KD, KH, KW = win.k
    M = Og * KK
    units0 = win.N * G
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * win.N * O * KK * Cg * IP, units0 * Og)
    NR = gemm_tile().nr
    lc_max = max(NR, min(-(-IP // NR) * NR, COLS_BUDGET // (4 * M) // NR * NR))
    direct_b = IP % NR == 0

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        cols = b.bitcast(malloc(b, i64(4 * M * lc_max)), F32P)
        a0 = RawA(wp, 1, M)
        b0 = StridedB(x, IP) if direct_b else RawB(x, IP, 1)
        abuf, bbuf = thread_buffers(b, a0, b0, M, lc_max, Cg)
        bu = i64(units0)
        parts = sh.parts(b, units0)
        u0, u1 = sh.range(b, b.mul(bu, parts))
        with for_range(b, u0, u1, name="unit") as u:
            ng = b.udiv(u, parts)
            part = b.urem(u, parts)
            n, g = b.udiv(ng, i64(G)), b.urem(ng, i64(G))
            o0, o1 = split_range(b, Og, part, parts)
            ybase = gep(b, y, b.mul(b.add(b.mul(n, i64(O)), b.mul(g, i64(Og))), i64(P)))
            memset0(b, gep(b, ybase, b.mul(o0, i64(P))), b.mul(b.sub(o1, o0), i64(4 * P)))
            xg = gep(b, x, b.mul(b.add(b.mul(n, i64(win.C)), b.mul(g, i64(Cg))), i64(IP)))
            # A[(o, t), c] = w[g*Cg + c, o, t]: row stride 1, column stride Og*KK
            a = RawA(gep(b, wp, b.mul(g, i64(Cg * M))), 1, M)
            with for_range(b, 0, IP, lc_max, name="lc") as l0:
                lc = imin(b, i64(lc_max), b.sub(i64(IP), l0))
                bsrc = StridedB(gep(b, xg, l0), IP) if direct_b else RawB(gep(b, xg, l0), IP, 1)
                store_fn = plain_store_fn(b.module)
                gemm_call(
                    b,
                    a,
                    bsrc,
                    Cg,
                    b.mul(o0, i64(KK)),
                    b.mul(o1, i64(KK)),
                    0,
                    lc,
                    store_fn,
                    [cols, i64(lc_max)],
                    abuf,
                    bbuf,
                )
                _col2im(b, cols, lc_max, ybase, o0, o1, l0, lc, win)
            if kf.ep:
                with for_range(b, o0, o1, name="eo") as o:
                    plane = gep(b, ybase, b.mul(o, i64(P)))
                    c = b.add(b.mul(g, i64(Og)), o)
                    with for_range(b, 0, OD * OH, name="er") as r:
                        sp = (
                            []
                            if win.nd == 1
                            else ([r] if win.nd == 2 else [b.udiv(r, i64(OH)), b.urem(r, i64(OH))])
                        )
                        epilogue_row(
                            b, kf.ep, extras, gep(b, plane, b.mul(r, i64(OW))), OW, [n, c, *sp], 0
                        )
        sh.end(b)
        free_buffers(b, abuf, bbuf, cols)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)


def _col2im(b, cols, ld, ybase, o0, o1, l0, lc, win):
    """y[o, od, oh, ow] += cols[o * KK + t, l - l0] for input positions l in the chunk."""
    D, H, W = win.sp
    OD, OH, OW = win.osp
    KD, KH, KW = win.k
    KK, P = win.KK, win.P
    l1 = b.add(l0, lc)
    r0 = b.udiv(l0, i64(W))
    r1 = b.udiv(b.sub(l1, i64(1)), i64(W))
    with for_range(b, o0, o1, name="co") as o:
        plane = gep(b, ybase, b.mul(o, i64(P)))
        with for_range(b, 0, KK, name="ct") as t:
            kw = b.urem(t, i64(KW))
            kh = b.urem(b.udiv(t, i64(KW)), i64(KH))
            kd = b.udiv(t, i64(KW * KH))
            crow = gep(b, cols, b.mul(b.add(b.mul(o, i64(KK)), t), i64(ld)))
            with for_range(b, r0, b.add(r1, i64(1)), name="cr") as r:
                idd, ih = b.udiv(r, i64(H)), b.urem(r, i64(H))
                od = b.add(
                    b.sub(b.mul(idd, i64(win.s[0])), i64(win.pb[0])), b.mul(kd, i64(win.d[0]))
                )
                oh = b.add(
                    b.sub(b.mul(ih, i64(win.s[1])), i64(win.pb[1])), b.mul(kh, i64(win.d[1]))
                )
                ok = b.and_(
                    b.and_(b.icmp_signed(">=", od, i64(0)), b.icmp_signed("<", od, i64(OD))),
                    b.and_(b.icmp_signed(">=", oh, i64(0)), b.icmp_signed("<", oh, i64(OH))),
                )
                with b.if_then(ok):
                    rbase = b.mul(r, i64(W))
                    a = b.sub(b.select(b.icmp_signed(">", l0, rbase), l0, rbase), rbase)
                    e = b.sub(imin(b, l1, b.add(rbase, i64(W))), rbase)
                    yrow = gep(b, plane, b.mul(b.add(b.mul(od, i64(OH)), oh), i64(OW)))
                    src = gep(b, crow, b.sub(rbase, l0))
                    off = b.sub(b.mul(kw, i64(win.d[2])), i64(win.pb[2]))
                    # iw range with 0 <= iw*s + off < OW
                    s = win.s[2]
                    lo = clamp(b, floordiv_rt(b, b.add(b.neg(off), i64(s - 1)), i64(s)), a, e)
                    hi = clamp(
                        b, floordiv_rt(b, b.add(b.sub(i64(OW), off), i64(s - 1)), i64(s)), lo, e
                    )
                    with for_range(b, lo, hi, name="ciw") as iw:
                        oo = b.add(b.mul(iw, i64(s)), off)
                        store(b, b.fadd(load(b, yrow, oo), load(b, src, iw)), yrow, oo)


def _direct(kf, win, G, O, Cg, Og, kax, in_types, out_types, attrs, nd):
    """out[n, o, op] = sum over c in the group and taps t with op = ip*s - pb + t*d."""
    layout = attr(attrs, "data_layout", {1: "NCW", 2: "NCHW", 3: "NCDHW"}[nd])
    out_layout = attr(attrs, "out_layout", "") or layout
    xs, ws, ys = (shape_of(t) for t in (in_types[0], in_types[1], out_types[0]))
    xst = canonical_strides(xs, layout_axes(layout, nd, "N", "C"), nd)
    wst = canonical_strides(ws, kax, nd)
    yax = layout_axes(out_layout, nd, "N", "C")
    yst = canonical_strides(ys, yax, nd)
    dx, dw, dy = in_types[0].dtype, in_types[1].dtype, out_types[0].dtype
    acc_dt = accumulate_dtype(dx, dw, terms=Cg * win.KK)
    acc_t = compute_type(acc_dt)
    isf = is_float_dtype(acc_dt)
    total = win.N * O * win.P
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * total * Cg * win.KK, win.N * O)
    OD, OH, OW = win.osp

    def body(b, vals, sh):
        x, w, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        slot = entry_alloca(b, acc_t)
        u0, u1 = sh.range(b, total)
        with for_range(b, u0, u1, name="e") as e:
            n = b.udiv(e, i64(O * win.P))
            o = b.urem(b.udiv(e, i64(win.P)), i64(O))
            p = b.urem(e, i64(win.P))
            opos = [
                b.udiv(p, i64(OW * OH)),
                b.urem(b.udiv(p, i64(OW)), i64(OH)),
                b.urem(p, i64(OW)),
            ]
            g, ol = b.udiv(o, i64(Og)), b.urem(o, i64(Og))
            b.store(const(acc_t, 0), slot)
            with for_range(b, 0, win.KK, name="t") as t:
                taps = [
                    b.udiv(t, i64(win.k[1] * win.k[2])),
                    b.urem(b.udiv(t, i64(win.k[2])), i64(win.k[1])),
                    b.urem(t, i64(win.k[2])),
                ]
                ok, ipos = None, []
                for op_, k, s, d, pb, n_in in zip(opos, taps, win.s, win.d, win.pb, win.sp):
                    num = b.sub(b.add(op_, i64(pb)), b.mul(k, i64(d)))
                    c = b.and_(
                        b.icmp_signed(">=", num, i64(0)),
                        b.icmp_signed("==", b.srem(num, i64(s)), i64(0)),
                    )
                    q = b.sdiv(num, i64(s))
                    c = b.and_(c, b.icmp_signed("<", q, i64(n_in)))
                    ok = c if ok is None else b.and_(ok, c)
                    ipos.append(q)
                with b.if_then(ok):
                    with for_range(b, 0, Cg, name="c") as cl_:
                        ci = b.add(b.mul(g, i64(Cg)), cl_)
                        xo = b.add(b.mul(n, i64(xst[0])), b.mul(ci, i64(xst[1])))
                        for v, s in zip(ipos, xst[2:]):
                            xo = b.add(xo, b.mul(v, i64(s)))
                        wo = b.add(b.mul(ci, i64(wst[0])), b.mul(ol, i64(wst[1])))
                        for v, s in zip(taps, wst[2:]):
                            wo = b.add(wo, b.mul(v, i64(s)))
                        xv = convert(b, load_as(b, x, xo, dx), dx, acc_dt)
                        wv = convert(b, load_as(b, w, wo, dw), dw, acc_dt)
                        old = b.load(slot)
                        b.store(
                            b.fadd(old, b.fmul(xv, wv)) if isf else b.add(old, b.mul(xv, wv)), slot
                        )
            val = convert(b, b.load(slot), acc_dt, dy)
            yo = b.add(b.mul(n, i64(yst[0])), b.mul(o, i64(yst[1])))
            for v, s in zip(opos, yst[2:]):
                yo = b.add(yo, b.mul(v, i64(s)))
            if kf.ep:
                canon = [n, o] + opos[3 - nd :]
                idx = [None] * (nd + 2)
                for k, a in enumerate(yax):
                    idx[a] = canon[k]
                val = kf.ep(b, val, idx, extras)
            store_from(b, val, y, yo, dy)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)
