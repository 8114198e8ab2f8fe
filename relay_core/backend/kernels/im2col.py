"""im2col for the GEMM-based convolutions, as shared (once per module) LLVM functions.

Channel-first: col[k, p - p0] for k = (ci, kd, kh, kw) and output positions p in [p0, p0 + pc),
rows of stride `ld`, each row zero padded up to a multiple of the GEMM tile's NR (the GEMM reads
whole panels).
Channel-last: col[p - p0, k] for k = (kd, kh, kw, ci), rows of Kg = KD*KH*KW*Cg floats.
Geometry is passed at run time so that every convolution in a module shares one copy.
"""

from __future__ import annotations

import llvmlite.ir as ir

from .gemm_core import gemm_tile
from .llvm_util import (
    F32,
    F32P,
    I32,
    I64,
    VOID,
    clamp,
    const,
    floordiv_rt,
    for_carry,
    for_range,
    gep,
    i64,
    imax,
    imin,
    load,
    store,
    vload,
    vstore,
)

# Geometry parameters, in order (all i64): channels of the group, input D H W, output OH OW,
# window KD KH KW, strides, dilations, leading pads.
GEOM = [
    "Cg",
    "D",
    "H",
    "W",
    "OH",
    "OW",
    "KD",
    "KH",
    "KW",
    "sd",
    "sh",
    "sw",
    "dd",
    "dh",
    "dw",
    "pd",
    "ph",
    "pw",
]


def geom_args(win, Cg: int) -> list:
    """The GEOM values of a geometry.Window, as i64 constants."""
    d = dict(
        Cg=Cg,
        D=win.sp[0],
        H=win.sp[1],
        W=win.sp[2],
        OH=win.osp[1],
        OW=win.osp[2],
        KD=win.k[0],
        KH=win.k[1],
        KW=win.k[2],
        sd=win.s[0],
        sh=win.s[1],
        sw=win.s[2],
        dd=win.d[0],
        dh=win.d[1],
        dw=win.d[2],
        pd=win.pb[0],
        ph=win.pb[1],
        pw=win.pb[2],
    )
    return [i64(d[k]) for k in GEOM]


def _zero(b, p, lo, hi):
    with for_range(b, lo, hi, name="z") as j:
        store(b, const(F32, 0.0), p, j)


def _range_for(b, n_out, off, s, n_in, unit):
    """[lo, hi) of o in [0, n_out) with 0 <= o * s + off < n_in (s > 0; `unit`: s == 1)."""
    lo1 = clamp(b, b.neg(off), i64(0), n_out)
    hi1 = clamp(b, b.sub(n_in, off), lo1, n_out)
    lo = clamp(b, floordiv_rt(b, b.add(b.neg(off), b.sub(s, i64(1))), s), i64(0), n_out)
    hi = clamp(b, floordiv_rt(b, b.add(b.sub(n_in, off), b.sub(s, i64(1))), s), lo, n_out)
    return b.select(unit, lo1, lo), b.select(unit, hi1, hi)


