"""Shape transforms: reshape, transpose, squeeze / expand_dims, concatenate / split / stack,
broadcast_to, tile, repeat, reverse, meshgrid (strided_slice: transform_slice.py).

The shape rules live in plain functions (`reshape_shape`, `slice_axis`, `tile_shape`, ...) that
work on dims that may be `Any`; the static ops here and their dyn.* twins share them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir.types import Any, TensorType, TupleType
from . import relations as R
from .factories import random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


def as_contiguous(x) -> np.ndarray:
    """A C-contiguous array (views of the input are fine; broadcast views are copied)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy()


# -- reshape --------------------------------------------------------------------------------------
def reshape_shape(shape, newshape, allowzero: bool = False, op: str = "reshape") -> tuple:
    """The result shape of reshaping `shape` (dims may be Any) to `newshape`.

    Special values: 0 copies the input dim at that position (a literal 0 with allowzero), -1 is
    inferred from the element count, and as in TVM -2 copies all remaining dims, -3 merges the
    next two input dims and -4 splits one input dim into the two values that follow it.

    >>> reshape_shape((Any, 3, 4), (0, -1))
    (Any, 12)
    """
    ndim, ns = len(shape), list(newshape)
    out: list = []
    consumed: set[int] = set()  # input dims reproduced by copies: not part of the -1 inference
    explicit: list[int] = []  # output dims given as numbers
    infer_at = None
    i = j = 0
    while j < len(ns):
        v = ns[j]
        if v > 0 or (v == 0 and allowzero):
            out.append(v)
            explicit.append(v)
            i += 1
        elif v == 0:
            if i >= ndim:
                raise OpTypeError(
                    f"{op}: newshape {tuple(ns)} copies dim {i} of a rank-{ndim} input"
                )
            out.append(shape[i])
            consumed.add(i)
            i += 1
        elif v == -1:
            if infer_at is not None:
                raise OpTypeError(f"{op}: newshape {tuple(ns)} has more than one -1")
            infer_at = len(out)
            out.append(None)
            i += 1
        elif v == -2:
            out.extend(shape[i:])
            consumed.update(range(i, ndim))
            i = ndim
        elif v == -3:
            if i + 1 >= ndim:
                raise OpTypeError(f"{op}: -3 in newshape needs two input dims at {i}")
            out.append(R.dim_mul(shape[i], shape[i + 1]))
            consumed.update((i, i + 1))
            i += 2
        elif v == -4:
            if j + 2 >= len(ns) or i >= ndim:
                raise OpTypeError(
                    f"{op}: -4 in newshape needs two values after it and an input dim"
                )
            a, b, d = ns[j + 1], ns[j + 2], shape[i]
            if a == -1 and b == -1 or a < -1 or b < -1:
                raise OpTypeError(f"{op}: -4 split values {a}, {b} are invalid")
            if isinstance(d, int):
                a = d // b if a == -1 and b else a
                b = d // a if b == -1 and a else b
                if a * b != d:
                    raise OpTypeError(f"{op}: cannot split dim {d} into {a} x {b}")
            else:
                a, b = (Any if a == -1 else a), (Any if b == -1 else b)
            out.extend((a, b))
            consumed.add(i)
            i += 1
            j += 2
        else:
            raise OpTypeError(f"{op}: invalid value {v} in newshape {tuple(ns)}")
        j += 1
    rest_in = R.prod([d for k, d in enumerate(shape) if k not in consumed])
    if infer_at is not None:
        den = R.prod(explicit)
        if den == 0:
            raise OpTypeError(f"{op}: cannot infer -1 in {tuple(ns)} next to a zero-sized dim")
        if isinstance(rest_in, int):
            if rest_in % den:
                raise OpTypeError(f"{op}: cannot reshape {tuple(shape)} to {tuple(ns)}")
            out[infer_at] = rest_in // den
        else:
            out[infer_at] = Any
    elif isinstance(R.prod(shape), int) and R.static_ints(out) is not None:
        if R.prod(shape) != R.prod(out):
            raise OpTypeError(
                f"{op}: cannot reshape {tuple(shape)} ({R.prod(shape)} elements) "
                f"to {tuple(out)} ({R.prod(out)} elements)"
            )
    return tuple(out)


@dataclass(frozen=True)
class ReshapeAttrs:
    newshape: tuple[int, ...] = ()
    allowzero: bool = False  # 0 in newshape is a literal 0, not a copy (ONNX allowzero=1)


