"""Lowering of sliding-window ops: convolution, transposed convolution and pooling.

These are the fallbacks: fast float32 convolutions come from relay_core.backend.kernels. Every
layout works through axis maps to the canonical (N, C, *spatial) / (O, I, *k) order; padding is
a guarded read (a select whose untaken branch never loads).
"""

from __future__ import annotations

import itertools

from ..ops import nn_util as U
from . import expr as E
from . import tensor as T
from .expr import Const, call, cast, select
from .lower_nn import _acc_dtype, _cast_result
from .tensor import compute, reduce_axis


class _Canon:
    """Read a tensor by canonical index through its layout's axis positions."""

    def __init__(self, t, axes):
        self.t = t
        self.axes = axes
        self.shape = tuple(t.shape[a] for a in axes)

    def __getitem__(self, idx):
        real = [None] * len(self.axes)
        for a, v in zip(self.axes, idx):
            real[a] = v
        return self.t[tuple(real)]


def _out_compute(oshape_real, oax, body, name, batch=None):
    """compute over the real output shape with body(canonical index); a run-time batch dim
    (position oax[0]) takes `batch`."""
    oshape_real = tuple(oshape_real)
    if batch is not None and not isinstance(oshape_real[oax[0]], int):
        oshape_real = tuple(batch if k == oax[0] else d for k, d in enumerate(oshape_real))

    def real_body(*o):
        return body(*(o[a] for a in oax))

    return compute(oshape_real, real_body, name)


def _pads(attrs, in_dims, kernel, strides, dilation, op: str) -> list:
    """Per-axis (begin, end) pads; SAME padding over an unknown spatial extent is an
    UnknownExtentError, so that `build` compiles per input shape (as for any unknown extent a
    rule needs) instead of a rule computing with a missing pad."""
    pads = U.resolve_pads(attrs.auto_pad, attrs.padding, in_dims, kernel, strides, dilation, op)
    if any(p is None for p in pads):
        from ..errors import UnknownExtentError

        raise UnknownExtentError(
            f"{op}: {attrs.auto_pad} padding needs the spatial extents, unknown here ({in_dims})"
        )
    return pads


def _in_range(pos, n):
    return E.logical_and(pos >= 0, pos < n)


# -- convolution ----------------------------------------------------------------------------------
def _conv(nd: int):
    def lower(inputs, attrs, out_type):
        data, weight = inputs
        op = f"nn.conv{nd}d"
        dax = U.data_axes(attrs.data_layout, nd, op)
        kax = U.kernel_axes(attrs.kernel_layout, nd, op)
        oax = U.data_axes(attrs.out_layout or attrs.data_layout, nd, op)
        x, w = _Canon(data, dax), _Canon(weight, kax)
        sp = x.shape[2:]
        o, cg, *ks = w.shape
        strides = U.ntuple(attrs.strides, nd, "strides", op)
        dil = U.ntuple(attrs.dilation, nd, "dilation", op)
        pads = _pads(attrs, sp, ks, strides, dil, op)
        og = o // attrs.groups
        acc = _acc_dtype(data.dtype, weight.dtype)

        def body(n, oc, *y):
            rc = reduce_axis(cg, "c")
            rk = [reduce_axis(k, "k") for k in ks]
            pos = [y[a] * strides[a] - pads[a][0] + rk[a] * dil[a] for a in range(nd)]
            ci = E.floordiv(oc, og) * cg + rc if attrs.groups > 1 else rc
            v = x[(n, ci, *pos)]
            inside = E.all_of(*(_in_range(p, s) for p, s in zip(pos, sp)))
            v = select(inside, cast(acc, v), E.as_expr(0, acc))
            return T.sum(v * cast(acc, w[(oc, rc, *rk)]), [rc] + rk)

        s = _out_compute(tuple(out_type.shape), oax, body, f"conv{nd}d_acc", x.shape[0])
        return compute(s.shape, lambda *i: _cast_result(s[i], out_type.dtype), f"conv{nd}d")

    return lower


