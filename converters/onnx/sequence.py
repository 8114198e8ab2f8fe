"""Sequences as the prelude's `List`, optionals as its `Option`.

A sequence holds tensors of one rank whose shapes may differ, so elements enter a list through
`forget_shape` (their dims become `?`). Operations that walk a list are small recursive
closures (`let %f = fn (...) { match ... }`), like loops.
"""

from __future__ import annotations

import numpy as np

from relay_core.ir import (
    Any,
    Call,
    Clause,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    TensorType,
    TypeCall,
    Var,
)

from .dtypes import LIST, OPTION, relay_dtype, relay_type
from .table import converter
from .util import cast, normalize_axis, scalar

I64 = TensorType((), "int64")


# -- building blocks -----------------------------------------------------------------------------
def _ctor(ctx, name):
    return ctx.gc.use_prelude().get_constructor(name)


def _nil(ctx):
    return Call(_ctor(ctx, "Nil"), (), span=ctx.span)


def _cons(ctx, head, tail):
    return Call(_ctor(ctx, "Cons"), (head, tail), span=ctx.span)


def _is_nil(e) -> bool:
    return isinstance(e, Call) and getattr(e.op, "name", None) == "Nil" and not e.args


def _global(ctx, name, *args):
    ctx.gc.use_prelude()
    return Call(GlobalVar(name), tuple(args), span=ctx.span)


def forget(ctx, x):
    """`x` with every dim unknown (the element type of sequences)."""
    t = ctx.tensor_type(x)
    if all(d is Any for d in t.shape):
        return x
    return ctx.call("forget_shape", x)


def list_of(ctx, items):
    out = _nil(ctx)
    for x in reversed(items):
        out = _cons(ctx, forget(ctx, x), out)
    return out


def elem_type(ctx, seq):
    """The element type of a sequence (None for an empty list of unknown type)."""
    if _is_nil(seq):
        return None
    t = ctx.type_of(seq)
    if not isinstance(t, TypeCall) or t.func != LIST:
        raise ctx.error(f"expected a sequence, got {t}")
    return t.args[0]


def _list_type(et):
    return TypeCall(LIST, (et,))


def _index(ctx, pos, seq):
    """A position (maybe negative) as a non-negative int32 scalar."""
    p = cast(ctx, pos, "int32")
    if ctx.shape_of(p) != ():
        p = ctx.call("reshape", p, newshape=())
    n = _global(ctx, "length", seq)
    neg = ctx.call("less", p, scalar(ctx, 0, "int32"))
    return ctx.call("where", neg, ctx.call("add", p, n), p)


def _recursive(ctx, name, params, body_fn, args):
    """`let %name = fn (params) { body_fn(%name, *params) }; %name(args)`."""
    f = Var(name)
    body = body_fn(f, *params)
    fn = Function(tuple(params), body, span=ctx.span)
    return Let(f, fn, Call(f, tuple(args), span=ctx.span), span=ctx.span)


def _match_cons(ctx, xs, on_cons, on_nil=None):
    """match (xs) { Cons(%h, %t) => on_cons(%h, %t), Nil => on_nil }."""
    h, t = Var("head"), Var("tail")
    clauses = [
        Clause(
            PatternConstructor(_ctor(ctx, "Cons"), (PatternVar(h), PatternVar(t))), on_cons(h, t)
        )
    ]
    if on_nil is not None:
        clauses.append(Clause(PatternConstructor(_ctor(ctx, "Nil"), ()), on_nil))
    return Match(xs, tuple(clauses), complete=on_nil is not None, span=ctx.span)


# -- sequences known at conversion time ----------------------------------------------------------
# A list built by SequenceConstruct / SequenceInsert / SequenceErase at constant positions (an
# unrolled Loop's too) keeps its items beside it: SequenceAt of a constant position is the item
# itself and ConcatFromSequence concatenates them, with their static shapes (a list's elements
# forget theirs). The list expression stays the value for everything else.
def _frame(ctx):
    """The function the converter is in: the nearest Loop / Scan body scope (or the graph's):
    items known in another function are not used (its values reach this one as captures)."""
    s = ctx.gc._current_scope  # noqa: SLF001
    while s is not None and not s.boundary and s.parent is not None:
        s = s.parent
    return s


def known_items(ctx, seq) -> list | None:
    k = ctx.gc.known_seqs.get(id(seq))
    if k is None or k[0] is not seq or k[2] is not _frame(ctx):
        return None
    return list(k[1])


def _known(ctx, items):
    seq = list_of(ctx, items)
    ctx.gc.known_seqs[id(seq)] = (seq, list(items), _frame(ctx))
    return seq


def _const_pos(ctx, pos, n: int, insert: bool = False) -> int | None:
    """A constant position (maybe negative) in a known list of n items, or None."""
    v = ctx.value(pos) if pos is not None else None
    if v is None or v.size != 1:
        return None
    p = int(v.reshape(-1)[0])
    p = p + n if p < 0 else p
    return p if 0 <= p <= n - (0 if insert else 1) else None