def _reshape_rel(args, attrs):
    t = R.tensor(args[0])
    return TensorType(reshape_shape(t.shape, attrs.newshape, attrs.allowzero), t.dtype)


def _reshape_ref(xs, attrs):
    x = xs[0]
    return as_contiguous(np.reshape(x, reshape_shape(x.shape, attrs.newshape, attrs.allowzero)))


def _reshape_samples(rng):
    cases = [
        ((), (1,)),
        ((1,), ()),
        ((7,), (7, 1)),
        ((3, 4), (-1,)),
        ((3, 4), (0, -1)),
        ((2, 3, 4), (0, 0, -1)),
        ((2, 3, 4), (4, -1, 2)),
        ((2, 3, 4), (-1, 12)),
        ((0, 3), (3, -1)),
        ((0, 3), (0, 5)),
        ((2, 3, 4), (-2,)),
        ((2, 3, 4), (0, -2)),
        ((2, 3, 4), (-3, 4)),
        ((2, 6), (2, -4, 2, -1)),
        ((2, 6), (2, -4, -1, 3)),
        ((4, 1), (1, 4)),
    ]
    for dtype in ["float32", "int8"]:
        for shape, ns in cases:
            yield Sample([random_array(rng, shape, dtype)], {"newshape": ns})
    yield Sample([random_array(rng, (0, 3), "float32")], {"newshape": (3, 0), "allowzero": True})
    yield Sample([random_array(rng, (2, 3), "float32")], {"newshape": (3, 2), "allowzero": True})


register(
    OpDef(
        "reshape",
        _reshape_rel,
        _reshape_ref,
        OpPattern.INJECTIVE,
        ReshapeAttrs,
        (1, 1),
        "reshape to `newshape` (0 copies a dim unless allowzero, -1 is inferred; -2 / -3 / -4 "
        "as in TVM)",
        samples=_reshape_samples,
    )
)
declare(
    "reshape",
    lower=Rule("relay_core.te.lower_transform:_reshape"),
    view=True,
    grad=Rule("relay_core.ops.grads_tensor:_like_input", "reshape"),
)


@dataclass(frozen=True)
class ReshapeLikeAttrs:
    lhs_begin: int = 0
    lhs_end: int | None = None
    rhs_begin: int = 0
    rhs_end: int | None = None


def _span(ndim, b, e, what):
    b = b + ndim if b < 0 else b
    e = ndim if e is None else (e + ndim if e < 0 else e)
    if not 0 <= b <= e <= ndim:
        raise OpTypeError(f"reshape_like: {what} range is out of bounds for rank {ndim}")
    return b, e


def _reshape_like_shape(ds, ls, attrs):
    lb, le = _span(len(ds), attrs.lhs_begin, attrs.lhs_end, "lhs")
    rb, re = _span(len(ls), attrs.rhs_begin, attrs.rhs_end, "rhs")
    shape = tuple(ds[:lb]) + tuple(ls[rb:re]) + tuple(ds[le:])
    n_in, n_out = R.prod(ds), R.prod(shape)
    if isinstance(n_in, int) and isinstance(n_out, int) and n_in != n_out:
        raise OpTypeError(f"reshape_like: cannot reshape {tuple(ds)} to {shape}")
    return shape


def _reshape_like_rel(args, attrs):
    t, like = R.tensor(args[0]), R.tensor(args[1], "shape_like")
    return TensorType(_reshape_like_shape(t.shape, like.shape, attrs), t.dtype)


def _reshape_like_samples(rng):
    for ds, ls, kw in [
        ((3, 4), (12,), {}),
        ((2, 6), (4, 3), {}),
        ((2, 3, 4), (12, 9), {"lhs_begin": 1, "rhs_end": 1}),
        ((0, 2), (2, 0), {}),
        ((5,), (1, 5, 1), {}),
    ]:
        yield Sample([random_array(rng, ds, "float32"), random_array(rng, ls, "int32")], kw)


