"""Scalar index expressions of the tensor-expression language.

A `PrimExpr` is an immutable scalar expression with a dtype: immediates, variables, arithmetic,
comparisons, `select`, casts, math intrinsics, tensor reads and reductions. Python operators build
them (`i * 4 + j`, `x / y`, `a < b`); `==` and `!=` keep their Python meaning (nodes compare by
identity), so use `eq(a, b)` / `ne(a, b)`. Integer arithmetic on immediates folds as it is built,
so index expressions of static shapes stay small.

    >>> i = Var("i")
    >>> str(i * 4 + 1)
    '((i * 4) + 1)'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..ir import dtype as _dt

INDEX = "int64"  # dtype of indices and shape dimensions


def is_float(dtype: str) -> bool:
    return _dt.is_float(dtype)


def is_int(dtype: str) -> bool:
    return _dt.is_int(dtype)


class PrimExpr:
    """Base class of scalar expressions. Subclasses are frozen dataclasses with a `dtype`."""

    __slots__ = ()
    dtype: str

    # -- arithmetic sugar --------------------------------------------------------------------
    def __add__(self, o):
        return binary("add", self, o)

    def __radd__(self, o):
        return binary("add", o, self)

    def __sub__(self, o):
        return binary("sub", self, o)

    def __rsub__(self, o):
        return binary("sub", o, self)

    def __mul__(self, o):
        return binary("mul", self, o)

    def __rmul__(self, o):
        return binary("mul", o, self)

    def __truediv__(self, o):
        return binary("div", self, o)

    def __rtruediv__(self, o):
        return binary("div", o, self)

    def __floordiv__(self, o):
        return binary("floordiv", self, o)

    def __rfloordiv__(self, o):
        return binary("floordiv", o, self)

    def __mod__(self, o):
        return binary("floormod", self, o)

    def __rmod__(self, o):
        return binary("floormod", o, self)

    def __neg__(self):
        return neg(self)

    def __lt__(self, o):
        return compare("lt", self, o)

    def __le__(self, o):
        return compare("le", self, o)

    def __gt__(self, o):
        return compare("gt", self, o)

    def __ge__(self, o):
        return compare("ge", self, o)

    def __and__(self, o):
        return binary("and", self, o)

    def __or__(self, o):
        return binary("or", self, o)

    def __xor__(self, o):
        return binary("xor", self, o)

    def __invert__(self):
        return not_(self)

    def __bool__(self):
        raise TypeError("a symbolic expression has no truth value; use select() or eq()")

    __hash__ = object.__hash__

    def __str__(self) -> str:
        from .printer import expr_str

        return expr_str(self)

    __repr__ = __str__


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Const(PrimExpr):
    value: object  # int | float | bool
    dtype: str = INDEX


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Var(PrimExpr):
    """A loop index, a reduction axis (with `extent`) or a run-time shape dimension."""

    name: str
    dtype: str = INDEX
    extent: object = None  # PrimExpr | int for reduction axes


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Binary(PrimExpr):
    """`op` in add sub mul div floordiv floormod truncdiv truncmod min max and or xor shl shr."""

    op: str
    a: PrimExpr
    b: PrimExpr
    dtype: str = field(default=INDEX)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Compare(PrimExpr):
    """`op` in eq ne lt le gt ge; the result is bool. Floats compare as IEEE (NaN unordered)."""

    op: str
    a: PrimExpr
    b: PrimExpr
    dtype: str = "bool"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Unary(PrimExpr):
    """`op` in neg (arithmetic), not (logical for bool, bitwise for ints)."""

    op: str
    a: PrimExpr
    dtype: str = INDEX


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Select(PrimExpr):
    cond: PrimExpr
    t: PrimExpr
    f: PrimExpr
    dtype: str = INDEX


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Cast(PrimExpr):
    """Value conversion with numpy's `astype` meaning (float -> int truncates)."""

    a: PrimExpr
    dtype: str = INDEX


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Call(PrimExpr):
    """A math intrinsic by name (see `relay_core.te.intrin.INTRINSICS`)."""

    name: str
    args: tuple
    dtype: str = "float32"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Read(PrimExpr):
    """`tensor[indices]`: one element of a tensor."""

    tensor: object  # relay_core.te.tensor.Tensor
    indices: tuple
    dtype: str = "float32"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Reduce(PrimExpr):
    """A commutative reduction of `source` over `axes` (Vars with extents).

    kind: sum prod max min any all (value), argmax argmin (int64 index of the first extreme
    over the axes in row-major order; `last=True`: the last). `where`: elements are skipped
    where it is false. Only allowed as the whole body of a compute.
    """

    kind: str
    source: PrimExpr
    axes: tuple
    where: PrimExpr | None = None
    last: bool = False
    dtype: str = "float32"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Load(PrimExpr):
    """One element of a flat buffer (loop IR, relay_core.backend.tir): `buffer[index]`."""

    buffer: object  # relay_core.backend.tir.Buffer
    index: PrimExpr
    dtype: str = "float32"


