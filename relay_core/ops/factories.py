"""Factories for op families, so that adding an elementwise op is one line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import OpTypeError
from ..ir import dtype as dt
from ..ir.types import TensorType
from . import relations as R
from .grads import unary as unary_grad
from .registry import Elementwise, OpDef, OpPattern, Rule, Sample, register

# Which dtypes an op accepts.
KINDS: dict[str, Callable[[str], bool]] = {
    "float": dt.is_float,
    "int": dt.is_int,
    "bool": dt.is_bool,
    "numeric": lambda d: dt.is_float(d) or dt.is_int(d),
    "signed": lambda d: dt.is_float(d) or d in dt.SIGNED_INT_DTYPES,
    "intbool": lambda d: dt.is_int(d) or dt.is_bool(d),
    "any": lambda d: d != "string",
    "all": lambda d: True,
}


def check_kind(t: TensorType, kind: str, op: str, what: str = "input") -> None:
    if not KINDS[kind](t.dtype):
        raise OpTypeError(f"{op} needs a {kind} {what}, got dtype {t.dtype}")


def compute(fn: Callable, out_dtype: str | None = None) -> Callable:
    """Wrap a numpy function: run it in a dtype numpy supports, return the result's dtype."""
    plans: dict = {}

    def run(*arrays):
        d0 = arrays[0].dtype
        plan = plans.get(d0)
        if plan is None:
            in_dt = dt.from_numpy(d0)
            cd = dt.compute_dtype(in_dt)
            conv = None if cd == in_dt else dt.to_numpy(cd)
            plan = plans[d0] = (conv, dt.to_numpy(out_dtype or in_dt))
        conv, target = plan
        if conv is not None:
            arrays = tuple(a.astype(conv) for a in arrays)
        with np.errstate(all="ignore"):
            out = fn(*arrays)
        if type(out) is not np.ndarray or out.dtype != target:
            out = np.asarray(out).astype(target, copy=False)
        return out

    return run


# Shapes and dtypes that sample generators draw from: awkward sizes on purpose.
SAMPLE_SHAPES = [(), (1,), (7,), (3, 5), (2, 1, 4), (2, 3, 4, 5), (0, 3)]
SAMPLE_DTYPES = {
    "float": ["float32", "float64", "float16"],
    "int": ["int32", "int64", "int8", "uint8"],
    "bool": ["bool"],
    "numeric": ["float32", "int32", "int64", "float64"],
    "signed": ["float32", "int32", "int64"],
    "intbool": ["int32", "int64", "bool"],
    "any": ["float32", "int32", "bool"],
    "all": ["float32", "int64", "bool"],
}


def random_array(rng: np.random.Generator, shape, dtype: str, domain=(-3.0, 3.0)) -> np.ndarray:
    """Random values of `dtype` in `domain` (ints: a small range, bools: coin flips)."""
    lo, hi = domain
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dt.is_int(dtype):
        info = np.iinfo(dt.to_numpy(dtype)) if dtype in dt.NATIVE_DTYPES else None
        lo_i = max(int(np.floor(lo)), info.min if info is not None else -8)
        hi_i = min(int(np.ceil(hi)), info.max if info is not None else 7)
        return np.asarray(rng.integers(lo_i, hi_i + 1, size=shape)).astype(dt.to_numpy(dtype))
    x = rng.uniform(lo, hi, size=shape)
    return np.asarray(x).astype(dt.to_numpy(dtype))


