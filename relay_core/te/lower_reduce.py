"""Lowering of reductions (relay_core/ops/reduce.py) to tensor expressions.

Narrow floats accumulate in float32 and integer inputs of float-valued reductions (logsumexp,
l2_norm, log_sum) in float64, as the references do.
"""

from __future__ import annotations

from ..ir import dtype as _dt
from . import expr as E
from . import tensor as T
from .expr import Const, call, cast, select
from .lowering import out_shape
from .tensor import compute, reduce_axis


def reduce_axes(ndim: int, attrs) -> tuple[int, ...]:
    axis = getattr(attrs, "axis", None)
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(a + ndim if a < 0 else a for a in axis)
    if getattr(attrs, "exclude", False):
        axes = tuple(i for i in range(ndim) if i not in axes)
    return tuple(sorted(set(axes)))


class _Red:
    """Index bookkeeping of one reduction of `x` over `axes`."""

    def __init__(self, x, attrs, out_type=None):
        self.x = x
        self.axes = reduce_axes(x.ndim, attrs)
        self.keep = getattr(attrs, "keepdims", False)
        shape = []
        for i, d in enumerate(x.shape):
            if i in self.axes:
                if self.keep:
                    shape.append(1)
            else:
                shape.append(d)
        self.shape = out_shape(out_type, tuple(shape)) if out_type is not None else tuple(shape)
        self.keep_shape = tuple(1 if i in self.axes else d for i, d in enumerate(x.shape))

    def count(self):
        n = 1
        for a in self.axes:
            n = n * self.x.shape[a]
        return n

    def rvars(self):
        return [reduce_axis(self.x.shape[a], "r") for a in self.axes]

    def source_index(self, out_idx, rv) -> tuple:
        """Input indices for output indices `out_idx` and reduction vars `rv`."""
        idx, o, r = [], 0, 0
        for i in range(self.x.ndim):
            if i in self.axes:
                idx.append(rv[r])
                r += 1
                if self.keep:
                    o += 1
            else:
                idx.append(out_idx[o])
                o += 1
        return tuple(idx)

    def reduce(self, kind, value_fn, name, acc_dtype=None, **kw):
        """compute(out shape) of `kind` over value_fn(input indices)."""

        def body(*o):
            rv = self.rvars()
            v = value_fn(self.source_index(o, rv))
            if acc_dtype is not None:
                v = cast(acc_dtype, v)
            fn = getattr(T, kind)
            return fn(v, rv, **kw)

        return compute(self.shape, body, name)


def _acc_dtype(dtype: str) -> str:
    return "float32" if dtype in ("float16", "bfloat16") else dtype


def _float_dtype(dtype: str) -> str:
    if _dt.is_float(dtype):
        return _acc_dtype(dtype)
    return "float64"


def _finish(t, dtype: str, name: str):
    if t.dtype == dtype:
        return t
    return compute(t.shape, lambda *i: cast(dtype, t[i]), name)


def _simple(name: str, kind: str, value=lambda x: x, acc=_acc_dtype):
    def lower(inputs, attrs, out_type):
        x = inputs[0]
        r = _Red(x, attrs, out_type)
        a = acc(x.dtype)
        k = kind
        if x.dtype == "bool" and kind in ("max", "min"):
            k = "any" if kind == "max" else "all"
        s = r.reduce(k, lambda idx: value(cast(a, x[idx])), name)
        return _finish(s, x.dtype, name)

    return lower


_r_sum = _simple("sum", "sum")
_r_prod = _simple("prod", "prod")
_r_max = _simple("max", "max", acc=lambda d: d)
_r_min = _simple("min", "min", acc=lambda d: d)
_r_all = _simple("all", "all", acc=lambda d: d)
_r_any = _simple("any", "any", acc=lambda d: d)
_r_l1_norm = _simple(
    "l1_norm",
    "sum",
    value=lambda v: call("abs", v) if v.dtype not in _dt.UNSIGNED_INT_DTYPES else v,
)
_r_sum_square = _simple("sum_square", "sum", value=lambda v: v * v)


def _mean(inputs, attrs, out_type):
    x = inputs[0]
    r = _Red(x, attrs, out_type)
    n = r.count()
    if _dt.is_int(x.dtype):
        acc = "int64" if x.dtype in _dt.SIGNED_INT_DTYPES else "uint64"
        s = r.reduce("sum", lambda idx: cast(acc, x[idx]), "mean_sum")

        def fin(*i):
            v = s[i]
            nn = E.cast(acc, E.index(n))
            safe = select(E.eq(nn, E.as_expr(0, acc)), E.as_expr(1, acc), nn)
            if acc == "int64":
                q = E.floordiv(call("abs", v), safe)
                q = select(v < E.as_expr(0, acc), E.neg(q), q)
            else:
                q = E.floordiv(v, safe)
            q = select(E.eq(nn, E.as_expr(0, acc)), E.as_expr(0, acc), q)
            return cast(x.dtype, q)

        return compute(s.shape, fin, "mean")
    a = _acc_dtype(x.dtype)
    s = r.reduce("sum", lambda idx: cast(a, x[idx]), "mean_sum")
    return compute(s.shape, lambda *i: cast(x.dtype, s[i] / cast(a, E.index(n))), "mean")


