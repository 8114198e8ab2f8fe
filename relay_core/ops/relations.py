"""Shared type relations and shape arithmetic.

A type relation is a pure function `(arg_types, attrs) -> result type`. Argument types are
concrete (TensorType / TupleType, dims may be `Any` or a ShapeVar). Incompatible inputs raise
`OpTypeError` with a message that names the problem; inference adds the op and the call.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import OpTypeError
from ..ir.dtype import check_dtype
from ..ir.types import (
    SYMBOLIC_DIMS,
    Any,
    AnyDim,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    dim_monomial,
    scaled,
)

# ---------------------------------------------------------------------------------------------
# Dimensions.


def dim_eq(a, b) -> bool | None:
    """True / False when known, None when it depends on run-time values."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, SYMBOLIC_DIMS) and a == b:
        return True
    return None


def dim_mul(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 0 or b == 0:
        return 0
    if a == 1:
        return b
    if b == 1:
        return a
    ma, mb = dim_monomial(a), dim_monomial(b)
    if ma and mb and (ma[1] is None or mb[1] is None):  # a constant times a named dim
        return scaled(ma[1] or mb[1], ma[0] * mb[0])
    return Any


def dim_add(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if a == 0:
        return b
    if b == 0:
        return a
    ma, mb = dim_monomial(a), dim_monomial(b)
    if ma and mb and ma[1] is not None and ma[1] == mb[1]:  # n + 2*n
        return scaled(ma[1], ma[0] + mb[0])
    return Any


def dim_div(a, b):
    """a / b when it is exact: ints, a multiple of n by an int (2*n / 2 = n), multiples of the
    same n (4*n / 2*n = 2); Any when it depends on run-time values or is not exact."""
    ma, mb = dim_monomial(a), dim_monomial(b)
    if ma is None or mb is None or mb[0] == 0:
        return Any
    (ka, va), (kb, vb) = ma, mb
    if ka % kb:
        return Any
    if vb is None:
        return ka // kb if va is None else scaled(va, ka // kb)
    return ka // kb if va == vb else Any


def prod(dims: Sequence):
    out = 1
    for d in dims:
        out = dim_mul(out, d)
    return out


def is_int(d) -> bool:
    return isinstance(d, int)


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise OpTypeError(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def normalize_axes(axes, ndim: int, what: str = "axis") -> tuple[int, ...]:
    out = tuple(normalize_axis(a, ndim, what) for a in axes)
    if len(set(out)) != len(out):
        raise OpTypeError(f"repeated {what} in {tuple(axes)}")
    return out


def dim_unify(a, b, what: str = "dimensions"):
    """The dim that two must-be-equal dims have: a static size wins over Any, a conflict raises."""
    if isinstance(a, int) and isinstance(b, int):
        if a != b:
            raise OpTypeError(f"{what} differ: {a} vs {b}")
        return a
    if isinstance(a, int) or isinstance(b, int):
        return a if isinstance(a, int) else b
    if isinstance(a, SYMBOLIC_DIMS):
        return a
    return b


def static_ints(dims: Sequence) -> list[int] | None:
    """The dims as ints when all are static, else None."""
    return list(dims) if all(isinstance(d, int) for d in dims) else None


def dtype_attr(dtype: str, op: str, what: str = "dtype") -> str:
    """Validate a dtype given as an attribute."""
    try:
        return check_dtype(dtype)
    except ValueError as e:
        raise OpTypeError(f"{op}: {what}: {e}") from None


# ---------------------------------------------------------------------------------------------
# Checks.


def tensor(t: Type, what: str = "input") -> TensorType:
    if not isinstance(t, TensorType):
        raise OpTypeError(f"{what} must be a tensor, got {t}")
    return t


def same_dtype(types: Sequence[TensorType], what: str = "inputs") -> str:
    dtypes = {t.dtype for t in types}
    if len(dtypes) > 1:
        raise OpTypeError(f"{what} must have one dtype, got {', '.join(sorted(dtypes))}")
    return types[0].dtype


def broadcast_shapes(*shapes: Sequence) -> tuple:
    """numpy broadcasting over dims that may be Any / ShapeVar."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dims = [s[i - ndim + len(s)] for s in shapes if i - ndim + len(s) >= 0]
        res = 1
        for d in dims:
            if d == 1:
                continue
            if res == 1:
                res = d
            elif isinstance(res, int) and isinstance(d, int):
                if res != d:
                    raise OpTypeError(
                        f"shapes {' and '.join(str(tuple(s)) for s in shapes)} do not broadcast"
                    )
            elif isinstance(res, int) or isinstance(d, int):
                res = res if isinstance(res, int) else d  # a symbol must equal the known size
            elif dim_eq(res, d) is not True:
                res = Any
        out.append(res)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Relations shared by op families.


def rel_identity(args, attrs):
    """The result has the type of the first argument."""
    return tensor(args[0])


def rel_broadcast(args, attrs):
    ts = [tensor(a, f"input {i}") for i, a in enumerate(args)]
    dtype = same_dtype(ts)
    return TensorType(broadcast_shapes(*(t.shape for t in ts)), dtype)


def rel_broadcast_to_bool(args, attrs):
    t = rel_broadcast(args, attrs)
    return TensorType(t.shape, "bool")


def rel_unary_to_bool(args, attrs):
    t = tensor(args[0])
    return TensorType(t.shape, "bool")


def reduce_shape(shape: tuple, axis, keepdims: bool, exclude: bool = False) -> tuple:
    ndim = len(shape)
    if axis is None:
        axes = set(range(ndim))
    else:
        axes = set(normalize_axes(axis if isinstance(axis, (tuple, list)) else (axis,), ndim))
    if exclude:
        axes = set(range(ndim)) - axes
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def rel_reduce(args, attrs):
    """Reduction over `attrs.axis` (None: all) with `keepdims` / `exclude`."""
    t = tensor(args[0])
    shape = reduce_shape(t.shape, attrs.axis, attrs.keepdims, getattr(attrs, "exclude", False))
    return TensorType(shape, t.dtype)


def rel_reduce_index(args, attrs):
    """argmax / argmin: like a reduction, result int64."""
    t = rel_reduce(args, attrs)
    return TensorType(t.shape, "int64")


def tuple_of(*types: Type) -> TupleType:
    return TupleType(tuple(types))


__all__ = [
    "Any",
    "AnyDim",
    "ShapeVar",
    "TensorType",
    "TupleType",
    "OpTypeError",
    "dim_eq",
    "dim_mul",
    "dim_add",
    "prod",
    "is_int",
    "normalize_axis",
    "normalize_axes",
    "dim_unify",
    "static_ints",
    "dtype_attr",
    "tensor",
    "same_dtype",
    "broadcast_shapes",
    "rel_identity",
    "rel_broadcast",
    "rel_broadcast_to_bool",
    "rel_unary_to_bool",
    "reduce_shape",
    "rel_reduce",
    "rel_reduce_index",
    "tuple_of",
]
