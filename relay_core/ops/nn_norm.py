"""Normalisation: batch / layer / instance / group / rms norm, l2_normalize, lrn, and ONNX
MeanVarianceNormalization. Inference forms: each returns just the normalised tensor.

Statistics are computed in float64 and the result rounded to the input dtype. `center` / `scale`
False ignore beta / gamma (TVM); the inputs are still required.
"""

from __future__ import annotations

import numpy as np

from ..errors import OpTypeError
from ..ir.types import TensorType
from . import relations as R
from .factories import check_kind, random_array
from .registry import OpDef, OpPattern, Rule, Sample, attrs, declare, register


@attrs
class BatchNormAttrs:
    axis: int = 1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@attrs
class LayerNormAttrs:
    axis: int = -1  # normalise over axes [axis, ndim), as ONNX LayerNormalization
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@attrs
class InstanceNormAttrs:
    axis: int = 1  # the channel axis; statistics over every axis but batch (0) and channel
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@attrs
class GroupNormAttrs:
    num_groups: int = 1
    axis: int = 1  # the channel axis
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@attrs
class RmsNormAttrs:
    axis: int = -1  # normalise over axes [axis, ndim), as ONNX RMSNormalization
    epsilon: float = 1e-5


@attrs
class L2NormalizeAttrs:
    eps: float = 1e-12
    axis: tuple[int, ...] = (-1,)


@attrs
class LrnAttrs:
    size: int = 5
    axis: int = 1
    alpha: float = 1e-4  # divided by size, as ONNX / TVM (TF's alpha is per element)
    beta: float = 0.75
    bias: float = 1.0


@attrs
class MvnAttrs:
    axes: tuple[int, ...] = (0, 2, 3)
    epsilon: float = 1e-9  # added to the standard deviation, as ONNX's function body


def _data(args, op):
    x = R.tensor(args[0], "data")
    check_kind(x, "float", op)
    return x


def _check_params(x: TensorType, params, names, want_shape, op):
    """Each parameter has x's dtype and broadcasts (unidirectionally) to `want_shape`."""
    for p, name in zip(params, names):
        p = R.tensor(p, name)
        if p.dtype != x.dtype:
            raise OpTypeError(f"{op}: {name} dtype {p.dtype} differs from the data's {x.dtype}")
        pairs = zip(reversed(want_shape), reversed(p.shape))
        if p.ndim > len(want_shape) or any(b != 1 and R.dim_eq(a, b) is False for a, b in pairs):
            raise OpTypeError(
                f"{op}: {name} has shape {tuple(p.shape)}, expected {tuple(want_shape)} "
                "(or a shape that broadcasts to it)"
            )


def _f64(x):
    return x.astype(np.float64)


def _channel_shape(x: np.ndarray, axis: int) -> tuple:
    return (-1,) + (1,) * (x.ndim - axis - 1)


def _affine(y, gamma, beta, attrs, shape=None):
    if attrs.scale:
        y = y * (_f64(gamma) if shape is None else _f64(gamma).reshape(shape))
    if attrs.center:
        y = y + (_f64(beta) if shape is None else _f64(beta).reshape(shape))
    return y


# -- batch norm ------------------------------------------------------------------------------


def _batch_norm_rel(args, attrs):
    x = _data(args, "nn.batch_norm")
    axis = R.normalize_axis(attrs.axis, x.ndim)
    _check_params(
        x,
        args[1:],
        ("gamma", "beta", "moving_mean", "moving_var"),
        (x.shape[axis],),
        "nn.batch_norm",
    )
    # TVM's signature: (normalized, moving_mean, moving_var); at inference the statistics pass
    # through unchanged.
    return R.tuple_of(x, R.tensor(args[3]), R.tensor(args[4]))


def _batch_norm_ref(xs, attrs):
    x, gamma, beta, mean, var = xs
    axis = attrs.axis % x.ndim
    shape = _channel_shape(x, axis)
    y = (_f64(x) - _f64(mean).reshape(shape)) / np.sqrt(_f64(var).reshape(shape) + attrs.epsilon)
    return _affine(y, gamma, beta, attrs, shape).astype(x.dtype), mean.copy(), var.copy()


