"""Reductions, scans, softmax, norms and ordering (sort, topk)."""

from __future__ import annotations

import math

from relay_core.ops import all_ops

from .table import aten


def _axes(ctx, x, dim):
    """torch `dim` (None, [], int or list) as a Relay axis tuple (None: all axes)."""
    if dim is None:
        return None
    if isinstance(dim, int):
        dim = [dim]
    if len(dim) == 0:
        return None
    nd = max(ctx.ndim(x), 1)
    return tuple(sorted(d + nd if d < 0 else d for d in dim))


def _reduce(ctx, op, self, dim, keepdim, dtype=None):
    x = ctx.expr(self)
    out = dtype or ctx.out_dtype() or ctx.dtype(x)
    x = ctx.cast(x, out)
    if ctx.ndim(x) == 0:
        return x
    return ctx.call(op, x, axis=_axes(ctx, x, dim), keepdims=bool(keepdim))


@aten("sum.dim_IntList", "sum.default")
def sum_(ctx, self, dim=None, keepdim=False, dtype=None):
    if isinstance(dim, str):  # sum.default(self, dtype) passed positionally
        dim, dtype = None, dim
    return _reduce(ctx, "sum", self, dim, keepdim, dtype)


@aten("mean.dim", "mean.default")
def mean(ctx, self, dim=None, keepdim=False, dtype=None):
    if isinstance(dim, str):
        dim, dtype = None, dim
    return _reduce(ctx, "mean", self, dim, keepdim, dtype)


@aten("prod.dim_int", "prod.default")
def prod(ctx, self, dim=None, keepdim=False, dtype=None):
    if isinstance(dim, str):
        dim, dtype = None, dim
    return _reduce(ctx, "prod", self, dim, keepdim, dtype)


@aten("amax.default")
def amax(ctx, self, dim=(), keepdim=False):
    return _reduce(ctx, "max", self, dim, keepdim)


@aten("amin.default")
def amin(ctx, self, dim=(), keepdim=False):
    return _reduce(ctx, "min", self, dim, keepdim)


@aten("max.default")
def max_all(ctx, self):
    return _reduce(ctx, "max", self, None, False)


@aten("min.default")
def min_all(ctx, self):
    return _reduce(ctx, "min", self, None, False)


@aten("max.other")
def max_other(ctx, self, other):
    a, b = ctx.operands(self, other)
    return ctx.call("maximum", a, b)


@aten("min.other")
def min_other(ctx, self, other):
    a, b = ctx.operands(self, other)
    return ctx.call("minimum", a, b)


def _bool(ctx, v):
    x = ctx.expr(v)
    if ctx.dtype(x) == "bool":
        return x
    return ctx.call("not_equal", x, ctx.expr(0, ctx.dtype(x)))


@aten("any.default", "any.dim", "any.dims")
def any_(ctx, self, dim=None, keepdim=False):
    x = _bool(ctx, self)
    if ctx.ndim(x) == 0:
        return x
    return ctx.call("any", x, axis=_axes(ctx, x, dim), keepdims=bool(keepdim))


@aten("all.default", "all.dim", "all.dims")
def all_(ctx, self, dim=None, keepdim=False):
    x = _bool(ctx, self)
    if ctx.ndim(x) == 0:
        return x
    return ctx.call("all", x, axis=_axes(ctx, x, dim), keepdims=bool(keepdim))


def _variance(ctx, op, self, dim, correction, keepdim):
    x = ctx.expr(self)
    d = ctx.out_dtype() or ctx.dtype(x)
    x = ctx.cast(x, d)
    c = 1.0 if correction is None else float(correction)
    return ctx.call(op, x, axis=_axes(ctx, x, dim), keepdims=bool(keepdim), correction=c)


@aten("var.correction", "var.default")
def var(ctx, self, dim=None, *, correction=None, keepdim=False):
    if isinstance(dim, bool):  # var.default(self, unbiased)
        dim, correction = None, float(dim)
    return _variance(ctx, "variance", self, dim, correction, keepdim)


@aten("var.dim")
def var_dim(ctx, self, dim, unbiased=True, keepdim=False):
    return _variance(ctx, "variance", self, dim, 1.0 if unbiased else 0.0, keepdim)


