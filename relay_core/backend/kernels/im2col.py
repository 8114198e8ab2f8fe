"""im2col for the GEMM-based convolutions, as shared (once per module) LLVM functions.

Channel-first: col[k, p - p0] for k = (ci, kd, kh, kw) and output positions p in [p0, p0 + pc),
rows of stride `ld`, each row zero padded up to a multiple of 16 (the GEMM reads whole panels).
Channel-last: col[p - p0, k] for k = (kd, kh, kw, ci), rows of Kg = KD*KH*KW*Cg floats.
Geometry is passed at run time so that every convolution in a module shares one copy.
"""

from __future__ import annotations

import llvmlite.ir as ir

from .llvm_util import (
    F32,
    F32P,
    I64,
    VOID,
    clamp,
    const,
    floordiv_rt,
    for_range,
    gep,
    i64,
    imax,
    imin,
    load,
    store,
)

# Geometry parameters, in order (all i64): channels of the group, input D H W, output OH OW,
# window KD KH KW, strides, dilations, leading pads.
GEOM = ["Cg", "D", "H", "W", "OH", "OW", "KD", "KH", "KW", "sd", "sh", "sw", "dd", "dh", "dw",
        "pd", "ph", "pw"]


def geom_args(win, Cg: int) -> list:
    """The GEOM values of a geometry.Window, as i64 constants."""
    d = dict(Cg=Cg, D=win.sp[0], H=win.sp[1], W=win.sp[2], OH=win.osp[1], OW=win.osp[2],
             KD=win.k[0], KH=win.k[1], KW=win.k[2], sd=win.s[0], sh=win.s[1], sw=win.s[2],
             dd=win.d[0], dh=win.d[1], dw=win.d[2], pd=win.pb[0], ph=win.pb[1], pw=win.pb[2])
    return [i64(d[k]) for k in GEOM]


def _zero(b, p, lo, hi):
    with for_range(b, lo, hi, name="z") as j:
        store(b, const(F32, 0.0), p, j)


