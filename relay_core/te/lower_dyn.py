"""Lowering of ops whose shape depends on tensor values: the dyn.* twins of static ops (shape,
reps, begin / end, k, depth given as tensors), arange, nonzero and argwhere.

The values are read at run time through `value_of` Vars; output dims are index expressions of
them, computed by the caller before it allocates the outputs. nonzero / argwhere first count
the non-zero elements (a small kernel of their own), then fill the result (in
relay_core/backend/lower_loops.py: a sequential scan).
"""

from __future__ import annotations

from . import expr as E
from . import tensor as T
from .expr import Const, cast, select
from .lower_misc import cast_value
from .lower_transform import ravel, reshape_to
from .lowering import broadcast_dim, broadcast_read, broadcast_shape
from .tensor import compute, reduce_axis, value_of


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


def _dyn_broadcast_to(inputs, attrs, out_type):
    x, shp = inputs
    target = tuple(_values(shp))
    shape = broadcast_shape(x.shape, target)
    return compute(shape, lambda *i: broadcast_read(x, i), "dyn_broadcast_to")


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


def _dyn_strided_slice(inputs, attrs, out_type):
    x = inputs[0]
    nd = x.ndim
    n = inputs[1].shape[0] if inputs[1].ndim else 1
    if not isinstance(n, int):
        raise NotImplementedError("dyn.strided_slice with parameters of unknown length")
    begin = _values(inputs[1], n)
    end = _values(inputs[2], n)
    strides = _values(inputs[3], n) if len(inputs) > 3 else [E.index(1)] * n
    if len(inputs) > 4:
        axes = _values(inputs[4], n)
    else:
        axes = [E.index(k) for k in (range(n) if attrs.axes is None else attrs.axes)]
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


def _dyn_trilu(inputs, attrs, out_type):
    x, kt = inputs
    k = _values(kt)[0]

    def body(*i):
        r, c = i[-2], i[-1]
        keep = (c - r >= k) if attrs.upper else (c - r <= k)
        zero = Const(False, "bool") if x.dtype == "bool" else E.as_expr(0, x.dtype)
        return select(keep, x[i], zero)

    return compute(x.shape, body, "dyn_trilu")


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