def _conv_transpose(nd: int):
    def lower(inputs, attrs, out_type):
        data, weight = inputs
        op = f"nn.conv{nd}d_transpose"
        dax = U.data_axes(attrs.data_layout, nd, op)
        kax = U.kernel_axes(attrs.kernel_layout, nd, op, "I", "O")
        oax = U.data_axes(attrs.out_layout or attrs.data_layout, nd, op)
        x, w = _Canon(data, dax), _Canon(weight, kax)
        n_, c, *sp = x.shape
        _, og, *ks = w.shape
        strides = U.ntuple(attrs.strides, nd, "strides", op)
        dil = U.ntuple(attrs.dilation, nd, "dilation", op)
        pb, _ = U.explicit_padding(attrs.padding, nd, op)
        g = attrs.groups
        cg = c // g
        acc = _acc_dtype(data.dtype, weight.dtype)

        def body(n, oc, *y):
            rc = reduce_axis(cg, "c")
            rk = [reduce_axis(k, "k") for k in ks]
            grp = E.floordiv(oc, og) if g > 1 else E.index(0)
            ci = grp * cg + rc
            conds, src = [], []
            for a in range(nd):
                t = y[a] + pb[a] - rk[a] * dil[a]
                q = E.floordiv(t, strides[a])
                conds.append(E.logical_and(t >= 0, E.eq(E.floormod(t, strides[a]), 0)))
                conds.append(q < sp[a])
                src.append(q)
            v = select(E.all_of(*conds), cast(acc, x[(n, ci, *src)]), E.as_expr(0, acc))
            wv = cast(acc, w[(ci, E.floormod(oc, og) if g > 1 else oc, *rk)])
            return T.sum(v * wv, [rc] + rk)

        s = _out_compute(tuple(out_type.shape), oax, body, f"conv{nd}d_t_acc", x.shape[0])
        return compute(
            s.shape, lambda *i: _cast_result(s[i], out_type.dtype), f"conv{nd}d_transpose"
        )

    return lower


# -- pooling --------------------------------------------------------------------------------------
def _lowest(dtype):
    return E.min_value(dtype)


def _pool_geometry(x, attrs, nd, op):
    k = U.ntuple(attrs.pool_size, nd, "pool_size", op)
    s = U.ntuple(attrs.strides, nd, "strides", op)
    d = U.ntuple(attrs.dilation, nd, "dilation", op)
    pads = _pads(attrs, x.shape[2:], k, s, d, op)
    ceil = attrs.ceil_mode and attrs.auto_pad == "NOTSET"
    sp = x.shape[2:]
    out = [
        U.window_out_dim(sp[a], k[a], s[a], d[a], pads[a], ceil, attrs.auto_pad, op, a)
        for a in range(nd)
    ]
    k = tuple(U.fit_window(sp[a], k[a], d[a], pads[a], out[a]) for a in range(nd))
    return k, s, d, pads


def _count(y, k, s, d, pb, lo, hi):
    """#taps r in [0, k) with lo <= y*s - pb + r*d < hi (an index expression)."""
    base = y * s - pb
    rmin = E.max_(E.neg(E.floordiv(base - lo, d)), E.index(0))  # ceil((lo - base) / d)
    rmax = E.min_(E.floordiv(E.index(hi - 1) - base, d), E.index(k - 1))
    return E.max_(rmax - rmin + 1, E.index(0))


