"""Indexing: take, gather (elements), gather_nd, scatter_elements, scatter_nd,
reverse_sequence, nonzero / argwhere.

Negative indices in [-n, -1] count from the end (ONNX); indices outside [-n, n - 1] are an error
at run time, except in take's "clip" / "wrap" modes. gather_nd / scatter_nd follow TVM's layout:
the index tuple is the *first* axis of `indices` (shape (M, Y...)), not the last as in ONNX.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType
from . import relations as R
from .factories import check_kind, random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


def normalize_indices(idx: np.ndarray, n: int, what: str = "index") -> np.ndarray:
    """int64 indices with negatives counted from the end; out-of-range raises EvalError."""
    idx = np.asarray(idx).astype(np.int64)
    out = np.where(idx < 0, idx + n, idx)
    if out.size and (out.min() < 0 or out.max() >= n):
        bad = idx[(out < 0) | (out >= n)].flat[0]
        raise EvalError(f"{what} {bad} is out of range for an axis of size {n}")
    return out


def _index_tensor(t, op, what="indices"):
    t = R.tensor(t, what)
    if not dt.is_int(t.dtype):
        raise OpTypeError(f"{op}: {what} must be integers, got {t.dtype}")
    return t


# -- take -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TakeAttrs:
    axis: int | None = None  # None: index the flattened tensor
    batch_dims: int = 0  # leading dims shared by data and indices
    # out-of-range indices: "clip" to the ends, "wrap" around, "fast": negatives count from the
    # end and outside [-n, n) is an error (ONNX), "strict": outside [0, n) is an error (torch, TF)
    mode: str = "clip"


def _take_rel(args, attrs):
    d, i = R.tensor(args[0], "data"), _index_tensor(args[1], "take")
    if attrs.mode not in ("clip", "wrap", "fast", "strict"):
        raise OpTypeError(f"take: mode must be clip, wrap, fast or strict, got {attrs.mode!r}")
    if attrs.axis is None:
        if attrs.batch_dims:
            raise OpTypeError("take: batch_dims needs an axis")
        return TensorType(i.shape, d.dtype)
    if d.ndim == 0:
        raise OpTypeError("take: data must have rank >= 1 when an axis is given")
    ax = R.normalize_axis(attrs.axis, d.ndim)
    bd = attrs.batch_dims + i.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    if not 0 <= bd <= min(ax, i.ndim):
        raise OpTypeError(
            f"take: batch_dims {attrs.batch_dims} must be in [0, min(axis, rank of indices)]"
        )
    batch = [R.dim_unify(a, b, "take: batch dims") for a, b in zip(d.shape[:bd], i.shape[:bd])]
    shape = tuple(batch) + tuple(d.shape[bd:ax]) + tuple(i.shape[bd:]) + tuple(d.shape[ax + 1 :])
    return TensorType(shape, d.dtype)


def _take_indices(idx, n, mode):
    idx = np.asarray(idx).astype(np.int64)
    if mode == "fast":
        return normalize_indices(idx, n)
    if mode == "strict":
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx[(idx < 0) | (idx >= n)].flat[0]
            raise EvalError(f"index {bad} is out of range for an axis of size {n}")
        return idx
    if n == 0:
        if idx.size:
            raise EvalError("take: cannot index an empty axis")
        return idx
    if mode == "wrap":
        return np.mod(idx, n)
    return np.clip(np.where(idx < 0, idx + n, idx), 0, n - 1)


def _take(xs, attrs):
    data, idx = xs
    if attrs.axis is None:
        flat = data.reshape(-1)
        return flat[_take_indices(idx, flat.size, attrs.mode)]
    ax = attrs.axis % data.ndim
    bd = attrs.batch_dims % idx.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    idx = _take_indices(idx, data.shape[ax], attrs.mode)
    if bd == 0:
        return np.take(data, idx, axis=ax)
    # One take per batch element; fine for a reference.
    batch = data.shape[:bd]
    nb = int(np.prod(batch))
    d2 = data.reshape((nb,) + data.shape[bd:])
    i2 = idx.reshape((nb,) + idx.shape[bd:])
    rest = data.shape[bd:ax] + idx.shape[bd:] + data.shape[ax + 1 :]
    out = np.empty((nb,) + rest, data.dtype)
    for b in range(nb):
        out[b] = np.take(d2[b], i2[b], axis=ax - bd)
    return out.reshape(batch + rest)


def _take_samples(rng):
    x = random_array(rng, (4, 5, 3), "float32")
    for idx, kw in [
        (np.array([0, 3, -1, 2]), {"axis": 0, "mode": "fast"}),
        (np.array([[0, 3], [1, 2]]), {"axis": 0, "mode": "strict"}),
        (np.array([[1, -5], [4, 0]]), {"axis": 1, "mode": "fast"}),
        (np.array(2), {"axis": -1}),
        (np.array([7, -9, 2]), {"axis": 1, "mode": "clip"}),
        (np.array([7, -9, 2]), {"axis": 1, "mode": "wrap"}),
        (np.array([5, -60, 59]), {}),
        (np.zeros((0, 2), np.int64), {"axis": 2}),
        (np.array([[1, 2], [0, 0], [4, 1], [3, 3]]), {"axis": 1, "batch_dims": 1}),
        (np.array([[0, 2], [2, 1], [1, 1], [0, 0]]), {"axis": 2, "batch_dims": -1}),
    ]:
        for idt in (np.int64, np.int32):
            yield Sample([x, idx.astype(idt)], kw)
    yield Sample([random_array(rng, (0, 3), "int32"), np.zeros(2, np.int64)], {"axis": 1})
    yield Sample([random_array(rng, (7,), "bool"), np.array([[6, 0]], np.int32)], {"axis": 0})


register(
    OpDef(
        "take",
        _take_rel,
        _take,
        OpPattern.INJECTIVE,
        TakeAttrs,
        (2, 2),
        "take(data, indices): gather slices along `axis` (None: of the flattened data); "
        "negative indices count from the end; out-of-range ones clip, wrap or (fast, strict) "
        "are errors",
        samples=_take_samples,
    )
)
declare(
    "take",
    lower=Rule("relay_core.te.lower_transform:_take"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "take", (0,)),
)


# -- gather (elements) --------------------------------------------------------------------------
@dataclass(frozen=True)
class GatherAttrs:
    axis: int = 0
    mode: str = "fast"  # "fast": negatives count from the end (ONNX); "strict": [0, n) (torch)


def _gather_rel(args, attrs):
    d, i = R.tensor(args[0], "data"), _index_tensor(args[1], "gather")
    if d.ndim == 0 or d.ndim != i.ndim:
        raise OpTypeError(
            f"gather needs data and indices of one rank >= 1, got {d.ndim} and {i.ndim}"
        )
    if attrs.mode not in ("fast", "strict"):
        raise OpTypeError(f"gather: mode must be fast or strict, got {attrs.mode!r}")
    ax = R.normalize_axis(attrs.axis, d.ndim)
    for k, (a, b) in enumerate(zip(d.shape, i.shape)):
        if k != ax and isinstance(a, int) and isinstance(b, int) and b > a:
            raise OpTypeError(f"gather: indices dim {k} ({b}) exceeds the data dim ({a})")
    return TensorType(i.shape, d.dtype)


def _grid(shape, axis, idx):
    g = list(np.ogrid[tuple(slice(0, s) for s in shape)]) if shape else []
    g[axis] = idx
    return tuple(g)


def _gather(xs, attrs):
    data, idx = xs
    ax = attrs.axis % data.ndim
    idx = _take_indices(idx, data.shape[ax], attrs.mode)
    return np.asarray(data[_grid(idx.shape, ax, idx)])


def _gather_samples(rng):
    x = random_array(rng, (3, 4, 2), "float32")
    for shape, axis in [
        ((3, 4, 2), 0),
        ((2, 4, 1), 1),
        ((3, 1, 2), -1),
        ((3, 0, 2), 1),
        ((1, 6, 2), 1),
    ]:
        n = x.shape[axis]
        idx = rng.integers(-n, n, size=shape)
        yield Sample([x, idx], {"axis": axis})
    yield Sample([random_array(rng, (5,), "int8"), np.array([4, -5, 0], np.int32)], {})
    yield Sample([x, rng.integers(0, 3, size=(3, 4, 2))], {"axis": 0, "mode": "strict"})


register(
    OpDef(
        "gather",
        _gather_rel,
        _gather,
        OpPattern.INJECTIVE,
        GatherAttrs,
        (2, 2),
        "gather(data, indices): out[i][j][k] = data[i][indices[i][j][k]][k] for axis=1 "
        "(ONNX GatherElements, torch.gather); indices may be smaller than data off the axis",
        samples=_gather_samples,
    )
)
declare(
    "gather",
    lower=Rule("relay_core.te.lower_transform:_gather"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "gather", (0,)),
)


# -- gather_nd ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GatherNDAttrs:
    batch_dims: int = 0
    index_rank: int | None = None  # M, when indices.shape[0] is not static
    index_mode: str = "fast"  # "fast": negatives count from the end (ONNX); "strict": [0, n) (TF)


def _check_index_mode(mode, op):
    if mode not in ("fast", "strict"):
        raise OpTypeError(f"{op}: index_mode must be fast or strict, got {mode!r}")


def _index_depth(i, index_rank, op):
    m = i.shape[0]
    if not isinstance(m, int):
        if index_rank is None:
            raise OpTypeError(f"{op}: indices.shape[0] is unknown; give index_rank")
        m = index_rank
    elif index_rank is not None and index_rank != m:
        raise OpTypeError(f"{op}: index_rank {index_rank} differs from indices.shape[0] = {m}")
    return m


def _gather_nd_rel(args, attrs):
    d, i = R.tensor(args[0], "data"), _index_tensor(args[1], "gather_nd")
    if i.ndim < 1:
        raise OpTypeError("gather_nd needs indices of rank >= 1")
    _check_index_mode(attrs.index_mode, "gather_nd")
    m, b = _index_depth(i, attrs.index_rank, "gather_nd"), attrs.batch_dims
    if m < 1 or b < 0 or b + m > d.ndim or b >= i.ndim:
        raise OpTypeError(
            f"gather_nd: index depth {m} with {b} batch dims does not fit data of rank {d.ndim}"
        )
    batch = [
        R.dim_unify(x, y, "gather_nd: batch dims") for x, y in zip(d.shape[:b], i.shape[1 : 1 + b])
    ]
    return TensorType(tuple(batch) + tuple(i.shape[1 + b :]) + tuple(d.shape[b + m :]), d.dtype)


def _coords(data, idx, b, mode="fast"):
    """Advanced-index tuple for TVM-layout indices (M, B..., Y...) with b batch dims."""
    m = idx.shape[0]
    lead = idx.shape[1:]  # (B..., Y...)
    coords = []
    for j in range(b):
        shape = [1] * len(lead)
        shape[j] = data.shape[j]
        coords.append(np.arange(data.shape[j]).reshape(shape))
    for k in range(m):
        coords.append(_take_indices(idx[k], data.shape[b + k], mode))
    return tuple(coords), lead


def _gather_nd(xs, attrs):
    data, idx = xs
    coords, _ = _coords(data, idx, attrs.batch_dims, attrs.index_mode)
    return np.asarray(data[coords])


def _gather_nd_samples(rng):
    x = random_array(rng, (3, 4, 5), "float32")
    for idx, b in [
        (np.array([[0, 2, -1], [1, 3, 0]]), 0),
        (np.array([[2], [-4]]), 0),
        (np.array([[[1, 0]]]), 0),
        (np.array([0, 2, 1]), 0),
        (np.array([[1, 0, 3]]), 1),
        (np.array([[[1, 2], [0, 0], [3, 3]]]), 1),
        (np.array([[[1], [2], [0]], [[4], [0], [2]]]), 1),
        (np.zeros((2, 0), np.int64), 0),
    ]:
        yield Sample([x, idx], {"batch_dims": b, "index_rank": idx.shape[0]})
    yield Sample([x, np.array([[0, 2], [1, 3]])], {"index_rank": 2, "index_mode": "strict"})


register(
    OpDef(
        "gather_nd",
        _gather_nd_rel,
        _gather_nd,
        OpPattern.INJECTIVE,
        GatherNDAttrs,
        (2, 2),
        "gather_nd(data, indices): indices has shape (M, B..., Y...) (TVM layout: the index "
        "tuple first); the result has shape (B..., Y..., data.shape[B + M:])",
        samples=_gather_nd_samples,
    )
)
declare(
    "gather_nd",
    lower=Rule("relay_core.te.lower_transform:_gather_nd"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "gather_nd", (0,)),
)


# -- scatter_elements / scatter_nd ----------------------------------------------------------------
_REDUCERS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _check_reduction(r, op):
    if r not in ("update", "none") and r not in _REDUCERS:
        raise OpTypeError(f"{op}: reduction must be update, add, mul, min or max, got {r!r}")


def _apply(out, coords, updates, reduction):
    if reduction in ("update", "none"):
        out[coords] = updates  # duplicates: the last one wins
    else:
        _REDUCERS[reduction].at(out, coords, updates)


@dataclass(frozen=True)
class ScatterElementsAttrs:
    axis: int = 0
    reduction: str = "update"  # update (ONNX "none"), add, mul, min, max
    index_mode: str = "fast"  # "fast": negatives count from the end (ONNX); "strict": [0, n)


def _scatter_el_rel(args, attrs):
    d, i = R.tensor(args[0], "data"), _index_tensor(args[1], "scatter_elements")
    u = R.tensor(args[2], "updates")
    _check_reduction(attrs.reduction, "scatter_elements")
    _check_index_mode(attrs.index_mode, "scatter_elements")
    if u.dtype != d.dtype:
        raise OpTypeError(f"scatter_elements: updates dtype {u.dtype} differs from data {d.dtype}")
    if d.ndim == 0 or i.ndim != d.ndim or u.ndim != d.ndim:
        raise OpTypeError("scatter_elements needs data, indices and updates of one rank >= 1")
    R.normalize_axis(attrs.axis, d.ndim)
    for a, b in zip(i.shape, u.shape):
        R.dim_unify(a, b, "scatter_elements: indices and updates shapes")
    return d


def _scatter_el(xs, attrs):
    data, idx, upd = xs
    ax = attrs.axis % data.ndim
    out = data.copy()
    idx = _take_indices(idx, data.shape[ax], attrs.index_mode)
    _apply(out, _grid(idx.shape, ax, idx), upd, attrs.reduction)
    return out


def _scatter_el_samples(rng):
    x = random_array(rng, (3, 4), "float32")
    for red in ("update", "add", "mul", "min", "max"):
        for ishape, axis in [((3, 4), 0), ((2, 3), 1), ((1, 2), -1), ((0, 4), 0)]:
            n = x.shape[axis]
            idx = rng.integers(-n, n, size=ishape)
            yield Sample(
                [x, idx, random_array(rng, ishape, "float32")], {"axis": axis, "reduction": red}
            )
    yield Sample(
        [np.zeros(5, np.int32), np.array([1, 1, -1]), np.array([2, 3, 4], np.int32)],
        {"reduction": "add"},
    )
    yield Sample(
        [np.zeros(5, np.int32), np.array([1, 1, 4]), np.array([2, 3, 4], np.int32)],
        {"reduction": "add", "index_mode": "strict"},
    )


register(
    OpDef(
        "scatter_elements",
        _scatter_el_rel,
        _scatter_el,
        OpPattern.OPAQUE,
        ScatterElementsAttrs,
        (3, 3),
        "scatter_elements(data, indices, updates): a copy of data with out[..idx..] = updates "
        "along `axis` (ONNX ScatterElements); reductions combine with the existing value, in "
        "index order",
        samples=_scatter_el_samples,
    )
)
declare(
    "scatter_elements",
    lower=Rule("relay_core.backend.lower_loops:_scatter_elements"),
    grad=Rule("relay_core.ops.grads_tensor:_scatter_elements"),
)


@dataclass(frozen=True)
class ScatterNDAttrs:
    mode: str = "update"  # update, add, mul, min, max
    index_mode: str = "fast"  # "fast": negatives count from the end (ONNX); "strict": [0, n) (TF)


def _scatter_nd_rel(args, attrs):
    d, i = R.tensor(args[0], "data"), _index_tensor(args[1], "scatter_nd")
    u = R.tensor(args[2], "updates")
    _check_reduction(attrs.mode, "scatter_nd")
    _check_index_mode(attrs.index_mode, "scatter_nd")
    if u.dtype != d.dtype:
        raise OpTypeError(f"scatter_nd: updates dtype {u.dtype} differs from data {d.dtype}")
    if i.ndim < 1:
        raise OpTypeError("scatter_nd needs indices of rank >= 1")
    m = i.shape[0]
    if isinstance(m, int):
        if not 1 <= m <= d.ndim:
            raise OpTypeError(f"scatter_nd: index depth {m} does not fit data of rank {d.ndim}")
        want = tuple(i.shape[1:]) + tuple(d.shape[m:])
        if len(want) != u.ndim:
            raise OpTypeError(f"scatter_nd: updates must have shape {want}, got {u.shape}")
        for a, b in zip(want, u.shape):
            R.dim_unify(a, b, "scatter_nd: updates shape")
    return d


def _scatter_nd(xs, attrs):
    data, idx, upd = xs
    out = data.copy()
    coords = tuple(
        _take_indices(idx[k], data.shape[k], attrs.index_mode) for k in range(idx.shape[0])
    )
    _apply(out, coords, upd, attrs.mode)
    return out


def _scatter_nd_samples(rng):
    x = random_array(rng, (4, 3, 2), "float32")
    for mode in ("update", "add", "mul", "min", "max"):
        for idx in [
            np.array([[0, 3, -1]]),
            np.array([[1, 2], [0, 2]]),
            np.array([[[0]], [[1]], [[1]]]),
            np.zeros((2, 0), np.int64),
        ]:
            ushape = idx.shape[1:] + x.shape[idx.shape[0] :]
            yield Sample([x, idx, random_array(rng, ushape, "float32")], {"mode": mode})
    idx = np.array([[1, 2], [0, 2]])
    yield Sample(
        [x, idx, random_array(rng, (2, 2), "float32")], {"mode": "add", "index_mode": "strict"}
    )


register(
    OpDef(
        "scatter_nd",
        _scatter_nd_rel,
        _scatter_nd,
        OpPattern.OPAQUE,
        ScatterNDAttrs,
        (3, 3),
        "scatter_nd(data, indices, updates): indices (M, Y...) in TVM layout, updates "
        "(Y..., data.shape[M:]); a copy of data with the addressed slices replaced or combined",
        samples=_scatter_nd_samples,
    )
)
declare(
    "scatter_nd",
    lower=Rule("relay_core.backend.lower_loops:_scatter_nd"),
    grad=Rule("relay_core.ops.grads_tensor:_scatter_nd"),
)


# -- reverse_sequence -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ReverseSequenceAttrs:
    seq_axis: int = 1
    batch_axis: int = 0


def _revseq_rel(args, attrs):
    d, lens = R.tensor(args[0], "data"), _index_tensor(args[1], "reverse_sequence", "seq_lengths")
    if d.ndim < 2 or lens.ndim != 1:
        raise OpTypeError("reverse_sequence needs data of rank >= 2 and 1-D seq_lengths")
    s, b = R.normalize_axis(attrs.seq_axis, d.ndim), R.normalize_axis(attrs.batch_axis, d.ndim)
    if s == b:
        raise OpTypeError("reverse_sequence: seq_axis and batch_axis must differ")
    R.dim_unify(d.shape[b], lens.shape[0], "reverse_sequence: batch size and len(seq_lengths)")
    return d


def _revseq(xs, attrs):
    data, lens = xs
    s, b = attrs.seq_axis % data.ndim, attrs.batch_axis % data.ndim
    out = data.copy()
    for i, n in enumerate(np.asarray(lens).astype(np.int64)):
        if not 0 <= n <= data.shape[s]:
            raise EvalError(f"reverse_sequence: length {n} is out of range [0, {data.shape[s]}]")
        src = [slice(None)] * data.ndim
        src[b], src[s] = i, slice(0, n)
        dst = list(src)
        dst[s] = slice(n - 1, None, -1) if n else slice(0, 0)
        out[tuple(src)] = data[tuple(dst)]
    return out


def _revseq_samples(rng):
    x = random_array(rng, (4, 3, 2), "float32")
    yield Sample([x, np.array([3, 0, 1, 2], np.int32)], {"seq_axis": 1, "batch_axis": 0})
    yield Sample([x, np.array([4, 1, 2])], {"seq_axis": 0, "batch_axis": 1})
    yield Sample([x, np.array([2, 3])], {"seq_axis": 0, "batch_axis": -1})


register(
    OpDef(
        "reverse_sequence",
        _revseq_rel,
        _revseq,
        OpPattern.INJECTIVE,
        ReverseSequenceAttrs,
        (2, 2),
        "reverse_sequence(data, seq_lengths): per batch entry, reverse the first seq_lengths[b] "
        "elements along seq_axis",
        samples=_revseq_samples,
    )
)
declare(
    "reverse_sequence",
    lower=Rule("relay_core.te.lower_transform:_reverse_sequence"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "reverse_sequence", (0,)),
)


# -- nonzero / argwhere ---------------------------------------------------------------------------
def _nonzero_rel(args, attrs):
    t = R.tensor(args[0])
    check_kind(t, "any", "nonzero")
    n = R.prod(t.shape)
    return TensorType((t.ndim, 0 if n == 0 else Any), "int64")


def _nonzero(xs, attrs):
    x = np.asarray(xs[0])
    if x.ndim == 0:
        return np.zeros((0, int(bool(x))), np.int64)
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


def _nonzero_samples(rng):
    for dtype in ["float32", "int32", "bool"]:
        for shape in [(), (1,), (7,), (3, 4), (2, 0, 3), (2, 1, 3)]:
            yield Sample([random_array(rng, shape, dtype, (-1, 1))])
    yield Sample([np.zeros((3, 2), np.float32)])


register(
    OpDef(
        "nonzero",
        _nonzero_rel,
        _nonzero,
        OpPattern.OPAQUE,
        None,
        (1, 1),
        "indices of the non-zero elements, int64 of shape (rank, count), row-major order (ONNX)",
        data_dependent_shape=True,
        samples=_nonzero_samples,
    )
)
declare("nonzero", lower=Rule("relay_core.backend.lower_loops:_nonzero"))


def _argwhere_rel(args, attrs):
    t = _nonzero_rel(args, attrs)
    return TensorType((t.shape[1], t.shape[0]), "int64")


register(
    OpDef(
        "argwhere",
        _argwhere_rel,
        lambda xs, a: np.ascontiguousarray(_nonzero(xs, a).T),
        OpPattern.OPAQUE,
        None,
        (1, 1),
        "indices of the non-zero elements, int64 of shape (count, rank) (tf.where, torch.nonzero)",
        data_dependent_shape=True,
        samples=_nonzero_samples,
    )
)
declare("argwhere", lower=Rule("relay_core.backend.lower_loops:_argwhere"))

__all__ = ["normalize_indices"]
