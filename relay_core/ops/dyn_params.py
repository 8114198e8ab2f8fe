"""Dynamic twins whose parameters (axes, pads, split sizes) come as tensors.

- dynamic twins whose parameter comes as a tensor (ONNX passes axes / pads / split sizes as
  inputs): dyn.sum ... dyn.sum_square (reductions with an axes tensor), dyn.squeeze,
  dyn.unsqueeze, dyn.split, dyn.nn.pad, dyn.cumsum, dyn.cumprod. Each has `to_static`.
- forget_shape: the identity whose type forgets the dims (If branches and sequence elements
  of different shapes need one common type). It is marked stateful so that FoldConstant never
  replaces it by a constant of the specific type it exists to hide.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType, TupleType
from . import relations as R
from .factories import random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, lookup, register


def _ints(x) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(x).reshape(-1))


def _const_ints(e):
    from ..ir.expr import Constant

    return _ints(e.data) if isinstance(e, Constant) else None


def _static_call(call, name: str, args, **attrs):
    from ..ir.expr import Call, Op

    return Call(Op.get(name), tuple(args), lookup(name).make_attrs(**attrs), span=call.span)


def _param_len(t, op: str, what: str) -> int:
    """The static length of a 1-D integer parameter tensor."""
    t = R.tensor(t, what)
    if not dt.is_int(t.dtype):
        raise OpTypeError(f"{op}: {what} must be integers, got {t.dtype}")
    if t.ndim == 0:
        return 1
    if t.ndim != 1:
        raise OpTypeError(f"{op}: {what} must be 1-D, got shape {t.shape}")
    if not isinstance(t.shape[0], int):
        raise OpTypeError(f"{op}: the length of {what} must be static (it fixes the result's rank)")
    return t.shape[0]


def _axes(values, ndim: int, op: str) -> tuple[int, ...]:
    out = []
    for a in _ints(values):
        if not -ndim <= a < max(ndim, 1):
            raise EvalError(f"{op}: axis {a} is out of range for rank {ndim}")
        out.append(a + ndim if a < 0 else a)
    if len(set(out)) != len(out):
        raise EvalError(f"{op}: repeated axes {tuple(out)}")
    return tuple(out)


def _reg(
    name,
    rel,
    ref,
    attrs,
    n_inputs,
    doc,
    samples,
    to_static=None,
    pattern=OpPattern.OPAQUE,
    shape_inputs=(1,),
    **kw,
):
    # shape_inputs: inputs whose static length fixes the result's rank (as dyn.py).
    return register(
        OpDef(
            name,
            rel,
            ref,
            pattern,
            attrs,
            n_inputs,
            doc,
            samples=samples,
            to_static=to_static,
            shape_inputs=tuple(shape_inputs),
            **kw,
        )
    )


# -- reductions with an axes tensor ------------------------------------------------------------
@dataclass(frozen=True)
class DynReduceAttrs:
    keepdims: bool = True
    noop_with_empty_axes: bool = False  # ONNX: no axes means identity instead of all axes


def _dyn_reduce(static: str):
    name = f"dyn.{static}"

    def rel(args, attrs):
        t = R.tensor(args[0])
        n = _param_len(args[1], name, "axes")
        if n == 0:
            if attrs.noop_with_empty_axes:
                return t
            shape = (1,) * t.ndim if attrs.keepdims else ()
        else:
            if n > t.ndim:
                raise OpTypeError(f"{name}: {n} axes for a rank-{t.ndim} input")
            shape = (Any,) * (t.ndim if attrs.keepdims else t.ndim - n)
        return lookup(static).type_rel([TensorType(shape, t.dtype)], _none_attrs(static))

    def ref(xs, attrs):
        x = xs[0]
        axes = _axes(xs[1], x.ndim, name)
        if not axes and attrs.noop_with_empty_axes:
            return x.copy()
        op = lookup(static)
        a = op.make_attrs(axis=axes or None, keepdims=attrs.keepdims)
        return op.ref([x], a)

    def to_static(call):
        axes = _const_ints(call.args[1])
        if axes is None:
            return None
        if not axes and call.attrs.noop_with_empty_axes:
            return _static_call(call, "copy", call.args[:1])
        return _static_call(
            call, static, call.args[:1], axis=axes or None, keepdims=call.attrs.keepdims
        )

    def samples(rng):
        x = random_array(rng, (2, 3, 4), "float32", (0.5, 2.0))
        for axes in [(1,), (0, 2), (-1,), ()]:
            for keep in (True, False):
                yield Sample([x, np.array(axes, np.int64)], {"keepdims": keep})
        yield Sample([x, np.array([], np.int64)], {"noop_with_empty_axes": True})

    _reg(
        name,
        rel,
        ref,
        DynReduceAttrs,
        (2, 2),
        f"{static} over the axes given by a 1-D tensor (ONNX Reduce* with an axes input)",
        samples,
        to_static,
        OpPattern.COMM_REDUCE,
    )


def _none_attrs(static: str):
    # The static relation only needs the dtype rule: reduce nothing of the shape given.
    return lookup(static).make_attrs(axis=(), keepdims=True)


# The reductions with a dynamic twin `dyn.<name>` (te/lower_dyn.py and grads_misc.py use it).
DYN_REDUCTIONS = (
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "l1_norm",
    "l2_norm",
    "log_sum",
    "logsumexp",
    "sum_square",
)
for _r in DYN_REDUCTIONS:
    _dyn_reduce(_r)


# -- squeeze / unsqueeze with an axes tensor -------------------------------------------------
def _squeeze_rel(args, attrs):
    t = R.tensor(args[0])
    n = _param_len(args[1], "dyn.squeeze", "axes")
    if n > t.ndim:
        raise OpTypeError(f"dyn.squeeze: {n} axes for a rank-{t.ndim} input")
    return TensorType((Any,) * (t.ndim - n), t.dtype)


def _squeeze_ref(xs, attrs):
    x = xs[0]
    axes = _axes(xs[1], x.ndim, "dyn.squeeze")
    if any(x.shape[a] != 1 for a in axes):
        raise EvalError(f"dyn.squeeze: axes {axes} of shape {x.shape} are not all 1")
    return np.squeeze(x, axis=axes).copy()


def _squeeze_static(call):
    axes = _const_ints(call.args[1])
    return None if axes is None else _static_call(call, "squeeze", call.args[:1], axis=axes)


def _squeeze_samples(rng):
    x = random_array(rng, (1, 3, 1, 2), "float32")
    for axes in [(0,), (0, 2), (-2,)]:
        yield Sample([x, np.array(axes, np.int64)])


_reg(
    "dyn.squeeze",
    _squeeze_rel,
    _squeeze_ref,
    None,
    (2, 2),
    "dyn.squeeze(data, axes): remove the size-1 axes listed in a 1-D tensor",
    _squeeze_samples,
    _squeeze_static,
    OpPattern.INJECTIVE,
)
declare(
    "dyn.squeeze",
    lower=Rule("relay_core.te.lower_dyn:_dyn_squeeze"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)


def _unsqueeze_rel(args, attrs):
    t = R.tensor(args[0])
    n = _param_len(args[1], "dyn.unsqueeze", "axes")
    return TensorType((Any,) * (t.ndim + n), t.dtype)


def unsqueeze_array(x: np.ndarray, axes) -> np.ndarray:
    out_rank = x.ndim + len(axes)
    norm = sorted(_axes(axes, out_rank, "unsqueeze"))
    for a in norm:
        x = np.expand_dims(x, a)
    return x.copy()


def _unsqueeze_static(call):
    axes = _const_ints(call.args[1])
    data = call.args[0]
    if axes is None or not data.has_type or not isinstance(data.checked_type, TensorType):
        return None
    out_rank = data.checked_type.ndim + len(axes)
    x = data
    # Inserting in increasing order lands each new axis where the output wants it.
    for a in sorted(a + out_rank if a < 0 else a for a in axes):
        x = _static_call(call, "expand_dims", [x], axis=a)
    return x


def _unsqueeze_samples(rng):
    x = random_array(rng, (3, 2), "float32")
    for axes in [(0,), (0, 3), (-1,), (1, -1)]:
        yield Sample([x, np.array(axes, np.int64)])


_reg(
    "dyn.unsqueeze",
    _unsqueeze_rel,
    lambda xs, a: unsqueeze_array(xs[0], _ints(xs[1])),
    None,
    (2, 2),
    "dyn.unsqueeze(data, axes): insert size-1 axes at the output positions in a 1-D tensor "
    "(ONNX Unsqueeze)",
    _unsqueeze_samples,
    _unsqueeze_static,
    OpPattern.INJECTIVE,
)
declare(
    "dyn.unsqueeze",
    lower=Rule("relay_core.te.lower_dyn:_dyn_unsqueeze"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)


# -- split with a sizes tensor -----------------------------------------------------------------
@dataclass(frozen=True)
class DynSplitAttrs:
    axis: int = 0
    num_outputs: int = 1


def _split_rel(args, attrs):
    t = R.tensor(args[0])
    n = _param_len(args[1], "dyn.split", "split")
    if n != attrs.num_outputs:
        raise OpTypeError(f"dyn.split: {n} sizes for {attrs.num_outputs} outputs")
    ax = R.normalize_axis(attrs.axis, t.ndim)
    shape = tuple(Any if i == ax else d for i, d in enumerate(t.shape))
    return TupleType(tuple(TensorType(shape, t.dtype) for _ in range(n)))


def _split_ref(xs, attrs):
    x = xs[0]
    sizes = _ints(xs[1])
    ax = attrs.axis + x.ndim if attrs.axis < 0 else attrs.axis
    if any(s < 0 for s in sizes) or sum(sizes) != x.shape[ax]:
        raise EvalError(f"dyn.split: sizes {sizes} do not add up to the axis size {x.shape[ax]}")
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=ax))


def _split_static(call):
    sizes = _const_ints(call.args[1])
    if sizes is None:
        return None
    idx = tuple(int(i) for i in np.cumsum(sizes)[:-1])
    return _static_call(call, "split", call.args[:1], indices_or_sections=idx, axis=call.attrs.axis)


def _split_samples(rng):
    x = random_array(rng, (3, 6), "float32")
    yield Sample([x, np.array([2, 4], np.int64)], {"axis": 1, "num_outputs": 2})
    yield Sample([x, np.array([1, 0, 2], np.int64)], {"axis": 0, "num_outputs": 3})


_reg(
    "dyn.split",
    _split_rel,
    _split_ref,
    DynSplitAttrs,
    (2, 2),
    "dyn.split(data, sizes): split along `axis` into pieces of the given sizes",
    _split_samples,
    _split_static,
    OpPattern.INJECTIVE,
)
declare(
    "dyn.split",
    lower=Rule("relay_core.te.lower_dyn:_dyn_split"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)


# -- pad with a pads tensor ----------------------------------------------------------------------
@dataclass(frozen=True)
class DynPadAttrs:
    pad_mode: str = "constant"


def _pad_rel(args, attrs):
    t = R.tensor(args[0])
    n = _param_len(args[1], "dyn.nn.pad", "pad_width")
    if n != 2 * t.ndim:
        raise OpTypeError(f"dyn.nn.pad: {n} pad values for a rank-{t.ndim} input")
    return TensorType((Any,) * t.ndim, t.dtype)


def _pad_width(values, ndim):
    p = _ints(values)
    return tuple((p[i], p[i + ndim]) for i in range(ndim))


def _pad_ref(xs, attrs):
    x = xs[0]
    op = lookup("nn.pad")
    a = op.make_attrs(pad_width=_pad_width(xs[1], x.ndim), pad_mode=attrs.pad_mode)
    return op.ref([x] + list(xs[2:]), a)


def _pad_static(call):
    p = _const_ints(call.args[1])
    if p is None:
        return None
    return _static_call(
        call,
        "nn.pad",
        [call.args[0], *call.args[2:]],
        pad_width=_pad_width(p, len(p) // 2),
        pad_mode=call.attrs.pad_mode,
    )


def _pad_samples(rng):
    x = random_array(rng, (2, 3), "float32")
    yield Sample([x, np.array([1, 0, 0, 2], np.int64)])
    yield Sample([x, np.array([0, 1, 1, 0], np.int64), np.array(5.0, np.float32)])
    yield Sample([x, np.array([1, 1, 1, 1], np.int64)], {"pad_mode": "reflect"})
    yield Sample([x, np.array([0, -1, 0, 2], np.int64)], {"pad_mode": "edge"})


_reg(
    "dyn.nn.pad",
    _pad_rel,
    _pad_ref,
    DynPadAttrs,
    (2, 3),
    "dyn.nn.pad(data, pads[, value]): nn.pad with ONNX's flat pads tensor (all begins, "
    "then all ends)",
    _pad_samples,
    _pad_static,
    OpPattern.INJECTIVE,
)
declare(
    "dyn.nn.pad",
    lower=Rule("relay_core.te.lower_dyn:_dyn_pad"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)


# -- cumsum / cumprod with an axis tensor --------------------------------------------------------
@dataclass(frozen=True)
class DynCumAttrs:
    exclusive: bool = False
    reverse: bool = False


def _dyn_cum(static: str):
    name = f"dyn.{static}"

    def rel(args, attrs):
        t = R.tensor(args[0])
        a = R.tensor(args[1], "axis")
        if not dt.is_int(a.dtype) or a.ndim > 1:
            raise OpTypeError(f"{name}: axis must be an integer scalar or 1-element tensor")
        return lookup(static).type_rel([t], lookup(static).make_attrs(axis=0 if t.ndim else None))

    def ref(xs, attrs):
        x = xs[0]
        (axis,) = _axes(xs[1], x.ndim, name)
        op = lookup(static)
        return op.ref(
            [x], op.make_attrs(axis=axis, exclusive=attrs.exclusive, reverse=attrs.reverse)
        )

    def to_static(call):
        a = _const_ints(call.args[1])
        if a is None:
            return None
        return _static_call(
            call,
            static,
            call.args[:1],
            axis=a[0],
            exclusive=call.attrs.exclusive,
            reverse=call.attrs.reverse,
        )

    def samples(rng):
        x = random_array(rng, (2, 3), "float32")
        for axis in (0, 1, -1):
            yield Sample([x, np.array(axis, np.int32)])
            yield Sample([x, np.array([axis], np.int64)], {"exclusive": True, "reverse": True})

    _reg(
        name,
        rel,
        ref,
        DynCumAttrs,
        (2, 2),
        f"{static} along the axis given by a tensor (ONNX CumSum / CumProd)",
        samples,
        to_static,
        shape_inputs=(),
    )


_dyn_cum("cumsum")
_dyn_cum("cumprod")


# -- forget_shape ------------------------------------------------------------------------------
def _forget_rel(args, attrs):
    t = args[0]
    if isinstance(t, TensorType):
        return TensorType((Any,) * t.ndim, t.dtype)
    raise OpTypeError(f"forget_shape needs a tensor, got {t}")


def _forget_samples(rng):
    for shape in [(), (3,), (2, 0, 4)]:
        yield Sample([random_array(rng, shape, "float32")])


_reg(
    "forget_shape",
    _forget_rel,
    lambda xs, a: xs[0],
    None,
    (1, 1),
    "the identity, typed with every dim unknown (a common type for values of different "
    "shapes: If branches, sequence elements); never folded",
    _forget_samples,
    stateful=True,
    shape_inputs=(),
)
declare("forget_shape", lower=Rule("relay_core.te.lower_transform:_forget_shape"), view=True)


# -- how each op is computed (JAX lax style: declared beside the ops; a Rule / Kernel names a
# function of relay_core/te or relay_core/backend, imported on first use) ------------------
declare(
    "dyn.sum",
    lower=Rule("relay_core.te.lower_dyn:_dyn_reduce", "sum"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
declare(
    "dyn.mean",
    lower=Rule("relay_core.te.lower_dyn:_dyn_reduce", "mean"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
declare(
    "dyn.max",
    lower=Rule("relay_core.te.lower_dyn:_dyn_reduce", "max"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
declare(
    "dyn.min",
    lower=Rule("relay_core.te.lower_dyn:_dyn_reduce", "min"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
declare(
    "dyn.prod",
    lower=Rule("relay_core.te.lower_dyn:_dyn_reduce", "prod"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
declare(
    "dyn.l1_norm",
    lower=Rule("relay_core.te.lower_dyn:_dyn_reduce", "l1_norm"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
declare(
    "dyn.l2_norm",
    lower=Rule("relay_core.te.lower_dyn:_dyn_reduce", "l2_norm"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
declare(
    "dyn.log_sum",
    lower=Rule("relay_core.te.lower_dyn:_dyn_reduce", "log_sum"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
declare(
    "dyn.logsumexp",
    lower=Rule("relay_core.te.lower_dyn:_dyn_reduce", "logsumexp"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
declare(
    "dyn.sum_square",
    lower=Rule("relay_core.te.lower_dyn:_dyn_reduce", "sum_square"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
declare(
    "dyn.cumsum",
    lower=Rule("relay_core.te.lower_dyn:_dyn_scan", "sum"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
declare(
    "dyn.cumprod",
    lower=Rule("relay_core.te.lower_dyn:_dyn_scan", "prod"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
