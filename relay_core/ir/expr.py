"""Relay expressions.

Nodes are immutable and compare by identity (`eq=False`), so memo tables keyed by node are O(1).
Structural (alpha) equality is `relay_core.ir.structural.structural_equal`.

After type inference each node carries its type in `checked_type` (a cache, like TVM's
`checked_type_`; it is not part of the node's identity or structure).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any as _Any

import numpy as np

from . import dtype as _dt
from .hooks import lookup_op
from .types import FuncType, GlobalTypeVar, IncompleteType, TensorType, Type, TypeVar


@dataclass(frozen=True, slots=True)
class Span:
    """Where an expression came from: a text position, or a source-model node."""

    source: str = ""  # file name, or the framework ("onnx", "torch", "tf")
    line: int = 0
    column: int = 0
    node: str = ""  # name of the source node that produced this expression
    op: str = ""  # its operator type

    def __str__(self) -> str:
        if self.node:
            return f"{self.node} ({self.op})" if self.op else self.node
        return f"{self.source}:{self.line}:{self.column}"


@dataclass(frozen=True, slots=True, eq=False)
class Expr:
    """Base class of all expressions."""

    span: Span | None = field(default=None, kw_only=True, repr=False)
    _checked_type: Type | None = field(default=None, init=False, repr=False)

    @property
    def checked_type(self) -> Type:
        t = self._checked_type
        if t is None:
            raise ValueError(
                f"{type(self).__name__} has no type yet: run relay_core.infer_type on its module"
            )
        return t

    @property
    def has_type(self) -> bool:
        return self._checked_type is not None

    def _set_type(self, t: Type) -> None:
        object.__setattr__(self, "_checked_type", t)

    def __str__(self) -> str:
        from .printer import expr_to_text

        return expr_to_text(self)

    # Arithmetic sugar for building programs in Python.
    def __add__(self, other):
        return _binop("add", self, other)

    def __radd__(self, other):
        return _binop("add", other, self)

    def __sub__(self, other):
        return _binop("subtract", self, other)

    def __rsub__(self, other):
        return _binop("subtract", other, self)

    def __mul__(self, other):
        return _binop("multiply", self, other)

    def __rmul__(self, other):
        return _binop("multiply", other, self)

    def __truediv__(self, other):
        return _binop("divide", self, other)

    def __neg__(self):
        return Call(Op.get("negative"), (self,))

    def __getitem__(self, index: int):
        return TupleGetItem(self, index)


def _as_expr(x) -> Expr:
    return x if isinstance(x, Expr) else const(x)


def _binop(name: str, a, b) -> Call:
    a, b = _as_expr(a), _as_expr(b)
    if isinstance(a, Constant) and not isinstance(b, Constant) and b.has_type:
        a = _coerce_const(a, b)
    if isinstance(b, Constant) and not isinstance(a, Constant) and a.has_type:
        b = _coerce_const(b, a)
    return Call(Op.get(name), (a, b))


def _coerce_const(c: Constant, other: Expr) -> Constant:
    t = other.checked_type
    if isinstance(t, TensorType) and c.data.ndim == 0 and c.dtype != t.dtype:
        return const(c.data.item(), t.dtype)
    return c


@dataclass(frozen=True, slots=True, eq=False)
class Var(Expr):
    """A local variable: a function parameter, let-bound or pattern-bound name."""

    name_hint: str = "x"
    type_annotation: Type | None = None

    def __repr__(self) -> str:
        return f"Var(%{self.name_hint})"


@dataclass(frozen=True, slots=True, eq=False)
class GlobalVar(Expr):
    """The name of a global function in an IRModule. Compares by name."""

    name_hint: str = "main"

    def __eq__(self, other) -> bool:
        return isinstance(other, GlobalVar) and other.name_hint == self.name_hint

    def __hash__(self) -> int:
        return hash(("GlobalVar", self.name_hint))

    def __repr__(self) -> str:
        return f"GlobalVar(@{self.name_hint})"


@dataclass(frozen=True, slots=True, eq=False)
class Constant(Expr):
    """A constant tensor. The array is made read-only."""

    data: np.ndarray = None  # type: ignore[assignment]

    def __post_init__(self):
        d = self.data
        if not isinstance(d, np.ndarray):
            d = np.asarray(d)
        if d.flags.writeable:  # copy so that later writes to the caller's array cannot leak in
            d = d.copy()
            d.setflags(write=False)
        object.__setattr__(self, "data", d)

    @property
    def dtype(self) -> str:
        return _dt.from_numpy(self.data.dtype)

    @property
    def type(self) -> TensorType:
        return TensorType(self.data.shape, self.dtype)

    def __repr__(self) -> str:
        return f"Constant({self.data.dtype}{list(self.data.shape)})"


class Op(Expr):
    """A primitive operator, by name. Interned: `Op.get("add") is Op.get("add")`."""

    __slots__ = ("name", "_opdef")
    _table: dict[str, Op] = {}

    def __init__(self, name: str):
        object.__setattr__(self, "span", None)
        object.__setattr__(self, "_checked_type", None)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "_opdef", None)

    def __setattr__(self, k, v):
        raise AttributeError("Op is immutable")

    @classmethod
    def get(cls, name: str) -> Op:
        op = cls._table.get(name)
        if op is None:
            lookup_op(name)  # raises a clear error for unknown operators
            op = cls._table[name] = cls(name)
        return op

    @property
    def opdef(self):
        d = self._opdef
        if d is None:
            d = lookup_op(self.name)
            object.__setattr__(self, "_opdef", d)
        return d

    def __repr__(self) -> str:
        return f"Op({self.name})"

    def __reduce__(self):
        return (Op.get, (self.name,))


@dataclass(frozen=True, slots=True, eq=False)
class Call(Expr):
    """`op(args, attrs)`: an operator, a function, a closure or a constructor applied to args.

    `attrs` is the operator's frozen attrs dataclass (None for ops without attributes and for
    calls of functions).
    """

    op: Expr = None  # type: ignore[assignment]
    args: tuple[Expr, ...] = ()
    attrs: _Any = None
    type_args: tuple[Type, ...] = ()

    def __post_init__(self):
        if not isinstance(self.args, tuple):
            object.__setattr__(self, "args", tuple(self.args))


@dataclass(frozen=True, slots=True, eq=False)
class Function(Expr):
    """`fn [type_params](params) -> ret_type { body }`; a closure when it has free variables.

    `attrs` is a dict of function attributes (e.g. {"Primitive": 1} for fused groups); treat it
    as immutable.
    """

    params: tuple[Var, ...] = ()
    body: Expr = None  # type: ignore[assignment]
    ret_type: Type | None = None
    type_params: tuple[TypeVar, ...] = ()
    attrs: dict | None = None

    def __post_init__(self):
        if not isinstance(self.params, tuple):
            object.__setattr__(self, "params", tuple(self.params))
        if not isinstance(self.type_params, tuple):
            object.__setattr__(self, "type_params", tuple(self.type_params))

    def attr(self, key: str, default=None):
        return (self.attrs or {}).get(key, default)

    def with_attr(self, key: str, value) -> Function:
        attrs = dict(self.attrs or {})
        attrs[key] = value
        return Function(
            self.params, self.body, self.ret_type, self.type_params, attrs, span=self.span
        )

    @property
    def func_type_annotation(self) -> FuncType:
        """The function's type from its annotations (IncompleteType where missing)."""
        args = tuple(p.type_annotation or IncompleteType() for p in self.params)
        return FuncType(args, self.ret_type or IncompleteType(), self.type_params)


