"""Reductions: sum, mean, prod, max, min, arg-reductions, norms, variance, all / any.

Every reduction takes `axis` (None: every axis; `()`: no axis, the identity), `keepdims` and
`exclude` (reduce over the axes *not* listed). Empty reductions follow ONNX: sum 0, prod 1,
max -inf (or the dtype's minimum), min +inf (or the dtype's maximum), log_sum / logsumexp -inf.
Float16 / bfloat16 accumulate in float32 and round once at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from . import relations as R
from .factories import SAMPLE_DTYPES, check_kind, random_array, reduce, reduce_axes
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


def _acc(x: np.ndarray) -> np.ndarray:
    """Accumulate narrow floats in float32."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _to_float(x: np.ndarray) -> np.ndarray:
    """Float math on integer inputs runs in float64 (then truncates back, as ONNX does)."""
    return x.astype(np.float64) if x.dtype.kind in "iub" else _acc(x)


def _count(x: np.ndarray, axis: tuple) -> int:
    n = 1
    for a in axis:
        n *= x.shape[a]
    return n


def _extreme(x: np.ndarray, lowest: bool):
    """The identity of max (lowest=True) or min over x's dtype."""
    if x.dtype == np.bool_:
        return not lowest
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return info.min if lowest else info.max
    return -np.inf if lowest else np.inf


def _max(x, axis, keepdims):
    return np.max(x, axis=axis, keepdims=keepdims, initial=_extreme(x, True))


def _min(x, axis, keepdims):
    return np.min(x, axis=axis, keepdims=keepdims, initial=_extreme(x, False))


def _acc64(x: np.ndarray) -> np.ndarray:
    """Float sums run in float64 and round once (the result cast back to x's dtype does not
    depend on the order numpy's SIMD loops add in)."""
    if x.dtype.kind == "f":
        return x.astype(np.float64)
    return x.astype(np.complex128) if x.dtype.kind == "c" else x


def _sum(x, axis, keepdims):
    return np.sum(_acc64(x), axis=axis, keepdims=keepdims)


def _prod(x, axis, keepdims):
    return np.prod(_acc(x), axis=axis, keepdims=keepdims)


def _mean(x, axis, keepdims):
    n = _count(x, axis)
    if x.dtype.kind in "iu":
        # Exact integer sum, then division truncating toward zero (numpy / ONNX reference).
        acc = np.int64 if x.dtype.kind == "i" else np.uint64
        s = np.sum(x, axis=axis, keepdims=keepdims, dtype=acc)
        if n == 0:
            return np.zeros_like(s)
        q = np.abs(s) // n
        return np.where(s < 0, -q, q) if x.dtype.kind == "i" else q
    s = np.asarray(np.sum(_acc64(x), axis=axis, keepdims=keepdims))
    return s / s.dtype.type(n)  # an empty mean is 0 / 0 = NaN


def _logsumexp(x, axis, keepdims):
    x = _to_float(x)
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0)  # all -inf (or empty) or +inf present: no shift
    s = np.sum(np.exp(x - m), axis=axis, keepdims=True)
    out = np.log(s) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _l1(x, axis, keepdims):
    return np.sum(np.abs(_acc64(x)), axis=axis, keepdims=keepdims)


def _l2(x, axis, keepdims):
    x = _to_float(x)
    return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))


def _sum_square(x, axis, keepdims):
    x = _acc64(x)
    return np.sum(x * x, axis=axis, keepdims=keepdims)


def _log_sum(x, axis, keepdims):
    return np.log(np.sum(_to_float(x), axis=axis, keepdims=keepdims))