def elementwise_samples(kind: str, arity: int, domain=(-3.0, 3.0), nonzero_rhs=False):
    def gen(rng):
        for dtype in SAMPLE_DTYPES[kind]:
            for shape in SAMPLE_SHAPES:
                if arity == 1:
                    yield Sample([random_array(rng, shape, dtype, domain)])
                    continue
                # Broadcast the rhs over a suffix of the lhs shape.
                rshape = shape[len(shape) // 2 :]
                a = random_array(rng, shape, dtype, domain)
                b = random_array(rng, rshape, dtype, domain)
                if nonzero_rhs and dtype != "bool":
                    b = np.where(b == 0, np.ones_like(b), b)
                yield Sample([a, b])

    return gen


def unary(
    name: str,
    fn: Callable,
    kind: str = "float",
    out_dtype: str | None = None,
    pattern: OpPattern = OpPattern.ELEMWISE,
    doc: str = "",
    domain: tuple[float, float] = (-3.0, 3.0),
    grad: Callable | Rule | None = None,
    te: Callable | Rule | None = None,
    intrinsic: bool = False,
) -> OpDef:
    """An elementwise op of one tensor; `out_dtype` fixes the result dtype (e.g. "bool").

    `domain` is where sample inputs are drawn from (e.g. (0.1, 5) for log).
    `grad(x, y, g, ctx)`: the input's gradient from the input x, the output y and the output's
    gradient g, as Relay expressions (ctx is ops.grads.GradCtx: `ctx.scalar(2.0)`, ...); or a
    `Rule` naming a full gradient rule.
    How the backend computes it: `intrinsic=True`, by the tensor-expression intrinsic of the
    op's name (`unary("exp", np.exp, intrinsic=True, grad=...)`); or `te(x, E)`, one output
    element from one input element x in the tensor-expression language, E being
    relay_core.te.expr (`E.call("exp", x)`, `E.select(...)`); or `te=Rule(...)` naming a rule.
    """
    run = compute(fn, out_dtype)
    if intrinsic:
        if te is not None:
            raise TypeError(f"unary {name}: give intrinsic=True or te=, not both")
        te = Rule("relay_core.te.lower_elemwise:_intrinsic", name)
    if grad is not None and not isinstance(grad, Rule):
        grad = unary_grad(name, grad)

    def rel(args, attrs):
        t = R.tensor(args[0])
        check_kind(t, kind, name)
        return TensorType(t.shape, out_dtype or t.dtype)

    return register(
        OpDef(
            name,
            rel,
            lambda xs, attrs: run(xs[0]),
            pattern,
            None,
            (1, 1),
            doc or name,
            lower=te if te is None or isinstance(te, Rule) else Elementwise(te),
            grad=grad,
            samples=elementwise_samples(kind, 1, domain),
        )
    )


def binary(
    name: str,
    fn: Callable,
    kind: str = "numeric",
    out_dtype: str | None = None,
    pattern: OpPattern = OpPattern.BROADCAST,
    doc: str = "",
    domain: tuple[float, float] = (-3.0, 3.0),
    nonzero_rhs: bool = False,
    te: Rule | None = None,
    grad: Rule | None = None,
) -> OpDef:
    """A broadcasting op of two tensors of one dtype; `te` and `grad` name how the backend
    computes it and its gradient rule."""
    run = compute(fn, out_dtype)

    def rel(args, attrs):
        a, b = R.tensor(args[0], "lhs"), R.tensor(args[1], "rhs")
        if a.dtype != b.dtype:
            raise OpTypeError(f"{name} needs operands of one dtype, got {a.dtype} and {b.dtype}")
        check_kind(a, kind, name)
        return TensorType(R.broadcast_shapes(a.shape, b.shape), out_dtype or a.dtype)

    return register(
        OpDef(
            name,
            rel,
            lambda xs, attrs: run(xs[0], xs[1]),
            pattern,
            None,
            (2, 2),
            doc or name,
            lower=te,
            grad=grad,
            samples=elementwise_samples(kind, 2, domain, nonzero_rhs),
        )
    )


@dataclass(frozen=True)
class ReduceAttrs:
    axis: tuple[int, ...] | None = None  # None: every axis
    keepdims: bool = False
    exclude: bool = False  # reduce over every axis *not* in `axis`


def reduce_axes(x: np.ndarray, attrs) -> tuple[int, ...]:
    nd = x.ndim
    if attrs.axis is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(a + nd if a < 0 else a for a in attrs.axis)
    if getattr(attrs, "exclude", False):
        axes = tuple(i for i in range(nd) if i not in axes)
    return axes


def reduce(
    name: str,
    fn: Callable,
    kind: str = "numeric",
    attrs_cls: type = ReduceAttrs,
    rel: Callable = R.rel_reduce,
    out_dtype: str | None = None,
    doc: str = "",
    samples: Callable | None = None,
) -> OpDef:
    """A reduction: `fn(x, axis=tuple, keepdims=bool)` in numpy's signature.

    `samples` replaces the default sample generator (e.g. to add empty reductions).
    """

    def ref(xs, attrs):
        x = xs[0]
        in_dt = dt.from_numpy(x.dtype)
        cd = dt.compute_dtype(in_dt)
        xc = x.astype(dt.to_numpy(cd)) if cd != in_dt else x
        with np.errstate(all="ignore"):
            out = np.asarray(fn(xc, axis=reduce_axes(x, attrs), keepdims=attrs.keepdims))
            return out.astype(dt.to_numpy(out_dtype or in_dt), copy=False)

    def relation(args, attrs):
        check_kind(R.tensor(args[0]), kind, name)
        return rel(args, attrs)

    def default_samples(rng):
        for dtype in SAMPLE_DTYPES[kind][:2]:
            for shape in [(5,), (3, 4), (2, 3, 4), (2, 1, 3, 5)]:
                x = random_array(rng, shape, dtype)
                yield Sample([x], {"axis": None})
                yield Sample([x], {"axis": (-1,), "keepdims": True})
                if len(shape) > 1:
                    yield Sample([x], {"axis": (0,)})
                    yield Sample([x], {"axis": (0,), "exclude": True})

    return register(
        OpDef(
            name,
            relation,
            ref,
            OpPattern.COMM_REDUCE,
            attrs_cls,
            (1, 1),
            doc or name,
            samples=samples or default_samples,
        )
    )
