"""Lowering of ops whose shape depends on tensor values: the dyn.* twins of static ops (shape,
reps, begin / end, k, depth given as tensors), arange, nonzero and argwhere.

The values are read at run time through `value_of` Vars; output dims are index expressions of
them, computed by the caller before it allocates the outputs. nonzero / argwhere first count
the non-zero elements (a small kernel of their own), then fill the result (in
relay_core/backend/lower_loops.py: a sequential scan).
"""

from __future__ import annotations

from . import expr as E
from .expr import Const, cast, select
from .lower_misc import cast_value
from .lower_transform import ravel, reshape_to
from .lowering import broadcast_dim, broadcast_read, broadcast_shape, register_lower
from .tensor import compute, value_of


def _values(t, n=None):
    """Vars for the elements of a 1-D (or scalar) int tensor."""
    if t.ndim == 0:
        return [value_of(t, ())]
    n = t.shape[0] if n is None else n
    return [value_of(t, (i,)) for i in range(n)]


def _prod(dims):
    p = E.index(1)
    for d in dims:
        p = p * d
    return p


@register_lower("dyn.reshape")
def _dyn_reshape(inputs, attrs, out_type):
    x, ns = inputs
    vals = _values(ns)
    known = []
    for i, v in enumerate(vals):
        if attrs.allowzero:
            known.append(select(E.eq(v, -1), E.index(1), v))
        else:
            copy = x.shape[i] if i < x.ndim else E.index(0)
            known.append(select(E.eq(v, -1), E.index(1), select(E.eq(v, 0), E.index(copy), v)))
    total = _prod(x.shape)
    den = _prod(known)
    safe = select(E.eq(den, 0), E.index(1), den)
    shape = [select(E.eq(v, -1), E.floordiv(total, safe), k) for v, k in zip(vals, known)]
    return reshape_to(x, tuple(shape), "dyn_reshape")


@register_lower("dyn.broadcast_to")
def _dyn_broadcast_to(inputs, attrs, out_type):
    x, shp = inputs
    target = tuple(_values(shp))
    shape = broadcast_shape(x.shape, target)
    return compute(shape, lambda *i: broadcast_read(x, i), "dyn_broadcast_to")


@register_lower("dyn.tile")
def _dyn_tile(inputs, attrs, out_type):
    x, reps = inputs
    r = _values(reps)
    n = max(len(r), x.ndim)
    xs = (1,) * (n - x.ndim) + tuple(x.shape)
    rs = [E.index(1)] * (n - len(r)) + r
    shape = tuple(d * k for d, k in zip(xs, rs))

    def body(*i):
        idx = []
        for k, d in enumerate(x.shape):
            j = i[n - x.ndim + k]
            idx.append(E.floormod(j, d) if not (isinstance(d, int) and d == 1) else 0)
        return x[tuple(idx)]

    return compute(shape, body, "dyn_tile")


_BIG = 2**31 - 1


def _slice_axis(d, b, e, s):
    """ONNX Slice on one axis (relay_core.ops.transform_slice.slice_axis) with run-time values:
    (start, length)."""
    d = E.index(d)
    b = select(b < 0, b + d, b)
    e = select(e < 0, e + d, e)
    pos = s > 0
    b_pos = E.min_(E.max_(b, E.index(0)), d)
    e_pos = E.min_(E.max_(e, E.index(0)), d)
    len_pos = E.max_(E.index(0), E.neg(E.floordiv(E.neg(e_pos - b_pos), s)))
    b_neg = E.min_(E.max_(b, E.index(0)), d - 1)
    e_neg = E.min_(E.max_(e, E.index(-1)), d - 1)
    ns = select(E.eq(s, 0), E.index(1), E.neg(s))
    len_neg = E.max_(E.index(0), E.neg(E.floordiv(E.neg(b_neg - e_neg), ns)))
    len_neg = select(E.eq(d, 0), E.index(0), len_neg)
    return select(pos, b_pos, b_neg), select(pos, len_pos, len_neg)


