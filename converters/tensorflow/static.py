"""What converters may know about a tensor's value before run time.

TF graphs compute shapes as tensors (Shape -> StridedSlice -> Pack -> Reshape). A converter that
needs such a tensor as an attribute (a new shape, slice bounds, an axis) asks:

- `static_value(ctx, e)`: the whole value, when `e` depends only on constants and on the static
  dims of shapes (small tensors only). Nothing is rewritten: the expression stays as built.
- `partial_value(ctx, e)`: for a rank-0/1 integer tensor of static length, each element as an int,
  a `SymDim` (dim i of tensor x, unknown until run time) or None (unknown), e.g. `shape_of(x)`
  with x: (?, 6) gives (SymDim(x, 0), 6).

Both walk the expression iteratively and memoize in the context.
"""

from __future__ import annotations

import numpy as np

from relay_core.ir import Call, Constant, Op, TensorType, Tuple, TupleGetItem

_UNKNOWN = object()
# Largest result (in elements) computed to learn a static value.
LIMIT = 1 << 16


def _evaluate(e, memo: dict, children, rule):
    """Post-order evaluation of `e` with an explicit stack: `children(node)` lists the inputs a
    node needs (None: the node is a leaf), `rule(node, values)` gives its value or _UNKNOWN."""
    stack = [e]
    while stack:
        node = stack[-1]
        if node in memo:
            stack.pop()
            continue
        kids = children(node)
        if kids is None:
            memo[node] = rule(node, None)
            stack.pop()
            continue
        pending = [k for k in kids if k not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        vals = [memo[k] for k in kids]
        memo[node] = _UNKNOWN if any(v is _UNKNOWN for v in vals) else rule(node, vals)
    return memo[e]


def _static_shape(ctx, e):
    try:
        t = ctx.type_of(e)
    except Exception:
        return None
    if isinstance(t, TensorType) and t.is_static:
        return t
    return None


# -- whole values ---------------------------------------------------------------------------------
def static_value(ctx, e) -> np.ndarray | None:
    """The value of `e` if it is computable now (see the module doc), else None."""
    memo = ctx.memo.setdefault("static", {})

    def children(node):
        if isinstance(node, Constant):
            return None
        if isinstance(node, Call) and isinstance(node.op, Op):
            if node.op.name in ("shape_of", "ndarray_size") and _static_shape(ctx, node.args[0]):
                return None
            if node.op.opdef.stateful:
                return None
            if node.op.name == "arange":  # its length depends on its (small) inputs' values
                return list(node.args)
            t = _static_shape(ctx, node)
            if t is None or t.size > LIMIT:
                return None
            return list(node.args)
        if isinstance(node, Tuple):
            return list(node.fields)
        if isinstance(node, TupleGetItem):
            return [node.tuple_value]
        return None

    def rule(node, vals):
        if isinstance(node, Constant):
            return node.data
        if isinstance(node, Tuple):
            return tuple(vals)
        if isinstance(node, TupleGetItem):
            return vals[0][node.index]
        if not isinstance(node, Call) or not isinstance(node.op, Op):
            return _UNKNOWN
        name = node.op.name
        if vals is None:
            if name in ("shape_of", "ndarray_size"):
                t = _static_shape(ctx, node.args[0])
                if t is None:
                    return _UNKNOWN
                from relay_core.ir import dtype as dt

                v = t.shape if name == "shape_of" else t.size
                return np.asarray(v, dtype=dt.to_numpy(node.attrs.dtype))
            return _UNKNOWN
        if name == "arange":
            start, stop, step = (float(np.asarray(v).reshape(-1)[0]) for v in vals)
            if step == 0 or (stop - start) / step > LIMIT:
                return _UNKNOWN
        try:
            out = node.op.opdef.ref(list(vals), node.attrs)
        except Exception:  # a run-time error stays a run-time error
            return _UNKNOWN
        return out

    v = _evaluate(e, memo, children, rule)
    return None if v is _UNKNOWN or isinstance(v, tuple) else np.asarray(v)


# -- partially known integer vectors --------------------------------------------------------------
class SymDim:
    """Dim `axis` of tensor `expr`, whose size is known only at run time."""

    __slots__ = ("expr", "axis")

    def __init__(self, expr, axis: int):
        self.expr, self.axis = expr, axis

    def __repr__(self) -> str:
        return f"SymDim({self.axis})"


def _int(v):
    return v if isinstance(v, int) else None


_ELEMWISE = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "floor_divide": lambda a, b: a // b if b else None,
    "maximum": max,
    "minimum": min,
}