def reduce_samples(kind: str, empty: bool = True, dtypes=None):
    """Sample calls for a reduction: axis None / () / negative / several / exclude, empties."""

    def gen(rng):
        for dtype in dtypes or SAMPLE_DTYPES[kind][:2]:
            yield Sample([random_array(rng, (), dtype)], {"axis": None})
            for shape in [(1,), (7,), (3, 4), (2, 3, 5), (2, 1, 3, 5)]:
                x = random_array(rng, shape, dtype)
                yield Sample([x], {"axis": None})
                yield Sample([x], {"axis": (-1,), "keepdims": True})
                yield Sample([x], {"axis": ()})
                if len(shape) > 1:
                    yield Sample([x], {"axis": (0,)})
                    yield Sample([x], {"axis": (0,), "exclude": True, "keepdims": True})
                if len(shape) > 2:
                    yield Sample([x], {"axis": (0, -1)})
            x = random_array(rng, (0, 3), dtype)
            yield Sample([x], {"axis": (1,)})  # empty output, non-empty reductions
            if empty:
                yield Sample([x], {"axis": (0,)})
                yield Sample([x], {"axis": None, "keepdims": True})

    return gen


_FLOATS = ["float32", "float64", "float16"]
_NUMS = ["float32", "int32", "int64", "float16", "uint8"]

reduce("sum", _sum, samples=reduce_samples("numeric", dtypes=_NUMS))
declare(
    "sum",
    lower=Rule("relay_core.te.lower_reduce:_r_sum"),
    grad=Rule("relay_core.ops.grads_tensor:_g_sum"),
)
reduce("prod", _prod, samples=reduce_samples("numeric", dtypes=_NUMS))
declare(
    "prod",
    lower=Rule("relay_core.te.lower_reduce:_r_prod"),
    grad=Rule("relay_core.ops.grads_tensor:_g_prod"),
)
reduce("max", _max, kind="any", samples=reduce_samples("any", dtypes=_NUMS + ["bool"]))
declare(
    "max",
    lower=Rule("relay_core.te.lower_reduce:_r_max"),
    grad=Rule("relay_core.ops.grads_tensor:_g_max"),
)
reduce("min", _min, kind="any", samples=reduce_samples("any", dtypes=_NUMS + ["bool"]))
declare(
    "min",
    lower=Rule("relay_core.te.lower_reduce:_r_min"),
    grad=Rule("relay_core.ops.grads_tensor:_g_min"),
)
reduce(
    "mean",
    _mean,
    samples=reduce_samples("numeric", dtypes=_NUMS),
    doc="integer means truncate toward zero; an empty float mean is NaN",
)
declare(
    "mean",
    lower=Rule("relay_core.te.lower_reduce:_mean"),
    grad=Rule("relay_core.ops.grads_tensor:_g_mean"),
)
reduce("logsumexp", _logsumexp, samples=reduce_samples("numeric", dtypes=_FLOATS + ["int32"]))
declare(
    "logsumexp",
    lower=Rule("relay_core.te.lower_reduce:_logsumexp"),
    grad=Rule("relay_core.ops.grads_tensor:_g_logsumexp"),
)
reduce("l1_norm", _l1, doc="sum |x|", samples=reduce_samples("numeric", dtypes=_NUMS))
declare(
    "l1_norm",
    lower=Rule("relay_core.te.lower_reduce:_r_l1_norm"),
    grad=Rule("relay_core.ops.grads_tensor:_g_l1_norm"),
)
reduce(
    "l2_norm",
    _l2,
    doc="sqrt(sum x^2)",
    samples=reduce_samples("numeric", dtypes=_FLOATS + ["int32"]),
)
declare(
    "l2_norm",
    lower=Rule("relay_core.te.lower_reduce:_l2"),
    grad=Rule("relay_core.ops.grads_tensor:_g_l2_norm"),
)
reduce("sum_square", _sum_square, doc="sum x^2", samples=reduce_samples("numeric", dtypes=_NUMS))
declare(
    "sum_square",
    lower=Rule("relay_core.te.lower_reduce:_r_sum_square"),
    grad=Rule("relay_core.ops.grads_tensor:_g_sum_square"),
)
reduce(
    "log_sum",
    _log_sum,
    doc="log(sum x)",
    samples=reduce_samples("numeric", dtypes=_FLOATS),
)
declare(
    "log_sum",
    lower=Rule("relay_core.te.lower_reduce:_log_sum"),
    grad=Rule("relay_core.ops.grads_tensor:_g_log_sum"),
)
reduce("all", np.all, kind="bool", samples=reduce_samples("bool", dtypes=["bool"]))
declare("all", lower=Rule("relay_core.te.lower_reduce:_r_all"))
reduce("any", np.any, kind="bool", samples=reduce_samples("bool", dtypes=["bool"]))
declare("any", lower=Rule("relay_core.te.lower_reduce:_r_any"))


