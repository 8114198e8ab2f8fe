"""How Relay operators become tensor expressions: registration and shared helpers.

Each `lower_<family>.py` module fills `OpDef.lower` for its family with a function
`lower(inputs: list[Tensor], attrs, out_type) -> Tensor | tuple[Tensor, ...]`; importing
relay_core.te imports them all (relay_core/te/__init__.py).
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.types import TensorType, TupleType
from ..ops.registry import Elementwise, lookup
from . import expr as E
from .expr import INDEX, PrimExpr, Var, const_value, eq, select
from .tensor import Tensor, compute


def register_lower(*names: str):
    """Decorator: `fn` is the lowering of the named ops (each must be registered)."""

    def wrap(fn: Callable) -> Callable:
        for n in names:
            lookup(n).lower = fn
        return fn

    return wrap


def mark_view(*names: str) -> None:
    """These ops only reinterpret their first input's data (reshape, squeeze, ...): the
    backend may alias the result to the input instead of copying."""
    for n in names:
        lookup(n).view = True


def mark_batch_axis0(names, pred: Callable = lambda attrs: True) -> None:
    """Axis 0 of these ops' first input and of their output is an independent batch axis
    (when `pred(attrs)`): a kernel for one element can serve a run-time batch."""
    for n in names:
        lookup(n).batch_axis0 = pred


def rule_of(opdef):
    """The lowering rule of an op, `(inputs, attrs, out_type) -> Tensor(s)`, or None: its
    `lower`, with a declarative spec (`Elementwise`) turned into a rule."""
    lower = opdef.lower
    if isinstance(lower, Elementwise):
        fn, name = lower.fn, opdef.name

        def rule(inputs, attrs, out_type):
            x = inputs[0]
            return compute(x.shape, lambda *i: fn(x[i], E), name)

        return rule
    return lower


def set_lower(name: str, fn: Callable) -> None:
    lookup(name).lower = fn


# ---------------------------------------------------------------------------------------------
# Shapes.


def dim_equal(a, b) -> bool:
    """Statically known to be equal."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return a is b


def broadcast_dim(a, b):
    if isinstance(a, int) and a == 1:
        return b
    if isinstance(b, int) and b == 1:
        return a
    if isinstance(a, int):
        return a
    if isinstance(b, int):
        return b
    if a is b:
        return a
    return select(eq(a, 1), b, a)


def broadcast_shape(*shapes) -> tuple:
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(nd):
        d = 1
        for s in shapes:
            k = i - nd + len(s)
            if k >= 0:
                d = broadcast_dim(d, s[k])
        out.append(d)
    return tuple(out)


def out_shape(out_type, computed: tuple) -> tuple:
    """Static dims of the Relay type where known, else the computed expressions."""
    if isinstance(out_type, TensorType) and len(out_type.shape) == len(computed):
        return tuple(d if isinstance(d, int) else c for d, c in zip(out_type.shape, computed))
    return tuple(computed)


def broadcast_read(t: Tensor, idx: tuple) -> PrimExpr:
    """`t` read at output indices `idx` under numpy broadcasting (t aligned to the right)."""
    off = len(idx) - t.ndim
    sub = []
    for k, d in enumerate(t.shape):
        i = idx[off + k]
        if isinstance(d, int):
            sub.append(0 if d == 1 else i)
        else:
            sub.append(select(eq(d, 1), 0, i))
    return t[tuple(sub)]


def type_shape(t) -> tuple:
    return t.shape if isinstance(t, TensorType) else ()


def out_dtypes(out_type) -> list[str]:
    if isinstance(out_type, TupleType):
        return [f.dtype for f in out_type.fields]
    return [out_type.dtype]


def is_static_one(d) -> bool:
    return isinstance(d, int) and d == 1


def shape_var(name: str) -> Var:
    return Var(name, INDEX)


def as_int(d):
    """The int value of a dim (int or immediate), else None."""
    if isinstance(d, int):
        return d
    return const_value(d)
