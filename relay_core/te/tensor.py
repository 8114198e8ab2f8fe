"""Tensors of the tensor-expression language: placeholders and compute rules.

    >>> A = placeholder((4, 5), "float32", "A")
    >>> B = compute((4, 5), lambda i, j: A[i, j] * 2.0, "B")
    >>> k = reduce_axis(5, "k")
    >>> S = compute((4,), lambda i: sum(A[i, k], axis=k), "S")

A shape dimension is an int or an int64 `PrimExpr` (a run-time dimension).
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .expr import (
    INDEX,
    Const,
    PrimExpr,
    Read,
    Reduce,
    Var,
    as_expr,
    const_value,
    is_float,
    max_value,
    min_value,
)

_ids = itertools.count()

# Shape variable name -> Var, while a fused group is lowered (relay_core.backend.lower): Relay
# types' named dims (ShapeVar) read as those run-time dims.
_SHAPE_VARS: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "te_shape_vars", default=None
)


# Run-time values used as dimensions (dyn.reshape's shape tensor, a count): a list that the
# lowering of a fused group collects; see value_of.
_VALUE_VARS: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "te_value_vars", default=None
)


@contextlib.contextmanager
def value_vars(sink: list):
    """Collect the Vars created by value_of (as (var, tensor, index) triples) in `sink`."""
    tok = _VALUE_VARS.set(sink)
    try:
        yield sink
    finally:
        _VALUE_VARS.reset(tok)


def value_of(t: Tensor, index=(), dtype: str = INDEX) -> Var:
    """A scalar Var standing for the element `t[index]`, read at run time before the kernel
    runs (a shape that depends on a tensor's values). `t` must be an input of the group or a
    small tensor computed from inputs only."""
    sink = _VALUE_VARS.get()
    if sink is None:
        raise ValueError("value_of is only available while a fused group is lowered")
    index = tuple(int(i) for i in index)
    for v, t2, i2 in sink:
        if t2 is t and i2 == index and v.dtype == dtype:
            return v
    v = Var(f"val{next(_ids)}", dtype)
    sink.append((v, t, index))
    return v


@contextlib.contextmanager
def shape_vars(mapping: dict):
    """Within the block, a Relay ShapeVar named n in a shape stands for mapping[n]."""
    tok = _SHAPE_VARS.set(mapping)
    try:
        yield
    finally:
        _SHAPE_VARS.reset(tok)


@dataclass(frozen=True, slots=True, eq=False)
class ComputeOp:
    axes: tuple  # tuple[Var, ...], one per output dimension
    body: PrimExpr


class Tensor:
    """A placeholder (an input buffer) or the result of a compute rule."""

    __slots__ = ("shape", "dtype", "name", "op", "id", "attrs")

    def __init__(self, shape, dtype: str, name: str, op: ComputeOp | None = None, attrs=None):
        self.shape = tuple(_dim(d) for d in shape)
        self.dtype = dtype
        self.name = name
        self.op = op
        self.id = next(_ids)
        self.attrs = attrs or {}

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_placeholder(self) -> bool:
        return self.op is None

    @property
    def is_reduction(self) -> bool:
        return self.op is not None and type(self.op.body) is Reduce

    @property
    def static_shape(self) -> tuple[int, ...] | None:
        if all(isinstance(d, int) for d in self.shape):
            return self.shape  # type: ignore[return-value]
        return None

    def __getitem__(self, idx) -> PrimExpr:
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) != len(self.shape):
            raise IndexError(f"{self.name} has rank {len(self.shape)}, indexed with {len(idx)}")
        return Read(self, tuple(_index(i) for i in idx), self.dtype)

    def __repr__(self) -> str:
        return f"Tensor({self.name}, {self.shape}, {self.dtype})"


def _dim(d):
    from ..ir.types import AnyDim, ScaledDim, ShapeVar

    if isinstance(d, (ShapeVar, ScaledDim)):
        var = d if isinstance(d, ShapeVar) else d.var
        v = (_SHAPE_VARS.get() or {}).get(var.name)
        if v is None:
            raise ValueError(f"dimension {var.name} is not known to this kernel")
        return v if isinstance(d, ShapeVar) else _dim(v * d.k)
    if isinstance(d, AnyDim):
        from ..errors import UnknownExtentError

        raise UnknownExtentError(
            "a dimension unknown at compile time (?) reached a lowering rule that takes the "
            "output shape from the type; the rule must compute it from its inputs"
        )
    if isinstance(d, PrimExpr):
        c = const_value(d)
        if c is not None:
            return int(c)
        if d.dtype != INDEX:
            from .expr import cast

            d = cast(INDEX, d)
        from .simplify import simplify

        d = simplify(d)  # (n * 4096) // 4096 -> n
        c = const_value(d)
        return int(c) if c is not None else d
    return int(d)


def _index(i) -> PrimExpr:
    if isinstance(i, PrimExpr):
        if i.dtype != INDEX:
            from .expr import cast

            return cast(INDEX, i)
        return i
    return Const(int(i), INDEX)


def placeholder(shape: Sequence, dtype: str = "float32", name: str = "x") -> Tensor:
    """An input tensor."""
    return Tensor(shape, dtype, name)


def compute(shape: Sequence, fn: Callable[..., PrimExpr], name: str = "T", attrs=None) -> Tensor:
    """A tensor whose element at `(i0, i1, ...)` is `fn(i0, i1, ...)`."""
    shape = tuple(shape)
    axes = tuple(Var(f"{name}_i{k}") for k in range(len(shape)))
    body = as_expr(fn(*axes))
    return Tensor(shape, body.dtype, name, ComputeOp(axes, body), attrs)


def const_tensor(value, dtype: str, name: str = "c") -> Tensor:
    """A scalar (shape ()) tensor holding an immediate."""
    return compute(
        (), lambda: Const(value, dtype) if dtype != "bool" else Const(bool(value), dtype), name
    )


def const_array(value, name: str = "table") -> Tensor:
    """A constant tensor holding a numpy array (e.g. resize coefficients), compiled into the
    kernel as read-only data."""
    import numpy as np

    from ..ir import dtype as _dt

    arr = np.ascontiguousarray(value)
    return Tensor(arr.shape, _dt.from_numpy(arr.dtype), name, None, {"const": arr})


def reduce_axis(extent, name: str = "k") -> Var:
    """A reduction axis over `range(extent)`."""
    return Var(f"{name}{next(_ids)}", INDEX, _dim(extent))


def _axes(axis) -> tuple:
    if isinstance(axis, Var):
        return (axis,)
    return tuple(axis)


def _reduce(kind: str, source, axis, where=None, dtype=None, last=False) -> PrimExpr:
    source = as_expr(source)
    axes = _axes(axis)
    for a in axes:
        if not isinstance(a, Var) or a.extent is None:
            raise TypeError("reduction axes must come from reduce_axis()")
    if not axes and where is None and kind not in ("argmax", "argmin"):
        return source
    if where is not None:
        where = as_expr(where, "bool")
    out_dtype = dtype or (INDEX if kind in ("argmax", "argmin") else source.dtype)
    return Reduce(kind, source, axes, where, last, out_dtype)


def sum(source, axis, where=None) -> PrimExpr:  # noqa: A001 - the natural name
    """Sum of `source` over the reduction axes."""
    return _reduce("sum", source, axis, where)


def prod(source, axis, where=None) -> PrimExpr:
    return _reduce("prod", source, axis, where)


def max(source, axis, where=None) -> PrimExpr:  # noqa: A001
    """NaN-propagating maximum (numpy's `max`)."""
    return _reduce("max", source, axis, where)


def min(source, axis, where=None) -> PrimExpr:  # noqa: A001
    return _reduce("min", source, axis, where)


def any(source, axis, where=None) -> PrimExpr:  # noqa: A001
    return _reduce("any", source, axis, where)


def all(source, axis, where=None) -> PrimExpr:  # noqa: A001
    return _reduce("all", source, axis, where)


def argmax(source, axis, last: bool = False) -> PrimExpr:
    """int64 row-major position over `axis` of the (first, or last) maximum; NaN wins."""
    return _reduce("argmax", source, axis, last=last)


def argmin(source, axis, last: bool = False) -> PrimExpr:
    return _reduce("argmin", source, axis, last=last)


def identity(kind: str, dtype: str) -> Const:
    """The starting value of a reduction."""
    if kind == "sum":
        return Const(0.0 if is_float(dtype) else (False if dtype == "bool" else 0), dtype)
    if kind == "prod":
        return Const(1.0 if is_float(dtype) else (True if dtype == "bool" else 1), dtype)
    if kind == "max":
        return min_value(dtype)
    if kind == "min":
        return max_value(dtype)
    if kind == "any":
        return Const(False, "bool")
    if kind == "all":
        return Const(True, "bool")
    raise ValueError(f"reduction {kind} has no identity")


def size(shape) -> PrimExpr | int:
    """Product of dims (an int when static)."""
    out = 1
    for d in shape:
        out = out * d
    return out
