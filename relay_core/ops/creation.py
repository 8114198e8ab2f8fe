"""Tensor creation: arange, full / zeros / ones (and their *_like forms), one_hot."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType
from . import relations as R
from .factories import check_kind, random_array
from .misc import cast_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


def _scalar(t, op, what):
    t = R.tensor(t, what)
    if t.ndim > 1 or (t.ndim == 1 and isinstance(t.shape[0], int) and t.shape[0] != 1):
        raise OpTypeError(f"{op}: {what} must be a scalar, got shape {t.shape}")
    return t


def _item(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.size != 1:
        raise EvalError(f"expected a single value, got shape {x.shape}")
    return x.reshape(())


def _shape_attr(shape, op):
    if any(d < 0 for d in shape):
        raise OpTypeError(f"{op}: negative dim in shape {tuple(shape)}")
    return tuple(shape)


# -- arange ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArangeAttrs:
    dtype: str | None = None  # None: the dtype of start


def _arange_rel(args, attrs):
    ts = [_scalar(a, "arange", w) for a, w in zip(args, ("start", "stop", "step"))]
    for t in ts:
        check_kind(t, "numeric", "arange")
    out = R.dtype_attr(attrs.dtype, "arange") if attrs.dtype else ts[0].dtype
    return TensorType((Any,), out)


def arange_array(start, stop, step, dtype: str) -> np.ndarray:
    """ONNX Range: max(ceil((stop - start) / step), 0) values start + i * step.

    >>> arange_array(10, 2, -3, "int32")
    array([10,  7,  4], dtype=int32)
    """
    if dt.is_int(dtype):
        s, e, d = int(start), int(stop), int(step)
        if d == 0:
            raise EvalError("arange: step cannot be 0")
        n = max(0, -((s - e) // d))  # exact ceil((e - s) / d)
        return (s + np.arange(n, dtype=np.int64) * d).astype(dt.to_numpy(dtype))
    s, e, d = float(start), float(stop), float(step)
    if d == 0:
        raise EvalError("arange: step cannot be 0")
    q = (e - s) / d
    if math.isnan(q) or math.isinf(q):
        raise EvalError(f"arange: cannot count the values from {s} to {e} by {d}")
    n = max(0, math.ceil(q))
    return (s + np.arange(n, dtype=np.float64) * d).astype(dt.to_numpy(dtype))


def _arange(xs, attrs):
    dtype = attrs.dtype or dt.from_numpy(xs[0].dtype)
    return arange_array(*(_item(x) for x in xs), dtype)


def _arange_static(call):
    """`arange(0, n, 1)` of a named dim n read off a tensor (torch's exporter builds index grids
    so: `arange(x.size(0))`, n the batch): an exclusive cumulative sum of ones broadcast to that
    dim, whose type keeps the name, where arange's is `?`. None otherwise (a static n folds)."""
    from ..ir.expr import Constant
    from ..ir.types import SYMBOLIC_DIMS
    from .dyn_params import _static_call
    from .shape_sources import carry_dims, picked_dims

    start, stop, step = call.args
    if not all(type(a) is Constant and a.data.size == 1 for a in (start, step)):
        return None
    if start.data.reshape(-1)[0] != 0 or step.data.reshape(-1)[0] != 1:
        return None
    pos = picked_dims(stop)
    if pos is None or pos.size != 1:
        return None
    src, k = stop.args[0].args[0], int(pos.reshape(-1)[0])
    if not isinstance(src.checked_type.shape[k], SYMBOLIC_DIMS):
        return None
    dtype = call.checked_type.dtype
    one = _static_call(call, "full", (Constant(np.ones((), dt.to_numpy(dtype))),), shape=(1,))
    ones = carry_dims(one, [(src, k)])
    if ones is None:
        return None
    return _static_call(call, "cumsum", (ones,), axis=0, exclusive=True)


def _arange_samples(rng):
    for s, e, d, dtype in [
        (0, 5, 1, "int64"),
        (10, 2, -3, "int32"),
        (2, 2, 1, "int64"),
        (5, 0, 1, "int32"),
        (0.0, 1.0, 0.1, "float32"),
        (-1.5, 3.0, 0.7, "float64"),
        (3.0, -1.0, -0.5, "float32"),
        (1, 2, 5, "int64"),
        (0.0, 1.0, 0.25, "float16"),
    ]:
        arr = [np.array(v, dtype=dt.to_numpy(dtype)) for v in (s, e, d)]
        yield Sample(arr, {})
    yield Sample([np.array(v, np.int64) for v in (0, 6, 2)], {"dtype": "float32"})


