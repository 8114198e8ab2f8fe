"""Activations (nn.relu, nn.gelu, ...), nn.prelu, and softmax / log_softmax / hardmax.

Formulas follow ONNX (and PyTorch, where their attributes map one to one). float16 / bfloat16
inputs are computed in float32 and rounded back.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..errors import OpTypeError
from . import nn_util as U
from . import relations as R
from .factories import SAMPLE_SHAPES, check_kind, random_array
from .registry import Kernel, OpDef, OpPattern, Rule, Sample, attrs, declare, register

_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """Exact (libm) erf, elementwise."""
    return np.asarray(_erf(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def _softplus(x):
    return np.logaddexp(0, x)


def _sigmoid(x):
    return np.exp(-np.logaddexp(0, -x))


@attrs
class AlphaAttrs:
    alpha: float = 0.01


@attrs
class EluAttrs:
    alpha: float = 1.0


@attrs
class SeluAttrs:
    alpha: float = 1.6732632423543772
    gamma: float = 1.0507009873554805


@attrs
class GeluAttrs:
    approximate: str = "none"  # "none" (erf) | "tanh"


@attrs
class HardSigmoidAttrs:
    alpha: float = 0.2
    beta: float = 0.5


@attrs
class SoftplusAttrs:
    beta: float = 1.0
    threshold: float = 20.0  # linear above beta * x > threshold (PyTorch); inf for exact ONNX


@attrs
class ThresholdedReluAttrs:
    alpha: float = 1.0


@attrs
class ShrinkAttrs:
    bias: float = 0.0
    lambd: float = 0.5


def _gelu(x, a):
    if a.approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def _softplus_beta(x, a):
    bx = a.beta * x
    return np.where(bx > a.threshold, x, _softplus(bx) / a.beta)


def _shrink(x, a):
    return np.where(x < -a.lambd, x + a.bias, np.where(x > a.lambd, x - a.bias, 0))


# name -> (fn(x, attrs), attrs class, kind, sample attrs, doc)
_ACTIVATIONS: dict[str, tuple] = {
    "nn.relu": (lambda x, a: np.maximum(x, 0), None, "numeric", [{}], "max(x, 0)"),
    "nn.leaky_relu": (
        lambda x, a: np.where(x >= 0, x, a.alpha * x),
        AlphaAttrs,
        "float",
        [{}, {"alpha": 0.3}],
        "x if x >= 0 else alpha * x",
    ),
    "nn.elu": (
        lambda x, a: np.where(x > 0, x, a.alpha * np.expm1(np.minimum(x, 0))),
        EluAttrs,
        "float",
        [{}, {"alpha": 0.5}],
        "x if x > 0 else alpha * (exp(x) - 1)",
    ),
    "nn.selu": (
        lambda x, a: a.gamma * np.where(x > 0, x, a.alpha * np.expm1(np.minimum(x, 0))),
        SeluAttrs,
        "float",
        [{}, {"alpha": 1.5, "gamma": 2.0}],
        "gamma * (x if x > 0 else alpha * (exp(x) - 1))",
    ),
    "nn.celu": (
        lambda x, a: (
            np.maximum(x, 0) + np.minimum(0, a.alpha * np.expm1(np.minimum(x, 0) / a.alpha))
        ),
        EluAttrs,
        "float",
        [{}, {"alpha": 2.0}],
        "max(0, x) + min(0, alpha * (exp(x / alpha) - 1))",
    ),
    "nn.gelu": (
        _gelu,
        GeluAttrs,
        "float",
        [{}, {"approximate": "tanh"}],
        "x * Phi(x); approximate='tanh' uses the tanh formula",
    ),
    "nn.silu": (lambda x, a: x * _sigmoid(x), None, "float", [{}], "x * sigmoid(x)"),
    "nn.mish": (
        lambda x, a: x * np.tanh(_softplus(x)),
        None,
        "float",
        [{}],
        "x * tanh(softplus(x))",
    ),
    "nn.hard_sigmoid": (
        lambda x, a: np.clip(a.alpha * x + a.beta, 0, 1),
        HardSigmoidAttrs,
        "float",
        [{}, {"alpha": 1 / 6, "beta": 0.5}],
        "clip(alpha * x + beta, 0, 1)",
    ),
    "nn.hard_swish": (
        lambda x, a: x * np.clip(x / 6 + 0.5, 0, 1),
        None,
        "float",
        [{}],
        "x * clip(x / 6 + 1 / 2, 0, 1)",
    ),
    "nn.softplus": (
        _softplus_beta,
        SoftplusAttrs,
        "float",
        [{}, {"beta": 2.0, "threshold": 1.0}, {"threshold": math.inf}],
        "log(1 + exp(beta * x)) / beta; x where beta * x > threshold",
    ),
    "nn.softsign": (lambda x, a: x / (1 + np.abs(x)), None, "float", [{}], "x / (1 + |x|)"),
    "nn.thresholded_relu": (
        lambda x, a: np.where(x > a.alpha, x, 0),
        ThresholdedReluAttrs,
        "float",
        [{}, {"alpha": 0.5}],
        "x if x > alpha else 0",
    ),
    "nn.shrink": (
        _shrink,
        ShrinkAttrs,
        "float",
        [{}, {"bias": 0.3, "lambd": 1.0}],
        "x + bias if x < -lambd, x - bias if x > lambd, else 0",
    ),
}


def _activation(name: str, fn: Callable, attrs_cls, kind: str, sample_attrs: list, doc: str):
    def rel(args, attrs):
        t = R.tensor(args[0])
        check_kind(t, kind, name)
        return t

    def ref(xs, attrs):
        x = xs[0]
        xc = U.to_float(x) if x.dtype.kind == "f" or kind == "float" else x
        with np.errstate(all="ignore"):
            y = np.asarray(fn(xc, attrs))
        return y.astype(x.dtype, copy=False)

    def samples(rng):
        dtypes = ["float32", "float64", "float16"] + (
            ["int32", "int8"] if kind == "numeric" else []
        )
        for dtype in dtypes:
            for shape in SAMPLE_SHAPES:
                for a in sample_attrs:
                    yield Sample([random_array(rng, shape, dtype, (-4.0, 4.0))], dict(a))

    register(OpDef(name, rel, ref, OpPattern.ELEMWISE, attrs_cls, (1, 1), doc, samples=samples))


for _name, _spec in _ACTIVATIONS.items():
    _activation(_name, *_spec)


# ---------------------------------------------------------------------------------------------
# PReLU.


@attrs
class PReluAttrs:
    axis: int | None = 1  # None: the slope broadcasts to the data numpy-style (ONNX)


def _prelu_rel(args, attrs):
    x, a = R.tensor(args[0], "data"), R.tensor(args[1], "alpha")
    check_kind(x, "float", "nn.prelu")
    if x.dtype != a.dtype:
        raise OpTypeError(f"nn.prelu: data ({x.dtype}) and alpha ({a.dtype}) dtypes differ")
    if attrs.axis is None:  # unidirectional broadcast: each slope dim is 1 or the data's
        pairs = zip(reversed(x.shape), reversed(a.shape))
        if a.ndim > x.ndim or any(ad != 1 and R.dim_eq(xd, ad) is False for xd, ad in pairs):
            raise OpTypeError(
                f"nn.prelu: alpha of shape {tuple(a.shape)} does not broadcast to data "
                f"{tuple(x.shape)}"
            )
        return x
    axis = R.normalize_axis(attrs.axis, x.ndim)
    if a.ndim != 1 or (
        R.dim_eq(a.shape[0], 1) is False and R.dim_eq(a.shape[0], x.shape[axis]) is False
    ):
        raise OpTypeError(
            f"nn.prelu: alpha must be 1-D with 1 or {x.shape[axis]} elements "
            f"(data axis {attrs.axis}), "
            f"got shape {tuple(a.shape)}"
        )
    return x


def _prelu_ref(xs, attrs):
    x, a = xs
    if attrs.axis is not None:
        axis = attrs.axis % x.ndim
        a = a.reshape((-1,) + (1,) * (x.ndim - axis - 1))
    xc, ac = U.to_float(x), U.to_float(a)
    return np.where(xc >= 0, xc, xc * ac).astype(x.dtype, copy=False)


def _prelu_samples(rng):
    for dtype in ("float32", "float64", "float16"):
        for shape, ashape, axis in [
            ((2, 3, 4, 5), (3,), 1),
            ((2, 3, 4), (1,), 1),
            ((4, 6), (6,), -1),
            ((2, 3, 4, 5), (3, 1, 1), None),
            ((2, 3, 4), (4,), None),
            ((5,), (), None),
            ((1, 1, 1), (1,), 0),
        ]:
            yield Sample(
                [random_array(rng, shape, dtype), random_array(rng, ashape, dtype, (0, 1))],
                {"axis": axis},
            )


register(
    OpDef(
        "nn.prelu",
        _prelu_rel,
        _prelu_ref,
        OpPattern.BROADCAST,
        PReluAttrs,
        (2, 2),
        "x if x >= 0 else alpha * x; alpha along `axis`, or broadcast if axis is None",
        samples=_prelu_samples,
    )
)
declare(
    "nn.prelu",
    lower=Rule("relay_core.te.lower_nn:_prelu"),
    grad=Rule("relay_core.ops.grads_nn:_prelu"),
)


# ---------------------------------------------------------------------------------------------
# Softmax family.


@attrs
class SoftmaxAttrs:
    axis: int = -1


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, axis):
    s = x - np.max(x, axis=axis, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def _hardmax(x, axis):
    y = np.zeros(x.shape, dtype=x.dtype)
    if x.size:
        np.put_along_axis(y, np.expand_dims(np.argmax(x, axis=axis), axis), 1, axis=axis)
    return y


def _softmax_op(name: str, fn: Callable, doc: str):
    def rel(args, attrs):
        t = R.tensor(args[0])
        check_kind(t, "float", name)
        R.normalize_axis(attrs.axis, t.ndim)
        return t

    def ref(xs, attrs):
        x = xs[0]
        if x.size == 0:
            return x.copy()
        with np.errstate(all="ignore"):
            # float64: sums round once, whatever order the SIMD loops add in
            return fn(U.to_f64(x), attrs.axis % max(x.ndim, 1)).astype(x.dtype, copy=False)

    def samples(rng):
        for dtype in ("float32", "float64", "float16"):
            for shape in [(7,), (3, 5), (2, 1, 4), (2, 3, 4, 5), (1, 1), (0, 3)]:
                for axis in sorted({-1, 0, len(shape) // 2}):
                    yield Sample([random_array(rng, shape, dtype, (-5, 5))], {"axis": axis})

    register(
        OpDef(
            name, rel, ref, OpPattern.OUT_EWISE_FUSABLE, SoftmaxAttrs, (1, 1), doc, samples=samples
        )
    )


_SOFTMAX_DYN = "relay_core.backend.kernels.softmax:emit_dynamic_softmax_family"
_softmax_op("nn.softmax", _softmax, "exp(x) / sum(exp(x)) along axis")
declare(
    "nn.softmax",
    lower=Rule("relay_core.te.lower_nn:_softmax"),
    kernel=Kernel("relay_core.backend.kernels.softmax:emit_softmax_family", "softmax"),
    dynamic_kernel=Kernel(_SOFTMAX_DYN, "softmax"),
    grad=Rule("relay_core.ops.grads_nn:_softmax"),
)
_softmax_op("nn.log_softmax", _log_softmax, "x - log(sum(exp(x))) along axis")
declare(
    "nn.log_softmax",
    lower=Rule("relay_core.te.lower_nn:_log_softmax"),
    kernel=Kernel("relay_core.backend.kernels.softmax:emit_softmax_family", "log_softmax"),
    dynamic_kernel=Kernel(_SOFTMAX_DYN, "log_softmax"),
    grad=Rule("relay_core.ops.grads_nn:_log_softmax"),
)
_softmax_op("nn.hardmax", _hardmax, "one-hot of the first maximum along axis (ONNX Hardmax-13)")
declare(
    "nn.hardmax",
    lower=Rule("relay_core.te.lower_nn:_hardmax"),
    kernel=Kernel("relay_core.backend.kernels.softmax:emit_softmax_family", "hardmax"),
    grad=Rule("relay_core.ops.grads_tensor:nondiff", "nn.hardmax"),
)

# -- how each op is computed (JAX lax style: declared beside the ops; a Rule / Kernel names a
# function of relay_core/te or relay_core/backend, imported on first use) ------------------
declare(
    "nn.relu",
    lower=Rule("relay_core.te.lower_nn:_r_relu"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_relu"),
)
declare(
    "nn.leaky_relu",
    lower=Rule("relay_core.te.lower_nn:_r_leaky_relu"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_leaky_relu"),
)
declare(
    "nn.elu",
    lower=Rule("relay_core.te.lower_nn:_r_elu"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_elu"),
)
declare(
    "nn.selu",
    lower=Rule("relay_core.te.lower_nn:_r_selu"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_selu"),
)
declare(
    "nn.celu",
    lower=Rule("relay_core.te.lower_nn:_r_celu"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_celu"),
)
declare(
    "nn.gelu",
    lower=Rule("relay_core.te.lower_nn:_r_gelu"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_gelu"),
)
declare(
    "nn.silu",
    lower=Rule("relay_core.te.lower_nn:_r_silu"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_silu"),
)
declare(
    "nn.mish",
    lower=Rule("relay_core.te.lower_nn:_r_mish"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_mish"),
)
declare(
    "nn.hard_sigmoid",
    lower=Rule("relay_core.te.lower_nn:_r_hard_sigmoid"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_hard_sigmoid"),
)
declare(
    "nn.hard_swish",
    lower=Rule("relay_core.te.lower_nn:_r_hard_swish"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_hard_swish"),
)
declare(
    "nn.softplus",
    lower=Rule("relay_core.te.lower_nn:_r_softplus"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_softplus"),
)
declare(
    "nn.softsign",
    lower=Rule("relay_core.te.lower_nn:_r_softsign"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_softsign"),
)
declare(
    "nn.thresholded_relu",
    lower=Rule("relay_core.te.lower_nn:_r_thresholded_relu"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_thresholded_relu"),
)
declare(
    "nn.shrink",
    lower=Rule("relay_core.te.lower_nn:_r_shrink"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_shrink"),
)
