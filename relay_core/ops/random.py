"""Random tensors: uniform, normal (and *_like), bernoulli, multinomial.

All are stateful (never folded or deduplicated). A given `seed` always gives the same numbers
(numpy's default Generator); seed None draws fresh entropy on every call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OpTypeError
from ..ir import dtype as dt
from ..ir.types import TensorType
from . import relations as R
from .factories import check_kind, random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


def _float_dtype(d, op):
    d = R.dtype_attr(d, op)
    if not dt.is_float(d):
        raise OpTypeError(f"{op}: dtype must be a float type, got {d}")
    return d


def _shape(shape, op):
    if any(d < 0 for d in shape):
        raise OpTypeError(f"{op}: negative dim in shape {tuple(shape)}")
    return tuple(shape)


def _cast(x, dtype):
    return np.asarray(np.asarray(x, np.float64).astype(dt.to_numpy(dtype)))


@dataclass(frozen=True)
class UniformAttrs:
    shape: tuple[int, ...] = ()
    low: float = 0.0
    high: float = 1.0
    seed: int | None = None
    dtype: str = "float32"


@dataclass(frozen=True)
class NormalAttrs:
    shape: tuple[int, ...] = ()
    mean: float = 0.0
    scale: float = 1.0  # standard deviation
    seed: int | None = None
    dtype: str = "float32"


@dataclass(frozen=True)
class UniformLikeAttrs:
    low: float = 0.0
    high: float = 1.0
    seed: int | None = None
    dtype: str | None = None  # None: the input's dtype


@dataclass(frozen=True)
class NormalLikeAttrs:
    mean: float = 0.0
    scale: float = 1.0
    seed: int | None = None
    dtype: str | None = None


def _draw(kind: str, shape, attrs) -> np.ndarray:
    rng = np.random.default_rng(attrs.seed)
    if kind == "uniform":
        return rng.uniform(attrs.low, attrs.high, size=shape)
    return rng.normal(attrs.mean, attrs.scale, size=shape)


def _fixed_op(name, kind, attrs_cls):
    def rel(args, attrs):
        return TensorType(_shape(attrs.shape, name), _float_dtype(attrs.dtype, name))

    def samples(rng):
        for shape in [(), (5,), (2, 3), (0, 4)]:
            yield Sample([], {"shape": shape, "seed": 7})
        yield Sample([], {"shape": (3,), "dtype": "float16"})

    register(
        OpDef(
            name,
            rel,
            lambda xs, a: _cast(_draw(kind, a.shape, a), a.dtype),
            OpPattern.OPAQUE,
            attrs_cls,
            (0, 0),
            f"a tensor of `shape` drawn from the {kind} distribution",
            stateful=True,
            samples=samples,
        )
    )


def _like_op(name, kind, attrs_cls):
    def rel(args, attrs):
        t = R.tensor(args[0])
        return TensorType(t.shape, _float_dtype(attrs.dtype, name) if attrs.dtype else t.dtype)

    def ref(xs, attrs):
        x = xs[0]
        return _cast(_draw(kind, x.shape, attrs), attrs.dtype or dt.from_numpy(x.dtype))

    def samples(rng):
        for shape in [(), (4,), (2, 0)]:
            yield Sample([random_array(rng, shape, "float32")], {"seed": 3})
        yield Sample([random_array(rng, (2, 2), "int32")], {"dtype": "float64"})

    register(
        OpDef(
            name,
            rel,
            ref,
            OpPattern.OPAQUE,
            attrs_cls,
            (1, 1),
            f"a tensor shaped like the input drawn from the {kind} distribution",
            stateful=True,
            samples=samples,
        )
    )


_fixed_op("random.uniform", "uniform", UniformAttrs)
declare("random.uniform", lower=Rule("relay_core.te.lower_random:_uniform"))
_fixed_op("random.normal", "normal", NormalAttrs)
declare("random.normal", lower=Rule("relay_core.te.lower_random:_normal_op"))
_like_op("random.uniform_like", "uniform", UniformLikeAttrs)
declare("random.uniform_like", lower=Rule("relay_core.te.lower_random:_uniform_like"))
_like_op("random.normal_like", "normal", NormalLikeAttrs)
declare("random.normal_like", lower=Rule("relay_core.te.lower_random:_normal_like"))


# -- bernoulli / multinomial ----------------------------------------------------------------------
@dataclass(frozen=True)
class BernoulliAttrs:
    seed: int | None = None
    dtype: str | None = None  # None: the input's dtype


def _bernoulli_rel(args, attrs):
    t = R.tensor(args[0], "probabilities")
    check_kind(t, "float", "random.bernoulli")
    out = R.dtype_attr(attrs.dtype, "random.bernoulli") if attrs.dtype else t.dtype
    return TensorType(t.shape, out)


def _bernoulli(xs, attrs):
    p = np.asarray(xs[0], np.float64)
    draws = np.random.default_rng(attrs.seed).random(p.shape) < p
    return np.asarray(draws.astype(dt.to_numpy(attrs.dtype or dt.from_numpy(xs[0].dtype))))


def _bernoulli_samples(rng):
    for shape in [(), (6,), (2, 3), (0,)]:
        yield Sample([random_array(rng, shape, "float32", (0, 1))], {"seed": 1})
    yield Sample([np.array([0.0, 1.0, 0.5])], {"dtype": "bool"})


register(
    OpDef(
        "random.bernoulli",
        _bernoulli_rel,
        _bernoulli,
        OpPattern.OPAQUE,
        BernoulliAttrs,
        (1, 1),
        "1 with probability p, else 0, elementwise (ONNX Bernoulli)",
        stateful=True,
        samples=_bernoulli_samples,
    )
)
declare("random.bernoulli", lower=Rule("relay_core.te.lower_random:_bernoulli"))


@dataclass(frozen=True)
class MultinomialAttrs:
    sample_size: int = 1
    seed: int | None = None
    dtype: str = "int32"


def _multinomial_rel(args, attrs):
    t = R.tensor(args[0], "logits")
    check_kind(t, "float", "random.multinomial")
    if t.ndim != 2:
        raise OpTypeError(f"random.multinomial needs (batch, classes) logits, got rank {t.ndim}")
    d = R.dtype_attr(attrs.dtype, "random.multinomial")
    if not dt.is_int(d) or attrs.sample_size < 0:
        raise OpTypeError("random.multinomial: dtype must be an integer type, sample_size >= 0")
    return TensorType((t.shape[0], attrs.sample_size), d)


def _multinomial(xs, attrs):
    logits = np.asarray(xs[0], np.float64)
    b, c = logits.shape
    with np.errstate(all="ignore"):
        p = np.exp(logits - logits.max(axis=1, keepdims=True)) if c else logits
        cdf = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
    u = np.random.default_rng(attrs.seed).random((b, attrs.sample_size))
    idx = (u[:, :, None] >= cdf[:, None, :]).sum(axis=-1)
    return np.minimum(idx, max(c - 1, 0)).astype(dt.to_numpy(attrs.dtype))


def _multinomial_samples(rng):
    yield Sample([random_array(rng, (3, 4), "float32")], {"sample_size": 5, "seed": 2})
    yield Sample([random_array(rng, (1, 2), "float64")], {"dtype": "int64"})
    yield Sample([random_array(rng, (0, 3), "float32")], {"sample_size": 2})


register(
    OpDef(
        "random.multinomial",
        _multinomial_rel,
        _multinomial,
        OpPattern.OPAQUE,
        MultinomialAttrs,
        (1, 1),
        "sample class indices from each row of unnormalised log-probabilities (ONNX Multinomial)",
        stateful=True,
        samples=_multinomial_samples,
    )
)
declare("random.multinomial", lower=Rule("relay_core.te.lower_random:_multinomial"))