# -- argmax / argmin ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArgReduceAttrs:
    axis: tuple[int, ...] | None = None  # None: over the flattened tensor
    keepdims: bool = False
    exclude: bool = False
    select_last_index: bool = False  # ties: the last index instead of the first


def _arg_rel(name):
    def rel(args, attrs):
        t = R.tensor(args[0])
        check_kind(t, "any", name)
        axes = set(R.normalize_axes(attrs.axis, t.ndim)) if attrs.axis is not None else None
        if axes is None:
            axes = set(range(t.ndim))
        if attrs.exclude:
            axes = set(range(t.ndim)) - axes
        if any(t.shape[a] == 0 for a in axes):
            raise OpTypeError(f"{name} over an empty axis has no result")
        return R.rel_reduce_index(args, attrs)

    return rel


def _arg_ref(fn):
    def ref(xs, attrs):
        x = xs[0]
        cd = dt.compute_dtype(dt.from_numpy(x.dtype))
        x = x.astype(dt.to_numpy(cd), copy=False)
        axes = reduce_axes(x, attrs)
        if any(x.shape[a] == 0 for a in axes):
            raise EvalError("argmax / argmin over an empty axis")
        # Move the reduced axes last and flatten them: the result is the flat index within them.
        rest = [i for i in range(x.ndim) if i not in axes]
        n = _count(x, axes)
        y = np.transpose(x, rest + list(axes)).reshape([x.shape[i] for i in rest] + [n])
        if attrs.select_last_index:
            idx = y.shape[-1] - 1 - fn(y[..., ::-1], axis=-1)
        else:
            idx = fn(y, axis=-1)
        idx = np.asarray(idx, dtype=np.int64)
        if attrs.keepdims:
            idx = idx.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
        return idx

    return ref


def _arg_samples(rng):
    for dtype in ["float32", "int32", "int8", "bool"]:
        yield Sample([random_array(rng, (), dtype)], {})
        for shape in [(1,), (7,), (3, 4), (2, 3, 5)]:
            # Few distinct values so that ties happen.
            x = random_array(rng, shape, dtype, (-2, 2))
            yield Sample([x], {})
            yield Sample([x], {"axis": (-1,), "keepdims": True})
            yield Sample([x], {"axis": (0,), "select_last_index": True})
            if len(shape) > 1:
                yield Sample([x], {"axis": (0,), "exclude": True})
                yield Sample([x], {"axis": (0, -1), "keepdims": True, "select_last_index": True})
        yield Sample([random_array(rng, (0, 3), dtype)], {"axis": (1,)})


for _name, _fn in [("argmax", np.argmax), ("argmin", np.argmin)]:
    register(
        OpDef(
            _name,
            _arg_rel(_name),
            _arg_ref(_fn),
            OpPattern.COMM_REDUCE,
            ArgReduceAttrs,
            (1, 1),
            f"{_name}: int64 index of the first extreme value (the last with select_last_index);"
            " over several axes, the flat index within them; NaN counts as the extreme",
            samples=_arg_samples,
        )
    )