register(
    OpDef(
        "reshape_like",
        _reshape_like_rel,
        lambda xs, a: as_contiguous(
            np.reshape(xs[0], _reshape_like_shape(xs[0].shape, xs[1].shape, a))
        ),
        OpPattern.INJECTIVE,
        ReshapeLikeAttrs,
        (2, 2),
        "reshape dims [lhs_begin, lhs_end) of data to dims [rhs_begin, rhs_end) of shape_like",
        samples=_reshape_like_samples,
    )
)
declare(
    "reshape_like",
    lower=Rule("relay_core.te.lower_transform:_reshape_like"),
    view=True,
    grad=Rule("relay_core.ops.grads_tensor:_like_input", "reshape_like"),
)


# -- transpose, squeeze, expand_dims ------------------------------------------------------------
@dataclass(frozen=True)
class TransposeAttrs:
    axes: tuple[int, ...] | None = None  # None: reverse the axes


def _perm(ndim, axes):
    if axes is None:
        return tuple(range(ndim - 1, -1, -1))
    if len(axes) != ndim:
        raise OpTypeError(f"transpose: axes {tuple(axes)} do not fit a tensor of rank {ndim}")
    return R.normalize_axes(axes, ndim)


def _transpose_rel(args, attrs):
    t = R.tensor(args[0])
    return TensorType(tuple(t.shape[a] for a in _perm(t.ndim, attrs.axes)), t.dtype)


def _transpose_samples(rng):
    for shape, axes in [
        ((), None),
        ((7,), None),
        ((3, 4), None),
        ((3, 4), (1, 0)),
        ((2, 3, 4), (0, 2, 1)),
        ((2, 1, 3, 5), (-1, 0, -2, 1)),
        ((0, 3, 1), (2, 0, 1)),
    ]:
        yield Sample([random_array(rng, shape, "float32")], {"axes": axes})


register(
    OpDef(
        "transpose",
        _transpose_rel,
        lambda xs, a: as_contiguous(np.transpose(xs[0], _perm(xs[0].ndim, a.axes))),
        OpPattern.INJECTIVE,
        TransposeAttrs,
        (1, 1),
        "permute axes (None: reverse them)",
        samples=_transpose_samples,
    )
)
declare(
    "transpose",
    lower=Rule("relay_core.te.lower_transform:_transpose"),
    grad=Rule("relay_core.ops.grads_tensor:_transpose"),
)


@dataclass(frozen=True)
class SqueezeAttrs:
    axis: tuple[int, ...] | None = None  # None: every dim that is statically 1


def squeeze_shape(shape, axis) -> tuple:
    if axis is None:
        # Dims unknown until run time are assumed not to be 1 (as in TVM).
        return tuple(d for d in shape if d != 1)
    axes = R.normalize_axes(axis, len(shape))
    for a in axes:
        if isinstance(shape[a], int) and shape[a] != 1:
            raise OpTypeError(f"squeeze: axis {a} has size {shape[a]}, not 1")
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _squeeze_rel(args, attrs):
    t = R.tensor(args[0])
    return TensorType(squeeze_shape(t.shape, attrs.axis), t.dtype)


def _squeeze_ref(xs, attrs):
    x = xs[0]
    return as_contiguous(np.reshape(x, squeeze_shape(x.shape, attrs.axis)))


def _squeeze_samples(rng):
    for shape, axis in [
        ((1,), (0,)),
        ((1, 3, 1), (0,)),
        ((1, 3, 1), (0, -1)),
        ((3, 1, 4), (1,)),
        ((2, 3), None),
        ((3, 1, 0), (-2,)),
        ((), None),
        ((1, 1), (1, 0)),
    ]:
        yield Sample([random_array(rng, shape, "float32")], {"axis": axis})


register(
    OpDef(
        "squeeze",
        _squeeze_rel,
        _squeeze_ref,
        OpPattern.INJECTIVE,
        SqueezeAttrs,
        (1, 1),
        "remove size-1 axes (None: all dims that are statically 1)",
        samples=_squeeze_samples,
    )
)
declare(
    "squeeze",
    lower=Rule("relay_core.te.lower_transform:_squeeze"),
    view=True,
    grad=Rule("relay_core.ops.grads_tensor:_like_input", "squeeze"),
)


@dataclass(frozen=True)
class ExpandDimsAttrs:
    axis: int = 0  # in [-(rank + 1), rank]
    num_newaxis: int = 1


def expand_dims_shape(shape, axis, num_newaxis=1) -> tuple:
    nd = len(shape)
    if not -(nd + 1) <= axis <= nd:
        raise OpTypeError(f"expand_dims: axis {axis} is out of range for rank {nd}")
    if num_newaxis < 0:
        raise OpTypeError("expand_dims: num_newaxis must be >= 0")
    a = axis + nd + 1 if axis < 0 else axis
    return tuple(shape[:a]) + (1,) * num_newaxis + tuple(shape[a:])