# -- sequence ops -------------------------------------------------------------------------------
@converter("SequenceEmpty", 11)
def SequenceEmpty(ctx, *, dtype=1):
    relay_dtype(dtype)
    return _known(ctx, [])


@converter("SequenceConstruct", 11)
def SequenceConstruct(ctx, *xs):
    return _known(ctx, list(xs))


@converter("SequenceLength", 11)
def SequenceLength(ctx, seq):
    items = known_items(ctx, seq)
    if items is not None:
        return scalar(ctx, len(items), "int64")
    if _is_nil(seq):
        return scalar(ctx, 0, "int64")
    return cast(ctx, _global(ctx, "length", seq), "int64")


@converter("SequenceAt", 11)
def SequenceAt(ctx, seq, pos):
    items = known_items(ctx, seq)
    if items is not None:
        p = _const_pos(ctx, pos, len(items))
        if p is not None:
            return items[p]
    return _global(ctx, "nth", seq, _index(ctx, pos, seq))


@converter("SequenceInsert", 11)
def SequenceInsert(ctx, seq, x, pos=None):
    items = known_items(ctx, seq)
    if items is not None:
        p = len(items) if pos is None else _const_pos(ctx, pos, len(items), insert=True)
        if p is not None:
            return _known(ctx, items[:p] + [x] + items[p:])
    item = forget(ctx, x)
    if _is_nil(seq):
        return _cons(ctx, item, seq)
    if pos is None:
        return _global(ctx, "concat", seq, _cons(ctx, item, _nil(ctx)))
    lt = _list_type(ctx.type_of(item))
    xs, n = Var("xs", lt), Var("n", TensorType((), "int32"))

    def body(f, xs, n):
        here = _cons(ctx, item, xs)
        later = _match_cons(
            ctx,
            xs,
            lambda h, t: _cons(
                ctx, h, Call(f, (t, ctx.call("subtract", n, scalar(ctx, 1, "int32"))))
            ),
        )
        return If(ctx.call("less_equal", n, scalar(ctx, 0, "int32")), here, later, span=ctx.span)

    return _recursive(ctx, "insert", [xs, n], body, [seq, _index(ctx, pos, seq)])


@converter("SequenceErase", 11)
def SequenceErase(ctx, seq, pos=None):
    if pos is None:
        pos = ctx.const(np.array(-1, np.int64))
    items = known_items(ctx, seq)
    if items is not None:
        p = _const_pos(ctx, pos, len(items))
        if p is not None:
            return _known(ctx, items[:p] + items[p + 1 :])
    lt = _list_type(elem_type(ctx, seq))
    xs, n = Var("xs", lt), Var("n", TensorType((), "int32"))

    def body(f, xs, n):
        return _match_cons(
            ctx,
            xs,
            lambda h, t: If(
                ctx.call("less_equal", n, scalar(ctx, 0, "int32")),
                t,
                _cons(ctx, h, Call(f, (t, ctx.call("subtract", n, scalar(ctx, 1, "int32"))))),
                span=ctx.span,
            ),
        )

    return _recursive(ctx, "erase", [xs, n], body, [seq, _index(ctx, pos, seq)])


@converter("ConcatFromSequence", 11)
def ConcatFromSequence(ctx, seq, *, axis, new_axis=0):
    items = known_items(ctx, seq)
    if items:
        rank = ctx.ndim(items[0]) + (1 if new_axis else 0)
        axis = normalize_axis(ctx, axis, rank)
        if new_axis:
            items = [ctx.call("expand_dims", x, axis=axis) for x in items]
        return ctx.call("concatenate", *items, axis=axis)
    et = elem_type(ctx, seq)
    rank = len(et.shape) + (1 if new_axis else 0)
    axis = normalize_axis(ctx, axis, rank)
    xs = Var("xs", _list_type(et))

    def piece(h):
        return ctx.call("expand_dims", h, axis=axis) if new_axis else h

    def body(f, xs):
        def on_cons(h, t):
            rest = Call(f, (t,))
            more = ctx.call("forget_shape", ctx.call("concatenate", piece(h), rest, axis=axis))
            last = ctx.call("forget_shape", piece(h))
            return _match_cons(ctx, t, lambda _h, _t: more, last)

        return _match_cons(ctx, xs, on_cons)

    return _recursive(ctx, "concat_seq", [xs], body, [seq])


