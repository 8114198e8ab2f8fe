"""Simplification of integer index expressions using the ranges of loop variables.

Index arithmetic is put in linear form (sum of coefficient * atom + constant); `floordiv` and
`floormod` by a positive constant split off the multiples of the divisor and drop what the
ranges prove to be in `[0, c)`. This undoes the unravel/ravel pairs that reshapes and
transposes leave behind, e.g. `((i * 6 + j) // 6)` -> `i` when `0 <= j < 6`.
"""

from __future__ import annotations

import hashlib

from .expr import (
    INDEX,
    Binary,
    Cast,
    Compare,
    Const,
    PrimExpr,
    Select,
    Unary,
    Var,
    binary,
    compare,
    const_value,
    is_int,
)
from .visit import operands, post_order, with_operands

_INF = float("inf")


def _digest(text: str, *parts: bytes) -> bytes:
    h = hashlib.blake2b(text.encode(), digest_size=12)
    for p in parts:
        h.update(p)
    return h.digest()


class Simplifier:
    """`Simplifier(bounds)(expr)`; `bounds` maps Var -> (lo, hi) inclusive (None: unknown)."""

    def __init__(self, bounds: dict | None = None):
        self.vbounds: dict[int, tuple] = {}
        for v, b in (bounds or {}).items():
            self.vbounds[id(v)] = b
        self.memo: dict[int, PrimExpr] = {}
        self.lin: dict[int, tuple] = {}  # id(expr) -> (terms dict key -> [atom, coef], const)
        self.bnd: dict[int, tuple] = {}
        self.keys: dict[int, tuple] = {}
        # a digest of the same structure with names for ids: the order of sums' terms, so that
        # the generated code does not depend on where objects sit in memory (kernel_cache keys by
        # its text). A digest, built from the children's: the structure itself, printed to
        # compare, grew with the expression's unshared size (30 of 57 s compiling grid_sample)
        self.order_keys: dict[tuple, bytes] = {}
        self._alive: list = []  # every expression cached by id, so that ids are never reused
        self.uppers: dict[int, PrimExpr] = {}

    def set_bound(self, v: Var, lo, hi) -> None:
        self.vbounds[id(v)] = (lo, hi)
        self._alive.append(v)

    def set_upper(self, v: Var, extent) -> None:
        """0 <= v < extent, for a run-time extent (a loop over a dynamic dimension)."""
        self.uppers[id(v)] = extent
        self._alive.append(v)

    # -- public --------------------------------------------------------------------------------
    def __call__(self, root: PrimExpr) -> PrimExpr:
        if not isinstance(root, PrimExpr):
            return root
        memo = self.memo
        alive = self._alive
        for n in post_order(root):
            if id(n) in memo:
                continue
            kids = operands(n)
            new = with_operands(n, tuple(memo.get(id(c), c) for c in kids)) if kids else n
            r = self._rule(new)
            alive.append(n)
            alive.append(new)
            alive.append(r)
            memo[id(n)] = r
        return memo[id(root)]

    def bound(self, e: PrimExpr) -> tuple:
        """(lo, hi) of an integer expression; +-inf when unknown."""
        b = self.bnd.get(id(e))
        if b is None:
            b = self._bound(e)
            self.bnd[id(e)] = b
            self._alive.append(e)
        return b

    # -- structure -----------------------------------------------------------------------------
    def key(self, e: PrimExpr) -> tuple:
        k = self.keys.get(id(e))
        if k is not None:
            return k
        for n in post_order(e):
            if id(n) in self.keys:
                continue
            t = type(n)
            if t is Const:
                k = ("c", n.dtype, n.value)
                ok = _digest(repr(k))
            elif t is Var:
                k = ("v", id(n))
                ok = _digest(repr(("v", n.name)))
            else:
                head = (t.__name__, getattr(n, "op", getattr(n, "name", "")), n.dtype)
                extra, oextra = (), ""
                if hasattr(n, "tensor"):
                    extra, oextra = (id(n.tensor),), getattr(n.tensor, "name", "")
                elif hasattr(n, "buffer"):
                    extra, oextra = (id(n.buffer),), getattr(n.buffer, "name", "")
                kids = [self.keys[id(c)] for c in operands(n)]
                k = head + extra + tuple(kids)
                ok = _digest(repr(head + (oextra,)), *(self.order_keys[c] for c in kids))
            self.keys[id(n)] = k
            self.order_keys.setdefault(k, ok)
            self._alive.append(n)
        return self.keys[id(e)]

    def linear(self, e: PrimExpr) -> tuple[dict, int]:
        r = self.lin.get(id(e))
        if r is not None:
            return r
        r = self._linear(e)
        self.lin[id(e)] = r
        self._alive.append(e)
        return r

    def _linear(self, e):
        c = const_value(e)
        if c is not None and type(e) is Const:
            return {}, int(c)
        if type(e) is Binary and e.dtype == INDEX:
            if e.op in ("add", "sub"):
                ta, ca = self.linear(e.a)
                tb, cb = self.linear(e.b)
                s = 1 if e.op == "add" else -1
                terms = {k: [a, co] for k, (a, co) in ta.items()}
                for k, (a, co) in tb.items():
                    if k in terms:
                        terms[k][1] += s * co
                    else:
                        terms[k] = [a, s * co]
                return {k: v for k, v in terms.items() if v[1] != 0}, ca + s * cb
            if e.op == "mul":
                cb = const_value(e.b)
                ca = const_value(e.a)
                if cb is not None or ca is not None:
                    m, other = (cb, e.a) if cb is not None else (ca, e.b)
                    t, c0 = self.linear(other)
                    if m == 0:
                        return {}, 0
                    return {k: [a, co * m] for k, (a, co) in t.items()}, c0 * m
        if type(e) is Unary and e.op == "neg" and e.dtype == INDEX:
            t, c0 = self.linear(e.a)
            return {k: [a, -co] for k, (a, co) in t.items()}, -c0
        return {self.key(e): [e, 1]}, 0

    def from_linear(self, terms: dict, c: int) -> PrimExpr:
        out = None
        for k in sorted(terms, key=lambda k: self.order_keys.get(k) or _digest(repr(k))):
            a, co = terms[k]
            if co == 0:
                continue
            if out is None:
                out = (
                    a
                    if co == 1
                    else (
                        binary("mul", a, Const(co, INDEX))
                        if co != -1
                        else binary("sub", Const(0, INDEX), a)
                    )
                )
            elif co > 0:
                out = binary("add", out, a if co == 1 else binary("mul", a, Const(co, INDEX)))
            else:
                out = binary("sub", out, a if co == -1 else binary("mul", a, Const(-co, INDEX)))
        if out is None:
            return Const(c, INDEX)
        if c > 0:
            out = binary("add", out, Const(c, INDEX))
        elif c < 0:
            out = binary("sub", out, Const(-c, INDEX))
        return out

    def lin_bound(self, terms: dict, c: int) -> tuple:
        lo = hi = c
        for a, co in terms.values():
            alo, ahi = self.bound(a)
            if co >= 0:
                lo, hi = lo + co * alo, hi + co * ahi
            else:
                lo, hi = lo + co * ahi, hi + co * alo
        return _clean(lo), _clean(hi)

    # -- bounds --------------------------------------------------------------------------------
    def _bound(self, e) -> tuple:
        t = type(e)
        if t is Const:
            v = e.value
            return (v, v) if not isinstance(v, bool) else (int(v), int(v))
        if t is Var:
            b = self.vbounds.get(id(e))
            if b is None:
                return (-_INF, _INF)
            lo, hi = b
            return (-_INF if lo is None else lo, _INF if hi is None else hi)
        if not is_int(e.dtype):
            return (-_INF, _INF)
        if t is Binary:
            if e.op in ("add", "sub", "mul") or (e.op == "neg"):
                if e.op == "mul" and const_value(e.a) is None and const_value(e.b) is None:
                    a, b = self.bound(e.a), self.bound(e.b)
                    prods = [x * y for x in a for y in b if not _nan_prod(x, y)]
                    if len(prods) < 4:
                        return (-_INF, _INF)
                    return (_clean(min(prods)), _clean(max(prods)))
                terms, c = self.linear(e)
                if len(terms) == 1 and next(iter(terms.values()))[0] is e:
                    return (-_INF, _INF)
                return self.lin_bound(terms, c)
            if e.op in ("floordiv", "truncdiv"):
                cb = const_value(e.b)
                lo, hi = self.bound(e.a)
                if cb is not None and cb > 0:
                    if e.op == "truncdiv" and lo < 0:
                        return (
                            (-_INF, _INF)
                            if lo == -_INF
                            else (_fdiv(lo, cb) + 1 if lo % cb else lo // cb, _fdiv(hi, cb))
                        )
                    return (_fdiv(lo, cb), _fdiv(hi, cb))
                return (-_INF, _INF)
            if e.op in ("floormod", "truncmod"):
                cb = const_value(e.b)
                lo, hi = self.bound(e.a)
                if cb is not None and cb > 0:
                    if lo >= 0 and hi < cb:
                        return (lo, hi)
                    if e.op == "floormod" or lo >= 0:
                        return (0, cb - 1)
                    return (-(cb - 1), cb - 1)
                return (-_INF, _INF)
            if e.op in ("min", "max"):
                a, b = self.bound(e.a), self.bound(e.b)
                if e.op == "min":
                    return (min(a[0], b[0]), min(a[1], b[1]))
                return (max(a[0], b[0]), max(a[1], b[1]))
        if t is Unary and e.op == "neg":
            lo, hi = self.bound(e.a)
            return (-hi, -lo)
        if t is Select:
            a, b = self.bound(e.t), self.bound(e.f)
            return (min(a[0], b[0]), max(a[1], b[1]))
        if t is Cast and is_int(e.a.dtype):
            return self.bound(e.a)
        return (-_INF, _INF)

    # -- rewrite rules -------------------------------------------------------------------------
    def _rule(self, e: PrimExpr) -> PrimExpr:
        t = type(e)
        if t is Binary and e.dtype == INDEX:
            op = e.op
            if op in ("add", "sub", "mul"):
                terms, c = self.linear(e)
                if len(terms) == 1 and next(iter(terms.values()))[0] is e:
                    return e
                terms, c = self._merge_divmod(terms, c)
                return self.from_linear(terms, c)
            cb = const_value(e.b)
            if (
                op in ("truncdiv", "truncmod")
                and self.bound(e.a)[0] >= 0
                and cb is not None
                and cb > 0
            ):
                op = "floordiv" if op == "truncdiv" else "floormod"
                e = binary(op, e.a, e.b)
            if op in ("floordiv", "floormod") and cb is not None and cb > 0:
                return self._divmod(op, e, cb)
            if op in ("floordiv", "floormod") and type(e.a) is Var and id(e.a) in self.uppers:
                up = self.uppers[id(e.a)]
                if self.key(up) == self.key(e.b) and self.bound(e.a)[0] >= 0:
                    return e.a if op == "floormod" else Const(0, INDEX)
            if op in ("min", "max"):
                a, b = self.bound(e.a), self.bound(e.b)
                if op == "min":
                    if a[1] <= b[0]:
                        return e.a
                    if b[1] <= a[0]:
                        return e.b
                else:
                    if a[0] >= b[1]:
                        return e.a
                    if b[0] >= a[1]:
                        return e.b
            return e
        if t is Compare and is_int(e.a.dtype):
            a, b = self.bound(e.a), self.bound(e.b)
            r = _decide(e.op, a, b)
            if r is not None:
                return Const(r, "bool")
            return e
        if t is Select:
            c = const_value(e.cond)
            if c is not None:
                return e.t if c else e.f
        return e

    def _merge_divmod(self, terms: dict, c: int):
        """k*c*(X // c) + k*(X % c) -> k*X, repeatedly (undoes an unravel / ravel pair)."""
        terms = {k: list(v) for k, v in terms.items()}
        changed = True
        while changed:
            changed = False
            for key, (atom, co) in list(terms.items()):
                if key not in terms or not (
                    type(atom) is Binary and atom.op == "floormod" and atom.dtype == INDEX
                ):
                    continue
                d = const_value(atom.b)
                if d is None or d <= 0:
                    continue
                div_key = ("Binary", "floordiv", INDEX) + (self.key(atom.a), self.key(atom.b))
                other = terms.get(div_key)
                if other is None or other[1] != co * d:
                    continue
                del terms[key]
                del terms[div_key]
                xt, xc = self.linear(atom.a)
                for k2, (a2, c2) in xt.items():
                    if k2 in terms:
                        terms[k2][1] += co * c2
                    else:
                        terms[k2] = [a2, co * c2]
                c += co * xc
                terms = {k: v for k, v in terms.items() if v[1] != 0}
                changed = True
        return terms, c

    def _divmod(self, op: str, e: Binary, c: int) -> PrimExpr:
        terms, k = self.linear(e.a)
        q_terms, r_terms = {}, {}
        for key, (a, co) in terms.items():
            if co % c == 0:
                q_terms[key] = [a, co // c]
            else:
                r_terms[key] = [a, co]
        qk, rk = divmod(k, c)
        lo, hi = self.lin_bound(r_terms, rk)
        if lo >= 0 and hi < c:
            return (
                self.from_linear(q_terms, qk) if op == "floordiv" else self.from_linear(r_terms, rk)
            )
        if op == "floormod":
            if q_terms:
                return binary("floormod", self.from_linear(r_terms, rk), Const(c, INDEX))
            return e
        if q_terms and lo > -_INF and hi < _INF:
            # (c*Q + R) // c == Q + R // c
            return binary(
                "add",
                self.from_linear(q_terms, qk),
                binary("floordiv", self.from_linear(r_terms, rk), Const(c, INDEX)),
            )
        return e


def _fdiv(x, c):
    if x in (_INF, -_INF):
        return x
    return x // c


def _clean(x):
    if x != x:  # nan from inf - inf
        return _INF
    return x


def _nan_prod(x, y) -> bool:
    return (x == 0 and abs(y) == _INF) or (y == 0 and abs(x) == _INF)


def _decide(op, a, b):
    alo, ahi = a
    blo, bhi = b
    if op == "lt":
        if ahi < blo:
            return True
        if alo >= bhi:
            return False
    elif op == "le":
        if ahi <= blo:
            return True
        if alo > bhi:
            return False
    elif op == "gt":
        return _decide("lt", b, a)
    elif op == "ge":
        return _decide("le", b, a)
    elif op == "eq":
        if alo == ahi == blo == bhi:
            return True
        if ahi < blo or bhi < alo:
            return False
    elif op == "ne":
        r = _decide("eq", a, b)
        return None if r is None else not r
    return None


def simplify(e: PrimExpr, bounds: dict | None = None) -> PrimExpr:
    """Simplify one expression given variable ranges `{Var: (lo, hi)}`."""
    return Simplifier(bounds)(e)


__all__ = ["Simplifier", "simplify", "compare"]
