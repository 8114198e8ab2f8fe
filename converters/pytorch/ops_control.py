"""Tuples, symbolic sizes and size arithmetic, and control flow (torch.cond -> If,
while_loop -> a recursive local function)."""

from __future__ import annotations

import math
import operator

import numpy as np

from relay_core.ir import Call, Constant, Expr, Function, FuncType, If, Let, Tuple, TupleType, Var

from .table import aten, register

# -- tuples -----------------------------------------------------------------------------------


@register("operator.getitem")
def getitem(ctx, obj, index):
    if isinstance(obj, (tuple, list)):
        return obj[index]
    if isinstance(obj, Expr):
        t = ctx.type_of(obj)
        if isinstance(t, TupleType):
            n = len(t.fields)
            return ctx.item(obj, index + n if index < 0 else index)
    raise ctx.error(f"cannot index a {type(obj).__name__} with {index!r}")


# -- symbolic sizes -------------------------------------------------------------------------------


@aten("sym_size.int")
def sym_size(ctx, self, dim):
    return ctx.dim_size(self, dim)


@aten("sym_numel.default")
def sym_numel(ctx, self):
    shape = ctx.shape_of(self)
    if all(isinstance(d, int) for d in shape):
        return int(np.prod(shape, dtype=np.int64))
    return ctx.call("ndarray_size", self, dtype="int64")


@aten("sym_stride.int")
def sym_stride(ctx, self, dim):
    """Strides of a converted tensor are those of a contiguous one."""
    nd = ctx.ndim(self)
    dim = dim + nd if dim < 0 else dim
    out = 1
    for a in range(dim + 1, nd):
        out = _arith(ctx, operator.mul, out, ctx.dim_size(self, a))
    return out


@aten("sym_storage_offset.default")
def sym_storage_offset(ctx, self):
    return 0


@aten("sym_is_contiguous.default", "is_contiguous.default")
def sym_is_contiguous(ctx, self, memory_format=None):
    return True


@aten("_local_scalar_dense.default", "item.default")
def local_scalar_dense(ctx, self):
    return ctx.call("reshape", ctx.expr(self), newshape=())


def _arith(ctx, fn, *args):
    """Size arithmetic: Python values fold now, symbolic ones become scalar Relay ops."""
    if not any(isinstance(a, Expr) for a in args):
        return fn(*args)
    rel = _SYM_OPS.get(fn)
    if rel is None:
        raise ctx.error(f"no symbolic form for {getattr(fn, '__name__', fn)}")
    return rel(ctx, *args)


def _sym_binary(relay_op: str, out: str | None = None):
    def build(ctx, a, b):
        d = ctx.promote(a, b)
        if out == "float":
            d = "float32" if d in ("int64", "int32", "bool") else d
        return ctx.call(relay_op, ctx.expr(a, d), ctx.expr(b, d))

    return build


def _sym_bool(relay_op: str):
    def build(ctx, a, b):
        return ctx.call(relay_op, ctx.expr(a, "bool"), ctx.expr(b, "bool"))

    return build


def _sym_unary(relay_op: str, float_in: bool = False):
    def build(ctx, a):
        x = ctx.expr(a)
        if float_in and ctx.dtype(x) != "float32":
            x = ctx.cast(x, "float32")
        return ctx.call(relay_op, x)

    return build


_SYM_OPS = {
    operator.add: _sym_binary("add"),
    operator.sub: _sym_binary("subtract"),
    operator.mul: _sym_binary("multiply"),
    operator.floordiv: _sym_binary("floor_divide"),
    operator.mod: _sym_binary("floor_mod"),
    operator.truediv: _sym_binary("divide", out="float"),
    operator.pow: _sym_binary("power"),
    operator.eq: _sym_binary("equal"),
    operator.ne: _sym_binary("not_equal"),
    operator.lt: _sym_binary("less"),
    operator.le: _sym_binary("less_equal"),
    operator.gt: _sym_binary("greater"),
    operator.ge: _sym_binary("greater_equal"),
    operator.and_: _sym_bool("logical_and"),
    operator.or_: _sym_bool("logical_or"),
    operator.xor: _sym_bool("logical_xor"),
    operator.neg: _sym_unary("negative"),
    operator.abs: _sym_unary("abs"),
    operator.not_: lambda ctx, a: ctx.call("logical_not", ctx.expr(a, "bool")),
    math.sqrt: _sym_unary("sqrt", float_in=True),
    math.ceil: lambda ctx, a: ctx.cast(ctx.call("ceil", ctx.expr(a, "float32")), "int64"),
    math.floor: lambda ctx, a: ctx.cast(ctx.call("floor", ctx.expr(a, "float32")), "int64"),
    math.trunc: lambda ctx, a: ctx.cast(ctx.call("trunc", ctx.expr(a, "float32")), "int64"),
}