def _batch_norm_samples(rng):
    for dtype in ("float32", "float64", "float16"):
        for shape, axis in [
            ((2, 3, 4, 5), 1),
            ((2, 3), 1),
            ((2, 4, 3), -1),
            ((1, 1, 1), 1),
            ((0, 3), 1),
        ]:
            c = shape[axis]
            ps = [random_array(rng, (c,), dtype) for _ in range(3)]
            var = random_array(rng, (c,), dtype, (0.1, 2.0))
            yield Sample([random_array(rng, shape, dtype), *ps, var], {"axis": axis})
    x = random_array(rng, (2, 3, 4), "float32")
    ps = [random_array(rng, (3,), "float32", (0.1, 2.0)) for _ in range(4)]
    yield Sample([x, *ps], {"center": False, "scale": False, "epsilon": 1e-3})


# -- layer / rms norm -----------------------------------------------------------------------------


def _trailing_rel(op, names):
    def rel(args, attrs):
        x = _data(args, op)
        axis = R.normalize_axis(attrs.axis, x.ndim)
        _check_params(x, args[1:], names, x.shape[axis:], op)
        return x

    return rel


def _layer_norm_ref(xs, attrs):
    x, gamma, beta = xs
    axes = tuple(range(attrs.axis % x.ndim, x.ndim))
    xf = _f64(x)
    mean = xf.mean(axis=axes, keepdims=True)
    var = np.square(xf - mean).mean(axis=axes, keepdims=True)
    y = (xf - mean) / np.sqrt(var + attrs.epsilon)
    return _affine(y, gamma, beta, attrs).astype(x.dtype)


def _rms_norm_ref(xs, attrs):
    x, gamma = xs
    axes = tuple(range(attrs.axis % x.ndim, x.ndim))
    xf = _f64(x)
    y = xf / np.sqrt(np.square(xf).mean(axis=axes, keepdims=True) + attrs.epsilon)
    return (y * _f64(gamma)).astype(x.dtype)


def _trailing_samples(n_params):
    def gen(rng):
        for dtype in ("float32", "float64", "float16"):
            for shape, axis in [
                ((2, 3, 4), -1),
                ((2, 3, 4), 1),
                ((5,), 0),
                ((2, 1, 3), -2),
                ((1, 1), -1),
            ]:
                norm = shape[axis % len(shape) :]
                ps = [random_array(rng, norm, dtype) for _ in range(n_params)]
                yield Sample([random_array(rng, shape, dtype), *ps], {"axis": axis})
        x = random_array(rng, (2, 3, 4), "float32")
        yield Sample(
            [x] + [random_array(rng, (), "float32") for _ in range(n_params)], {"epsilon": 1e-2}
        )
        if n_params == 2:
            ps = [random_array(rng, (4,), "float32") for _ in range(2)]
            yield Sample([x, *ps], {"center": False, "scale": False})

    return gen


# -- instance / group norm -----------------------------------------------------------------------


def _channel_rel(op):
    def rel(args, attrs):
        x = _data(args, op)
        if x.ndim < 2:
            raise OpTypeError(f"{op}: data must have rank >= 2, got {tuple(x.shape)}")
        axis = R.normalize_axis(attrs.axis, x.ndim)
        c = x.shape[axis]
        g = getattr(attrs, "num_groups", 1)
        if g < 1 or (R.is_int(c) and c % g):
            raise OpTypeError(f"{op}: {c} channels do not split into num_groups={g}")
        _check_params(x, args[1:], ("gamma", "beta"), (c,), op)
        return x

    return rel