def _expand_rel(args, attrs):
    t = R.tensor(args[0])
    return TensorType(expand_dims_shape(t.shape, attrs.axis, attrs.num_newaxis), t.dtype)


def _expand_samples(rng):
    for shape, axis, n in [
        ((), 0, 1),
        ((3,), -1, 1),
        ((3, 4), 1, 2),
        ((3, 4), -3, 1),
        ((2, 0), 2, 1),
        ((5,), 0, 0),
    ]:
        yield Sample([random_array(rng, shape, "int32")], {"axis": axis, "num_newaxis": n})


register(
    OpDef(
        "expand_dims",
        _expand_rel,
        lambda xs, a: as_contiguous(
            np.reshape(xs[0], expand_dims_shape(xs[0].shape, a.axis, a.num_newaxis))
        ),
        OpPattern.BROADCAST,
        ExpandDimsAttrs,
        (1, 1),
        "insert `num_newaxis` size-1 axes at `axis`",
        samples=_expand_samples,
    )
)
declare(
    "expand_dims",
    lower=Rule("relay_core.te.lower_transform:_expand_dims"),
    view=True,
    grad=Rule("relay_core.ops.grads_tensor:_like_input", "expand_dims"),
)


# -- concatenate, stack, split ------------------------------------------------------------------
@dataclass(frozen=True)
class AxisAttrs:
    axis: int = 0


def _concat_rel(args, attrs):
    ts = [R.tensor(a, f"input {i}") for i, a in enumerate(args)]
    dtype = R.same_dtype(ts, "concatenate inputs")
    nd = ts[0].ndim
    if nd == 0 or any(t.ndim != nd for t in ts):
        raise OpTypeError(f"concatenate needs inputs of one rank >= 1, got {[t.ndim for t in ts]}")
    ax = R.normalize_axis(attrs.axis, nd)
    shape = list(ts[0].shape)
    for t in ts[1:]:
        for i, d in enumerate(t.shape):
            if i == ax:
                shape[i] = R.dim_add(shape[i], d)
            else:
                shape[i] = R.dim_unify(shape[i], d, f"concatenate: dims {i} of the inputs")
    return TensorType(tuple(shape), dtype)


def _concat_samples(rng):
    for dtype in ["float32", "int64", "bool"]:
        for shapes, axis in [
            ([(7,)], 0),
            ([(3,), (4,)], 0),
            ([(2, 3), (2, 1), (2, 5)], -1),
            ([(0, 3), (2, 3)], 0),
            ([(1, 2, 3), (4, 2, 3)], 0),
            ([(2, 3), (2, 0)], 1),
        ]:
            yield Sample([random_array(rng, s, dtype) for s in shapes], {"axis": axis})


register(
    OpDef(
        "concatenate",
        _concat_rel,
        lambda xs, a: np.concatenate(xs, axis=a.axis),
        OpPattern.INJECTIVE,
        AxisAttrs,
        (1, None),
        "concatenate(*xs, axis): join tensors of one rank along an existing axis",
        samples=_concat_samples,
    )
)
declare(
    "concatenate",
    lower=Rule("relay_core.te.lower_transform:_concatenate"),
    grad=Rule("relay_core.ops.grads_tensor:_concatenate"),
)


def _stack_rel(args, attrs):
    ts = [R.tensor(a, f"input {i}") for i, a in enumerate(args)]
    dtype = R.same_dtype(ts, "stack inputs")
    nd = ts[0].ndim
    if any(t.ndim != nd for t in ts):
        raise OpTypeError(f"stack needs inputs of one rank, got {[t.ndim for t in ts]}")
    shape = list(ts[0].shape)
    for t in ts[1:]:
        shape = [R.dim_unify(a, b, "stack: input dims") for a, b in zip(shape, t.shape)]
    shape = list(expand_dims_shape(tuple(shape), attrs.axis))
    ax = attrs.axis + nd + 1 if attrs.axis < 0 else attrs.axis
    shape[ax] = len(ts)
    return TensorType(tuple(shape), dtype)