def _register_arith(name: str, fn, arity: int):
    if arity == 2:

        def convert(ctx, a, b):
            return _arith(ctx, fn, a, b)
    else:

        def convert(ctx, a):
            return _arith(ctx, fn, a)

    convert.__name__ = name
    register(f"operator.{name}")(convert)


for _n, _f in [
    ("add", operator.add),
    ("sub", operator.sub),
    ("mul", operator.mul),
    ("floordiv", operator.floordiv),
    ("mod", operator.mod),
    ("truediv", operator.truediv),
    ("pow", operator.pow),
    ("eq", operator.eq),
    ("ne", operator.ne),
    ("lt", operator.lt),
    ("le", operator.le),
    ("gt", operator.gt),
    ("ge", operator.ge),
    ("and_", operator.and_),
    ("or_", operator.or_),
    ("xor", operator.xor),
]:
    _register_arith(_n, _f, 2)
for _n, _f in [("neg", operator.neg), ("abs", operator.abs), ("not_", operator.not_)]:
    _register_arith(_n, _f, 1)
for _n in ("sqrt", "ceil", "floor", "trunc"):
    register(f"math.{_n}")((lambda f: lambda ctx, a: _arith(ctx, f, a))(getattr(math, _n)))


@register("torch.sym_max")
def sym_max(ctx, a, b):
    if not any(isinstance(v, Expr) for v in (a, b)):
        return max(a, b)
    x, y = ctx.operands(a, b)
    return ctx.call("maximum", x, y)


@register("torch.sym_min")
def sym_min(ctx, a, b):
    if not any(isinstance(v, Expr) for v in (a, b)):
        return min(a, b)
    x, y = ctx.operands(a, b)
    return ctx.call("minimum", x, y)


@register("torch.sym_not")
def sym_not(ctx, a):
    return (not a) if not isinstance(a, Expr) else ctx.call("logical_not", ctx.expr(a, "bool"))


@register("torch.sym_float")
def sym_float(ctx, a):
    return float(a) if not isinstance(a, Expr) else ctx.cast(a, "float32")


@register("torch.sym_int")
def sym_int(ctx, a):
    if not isinstance(a, Expr):
        return int(a)
    return ctx.cast(ctx.call("trunc", a) if ctx.dtype(a).startswith("float") else a, "int64")


@register("torch.sym_ite")
def sym_ite(ctx, b, t, f):
    if not isinstance(b, Expr):
        return t if b else f
    x, y = ctx.operands(t, f)
    return ctx.call("where", ctx.expr(b, "bool"), x, y)


@register("torch._sym_sqrt")
def sym_sqrt(ctx, a):
    return _arith(ctx, math.sqrt, a)


@register("torch.sym_sum")
def sym_sum(ctx, args):
    out = 0
    for a in args:
        out = _arith(ctx, operator.add, out, a)
    return out


@aten("scalar_tensor.default")
def scalar_tensor(ctx, s, dtype=None, layout=None, device=None, pin_memory=None):
    d = dtype or ctx.out_dtype() or "float32"
    return ctx.expr(s, d)


# -- control flow ------------------------------------------------------------------------------


def _cond_scalar(ctx, pred) -> Expr:
    p = ctx.expr(pred)
    if ctx.ndim(p) != 0:
        p = ctx.call("reshape", p, newshape=())
    if ctx.dtype(p) != "bool":
        p = ctx.call("not_equal", p, ctx.expr(0, ctx.dtype(p)))
    return p