def im2col_cf_fn(llmod: ir.Module) -> ir.Function:
    """void(float* x_group, float* col, i64 ld, i64 p0, i64 pc, GEOM...)."""
    name = "relay.im2col.cf"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(llmod, ir.FunctionType(VOID, [F32P, F32P, I64, I64, I64] + [I64] * len(GEOM)),
                     name=name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, col, ld, p0, pc, *g = fn.args
    G = dict(zip(GEOM, g))
    OH, OW, W = G["OH"], G["OW"], G["W"]
    p1 = b.add(p0, pc)
    r0 = b.sdiv(p0, OW)
    r1 = b.sdiv(b.add(p1, i64(-1)), OW)
    tail_end = b.and_(b.add(pc, i64(15)), i64(~15))
    unit = b.icmp_signed("==", G["sw"], i64(1))
    kk = b.mul(G["KD"], b.mul(G["KH"], G["KW"]))
    with for_range(b, 0, b.mul(G["Cg"], kk), name="k") as k:
        ci = b.sdiv(k, kk)
        rest = b.srem(k, kk)
        kd = b.sdiv(rest, b.mul(G["KH"], G["KW"]))
        kh = b.srem(b.sdiv(rest, G["KW"]), G["KH"])
        kw = b.srem(rest, G["KW"])
        row = gep(b, col, b.mul(k, ld))
        off_w = b.sub(b.mul(kw, G["dw"]), G["pw"])
        # ow range whose input column lies inside [0, W)
        ow_lo = clamp(b, floordiv_rt(b, b.add(b.neg(off_w), b.sub(G["sw"], i64(1))), G["sw"]), i64(0), OW)
        ow_hi = clamp(b, floordiv_rt(b, b.add(b.sub(W, off_w), b.sub(G["sw"], i64(1))), G["sw"]), i64(0), OW)
        with for_range(b, r0, b.add(r1, i64(1)), name="r") as r:
            od = b.sdiv(r, OH)
            oh = b.srem(r, OH)
            idd = b.sub(b.add(b.mul(od, G["sd"]), b.mul(kd, G["dd"])), G["pd"])
            ih = b.sub(b.add(b.mul(oh, G["sh"]), b.mul(kh, G["dh"])), G["ph"])
            rbase = b.mul(r, OW)
            a = b.sub(imax(b, p0, rbase), rbase)
            e = b.sub(imin(b, p1, b.add(rbase, OW)), rbase)
            dst = gep(b, row, b.sub(rbase, p0))  # dst[ow] is column p - p0
            inside = b.and_(
                b.and_(b.icmp_signed(">=", idd, i64(0)), b.icmp_signed("<", idd, G["D"])),
                b.and_(b.icmp_signed(">=", ih, i64(0)), b.icmp_signed("<", ih, G["H"])),
            )
            with b.if_else(inside) as (then, other):
                with then:
                    plane = b.add(b.mul(ci, G["D"]), idd)
                    src = gep(b, x, b.add(b.mul(b.add(b.mul(plane, G["H"]), ih), W), off_w))
                    lo = clamp(b, ow_lo, a, e)
                    hi = clamp(b, ow_hi, lo, e)
                    _zero(b, dst, a, lo)
                    with b.if_else(unit) as (u1, u2):
                        with u1:
                            with for_range(b, lo, hi, name="c1") as ow:
                                store(b, load(b, src, ow), dst, ow)
                        with u2:
                            with for_range(b, lo, hi, name="cs") as ow:
                                store(b, load(b, src, b.mul(ow, G["sw"])), dst, ow)
                    _zero(b, dst, hi, e)
                with other:
                    _zero(b, dst, a, e)
        _zero(b, row, pc, tail_end)
    b.ret_void()
    return fn


def im2col_cl_fn(llmod: ir.Module) -> ir.Function:
    """void(float* x_image_group, float* col, i64 C, i64 p0, i64 pc, GEOM...): channel-last
    input (position stride C, the group's channels at offset 0); col rows of Kg floats."""
    name = "relay.im2col.cl"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(llmod, ir.FunctionType(VOID, [F32P, F32P, I64, I64, I64] + [I64] * len(GEOM)),
                     name=name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, col, C, p0, pc, *g = fn.args
    G = dict(zip(GEOM, g))
    Cg, OH, OW = G["Cg"], G["OH"], G["OW"]
    kg = b.mul(Cg, b.mul(G["KD"], b.mul(G["KH"], G["KW"])))
    with for_range(b, 0, pc, name="p") as pl:
        p = b.add(p0, pl)
        ow = b.srem(p, OW)
        oh = b.srem(b.sdiv(p, OW), OH)
        od = b.sdiv(p, b.mul(OW, OH))
        dst = gep(b, col, b.mul(pl, kg))
        with for_range(b, 0, G["KD"], name="kd") as kd:
            idd = b.sub(b.add(b.mul(od, G["sd"]), b.mul(kd, G["dd"])), G["pd"])
            okd = b.and_(b.icmp_signed(">=", idd, i64(0)), b.icmp_signed("<", idd, G["D"]))
            with for_range(b, 0, G["KH"], name="kh") as kh:
                ih = b.sub(b.add(b.mul(oh, G["sh"]), b.mul(kh, G["dh"])), G["ph"])
                okh = b.and_(okd, b.and_(b.icmp_signed(">=", ih, i64(0)), b.icmp_signed("<", ih, G["H"])))
                with for_range(b, 0, G["KW"], name="kw") as kw:
                    iw = b.sub(b.add(b.mul(ow, G["sw"]), b.mul(kw, G["dw"])), G["pw"])
                    ok = b.and_(okh, b.and_(b.icmp_signed(">=", iw, i64(0)), b.icmp_signed("<", iw, G["W"])))
                    tap = b.add(b.mul(b.add(b.mul(kd, G["KH"]), kh), G["KW"]), kw)
                    d = gep(b, dst, b.mul(tap, Cg))
                    with b.if_else(ok) as (then, other):
                        with then:
                            pos = b.add(b.mul(b.add(b.mul(idd, G["H"]), ih), G["W"]), iw)
                            s = gep(b, x, b.mul(pos, C))
                            with for_range(b, 0, Cg, name="ci") as ci:
                                store(b, load(b, s, ci), d, ci)
                        with other:
                            _zero(b, d, i64(0), Cg)
    b.ret_void()
    return fn
