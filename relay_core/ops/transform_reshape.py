"""Shape transforms that keep the elements in order or permute axes: reshape, reshape_like,
transpose, squeeze, expand_dims (the others: transform_concat.py, transform_broadcast.py,
transform_slice.py, transform_index.py).

The shape rules live in plain functions (`reshape_shape`, `squeeze_shape`, `expand_dims_shape`)
that work on dims that may be `Any`; the static ops here and their dyn.* twins share them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OpTypeError
from ..ir.types import TensorType
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
                a, b = (R.dim_div(d, b) if a == -1 else a), (R.dim_div(d, a) if b == -1 else b)
            out.extend((a, b))
            consumed.add(i)
            i += 1
            j += 2
        else:
            raise OpTypeError(f"{op}: invalid value {v} in newshape {tuple(ns)}")
        j += 1
    rest = [d for k, d in enumerate(shape) if k not in consumed]
    rest_in = R.prod(rest)
    if infer_at is not None:
        den = R.prod(explicit)
        if den == 0:
            raise OpTypeError(f"{op}: cannot infer -1 in {tuple(ns)} next to a zero-sized dim")
        if isinstance(rest_in, int):
            if rest_in % den:
                raise OpTypeError(f"{op}: cannot reshape {tuple(shape)} to {tuple(ns)}")
            out[infer_at] = rest_in // den
        else:
            out[infer_at] = _inferred_var(rest, den)
    elif isinstance(R.prod(shape), int) and R.static_ints(out) is not None:
        if R.prod(shape) != R.prod(out):
            raise OpTypeError(
                f"{op}: cannot reshape {tuple(shape)} ({R.prod(shape)} elements) "
                f"to {tuple(out)} ({R.prod(out)} elements)"
            )
    return tuple(out)


def _inferred_var(rest: list, den: int):
    """The -1 of a reshape whose other input dims are one named dim times static ones: that
    dim times what the static ones leave over the explicit output dims (`x.reshape(-1, 2048)`
    of a (batch, 2048, 1, 1) tensor keeps `batch`; `(-1, 96, 8, 56, 56)` of a
    (batch, 2, 96, 25088) one is `2*batch`), else Any."""
    return R.dim_div(R.prod(rest), den)


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


__all__ = ["as_contiguous", "reshape_shape", "squeeze_shape", "expand_dims_shape"]
