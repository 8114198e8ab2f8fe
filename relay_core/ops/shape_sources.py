"""What a shape expression reads off tensors, for making dynamic ops static.

Exporters write shapes as graphs: `Concat(Gather(Shape(x), 0), [h, w])` for `(x.size(0), h, w)`.
`dim_sources` lists such a shape's entries (constants, or dim k of tensor y), `shape_entries`
resolves them against the data being reshaped ("same": its own dim), `carry_dims` broadcasts a
static result to the read dims, and `same_leading_dim` proves two tensors share axis 0. The
dynamic ops' `to_static` rules (ops/dyn.py, ops/dyn_image.py) and FoldConstant use them.
"""

from __future__ import annotations

import numpy as np

from ..ir.types import TensorType
from .dyn_params import _ints
from .registry import lookup


def picked_dims(e) -> np.ndarray | None:
    """The positions of the dims of y that `e`, a `take` or `strided_slice` of `shape_of(y)`
    with constant index arguments, picks (shaped as e's value); None for anything else. Found
    by running the op on the positions themselves, so every form of its attributes counts."""
    from ..ir.expr import Constant

    if getattr(getattr(e, "op", None), "name", None) not in ("take", "strided_slice"):
        return None
    src, rest = e.args[0], e.args[1:]
    if getattr(getattr(src, "op", None), "name", None) != "shape_of":
        return None
    y = src.args[0]
    t = y.checked_type if y.has_type else None
    if not isinstance(t, TensorType) or not all(isinstance(a, Constant) for a in rest):
        return None
    try:
        pos = e.op.opdef.ref([np.arange(t.ndim, dtype=np.int64)] + [a.data for a in rest], e.attrs)
    except Exception:  # out of range: left for run time, which reports it
        return None
    return np.asarray(pos, np.int64)


def _is_call(e, name) -> bool:
    from ..ir.expr import Call

    return type(e) is Call and getattr(e.op, "name", None) == name


def _dims_of(e):
    t = e.checked_type if e.has_type else None
    return t.shape if isinstance(t, TensorType) else None


def dim_sources(shape) -> list | None:
    """The entries of a 1-D shape expression that concatenates constants and dims read off
    tensors (`expand_dims(take(shape_of(y), k))`, `strided_slice(shape_of(y), ...)`: what
    exporters write for `x.view(x.size(0), ...)` or Resize sizes `(*x.shape[:2], h, w)`) or
    is one such piece (`x.reshape(y.shape)`), as a list of: an int (a constant or a static
    dim), `(y, k)` (dim k of y, unknown until run time) or None (computed: unknown). None
    when the expression is neither."""
    from ..ir.expr import Constant, Tuple

    if _is_call(shape, "reshape") and len(shape.attrs.newshape) == 1:  # a 1-D view of it
        return dim_sources(shape.args[0])
    if _is_call(shape, "where"):
        return _kept_sizes(shape)
    if _is_call(shape, "concatenate"):
        one = len(shape.args) == 1 and type(shape.args[0]) is Tuple
        pieces = shape.args[0].fields if one else shape.args
    elif _is_call(shape, "shape_of") or picked_dims(shape) is not None:
        pieces = (shape,)
    else:
        return None
    out: list = []
    for whole in pieces:
        if type(whole) is Constant:
            out.extend(_ints(whole.data))
            continue
        piece = whole
        if _is_call(piece, "expand_dims") or _is_call(piece, "reshape"):
            piece = piece.args[0]
        if _is_call(piece, "shape_of"):  # all of y's dims
            src = piece.args[0]
            sdims = _dims_of(src)
            if sdims is None:
                return None
            picks = list(range(len(sdims)))
        else:
            pos = picked_dims(piece)
            if pos is None or pos.ndim > 1:  # computed (x.size(0) * 96): unknown entries
                wdims = _dims_of(whole)
                if wdims is None or len(wdims) > 1 or not all(isinstance(d, int) for d in wdims):
                    return None
                out.extend([None] * (wdims[0] if wdims else 1))
                continue
            picks = pos.reshape(-1).tolist()
            src = piece.args[0].args[0]
            sdims = _dims_of(src)
            if sdims is None:
                return None
        out.extend(sdims[k] if isinstance(sdims[k], int) else (src, k) for k in picks)
    return out