register(
    OpDef(
        "arange",
        _arange_rel,
        _arange,
        OpPattern.OPAQUE,
        ArangeAttrs,
        (3, 3),
        "arange(start, stop, step): 1-D values start + i * step below stop (ONNX Range); the "
        "length depends on the values",
        data_dependent_shape=True,
        samples=_arange_samples,
        to_static=_arange_static,
    )
)
declare(
    "arange",
    lower=Rule("relay_core.te.lower_dyn:_arange"),
    grad=Rule("relay_core.ops.grads_tensor:_arange"),
)


# -- full / zeros / ones --------------------------------------------------------------------------
@dataclass(frozen=True)
class FullAttrs:
    shape: tuple[int, ...] = ()
    dtype: str | None = None  # None: the fill value's dtype


def _full_rel(args, attrs):
    f = _scalar(args[0], "full", "fill_value")
    out = R.dtype_attr(attrs.dtype, "full") if attrs.dtype else f.dtype
    return TensorType(_shape_attr(attrs.shape, "full"), out)


def full_array(fill, shape, dtype: str) -> np.ndarray:
    v = cast_array(_item(fill), dtype)
    return np.full(tuple(shape), v, dtype=dt.to_numpy(dtype))


def _full_samples(rng):
    for fill, shape, kw in [
        (np.array(1.5, np.float32), (2, 3), {}),
        (np.array([7], np.int64), (4,), {}),
        (np.array(2.7, np.float32), (3,), {"dtype": "int32"}),
        (np.array(True), (), {}),
        (np.array(0.5, np.float64), (0, 2), {"dtype": "float16"}),
    ]:
        yield Sample([fill], {"shape": shape, **kw})


register(
    OpDef(
        "full",
        _full_rel,
        lambda xs, a: full_array(xs[0], a.shape, a.dtype or dt.from_numpy(xs[0].dtype)),
        OpPattern.ELEMWISE,
        FullAttrs,
        (1, 1),
        "full(fill_value): a tensor of `shape` filled with the scalar (cast to `dtype`)",
        samples=_full_samples,
    )
)
declare(
    "full",
    lower=Rule("relay_core.te.lower_misc:_full"),
    grad=Rule("relay_core.ops.grads_tensor:_full"),
)


@dataclass(frozen=True)
class InitAttrs:
    shape: tuple[int, ...] = ()
    dtype: str = "float32"


def _const_op(name, value):
    def rel(args, attrs):
        return TensorType(_shape_attr(attrs.shape, name), R.dtype_attr(attrs.dtype, name))

    def samples(rng):
        for shape, dtype in [
            ((), "float32"),
            ((3,), "int64"),
            ((2, 0), "bool"),
            ((2, 3), "float16"),
        ]:
            yield Sample([], {"shape": shape, "dtype": dtype})

    register(
        OpDef(
            name,
            rel,
            lambda xs, a: np.full(a.shape, value, dtype=dt.to_numpy(a.dtype)),
            OpPattern.ELEMWISE,
            InitAttrs,
            (0, 0),
            f"a tensor of `shape` filled with {value}",
            samples=samples,
        )
    )


_const_op("zeros", 0)
declare("zeros", lower=Rule("relay_core.te.lower_misc:_filled", 0, False))
_const_op("ones", 1)
declare("ones", lower=Rule("relay_core.te.lower_misc:_filled", 1, False))


def _like_samples(rng):
    for dtype in ["float32", "int8", "bool"]:
        for shape in [(), (5,), (2, 0), (3, 4)]:
            yield Sample([random_array(rng, shape, dtype)])


def _filled_like(value):
    return lambda xs, attrs: np.full(xs[0].shape, value, dtype=xs[0].dtype)


for _name, _value in [("zeros_like", 0), ("ones_like", 1)]:
    register(
        OpDef(
            _name,
            R.rel_identity,
            _filled_like(_value),
            OpPattern.ELEMWISE,
            None,
            (1, 1),
            f"a tensor like the input filled with {_value}",
            samples=_like_samples,
        )
    )


def _full_like_rel(args, attrs):
    t = R.tensor(args[0])
    _scalar(args[1], "full_like", "fill_value")
    return t


def _full_like_samples(rng):
    for shape, dtype, fill in [
        ((3,), "float32", np.array(2.5, np.float32)),
        ((2, 2), "int32", np.array(-3.9, np.float32)),
        ((0,), "float16", np.array(1, np.int64)),
        ((), "bool", np.array(0.0)),
    ]:
        yield Sample([random_array(rng, shape, dtype), fill])


