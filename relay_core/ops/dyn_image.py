"""Dynamic image ops whose parameters come as tensors: dyn.image.resize (ONNX Resize with
run-time roi / scales / sizes) and dyn.image.affine_grid (a size tensor). Each has `to_static`;
the shared helpers are dyn_params'."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir.types import Any, TensorType
from . import relations as R
from .dyn_params import _const_ints, _ints, _param_len, _reg, _static_call
from .factories import random_array
from .registry import Rule, Sample, declare, lookup
from .shape_sources import shape_entries


# -- ONNX Resize with run-time roi / scales / sizes ---------------------------------------------
def resize_plan(shape, roi, scales, sizes, axes=None, policy="stretch"):
    """ONNX Resize's inputs (values for every axis, or for `axes`) as the spatial
    (size, scale, roi) of image.resizeNd; the batch and channel axes must stay as they are."""
    r = len(shape)
    axes = list(range(r)) if axes is None else [a + r if a < 0 else a for a in axes]
    roi = None if roi is None or np.asarray(roi).size == 0 else [float(v) for v in _flat(roi)]
    scales = None if scales is None or np.asarray(scales).size == 0 else list(_flat(scales))
    sizes = None if sizes is None or np.asarray(sizes).size == 0 else _ints(sizes)
    if scales is None and sizes is None:
        raise OpTypeError("Resize needs scales or sizes")
    full_scale = [1.0] * r
    full_roi = [0.0] * r + [1.0] * r
    if roi is not None:
        n = len(axes)
        if len(roi) != 2 * n:
            raise OpTypeError(f"Resize: roi has {len(roi)} values, needs {2 * n}")
        for i, a in enumerate(axes):
            full_roi[a], full_roi[r + a] = roi[i], roi[n + i]
    if sizes is not None:
        if len(sizes) != len(axes):
            raise OpTypeError(f"Resize: sizes has {len(sizes)} values for {len(axes)} axes")
        out = list(shape)
        for a, s in zip(axes, sizes):
            out[a] = s
        for a in axes:
            full_scale[a] = out[a] / shape[a] if shape[a] else 1.0
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(full_scale[a] for a in axes)
            for a in axes:
                full_scale[a] = s
                out[a] = int(s * shape[a] + 0.5)
    else:
        if len(scales) != len(axes):
            raise OpTypeError(f"Resize: scales has {len(scales)} values for {len(axes)} axes")
        for a, s in zip(axes, scales):
            full_scale[a] = float(s)
        out = [int(np.floor(d * s)) for d, s in zip(shape, full_scale)]
    for a in (0, 1):
        if a < r and (out[a] != shape[a] or full_roi[a] != 0.0 or full_roi[r + a] != 1.0):
            raise OpTypeError("Resize of the batch or channel axis is not supported")
    size = tuple(out[2:])
    scale = tuple(full_scale[2:])
    sp_roi = tuple(full_roi[2:r] + full_roi[r + 2 :]) if roi is not None else None
    return size, scale, sp_roi


def _flat(x):
    return [v for v in np.asarray(x, dtype=np.float64).reshape(-1)]


@dataclass(frozen=True)
class DynResizeAttrs:
    method: str = "nearest_neighbor"
    coordinate_transformation_mode: str = "half_pixel"
    rounding_method: str = "round_prefer_floor"
    cubic_alpha: float = -0.75
    cubic_exclude: int = 0
    extrapolation_value: float = 0.0
    antialias: bool = False
    axes: tuple[int, ...] | None = None
    keep_aspect_ratio_policy: str = "stretch"


_RESIZE_KEYS = (
    "method",
    "coordinate_transformation_mode",
    "rounding_method",
    "cubic_alpha",
    "cubic_exclude",
    "extrapolation_value",
    "antialias",
)


def _resize_rel(args, attrs):
    t = R.tensor(args[0])
    if t.ndim not in (3, 4, 5):
        raise OpTypeError(f"dyn.image.resize needs rank 3 to 5, got {t.ndim}")
    for i, what in ((1, "roi"), (2, "scales"), (3, "sizes")):
        R.tensor(args[i], what)
    return TensorType(t.shape[:2] + (Any,) * (t.ndim - 2), t.dtype)


def _resize_static_attrs(shape, roi, scales, sizes, attrs):
    size, scale, sp_roi = resize_plan(
        shape, roi, scales, sizes, attrs.axes, attrs.keep_aspect_ratio_policy
    )
    kw = {k: getattr(attrs, k) for k in _RESIZE_KEYS}
    return f"image.resize{len(shape) - 2}d", dict(size=size, scale=scale, roi=sp_roi, **kw)


def _resize_ref(xs, attrs):
    x = xs[0]
    try:
        name, kw = _resize_static_attrs(x.shape, xs[1], xs[2], xs[3], attrs)
    except OpTypeError as e:
        raise EvalError(str(e)) from None
    op = lookup(name)
    return op.ref([x], op.make_attrs(**kw))


def static_resize_call(call, shape, roi, scales, sizes):
    """The image.resizeNd call equal to `call` for an input of static `shape`."""
    name, kw = _resize_static_attrs(shape, roi, scales, sizes, call.attrs)
    return _static_call(call, name, [call.args[0]], **kw)


def _resize_static(call):
    from ..ir.expr import Constant

    data = call.args[0]
    if not data.has_type or not isinstance(data.checked_type, TensorType):
        return None
    shape = data.checked_type.shape
    params = list(call.args[1:])
    if not isinstance(params[2], Constant) and all(isinstance(a, Constant) for a in params[:2]):
        # sizes = (batch and channels read off the input, constant spatial sizes): the
        # unknown batch stands in as 1 on both sides (resize_plan keeps axes 0 and 1)
        entries = shape_entries(params[2], data)
        if entries is None or len(entries) != len(shape) or call.attrs.axes is not None:
            return None
        if any(e is None for e in entries) or any(e == "same" for e in entries[2:]):
            return None
        if not all(isinstance(d, int) for d in shape[1:]):
            return None
        shape = (1,) + tuple(shape[1:])
        sizes = [
            1 if k == 0 and e == "same" else (shape[k] if e == "same" else e)
            for k, e in enumerate(entries)
        ]
        return static_resize_call(call, shape, params[0].data, params[1].data, np.array(sizes))
    if not all(isinstance(a, Constant) for a in params):
        return None
    if not all(isinstance(d, int) for d in shape):
        return None
    return static_resize_call(call, shape, *(a.data for a in params))


def _resize_samples(rng):
    # Parameters as sizes (the scale / roi paths are the conformance suite's): a float scale
    # or roi would be differentiated, which resize does not define.
    x = random_array(rng, (1, 2, 4, 4), "float32")
    e = np.zeros((0,), np.float32)
    yield Sample([x, e, e, np.array([1, 2, 8, 6], np.int64)])
    yield Sample([x, e, e, np.array([1, 2, 3, 5], np.int64)], {"method": "linear"})
    yield Sample(
        [x, e, e, np.array([3, 2], np.int64)],
        {"axes": (3, 2), "keep_aspect_ratio_policy": "not_larger", "method": "cubic"},
    )


_reg(
    "dyn.image.resize",
    _resize_rel,
    _resize_ref,
    DynResizeAttrs,
    (4, 4),
    "dyn.image.resize(data, roi, scales, sizes): ONNX Resize with run-time parameters "
    "(empty tensors for absent ones); spatial axes only",
    _resize_samples,
    _resize_static,
    shape_inputs=(),
)
declare(
    "dyn.image.resize",
    lower=Rule("relay_core.te.lower_image:_dyn_resize"),
    decompose=Rule("relay_core.ops.grads_misc:_dyn_resize"),
)


# -- affine_grid with a size tensor ---------------------------------------------------------
@dataclass(frozen=True)
class DynAffineGridAttrs:
    align_corners: bool = False


def _affine_rel(args, attrs):
    theta = R.tensor(args[0], "theta")
    n = _param_len(args[1], "dyn.image.affine_grid", "size")
    if n not in (4, 5) or theta.ndim != 3:
        raise OpTypeError(
            f"dyn.image.affine_grid: theta (N, nd, nd + 1) and a size of 4 or 5 values, got "
            f"theta {theta.shape} and {n} values"
        )
    nd = n - 2
    return TensorType((theta.shape[0],) + (Any,) * nd + (nd,), theta.dtype)


def _affine_ref(xs, attrs):
    op = lookup("image.affine_grid")
    return op.ref([xs[0]], op.make_attrs(size=_ints(xs[1]), align_corners=attrs.align_corners))


def _affine_static(call):
    size = _const_ints(call.args[1])
    if size is None:
        return None
    return _static_call(
        call, "image.affine_grid", call.args[:1], size=size, align_corners=call.attrs.align_corners
    )


def _affine_samples(rng):
    theta = random_array(rng, (2, 2, 3), "float32")
    yield Sample([theta, np.array([2, 3, 4, 5], np.int64)])
    yield Sample(
        [random_array(rng, (1, 3, 4), "float32"), np.array([1, 1, 2, 3, 4], np.int64)],
        {"align_corners": True},
    )


_reg(
    "dyn.image.affine_grid",
    _affine_rel,
    _affine_ref,
    DynAffineGridAttrs,
    (2, 2),
    "dyn.image.affine_grid(theta, size): affine_grid with the size as a tensor",
    _affine_samples,
    _affine_static,
)
declare(
    "dyn.image.affine_grid",
    lower=Rule("relay_core.te.lower_image:_dyn_affine_grid"),
    decompose=Rule("relay_core.ops.grads_misc:_via_static"),
)
