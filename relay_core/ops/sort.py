"""Sorting: topk, sort, argsort, unique.

Sorting is always stable: equal values keep their index order in both directions (ONNX TopK:
"the lower index first"). NaN sorts as the largest value (last ascending, first descending).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType, TupleType
from . import relations as R
from .factories import check_kind, random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


def _computable(x: np.ndarray) -> np.ndarray:
    src = dt.from_numpy(x.dtype)
    cd = dt.compute_dtype(src)
    return x if cd == src else x.astype(dt.to_numpy(cd))


def sort_indices(x: np.ndarray, axis: int, ascending: bool) -> np.ndarray:
    """Stable argsort along `axis`; descending keeps ties in index order too."""
    x = _computable(np.asarray(x))
    if ascending:
        return np.argsort(x, axis=axis, kind="stable")
    # A stable ascending sort of the reversed axis, read backwards, is a stable descending sort.
    idx = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    return x.shape[axis] - 1 - idx


def _sorted_samples(rng):
    for dtype in ["float32", "int32", "int8", "float16", "bool"]:
        for shape in [(1,), (7,), (3, 5), (2, 3, 4), (0, 3), (4, 0)]:
            yield random_array(rng, shape, dtype, (-2, 2))  # few distinct values: ties
    yield np.array([1.0, np.nan, -np.inf, 3.0, np.nan, 0.0], np.float32)


def _sort_check(args, attrs, op):
    t = R.tensor(args[0])
    check_kind(t, "any", op)
    if t.ndim == 0:
        raise OpTypeError(f"{op} needs a tensor of rank >= 1")
    return t, R.normalize_axis(attrs.axis, t.ndim)


# -- sort / argsort -------------------------------------------------------------------------------
@dataclass(frozen=True)
class SortAttrs:
    axis: int = -1
    is_ascend: bool = True
    dtype: str = "int64"  # argsort's index dtype


def _sort_rel(args, attrs):
    return _sort_check(args, attrs, "sort")[0]


def _argsort_rel(args, attrs):
    t, _ = _sort_check(args, attrs, "argsort")
    return TensorType(t.shape, R.dtype_attr(attrs.dtype, "argsort"))


def _sort(xs, attrs):
    x = xs[0]
    return np.take_along_axis(x, sort_indices(x, attrs.axis, attrs.is_ascend), attrs.axis)


def _argsort(xs, attrs):
    return sort_indices(xs[0], attrs.axis, attrs.is_ascend).astype(dt.to_numpy(attrs.dtype))


def _sort_samples(rng):
    for x in _sorted_samples(rng):
        yield Sample([x], {})
        yield Sample([x], {"axis": 0, "is_ascend": False})
        yield Sample([x], {"dtype": "int32"})


register(
    OpDef(
        "sort",
        _sort_rel,
        _sort,
        OpPattern.OPAQUE,
        SortAttrs,
        (1, 1),
        "sort along `axis` (stable; NaN last ascending)",
        samples=_sort_samples,
    )
)
declare(
    "sort",
    lower=Rule("relay_core.backend.lower_loops:_sort"),
    grad=Rule("relay_core.ops.grads_tensor:_sort"),
)
register(
    OpDef(
        "argsort",
        _argsort_rel,
        _argsort,
        OpPattern.OPAQUE,
        SortAttrs,
        (1, 1),
        "indices that sort along `axis` (stable: ties in index order either way)",
        samples=_sort_samples,
    )
)
declare("argsort", lower=Rule("relay_core.backend.lower_loops:_argsort"))


# -- topk -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TopKAttrs:
    k: int = 1  # k < 1: the whole axis
    axis: int = -1
    ret_type: str = "both"  # "both": (values, indices); "values"; "indices"
    is_ascend: bool = False  # False: the k largest; True: the k smallest
    dtype: str = "int64"  # index dtype


def topk_type(t: TensorType, k, attrs, op="topk"):
    """The result type of topk with `k` (an int, or Any when only known at run time)."""
    ax = R.normalize_axis(attrs.axis, t.ndim)
    if attrs.ret_type not in ("both", "values", "indices"):
        raise OpTypeError(f"{op}: ret_type must be both, values or indices, got {attrs.ret_type!r}")
    dim = t.shape[ax]
    if isinstance(k, int) and k < 1:
        k = dim
    elif isinstance(k, int) and isinstance(dim, int) and k > dim:
        raise OpTypeError(f"{op}: k = {k} exceeds the axis size {dim}")
    shape = list(t.shape)
    shape[ax] = k
    values = TensorType(tuple(shape), t.dtype)
    indices = TensorType(tuple(shape), R.dtype_attr(attrs.dtype, op))
    return {"both": TupleType((values, indices)), "values": values, "indices": indices}[
        attrs.ret_type
    ]


def _topk_rel(args, attrs):
    t, _ = _sort_check(args, attrs, "topk")
    return topk_type(t, attrs.k, attrs)


def topk_arrays(x: np.ndarray, k: int, attrs):
    axis = attrs.axis % x.ndim
    k = x.shape[axis] if k < 1 else k
    idx = np.take(sort_indices(x, axis, attrs.is_ascend), np.arange(k), axis=axis)
    values = np.take_along_axis(x, idx, axis)
    idx = idx.astype(dt.to_numpy(attrs.dtype))
    return {"both": (values, idx), "values": values, "indices": idx}[attrs.ret_type]


def _topk_samples(rng):
    for x in _sorted_samples(rng):
        n = x.shape[-1]
        yield Sample([x], {"k": min(2, n)} if n else {"k": 0})
        yield Sample([x], {"k": 0, "ret_type": "values"})
        yield Sample(
            [x],
            {
                "k": min(3, x.shape[0]) or 0,
                "axis": 0,
                "is_ascend": True,
                "ret_type": "indices",
                "dtype": "int32",
            },
        )
    # k well below the axis: the runtime selects instead of sorting; ties and NaN at the border
    for dtype in ["float32", "int8", "float16"]:
        x = random_array(rng, (3, 110), dtype, (-3, 3))  # > 300: no finite differences
        x = np.round(x * 2) / np.asarray(2, x.dtype)  # a few distinct values: ties
        yield Sample([x], {"k": 9})
        yield Sample([x.T.copy()], {"k": 6, "axis": 0, "is_ascend": True})
    x = random_array(rng, (80,), "float32", (-1, 1))
    x[[3, 40, 41]] = np.nan
    x[[7, 9]] = np.inf
    yield Sample([x], {"k": 4})
    yield Sample([x], {"k": 5, "is_ascend": True})


register(
    OpDef(
        "topk",
        _topk_rel,
        lambda xs, a: topk_arrays(xs[0], a.k, a),
        OpPattern.OPAQUE,
        TopKAttrs,
        (1, 1),
        "the k largest (or smallest) values along `axis`, sorted, with their indices; ties: "
        "the lower index first (ONNX TopK)",
        samples=_topk_samples,
    )
)
declare(
    "topk",
    lower=Rule("relay_core.backend.lower_loops:_topk"),
    grad=Rule("relay_core.ops.grads_tensor:_topk"),
)


# -- unique ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UniqueAttrs:
    axis: int | None = None  # None: over the flattened tensor; else unique slices along it
    sorted: bool = True  # False: in order of first occurrence


def _unique_rel(args, attrs):
    t = R.tensor(args[0])
    check_kind(t, "any", "unique")
    i64 = "int64"
    if attrs.axis is None:
        y = TensorType((Any,), t.dtype)
        n = R.prod(t.shape)
    else:
        if t.ndim == 0:
            raise OpTypeError("unique: a scalar has no axis")
        ax = R.normalize_axis(attrs.axis, t.ndim)
        shape = list(t.shape)
        shape[ax], n = Any, t.shape[ax]
        y = TensorType(tuple(shape), t.dtype)
    return TupleType((y, TensorType((Any,), i64), TensorType((n,), i64), TensorType((Any,), i64)))


def unique_arrays(x: np.ndarray, axis, keep_sorted: bool):
    """ONNX Unique: (values, first indices, inverse indices, counts)."""
    x = np.asarray(x)
    xc = _computable(x)
    if axis is None:
        xc = xc.reshape(-1)
        axis = 0
    axis = axis % xc.ndim
    if xc.shape[axis] == 0:
        e = np.zeros(0, np.int64)
        return x.reshape(xc.shape), e, e, e
    y, first, inv, counts = np.unique(
        xc, return_index=True, return_inverse=True, return_counts=True, axis=axis
    )
    inv = inv.reshape(-1)
    if not keep_sorted:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        first, counts, inv = first[order], counts[order], rank[inv]
    xs = x.reshape(xc.shape)
    y = np.take(xs, first, axis=axis)
    return y, first.astype(np.int64), inv.astype(np.int64), counts.astype(np.int64)


def _unique_samples(rng):
    for dtype in ["float32", "int64", "bool"]:
        for shape in [(), (1,), (9,), (3, 4), (0,)]:
            x = random_array(rng, shape, dtype, (-2, 2))
            yield Sample([x], {})
            yield Sample([x], {"sorted": False})
    x = np.array([[1, 0, 1], [2, 3, 2], [1, 0, 1], [0, 0, 0]], np.int32)
    for axis in (0, 1, -1):
        yield Sample([x], {"axis": axis})
        yield Sample([x], {"axis": axis, "sorted": False})
    yield Sample([np.zeros((0, 3), np.float32)], {"axis": 0})


register(
    OpDef(
        "unique",
        _unique_rel,
        lambda xs, a: unique_arrays(xs[0], a.axis, a.sorted),
        OpPattern.OPAQUE,
        UniqueAttrs,
        (1, 1),
        "unique(data) -> (values, first-occurrence indices, inverse indices, counts), int64 "
        "indices, as ONNX Unique",
        data_dependent_shape=True,
        samples=_unique_samples,
    )
)
declare(
    "unique",
    lower=Rule("relay_core.backend.lower_select:_unique"),
    grad=Rule("relay_core.ops.grads_tensor:_unique"),
)

__all__ = ["sort_indices", "topk_type", "topk_arrays", "unique_arrays"]