# -- reductions over axes given as a tensor (ONNX Reduce* with an axes input) ----------------------
def _dyn_reduce(kind: str):
    from .lower_reduce import _acc_dtype, _float_dtype

    def lower(inputs, attrs, out_type):
        x, axes_t = inputs
        n = x.ndim
        m = axes_t.shape[0] if axes_t.ndim else 1
        if not isinstance(m, int):
            raise NotImplementedError(f"dyn.{kind} with an axes tensor of unknown length")
        if m == 0 and attrs.noop_with_empty_axes:
            return compute(x.shape, lambda *i: x[i], f"dyn_{kind}_noop")
        if m == 0:
            flags = [Const(True, "bool")] * n
            m = n
        else:
            vals = [value_of(axes_t, (j,) if axes_t.ndim else ()) for j in range(m)]
            vals = [select(v < 0, v + n, v) for v in vals]
            flags = []
            for k in range(n):
                f = Const(False, "bool")
                for v in vals:
                    f = E.logical_or(f, E.eq(v, k))
                flags.append(f)
        keep = attrs.keepdims
        pos = []  # output position of a kept axis (keepdims=False)
        before = E.index(0)
        for k in range(n):
            pos.append(E.index(k) - before)
            before = before + cast("int64", flags[k])
        if keep:
            shape = tuple(select(flags[k], E.index(1), E.index(x.shape[k])) for k in range(n))
        else:
            shape = []
            for q in range(n - m):
                d = E.index(0)
                for k in range(n):
                    hit = E.logical_and(E.not_(flags[k]), E.eq(pos[k], q))
                    d = select(hit, E.index(x.shape[k]), d)
                shape.append(d)
            shape = tuple(shape)

        def in_index(o, rv):
            idx = []
            for k in range(n):
                if keep:
                    kept = o[k]
                else:
                    kept = E.index(0)
                    for q in range(n - m):
                        kept = select(E.eq(pos[k], q), o[q], kept)
                idx.append(select(flags[k], rv[k], kept))
            return tuple(idx)

        def raxes():
            return [
                reduce_axis(select(flags[k], E.index(x.shape[k]), E.index(1)), "r")
                for k in range(n)
            ]

        count = E.index(1)
        for k in range(n):
            count = count * select(flags[k], E.index(x.shape[k]), E.index(1))

        def reduction(red, value, name, acc):
            def body(*o):
                rv = raxes()
                return getattr(T, red)(value(cast(acc, x[in_index(o, rv)])), rv)

            return compute(shape, body, name)

        dt_ = x.dtype
        if kind in ("max", "min"):
            red = kind if dt_ != "bool" else ("any" if kind == "max" else "all")
            return reduction(red, lambda v: v, f"dyn_{kind}", dt_)
        if kind in ("sum", "prod", "sum_square", "l1_norm"):
            acc = _acc_dtype(dt_)
            val = {
                "sum": lambda v: v,
                "prod": lambda v: v,
                "sum_square": lambda v: v * v,
                "l1_norm": lambda v: E.call("abs", v),
            }[kind]
            s = reduction("prod" if kind == "prod" else "sum", val, f"dyn_{kind}_acc", acc)
            return compute(shape, lambda *i: cast(dt_, s[i]), f"dyn_{kind}")
        if kind == "mean":
            if E.is_int(dt_):
                raise NotImplementedError("dyn.mean of integers")
            acc = _acc_dtype(dt_)
            s = reduction("sum", lambda v: v, "dyn_mean_acc", acc)
            return compute(shape, lambda *i: cast(dt_, s[i] / cast(acc, count)), "dyn_mean")
        f = _float_dtype(dt_)
        if kind in ("l2_norm", "log_sum"):
            val = (lambda v: v * v) if kind == "l2_norm" else (lambda v: v)
            s = reduction("sum", val, f"dyn_{kind}_acc", f)
            fn = "sqrt" if kind == "l2_norm" else "log"
            return compute(shape, lambda *i: cast(dt_, E.call(fn, s[i])), f"dyn_{kind}")
        if kind == "logsumexp":
            mx = reduction("max", lambda v: v, "dyn_lse_max", f)

            def shift(o):
                v = mx[o]
                return select(E.call("isfinite", v, dtype="bool"), v, Const(0.0, f))

            def body(*o):
                rv = raxes()
                v = cast(f, x[in_index(o, rv)])
                return T.sum(E.call("exp", v - shift(o)), rv)

            s = compute(shape, body, "dyn_lse_sum")
            return compute(
                shape, lambda *i: cast(dt_, E.call("log", s[i]) + shift(i)), "dyn_logsumexp"
            )
        raise NotImplementedError(f"dyn.{kind}")

    return lower


# -- squeeze / unsqueeze / split / pad / cumulative ops with tensor parameters ---------------------
def _norm_vals(t, rank):
    m = t.shape[0] if t.ndim else 1
    vals = [value_of(t, (j,) if t.ndim else ()) for j in range(m)]
    return [select(v < 0, v + rank, v) for v in vals]


def _dyn_squeeze(inputs, attrs, out_type):
    x, axes_t = inputs
    n = x.ndim
    vals = _norm_vals(axes_t, n)
    m = len(vals)
    gone = [E.logical_or(Const(False, "bool"), Const(False, "bool")) for _ in range(n)]
    for k in range(n):
        for v in vals:
            gone[k] = E.logical_or(gone[k], E.eq(v, k))
    pos, before = [], E.index(0)
    for k in range(n):
        pos.append(E.index(k) - before)
        before = before + cast("int64", gone[k])
    shape = []
    for q in range(n - m):
        d = E.index(1)
        for k in range(n):
            d = select(E.logical_and(E.not_(gone[k]), E.eq(pos[k], q)), E.index(x.shape[k]), d)
        shape.append(d)
    return reshape_to(x, tuple(shape), "dyn_squeeze")