def _kept_sizes(shape) -> list | None:
    """dim_sources of `where(equal(s, c), o, s)` with constants c and o: torch's exporter writes
    `x.expand(sizes)` so, a -1 in sizes (keep the dim) becoming 1 (broadcast). A dim read off a
    tensor is never negative: it stays where c is."""
    from ..ir.expr import Constant

    cond, then, s = shape.args
    if not (_is_call(cond, "equal") and cond.args[0] is s and type(then) is Constant):
        return None
    if type(cond.args[1]) is not Constant:
        return None
    inner = dim_sources(s)
    if inner is None:
        return None
    try:
        c = np.broadcast_to(np.asarray(cond.args[1].data).reshape(-1), (len(inner),))
        o = np.broadcast_to(np.asarray(then.data).reshape(-1), (len(inner),))
    except ValueError:
        return None
    out: list = []
    for k, e in enumerate(inner):
        if isinstance(e, int):
            out.append(int(o[k]) if e == int(c[k]) else e)
        else:  # a read dim (>= 0) or unknown
            out.append(e if e is not None and int(c[k]) < 0 else None)
    return out


def shape_entries(shape, data) -> list | None:
    """dim_sources(shape) with each read dim resolved against `data`: "same" where it is the
    dim of `data` at that position (`data` itself, the same named dim, or axis 0 proven the
    same by same_leading_dim), None where unknown."""
    from ..ir.types import ShapeVar

    dims = _dims_of(data)
    entries = None if dims is None else dim_sources(shape)
    if entries is None:
        return None
    out: list = []
    for i, e in enumerate(entries):
        if not isinstance(e, tuple):
            out.append(e)
            continue
        src, k = e
        d = _dims_of(src)[k]
        same = i < len(dims) and (
            (k == i and (src is data or (i == 0 and same_leading_dim(src, data))))
            or (isinstance(d, ShapeVar) and dims[i] == d)
        )
        out.append("same" if same else None)
    return out


def carry_dims(base, entries):
    """`base` (dims 1 where `entries`, from dim_sources, reads a dim (y, k) off a tensor)
    broadcast to those dims: `broadcast_to_like(base, p)` with p = y sliced to 1 on its other
    axes and reshaped to 1s with y's dim k at that position, so the result's type carries y's
    dim (a named batch stays named). None unless y's other dims are static and non-zero (the
    slice then has exactly y's dim k elements)."""
    from ..ir.expr import Call, Op

    def call(name, args, **attrs):
        return Call(Op.get(name), tuple(args), lookup(name).make_attrs(**attrs))

    out = base
    n = len(entries)
    for i, e in enumerate(entries):
        if not isinstance(e, tuple):
            continue
        src, k = e
        sdims = _dims_of(src)
        others = [a for a in range(len(sdims)) if a != k]
        if not all(isinstance(sdims[a], int) and sdims[a] > 0 for a in others):
            return None
        p = src
        if others:
            p = call(
                "strided_slice",
                [p],
                begin=(0,) * len(others),
                end=(1,) * len(others),
                axes=tuple(others),
            )
        p = call("reshape", [p], newshape=tuple(-1 if a == i else 1 for a in range(n)))
        out = call("broadcast_to_like", [out, p])
    return out


# ops whose result's axis 0 is their first argument's (layouts starting with the batch)
_LEADING_KEPT = frozenset(
    {
        "nn.conv1d",
        "nn.conv2d",
        "nn.conv3d",
        "nn.bias_add",
        "nn.softmax",
        "nn.log_softmax",
        "nn.layer_norm",
        "nn.group_norm",
        "nn.instance_norm",
        "nn.dense",
        "nn.relu",
        "nn.leaky_relu",
        "nn.prelu",
    }
)
_LEADING_STEPS = 512  # nodes visited per proof (an attention block is ~70)


