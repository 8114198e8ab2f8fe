"""Winograd F(2x2, 3x3) for float32 channel-last (NHWC) 3x3 stride-1 convolutions (groups 1,
constant weights); the channel-first kernel's math (conv_winograd) with channels innermost.

Per chunk of tile rows: V_xi[t, c] (the input transform, 8 channels at a time), 16 GEMMs
M_xi[t, o] = V_xi[t, c] @ U_xi[c, o] (U_xi packed into NR-column panels at compile time), then
the output transform, 8 output channels at a time, with the epilogue applied in registers.
"""

from __future__ import annotations

import numpy as np

from .conv_winograd import G_MAT, _at, _bt, tile_rows
from .gemm_core import (
    PackedB,
    RawA,
    Tile,
    free_buffers,
    gemm_call,
    gemm_tile,
    k_block,
    pack_b_panels,
    plain_store_fn,
    thread_buffers,
)
from .llvm_util import (
    F32,
    F32P,
    V8F,
    clamp,
    const,
    for_range,
    gep,
    i64,
    imin,
    load,
    malloc,
    store,
    vload,
    vstore,
)
from .parallel import clamp_threads, parallel, split_range


def prepack(wc: np.ndarray, t: Tile) -> np.ndarray:
    """(O, C, 1, 3, 3) canonical weights -> 16 blocks of NR-column panels of U_xi^T (C x O)."""
    w = wc.reshape(wc.shape[0], wc.shape[1], 3, 3).astype(np.float64)
    u = np.einsum("ai,ocij,bj->abco", G_MAT, w, G_MAT)  # (4, 4, C, O)
    return np.concatenate(
        [
            pack_b_panels(u[a, b].astype(np.float32), t.nr).ravel()
            for a in range(4)
            for b in range(4)
        ]
    )


def emit(kf, w, win, O, C):
    """The kernel body; returns the weights' prepack."""
    H, W = win.sp[1], win.sp[2]
    OH, OW = win.osp[1], win.osp[2]
    pt, pl = win.pb[1], win.pb[2]
    TH, TW = -(-OH // 2), -(-OW // 2)
    rows, nchunks = tile_rows(TH, TW, C, O)
    tc_max = rows * TW
    NR = gemm_tile().nr
    npan = -(-O // NR)
    units0 = win.N * nchunks
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * win.N * O * C * 16 * TH * TW, units0 * npan)
    store_fn = plain_store_fn(kf.b.module)
    kcb = k_block(C, True)  # U is packed at compile time

    def body(b, vals, sh):
        x, up, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        vb = b.bitcast(malloc(b, i64(4 * 16 * tc_max * C)), F32P)
        mb = b.bitcast(malloc(b, i64(4 * 16 * tc_max * O)), F32P)
        abuf, _ = thread_buffers(b, RawA(vb, C, 1), PackedB(up), tc_max, O, C, kcb)
        bu = i64(units0)
        parts = sh.parts(b, units0)
        u0, u1 = sh.range(b, b.mul(bu, parts))
        with for_range(b, u0, u1, name="unit") as u:
            un, part = b.udiv(u, parts), b.urem(u, parts)
            n, ch = b.udiv(un, i64(nchunks)), b.urem(un, i64(nchunks))
            ty0 = b.mul(ch, i64(rows))
            nty = imin(b, i64(rows), b.sub(i64(TH), ty0))
            tc = b.mul(nty, i64(TW))
            o0, o1 = split_range(b, O, part, parts, NR)
            xn = gep(b, x, b.mul(n, i64(H * W * C)))
            with for_range(b, 0, tc, name="t") as t:
                ty = b.add(ty0, b.udiv(t, i64(TW)))
                tx = b.urem(t, i64(TW))
                _input_tile(b, xn, vb, t, ty, tx, H, W, C, pt, pl, tc_max)
            with for_range(b, 0, 16, name="xi") as xi:
                a = RawA(gep(b, vb, b.mul(xi, i64(tc_max * C))), C, 1)
                bsrc = PackedB(gep(b, up, b.mul(xi, i64(npan * C * NR))))
                cp = gep(b, mb, b.mul(xi, i64(tc_max * O)))
                gemm_call(b, a, bsrc, C, 0, tc, o0, o1, store_fn, [cp, i64(O)], abuf, None, kcb)
            yn = gep(b, y, b.mul(n, i64(OH * OW * O)))
            with for_range(b, 0, tc, name="ot") as t:
                ty = b.add(ty0, b.udiv(t, i64(TW)))
                tx = b.urem(t, i64(TW))
                _output_tile(b, kf, extras, mb, yn, n, t, ty, tx, o0, o1, OH, OW, O, tc_max, win)
        sh.end(b)
        free_buffers(b, vb, mb, abuf)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [w] + kf.outs + kf.extras, nt, body)
    from .conv_winograd import derived_prepack

    return derived_prepack(True, O, C, gemm_tile())