# ---------------------------------------------------------------------------------------------
# Construction with folding.


def const(value, dtype: str | None = None) -> Const:
    """An immediate; ints default to int64, floats to float32, bools to bool."""
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = INDEX
        else:
            dtype = "float32"
    if dtype == "bool":
        value = bool(value)
    elif is_int(dtype):
        value = int(value)
    else:
        value = float(value)
    return Const(value, dtype)


def as_expr(x, like: str | None = None) -> PrimExpr:
    """A PrimExpr from an expression or a Python number (taking dtype `like` when given)."""
    if isinstance(x, PrimExpr):
        return x
    if hasattr(x, "dtype") and hasattr(x, "item"):  # numpy scalar
        return const(x.item(), like or _dt.from_numpy(x.dtype))
    if like is not None:
        if isinstance(x, float) and not is_float(like) and like != "bool":
            like = "float32"
        return const(x, like)
    return const(x)


def is_const(e, value=None) -> bool:
    if isinstance(e, (int, float)) and not isinstance(e, bool):
        return value is None or e == value
    return type(e) is Const and (value is None or e.value == value)


def const_value(e):
    """The Python value of an immediate (or of an int), else None."""
    if isinstance(e, (int, float)):
        return e
    return e.value if type(e) is Const else None


def _unify(a, b) -> tuple[PrimExpr, PrimExpr]:
    if isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        return a, as_expr(b, a.dtype)
    if isinstance(b, PrimExpr) and not isinstance(a, PrimExpr):
        return as_expr(a, b.dtype), b
    return as_expr(a), as_expr(b)


def _wrap_int(v: int, dtype: str) -> int:
    bits = _dt.bits(dtype)
    v &= (1 << bits) - 1
    if _dt.is_signed(dtype) and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _fold_int(op: str, x: int, y: int, dtype: str):
    if op == "add":
        r = x + y
    elif op == "sub":
        r = x - y
    elif op == "mul":
        r = x * y
    elif op == "floordiv":
        if y == 0:
            return None
        r = x // y
    elif op == "floormod":
        if y == 0:
            return None
        r = x % y
    elif op == "truncdiv":
        if y == 0:
            return None
        r = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
    elif op == "truncmod":
        if y == 0:
            return None
        r = x - (abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)) * y
    elif op == "min":
        r = min(x, y)
    elif op == "max":
        r = max(x, y)
    else:
        return None
    return _wrap_int(r, dtype) if dtype != "bool" else r


def binary(op: str, a, b) -> PrimExpr:
    """`a op b` with both operands of one dtype; folds integer immediates and identities."""
    a, b = _unify(a, b)
    if a.dtype != b.dtype:
        raise TypeError(f"te.{op}: operand dtypes differ: {a.dtype} and {b.dtype}")
    dtype = a.dtype
    if op == "div" and not is_float(dtype):
        raise TypeError(f"te: '/' needs floats, got {dtype}; use floordiv or truncdiv")
    ca, cb = const_value(a), const_value(b)
    if is_int(dtype):
        if ca is not None and cb is not None:
            r = _fold_int(op, ca, cb, dtype)
            if r is not None:
                return Const(r, dtype)
        if op == "add":
            if ca == 0:
                return b
            if cb == 0:
                return a
        elif op == "sub":
            if cb == 0:
                return a
        elif op == "mul":
            if ca == 1:
                return b
            if cb == 1:
                return a
            if ca == 0 or cb == 0:
                return Const(0, dtype)
        elif op in ("floordiv", "truncdiv"):
            if cb == 1:
                return a
            if ca == 0:
                return a
        elif op in ("floormod", "truncmod"):
            if cb == 1 or ca == 0:
                return Const(0, dtype)
    return Binary(op, a, b, dtype)


def compare(op: str, a, b) -> PrimExpr:
    a, b = _unify(a, b)
    if a.dtype != b.dtype:
        raise TypeError(f"te.{op}: operand dtypes differ: {a.dtype} and {b.dtype}")
    ca, cb = const_value(a), const_value(b)
    if ca is not None and cb is not None and not is_float(a.dtype):
        r = {
            "eq": ca == cb,
            "ne": ca != cb,
            "lt": ca < cb,
            "le": ca <= cb,
            "gt": ca > cb,
            "ge": ca >= cb,
        }[op]
        return Const(bool(r), "bool")
    return Compare(op, a, b)