@dataclass(frozen=True, slots=True, eq=False)
class Let(Expr):
    """`let %var = value; body`. The var is in scope in `value` too (recursive closures)."""

    var: Var = None  # type: ignore[assignment]
    value: Expr = None  # type: ignore[assignment]
    body: Expr = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True, eq=False)
class If(Expr):
    cond: Expr = None  # type: ignore[assignment]
    true_branch: Expr = None  # type: ignore[assignment]
    false_branch: Expr = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True, eq=False)
class Tuple(Expr):
    fields: tuple[Expr, ...] = ()

    def __post_init__(self):
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))


@dataclass(frozen=True, slots=True, eq=False)
class TupleGetItem(Expr):
    tuple_value: Expr = None  # type: ignore[assignment]
    index: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class RefCreate(Expr):
    value: Expr = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True, eq=False)
class RefRead(Expr):
    ref: Expr = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True, eq=False)
class RefWrite(Expr):
    """Stores `value` in `ref`; evaluates to the empty tuple."""

    ref: Expr = None  # type: ignore[assignment]
    value: Expr = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True, eq=False)
class Constructor(Expr):
    """A constructor of an ADT, e.g. `Cons` of `List`. Applied with `Call`."""

    name: str = ""
    inputs: tuple[Type, ...] = ()
    belong_to: GlobalTypeVar = None  # type: ignore[assignment]
    tag: int = 0

    def __post_init__(self):
        if not isinstance(self.inputs, tuple):
            object.__setattr__(self, "inputs", tuple(self.inputs))

    def __repr__(self) -> str:
        return f"Constructor({self.name})"