@converter("SplitToSequence", 11)
def SplitToSequence(ctx, x, split=None, *, axis=0, keepdims=1):
    rank = ctx.ndim(x)
    axis = normalize_axis(ctx, axis, rank)
    dim = ctx.call(
        "take", ctx.call("shape_of", x, dtype="int64"), scalar(ctx, axis, "int64"), axis=0
    )
    sizes = None
    if split is None:
        size = scalar(ctx, 1, "int64")
    elif ctx.ndim(split) == 0:
        size = cast(ctx, split, "int64")
    else:
        sizes = cast(ctx, split, "int64")
    k, start = Var("k", I64), Var("start", I64)

    def body(f, k, start):
        step = ctx.call("take", sizes, k, axis=0) if sizes is not None else size
        end = ctx.call("minimum", ctx.call("add", start, step), dim)
        one = ctx.const(np.ones(1, np.int64))
        begin_t = ctx.call("reshape", start, newshape=(1,))
        end_t = ctx.call("reshape", end, newshape=(1,))
        piece = ctx.call("dyn.strided_slice", x, begin_t, end_t, one, axes=(axis,))
        if split is None and not keepdims:
            piece = ctx.call("dyn.squeeze", piece, ctx.const(np.array([axis], np.int64)))
        nxt = Call(f, (ctx.call("add", k, scalar(ctx, 1, "int64")), end))
        if sizes is not None:  # one piece per size, even empty ones
            go = ctx.call(
                "less",
                k,
                ctx.call(
                    "take",
                    ctx.call("shape_of", sizes, dtype="int64"),
                    scalar(ctx, 0, "int64"),
                    axis=0,
                ),
            )
        else:
            go = ctx.call("less", start, dim)
        return If(
            go, _cons(ctx, forget(ctx, piece), nxt), Call(_ctor(ctx, "Nil"), ()), span=ctx.span
        )

    return _recursive(
        ctx, "split_seq", [k, start], body, [scalar(ctx, 0, "int64"), scalar(ctx, 0, "int64")]
    )


@converter("SequenceMap", 17)
def SequenceMap(ctx, seq, *others, body):
    inputs = [seq, *others]
    kinds = []
    elem_types = []
    for x in inputs:
        t = ctx.type_of(x)
        is_seq = isinstance(t, TypeCall) and t.func == LIST
        kinds.append(is_seq)
        elem_types.append(t.args[0] if is_seq else t)
    params, outs, caps = ctx.body(body, elem_types)
    out_types = [ctx.type_of(forget(ctx, o)) for o in outs]
    i = Var("i", TensorType((), "int32"))
    n = _global(ctx, "length", seq)
    accs = [Var(f"acc{j}", _list_type(t)) for j, t in enumerate(out_types)]

    def loop_body(f, i, *accs):
        binds = []
        for p, x, is_seq in zip(params, inputs, kinds):
            binds.append((p, _global(ctx, "nth", x, i) if is_seq else x))
        step = Call(
            f,
            (
                ctx.call("add", i, scalar(ctx, 1, "int32")),
                *[
                    _global(ctx, "concat", a, _cons(ctx, forget(ctx, o), _nil(ctx)))
                    for a, o in zip(accs, outs)
                ],
            ),
            span=ctx.span,
        )
        from .graph import wrap_captures

        step = wrap_captures(caps, step)
        for p, v in reversed(binds):
            step = Let(p, v, step, span=ctx.span)
        done = ctx.tuple(list(accs))
        return If(ctx.call("less", i, n), step, done, span=ctx.span)

    res = _recursive(
        ctx, "seq_map", [i, *accs], loop_body, [scalar(ctx, 0, "int32"), *[_nil(ctx) for _ in accs]]
    )
    return [ctx.item(res, j) for j in range(len(outs))]


# -- optionals -----------------------------------------------------------------------------------
@converter("Optional", 15)
def Optional(ctx, x=None, *, type=None):  # noqa: A002 - the ONNX name
    if x is not None:
        return Call(_ctor(ctx, "Some"), (x,), span=ctx.span)
    if type is None:
        raise ctx.error("an empty Optional needs its type attribute")
    t = relay_type(type, "Optional type")
    v = Var("none", TypeCall(OPTION, (t,)))
    return Let(v, Call(_ctor(ctx, "None"), (), span=ctx.span), v, span=ctx.span)


def _is_option(ctx, x):
    t = ctx.type_of(x)
    return isinstance(t, TypeCall) and t.func == OPTION


@converter("OptionalHasElement", 15)
def OptionalHasElement(ctx, x=None):
    if x is None:
        return ctx.const(np.array(False))
    if not _is_option(ctx, x):
        return ctx.const(np.array(True))
    true, false = ctx.const(np.array(True)), ctx.const(np.array(False))
    some = Clause(PatternConstructor(_ctor(ctx, "Some"), (PatternWildcard(),)), true)
    none = Clause(PatternConstructor(_ctor(ctx, "None"), ()), false)
    return Match(x, (some, none), span=ctx.span)


@converter("OptionalGetElement", 15)
def OptionalGetElement(ctx, x):
    if not _is_option(ctx, x):
        return x
    v = Var("value")
    return Match(
        x,
        (Clause(PatternConstructor(_ctor(ctx, "Some"), (PatternVar(v),)), v),),
        complete=False,
        span=ctx.span,
    )