register(
    OpDef(
        "full_like",
        _full_like_rel,
        lambda xs, a: full_array(xs[1], xs[0].shape, dt.from_numpy(xs[0].dtype)),
        OpPattern.ELEMWISE,
        None,
        (2, 2),
        "full_like(data, fill_value): data's shape and dtype, filled with the scalar",
        samples=_full_like_samples,
    )
)
declare(
    "full_like",
    lower=Rule("relay_core.te.lower_misc:_full_like"),
    grad=Rule("relay_core.ops.grads_tensor:_full_like"),
)


# -- one_hot --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OneHotAttrs:
    depth: int = 1
    axis: int = -1  # where the new axis goes, in [-(rank + 1), rank]
    dtype: str = "float32"


def one_hot_shape(ishape, depth, axis, op="one_hot") -> tuple:
    nd = len(ishape)
    if not -(nd + 1) <= axis <= nd:
        raise OpTypeError(f"{op}: axis {axis} is out of range for indices of rank {nd}")
    a = axis + nd + 1 if axis < 0 else axis
    return tuple(ishape[:a]) + (depth,) + tuple(ishape[a:])


def _one_hot_check(args, op):
    i = R.tensor(args[0], "indices")
    if not dt.is_int(i.dtype):
        raise OpTypeError(f"{op}: indices must be integers, got {i.dtype}")
    _scalar(args[1], op, "on_value")
    _scalar(args[2], op, "off_value")
    return i


def _one_hot_rel(args, attrs):
    i = _one_hot_check(args, "one_hot")
    if attrs.depth < 0:
        raise OpTypeError(f"one_hot: depth must be >= 0, got {attrs.depth}")
    return TensorType(
        one_hot_shape(i.shape, attrs.depth, attrs.axis), R.dtype_attr(attrs.dtype, "one_hot")
    )


def one_hot_array(idx, on, off, depth: int, axis: int, dtype: str) -> np.ndarray:
    """Out-of-range indices, negatives included, give an all-off row (TVM, TensorFlow)."""
    idx = np.asarray(idx).astype(np.int64)
    a = axis + idx.ndim + 1 if axis < 0 else axis
    classes = np.arange(depth).reshape((depth,) + (1,) * (idx.ndim - a))
    hot = np.expand_dims(idx, a) == classes
    on, off = cast_array(_item(on), dtype), cast_array(_item(off), dtype)
    return np.where(hot, on, off).astype(dt.to_numpy(dtype))


def _one_hot_samples(rng):
    on, off = np.array(5.0, np.float32), np.array(-1.0, np.float32)
    for idx, kw in [
        (np.array([0, 2, 1, 3]), {"depth": 3}),
        (np.array([[1, -1], [0, 4]]), {"depth": 4, "axis": 0}),
        (np.array(2), {"depth": 3}),
        (np.zeros((0, 2), np.int32), {"depth": 2, "axis": 1}),
        (np.array([1, 0]), {"depth": 2, "axis": -2, "dtype": "int32"}),
        (np.array([[0, 1, 2]]), {"depth": 0}),
    ]:
        yield Sample([idx, on, off], kw)


register(
    OpDef(
        "one_hot",
        _one_hot_rel,
        lambda xs, a: one_hot_array(xs[0], xs[1], xs[2], a.depth, a.axis, a.dtype),
        OpPattern.OUT_EWISE_FUSABLE,
        OneHotAttrs,
        (3, 3),
        "one_hot(indices, on_value, off_value): a new axis of size `depth` at `axis` holding "
        "on_value at the index and off_value elsewhere; indices outside [0, depth) are all off",
        samples=_one_hot_samples,
    )
)
declare(
    "one_hot",
    lower=Rule("relay_core.te.lower_misc:_one_hot"),
    grad=Rule("relay_core.ops.grads_tensor:_one_hot"),
)

__all__ = ["arange_array", "full_array", "one_hot_shape", "one_hot_array"]

# -- how each op is computed (JAX lax style: declared beside the ops; a Rule / Kernel names a
# function of relay_core/te or relay_core/backend, imported on first use) ------------------
declare(
    "zeros_like",
    lower=Rule("relay_core.te.lower_misc:_filled", 0, True),
    grad=Rule("relay_core.ops.grads_tensor:nondiff", "zeros_like"),
)
declare(
    "ones_like",
    lower=Rule("relay_core.te.lower_misc:_filled", 1, True),
    grad=Rule("relay_core.ops.grads_tensor:nondiff", "ones_like"),
)
