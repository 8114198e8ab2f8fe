"""Dynamic twins of static ops: the shape or parameter comes as a tensor input.

The result rank comes from the *length* of the shape tensor, which must be static; the dims are
`Any` where they depend on the tensor's values. `to_static(call)` gives the equivalent static
call when those inputs are Constants (DynamicToStatic uses it), else None.

`OpDef.shape_inputs` names the inputs whose static length fixes the result's rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType
from . import relations as R
from .creation import full_array, one_hot_array, one_hot_shape
from .dyn_params import _const_ints, _ints, _static_call
from .dyn_params import _reg as _dyn  # one registration helper for dynamic ops
from .factories import random_array
from .misc import trilu_array
from .registry import OpPattern, Rule, Sample, declare
from .shape_sources import carry_dims, dim_sources, shape_entries
from .sort import topk_arrays, topk_type
from .transform_broadcast import broadcast_array, tile_shape
from .transform_reshape import reshape_shape
from .transform_slice import slice_plan, strided_slice_array


def _param(t, op, what, scalar=False):
    """A 1-D (or scalar) integer parameter tensor; returns its static length (None if unknown)."""
    t = R.tensor(t, what)
    if not dt.is_int(t.dtype):
        raise OpTypeError(f"{op}: {what} must be integers, got {t.dtype}")
    if scalar:
        if t.ndim > 1 or (t.ndim == 1 and isinstance(t.shape[0], int) and t.shape[0] != 1):
            raise OpTypeError(f"{op}: {what} must be a scalar, got shape {t.shape}")
        return 1
    if t.ndim != 1:
        raise OpTypeError(f"{op}: {what} must be 1-D, got shape {t.shape}")
    return t.shape[0] if isinstance(t.shape[0], int) else None


def _length(t, op, what):
    n = _param(t, op, what)
    if n is None:
        raise OpTypeError(f"{op}: the length of {what} must be static (it fixes the result's rank)")
    return n


def _runtime(fn):
    """Run a shape rule on run-time values: an invalid value is an EvalError, not a type error."""

    def run(*args, **kw):
        try:
            return fn(*args, **kw)
        except OpTypeError as e:
            raise EvalError(str(e)) from None

    return run


# -- dyn.reshape ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DynReshapeAttrs:
    allowzero: bool = False


def _reshape_rel(args, attrs):
    t = R.tensor(args[0])
    return TensorType((Any,) * _length(args[1], "dyn.reshape", "newshape"), t.dtype)


def _reshape_ref(xs, attrs):
    x = xs[0]
    return np.reshape(x, _runtime(reshape_shape)(x.shape, _ints(xs[1]), attrs.allowzero)).copy()


def _reshape_static(call):
    ns = _const_ints(call.args[1])
    if ns is None:
        ns = _copied_dims(call.args[0], call.args[1], call.attrs.allowzero)
        if ns is None:
            return None
    return _static_call(call, "reshape", call.args[:1], newshape=ns, allowzero=call.attrs.allowzero)


def _copied_dims(data, shape, allowzero: bool):
    """A static newshape for `dyn.reshape(data, shape)` when `shape` concatenates constants
    and dims read off tensors (`x.view(x.size(0), g, -1, h, w)`, see shape_entries): a known
    dim is its value, data's own dim at the same position 0 (copied), one unknown -1. None
    when more than one is unknown or the shape is not such a concatenation."""
    entries = None if allowzero else shape_entries(shape, data)
    if entries is not None and entries.count(None) + entries.count(-1) > 1:
        entries = _solved(entries, dim_sources(shape), data.checked_type.shape)
    if entries is None:
        return None
    return tuple(0 if e == "same" else -1 if e is None else e for e in entries)


def _solved(entries, sources, dims):
    """Entries of a reshape with several unknown: the data's dims multiples of one named dim n,
    all unknown entries but one named dims read off other tensors. The other unknown is then the
    data's size over the rest, and the one named entry left the -1: a (2*n, 96, 8, 28, 28)
    tensor reshaped to (n, 2, 96, -1) gets 6272. None when that does not work out."""
    from ..ir.types import SYMBOLIC_DIMS

    sizes, named, unknown = [], [], []
    for i, (e, src) in enumerate(zip(entries, sources)):
        d = None
        if e == "same" or e == 0:
            d = dims[i] if i < len(dims) else None
        elif isinstance(e, int) and e > 0:
            d = e
        elif isinstance(src, tuple):
            d = src[0].checked_type.shape[src[1]]
            d = d if isinstance(d, SYMBOLIC_DIMS) else None
            named += [i] if d is not None else []
        if d is None:
            unknown.append(i)
        sizes.append(d)
    if len(unknown) != 1 or len(named) > 1:
        return None
    rest = R.dim_div(R.prod(dims), R.prod([d for d in sizes if d is not None]))
    if not isinstance(rest, int):
        return None
    out = list(entries)
    out[unknown[0]] = rest
    if named:
        out[named[0]] = None
    return out


def _reshape_samples(rng):
    x = random_array(rng, (2, 3, 4), "float32")
    for ns in [(6, 4), (0, -1), (-1,), (4, 0, -1), (1, 24, 1)]:
        yield Sample([x, np.array(ns, np.int64)])
    yield Sample(
        [random_array(rng, (0, 3), "int32"), np.array([3, 0], np.int32)], {"allowzero": True}
    )


_dyn(
    "dyn.reshape",
    _reshape_rel,
    _reshape_ref,
    DynReshapeAttrs,
    (2, 2),
    "dyn.reshape(data, newshape): reshape with the ONNX Reshape rules, newshape a 1-D tensor",
    _reshape_samples,
    _reshape_static,
)
declare(
    "dyn.reshape",
    lower=Rule("relay_core.te.lower_dyn:_dyn_reshape"),
    view=True,
    grad=Rule("relay_core.ops.grads_tensor:_like_input", "dyn.reshape"),
)


# -- dyn.broadcast_to -----------------------------------------------------------------------------
def _bcast_rel(args, attrs):
    t = R.tensor(args[0])
    n = _length(args[1], "dyn.broadcast_to", "shape")
    nd = max(t.ndim, n)
    padded = (1,) * (nd - t.ndim) + tuple(t.shape)
    out = []
    for i, d in enumerate(padded):
        if i < nd - n:
            out.append(d)  # no shape value here: the data dim stays
        elif isinstance(d, int) and d != 1:
            out.append(d)  # the shape value must be 1 or d
        else:
            out.append(Any)
    return TensorType(tuple(out), t.dtype)


def _bcast_static(call):
    shape = _const_ints(call.args[1])
    if shape is not None:
        return _static_call(call, "broadcast_to", call.args[:1], shape=shape)
    like = _shape_source(call.args[1])
    if like is None:
        return _bcast_read_dims(call)
    # Expand(y, Shape(x)) (`y.expand_as(x)`: timm's ECA / CBAM gates): broadcast_to_like has
    # the same bidirectional rule and keeps x's dims, named batch included
    return _static_call(call, "broadcast_to_like", (call.args[0], like))


def _bcast_read_dims(call):
    """Expand to sizes mixing constants and dims read off tensors (torchvision's multi-scale
    RoI pooling: `index.expand(n, C, h, w)`, n a run-time count): a static broadcast over the
    constants, then broadcast to the read dims, so the result keeps the static ones."""
    data, entries = call.args[0], dim_sources(call.args[1])
    dims = data.checked_type.shape if data.has_type else None
    if entries is None or dims is None or any(e is None for e in entries):
        return None
    if len(entries) == len(dims):  # a dim of data's own at its place passes through as is
        own = shape_entries(call.args[1], data) or [None] * len(entries)
        entries = [1 if o == "same" else e for e, o in zip(entries, own)]
    static = tuple(1 if isinstance(e, tuple) else e for e in entries)
    base = _static_call(call, "broadcast_to", (data,), shape=static)
    if not any(isinstance(e, tuple) for e in entries):
        return base
    if len(static) < len(dims) or any(d == 0 or e == 0 for d, e in zip(dims, static)):
        return None
    return carry_dims(base, entries)


def _shape_source(shape):
    """x when `shape` is `shape_of(x)` (through integer casts), else None."""
    from ..ir.expr import Call

    while type(shape) is Call and getattr(shape.op, "name", None) == "cast":
        shape = shape.args[0]
    if type(shape) is Call and getattr(shape.op, "name", None) == "shape_of":
        return shape.args[0]
    return None


def _bcast_samples(rng):
    for shape, target in [
        ((3, 1), (2, 1, 6)),
        ((), (4,)),
        ((2, 3), (1,)),
        ((1, 4), (3, 1)),
        ((5,), (0, 1)),
        ((2, 1), ()),
    ]:
        yield Sample([random_array(rng, shape, "float32"), np.array(target, np.int64).reshape(-1)])


_dyn(
    "dyn.broadcast_to",
    _bcast_rel,
    lambda xs, a: broadcast_array(xs[0], _ints(xs[1])),
    None,
    (2, 2),
    "dyn.broadcast_to(data, shape): bidirectional broadcast as ONNX Expand",
    _bcast_samples,
    _bcast_static,
)
declare(
    "dyn.broadcast_to",
    lower=Rule("relay_core.te.lower_dyn:_dyn_broadcast_to"),
    grad=Rule("relay_core.ops.grads_tensor:_g_broadcast"),
)


# -- dyn.tile -------------------------------------------------------------------------------------
def _tile_rel(args, attrs):
    t = R.tensor(args[0])
    n = _length(args[1], "dyn.tile", "reps")
    return TensorType(tile_shape(t.shape, (Any,) * n), t.dtype)


def _tile_static(call):
    reps = _const_ints(call.args[1])
    if reps is not None:
        return _static_call(call, "tile", call.args[:1], reps=reps)
    # `x.repeat(y.size(0), 1, ...)` (RAFT's coordinate grid): repeats read off a tensor on axes
    # of size 1 are a broadcast to that tensor's dim
    data, entries = call.args[0], dim_sources(call.args[1])
    dims = data.checked_type.shape if data.has_type else None
    if entries is None or dims is None or len(entries) != len(dims):
        return None
    if any(e is None or (isinstance(e, tuple) and dims[i] != 1) for i, e in enumerate(entries)):
        return None
    static = tuple(1 if isinstance(e, tuple) else e for e in entries)
    if any(r != 1 for r in static):
        data = _static_call(call, "tile", (data,), reps=static)
    return carry_dims(data, entries)


def _tile_ref(xs, attrs):
    reps = _ints(xs[1])
    if any(r < 0 for r in reps):
        raise EvalError(f"dyn.tile: negative repeat in {reps}")
    return np.tile(xs[0], reps)


def _tile_samples(rng):
    for shape, reps in [((2, 3), (2, 1)), ((3,), (1, 2)), ((2, 0), (3, 3)), ((), (4,))]:
        yield Sample([random_array(rng, shape, "int32"), np.array(reps, np.int64)])


_dyn(
    "dyn.tile",
    _tile_rel,
    _tile_ref,
    None,
    (2, 2),
    "dyn.tile(data, reps): numpy.tile",
    _tile_samples,
    _tile_static,
)
declare(
    "dyn.tile",
    lower=Rule("relay_core.te.lower_dyn:_dyn_tile"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "dyn.tile", (0,)),
)


# -- dyn.strided_slice ----------------------------------------------------------------------------
@dataclass(frozen=True)
class DynSliceAttrs:
    slice_mode: str = "end"
    # the sliced axes when they are static (the call then has no axes input): the type keeps
    # every other axis' dim (`chunk(x, 2, dim=0)` of a run-time batch: only axis 0 is unknown)
    axes: tuple[int, ...] | None = None


def _slice_rel(args, attrs):
    t = R.tensor(args[0])
    op = "dyn.strided_slice"
    n = _param(args[1], op, "begin")
    for i, what in [(2, "end"), (3, "strides"), (4, "axes")][: len(args) - 2]:
        m = _param(args[i], op, what)
        if n is not None and m is not None and m != n:
            raise OpTypeError(f"{op}: {what} has {m} values, begin has {n}")
    if attrs.slice_mode not in ("end", "size"):
        raise OpTypeError(f"{op}: slice_mode must be 'end' or 'size'")
    if n is not None and n > t.ndim:
        raise OpTypeError(f"{op}: {n} begin values for a tensor of rank {t.ndim}")
    if attrs.axes is not None:
        if len(args) == 5:
            raise OpTypeError(f"{op}: axes given both as an attribute and as an input")
        if n is not None and n != len(attrs.axes):
            raise OpTypeError(f"{op}: {len(attrs.axes)} axes, begin has {n} values")
        sliced = set(R.normalize_axes(attrs.axes, t.ndim, f"{op} axis"))
        return TensorType(tuple(Any if a in sliced else d for a, d in enumerate(t.shape)), t.dtype)
    if len(args) == 5 or n is None:
        return TensorType((Any,) * t.ndim, t.dtype)  # which axes are sliced is not known
    return TensorType((Any,) * n + tuple(t.shape[n:]), t.dtype)


def _slice_plan(shape, xs, attrs):
    vals = [_ints(v) for v in xs[1:]]
    begin, end = vals[0], vals[1]
    strides = vals[2] if len(vals) > 2 else ()
    axes = vals[3] if len(vals) > 3 else attrs.axes
    return _runtime(slice_plan)(
        shape, begin, end, strides, axes, attrs.slice_mode, "dyn.strided_slice"
    )


def _slice_ref(xs, attrs):
    plan = _slice_plan(xs[0].shape, xs, attrs)
    return _runtime(strided_slice_array)(xs[0], plan)


def _slice_static(call):
    vals = [_const_ints(a) for a in call.args[1:]]
    if any(v is None for v in vals):
        return None
    kw = {"begin": vals[0], "end": vals[1], "slice_mode": call.attrs.slice_mode}
    if len(vals) > 2:
        kw["strides"] = vals[2]
    if len(vals) > 3 or call.attrs.axes is not None:
        kw["axes"] = vals[3] if len(vals) > 3 else call.attrs.axes
    return _static_call(call, "strided_slice", call.args[:1], **kw)


def _slice_samples(rng):
    x = random_array(rng, (5, 6, 7), "float32")
    big = 2**63 - 1
    for vals in [
        ((1,), (3,)),
        ((0, 1), (5, -1), (2, 1)),
        ((-1,), (-big,), (-1,)),
        ((0,), (big,), (1,), (2,)),
        ((2, 0), (2, 3), (1, 1), (-1, 0)),
        ((4, -3), (0, -1), (-2, 1)),
    ]:
        yield Sample([x] + [np.array(v, np.int64) for v in vals])
    yield Sample([x, np.array([1, 2]), np.array([2, -1])], {"slice_mode": "size"})
    yield Sample([x, np.array([1]), np.array([-1])], {"axes": (-2,)})
    yield Sample([x, np.array([3, 0]), np.array([0, 2]), np.array([-1, 1])], {"axes": (2, 0)})


_dyn(
    "dyn.strided_slice",
    _slice_rel,
    _slice_ref,
    DynSliceAttrs,
    (3, 5),
    "dyn.strided_slice(data, begin, end[, strides[, axes]]): ONNX Slice with tensor parameters",
    _slice_samples,
    _slice_static,
    shape_inputs=(1, 2, 3, 4),
)
declare(
    "dyn.strided_slice",
    lower=Rule("relay_core.te.lower_dyn:_dyn_strided_slice"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "dyn.strided_slice", (0,)),
)


# -- dyn.full / dyn.zeros / dyn.ones --------------------------------------------------------------
@dataclass(frozen=True)
class DynFullAttrs:
    dtype: str | None = None  # None: the fill value's dtype


@dataclass(frozen=True)
class DynInitAttrs:
    dtype: str = "float32"


def _check_shape_values(shape, op):
    if any(d < 0 for d in shape):
        raise EvalError(f"{op}: negative dim in shape {shape}")
    return shape


def _full_rel(args, attrs):
    f = R.tensor(args[0], "fill_value")
    if f.ndim > 1:
        raise OpTypeError(f"dyn.full: fill_value must be a scalar, got shape {f.shape}")
    n = _length(args[1], "dyn.full", "shape")
    return TensorType((Any,) * n, R.dtype_attr(attrs.dtype, "dyn.full") if attrs.dtype else f.dtype)


def _full_ref(xs, attrs):
    shape = _check_shape_values(_ints(xs[1]), "dyn.full")
    return full_array(xs[0], shape, attrs.dtype or dt.from_numpy(xs[0].dtype))


def _full_static(call):
    shape = _const_ints(call.args[1])
    if shape is not None:
        return _static_call(call, "full", call.args[:1], shape=shape, dtype=call.attrs.dtype)
    # `zeros(x.size(0), h, w)` (EdgeNeXt's positional encoding): a full of the static dims
    # broadcast to the dims read off tensors
    entries = dim_sources(call.args[1])
    if entries is None or any(e is None for e in entries):
        return None
    static = tuple(1 if isinstance(e, tuple) else e for e in entries)
    base = _static_call(call, "full", call.args[:1], shape=static, dtype=call.attrs.dtype)
    return carry_dims(base, entries)


def _full_samples(rng):
    yield Sample([np.array(2.5, np.float32), np.array([2, 3], np.int64)])
    yield Sample([np.array([7], np.int64), np.array([0, 4], np.int32)], {"dtype": "float16"})
    yield Sample([np.array(True), np.zeros(0, np.int64)])


_dyn(
    "dyn.full",
    _full_rel,
    _full_ref,
    DynFullAttrs,
    (2, 2),
    "dyn.full(fill_value, shape): ONNX ConstantOfShape / torch.full with a shape tensor",
    _full_samples,
    _full_static,
)
declare(
    "dyn.full",
    lower=Rule("relay_core.te.lower_dyn:_dyn_full"),
    grad=Rule("relay_core.ops.grads_tensor:_dyn_full"),
)


def _init_op(name, value):
    static = name.split(".", 1)[1]

    def rel(args, attrs):
        n = _length(args[0], name, "shape")
        return TensorType((Any,) * n, R.dtype_attr(attrs.dtype, name))

    def ref(xs, attrs):
        shape = _check_shape_values(_ints(xs[0]), name)
        return np.full(shape, value, dt.to_numpy(attrs.dtype))

    def to_static(call):
        shape = _const_ints(call.args[0])
        return (
            None
            if shape is None
            else _static_call(call, static, (), shape=shape, dtype=call.attrs.dtype)
        )

    def samples(rng):
        for shape, dtype in [((2, 3), "float32"), ((0,), "int64"), ((), "bool")]:
            yield Sample([np.array(shape, np.int64).reshape(-1)], {"dtype": dtype})

    _dyn(
        name,
        rel,
        ref,
        DynInitAttrs,
        (1, 1),
        f"{name}(shape): {value}s of a run-time shape",
        samples,
        to_static,
        shape_inputs=(0,),
    )


_init_op("dyn.zeros", 0)
declare("dyn.zeros", lower=Rule("relay_core.te.lower_dyn:_dyn_const", 0))
_init_op("dyn.ones", 1)
declare("dyn.ones", lower=Rule("relay_core.te.lower_dyn:_dyn_const", 1))


# -- dyn.topk -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DynTopKAttrs:
    axis: int = -1
    ret_type: str = "both"
    is_ascend: bool = False
    dtype: str = "int64"


def _topk_rel(args, attrs):
    t = R.tensor(args[0])
    _param(args[1], "dyn.topk", "k", scalar=True)
    if t.ndim == 0:
        raise OpTypeError("dyn.topk needs a tensor of rank >= 1")
    return topk_type(t, Any, attrs, "dyn.topk")


def _topk_ref(xs, attrs):
    k = int(np.asarray(xs[1]).reshape(-1)[0])
    n = xs[0].shape[attrs.axis % xs[0].ndim]
    if not 0 <= k <= n:
        raise EvalError(f"dyn.topk: k = {k} is out of range [0, {n}]")
    if k == 0:  # dyn.topk takes k literally (ONNX); static topk reads k < 1 as "all"
        shape = list(xs[0].shape)
        shape[attrs.axis % xs[0].ndim] = 0
        v, i = np.zeros(shape, xs[0].dtype), np.zeros(shape, dt.to_numpy(attrs.dtype))
        return {"both": (v, i), "values": v, "indices": i}[attrs.ret_type]
    return topk_arrays(xs[0], k, attrs)


def _topk_static(call):
    k = _const_ints(call.args[1])
    if k is None or k[0] < 1:
        return None
    a = call.attrs
    return _static_call(
        call,
        "topk",
        call.args[:1],
        k=k[0],
        axis=a.axis,
        ret_type=a.ret_type,
        is_ascend=a.is_ascend,
        dtype=a.dtype,
    )


def _topk_samples(rng):
    x = random_array(rng, (3, 5), "float32", (-2, 2))
    yield Sample([x, np.array([2], np.int64)])
    yield Sample([x, np.array(3, np.int64)], {"axis": 0, "is_ascend": True, "ret_type": "values"})
    yield Sample([x, np.array([0], np.int64)], {"ret_type": "indices"})
    y = random_array(rng, (2, 100), "float32", (-2, 2))  # k well below the axis: selection
    yield Sample([y, np.array([5], np.int64)])


_dyn(
    "dyn.topk",
    _topk_rel,
    _topk_ref,
    DynTopKAttrs,
    (2, 2),
    "dyn.topk(data, k): topk with k a scalar tensor",
    _topk_samples,
    _topk_static,
    shape_inputs=(),
)
declare(
    "dyn.topk",
    lower=Rule("relay_core.backend.lower_loops:_dyn_topk"),
    grad=Rule("relay_core.ops.grads_tensor:_dyn_topk"),
)


# -- dyn.one_hot ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DynOneHotAttrs:
    axis: int = -1
    dtype: str = "float32"


def _one_hot_rel(args, attrs):
    i = R.tensor(args[0], "indices")
    if not dt.is_int(i.dtype):
        raise OpTypeError(f"dyn.one_hot: indices must be integers, got {i.dtype}")
    _param(args[3], "dyn.one_hot", "depth", scalar=True)
    return TensorType(
        one_hot_shape(i.shape, Any, attrs.axis, "dyn.one_hot"),
        R.dtype_attr(attrs.dtype, "dyn.one_hot"),
    )


def _one_hot_ref(xs, attrs):
    depth = int(np.asarray(xs[3]).reshape(-1)[0])
    if depth < 0:
        raise EvalError(f"dyn.one_hot: depth must be >= 0, got {depth}")
    return one_hot_array(xs[0], xs[1], xs[2], depth, attrs.axis, attrs.dtype)


def _one_hot_static(call):
    depth = _const_ints(call.args[3])
    if depth is None:
        return None
    a = call.attrs
    return _static_call(call, "one_hot", call.args[:3], depth=depth[0], axis=a.axis, dtype=a.dtype)


def _one_hot_samples(rng):
    on, off = np.array(1.0, np.float32), np.array(0.0, np.float32)
    yield Sample([np.array([0, 3, 1]), on, off, np.array(4, np.int64)])
    yield Sample(
        [np.array([[2, -1]]), on, off, np.array([3], np.int32)], {"axis": 0, "dtype": "int32"}
    )


_dyn(
    "dyn.one_hot",
    _one_hot_rel,
    _one_hot_ref,
    DynOneHotAttrs,
    (4, 4),
    "dyn.one_hot(indices, on_value, off_value, depth): one_hot with depth a scalar tensor",
    _one_hot_samples,
    _one_hot_static,
    shape_inputs=(),
)
declare(
    "dyn.one_hot",
    lower=Rule("relay_core.te.lower_dyn:_dyn_one_hot"),
    grad=Rule("relay_core.ops.grads_tensor:_dyn_one_hot"),
)


# -- dyn.trilu ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DynTriluAttrs:
    upper: bool = True


def _trilu_rel(args, attrs):
    t = R.tensor(args[0])
    if t.ndim < 2:
        raise OpTypeError(f"dyn.trilu needs a tensor of rank >= 2, got rank {t.ndim}")
    _param(args[1], "dyn.trilu", "k", scalar=True)
    return t


def _trilu_static(call):
    k = _const_ints(call.args[1])
    return (
        None
        if k is None
        else _static_call(call, "trilu", call.args[:1], k=k[0], upper=call.attrs.upper)
    )


def _trilu_samples(rng):
    x = random_array(rng, (3, 4), "float32")
    for k in (0, 2, -1):
        yield Sample([x, np.array(k, np.int64)], {"upper": k >= 0})


_dyn(
    "dyn.trilu",
    _trilu_rel,
    lambda xs, a: trilu_array(xs[0], int(np.asarray(xs[1]).reshape(-1)[0]), a.upper),
    DynTriluAttrs,
    (2, 2),
    "dyn.trilu(data, k): trilu with k a scalar tensor",
    _trilu_samples,
    _trilu_static,
    shape_inputs=(),
    pattern=OpPattern.INJECTIVE,
)
declare(
    "dyn.trilu",
    lower=Rule("relay_core.te.lower_dyn:_dyn_trilu"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "dyn.trilu", (0,)),
)
