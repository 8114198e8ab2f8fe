"""Tensor creation: full / zeros / ones / empty (and *_like, new_*), arange, linspace, eye,
triangles, fill, and random tensors (rand, randn, randperm, bernoulli, ...)."""

from __future__ import annotations

import math

import numpy as np

from relay_core.ir import Expr
from relay_core.ir import dtype as dt

from .table import aten


def _dtype(ctx, dtype, default="float32"):
    return dtype or ctx.out_dtype() or default


def full_shape(ctx, size, value, dtype) -> Expr:
    fill = ctx.expr(value, dtype)
    static = ctx.static_ints(size)
    if static is not None:
        return ctx.call("full", fill, shape=static, dtype=dtype)
    return ctx.call("dyn.full", fill, ctx.int_tensor(size), dtype=dtype)


@aten("full.default")
def full(ctx, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return full_shape(ctx, size, fill_value, _dtype(ctx, dtype))


@aten("zeros.default", "empty.memory_format")
def zeros(ctx, size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """zeros(size); empty(size) reads as zeros (torch leaves it uninitialised)."""
    return full_shape(ctx, size, 0, _dtype(ctx, dtype))


@aten("ones.default")
def ones(ctx, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return full_shape(ctx, size, 1, _dtype(ctx, dtype))


@aten("empty_strided.default")
def empty_strided(ctx, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    return full_shape(ctx, size, 0, _dtype(ctx, dtype))


@aten("new_zeros.default", "new_empty.default")
def new_zeros(ctx, self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return full_shape(ctx, size, 0, _dtype(ctx, dtype, ctx.dtype(self)))


@aten("new_ones.default")
def new_ones(ctx, self, size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return full_shape(ctx, size, 1, _dtype(ctx, dtype, ctx.dtype(self)))


@aten("new_full.default")
def new_full(ctx, self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return full_shape(ctx, size, fill_value, _dtype(ctx, dtype, ctx.dtype(self)))


def _like(ctx, self, value, dtype):
    d = dtype or ctx.out_dtype() or ctx.dtype(self)
    x = ctx.expr(self)
    return ctx.call("full_like", ctx.cast(x, d) if ctx.dtype(x) != d else x, ctx.expr(value, d))


@aten("full_like.default")
def full_like(
    ctx,
    self,
    fill_value,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    memory_format=None,
):
    return _like(ctx, self, fill_value, dtype)


@aten("zeros_like.default", "empty_like.default")
def zeros_like(
    ctx, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return _like(ctx, self, 0, dtype)


@aten("ones_like.default")
def ones_like(
    ctx, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return _like(ctx, self, 1, dtype)


@aten("fill.Scalar", "fill.Tensor")
def fill(ctx, self, value):
    x = ctx.expr(self)
    v = (
        ctx.cast(ctx.call("reshape", value, newshape=()), ctx.dtype(x))
        if isinstance(value, Expr)
        else ctx.expr(value, ctx.dtype(x))
    )
    return ctx.call("full_like", x, v)


@aten("arange.start_step", "arange.start", "arange.default")
def arange(ctx, *args, dtype=None, layout=None, device=None, pin_memory=None):
    if len(args) == 1:
        start, end, step = 0, args[0], 1
    elif len(args) == 2:
        (start, end), step = args, 1
    else:
        start, end, step = args[:3]
    d = _dtype(ctx, dtype, "int64")
    if not any(isinstance(v, Expr) for v in (start, end, step)):
        # static bounds: the values themselves (the length as torch computes it)
        n = max(0, math.ceil((end - start) / step))
        if dt.is_int(d):
            values = np.arange(n, dtype=np.int64) * int(step) + int(start)
        else:
            values = np.arange(n, dtype=np.float64) * float(step) + float(start)
        return ctx.const(values.astype(dt.to_numpy(d)), d)
    return ctx.call("arange", ctx.expr(start, d), ctx.expr(end, d), ctx.expr(step, d), dtype=d)


@aten("linspace.default")
def linspace(ctx, start, end, steps, *, dtype=None, layout=None, device=None, pin_memory=None):
    d = _dtype(ctx, dtype)
    if steps == 1:
        return ctx.const(np.asarray([start]).astype(dt.to_numpy(d)), d)
    i = np.arange(steps, dtype=np.float64)
    step = (end - start) / (steps - 1)
    # torch: start + i * step on the first half, end - (steps - 1 - i) * step on the second
    values = np.where(i < steps // 2, start + i * step, end - (steps - 1 - i) * step)
    return ctx.const(values.astype(dt.to_numpy(d)), d)


@aten("eye.default", "eye.m")
def eye(ctx, n, m=None, *, dtype=None, layout=None, device=None, pin_memory=None):
    m = n if m is None else m
    d = _dtype(ctx, dtype)
    r = ctx.call("expand_dims", ctx.iota(n), axis=1)
    c = ctx.call("expand_dims", ctx.iota(m), axis=0)
    return ctx.cast(ctx.call("equal", r, c), d)


@aten("tril.default")
def tril(ctx, self, diagonal=0):
    return ctx.call("trilu", self, k=diagonal, upper=False)


@aten("triu.default")
def triu(ctx, self, diagonal=0):
    return ctx.call("trilu", self, k=diagonal, upper=True)


# -- random ---------------------------------------------------------------------------------------


def _seed(ctx):
    return None  # fresh numbers each run, as torch without a manual seed


@aten("rand.default", "rand.generator")
def rand(ctx, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    return ctx.call("random.uniform", shape=tuple(size), dtype=_dtype(ctx, dtype), seed=_seed(ctx))


@aten("randn.default", "randn.generator")
def randn(ctx, size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    return ctx.call("random.normal", shape=tuple(size), dtype=_dtype(ctx, dtype), seed=_seed(ctx))


@aten("rand_like.default")
def rand_like(
    ctx, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return ctx.call("random.uniform_like", self, dtype=_dtype(ctx, dtype), seed=_seed(ctx))


@aten("randn_like.default")
def randn_like(
    ctx, self, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None
):
    return ctx.call("random.normal_like", self, dtype=_dtype(ctx, dtype), seed=_seed(ctx))


@aten("randperm.default", "randperm.generator")
def randperm(ctx, n, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    keys = ctx.call("random.uniform", shape=(n,), dtype="float32", seed=_seed(ctx))
    return ctx.cast(ctx.call("argsort", keys, axis=0), _dtype(ctx, dtype, "int64"))


@aten("randint.default", "randint.low")
def randint(ctx, *args, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    low, high, size = (0, args[0], args[1]) if len(args) == 2 else args[:3]
    u = ctx.call(
        "random.uniform",
        shape=tuple(size),
        low=float(low),
        high=float(high),
        dtype="float64",
        seed=_seed(ctx),
    )
    return ctx.cast(ctx.call("floor", u), _dtype(ctx, dtype, "int64"))


@aten("bernoulli.default", "bernoulli.p")
def bernoulli(ctx, self, p=None, *, generator=None):
    x = ctx.expr(self)
    prob = x if p is None else ctx.call("full_like", x, ctx.expr(p, ctx.dtype(x)))
    return ctx.call("random.bernoulli", prob, dtype=ctx.dtype(x), seed=_seed(ctx))


@aten("uniform.default")
def uniform(ctx, self, from_=0.0, to=1.0, *, generator=None):
    return ctx.call("random.uniform_like", self, low=float(from_), high=float(to), seed=_seed(ctx))


@aten("normal.Tensor_float", "normal.float_Tensor", "normal.Tensor_Tensor")
def normal(ctx, mean, std=1.0, *, generator=None):
    like = mean if isinstance(mean, Expr) else std
    z = ctx.call("random.normal_like", like, seed=_seed(ctx))
    d = ctx.dtype(z)
    return ctx.call("add", ctx.call("multiply", z, ctx.expr(std, d)), ctx.expr(mean, d))


@aten("native_dropout.default")
def native_dropout(ctx, input, p, train):  # noqa: A002
    """(output, mask); in eval (train False) the identity with an all-true mask."""
    x = ctx.expr(input)
    if train is False or not p:
        return x, ctx.call("full_like", ctx.cast(x, "bool"), ctx.expr(True, "bool"))
    keep = ctx.call(
        "random.bernoulli",
        ctx.call("full_like", x, ctx.expr(1.0 - p, ctx.dtype(x))),
        dtype="bool",
        seed=_seed(ctx),
    )
    scale = ctx.expr(1.0 / (1.0 - p), ctx.dtype(x))
    out = ctx.call("where", keep, ctx.call("multiply", x, scale), ctx.call("zeros_like", x))
    return out, keep


@aten(
    "dropout.default",
    "feature_dropout.default",
    "alpha_dropout.default",
    "feature_alpha_dropout.default",
)
def dropout(ctx, input, p, train):  # noqa: A002
    if not train or not p:
        return input
    return native_dropout(ctx, input, p, train)[0]
