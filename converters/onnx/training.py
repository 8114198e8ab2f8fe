"""ai.onnx.preview.training optimizers: Adagrad, Momentum, Adam, as elementwise arithmetic.

Each takes (R, T, X..., G..., [V..., H...]): a learning rate and step count, then groups of
tensors, one per optimized weight; it returns the new weights, then the new states.
"""

from __future__ import annotations

from .table import converter
from .util import cast, scalar

DOMAIN = "ai.onnx.preview.training"


class _Ops:
    """Arithmetic on tensors of one dtype, constants coerced to it."""

    def __init__(self, ctx, dtype):
        self.ctx, self.dtype = ctx, dtype

    def c(self, v):
        return v if not isinstance(v, (int, float)) else scalar(self.ctx, v, self.dtype)

    def __getattr__(self, name):
        relay = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide"}[name]
        return lambda a, b: self.ctx.call(relay, self.c(a), self.c(b))

    def sqrt(self, a):
        return self.ctx.call("sqrt", a)


def _groups(ctx, data, n_groups):
    n = len(data) - 2
    if n % n_groups:
        raise ctx.error(f"expected 2 + {n_groups}k inputs, got {len(data)}")
    k = n // n_groups
    return data[0], data[1], [data[2 + i * k : 2 + (i + 1) * k] for i in range(n_groups)]


def _step_positive(ctx, t):
    t = ctx.call("reshape", cast(ctx, t, "int64"), newshape=())
    return ctx.call("greater", t, scalar(ctx, 0, "int64"))


@converter("Adagrad", 1, domain=DOMAIN)
def Adagrad(ctx, *data, decay_factor=0.0, epsilon=1e-6, norm_coefficient=0.0):
    r, t, (xs, gs, hs) = _groups(ctx, data, 3)
    dtype = ctx.dtype(xs[0])
    o = _Ops(ctx, dtype)
    r = ctx.call("reshape", cast(ctx, r, dtype), newshape=())
    rate = o.div(
        r, o.add(1.0, o.mul(cast(ctx, ctx.call("reshape", t, newshape=()), dtype), decay_factor))
    )
    new_x, new_h = [], []
    for x, g, h in zip(xs, gs, hs):
        g = o.add(o.mul(norm_coefficient, x), g)
        h2 = o.add(h, o.mul(g, g))
        new_x.append(o.sub(x, o.div(o.mul(rate, g), o.add(o.sqrt(h2), epsilon))))
        new_h.append(h2)
    return new_x + new_h


@converter("Momentum", 1, domain=DOMAIN)
def Momentum(ctx, *data, alpha, beta, mode, norm_coefficient):
    if mode not in ("standard", "nesterov"):
        raise ctx.error(f"unknown mode {mode!r}")
    r, t, (xs, gs, vs) = _groups(ctx, data, 3)
    dtype = ctx.dtype(xs[0])
    o = _Ops(ctx, dtype)
    r = ctx.call("reshape", cast(ctx, r, dtype), newshape=())
    # The gradient's coefficient is 1 at the first step.
    b = ctx.call("where", _step_positive(ctx, t), o.c(beta), o.c(1.0))
    new_x, new_v = [], []
    for x, g, v in zip(xs, gs, vs):
        g = o.add(o.mul(norm_coefficient, x), g)
        v2 = o.add(o.mul(alpha, v), o.mul(b, g))
        step = v2 if mode == "standard" else o.add(g, o.mul(alpha, v2))
        new_x.append(o.sub(x, o.mul(r, step)))
        new_v.append(v2)
    return new_x + new_v


@converter("Adam", 1, domain=DOMAIN)
def Adam(
    ctx, *data, alpha=0.9, beta=0.999, epsilon=1e-6, norm_coefficient=0.0, norm_coefficient_post=0.0
):
    r, t, (xs, gs, vs, hs) = _groups(ctx, data, 4)
    dtype = ctx.dtype(xs[0])
    o = _Ops(ctx, dtype)
    r = ctx.call("reshape", cast(ctx, r, dtype), newshape=())
    tf = cast(ctx, ctx.call("reshape", t, newshape=()), dtype)
    # Bias correction after the first step: r * sqrt(1 - beta^t) / (1 - alpha^t).
    corr = o.div(
        o.sqrt(o.sub(1.0, ctx.call("power", o.c(beta), tf))),
        o.sub(1.0, ctx.call("power", o.c(alpha), tf)),
    )
    rate = ctx.call("where", _step_positive(ctx, t), o.mul(r, corr), r)
    new_x, new_v, new_h = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        g = o.add(o.mul(norm_coefficient, x), g)
        v2 = o.add(o.mul(alpha, v), o.mul(1.0 - alpha, g))
        h2 = o.add(o.mul(beta, h), o.mul(1.0 - beta, o.mul(g, g)))
        x2 = o.sub(x, o.mul(rate, o.div(v2, o.add(o.sqrt(h2), epsilon))))
        new_x.append(o.mul(1.0 - norm_coefficient_post, x2))
        new_v.append(v2)
        new_h.append(h2)
    return new_x + new_v + new_h


@converter("Gradient", 1, domain=DOMAIN)
def Gradient(ctx, *inputs, xs, y, zs=None):
    """The gradients of tensor `y` (named) with respect to the tensors named `xs`, through the
    Gradient pass: `y` as a function of fresh variables for the xs, differentiated, added to
    the module as a global and called on the xs."""
    from relay_core import passes
    from relay_core.ir import Function, GlobalVar, Var
    from relay_core.ir.visitor import free_vars, substitute

    grad_pass = passes.all_passes().get("Gradient")
    if grad_pass is None:
        raise ctx.error("Gradient needs the Gradient pass (relay_core.passes.Gradient)")
    target = ctx.gc.lookup_name(y)
    if target is None:
        raise ctx.error(f"y={y!r} names no tensor computed before this node")
    xs_exprs = list(inputs[: len(xs)])
    params = [Var(f"d_{i}", ctx.type_of(x)) for i, x in enumerate(xs_exprs)]
    body = substitute(target, dict(zip(xs_exprs, params)))
    extra = [v for v in free_vars(body) if v not in params]
    if extra:
        raise ctx.error(
            f"y depends on tensors other than xs and zs: {[v.name_hint for v in extra]}"
        )
    from relay_core.ir import IRModule

    gmod = grad_pass(mode="first_order")(IRModule.from_expr(Function(tuple(params), body)))
    mod = ctx.gc.mod
    name = f"onnx_gradient_{len(mod.functions)}"
    gv = mod.add(GlobalVar(name), gmod["main"])
    out = ctx.call_global(gv, xs_exprs)
    grads = ctx.item(out, 1)
    return [ctx.item(grads, i) for i in range(len(xs))]
