"""A small pattern language for local rewrites, and the driver that runs rule lists.

Patterns describe expression shapes:

    X, Y = wild("x"), wild("y")                      # any expression, bound by name
    op("multiply", X, const("c", all_equal(1)))      # a call of an op with given arguments
    op("transpose", op("transpose", X), name="inner")  # nested, the inner call bound too
    op("add", X, Y, commutative=True)                # either argument order
    op("cast", X, attrs={"dtype": "float32"})        # attrs: a value or a predicate
    op(lambda d: d.pattern <= OpPattern.BROADCAST, X)  # ops chosen by an OpDef predicate
    tuple_get(op("nn.batch_norm", X, ...), 0)        # projections of tuple results

A rule is a pattern plus a function of the bindings (`root` is the matched node) that
returns the replacement or None when it does not apply:

    RULES = [
        # x*1 -> x
        rule(op("multiply", X, ONE, commutative=True), lambda x, **_: x),
    ]

`RewriteDriver(rules)` runs a rule list bottom-up over a typed module until nothing
changes. A rewrite is kept only if the replacement typechecks to the matched node's type,
so rules need not re-check broadcasting or dtypes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import RelayError
from ..ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem
from ..ir.module import IRModule
from ..typing import infer_expr
from ._util import Rewriter, type_of

Binds = dict[str, Expr]


class Pat:
    """Base class of patterns. `match(e, binds)` extends `binds` or returns False."""

    name: str | None = None

    def match(self, e: Expr, binds: Binds) -> bool:
        raise NotImplementedError

    def _bind(self, e: Expr, binds: Binds) -> bool:
        if self.name is None:
            return True
        prev = binds.get(self.name)
        if prev is not None:
            return prev is e
        binds[self.name] = e
        return True

    def __or__(self, other: Pat) -> Pat:
        return Alt((self, other))


@dataclass(eq=False)
class Wild(Pat):
    """Any expression (optionally only those whose checked type passes `where`)."""

    name: str | None = None
    where: Callable | None = None

    def match(self, e, binds):
        if self.where is not None and not self.where(e):
            return False
        return self._bind(e, binds)


@dataclass(eq=False)
class ConstPat(Pat):
    """A Constant whose array passes `where`."""

    name: str | None = None
    where: Callable[[np.ndarray], bool] | None = None

    def match(self, e, binds):
        if type(e) is not Constant:
            return False
        if self.where is not None and not self.where(e.data):
            return False
        return self._bind(e, binds)


@dataclass(eq=False)
class OpPat(Pat):
    """A call of a primitive op. `op` is a name or a predicate on the OpDef; `args` None
    matches any arguments; `attrs` maps attribute names to values or predicates."""

    op: str | Callable
    args: tuple[Pat, ...] | None = None
    attrs: dict = field(default_factory=dict)
    name: str | None = None
    commutative: bool = False

    def match(self, e, binds):
        if type(e) is not Call or type(e.op) is not Op:
            return False
        if isinstance(self.op, str):
            if e.op.name != self.op:
                return False
        elif not self.op(e.op.opdef):
            return False
        for k, want in self.attrs.items():
            have = getattr(e.attrs, k, _MISSING)
            if have is _MISSING:
                return False
            if callable(want):
                if not want(have):
                    return False
            elif have != want:
                return False
        if self.args is not None:
            if len(self.args) != len(e.args):
                return False
            if not _match_seq(self.args, e.args, binds):
                if not (self.commutative and len(e.args) == 2):
                    return False
                if not _match_seq(self.args, (e.args[1], e.args[0]), binds):
                    return False
        return self._bind(e, binds)


@dataclass(eq=False)
class TupleGetPat(Pat):
    tuple_value: Pat
    index: int | None = None
    name: str | None = None

    def match(self, e, binds):
        if type(e) is not TupleGetItem or (self.index is not None and e.index != self.index):
            return False
        return self.tuple_value.match(e.tuple_value, binds) and self._bind(e, binds)


@dataclass(eq=False)
class TuplePat(Pat):
    """A Tuple expression (any fields when `fields` is None)."""

    fields: tuple[Pat, ...] | None = None
    name: str | None = None

    def match(self, e, binds):
        if type(e) is not Tuple:
            return False
        if self.fields is not None and (
            len(self.fields) != len(e.fields) or not _match_seq(self.fields, e.fields, binds)
        ):
            return False
        return self._bind(e, binds)


@dataclass(eq=False)
class Alt(Pat):
    options: tuple[Pat, ...]

    def match(self, e, binds):
        for p in self.options:
            trial = dict(binds)
            if p.match(e, trial):
                binds.update(trial)
                return True
        return False


_MISSING = object()


def _match_seq(pats, exprs, binds) -> bool:
    trial = dict(binds)
    for p, x in zip(pats, exprs):
        if not p.match(x, trial):
            return False
    binds.update(trial)
    return True


# ---------------------------------------------------------------------------------------------
# Constructors used in rule tables.


def wild(name: str | None = None, where: Callable | None = None) -> Wild:
    return Wild(name, where)


def const(name: str | None = None, where: Callable[[np.ndarray], bool] | None = None) -> ConstPat:
    return ConstPat(name, where)


def op(
    name_or_pred,
    *args: Pat,
    attrs: dict | None = None,
    name: str | None = None,
    commutative: bool = False,
    any_args: bool = False,
) -> OpPat:
    return OpPat(name_or_pred, None if any_args else tuple(args), attrs or {}, name, commutative)


def tuple_get(p: Pat, index: int | None = None, name: str | None = None) -> TupleGetPat:
    return TupleGetPat(p, index, name)


def tuple_(*fields: Pat, name: str | None = None, any_fields: bool = False) -> TuplePat:
    return TuplePat(None if any_fields else tuple(fields), name)


def all_equal(value) -> Callable[[np.ndarray], bool]:
    """Constant predicate: every element equals `value` (and there is at least one)."""

    def pred(a: np.ndarray) -> bool:
        if a.size == 0 or a.dtype == object:
            return False
        try:
            return bool(np.all(a == value))
        except (TypeError, ValueError):
            return False

    return pred


# ---------------------------------------------------------------------------------------------
# Rules and the driver.


@dataclass(eq=False)
class Rule:
    pattern: Pat
    fn: Callable[..., Expr | None]
    doc: str = ""

    def root_ops(self) -> tuple[str, ...] | None:
        """Op names the pattern's root can have, or None if any node may match."""
        p = self.pattern
        if isinstance(p, OpPat) and isinstance(p.op, str):
            return (p.op,)
        if isinstance(p, Alt) and all(
            isinstance(q, OpPat) and isinstance(q.op, str) for q in p.options
        ):
            return tuple(q.op for q in p.options)
        return None


