"""Deterministic test inputs."""

from __future__ import annotations

import itertools

import torch

_counter = itertools.count()


def _gen():
    return torch.Generator().manual_seed(1000 + next(_counter))


def R(*shape, lo=-2.0, hi=2.0, dtype=torch.float32):
    """Uniform floats in [lo, hi)."""
    return (torch.rand(shape, generator=_gen(), dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def N(*shape, dtype=torch.float32):
    return torch.randn(shape, generator=_gen(), dtype=torch.float64).to(dtype)


def I(*shape, lo=-5, hi=5, dtype=torch.int64):  # noqa: E743
    """Uniform ints in [lo, hi]."""
    return torch.randint(lo, hi + 1, shape, generator=_gen(), dtype=dtype)


def B(*shape):
    return torch.rand(shape, generator=_gen()) < 0.5