def eq(a, b):
    return compare("eq", a, b)


def ne(a, b):
    return compare("ne", a, b)


def lt(a, b):
    return compare("lt", a, b)


def le(a, b):
    return compare("le", a, b)


def gt(a, b):
    return compare("gt", a, b)


def ge(a, b):
    return compare("ge", a, b)


def min_(a, b):
    return binary("min", a, b)


def check_index(v, n, shown=None):
    """`v` if 0 <= v < n, else a run-time error naming `shown` (default v): the generated code
    reports it to the caller."""
    return Call("check_index", (index(v), index(n), index(v if shown is None else shown)), INDEX)


def max_(a, b):
    return binary("max", a, b)


def floordiv(a, b):
    return binary("floordiv", a, b)


def floormod(a, b):
    return binary("floormod", a, b)


def truncdiv(a, b):
    return binary("truncdiv", a, b)


def truncmod(a, b):
    return binary("truncmod", a, b)


def neg(a) -> PrimExpr:
    a = as_expr(a)
    c = const_value(a)
    if c is not None and is_int(a.dtype):
        return Const(_wrap_int(-c, a.dtype), a.dtype)
    return Unary("neg", a, a.dtype)


def not_(a) -> PrimExpr:
    """Logical not of a bool, bitwise not of an int."""
    a = as_expr(a)
    c = const_value(a)
    if c is not None and a.dtype == "bool":
        return Const(not c, "bool")
    return Unary("not", a, a.dtype)


def logical_and(a, b):
    a, b = as_expr(a, "bool"), as_expr(b, "bool")
    ca, cb = const_value(a), const_value(b)
    if ca is True:
        return b
    if cb is True:
        return a
    if ca is False or cb is False:
        return Const(False, "bool")
    return Binary("and", a, b, "bool")


def logical_or(a, b):
    a, b = as_expr(a, "bool"), as_expr(b, "bool")
    ca, cb = const_value(a), const_value(b)
    if ca is False:
        return b
    if cb is False:
        return a
    if ca is True or cb is True:
        return Const(True, "bool")
    return Binary("or", a, b, "bool")


def all_of(*conds):
    out = Const(True, "bool")
    for c in conds:
        out = logical_and(out, c)
    return out


def select(cond, t, f) -> PrimExpr:
    """`t if cond else f` per element (both branches are plain values: no side effects)."""
    t, f = _unify(t, f)
    if t.dtype != f.dtype:
        raise TypeError(f"te.select: branch dtypes differ: {t.dtype} and {f.dtype}")
    cond = as_expr(cond, "bool")
    c = const_value(cond)
    if c is not None:
        return t if c else f
    if t is f:
        return t
    return Select(cond, t, f, t.dtype)


def cast(dtype: str, a) -> PrimExpr:
    a = as_expr(a)
    if a.dtype == dtype:
        return a
    c = const_value(a)
    if c is not None:
        if dtype == "bool":
            return Const(bool(c), "bool")
        if is_int(dtype) and not is_float(a.dtype):
            return Const(_wrap_int(int(c), dtype), dtype)
        if dtype in ("float32", "float64"):
            import numpy as np

            return Const(float(np.asarray(c).astype(dtype)), dtype)
    return Cast(a, dtype)


def call(name: str, *args, dtype: str | None = None) -> PrimExpr:
    """A math intrinsic: `call("exp", x)`; dtype defaults to the first argument's."""
    args = tuple(as_expr(a) for a in args)
    return Call(name, args, dtype or args[0].dtype)


def index(v) -> PrimExpr:
    """An int64 index expression from an int or expression (casting other int types)."""
    if isinstance(v, PrimExpr):
        return v if v.dtype == INDEX else cast(INDEX, v)
    return Const(int(v), INDEX)


def max_value(dtype: str) -> Const:
    """The largest value of `dtype` (inf for floats)."""
    if is_float(dtype):
        return Const(math.inf, dtype)
    if dtype == "bool":
        return Const(True, "bool")
    import numpy as np

    return Const(int(np.iinfo(_dt.to_numpy(dtype)).max), dtype)


def min_value(dtype: str) -> Const:
    if is_float(dtype):
        return Const(-math.inf, dtype)
    if dtype == "bool":
        return Const(False, "bool")
    import numpy as np

    return Const(int(np.iinfo(_dt.to_numpy(dtype)).min), dtype)