def _input_tile(b, xn, vb, t, ty, tx, H, W, C, pt, pl, tc_max):
    """V_xi[t, :] for tile (ty, tx): 8 channels at a time (then one at a time)."""
    ih0 = b.sub(b.mul(ty, i64(2)), i64(pt))
    iw0 = b.sub(b.mul(tx, i64(2)), i64(pl))
    ptrs, oks = [], []
    for i in range(4):
        ih = b.add(ih0, i64(i))
        okh = b.and_(b.icmp_signed(">=", ih, i64(0)), b.icmp_signed("<", ih, i64(H)))
        for j in range(4):
            iw = b.add(iw0, i64(j))
            ok = b.and_(
                okh, b.and_(b.icmp_signed(">=", iw, i64(0)), b.icmp_signed("<", iw, i64(W)))
            )
            pos = b.add(
                b.mul(clamp(b, ih, i64(0), i64(H - 1)), i64(W)), clamp(b, iw, i64(0), i64(W - 1))
            )
            ptrs.append(gep(b, xn, b.mul(pos, i64(C))))
            oks.append(ok)
    base = b.mul(t, i64(C))

    def block(width, c):
        vt = V8F if width == 8 else F32
        ld = vload if width == 8 else load
        d = [
            [b.select(oks[i * 4 + j], ld(b, ptrs[i * 4 + j], c), const(vt, 0.0)) for j in range(4)]
            for i in range(4)
        ]
        cols = [_bt(b, [d[i][j] for i in range(4)]) for j in range(4)]
        for a in range(4):
            v = _bt(b, [cols[j][a] for j in range(4)])
            for bb in range(4):
                dst = gep(b, vb, i64((a * 4 + bb) * tc_max * C))
                (vstore if width == 8 else store)(b, v[bb], dst, b.add(base, c))

    c8 = C // 8 * 8
    with for_range(b, 0, c8, 8, name="ic8") as c:
        block(8, c)
    with for_range(b, c8, C, name="ic1") as c:
        block(1, c)


def _output_tile(b, kf, extras, mb, yn, n, t, ty, tx, o0, o1, OH, OW, O, tc_max, win):
    """y[2ty+i, 2tx+j, o0:o1] from M_xi[t, o0:o1], 8 channels at a time, then the epilogue."""
    base = b.mul(t, i64(O))
    span = b.sub(o1, o0)
    o8 = b.add(o0, b.and_(span, i64(~7)))

    def block(width, o):
        ld = vload if width == 8 else load
        m = [
            [ld(b, gep(b, mb, i64((a * 4 + c) * tc_max * O)), b.add(base, o)) for c in range(4)]
            for a in range(4)
        ]
        rows = [_at(b, [m[a][c] for a in range(4)]) for c in range(4)]
        yv = [_at(b, [rows[c][i] for c in range(4)]) for i in range(2)]
        for i in range(2):
            for j in range(2):
                oh, ow = b.add(b.mul(ty, i64(2)), i64(i)), b.add(b.mul(tx, i64(2)), i64(j))
                ok = b.and_(b.icmp_signed("<", oh, i64(OH)), b.icmp_signed("<", ow, i64(OW)))
                with b.if_then(ok):
                    v = yv[i][j]
                    if kf.ep:
                        v = kf.ep(b, v, [n, oh, ow, o], extras)
                    off = b.add(b.mul(b.add(b.mul(oh, i64(OW)), ow), i64(O)), o)
                    (vstore if width == 8 else store)(b, v, yn, off)

    with for_range(b, o0, o8, 8, name="oc8") as o:
        block(8, o)
    with for_range(b, o8, o1, name="oc1") as o:
        block(1, o)
