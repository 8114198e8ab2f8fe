"""Direct convolution loops for any dtype and layout (float64, float16, int8/uint8 -> int32,
unusual layouts): simple and correct, not fast. One (image, output channel) pair per work unit.
"""

from __future__ import annotations

import numpy as np

from .common import KernelInfo, attr, kernel_function, shape_of
from .gemm_generic import accumulate_dtype
from .geometry import layout_axes
from .llvm_util import (
    compute_type,
    const,
    convert,
    entry_alloca,
    for_range,
    i64,
    is_float_dtype,
    load_as,
    store_from,
)
from .parallel import clamp_threads, parallel


def canonical_strides(shape, axes, nd: int) -> list[int]:
    """Element strides of (A0, A1, D, H, W) for a tensor whose canonical axes sit at `axes`
    (unit spatial axes added in front for 1-D / 2-D get stride 0)."""
    st = [int(np.prod(shape[a + 1 :])) for a in range(len(shape))]
    out = [st[axes[0]], st[axes[1]]] + [st[a] for a in axes[2:]]
    return out[:2] + [0] * (3 - nd) + out[2:]


def canonical_dims(shape, axes, nd: int) -> list[int]:
    dims = [shape[a] for a in axes]
    return dims[:2] + [1] * (3 - nd) + dims[2:]


def emit_generic_conv(llmod, name, in_types, out_types, attrs, epilogue=None, nd=2):
    from .conv import conv_window

    layout = attr(attrs, "data_layout", {1: "NCW", 2: "NCHW", 3: "NCDHW"}[nd])
    out_layout = attr(attrs, "out_layout", "") or layout
    xs, ws, ys = (shape_of(t) for t in (in_types[0], in_types[1], out_types[0]))
    win, G, O, Cg, Og, kax, _ = conv_window(in_types, out_types, attrs, nd)
    xax = layout_axes(layout, nd, "N", "C")
    yax = layout_axes(out_layout, nd, "N", "C")
    xst = canonical_strides(xs, xax, nd)
    wst = canonical_strides(ws, kax, nd)
    yst = canonical_strides(ys, yax, nd)
    dx, dw, dy = in_types[0].dtype, in_types[1].dtype, out_types[0].dtype
    acc_dt = accumulate_dtype(dx, dw, terms=Cg * win.KK)
    acc_t = compute_type(acc_dt)
    isf = is_float_dtype(acc_dt)
    kf = kernel_function(llmod, name, in_types, out_types, epilogue)
    units = win.N * O
    OD, OH, OW = win.osp
    KD, KH, KW = win.k
    D, H, W = win.sp
    work = 2.0 * units * win.P * Cg * win.KK
    nt = clamp_threads(kf.b, kf.nthreads, work, units)

    def body(b, vals, sh):
        x, w, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="u") as u:
            n = b.udiv(u, i64(O))
            o = b.urem(u, i64(O))
            g = b.udiv(o, i64(Og))
            xb = b.add(b.mul(n, i64(xst[0])), b.mul(b.mul(g, i64(Cg)), i64(xst[1])))
            wb = b.mul(o, i64(wst[0]))
            yb = b.add(b.mul(n, i64(yst[0])), b.mul(o, i64(yst[1])))
            with for_range(b, 0, win.P, name="p") as p:
                ow = b.urem(p, i64(OW))
                oh = b.urem(b.udiv(p, i64(OW)), i64(OH))
                od = b.udiv(p, i64(OW * OH))
                slot = entry_alloca(b, acc_t)  # promoted to a register by mem2reg
                b.store(const(acc_t, 0), slot)
                with for_range(b, 0, Cg, name="ci") as ci:
                    with for_range(b, 0, KD * KH * KW, name="t") as t:
                        kw = b.urem(t, i64(KW))
                        kh = b.urem(b.udiv(t, i64(KW)), i64(KH))
                        kd = b.udiv(t, i64(KW * KH))
                        pos = [
                            b.sub(b.add(b.mul(q, i64(s)), b.mul(k, i64(dd))), i64(pp))
                            for q, k, s, dd, pp in zip(
                                (od, oh, ow), (kd, kh, kw), win.s, win.d, win.pb
                            )
                        ]
                        ok = None
                        for v, lim in zip(pos, (D, H, W)):
                            c = b.and_(
                                b.icmp_signed(">=", v, i64(0)), b.icmp_signed("<", v, i64(lim))
                            )
                            ok = c if ok is None else b.and_(ok, c)
                        with b.if_then(ok):
                            xo = b.add(xb, b.mul(ci, i64(xst[1])))
                            for v, s in zip(pos, xst[2:]):
                                xo = b.add(xo, b.mul(v, i64(s)))
                            wo = b.add(wb, b.mul(ci, i64(wst[1])))
                            for k, s in zip((kd, kh, kw), wst[2:]):
                                wo = b.add(wo, b.mul(k, i64(s)))
                            xv = convert(b, load_as(b, x, xo, dx), dx, acc_dt)
                            wv = convert(b, load_as(b, w, wo, dw), dw, acc_dt)
                            old = b.load(slot)
                            new = b.fadd(old, b.fmul(xv, wv)) if isf else b.add(old, b.mul(xv, wv))
                            b.store(new, slot)
                val = convert(b, b.load(slot), acc_dt, dy)
                yo = yb
                for v, s in zip((od, oh, ow), yst[2:]):
                    yo = b.add(yo, b.mul(v, i64(s)))
                if kf.ep:
                    canon = [n, o] + [od, oh, ow][3 - nd :]
                    idx = [None] * (nd + 2)
                    for ci_, a in enumerate(yax):
                        idx[a] = canon[ci_]
                    val = kf.ep(b, val, idx, extras)
                store_from(b, val, y, yo, dy)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)
    kf.b.ret_void()
    return KernelInfo(kf.fn)