@aten("std.correction", "std.default")
def std(ctx, self, dim=None, *, correction=None, keepdim=False):
    if isinstance(dim, bool):
        dim, correction = None, float(dim)
    return _variance(ctx, "std", self, dim, correction, keepdim)


@aten("std.dim")
def std_dim(ctx, self, dim, unbiased=True, keepdim=False):
    return _variance(ctx, "std", self, dim, 1.0 if unbiased else 0.0, keepdim)


def _arg(ctx, op, self, dim, keepdim):
    x = ctx.expr(self)
    if dim is None:
        nd = ctx.ndim(x)
        flat = ctx.call("reshape", x, newshape=(-1,))
        out = ctx.call(op, flat, axis=(0,), keepdims=False)
        if keepdim and nd:
            out = ctx.call("reshape", out, newshape=(1,) * nd)
        return out
    if ctx.ndim(x) == 0:
        return ctx.const(0, "int64")
    return ctx.call(op, x, axis=_axes(ctx, x, dim), keepdims=bool(keepdim))


@aten("argmax.default")
def argmax(ctx, self, dim=None, keepdim=False):
    return _arg(ctx, "argmax", self, dim, keepdim)


@aten("argmin.default")
def argmin(ctx, self, dim=None, keepdim=False):
    return _arg(ctx, "argmin", self, dim, keepdim)


@aten("max.dim")
def max_dim(ctx, self, dim, keepdim=False):
    return (
        _reduce(ctx, "max", self, dim, keepdim, ctx.out_dtype(0)),
        _arg(ctx, "argmax", self, dim, keepdim),
    )


@aten("min.dim")
def min_dim(ctx, self, dim, keepdim=False):
    return (
        _reduce(ctx, "min", self, dim, keepdim, ctx.out_dtype(0)),
        _arg(ctx, "argmin", self, dim, keepdim),
    )


@aten("logsumexp.default")
def logsumexp(ctx, self, dim, keepdim=False):
    x = ctx.expr(self)
    d = ctx.out_dtype() or "float32"
    return ctx.call("logsumexp", ctx.cast(x, d), axis=_axes(ctx, x, dim), keepdims=bool(keepdim))


@aten("cumsum.default")
def cumsum(ctx, self, dim, dtype=None):
    x = ctx.expr(self)
    d = dtype or ctx.out_dtype() or ctx.dtype(x)
    if ctx.ndim(x) == 0:
        return ctx.cast(x, d)
    return ctx.call("cumsum", ctx.cast(x, d), axis=dim + ctx.ndim(x) if dim < 0 else dim)


@aten("cumprod.default")
def cumprod(ctx, self, dim, dtype=None):
    x = ctx.expr(self)
    d = dtype or ctx.out_dtype() or ctx.dtype(x)
    if ctx.ndim(x) == 0:
        return ctx.cast(x, d)
    return ctx.call("cumprod", ctx.cast(x, d), axis=dim + ctx.ndim(x) if dim < 0 else dim)


# -- softmax --------------------------------------------------------------------------------------


def softmax(ctx, x, dim, log=False):
    """nn.softmax / nn.log_softmax, composed from reductions when the nn ops are absent."""
    nd = ctx.ndim(x)
    if nd == 0:
        return ctx.expr(0.0 if log else 1.0, ctx.dtype(x))
    axis = dim + nd if dim < 0 else dim
    name = "nn.log_softmax" if log else "nn.softmax"
    if name in all_ops():
        return ctx.call(name, x, axis=axis)
    m = ctx.call("max", x, axis=(axis,), keepdims=True)
    shifted = ctx.call("subtract", x, m)
    e = ctx.call("exp", shifted)
    s = ctx.call("sum", e, axis=(axis,), keepdims=True)
    if log:
        return ctx.call("subtract", shifted, ctx.call("log", s))
    return ctx.call("divide", e, s)


@aten("_softmax.default")
def _softmax(ctx, self, dim, half_to_float=False):
    d = ctx.out_dtype() or ctx.dtype(self)
    return softmax(ctx, ctx.cast(self, d), dim)


@aten("softmax.int")
def softmax_int(ctx, self, dim, dtype=None):
    d = dtype or ctx.out_dtype() or ctx.dtype(self)
    return softmax(ctx, ctx.cast(self, d), dim)


