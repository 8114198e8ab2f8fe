"""Random ops: RandomUniform(Like), RandomNormal(Like), Bernoulli, Multinomial. The values come
from numpy's generator (seeded when the model gives a seed), not from any other runtime's."""

from __future__ import annotations

from .dtypes import relay_dtype
from .table import converter


def _seed(seed):
    return None if seed is None else int(seed)


@converter("RandomUniform", 1)
def RandomUniform(ctx, *, dtype=1, high=1.0, low=0.0, seed=None, shape):
    return ctx.call(
        "random.uniform",
        shape=tuple(shape),
        low=low,
        high=high,
        seed=_seed(seed),
        dtype=relay_dtype(dtype),
    )


@converter("RandomNormal", 1)
def RandomNormal(ctx, *, dtype=1, mean=0.0, scale=1.0, seed=None, shape):
    return ctx.call(
        "random.normal",
        shape=tuple(shape),
        mean=mean,
        scale=scale,
        seed=_seed(seed),
        dtype=relay_dtype(dtype),
    )


@converter("RandomUniformLike", 1)
def RandomUniformLike(ctx, x, *, dtype=None, high=1.0, low=0.0, seed=None):
    return ctx.call(
        "random.uniform_like",
        x,
        low=low,
        high=high,
        seed=_seed(seed),
        dtype=relay_dtype(dtype) if dtype is not None else None,
    )


@converter("RandomNormalLike", 1)
def RandomNormalLike(ctx, x, *, dtype=None, mean=0.0, scale=1.0, seed=None):
    return ctx.call(
        "random.normal_like",
        x,
        mean=mean,
        scale=scale,
        seed=_seed(seed),
        dtype=relay_dtype(dtype) if dtype is not None else None,
    )


@converter("Bernoulli", 15)
def Bernoulli(ctx, p, *, dtype=None, seed=None):
    return ctx.call(
        "random.bernoulli",
        p,
        seed=_seed(seed),
        dtype=relay_dtype(dtype) if dtype is not None else None,
    )


@converter("Multinomial", 7)
def Multinomial(ctx, x, *, dtype=6, sample_size=1, seed=None):
    return ctx.call(
        "random.multinomial", x, sample_size=sample_size, seed=_seed(seed), dtype=relay_dtype(dtype)
    )