def _logsumexp(inputs, attrs, out_type):
    x = inputs[0]
    f = _float_dtype(x.dtype)
    keep_attrs = _with_keep(attrs)
    rk = _Red(x, keep_attrs)
    m = rk.reduce("max", lambda idx: cast(f, x[idx]), "lse_max")

    def shift(i):
        v = m[i]
        return select(call("isfinite", v, dtype="bool"), v, E.as_expr(0.0, f))

    def mi(idx):  # m at the keepdims position of input index idx
        return tuple(0 if k in rk.axes else j for k, j in enumerate(idx))

    s = rk.reduce("sum", lambda idx: call("exp", cast(f, x[idx]) - shift(mi(idx))), "lse_sum")
    r = _Red(x, attrs, out_type)

    def fin(*o):
        ki = _keep_index(r, o)
        return cast(x.dtype, call("log", s[ki]) + shift(ki))

    return compute(r.shape, fin, "logsumexp")


def _with_keep(attrs):
    import dataclasses

    return dataclasses.replace(attrs, keepdims=True) if hasattr(attrs, "keepdims") else attrs


def _keep_index(r: _Red, o) -> tuple:
    """keepdims-shape index for an output index of reduction r."""
    if r.keep:
        return tuple(o)
    idx, k = [], 0
    for i in range(r.x.ndim):
        if i in r.axes:
            idx.append(0)
        else:
            idx.append(o[k])
            k += 1
    return tuple(idx)


def _l2(inputs, attrs, out_type):
    x = inputs[0]
    f = _float_dtype(x.dtype)
    r = _Red(x, attrs, out_type)
    s = r.reduce("sum", lambda idx: cast(f, x[idx]) * cast(f, x[idx]), "l2_sum")
    return compute(s.shape, lambda *i: cast(x.dtype, call("sqrt", s[i])), "l2_norm")


def _log_sum(inputs, attrs, out_type):
    x = inputs[0]
    f = _float_dtype(x.dtype)
    r = _Red(x, attrs, out_type)
    s = r.reduce("sum", lambda idx: cast(f, x[idx]), "log_sum_s")
    return compute(s.shape, lambda *i: cast(x.dtype, call("log", s[i])), "log_sum")


def _arg(kind):
    def lower(inputs, attrs, out_type):
        x = inputs[0]
        r = _Red(x, attrs, out_type)
        a = _acc_dtype(x.dtype)

        def body(*o):
            rv = r.rvars()
            v = cast(a, x[r.source_index(o, rv)])
            return getattr(T, kind)(v, rv, last=attrs.select_last_index)

        return compute(r.shape, body, kind)

    return lower


_r_argmax = _arg("argmax")
_r_argmin = _arg("argmin")


def _variance(inputs, attrs, out_type, sqrt: bool):
    x = inputs[0]
    a = _acc_dtype(x.dtype)
    rk = _Red(x, _with_keep(attrs))
    n = rk.count()
    if len(inputs) == 2:
        mt = inputs[1]
        from .lowering import broadcast_read

        def mean_at(idx):
            return cast(
                a, broadcast_read(mt, tuple(0 if k in rk.axes else j for k, j in enumerate(idx)))
            )
    else:
        s = rk.reduce("sum", lambda idx: cast(a, x[idx]), "var_msum")
        nn = cast(a, E.index(n))
        safe_n = select(E.eq(E.index(n), 0), E.as_expr(1.0, a), nn)
        m = compute(
            s.shape,
            lambda *i: select(E.eq(E.index(n), 0), E.as_expr(0.0, a), s[i] / safe_n),
            "var_mean",
        )

        def mean_at(idx):
            return m[tuple(0 if k in rk.axes else j for k, j in enumerate(idx))]

    def sq(idx):
        d = cast(a, x[idx]) - mean_at(idx)
        return d * d

    r = _Red(x, attrs, out_type)
    ss = r.reduce("sum", sq, "var_ss")
    c = 1.0 if attrs.unbiased else attrs.correction
    denom = E.max_(cast(a, E.index(n)) - E.as_expr(c, a), E.as_expr(0.0, a))

    def fin(*i):
        v = ss[i] / denom
        if sqrt:
            v = call("sqrt", v)
        return cast(x.dtype, v)

    return compute(ss.shape, fin, "std" if sqrt else "variance")


def _r_variance(inputs, attrs, out_type):
    return _variance(inputs, attrs, out_type, False)


def _r_std(inputs, attrs, out_type):
    return _variance(inputs, attrs, out_type, True)


__all__ = ["Const", "reduce_axes"]


def _collapse_sum_like(inputs, attrs, out_type):
    """Sum x down to like's shape (the adjoint of broadcasting like to x)."""
    x, like = inputs
    lead = x.ndim - like.ndim
    summed = [k for k in range(lead)] + [
        lead + i
        for i, d in enumerate(like.shape)
        if isinstance(d, int)
        and d == 1
        and not (isinstance(x.shape[lead + i], int) and x.shape[lead + i] == 1)
    ]

    def body(*o):
        rv = [reduce_axis(x.shape[k], "c") for k in summed]
        idx, r = [], 0
        for k in range(x.ndim):
            if k in summed:
                idx.append(rv[r])
                r += 1
            else:
                idx.append(o[k - lead])
        return T.sum(x[tuple(idx)], rv)

    return compute(tuple(like.shape), body, "collapse_sum_like")