# ---------------------------------------------------------------------------------------------
# Patterns and match.


class Pattern:
    __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class PatternWildcard(Pattern):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class PatternVar(Pattern):
    var: Var


@dataclass(frozen=True, slots=True, eq=False)
class PatternConstructor(Pattern):
    constructor: Constructor
    patterns: tuple[Pattern, ...] = ()

    def __post_init__(self):
        if not isinstance(self.patterns, tuple):
            object.__setattr__(self, "patterns", tuple(self.patterns))


@dataclass(frozen=True, slots=True, eq=False)
class PatternTuple(Pattern):
    patterns: tuple[Pattern, ...] = ()

    def __post_init__(self):
        if not isinstance(self.patterns, tuple):
            object.__setattr__(self, "patterns", tuple(self.patterns))


@dataclass(frozen=True, slots=True, eq=False)
class Clause:
    lhs: Pattern
    rhs: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Match(Expr):
    """`match (data) { pattern => rhs, ... }`; `complete=False` prints as `match?`."""

    data: Expr = None  # type: ignore[assignment]
    clauses: tuple[Clause, ...] = ()
    complete: bool = True

    def __post_init__(self):
        if not isinstance(self.clauses, tuple):
            object.__setattr__(self, "clauses", tuple(self.clauses))


def pattern_vars(p: Pattern) -> list[Var]:
    """Variables bound by a pattern, left to right."""
    out: list[Var] = []
    stack = [p]
    while stack:
        q = stack.pop()
        if isinstance(q, PatternVar):
            out.append(q.var)
        elif isinstance(q, (PatternConstructor, PatternTuple)):
            stack.extend(reversed(q.patterns))
    return out


# ---------------------------------------------------------------------------------------------
# Builders.


def const(value, dtype: str | None = None) -> Constant:
    """A constant from a Python scalar, sequence or numpy array.

    >>> const(1.0).dtype, const([1, 2], "int64").dtype
    ('float32', 'int64')
    """
    if isinstance(value, np.ndarray) and dtype is None:
        return Constant(value)
    if dtype is None:
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        elif arr.dtype == np.int64 and not isinstance(value, np.ndarray):
            arr = arr.astype(np.int32)
        return Constant(arr)
    return Constant(np.asarray(value).astype(_dt.to_numpy(dtype)))


def var(name: str, shape=None, dtype: str = "float32", type_annotation: Type | None = None) -> Var:
    """A variable; `var("x", (1, 4))` is annotated `Tensor[(1, 4), float32]`."""
    if type_annotation is None and shape is not None:
        type_annotation = TensorType(tuple(shape), dtype)
    return Var(name, type_annotation)


def call(op_name: str, *args, **attrs) -> Call:
    """Call a registered operator by name: `call("nn.conv2d", x, w, strides=(2, 2))`."""
    opdef = lookup_op(op_name)
    return Call(Op.get(op_name), tuple(_as_expr(a) for a in args), opdef.make_attrs(**attrs))
