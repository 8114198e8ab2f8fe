"""How Relay operators become tensor expressions: the dispatch (`rule_of`) and shared helpers.

Each `lower_<family>.py` module holds the rules of its family, functions
`lower(inputs: list[Tensor], attrs, out_type) -> Tensor | tuple[Tensor, ...]`. It registers
nothing: each op names its rule in its own declaration (`OpDef.lower = Rule("relay_core.te.
lower_nn_window:_conv", 2)`, relay_core/ops/registry.py), and the module is imported the first
time one of its rules is used.
"""

from __future__ import annotations

from ..ir.types import TensorType, TupleType
from ..ops.registry import Elementwise, Rule
from . import expr as E
from .expr import INDEX, PrimExpr, Var, const_value, eq, select
from .tensor import Tensor, compute


def rule_of(opdef):
    """The lowering rule of an op, `(inputs, attrs, out_type) -> Tensor(s)`, or None: its
    `lower`, with a declarative spec (`Elementwise`) turned into a rule and a lazy reference
    (`Rule`) resolved."""
    lower = opdef.lower
    if isinstance(lower, Rule):
        return lower.resolve()
    if isinstance(lower, Elementwise):
        fn, name = lower.fn, opdef.name

        def rule(inputs, attrs, out_type):
            x = inputs[0]
            return compute(x.shape, lambda *i: fn(x[i], E), name)

        return rule
    return lower


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


def broadcast_read(t: Tensor, idx: tuple, shape: tuple | None = None) -> PrimExpr:
    """`t` read at output indices `idx` under numpy broadcasting (t aligned to the right).
    `shape`, the output's shape when known: a run-time dim of `t` that is the output's own
    dim is read at the index itself (the index is below it, so 0 when it is 1), which keeps
    the read an identity read (a kernel's epilogue can take it)."""
    off = len(idx) - t.ndim
    sub = []
    for k, d in enumerate(t.shape):
        i = idx[off + k]
        if isinstance(d, int):
            sub.append(0 if d == 1 else i)
        elif shape is not None and shape[off + k] is d:
            sub.append(i)
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