@aten("_log_softmax.default")
def _log_softmax(ctx, self, dim, half_to_float=False):
    d = ctx.out_dtype() or ctx.dtype(self)
    return softmax(ctx, ctx.cast(self, d), dim, log=True)


@aten("log_softmax.int")
def log_softmax_int(ctx, self, dim, dtype=None):
    d = dtype or ctx.out_dtype() or ctx.dtype(self)
    return softmax(ctx, ctx.cast(self, d), dim, log=True)


# -- norms ----------------------------------------------------------------------------------------


@aten("linalg_vector_norm.default")
def linalg_vector_norm(ctx, self, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    x = ctx.expr(self)
    d = dtype or ctx.out_dtype() or ctx.dtype(x)
    x = ctx.cast(x, d)
    axis = _axes(ctx, x, dim)
    kw = dict(axis=axis, keepdims=bool(keepdim))
    if ctx.ndim(x) == 0:
        return ctx.call("abs", x)
    if ord == 2:
        return ctx.call("l2_norm", x, **kw)
    if ord == 1:
        return ctx.call("l1_norm", x, **kw)
    a = ctx.call("abs", x)
    if ord == math.inf:
        return ctx.call("max", a, **kw)
    if ord == -math.inf:
        return ctx.call("min", a, **kw)
    if ord == 0:
        return ctx.call("sum", ctx.cast(ctx.call("not_equal", x, ctx.expr(0, d)), d), **kw)
    p = ctx.expr(float(ord), d)
    s = ctx.call("sum", ctx.call("power", a, p), **kw)
    return ctx.call("power", s, ctx.expr(1.0 / ord, d))


# -- ordering -------------------------------------------------------------------------------------


def _sort(ctx, x, dim, descending):
    nd = ctx.ndim(x)
    if nd == 0:
        return x, ctx.const(0, "int64")
    axis = dim + nd if dim < 0 else dim
    idx = ctx.call("argsort", x, axis=axis, is_ascend=not descending, dtype="int64")
    return ctx.call("gather", x, idx, axis=axis), idx


@aten("sort.default")
def sort(ctx, self, dim=-1, descending=False):
    return _sort(ctx, ctx.expr(self), dim, descending)


@aten("sort.stable")
def sort_stable(ctx, self, *, stable=None, dim=-1, descending=False):
    return _sort(ctx, ctx.expr(self), dim, descending)


@aten("argsort.default", "argsort.stable")
def argsort(ctx, self, dim=-1, descending=False, *, stable=False):
    if isinstance(dim, bool) and not isinstance(descending, bool):  # argsort.stable(self, stable)
        dim = -1
    return _sort(ctx, ctx.expr(self), dim, descending)[1]


@aten("topk.default")
def topk(ctx, self, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    x = ctx.expr(self)
    nd = ctx.ndim(x)
    axis = dim + nd if dim < 0 else dim
    if not isinstance(k, int):
        out = ctx.call(
            "dyn.topk",
            x,
            ctx.expr(k, "int64"),
            axis=axis,
            ret_type="both",
            is_ascend=not largest,
            dtype="int64",
        )
    else:
        out = ctx.call(
            "topk", x, k=k, axis=axis, ret_type="both", is_ascend=not largest, dtype="int64"
        )
    return ctx.item(out, 0), ctx.item(out, 1)


@aten("kthvalue.default")
def kthvalue(ctx, self, k, dim=-1, keepdim=False):
    x = ctx.expr(self)
    nd = ctx.ndim(x)
    axis = dim + nd if dim < 0 else dim
    vals, idx = _sort(ctx, x, axis, False)
    pick = ctx.const(k - 1, "int64")
    v = ctx.call("take", vals, pick, axis=axis)
    i = ctx.call("take", idx, pick, axis=axis)
    if keepdim:
        v = ctx.call("expand_dims", v, axis=axis)
        i = ctx.call("expand_dims", i, axis=axis)
    return v, i


@aten("median.dim")
def median_dim(ctx, self, dim, keepdim=False):
    n = ctx.dim_size(self, dim)
    return kthvalue(ctx, self, (n + 1) // 2, dim, keepdim)


@aten("median.default")
def median(ctx, self):
    flat = ctx.call("reshape", self, newshape=(-1,))
    n = ctx.dim_size(flat, 0)
    return kthvalue(ctx, flat, (n + 1) // 2, 0)[0]