# -- variance / std -------------------------------------------------------------------------------
@dataclass(frozen=True)
class VarianceAttrs:
    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    exclude: bool = False
    unbiased: bool = False  # divide by N - 1 (same as correction=1)
    correction: float = 0.0  # divide by max(N - correction, 0), as torch.var


def _var_rel(args, attrs):
    t = R.tensor(args[0])
    check_kind(t, "float", "variance")
    if len(args) == 2:
        m = R.tensor(args[1], "mean")
        if m.dtype != t.dtype:
            raise OpTypeError(f"variance: mean has dtype {m.dtype}, data {t.dtype}")
        keep = R.reduce_shape(t.shape, attrs.axis, True, attrs.exclude)
        R.broadcast_shapes(keep, m.shape)
    return R.rel_reduce(args[:1], attrs)


def _variance(xs, attrs):
    x = xs[0]
    in_np = x.dtype
    xc = _acc64(x.astype(dt.to_numpy(dt.compute_dtype(dt.from_numpy(in_np))), copy=False))
    axes = reduce_axes(x, attrs)
    if len(xs) == 2:
        m = xs[1].astype(xc.dtype)
    else:
        m = np.mean(xc, axis=axes, keepdims=True) if x.size else np.zeros((1,) * x.ndim, xc.dtype)
    c = 1.0 if attrs.unbiased else attrs.correction
    denom = max(_count(x, axes) - c, 0.0)
    with np.errstate(all="ignore"):
        d = xc - m
        out = np.sum(d * d, axis=axes, keepdims=attrs.keepdims) / xc.dtype.type(denom)
    return np.asarray(out).astype(in_np)


def _std(xs, attrs):
    with np.errstate(all="ignore"):
        return np.asarray(np.sqrt(_variance(xs, attrs)))


def _var_samples(with_mean):
    def gen(rng):
        for dtype in _FLOATS:
            for shape in [(1,), (7,), (3, 4), (2, 3, 5)]:
                x = random_array(rng, shape, dtype)
                yield Sample([x], {})
                yield Sample([x], {"axis": (-1,), "keepdims": True, "unbiased": True})
                yield Sample([x], {"axis": (0,), "correction": 2.0})
                if len(shape) > 1:
                    yield Sample([x], {"axis": (0,), "exclude": True})
                if with_mean:
                    m = np.mean(x, axis=-1, keepdims=True).astype(x.dtype)
                    yield Sample([x, m], {"axis": (-1,)})
            yield Sample([random_array(rng, (0, 3), dtype)], {"axis": (0,)})

    return gen


register(
    OpDef(
        "variance",
        _var_rel,
        _variance,
        OpPattern.COMM_REDUCE,
        VarianceAttrs,
        (1, 2),
        "variance(data[, mean]): mean of squared deviations over `axis`, divided by "
        "max(N - correction, 0) (unbiased=True means correction=1); the mean is computed when "
        "not given",
        samples=_var_samples(True),
    )
)
declare(
    "variance",
    lower=Rule("relay_core.te.lower_reduce:_r_variance"),
    grad=Rule("relay_core.ops.grads_tensor:_variance"),
)
register(
    OpDef(
        "std",
        lambda a, at: _var_rel(a[:1], at),
        _std,
        OpPattern.COMM_REDUCE,
        VarianceAttrs,
        (1, 1),
        "sqrt(variance(data))",
        samples=_var_samples(False),
    )
)
declare(
    "std",
    lower=Rule("relay_core.te.lower_reduce:_r_std"),
    grad=Rule("relay_core.ops.grads_tensor:_std"),
)

__all__ = ["ArgReduceAttrs", "VarianceAttrs", "reduce_samples"]

# -- how each op is computed (JAX lax style: declared beside the ops; a Rule / Kernel names a
# function of relay_core/te or relay_core/backend, imported on first use) ------------------
declare("argmax", lower=Rule("relay_core.te.lower_reduce:_r_argmax"))
declare("argmin", lower=Rule("relay_core.te.lower_reduce:_r_argmin"))
