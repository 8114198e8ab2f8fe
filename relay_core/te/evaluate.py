"""A numpy evaluator of tensor expressions: the oracle for lowering rules.

Every compute is evaluated at once over broadcast index grids, so it is fast enough for tests.
Out-of-range reads (which a `select` discards) are clamped instead of failing.
"""

from __future__ import annotations

import numpy as np

from ..ir import dtype as _dt
from .expr import Binary, Call, Cast, Compare, Const, PrimExpr, Read, Reduce, Select, Unary, Var
from .intrin import INTRINSICS
from .tensor import Tensor, identity
from .visit import post_order


def evaluate(outputs, feeds: dict, shape_env: dict | None = None):
    """Values of `outputs` (a Tensor or a sequence) given placeholder values `feeds`.

    `feeds` maps placeholder Tensors to arrays; `shape_env` maps run-time dimension Vars to ints.
    """
    ev = _Evaluator(feeds, shape_env or {})
    if isinstance(outputs, Tensor):
        return ev.tensor(outputs)
    return [ev.tensor(t) for t in outputs]


class _Evaluator:
    def __init__(self, feeds, shape_env):
        self.values = {id(t): np.asarray(v) for t, v in feeds.items()}
        self.svars = {id(k): int(v) for k, v in shape_env.items()}

    def dim(self, d) -> int:
        if isinstance(d, int):
            return d
        v = self.scalar(d)
        return int(v)

    def scalar(self, e: PrimExpr):
        v = np.asarray(self.expr(e, {}, 0))
        return v.item() if v.ndim == 0 else v

    def tensor(self, t: Tensor) -> np.ndarray:
        # Evaluate dependencies first, without recursion.
        order = []
        seen = set()
        stack = [(t, False)]
        while stack:
            x, done = stack.pop()
            if done:
                order.append(x)
                continue
            if id(x) in seen or id(x) in self.values:
                continue
            seen.add(id(x))
            if x.op is None and "const" in x.attrs:
                self.values[id(x)] = x.attrs["const"]
                continue
            if x.op is None:
                raise KeyError(f"no value fed for placeholder {x.name}")
            stack.append((x, True))
            for n in post_order(x.op.body):
                if type(n) is Read and id(n.tensor) not in self.values:
                    stack.append((n.tensor, False))
            for d in x.shape:
                if isinstance(d, PrimExpr):
                    for n in post_order(d):
                        if type(n) is Read and id(n.tensor) not in self.values:
                            stack.append((n.tensor, False))
        for x in order:
            self.values[id(x)] = self.compute(x)
        return self.values[id(t)]

    def compute(self, t: Tensor) -> np.ndarray:
        shape = tuple(self.dim(d) for d in t.shape)
        np_dt = _dt.to_numpy(t.dtype)
        body = t.op.body
        red = body if type(body) is Reduce else None
        r = len(red.axes) if red is not None else 0
        n = len(shape)
        rank = n + r
        env = {}
        for k, a in enumerate(t.op.axes):
            env[id(a)] = np.arange(shape[k], dtype=np.int64).reshape(
                [-1 if j == k else 1 for j in range(rank)]
            )
        if 0 in shape:
            return np.empty(shape, np_dt)
        if red is None:
            v = self.expr(body, env, rank)
            return np.broadcast_to(np.asarray(v).astype(np_dt), shape).copy()
        rext = []
        for j, a in enumerate(red.axes):
            e = self.dim(a.extent)
            rext.append(e)
            env[id(a)] = np.arange(e, dtype=np.int64).reshape(
                [-1 if q == n + j else 1 for q in range(rank)]
            )
        full = shape + tuple(rext)
        src = np.broadcast_to(np.asarray(self.expr(red.source, env, rank)), full)
        axes = tuple(range(n, rank))
        with np.errstate(all="ignore"):
            if red.kind in ("argmax", "argmin"):
                flat = src.reshape(shape + (-1,))
                if flat.shape[-1] == 0:
                    return np.zeros(shape, np_dt)
                if red.last:
                    flat = flat[..., ::-1]
                f = np.argmax if red.kind == "argmax" else np.argmin
                idx = f(flat, axis=-1)
                if red.last:
                    idx = flat.shape[-1] - 1 - idx
                return idx.astype(np_dt)
            if red.where is not None:
                w = np.broadcast_to(np.asarray(self.expr(red.where, env, rank)), full)
                ident = identity(red.kind, red.dtype).value
                src = np.where(w, src, np.asarray(ident).astype(src.dtype))
            f = {
                "sum": np.sum,
                "prod": np.prod,
                "max": np.max,
                "min": np.min,
                "any": np.any,
                "all": np.all,
            }[red.kind]
            if src.size == 0 or 0 in rext:
                out = np.full(shape, identity(red.kind, red.dtype).value)
            else:
                out = f(src, axis=axes)
        return np.asarray(out).astype(np_dt)

    def expr(self, root: PrimExpr, env: dict, rank: int):
        vals: dict[int, object] = {}
        with np.errstate(all="ignore"):
            for e in post_order(root):
                vals[id(e)] = self.node(e, vals, env, rank)
        return vals[id(root)]

    def node(self, e, vals, env, rank):
        t = type(e)
        npd = _dt.to_numpy(e.dtype)
        if t is Const:
            return np.asarray(e.value).astype(npd)
        if t is Var:
            if id(e) in env:
                return env[id(e)]
            if id(e) in self.svars:
                return np.asarray(self.svars[id(e)], np.int64)
            raise KeyError(f"unbound variable {e.name}")
        if t is Read:
            arr = self.tensor(e.tensor)
            idx = [np.asarray(vals[id(i)]) for i in e.indices]
            if arr.size == 0:
                shp = np.broadcast_shapes(*(i.shape for i in idx)) if idx else ()
                return np.zeros(shp, arr.dtype)
            idx = [np.clip(i, 0, s - 1) for i, s in zip(idx, arr.shape)]
            return arr[tuple(idx)] if idx else arr[()]
        if t is Binary:
            return _binary(e.op, vals[id(e.a)], vals[id(e.b)], npd)
        if t is Compare:
            a, b = vals[id(e.a)], vals[id(e.b)]
            return {
                "eq": np.equal,
                "ne": np.not_equal,
                "lt": np.less,
                "le": np.less_equal,
                "gt": np.greater,
                "ge": np.greater_equal,
            }[e.op](a, b)
        if t is Unary:
            a = vals[id(e.a)]
            if e.op == "neg":
                return np.negative(a).astype(npd)
            return np.logical_not(a) if e.dtype == "bool" else np.invert(a)
        if t is Select:
            return np.where(vals[id(e.cond)], vals[id(e.t)], vals[id(e.f)]).astype(npd)
        if t is Cast:
            a = np.asarray(vals[id(e.a)])
            return a.astype(npd)
        if t is Call:
            fn = INTRINSICS[e.name]
            out = fn(*[np.asarray(vals[id(a)]) for a in e.args])
            return np.asarray(out).astype(npd)
        if t is Reduce:
            raise ValueError("a reduction must be the whole body of a compute")
        raise TypeError(f"cannot evaluate {t.__name__}")


