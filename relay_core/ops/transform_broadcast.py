"""Replicating and reordering elements: broadcast_to, broadcast_to_like, tile, repeat, reverse,
meshgrid.

The shape rules (`tile_shape`) and `broadcast_array` work on dims that may be `Any`; the static
ops here and their dyn.* twins share them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OpTypeError
from ..ir.types import TensorType, TupleType
from . import relations as R
from .factories import random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register
from .transform_concat import AxisAttrs
from .transform_reshape import as_contiguous


@dataclass(frozen=True)
class BroadcastToAttrs:
    shape: tuple[int, ...] = ()


def _bcast_rel(args, attrs):
    t = R.tensor(args[0])
    if any(d < 0 for d in attrs.shape):
        raise OpTypeError(f"broadcast_to: negative dim in {attrs.shape}")
    return TensorType(R.broadcast_shapes(t.shape, attrs.shape), t.dtype)


def broadcast_array(x: np.ndarray, shape) -> np.ndarray:
    """Bidirectional broadcast (ONNX Expand): the result has shape broadcast(x.shape, shape)."""
    return as_contiguous(np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(shape))))


def _bcast_samples(rng):
    for shape, target in [
        ((), (3,)),
        ((1,), (2, 4)),
        ((3, 1), (3, 5)),
        ((3, 1), (2, 1, 6)),
        ((3, 4), (4,)),
        ((3, 4), ()),
        ((1, 2), (0, 2)),
        ((2, 1), (1, 1)),
    ]:
        yield Sample([random_array(rng, shape, "float32")], {"shape": target})


register(
    OpDef(
        "broadcast_to",
        _bcast_rel,
        lambda xs, a: broadcast_array(xs[0], a.shape),
        OpPattern.BROADCAST,
        BroadcastToAttrs,
        (1, 1),
        "broadcast to `shape`, bidirectionally as ONNX Expand: the result shape is "
        "broadcast(data.shape, shape)",
        samples=_bcast_samples,
    )
)
declare(
    "broadcast_to",
    lower=Rule("relay_core.te.lower_transform:_bcast"),
    grad=Rule("relay_core.ops.grads_tensor:_g_broadcast"),
)


def _bcast_like_rel(args, attrs):
    t, like = R.tensor(args[0]), R.tensor(args[1], "broadcast_type")
    return TensorType(R.broadcast_shapes(t.shape, like.shape), t.dtype)


def _bcast_like_samples(rng):
    for shape, like in [((), (3,)), ((3, 1), (2, 3, 4)), ((4,), (4,)), ((1,), (0,))]:
        yield Sample([random_array(rng, shape, "int32"), random_array(rng, like, "float32")])


register(
    OpDef(
        "broadcast_to_like",
        _bcast_like_rel,
        lambda xs, a: broadcast_array(xs[0], xs[1].shape),
        OpPattern.BROADCAST,
        None,
        (2, 2),
        "broadcast data to the shape of the second argument",
        samples=_bcast_like_samples,
    )
)
declare(
    "broadcast_to_like",
    lower=Rule("relay_core.te.lower_transform:_bcast"),
    grad=Rule("relay_core.ops.grads_tensor:_g_broadcast"),
)


@dataclass(frozen=True)
class TileAttrs:
    reps: tuple[int, ...] = ()


def tile_shape(shape, reps) -> tuple:
    """numpy.tile: the shorter of shape / reps is padded with leading 1s."""
    if any(isinstance(r, int) and r < 0 for r in reps):
        raise OpTypeError(f"tile: negative repeat in {tuple(reps)}")
    n = max(len(shape), len(reps))
    shape = (1,) * (n - len(shape)) + tuple(shape)
    reps = (1,) * (n - len(reps)) + tuple(reps)
    return tuple(R.dim_mul(d, r) for d, r in zip(shape, reps))


def _tile_samples(rng):
    for shape, reps in [
        ((), (3,)),
        ((3,), (2,)),
        ((2, 3), (2, 1)),
        ((2, 3), (3,)),
        ((3,), (2, 2)),
        ((2, 0), (2, 2)),
        ((4,), (0,)),
        ((2, 1, 3), (1, 2, 1)),
    ]:
        yield Sample([random_array(rng, shape, "float32")], {"reps": reps})


register(
    OpDef(
        "tile",
        lambda args, a: TensorType(tile_shape(R.tensor(args[0]).shape, a.reps), args[0].dtype),
        lambda xs, a: as_contiguous(np.tile(xs[0], a.reps)),
        OpPattern.INJECTIVE,
        TileAttrs,
        (1, 1),
        "repeat the whole tensor `reps` times per axis (numpy.tile)",
        samples=_tile_samples,
    )
)
declare(
    "tile",
    lower=Rule("relay_core.te.lower_transform:_tile"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "tile", (0,)),
)


@dataclass(frozen=True)
class RepeatAttrs:
    repeats: int = 1
    axis: int = 0


def _repeat_rel(args, attrs):
    t = R.tensor(args[0])
    if t.ndim == 0:
        raise OpTypeError("repeat needs a tensor of rank >= 1")
    if attrs.repeats < 0:
        raise OpTypeError(f"repeat: repeats must be >= 0, got {attrs.repeats}")
    ax = R.normalize_axis(attrs.axis, t.ndim)
    shape = list(t.shape)
    shape[ax] = R.dim_mul(shape[ax], attrs.repeats)
    return TensorType(tuple(shape), t.dtype)


def _repeat_samples(rng):
    for shape, r, axis in [
        ((3,), 2, 0),
        ((2, 3), 3, -1),
        ((2, 3), 1, 0),
        ((2, 0), 2, 0),
        ((4,), 0, 0),
    ]:
        yield Sample([random_array(rng, shape, "int64")], {"repeats": r, "axis": axis})


register(
    OpDef(
        "repeat",
        _repeat_rel,
        lambda xs, a: np.repeat(xs[0], a.repeats, axis=a.axis),
        OpPattern.BROADCAST,
        RepeatAttrs,
        (1, 1),
        "repeat each element `repeats` times along `axis` (numpy.repeat)",
        samples=_repeat_samples,
    )
)
declare(
    "repeat",
    lower=Rule("relay_core.te.lower_transform:_repeat"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "repeat", (0,)),
)


def _reverse_rel(args, attrs):
    t = R.tensor(args[0])
    if t.ndim == 0:
        raise OpTypeError("reverse needs a tensor of rank >= 1")
    R.normalize_axis(attrs.axis, t.ndim)
    return t


def _reverse_samples(rng):
    for shape, axis in [((1,), 0), ((7,), 0), ((3, 4), -1), ((2, 3, 4), 1), ((0, 2), 0)]:
        yield Sample([random_array(rng, shape, "float32")], {"axis": axis})


register(
    OpDef(
        "reverse",
        _reverse_rel,
        lambda xs, a: as_contiguous(np.flip(xs[0], a.axis)),
        OpPattern.INJECTIVE,
        AxisAttrs,
        (1, 1),
        "reverse the order along `axis`",
        samples=_reverse_samples,
    )
)
declare(
    "reverse",
    lower=Rule("relay_core.te.lower_transform:_reverse"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "reverse", (0,)),
)


# -- meshgrid -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MeshgridAttrs:
    indexing: str = "ij"  # "ij": matrix indexing; "xy": the first two output axes swap


def _meshgrid_rel(args, attrs):
    ts = [R.tensor(a, f"input {i}") for i, a in enumerate(args)]
    if attrs.indexing not in ("ij", "xy"):
        raise OpTypeError(f"meshgrid: indexing must be 'ij' or 'xy', got {attrs.indexing!r}")
    if any(t.ndim > 1 for t in ts):
        raise OpTypeError("meshgrid needs 0-D or 1-D inputs")
    dims = [t.shape[0] if t.ndim else 1 for t in ts]
    if attrs.indexing == "xy" and len(dims) > 1:
        dims[0], dims[1] = dims[1], dims[0]
    return TupleType(tuple(TensorType(tuple(dims), t.dtype) for t in ts))


def _meshgrid_samples(rng):
    for shapes in [[(3,)], [(3,), (4,)], [(2,), (), (5,)], [(0,), (2,)]]:
        for indexing in ("ij", "xy"):
            xs = [random_array(rng, s, d) for s, d in zip(shapes, ["float32", "int32", "float64"])]
            yield Sample(xs, {"indexing": indexing})


register(
    OpDef(
        "meshgrid",
        _meshgrid_rel,
        lambda xs, a: tuple(as_contiguous(g) for g in np.meshgrid(*xs, indexing=a.indexing)),
        OpPattern.INJECTIVE,
        MeshgridAttrs,
        (1, None),
        "coordinate grids from 1-D inputs; returns a tuple",
        samples=_meshgrid_samples,
    )
)
declare(
    "meshgrid",
    lower=Rule("relay_core.te.lower_transform:_meshgrid"),
    grad=Rule("relay_core.ops.grads_tensor:_meshgrid"),
)


__all__ = ["tile_shape", "broadcast_array"]