def partial_value(ctx, e) -> tuple | None:
    """Elements of a rank-0/1 integer tensor: ints where known, None where not; None when even
    the length is unknown (or `e` is not such a tensor)."""
    memo = ctx.memo.setdefault("partial", {})

    def children(node):
        t = _tensor_type(ctx, node)
        if t is None or t.ndim > 1 or (t.ndim == 1 and not isinstance(t.shape[0], int)):
            return None
        if static_value(ctx, node) is not None:
            return None
        if not isinstance(node, Call) or not isinstance(node.op, Op):
            return None
        name = node.op.name
        if name == "shape_of":
            return None
        if (
            name
            in (
                "cast",
                "concatenate",
                "stack",
                "reshape",
                "expand_dims",
                "squeeze",
                "strided_slice",
                "take",
                "copy",
            )
            or name in _ELEMWISE
        ):
            return list(node.args[:1]) if name in ("strided_slice", "take") else list(node.args)
        return None

    def rule(node, vals):
        t = _tensor_type(ctx, node)
        if t is None or (t.ndim == 1 and not isinstance(t.shape[0], int)) or t.ndim > 1:
            return _UNKNOWN
        from relay_core.ir import dtype as dt

        if not (dt.is_int(t.dtype) or dt.is_bool(t.dtype)):
            return _UNKNOWN
        v = static_value(ctx, node)
        if v is not None:
            return tuple(int(x) for x in v.reshape(-1))
        if not isinstance(node, Call) or not isinstance(node.op, Op):
            return (None,) * (t.shape[0] if t.ndim else 1)
        name = node.op.name
        if name == "shape_of":
            at = _tensor_type(ctx, node.args[0])
            if at is None:
                return _UNKNOWN
            return tuple(
                d if isinstance(d, int) else SymDim(node.args[0], i) for i, d in enumerate(at.shape)
            )
        if vals is None:
            return (None,) * (t.shape[0] if t.ndim else 1)
        if name in ("cast", "reshape", "expand_dims", "squeeze", "copy", "concatenate", "stack"):
            return tuple(x for v in vals for x in v)
        if name == "take":
            idx = static_value(ctx, node.args[1])
            if idx is None:
                return (None,) * (t.shape[0] if t.ndim else 1)
            src = vals[0]
            return tuple(src[int(i)] for i in idx.reshape(-1))
        if name == "strided_slice":
            a = node.attrs
            if a.axes not in (None, (0,)):
                return _UNKNOWN
            from relay_core.ops.transform_slice import BIG, slice_axis

            src = vals[0]
            if not a.begin:
                return src
            b, s = a.begin[0], a.strides[0] if a.strides else 1
            e = a.end[0] if a.end else BIG
            if a.slice_mode == "size":  # end holds a size; -1: to the end
                s = 1
                b = b + len(src) if b < 0 else b
                e = BIG if e < 0 else b + e
            sl, _ = slice_axis(len(src), b, e, s)
            return tuple(src[sl])
        fn = _ELEMWISE.get(name)
        if fn is not None:
            x, y = vals
            if name in ("minimum", "maximum") and len(x) == len(y) == 1:
                c = _clamped(ctx, node, x[0], y[0])
                if c is not None:
                    return (c,)
            n = max(len(x), len(y))
            x = x * n if len(x) == 1 else x
            y = y * n if len(y) == 1 else y
            return tuple(
                None if _int(a) is None or _int(b) is None else fn(a, b) for a, b in zip(x, y)
            )
        return (None,) * (t.shape[0] if t.ndim else 1)

    v = _evaluate(e, memo, children, rule)
    return None if v is _UNKNOWN else v


def _clamped(ctx, node, x, y):
    """min(c, max(d, _)) = c when d >= c, and max(c, min(d, _)) = c when d <= c (Keras
    bincount sizes); None when that does not decide it."""
    outer = node.op.name
    inner = "maximum" if outer == "minimum" else "minimum"
    for c, other in ((x, node.args[1]), (y, node.args[0])):
        if not isinstance(c, int) or not isinstance(other, Call) or not isinstance(other.op, Op):
            continue
        if other.op.name != inner:
            continue
        for arg in other.args:
            p = partial_value(ctx, arg)
            d = p[0] if p is not None and len(p) == 1 else None
            if isinstance(d, int) and (d >= c if outer == "minimum" else d <= c):
                return c
    return None


def _tensor_type(ctx, e) -> TensorType | None:
    try:
        t = ctx.type_of(e)
    except Exception:
        return None
    return t if isinstance(t, TensorType) else None
