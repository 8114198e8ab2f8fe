"""Activations: relu family, gelu, silu, hard* functions, softplus, prelu, glu, shrinkage."""

from __future__ import annotations

import math

from .table import aten


def _f(ctx, self):
    """The input in the node's output dtype (activations of ints are floats in some ops)."""
    d = ctx.out_dtype()
    return ctx.expr(self, d) if d else ctx.expr(self)


@aten("relu.default")
def relu(ctx, self):
    return ctx.call("nn.relu", _f(ctx, self))


@aten("relu6.default")
def relu6(ctx, self):
    return hardtanh(ctx, self, 0.0, 6.0)


@aten("hardtanh.default")
def hardtanh(ctx, self, min_val=-1.0, max_val=1.0):
    x = _f(ctx, self)
    return ctx.call("clip", x, a_min=float(min_val), a_max=float(max_val))


@aten("leaky_relu.default")
def leaky_relu(ctx, self, negative_slope=0.01):
    return ctx.call("nn.leaky_relu", _f(ctx, self), alpha=float(negative_slope))


@aten("rrelu.default")
def rrelu(ctx, self, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return leaky_relu(ctx, self, (lower + upper) / 2)


@aten("elu.default")
def elu(ctx, self, alpha=1.0, scale=1.0, input_scale=1.0):
    x = _f(ctx, self)
    d = ctx.dtype(x)
    if scale == 1 and input_scale == 1:
        return ctx.call("nn.elu", x, alpha=float(alpha))
    # scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1))
    neg = ctx.call(
        "multiply",
        ctx.expr(float(alpha), d),
        ctx.call("expm1", ctx.call("multiply", x, ctx.expr(float(input_scale), d))),
    )
    pos = ctx.call("greater", x, ctx.expr(0.0, d))
    return ctx.call("multiply", ctx.expr(float(scale), d), ctx.call("where", pos, x, neg))


@aten("selu.default")
def selu(ctx, self):
    return ctx.call("nn.selu", _f(ctx, self))


@aten("celu.default")
def celu(ctx, self, alpha=1.0):
    return ctx.call("nn.celu", _f(ctx, self), alpha=float(alpha))


@aten("gelu.default")
def gelu(ctx, self, *, approximate="none"):
    return ctx.call("nn.gelu", _f(ctx, self), approximate=approximate)


@aten("silu.default")
def silu(ctx, self):
    return ctx.call("nn.silu", _f(ctx, self))


@aten("mish.default")
def mish(ctx, self):
    return ctx.call("nn.mish", _f(ctx, self))


@aten("hardswish.default")
def hardswish(ctx, self):
    return ctx.call("nn.hard_swish", _f(ctx, self))


@aten("hardsigmoid.default")
def hardsigmoid(ctx, self):
    return ctx.call("nn.hard_sigmoid", _f(ctx, self), alpha=1.0 / 6.0, beta=0.5)


@aten("softplus.default")
def softplus(ctx, self, beta=1.0, threshold=20.0):
    return ctx.call("nn.softplus", _f(ctx, self), beta=float(beta), threshold=float(threshold))


@aten("log_sigmoid_forward.default")
def log_sigmoid_forward(ctx, self):
    x = _f(ctx, self)
    out = ctx.call("negative", ctx.call("nn.softplus", ctx.call("negative", x)))
    return out, ctx.call("zeros", shape=(0,), dtype=ctx.dtype(x))


@aten("log_sigmoid.default")
def log_sigmoid(ctx, self):
    return log_sigmoid_forward(ctx, self)[0]


@aten("prelu.default", "_prelu_kernel.default")
def prelu(ctx, self, weight):
    x = _f(ctx, self)
    w = ctx.cast(ctx.expr(weight), ctx.dtype(x))
    wshape = ctx.shape_of(w)
    if ctx.ndim(x) >= 2 and len(wshape) == 1 and wshape[0] == ctx.shape_of(x)[1]:
        return ctx.call("nn.prelu", x, w, axis=1)
    # one slope, or a slope already shaped to broadcast (the _prelu_kernel form)
    neg = ctx.call("multiply", x, w)
    return ctx.call("where", ctx.call("greater_equal", x, ctx.expr(0.0, ctx.dtype(x))), x, neg)


@aten("glu.default")
def glu(ctx, self, dim=-1):
    nd = ctx.ndim(self)
    parts = ctx.call("split", self, indices_or_sections=2, axis=dim + nd if dim < 0 else dim)
    a, b = ctx.item(parts, 0), ctx.item(parts, 1)
    return ctx.call("multiply", a, ctx.call("sigmoid", b))


@aten("softshrink.default")
def softshrink(ctx, self, lambd=0.5):
    return ctx.call("nn.shrink", _f(ctx, self), bias=float(lambd), lambd=float(lambd))


@aten("hardshrink.default")
def hardshrink(ctx, self, lambd=0.5):
    return ctx.call("nn.shrink", _f(ctx, self), bias=0.0, lambd=float(lambd))


@aten("threshold.default")
def threshold(ctx, self, threshold, value):
    x = _f(ctx, self)
    d = ctx.dtype(x)
    return ctx.call("where", ctx.call("greater", x, ctx.expr(threshold, d)), x, ctx.expr(value, d))


@aten("logit.default")
def logit(ctx, self, eps=None):
    x = _f(ctx, self)
    d = ctx.dtype(x)
    if eps is not None:
        x = ctx.call("clip", x, a_min=float(eps), a_max=1.0 - float(eps))
    return ctx.call("log", ctx.call("divide", x, ctx.call("subtract", ctx.expr(1.0, d), x)))


@aten("erfc.default")
def erfc(ctx, self):
    x = _f(ctx, self)
    return ctx.call("subtract", ctx.expr(1.0, ctx.dtype(x)), ctx.call("erf", x))


@aten("sinc.default")
def sinc(ctx, self):
    x = _f(ctx, self)
    d = ctx.dtype(x)
    px = ctx.call("multiply", x, ctx.expr(math.pi, d))
    ratio = ctx.call("divide", ctx.call("sin", px), px)
    return ctx.call("where", ctx.call("equal", x, ctx.expr(0.0, d)), ctx.expr(1.0, d), ratio)