def _pool(nd: int, kind: str):
    def lower(inputs, attrs, out_type):
        data = inputs[0]
        op = f"nn.{kind}_pool{nd}d"
        ax = U.data_axes(attrs.layout, nd, op)
        oax = U.data_axes(attrs.out_layout or attrs.layout, nd, op)
        x = _Canon(data, ax)
        sp = x.shape[2:]
        k, s, d, pads = _pool_geometry(x, attrs, nd, op)
        f = "float64" if data.dtype == "float64" else "float32"

        def taps(y):
            rk = [reduce_axis(kk, "k") for kk in k]
            pos = [y[a] * s[a] - pads[a][0] + rk[a] * d[a] for a in range(nd)]
            return rk, pos, E.all_of(*(_in_range(p, n) for p, n in zip(pos, sp)))

        if kind == "max":

            def body(n, c, *y):
                rk, pos, inside = taps(y)
                v = select(inside, x[(n, c, *pos)], _lowest(data.dtype))
                return T.max(v, rk)

            return _out_compute(tuple(out_type.shape), oax, body, "max_pool", x.shape[0])

        if kind == "lp":
            p = float(attrs.p)

            def body(n, c, *y):
                rk, pos, inside = taps(y)
                v = select(
                    inside,
                    call("pow", call("abs", cast(f, x[(n, c, *pos)])), Const(p, f)),
                    Const(0.0, f),
                )
                return T.sum(v, rk)

            acc = _out_compute(tuple(out_type.shape), oax, body, "lp_acc", x.shape[0])
            return compute(
                acc.shape,
                lambda *i: cast(data.dtype, call("pow", acc[i], Const(1.0 / p, f))),
                "lp_pool",
            )

        def body(n, c, *y):
            rk, pos, inside = taps(y)
            v = select(inside, cast(f, x[(n, c, *pos)]), Const(0.0, f))
            return T.sum(v, rk)

        acc = _out_compute(tuple(out_type.shape), oax, body, "avg_acc", x.shape[0])

        def fin(*o):
            y = [o[a] for a in oax[2:]]
            cnt = E.index(1)
            for a in range(nd):
                lo, hi = (
                    (-pads[a][0], sp[a] + pads[a][1]) if attrs.count_include_pad else (0, sp[a])
                )
                cnt = cnt * _count(y[a], k[a], s[a], d[a], pads[a][0], lo, hi)
            return cast(data.dtype, acc[o] / cast(f, cnt))

        return compute(acc.shape, fin, "avg_pool")

    return lower


def _argmax_pool(nd: int):
    def lower(inputs, attrs, out_type):
        data = inputs[0]
        op = f"nn.max_pool{nd}d_with_argmax"
        ax = U.data_axes(attrs.layout, nd, op)
        oax = U.data_axes(attrs.out_layout or attrs.layout, nd, op)
        x = _Canon(data, ax)
        n_, c_, *sp = x.shape
        k, s, d, pads = _pool_geometry(x, attrs, nd, op)
        ntaps = 1
        for kk in k:
            ntaps *= kk

        def pos_of(y, r):
            return [y[a] * s[a] - pads[a][0] + r[a] * d[a] for a in range(nd)]

        def arg(n, c, *y):
            rk = [reduce_axis(kk, "k") for kk in k]
            pos = pos_of(y, rk)
            inside = E.all_of(*(_in_range(p, m) for p, m in zip(pos, sp)))
            f = (
                "float64"
                if data.dtype == "float64"
                else ("float32" if E.is_float(data.dtype) else data.dtype)
            )
            v = select(inside, cast(f, x[(n, c, *pos)]), _lowest(f))
            return T.argmax(v, rk)

        best = _out_compute(tuple(out_type.fields[0].shape), oax, arg, "pool_arg", x.shape[0])

        def tap_pos(o):
            t = best[o]
            r, rem = [], t
            for kk in reversed(k):
                r.append(E.floormod(rem, kk))
                rem = E.floordiv(rem, kk)
            r.reverse()
            y = [o[a] for a in oax[2:]]
            return pos_of(y, r)

        def val(*o):
            n, c = o[oax[0]], o[oax[1]]
            pos = tap_pos(o)
            inside = E.all_of(*(_in_range(p, m) for p, m in zip(pos, sp)))
            return select(inside, x[(n, c, *pos)], _lowest(data.dtype))

        def ind(*o):
            n, c = o[oax[0]], o[oax[1]]
            pos = tap_pos(o)
            inside = E.all_of(*(_in_range(p, m) for p, m in zip(pos, sp)))
            if attrs.storage_order == 1:
                flat = n * c_ + c
                for a in reversed(range(nd)):
                    flat = flat * sp[a] + pos[a]
            else:
                real = [None] * (nd + 2)
                for a, v in zip(ax, (n, c, *pos)):
                    real[a] = v
                flat = E.index(0)
                for dd, v in zip(data.shape, real):
                    flat = flat * dd + v
            return select(inside, flat, E.index(-1))

        shape = best.shape
        return compute(shape, val, "pool_val"), compute(shape, ind, "pool_ind")

    return lower


