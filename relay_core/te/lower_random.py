"""Lowering of random ops: counter-based (splitmix64 of seed and element index), so every
element is independent and kernels stay parallel. A given seed always gives the same numbers,
though not numpy's; without a seed each call draws a fresh one (the `entropy` intrinsic)."""

from __future__ import annotations

import math

from . import expr as E
from . import tensor as T
from .expr import Call, Const, call, cast, select
from .lower_transform import ravel
from .tensor import compute, reduce_axis

_U64 = "uint64"


def _c(v) -> Const:
    return Const(v & ((1 << 64) - 1), _U64)


def _mix(z):
    z = z + _c(0x9E3779B97F4A7C15)
    z = E.binary("xor", z, E.binary("shr", z, _c(30))) * _c(0xBF58476D1CE4E5B9)
    z = E.binary("xor", z, E.binary("shr", z, _c(27))) * _c(0x94D049BB133111EB)
    return E.binary("xor", z, E.binary("shr", z, _c(31)))


def _seed_tensor(seed, salt: int):
    if seed is not None:
        return compute((), lambda: _mix(_c(int(seed) * 0x2545F4914F6CDD1D + salt)), "seed")
    # a fresh seed per call, computed once (a materialized scalar stage)
    return compute((), lambda: Call("entropy", (), _U64), "seed", {"materialize": True})


def uniform01(seed_t, counter):
    """float64 in [0, 1) from a seed tensor and an int64 counter expression."""
    z = _mix(E.binary("xor", seed_t[()], cast(_U64, counter) * _c(0xD1B54A32D192ED03)))
    return cast("float64", E.binary("shr", z, _c(11))) * Const(2.0**-53, "float64")


def _normal(seed_t, flat):
    u1 = uniform01(seed_t, flat * 2)
    u2 = uniform01(seed_t, flat * 2 + 1)
    r = call("sqrt", Const(-2.0, "float64") * call("log", Const(1.0, "float64") - u1))
    return r * call("cos", Const(2 * math.pi, "float64") * u2)


def _draw(kind, shape, attrs, dtype, salt):
    seed_t = _seed_tensor(attrs.seed, salt)

    def body(*i):
        flat = ravel(i, shape)
        if kind == "uniform":
            v = Const(float(attrs.low), "float64") + Const(
                float(attrs.high - attrs.low), "float64"
            ) * uniform01(seed_t, flat)
        else:
            v = Const(float(attrs.mean), "float64") + Const(
                float(attrs.scale), "float64"
            ) * _normal(seed_t, flat)
        return cast(dtype, v)

    return compute(shape, body, kind)


def _uniform(inputs, attrs, out_type):
    return _draw("uniform", tuple(out_type.shape), attrs, out_type.dtype, 1)


def _normal_op(inputs, attrs, out_type):
    return _draw("normal", tuple(out_type.shape), attrs, out_type.dtype, 2)


def _uniform_like(inputs, attrs, out_type):
    return _draw("uniform", inputs[0].shape, attrs, out_type.dtype, 1)


def _normal_like(inputs, attrs, out_type):
    return _draw("normal", inputs[0].shape, attrs, out_type.dtype, 2)


def _bernoulli(inputs, attrs, out_type):
    p = inputs[0]
    seed_t = _seed_tensor(attrs.seed, 3)
    return compute(
        p.shape,
        lambda *i: cast(
            out_type.dtype, uniform01(seed_t, ravel(i, p.shape)) < cast("float64", p[i])
        ),
        "bernoulli",
    )


def _multinomial(inputs, attrs, out_type):
    logits = inputs[0]
    b, c = logits.shape
    f = "float64"
    k = reduce_axis(c, "c")
    m = compute((b,), lambda i: T.max(cast(f, logits[i, k]), k), "mn_max")
    k2 = reduce_axis(c, "c")
    tot = compute((b,), lambda i: T.sum(call("exp", cast(f, logits[i, k2]) - m[i]), k2), "mn_sum")

    def cdf_body(i, j):
        k3 = reduce_axis(c, "c")
        return T.sum(call("exp", cast(f, logits[i, k3]) - m[i]), k3, where=k3 <= j)

    cum = compute((b, c), cdf_body, "mn_cum")
    seed_t = _seed_tensor(attrs.seed, 4)
    s = attrs.sample_size

    def idx_body(i, j):
        u = uniform01(seed_t, i * s + j)
        k4 = reduce_axis(c, "c")
        hit = cast("int64", u >= cum[i, k4] / tot[i])
        return T.sum(hit, k4)

    cnt = compute((b, s), idx_body, "mn_count")
    return compute(
        (b, s),
        lambda i, j: cast(out_type.dtype, E.min_(cnt[i, j], E.index(max(c - 1, 0)))),
        "multinomial",
    )


__all__ = ["uniform01", "select"]