def same_leading_dim(src, data) -> bool:
    """Whether `data`'s axis 0 is provably `src`'s (both unknown until run time): `data` is
    computed from `src` through ops that keep axis 0 (elementwise ops whose every operand of
    full rank has it, slices and reductions of other axes, transposes and reshapes that keep
    it, convolutions, dense layers, norms, ...). EfficientViT's attention reads
    `B, C, H, W = x.shape` and reshapes conv(x) to (B, -1, H, W): with B proven to be the
    data's own axis 0 that reshape is static although B is a run-time product (4 x batch)."""
    from ..ir.expr import Call, Op, TupleGetItem

    todo, seen, steps = [data], set(), 0
    while todo:  # every path must reach src
        e = todo.pop()
        if e is src or e in seen:
            continue
        seen.add(e)
        steps += 1
        if steps > _LEADING_STEPS:
            return False
        if type(e) is TupleGetItem:
            t = e.tuple_value
            kind = getattr(t.op, "name", None) if type(t) is Call else None
            if (kind == "split" and _axis_not_0(t)) or (kind == "nn.batch_norm" and not e.index):
                todo.append(t.args[0])
                continue
            return False
        if type(e) is not Call or type(e.op) is not Op:
            return False
        parents = _leading_parents(e)
        if not parents:
            return False
        todo.extend(parents)
    return True


def _rank(e):
    t = e.checked_type if e.has_type else None
    return t.ndim if isinstance(t, TensorType) else None


def _axis_not_0(call) -> bool:
    a = getattr(call.attrs, "axis", None)
    if a is None or isinstance(a, (tuple, list)):
        return False
    n = _rank(call.args[0])
    return n is not None and a % n != 0


def _leading_parents(call) -> list:
    """The arguments whose axis 0 `call`'s result's is (all of them must be proven); empty
    when it is not kept."""
    from .registry import OpPattern

    op = call.op.opdef
    name, attrs, args = op.name, call.attrs, call.args
    n = _rank(call)
    if not args or n is None or n == 0:
        return []
    first = args[0]
    full = [a for a in args if _rank(a) == n and a.checked_type.shape[0] != 1]
    if op.pattern in (OpPattern.ELEMWISE, OpPattern.BROADCAST):
        return full  # a lower rank or a static 1 has no axis 0 of its own
    if name in ("nn.matmul", "nn.batch_matmul"):
        if n >= 3:
            return full  # batch axes broadcast
        return [first] if not getattr(attrs, "transpose_a", False) else []
    if name in _LEADING_KEPT or name.startswith(("nn.max_pool", "nn.avg_pool", "nn.global_")):
        layout = getattr(attrs, "data_layout", None) or getattr(attrs, "layout", None) or "N"
        return [first] if str(layout).startswith("N") else []
    axes = getattr(attrs, "axes", None)
    if name == "strided_slice":
        kept = axes is not None and all(a % n != 0 for a in axes)
    elif name == "transpose":
        kept = axes is not None and len(axes) > 0 and axes[0] == 0
    elif name == "reshape":
        ns = getattr(attrs, "newshape", ())
        kept = bool(ns) and ns[0] == 0 and not getattr(attrs, "allowzero", False)
    elif op.pattern == OpPattern.COMM_REDUCE:
        axis, rank = getattr(attrs, "axis", None), _rank(first)
        kept = bool(axis is not None and rank and not getattr(attrs, "exclude", False))
        kept = kept and all(a % rank != 0 for a in axis)
    elif name == "concatenate":
        field = _tuple_first(first) if getattr(attrs, "axis", 0) % n != 0 else None
        return [field] if field is not None else []
    else:
        kept = False
    return [first] if kept else []


def _tuple_first(t):
    from ..ir.expr import Tuple

    return t.fields[0] if type(t) is Tuple and t.fields else None