def _stack_samples(rng):
    for dtype in ["float32", "int32"]:
        for shapes, axis in [
            ([()], 0),
            ([(), ()], -1),
            ([(3,), (3,)], 1),
            ([(2, 3)] * 3, 0),
            ([(2, 3)] * 2, -1),
            ([(0, 2), (0, 2)], 1),
        ]:
            yield Sample([random_array(rng, s, dtype) for s in shapes], {"axis": axis})


register(
    OpDef(
        "stack",
        _stack_rel,
        lambda xs, a: np.stack(xs, axis=a.axis),
        OpPattern.INJECTIVE,
        AxisAttrs,
        (1, None),
        "stack(*xs, axis): join tensors of one shape along a new axis",
        samples=_stack_samples,
    )
)
declare(
    "stack",
    lower=Rule("relay_core.te.lower_transform:_stack"),
    grad=Rule("relay_core.ops.grads_tensor:_stack"),
)


@dataclass(frozen=True)
class SplitAttrs:
    indices_or_sections: int | tuple[int, ...] = 1  # equal sections, or split points
    axis: int = 0


def split_sizes(dim, ios, op="split") -> list:
    """Section sizes along an axis of size `dim` (int sections must divide it)."""
    if isinstance(ios, int):
        if ios < 1:
            raise OpTypeError(f"{op}: the number of sections must be >= 1, got {ios}")
        if isinstance(dim, int):
            if dim % ios:
                raise OpTypeError(f"{op}: axis of size {dim} does not split into {ios} equal parts")
            return [dim // ios] * ios
        return [Any] * ios
    idx = list(ios)
    if any(i < 0 for i in idx) or any(b < a for a, b in zip(idx, idx[1:])):
        raise OpTypeError(f"{op}: split indices must be non-negative and non-decreasing, got {idx}")
    if isinstance(dim, int) and idx and idx[-1] > dim:
        raise OpTypeError(f"{op}: split index {idx[-1]} is beyond the axis size {dim}")
    bounds = [0] + idx
    sizes = [b - a for a, b in zip(bounds, bounds[1:])]
    # The last part runs to the end of the axis.
    sizes.append(dim - bounds[-1] if isinstance(dim, int) else (dim if bounds[-1] == 0 else Any))
    return sizes


def _split_rel(args, attrs):
    t = R.tensor(args[0])
    ax = R.normalize_axis(attrs.axis, t.ndim)
    if t.ndim == 0:
        raise OpTypeError("split needs a tensor of rank >= 1")
    out = []
    for size in split_sizes(t.shape[ax], attrs.indices_or_sections):
        shape = list(t.shape)
        shape[ax] = size
        out.append(TensorType(tuple(shape), t.dtype))
    return TupleType(tuple(out))


def _split_ref(xs, attrs):
    x = xs[0]
    ax = attrs.axis % x.ndim
    sizes = split_sizes(x.shape[ax], attrs.indices_or_sections)
    if isinstance(attrs.indices_or_sections, tuple) and sum(sizes) != x.shape[ax]:
        raise EvalError(f"split indices {attrs.indices_or_sections} exceed axis size {x.shape[ax]}")
    return tuple(as_contiguous(p) for p in np.split(x, np.cumsum(sizes)[:-1], axis=ax))


def _split_samples(rng):
    for shape, ios, axis in [
        ((6,), 3, 0),
        ((7,), 1, 0),
        ((3, 4), (1,), 0),
        ((3, 4), (1, 3), -1),
        ((3, 4), (0, 0, 4), 1),
        ((2, 6, 1), 2, 1),
        ((0, 4), 2, 1),
        ((0, 4), (0,), 0),
        ((5,), (), 0),
    ]:
        yield Sample(
            [random_array(rng, shape, "float32")], {"indices_or_sections": ios, "axis": axis}
        )


register(
    OpDef(
        "split",
        _split_rel,
        _split_ref,
        OpPattern.INJECTIVE,
        SplitAttrs,
        (1, 1),
        "split into equal sections (int) or at the given indices (tuple); returns a tuple",
        samples=_split_samples,
    )
)
declare(
    "split",
    lower=Rule("relay_core.te.lower_transform:_split"),
    grad=Rule("relay_core.ops.grads_tensor:_split"),
)


# -- broadcast_to, tile, repeat, reverse --------------------------------------------------------
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

__all__ = [
    "reshape_shape",
    "squeeze_shape",
    "expand_dims_shape",
    "split_sizes",
    "tile_shape",
    "broadcast_array",
]