def _dyn_unsqueeze(inputs, attrs, out_type):
    x, axes_t = inputs
    n = x.ndim
    m = axes_t.shape[0] if axes_t.ndim else 1
    r = n + m
    vals = _norm_vals(axes_t, r)
    shape, before = [], E.index(0)
    for q in range(r):
        new = Const(False, "bool")
        for v in vals:
            new = E.logical_or(new, E.eq(v, q))
        src = E.index(q) - before  # the input axis that lands at q when q is not new
        d = E.index(1)
        for k in range(n):
            d = select(E.logical_and(E.not_(new), E.eq(src, k)), E.index(x.shape[k]), d)
        shape.append(d)
        before = before + cast("int64", new)
    return reshape_to(x, tuple(shape), "dyn_unsqueeze")


def _dyn_split(inputs, attrs, out_type):
    x, sizes_t = inputs
    ax = attrs.axis % x.ndim
    sizes = _values(sizes_t, attrs.num_outputs)
    outs, off = [], E.index(0)
    for k, sz in enumerate(sizes):
        shape = list(x.shape)
        shape[ax] = sz

        def body(*i, off=off):
            idx = list(i)
            idx[ax] = i[ax] + off
            return x[tuple(idx)]

        outs.append(compute(tuple(shape), body, f"dyn_split{k}"))
        off = off + sz
    return tuple(outs)


def _dyn_pad(inputs, attrs, out_type):
    x, pads_t = inputs[0], inputs[1]
    n = x.ndim
    p = _values(pads_t, 2 * n)
    width = [(p[k], p[k + n]) for k in range(n)]
    if len(inputs) > 2:
        pv = inputs[2]
        value = pv[(0,) * pv.ndim]
    else:
        value = E.as_expr(0, x.dtype) if x.dtype != "bool" else Const(False, "bool")
    zero = E.index(0)
    crop_lo = [E.max_(E.neg(b), zero) for b, a in width]
    crop_n = [
        E.index(d) - E.max_(E.neg(b), zero) - E.max_(E.neg(a), zero)
        for d, (b, a) in zip(x.shape, width)
    ]
    pad_lo = [E.max_(b, zero) for b, a in width]
    shape = tuple(E.index(d) + b + a for d, (b, a) in zip(x.shape, width))
    mode = attrs.pad_mode

    def src(j, m):
        if mode == "edge":
            return E.max_(E.min_(j, m - 1), zero)
        if mode == "wrap":
            return E.floormod(j, E.max_(m, E.index(1)))
        if mode == "reflect":
            period = E.max_(m * 2 - 2, E.index(1))
            t = E.floormod(j, period)
            return select(t < m, t, period - t)
        if mode == "symmetric":
            period = E.max_(m * 2, E.index(1))
            t = E.floormod(j, period)
            return select(t < m, t, period - 1 - t)
        raise NotImplementedError(f"pad_mode {mode}")

    def body(*i):
        idx, inside = [], []
        for k in range(n):
            j = i[k] - pad_lo[k]
            if mode == "constant":
                inside.append(E.logical_and(j >= 0, j < crop_n[k]))
                idx.append(j + crop_lo[k])
            else:
                idx.append(src(j, crop_n[k]) + crop_lo[k])
        v = x[tuple(idx)]
        return select(E.all_of(*inside), v, value) if mode == "constant" else v

    return compute(shape, body, "dyn_pad")


def _dyn_scan(kind: str):
    def lower(inputs, attrs, out_type):
        x, axis_t = inputs
        n = x.ndim
        a = _norm_vals(axis_t, n)[0]
        out_dt = out_type.dtype
        acc = "float32" if out_dt in ("float16", "bfloat16") else out_dt
        ext = E.index(0)
        for k in range(n):
            ext = select(E.eq(a, k), E.index(x.shape[k]), ext)

        def body(*i):
            r = reduce_axis(ext, "s")
            j = E.index(0)
            for k in range(n):
                j = select(E.eq(a, k), i[k], j)
            idx = tuple(select(E.eq(a, k), r, i[k]) for k in range(n))
            if attrs.reverse:
                cond = r > j if attrs.exclusive else r >= j
            else:
                cond = r < j if attrs.exclusive else r <= j
            return getattr(T, kind)(cast(acc, x[idx]), r, where=cond)

        s = compute(x.shape, body, f"dyn_{kind}_acc")
        return compute(x.shape, lambda *i: cast(out_dt, s[i]), f"dyn_{kind}")

    return lower
