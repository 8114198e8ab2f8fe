"""Gradient rules. Each op names its rule in its own declaration, `grad=Rule("relay_core.ops.
grads:_g_add")` (or writes it there, as `unary(..., grad=...)` does); the rule modules
(grads*.py) register nothing and are imported the first time one of their rules is used.

A rule is `grad(call, g, ctx) -> [gradient of each argument, or None]`:

- `call` is the forward call; its arguments are atoms (variables or constants) holding the
  forward inputs, so a rule may use them freely;
- `g` is the gradient of the output (a tuple expression for multi-output ops);
- `ctx` (GradCtx) gives the types, the forward output `ctx.out`, and helpers.

Rules build Relay expressions from registered ops, so the result is itself a program that the
rest of the compiler optimises and lowers. This module holds the shorthands, the unary wrapper
that `factories.unary(..., grad=...)` uses and the binary elementwise rules (the unary ones are
written with their op in elemwise.py); the tensor and nn families are in grads_tensor.py and
grads_nn.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..ir import dtype as dt
from ..ir.expr import Call, Expr, call, const
from ..ir.types import TensorType, Type

GradFn = Callable[[Call, Expr, "GradCtx"], list]


@dataclass
class GradCtx:
    """What a gradient rule may need beyond the call and the output gradient."""

    call: Call
    out: Expr  # the forward result
    arg_types: list[Type]
    out_type: Type

    def arg(self, i: int) -> Expr:
        return self.call.args[i]

    @property
    def attrs(self):
        return self.call.attrs

    def dtype(self, i: int | None = None) -> str:
        t = self.out_type if i is None else self.arg_types[i]
        return t.dtype if isinstance(t, TensorType) else "float32"

    def ndim(self, i: int | None = None) -> int:
        t = self.out_type if i is None else self.arg_types[i]
        return t.ndim if isinstance(t, TensorType) else 0

    def shape(self, i: int | None = None) -> tuple:
        t = self.out_type if i is None else self.arg_types[i]
        return t.shape if isinstance(t, TensorType) else ()

    def scalar(self, value: float, i: int | None = None) -> Expr:
        """A scalar constant of the dtype of argument `i` (default: of the output)."""
        return const(value, self.dtype(i))

    def zeros(self, i: int) -> Expr:
        return call("zeros_like", self.arg(i))

    def reduce_to(self, g: Expr, i: int) -> Expr:
        """`g` (shaped like the output) summed down to the shape of argument `i`: the adjoint
        of the broadcast that the op did."""
        a, o = self.arg_types[i], self.out_type
        if isinstance(a, TensorType) and isinstance(o, TensorType):
            if a.shape == o.shape and a.is_static:
                return g
        return call("collapse_sum_like", g, self.arg(i))


# ---------------------------------------------------------------------------------------------
# Shorthands for building rules.


def _c(name: str, *args, **attrs) -> Expr:
    return call(name, *args, **attrs)


def mul(a, b):
    return _c("multiply", a, b)


def div(a, b):
    return _c("divide", a, b)


def add(a, b):
    return _c("add", a, b)


def sub(a, b):
    return _c("subtract", a, b)


def neg(a):
    return _c("negative", a)


def unary(name: str, fn: Callable[[Expr, Expr, Expr, GradCtx], Expr]) -> GradFn:
    """Rule for y = f(x): grad = fn(x, y, g, ctx)."""

    def rule(c, g, ctx):
        return [fn(c.args[0], ctx.out, g, ctx)]

    return rule


def zero_grad(name: str) -> GradFn:
    """Piecewise-constant ops (floor, sign, ...): the derivative is zero almost everywhere."""

    def rule(c, g, ctx):
        return [ctx.zeros(i) if dt.is_float(ctx.dtype(i)) else None for i in range(len(c.args))]

    return rule


# -- binary ---------------------------------------------------------------------------------------
def binary(name: str, fa: Callable, fb: Callable) -> GradFn:
    """Rule for z = f(a, b) with broadcasting: each part is summed back to its input's shape."""

    def rule(c, g, ctx):
        a, b = c.args
        ga = fa(a, b, ctx.out, g, ctx)
        gb = fb(a, b, ctx.out, g, ctx)
        return [
            None if ga is None else ctx.reduce_to(ga, 0),
            None if gb is None else ctx.reduce_to(gb, 1),
        ]

    return rule


def _select(cond, g):
    return _c("where", cond, g, _c("zeros_like", g))


_g_add = binary("add", lambda a, b, z, g, k: g, lambda a, b, z, g, k: g)
_g_subtract = binary("subtract", lambda a, b, z, g, k: g, lambda a, b, z, g, k: neg(g))
_g_multiply = binary("multiply", lambda a, b, z, g, k: mul(g, b), lambda a, b, z, g, k: mul(g, a))
_g_divide = binary(
    "divide", lambda a, b, z, g, k: div(g, b), lambda a, b, z, g, k: neg(div(mul(g, z), b))
)
_g_floor_divide = binary(
    "floor_divide",
    lambda a, b, z, g, k: _c("zeros_like", g),
    lambda a, b, z, g, k: _c("zeros_like", g),
)
_g_mod = binary(
    "mod", lambda a, b, z, g, k: g, lambda a, b, z, g, k: neg(mul(g, _c("trunc", div(a, b))))
)
_g_floor_mod = binary(
    "floor_mod", lambda a, b, z, g, k: g, lambda a, b, z, g, k: neg(mul(g, _c("floor", div(a, b))))
)
_g_power = binary(
    "power",
    lambda a, b, z, g, k: mul(g, mul(b, _c("power", a, sub(b, k.scalar(1.0))))),
    lambda a, b, z, g, k: mul(g, mul(z, _c("log", a))),
)


def _minmax(name: str, ge: str, lt: str):
    """maximum, minimum, fmax, fmin: the gradient goes to the operand that was chosen."""
    return binary(
        name,
        (lambda ge: lambda a, b, z, g, k: _select(_c(ge, a, b), g))(ge),
        (lambda lt: lambda a, b, z, g, k: _select(_c(lt, a, b), g))(lt),
    )


_g_atan2 = binary(
    "atan2",
    lambda a, b, z, g, k: div(mul(g, b), add(mul(a, a), mul(b, b))),
    lambda a, b, z, g, k: neg(div(mul(g, a), add(mul(a, a), mul(b, b)))),
)

__all__ = ["GradCtx", "add", "sub", "mul", "div", "neg"]