# -- global and adaptive pooling ------------------------------------------------------------------
def _global(nd: int, kind: str):
    def lower(inputs, attrs, out_type):
        data = inputs[0]
        op = f"nn.global_{kind}_pool{nd}d"
        ax = U.data_axes(attrs.layout, nd, op)
        oax = U.data_axes(attrs.out_layout or attrs.layout, nd, op)
        x = _Canon(data, ax)
        sp = x.shape[2:]
        f = "float64" if data.dtype == "float64" else "float32"
        cnt = 1
        for v in sp:
            cnt = cnt * v

        def body(n, c, *y):
            rk = [reduce_axis(v, "k") for v in sp]
            if kind == "max":
                return T.max(x[(n, c, *rk)], rk)
            v = cast(f, x[(n, c, *rk)])
            if kind == "lp":
                v = call("pow", call("abs", v), Const(float(attrs.p), f))
            return T.sum(v, rk)

        acc = _out_compute(tuple(out_type.shape), oax, body, f"global_{kind}", x.shape[0])
        if kind == "max":
            return acc
        if kind == "avg":
            return compute(
                acc.shape,
                lambda *i: cast(data.dtype, acc[i] / cast(f, E.index(cnt))),
                "global_avg_pool",
            )
        return compute(
            acc.shape,
            lambda *i: cast(data.dtype, call("pow", acc[i], Const(1.0 / attrs.p, f))),
            "global_lp_pool",
        )

    return lower


def _adaptive(nd: int, kind: str):
    def lower(inputs, attrs, out_type):
        data = inputs[0]
        op = f"nn.adaptive_{kind}_pool{nd}d"
        ax = U.data_axes(attrs.layout, nd, op)
        oax = U.data_axes(attrs.out_layout or attrs.layout, nd, op)
        x = _Canon(data, ax)
        sp = x.shape[2:]
        oshape = tuple(out_type.shape)
        outs = [oshape[a] for a in oax[2:]]
        f = "float64" if data.dtype == "float64" else "float32"
        # the largest bin per axis bounds the reduction; each bin masks its own length
        maxbin = []
        for n, o in zip(sp, outs):
            m = max(((i + 1) * n + o - 1) // o - (i * n) // o for i in range(o)) if o else 1
            maxbin.append(max(m, 1))

        def bounds(y, n, o):
            start = E.floordiv(y * n, o)
            end = E.neg(E.floordiv(E.neg((y + 1) * n), o))
            return start, end

        def body(b, c, *y):
            rk = [reduce_axis(m, "k") for m in maxbin]
            pos, conds = [], []
            for a in range(nd):
                st, en = bounds(y[a], sp[a], outs[a])
                pos.append(st + rk[a])
                conds.append(st + rk[a] < en)
            where = E.all_of(*conds)
            if kind == "max":
                v = select(where, x[(b, c, *pos)], _lowest(data.dtype))
                return T.max(v, rk)
            v = select(where, cast(f, x[(b, c, *pos)]), Const(0.0, f))
            return T.sum(v, rk)

        acc = _out_compute(oshape, oax, body, f"adaptive_{kind}", x.shape[0])
        oshape = acc.shape
        if kind == "max":
            return acc

        def fin(*o):
            cnt = E.index(1)
            for a, yv in enumerate(o[j] for j in oax[2:]):
                st, en = bounds(yv, sp[a], outs[a])
                cnt = cnt * (en - st)
            return cast(data.dtype, acc[o] / cast(f, cnt))

        return compute(oshape, fin, "adaptive_avg_pool")

    return lower


__all__ = ["itertools"]
