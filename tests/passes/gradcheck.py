"""Finite-difference checks of gradient rules, driven by the op registry's samples."""

from __future__ import annotations

import numpy as np

import relay_core
from relay_core.ir import Constant, Function, IRModule, Tuple, TupleGetItem, Var, call
from relay_core.ir import dtype as dt
from relay_core.ir.expr import Call, Op
from relay_core.ir.types import TensorType, TupleType

FLOATS = ("float16", "float32", "float64", "bfloat16")


def is_float(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.name in FLOATS


def _as64(a):
    return a.astype("float64") if is_float(a) else a


def _out_type(op, inputs, attrs):
    types = [TensorType(x.shape, dt.from_numpy(x.dtype)) for x in inputs]
    return op.type_rel(types, attrs)


def prepare(op, sample):
    """Inputs in float64 when the op accepts them (more exact differences), else as given."""
    attrs = op.make_attrs(**sample.attrs)
    wide = [_as64(x) for x in sample.inputs]
    try:
        _out_type(op, wide, attrs)
        ref = op.ref(list(wide), attrs)
        if all(
            not isinstance(r, np.ndarray) or r.dtype.name == "float64" or not is_float(r)
            for r in (ref if isinstance(ref, tuple) else (ref,))
        ):
            return wide, attrs
    except Exception:
        pass
    return list(sample.inputs), attrs


def weighted_module(op, inputs, attrs, weights):
    """@main(float inputs) = the op's float outputs times fixed random weights."""
    params, args = [], []
    for i, x in enumerate(inputs):
        if is_float(x):
            v = Var(f"p{i}", TensorType(x.shape, dt.from_numpy(x.dtype)))
            params.append(v)
            args.append(v)
        else:
            args.append(Constant(x))
    c = Call(Op.get(op.name), tuple(args), attrs)
    out_t = _out_type(op, inputs, attrs)
    if isinstance(out_t, TupleType):
        fields = []
        for i, w in enumerate(weights):
            if w is not None:
                fields.append(call("multiply", TupleGetItem(c, i), Constant(w)))
        body = Tuple(tuple(fields)) if len(fields) != 1 else fields[0]
    else:
        body = call("multiply", c, Constant(weights[0]))
    return IRModule.from_expr(Function(tuple(params), body))


def output_weights(op, inputs, attrs, rng):
    out = op.ref(list(inputs), attrs)
    outs = out if isinstance(out, tuple) else (out,)
    return [rng.uniform(0.5, 1.5, o.shape).astype(o.dtype) if is_float(o) else None for o in outs]


def numeric_grads(op, inputs, attrs, weights, eps):
    """Central differences of sum(weights * outputs) for each float input, and a mask of the
    elements where the function is smooth (differences at eps and eps/8 agree): at a jump
    (floor, a tiny divisor of mod, ties of max) finite differences mean nothing."""

    def f(xs):
        out = op.ref(list(xs), attrs)
        outs = out if isinstance(out, tuple) else (out,)
        total = 0.0
        for o, w in zip(outs, weights):
            if w is not None:
                if o.shape != w.shape:
                    raise _ShapeChanged
                total += float(np.sum(o.astype("float64") * w))
        return total

    def diff(i, x, idx, h):
        with np.errstate(all="ignore"):  # samples may hold inf / nan on purpose
            return _diff(i, x, idx, h)

    def _diff(i, x, idx, h):
        xs = list(inputs)
        xp = x.copy()
        xp[idx] = x[idx] + h
        xm = x.copy()
        xm[idx] = x[idx] - h
        xs[i] = xp
        fp = f(xs)
        xs[i] = xm
        fm = f(xs)
        return (fp - fm) / (float(xp[idx]) - float(xm[idx]))

    grads, smooth = [], []
    for i, x in enumerate(inputs):
        if not is_float(x):
            continue
        g = np.zeros(x.shape, "float64")
        ok = np.ones(x.shape, bool)
        for idx in np.ndindex(x.shape):
            h = eps * max(1.0, abs(float(x[idx])))
            try:
                a, b = diff(i, x, idx, h), diff(i, x, idx, h / 8)
            except _ShapeChanged:
                ok[idx] = False
                continue
            g[idx] = a
            ok[idx] = np.isfinite(a) and abs(a - b) <= 1e-3 * max(1.0, abs(a))
        grads.append(g)
        smooth.append(ok)
    return grads, smooth


class _ShapeChanged(Exception):
    """A step changed the output's shape (arange's length): no derivative there."""


def analytic_grads(mod, inputs, mode):
    g = relay_core.gradient(mod, mode)
    floats = [x for x in inputs if is_float(x)]
    _, grads = relay_core.evaluate(g, *floats)
    return [np.asarray(x, "float64") for x in grads]