def _binary(op, a, b, npd):
    a = np.asarray(a)
    b = np.asarray(b)
    if op == "add":
        r = a + b
    elif op == "sub":
        r = a - b
    elif op == "mul":
        r = a * b
    elif op == "div":
        r = a / b
    elif op == "floordiv":
        if a.dtype.kind in "iu":
            r = np.floor_divide(a, np.where(b == 0, 1, b))
        else:
            r = np.floor(a / b)
    elif op == "floormod":
        if a.dtype.kind in "iu":
            r = np.mod(a, np.where(b == 0, 1, b))
        else:
            r = np.mod(a, b)
    elif op == "truncdiv":
        bb = np.where(b == 0, 1, b)
        q = np.floor_divide(a, bb)
        fix = ((a - q * bb) != 0) & ((a < 0) != (bb < 0))
        r = q + fix
    elif op == "truncmod":
        r = np.fmod(a, np.where(b == 0, 1, b))
    elif op == "min":
        r = np.minimum(a, b)
    elif op == "max":
        r = np.maximum(a, b)
    elif op == "and":
        r = np.logical_and(a, b) if a.dtype == np.bool_ else np.bitwise_and(a, b)
    elif op == "or":
        r = np.logical_or(a, b) if a.dtype == np.bool_ else np.bitwise_or(a, b)
    elif op == "xor":
        r = np.logical_xor(a, b) if a.dtype == np.bool_ else np.bitwise_xor(a, b)
    elif op == "shl":
        r = np.left_shift(a, b)
    elif op == "shr":
        r = np.right_shift(a, b)
    else:
        raise ValueError(f"unknown binary op {op}")
    return np.asarray(r).astype(npd)
