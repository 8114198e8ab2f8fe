"""Iterative traversal and rewriting of PrimExpr DAGs (no recursion per node)."""

from __future__ import annotations

from collections.abc import Callable

from .expr import (
    Binary,
    Call,
    Cast,
    Compare,
    Const,
    Load,
    PrimExpr,
    Read,
    Reduce,
    Select,
    Unary,
    Var,
)


def operands(e: PrimExpr) -> tuple:
    """Sub-expressions of `e` (reduction axes and tensor identities are not operands)."""
    t = type(e)
    if t is Binary or t is Compare:
        return (e.a, e.b)
    if t is Const or t is Var:
        return ()
    if t is Unary or t is Cast:
        return (e.a,)
    if t is Select:
        return (e.cond, e.t, e.f)
    if t is Call:
        return e.args
    if t is Read:
        return e.indices
    if t is Load:
        return (e.index,)
    if t is Reduce:
        return (e.source,) if e.where is None else (e.source, e.where)
    raise TypeError(f"not a PrimExpr: {type(e).__name__}")


def with_operands(e: PrimExpr, new: tuple) -> PrimExpr:
    """`e` rebuilt with new operands (through the folding constructors)."""
    from . import expr as E

    old = operands(e)
    if all(a is b for a, b in zip(old, new)):
        return e
    t = type(e)
    if t is Binary:
        if e.op in ("and", "or") and e.dtype == "bool":
            return E.logical_and(*new) if e.op == "and" else E.logical_or(*new)
        return E.binary(e.op, new[0], new[1])
    if t is Compare:
        return E.compare(e.op, new[0], new[1])
    if t is Unary:
        return E.neg(new[0]) if e.op == "neg" else E.not_(new[0])
    if t is Cast:
        return E.cast(e.dtype, new[0])
    if t is Select:
        return E.select(new[0], new[1], new[2])
    if t is Call:
        return Call(e.name, tuple(new), e.dtype)
    if t is Read:
        return Read(e.tensor, tuple(new), e.dtype)
    if t is Load:
        return Load(e.buffer, new[0], e.dtype)
    if t is Reduce:
        return Reduce(e.kind, new[0], e.axes, new[1] if len(new) > 1 else None, e.last, e.dtype)
    return e


def post_order(root: PrimExpr) -> list[PrimExpr]:
    """Distinct nodes under `root`, operands first."""
    order: list = []
    seen: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for c in reversed(operands(node)):
            if id(c) not in seen:
                stack.append((c, False))
    return order


def rewrite(root: PrimExpr, fn: Callable[[PrimExpr, PrimExpr], PrimExpr], memo=None) -> PrimExpr:
    """Bottom-up rewrite: `fn(orig, rebuilt)` returns the replacement of each node."""
    memo = {} if memo is None else memo
    for node in post_order(root):
        if id(node) in memo:
            continue
        kids = operands(node)
        new = with_operands(node, tuple(memo.get(id(c), c) for c in kids)) if kids else node
        memo[id(node)] = fn(node, new)
    return memo[id(root)]


def substitute(root: PrimExpr, mapping: dict) -> PrimExpr:
    """Replace Vars (keys: Var objects) by expressions."""
    if not mapping:
        return root
    by_id = {id(k): v for k, v in mapping.items()}

    def fn(orig, new):
        if type(orig) is Var:
            return by_id.get(id(orig), new)
        return new

    return rewrite(root, fn)


def free_vars(root: PrimExpr) -> list[Var]:
    out = []
    for n in post_order(root):
        if type(n) is Var:
            out.append(n)
    return out


def reads(root: PrimExpr) -> list[Read]:
    return [n for n in post_order(root) if type(n) is Read]


def is_pure_index(e: PrimExpr) -> bool:
    """True when `e` reads no tensor."""
    return not any(type(n) in (Read, Reduce) for n in post_order(e))