def im2col_cf_fn(llmod: ir.Module, win=None, Cg: int = 0) -> ir.Function:
    """void(float* x_group, float* col, i64 ld, i64 p0, i64 pc, GEOM...), or specialised to one
    geometry (win, Cg): void(float* x_group, float* col, i64 ld, i64 p0, i64 pc)."""
    key = "" if win is None else "." + "_".join(str(int(v.constant)) for v in geom_args(win, Cg))
    name = "relay.im2col.cf" + key
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    extra = [I64] * len(GEOM) if win is None else []
    fn = ir.Function(llmod, ir.FunctionType(VOID, [F32P, F32P, I64, I64, I64] + extra), name=name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, col, ld, p0, pc, *g = fn.args
    G = dict(zip(GEOM, g if win is None else geom_args(win, Cg)))
    OH, OW, W, H, D = G["OH"], G["OW"], G["W"], G["H"], G["D"]
    p1 = b.add(p0, pc)
    r0 = b.sdiv(p0, OW)
    nrows = b.sub(b.add(b.sdiv(b.add(p1, i64(-1)), OW), i64(1)), r0)
    nr = gemm_tile().nr  # zero padding up to whole panels, within the row (ld >= pc)
    tail_end = imin(b, b.mul(b.udiv(b.add(pc, i64(nr - 1)), i64(nr)), i64(nr)), ld)
    unit = b.icmp_signed("==", G["sw"], i64(1))
    plane = b.mul(D, b.mul(H, W))
    # per window column kw: the output columns [lo, hi) whose input column is inside [0, W)
    kwr = b.alloca(I64, size=b.mul(G["KW"], i64(2)))
    with for_range(b, 0, G["KW"], name="kwr") as kw:
        off_w = b.sub(b.mul(kw, G["dw"]), G["pw"])
        with b.if_else(unit) as (u1, u2):
            with u1:
                lo = clamp(b, b.neg(off_w), i64(0), OW)
                store(b, lo, kwr, b.mul(kw, i64(2)))
                store(b, clamp(b, b.sub(W, off_w), lo, OW), kwr, b.add(b.mul(kw, i64(2)), i64(1)))
            with u2:
                sm1 = b.sub(G["sw"], i64(1))
                lo = clamp(b, floordiv_rt(b, b.add(b.neg(off_w), sm1), G["sw"]), i64(0), OW)
                hi = clamp(b, floordiv_rt(b, b.add(b.sub(W, off_w), sm1), G["sw"]), lo, OW)
                store(b, lo, kwr, b.mul(kw, i64(2)))
                store(b, hi, kwr, b.add(b.mul(kw, i64(2)), i64(1)))
    # per output row of the chunk: od * sd, oh * sh and its column span [a, e) in the chunk
    rows = b.alloca(I64, size=b.mul(nrows, i64(4)))

    def fill(j, st):
        od, oh = st
        r = b.add(r0, j)
        rbase = b.mul(r, OW)
        q = b.mul(j, i64(4))
        store(b, b.mul(od, G["sd"]), rows, q)
        store(b, b.mul(oh, G["sh"]), rows, b.add(q, i64(1)))
        store(b, b.sub(imax(b, p0, rbase), rbase), rows, b.add(q, i64(2)))
        store(b, b.sub(imin(b, p1, b.add(rbase, OW)), rbase), rows, b.add(q, i64(3)))
        oh1 = b.add(oh, i64(1))
        wrap = b.icmp_signed("==", oh1, OH)
        return [b.select(wrap, b.add(od, i64(1)), od), b.select(wrap, i64(0), oh1)]

    for_carry(b, 0, nrows, [b.sdiv(r0, OH), b.srem(r0, OH)], fill, name="fr")
    # k = ((ci * KD + kd) * KH + kh) * KW + kw, visited in order by nested loops
    with for_range(b, 0, G["Cg"], name="ci") as ci:
        xc = gep(b, x, b.mul(ci, plane))
        with for_range(b, 0, G["KD"], name="kd") as kd:
            dd_off = b.sub(b.mul(kd, G["dd"]), G["pd"])
            with for_range(b, 0, G["KH"], name="kh") as kh:
                dh_off = b.sub(b.mul(kh, G["dh"]), G["ph"])
                kbase = b.mul(b.add(b.mul(b.add(b.mul(ci, G["KD"]), kd), G["KH"]), kh), G["KW"])
                with for_range(b, 0, G["KW"], name="kw") as kw:
                    row = gep(b, col, b.mul(b.add(kbase, kw), ld))
                    off_w = b.sub(b.mul(kw, G["dw"]), G["pw"])
                    ow_lo = load(b, kwr, b.mul(kw, i64(2)))
                    ow_hi = load(b, kwr, b.add(b.mul(kw, i64(2)), i64(1)))
                    with for_range(b, 0, nrows, name="r") as j:
                        q = b.mul(j, i64(4))
                        idd = b.add(load(b, rows, q), dd_off)
                        ih = b.add(load(b, rows, b.add(q, i64(1))), dh_off)
                        a = load(b, rows, b.add(q, i64(2)))
                        e = load(b, rows, b.add(q, i64(3)))
                        dst = gep(b, row, b.sub(b.mul(b.add(r0, j), OW), p0))  # dst[ow]: col p - p0
                        inside = b.and_(
                            b.and_(b.icmp_signed(">=", idd, i64(0)), b.icmp_signed("<", idd, D)),
                            b.and_(b.icmp_signed(">=", ih, i64(0)), b.icmp_signed("<", ih, H)),
                        )
                        with b.if_else(inside) as (then, other):
                            with then:
                                src = gep(b, xc, b.add(b.mul(b.add(b.mul(idd, H), ih), W), off_w))
                                lo = clamp(b, ow_lo, a, e)
                                hi = clamp(b, ow_hi, lo, e)
                                _zero(b, dst, a, lo)
                                with b.if_else(unit) as (u1, u2):
                                    with u1:
                                        with for_range(b, lo, hi, name="c1") as ow:
                                            store(b, load(b, src, ow), dst, ow)
                                    with u2:
                                        _strided_copy(b, src, dst, lo, hi, G["sw"], W, off_w)
                                _zero(b, dst, hi, e)
                            with other:
                                _zero(b, dst, a, e)
                    _zero(b, row, pc, tail_end)
    b.ret_void()
    return fn


def _strided_copy(b, src, dst, lo, hi, sw, W, off_w):
    """dst[ow] = src[ow * sw] for ow in [lo, hi); stride 2 deinterleaves 8 at a time while the
    16 floats read stay inside the input row (src[j] is input column j + off_w)."""
    even = ir.Constant(ir.VectorType(I32, 8), list(range(0, 16, 2)))
    two = b.icmp_signed("==", sw, i64(2))
    gmax = imin(b, b.sub(hi, i64(8)), floordiv_rt(b, b.sub(b.sub(W, i64(16)), off_w), i64(2)))
    ngroups = b.select(
        b.icmp_signed(">=", gmax, lo), b.add(b.sdiv(b.sub(gmax, lo), i64(8)), i64(1)), i64(0)
    )
    vend = b.select(two, b.add(lo, b.mul(ngroups, i64(8))), lo)
    with for_range(b, lo, vend, 8, name="c2") as ow:
        s0 = b.mul(ow, i64(2))
        v = b.shuffle_vector(vload(b, src, s0), vload(b, src, b.add(s0, i64(8))), even)
        vstore(b, v, dst, ow)
    with for_range(b, vend, hi, name="cs") as ow:
        store(b, load(b, src, b.mul(ow, sw)), dst, ow)


def im2col_cl_fn(llmod: ir.Module) -> ir.Function:
    """void(float* x_image_group, float* col, i64 C, i64 p0, i64 pc, GEOM...): channel-last
    input (position stride C, the group's channels at offset 0); col rows of Kg floats."""
    name = "relay.im2col.cl"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(
        llmod, ir.FunctionType(VOID, [F32P, F32P, I64, I64, I64] + [I64] * len(GEOM)), name=name
    )
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
                okh = b.and_(
                    okd, b.and_(b.icmp_signed(">=", ih, i64(0)), b.icmp_signed("<", ih, G["H"]))
                )
                with for_range(b, 0, G["KW"], name="kw") as kw:
                    iw = b.sub(b.add(b.mul(ow, G["sw"]), b.mul(kw, G["dw"])), G["pw"])
                    ok = b.and_(
                        okh, b.and_(b.icmp_signed(">=", iw, i64(0)), b.icmp_signed("<", iw, G["W"]))
                    )
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