def _group_norm_ref(xs, attrs):
    x, gamma, beta = xs
    axis = attrs.axis % x.ndim
    g = getattr(attrs, "num_groups", None)
    xm = np.moveaxis(_f64(x), axis, 1)  # (N, C, *rest)
    n, c = xm.shape[:2]
    g = c if g is None else g  # instance norm: one group per channel
    xg = xm.reshape(n, g, (c // g) * int(np.prod(xm.shape[2:])))
    mean = xg.mean(axis=-1, keepdims=True)
    var = np.square(xg - mean).mean(axis=-1, keepdims=True)
    y = ((xg - mean) / np.sqrt(var + attrs.epsilon)).reshape(xm.shape)
    y = _affine(y, gamma, beta, attrs, _channel_shape(y, 1))
    return np.moveaxis(y, 1, axis).astype(x.dtype)


def _channel_samples(groups: bool):
    def gen(rng):
        for dtype in ("float32", "float64", "float16"):
            for shape, axis, g in [
                ((2, 6, 4, 5), 1, 3),
                ((2, 4, 3), 1, 2),
                ((2, 5, 6), -1, 3),
                ((1, 4, 1), 1, 4),
                ((3, 2), 1, 1),
                ((2, 6, 2, 2, 3), 1, 2),
            ]:
                c = shape[axis]
                ps = [random_array(rng, (c,), dtype) for _ in range(2)]
                a = {"axis": axis, **({"num_groups": g} if groups else {})}
                yield Sample([random_array(rng, shape, dtype), *ps], a)

    return gen


# -- l2_normalize, lrn, mvn -----------------------------------------------------------------------


def _l2_rel(args, attrs):
    x = _data(args, "nn.l2_normalize")
    R.normalize_axes(attrs.axis, x.ndim)
    return x


def _l2_ref(xs, attrs):
    x = xs[0]
    axes = tuple(a % x.ndim for a in attrs.axis) if x.ndim else ()
    xf = _f64(x)
    s = np.square(xf).sum(axis=axes, keepdims=True)
    return (xf / np.sqrt(np.maximum(s, attrs.eps))).astype(x.dtype)


def _l2_samples(rng):
    for dtype in ("float32", "float64", "float16"):
        for shape, axis in [
            ((2, 3, 4), (-1,)),
            ((2, 3, 4), (1, 2)),
            ((5,), (0,)),
            ((1, 1), (0, 1)),
        ]:
            yield Sample([random_array(rng, shape, dtype)], {"axis": axis})
    yield Sample([np.zeros((2, 3), np.float32)], {"axis": (1,), "eps": 1e-6})


def _lrn_rel(args, attrs):
    x = _data(args, "nn.lrn")
    R.normalize_axis(attrs.axis, x.ndim)
    if attrs.size < 1:
        raise OpTypeError(f"nn.lrn: size must be positive, got {attrs.size}")
    return x


def _lrn_ref(xs, attrs):
    x = xs[0]
    axis = attrs.axis % x.ndim
    c = x.shape[axis]
    xf = _f64(x)
    before, after = (attrs.size - 1) // 2, attrs.size // 2  # ONNX: floor / ceil of (size-1)/2
    sq = np.cumsum(np.square(xf), axis=axis)
    zero = np.zeros_like(sq.take([0], axis=axis))
    csum = np.concatenate([zero, sq], axis=axis)  # csum[i] = sum of the first i squares
    ch = np.arange(c)
    hi = np.minimum(c, ch + after + 1)
    lo = np.maximum(0, ch - before)
    win = csum.take(hi, axis=axis) - csum.take(lo, axis=axis)
    return (xf / (attrs.bias + attrs.alpha / attrs.size * win) ** attrs.beta).astype(x.dtype)


def _lrn_samples(rng):
    for dtype in ("float32", "float64", "float16"):
        for shape, size, axis in [
            ((2, 7, 3, 4), 5, 1),
            ((2, 6, 3), 4, 1),
            ((1, 3, 2, 2), 1, 1),
            ((2, 3, 5), 3, -1),
            ((2, 2, 2, 2), 7, 1),
        ]:
            yield Sample(
                [random_array(rng, shape, dtype)],
                {"size": size, "axis": axis, "alpha": 0.01, "beta": 0.5, "bias": 2.0},
            )


def _mvn_rel(args, attrs):
    x = _data(args, "nn.mean_variance_normalization")
    R.normalize_axes(attrs.axes, x.ndim)
    return x


def _mvn_ref(xs, attrs):
    x = xs[0]
    axes = tuple(a % x.ndim for a in attrs.axes)
    xf = _f64(x)
    mean = xf.mean(axis=axes, keepdims=True)
    std = np.sqrt(np.square(xf - mean).mean(axis=axes, keepdims=True))
    return ((xf - mean) / (std + attrs.epsilon)).astype(x.dtype)


def _mvn_samples(rng):
    for dtype in ("float32", "float64"):
        for shape, axes in [((2, 3, 4, 5), (0, 2, 3)), ((2, 3, 4), (1,)), ((3, 1), (0, 1))]:
            yield Sample([random_array(rng, shape, dtype)], {"axes": axes})


register(
    OpDef(
        "nn.batch_norm",
        _batch_norm_rel,
        _batch_norm_ref,
        OpPattern.OPAQUE,
        BatchNormAttrs,
        (5, 5),
        "((x - mean) / sqrt(var + eps) * gamma + beta along axis, mean, var) (inference; "
        "TVM's tuple result: take .0 for the normalized tensor)",
        samples=_batch_norm_samples,
    )
)
declare(
    "nn.batch_norm",
    lower=Rule("relay_core.te.lower_nn:_batch_norm"),
    decompose=Rule("relay_core.ops.decompose:_batch_norm"),
)
register(
    OpDef(
        "nn.layer_norm",
        _trailing_rel("nn.layer_norm", ("gamma", "beta")),
        _layer_norm_ref,
        OpPattern.OPAQUE,
        LayerNormAttrs,
        (3, 3),
        "normalise over axes [axis, ndim); gamma / beta broadcast to those axes",
        samples=_trailing_samples(2),
    )
)
declare(
    "nn.layer_norm",
    lower=Rule("relay_core.te.lower_nn:_layer_norm"),
    decompose=Rule("relay_core.ops.decompose:_layer_norm"),
)
register(
    OpDef(
        "nn.rms_norm",
        _trailing_rel("nn.rms_norm", ("gamma",)),
        _rms_norm_ref,
        OpPattern.OPAQUE,
        RmsNormAttrs,
        (2, 2),
        "x / sqrt(mean(x^2 over [axis, ndim)) + eps) * gamma",
        samples=_trailing_samples(1),
    )
)
declare(
    "nn.rms_norm",
    lower=Rule("relay_core.te.lower_nn:_rms_norm"),
    decompose=Rule("relay_core.ops.decompose:_rms_norm"),
)
register(
    OpDef(
        "nn.instance_norm",
        _channel_rel("nn.instance_norm"),
        _group_norm_ref,
        OpPattern.OPAQUE,
        InstanceNormAttrs,
        (3, 3),
        "normalise each (batch, channel) over the remaining axes",
        samples=_channel_samples(False),
    )
)
declare(
    "nn.instance_norm",
    lower=Rule("relay_core.te.lower_nn:_instance_norm"),
    decompose=Rule("relay_core.ops.decompose:_instance_norm"),
)
register(
    OpDef(
        "nn.group_norm",
        _channel_rel("nn.group_norm"),
        _group_norm_ref,
        OpPattern.OPAQUE,
        GroupNormAttrs,
        (3, 3),
        "normalise channel groups; gamma / beta per channel (PyTorch, ONNX opset 21)",
        samples=_channel_samples(True),
    )
)
declare(
    "nn.group_norm",
    lower=Rule("relay_core.te.lower_nn:_group_norm"),
    decompose=Rule("relay_core.ops.decompose:_group_norm"),
)
register(
    OpDef(
        "nn.l2_normalize",
        _l2_rel,
        _l2_ref,
        OpPattern.OUT_EWISE_FUSABLE,
        L2NormalizeAttrs,
        (1, 1),
        "x / sqrt(max(sum(x^2 over axis), eps))",
        samples=_l2_samples,
    )
)
declare(
    "nn.l2_normalize",
    lower=Rule("relay_core.te.lower_nn:_l2_normalize"),
    decompose=Rule("relay_core.ops.decompose:_l2_normalize"),
)
register(
    OpDef(
        "nn.lrn",
        _lrn_rel,
        _lrn_ref,
        OpPattern.OPAQUE,
        LrnAttrs,
        (1, 1),
        "x / (bias + alpha / size * sum of squares over a window of `size` channels)^beta",
        samples=_lrn_samples,
    )
)
declare(
    "nn.lrn",
    lower=Rule("relay_core.te.lower_nn:_lrn"),
    decompose=Rule("relay_core.ops.decompose:_lrn"),
)
register(
    OpDef(
        "nn.mean_variance_normalization",
        _mvn_rel,
        _mvn_ref,
        OpPattern.OPAQUE,
        MvnAttrs,
        (1, 1),
        "(x - mean) / (std + epsilon) over axes (ONNX MVN)",
        samples=_mvn_samples,
    )
)
declare(
    "nn.mean_variance_normalization",
    lower=Rule("relay_core.te.lower_nn:_mvn"),
    decompose=Rule("relay_core.ops.decompose:_mvn"),
)