def rule(pattern: Pat, fn: Callable[..., Expr | None], doc: str = "") -> Rule:
    return Rule(pattern, fn, doc)


class RuleError(RelayError):
    """A rewrite rule built an ill-typed replacement: a bug in the rule."""


class RewriteDriver:
    """Runs a list of rules bottom-up over each function until a fixed point.

    Rules are indexed by the op name at the pattern's root, so a node is tried only
    against rules that can match it. `stats` counts how often each rule fired.
    """

    def __init__(self, rules: Sequence[Rule], max_iterations: int = 8, local_steps: int = 16):
        self.rules = list(rules)
        self.max_iterations = max_iterations
        self.local_steps = local_steps
        self.by_op: dict[str, list[Rule]] = {}
        self.generic: list[Rule] = []
        for r in self.rules:
            names = r.root_ops()
            if names is None:
                self.generic.append(r)
            else:
                for n in names:
                    self.by_op.setdefault(n, []).append(r)
        self.stats: dict[str, int] = {}

    def candidates(self, e: Expr) -> list[Rule]:
        f = _CANDIDATES.get(type(e))
        return f(self, e) if f is not None else []

    def rewrite_node(self, e: Expr, mod: IRModule | None) -> Expr:
        """Apply rules at `e` until none fires (bounded by `local_steps`)."""
        for _ in range(self.local_steps):
            cands = self.candidates(e)
            if not cands:
                return e
            if not e.has_type:
                infer_expr(e, mod)
            for r in cands:
                binds: Binds = {}
                if not r.pattern.match(e, binds):
                    continue
                out = r.fn(root=e, **binds)
                if out is None or out is e:
                    continue
                try:
                    infer_expr(out, mod)
                except RelayError as err:
                    raise RuleError(
                        f"rewrite rule '{r.doc}' built an ill-typed result: {err}"
                    ) from None
                if type_of(out) != type_of(e):
                    continue  # e.g. x*1 where the 1 broadcasts x to a bigger shape
                self.stats[r.doc] = self.stats.get(r.doc, 0) + 1
                e = out
                break
            else:
                return e
        return e

    def rewrite_function(self, func: Function, mod: IRModule | None) -> Function:
        driver = self

        class _Apply(Rewriter):
            def rewrite(self, orig, new):
                return driver.rewrite_node(new, mod)

        for _ in range(self.max_iterations):
            out = _Apply().mutate(func)
            if out is func:
                break
            func = out  # type: ignore[assignment]
        return func


def _call_candidates(d: RewriteDriver, e: Call) -> list[Rule]:
    if type(e.op) is Op:
        return d.by_op.get(e.op.name, []) + d.generic
    return []


# Per node kind: the rules that may fire at a node (rules match calls, tuples, projections).
_CANDIDATES = {
    Call: _call_candidates,
    Tuple: lambda d, e: d.generic,
    TupleGetItem: lambda d, e: d.generic,
}


__all__ = [
    "Alt",
    "ConstPat",
    "OpPat",
    "Pat",
    "RewriteDriver",
    "Rule",
    "RuleError",
    "TupleGetPat",
    "TuplePat",
    "Wild",
    "all_equal",
    "const",
    "op",
    "rule",
    "tuple_",
    "tuple_get",
    "wild",
]