@register("higher_order.cond")
def cond(ctx, pred, true_fn, false_fn, operands):
    """torch.cond -> Relay If over tuples of the branch outputs."""
    imp = ctx.importer
    ops = list(operands)
    where = ctx.node_name
    if not isinstance(pred, Expr):  # specialised at export time
        outs = imp.convert_graph(true_fn if pred else false_fn, ops, prefix=f"{where}/")
        return tuple(outs)
    t = [imp._as_output(v) for v in imp.convert_graph(true_fn, ops, prefix=f"{where}/true/")]
    f = [imp._as_output(v) for v in imp.convert_graph(false_fn, ops, prefix=f"{where}/false/")]
    c = _cond_scalar(ctx, pred)
    res = If(c, Tuple(tuple(t), span=ctx.span), Tuple(tuple(f), span=ctx.span), span=ctx.span)
    return tuple(ctx.item(res, i) for i in range(len(t)))


@register("higher_order.while_loop")
def while_loop(ctx, cond_fn, body_fn, carried_inputs, additional_inputs):
    """while_loop -> `let %loop = fn(carried) { if (cond) %loop(body) else carried };
    %loop(init)`: a tail-recursive local function, as in the Relay paper."""
    imp = ctx.importer
    name = ctx.node_name
    span = ctx.span
    init = [ctx.expr(c) for c in carried_inputs]
    metas = ctx.meta if isinstance(ctx.meta, (tuple, list)) else [None] * len(init)
    types = [_loop_type(ctx, imp, e, m) for e, m in zip(init, metas)]
    lets: list[tuple[Var, Expr]] = []
    extra = []
    for i, a in enumerate(additional_inputs):
        if isinstance(a, Expr) and not isinstance(a, (Var, Constant)):
            v = Var(f"{name}_in{i}", ctx.type_of(a))
            lets.append((v, a))
            a = v
        extra.append(a)
    params = [Var(f"{name}_c{i}", t) for i, t in enumerate(types)]
    ret = TupleType(tuple(types))
    loop = Var(f"{name}_fn", FuncType(tuple(types), ret))
    c = imp.convert_graph(cond_fn, params + extra, prefix=f"{name}/cond/")[0]
    b = imp.convert_graph(body_fn, params + extra, prefix=f"{name}/body/")
    b = [ctx.cast(imp._as_output(v), t.dtype) for v, t in zip(b, types)]
    body = If(
        _cond_scalar(ctx, c),
        Call(loop, tuple(b), span=span),
        Tuple(tuple(params), span=span),
        span=span,
    )
    fn = Function(tuple(params), body, ret_type=ret, span=span)
    res: Expr = Let(loop, fn, Call(loop, tuple(init), span=span), span=span)
    for v, value in reversed(lets):
        res = Let(v, value, res, span=span)
    return tuple(ctx.item(res, i) for i in range(len(init)))


def _loop_type(ctx, imp, init: Expr, meta):
    """A carried value's type: from the loop's output metadata (whose sizes may be symbolic
    when they change across iterations), else from the initial value."""
    t = ctx.tensor_type(init)
    if meta is None or not hasattr(meta, "shape"):
        return t
    mt = imp.tensor_type(meta)
    from relay_core.ir import Any, TensorType

    dims = tuple(a if a == b else Any for a, b in zip(t.shape, mt.shape))
    return TensorType(dims, t.dtype)


def _inline(ctx, gm, args):
    outs = ctx.importer.convert_graph(gm, list(args), prefix=f"{ctx.node_name}/")
    return tuple(outs)


@register("higher_order.wrap_with_set_grad_enabled")
def wrap_with_set_grad_enabled(ctx, enable_grad, gm, *args):
    return _inline(ctx, gm, args)


@register("higher_order.wrap_with_autocast")
def wrap_with_autocast(ctx, device_type, dtype, enabled, cache_enabled, gm, *args):
    if enabled:
        raise ctx.error(
            "autocast regions change precision at run time; export the model without autocast "
            "(or with enabled=False)"
        )
    return _inline(ctx, gm, args)