@register_lower("dyn.strided_slice")
def _dyn_strided_slice(inputs, attrs, out_type):
    x = inputs[0]
    nd = x.ndim
    n = inputs[1].shape[0] if inputs[1].ndim else 1
    if not isinstance(n, int):
        raise NotImplementedError("dyn.strided_slice with parameters of unknown length")
    begin = _values(inputs[1], n)
    end = _values(inputs[2], n)
    strides = _values(inputs[3], n) if len(inputs) > 3 else [E.index(1)] * n
    axes = _values(inputs[4], n) if len(inputs) > 4 else [E.index(k) for k in range(n)]
    size_mode = attrs.slice_mode == "size"
    starts, lens, steps = [], [], []
    for a in range(nd):
        b, e, s, hit = E.index(0), E.index(_BIG), E.index(1), Const(False, "bool")
        for k in range(n):
            ax = axes[k]
            ax = select(ax < 0, ax + nd, ax)
            m = E.eq(ax, a)
            bk, ek = begin[k], end[k]
            sk = E.index(1) if size_mode else strides[k]
            if size_mode:  # end holds a size (-1: to the end)
                bpos = select(bk < 0, E.max_(bk + x.shape[a], E.index(0)), bk)
                ek = select(ek < 0, E.index(_BIG), bpos + ek)
            b, e, s = select(m, bk, b), select(m, ek, e), select(m, sk, s)
            hit = E.logical_or(hit, m)
        st, ln = _slice_axis(x.shape[a], b, e, s)
        starts.append(st)
        lens.append(ln)
        steps.append(s)
    return compute(
        tuple(lens),
        lambda *i: x[tuple(starts[k] + i[k] * steps[k] for k in range(nd))],
        "dyn_strided_slice",
    )


def _fill(value_fn, shape_t, dtype, name):
    shape = tuple(E.max_(v, E.index(0)) for v in _values(shape_t))
    return compute(shape, lambda *i: value_fn(), name)


@register_lower("dyn.full")
def _dyn_full(inputs, attrs, out_type):
    fill, shp = inputs
    dtype = out_type.dtype
    return _fill(lambda: cast_value(fill[(0,) * fill.ndim], dtype), shp, dtype, "dyn_full")


def _dyn_const(value):
    def lower(inputs, attrs, out_type):
        dtype = out_type.dtype
        c = Const(bool(value), "bool") if dtype == "bool" else E.as_expr(value, dtype)
        if not E.is_float(dtype) and dtype != "bool":
            c = Const(int(value), dtype)
        return _fill(lambda: c, inputs[0], dtype, "dyn_filled")

    return lower


register_lower("dyn.zeros")(_dyn_const(0))
register_lower("dyn.ones")(_dyn_const(1))


@register_lower("dyn.one_hot")
def _dyn_one_hot(inputs, attrs, out_type):
    idx, on, off, depth_t = inputs
    depth = E.max_(_values(depth_t)[0], E.index(0))
    nd = idx.ndim
    a = attrs.axis + nd + 1 if attrs.axis < 0 else attrs.axis
    dtype = out_type.dtype
    shape = tuple(idx.shape[:a]) + (depth,) + tuple(idx.shape[a:])

    def body(*i):
        src = i[:a] + i[a + 1 :]
        hit = E.eq(E.index(idx[src]), i[a])
        return select(
            hit, cast_value(on[(0,) * on.ndim], dtype), cast_value(off[(0,) * off.ndim], dtype)
        )

    return compute(shape, body, "dyn_one_hot")


@register_lower("dyn.trilu")
def _dyn_trilu(inputs, attrs, out_type):
    x, kt = inputs
    k = _values(kt)[0]

    def body(*i):
        r, c = i[-2], i[-1]
        keep = (c - r >= k) if attrs.upper else (c - r <= k)
        zero = Const(False, "bool") if x.dtype == "bool" else E.as_expr(0, x.dtype)
        return select(keep, x[i], zero)

    return compute(x.shape, body, "dyn_trilu")


@register_lower("arange")
def _arange(inputs, attrs, out_type):
    start_t, stop_t, step_t = inputs
    dtype = out_type.dtype
    src = start_t.dtype
    if E.is_float(src):
        f = "float64"
        s0, s1, st = (value_of(t, (0,) * t.ndim, f) for t in (start_t, stop_t, step_t))
        q = (s1 - s0) / select(E.eq(st, Const(0.0, f)), Const(1.0, f), st)
        n = E.max_(cast("int64", E.call("ceil", q)), E.index(0))
        return compute((n,), lambda i: cast(dtype, s0 + cast(f, i) * st), "arange")
    s0, s1, st = (value_of(t, (0,) * t.ndim) for t in (start_t, stop_t, step_t))
    safe = select(E.eq(st, 0), E.index(1), st)
    n = E.max_(E.index(0), E.neg(E.floordiv(s0 - s1, safe)))
    return compute((n,), lambda i: cast(dtype, s0 + i * st), "arange")


__all__ = ["ravel", "broadcast_dim"]
