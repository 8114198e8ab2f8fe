"""Matrix products: nn.dense, nn.matmul, nn.batch_matmul, and nn.bias_add.

Integer operands (MatMulInteger: uint8 / int8, possibly mixed) accumulate exactly; `out_dtype`
("int32") sets the result dtype, "" means the first operand's dtype. float16 accumulates in
float32.
"""

from __future__ import annotations

import numpy as np

from ..errors import OpTypeError
from ..ir import dtype as dt
from ..ir.types import TensorType
from . import nn_util as U
from . import relations as R
from .factories import random_array
from .registry import Kernel, OpDef, OpPattern, Rule, Sample, attrs, declare, register


@attrs
class DenseAttrs:
    units: int | None = None  # output features, checked against the weight when given
    out_dtype: str = ""


@attrs
class MatmulAttrs:
    transpose_a: bool = False
    transpose_b: bool = False
    out_dtype: str = ""


@attrs
class BatchMatmulAttrs:
    transpose_a: bool = False
    transpose_b: bool = True  # TVM: b is (batch, N, K)
    out_dtype: str = ""


@attrs
class BiasAddAttrs:
    axis: int = 1


def _product(a: np.ndarray, b: np.ndarray, out_dtype: str) -> np.ndarray:
    """numpy matmul with exact integer accumulation, cast to `out_dtype`."""
    acc = U.accumulate_dtype(dt.from_numpy(a.dtype), dt.from_numpy(b.dtype))
    y = np.matmul(a.astype(acc, copy=False), b.astype(acc, copy=False))
    return U.cast_result(np.asarray(y), out_dtype)


def _k_mismatch(op, ka, kb, sa, sb):
    if R.dim_eq(ka, kb) is False:
        raise OpTypeError(
            f"{op}: reduction dims differ: {ka} (from {tuple(sa)}) vs {kb} (from {tuple(sb)})"
        )


# -- dense ------------------------------------------------------------------------------------


def _dense_rel(args, attrs):
    x, w = R.tensor(args[0], "data"), R.tensor(args[1], "weight")
    U.check_mixed_dtypes(x, w, "nn.dense")
    if x.ndim < 1 or w.ndim != 2:
        raise OpTypeError(
            f"nn.dense: data must have rank >= 1 and weight rank 2 (units, in), got "
            f"{tuple(x.shape)} and {tuple(w.shape)}"
        )
    _k_mismatch("nn.dense", x.shape[-1], w.shape[1], x.shape, w.shape)
    units = w.shape[0]
    if attrs.units is not None:
        if R.dim_eq(units, attrs.units) is False:
            raise OpTypeError(f"nn.dense: units={attrs.units} but the weight has {units} rows")
        units = attrs.units
    return TensorType(x.shape[:-1] + (units,), U.result_dtype(x.dtype, attrs.out_dtype, "nn.dense"))


def _dense_ref(xs, attrs):
    x, w = xs
    return _product(x, w.T, attrs.out_dtype or dt.from_numpy(x.dtype))


def _dense_samples(rng):
    for shape in [(3, 5), (1, 1), (2, 3, 7), (4,)]:
        k = shape[-1]
        for dtype in ("float32", "float64"):
            yield Sample(
                [random_array(rng, shape, dtype), random_array(rng, (6, k), dtype)],
                {"units": 6},
                rtol=1e-4,
                atol=1e-4,
            )
    yield Sample([random_array(rng, (3, 4), "float16"), random_array(rng, (2, 4), "float16")])
    yield Sample(
        [random_array(rng, (3, 9), "uint8"), random_array(rng, (5, 9), "int8")],
        {"out_dtype": "int32"},
    )
    yield Sample([random_array(rng, (0, 4), "float32"), random_array(rng, (3, 4), "float32")])


# -- matmul -------------------------------------------------------------------------------------


def _matmul_shapes(a, b, ta: bool, tb: bool, op: str):
    """numpy matmul shape rule (1-D promotion, batch broadcasting) with optional transposes."""
    if a.ndim == 0 or b.ndim == 0:
        raise OpTypeError(
            f"{op}: operands must have rank >= 1, got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    sa, sb = list(a.shape), list(b.shape)
    if len(sa) >= 2 and ta:
        sa[-2], sa[-1] = sa[-1], sa[-2]
    if len(sb) >= 2 and tb:
        sb[-2], sb[-1] = sb[-1], sb[-2]
    a1, b1 = len(sa) == 1, len(sb) == 1
    if a1:
        sa = [1] + sa
    if b1:
        sb = sb + [1]
    _k_mismatch(op, sa[-1], sb[-2], a.shape, b.shape)
    try:
        batch = R.broadcast_shapes(sa[:-2], sb[:-2])
    except OpTypeError:
        raise OpTypeError(
            f"{op}: batch dims of {tuple(a.shape)} and {tuple(b.shape)} do not broadcast"
        ) from None
    out = list(batch) + ([] if a1 else [sa[-2]]) + ([] if b1 else [sb[-1]])
    return tuple(out)


def _matmul_rel(op, min_rank=1):
    def rel(args, attrs):
        a, b = R.tensor(args[0], "lhs"), R.tensor(args[1], "rhs")
        U.check_mixed_dtypes(a, b, op, ("lhs", "rhs"))
        if a.ndim < min_rank or b.ndim < min_rank:
            raise OpTypeError(
                f"{op}: operands must have rank >= {min_rank}, got {tuple(a.shape)} and "
                f"{tuple(b.shape)}"
            )
        shape = _matmul_shapes(a, b, attrs.transpose_a, attrs.transpose_b, op)
        return TensorType(shape, U.result_dtype(a.dtype, attrs.out_dtype, op))

    return rel


def _matmul_ref(xs, attrs):
    a, b = xs
    if attrs.transpose_a and a.ndim >= 2:
        a = np.swapaxes(a, -1, -2)
    if attrs.transpose_b and b.ndim >= 2:
        b = np.swapaxes(b, -1, -2)
    return _product(a, b, attrs.out_dtype or dt.from_numpy(xs[0].dtype))


def _matmul_samples(batch_only: bool):
    def gen(rng):
        cases = [
            ((2, 3, 4), (2, 4, 5), False, False),
            ((1, 3, 4), (6, 4, 2), False, False),
            ((2, 1, 3, 4), (5, 4, 2), False, False),
            ((2, 4, 3), (2, 5, 4), True, True),
            ((3, 1), (1, 1), False, False),
            ((2, 3, 4), (2, 5, 4), False, True),
        ]
        if not batch_only:
            cases += [
                ((4,), (4,), False, False),
                ((4,), (2, 4, 3), False, False),
                ((2, 3, 4), (4,), False, False),
                ((3, 4), (5, 4), False, True),
            ]
        for sa, sb, ta, tb in cases:
            for dtype in ("float32", "float64"):
                yield Sample(
                    [random_array(rng, sa, dtype), random_array(rng, sb, dtype)],
                    {"transpose_a": ta, "transpose_b": tb},
                    rtol=1e-4,
                    atol=1e-4,
                )
        yield Sample(
            [random_array(rng, (2, 3, 8), "uint8"), random_array(rng, (2, 8, 4), "int8")],
            {"out_dtype": "int32", "transpose_a": False, "transpose_b": False},
        )
        yield Sample(
            [random_array(rng, (1, 0, 4), "float32"), random_array(rng, (1, 4, 3), "float32")],
            {"transpose_b": False},
        )

    return gen


# -- bias_add -----------------------------------------------------------------------------------


def _bias_add_rel(args, attrs):
    x, b = R.tensor(args[0], "data"), R.tensor(args[1], "bias")
    if x.dtype != b.dtype:
        raise OpTypeError(f"nn.bias_add: data ({x.dtype}) and bias ({b.dtype}) dtypes differ")
    axis = R.normalize_axis(attrs.axis, x.ndim)
    if b.ndim != 1 or R.dim_eq(b.shape[0], x.shape[axis]) is False:
        raise OpTypeError(
            f"nn.bias_add: bias must be 1-D with {x.shape[axis]} elements (data axis {attrs.axis} "
            f"of {tuple(x.shape)}), got shape {tuple(b.shape)}"
        )
    return x


def _bias_add_ref(xs, attrs):
    x, b = xs
    axis = attrs.axis % x.ndim
    return (x + b.reshape((-1,) + (1,) * (x.ndim - axis - 1))).astype(x.dtype, copy=False)


def _bias_add_samples(rng):
    for shape, axis in [((2, 3, 4, 5), 1), ((2, 3), 1), ((4, 5), -1), ((1, 7, 1), 2), ((5,), 0)]:
        for dtype in ("float32", "int32", "float16"):
            yield Sample(
                [random_array(rng, shape, dtype), random_array(rng, (shape[axis],), dtype)],
                {"axis": axis},
            )


register(
    OpDef(
        "nn.dense",
        _dense_rel,
        _dense_ref,
        OpPattern.OUT_EWISE_FUSABLE,
        DenseAttrs,
        (2, 2),
        "x @ w.T with w of shape (units, in)",
        samples=_dense_samples,
    )
)
declare(
    "nn.dense",
    lower=Rule("relay_core.te.lower_nn:_dense"),
    kernel=Kernel("relay_core.backend.kernels.gemm_ops:emit_dense"),
    dynamic_kernel=Kernel("relay_core.backend.kernels.gemm_dynamic:emit_dynamic_dense"),
    batch_axis0=lambda attrs: True,
    grad=Rule("relay_core.ops.grads_nn:_dense"),
)
register(
    OpDef(
        "nn.matmul",
        _matmul_rel("nn.matmul"),
        _matmul_ref,
        OpPattern.OUT_EWISE_FUSABLE,
        MatmulAttrs,
        (2, 2),
        "numpy matmul (1-D promotion, batch broadcasting)",
        samples=_matmul_samples(False),
    )
)
declare(
    "nn.matmul",
    lower=Rule("relay_core.te.lower_nn:_matmul"),
    kernel=Kernel("relay_core.backend.kernels.gemm_ops:emit_matmul"),
    dynamic_kernel=Kernel("relay_core.backend.kernels.gemm_dynamic:emit_dynamic_matmul"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_matmul"),
)
register(
    OpDef(
        "nn.batch_matmul",
        _matmul_rel("nn.batch_matmul", 2),
        _matmul_ref,
        OpPattern.OUT_EWISE_FUSABLE,
        BatchMatmulAttrs,
        (2, 2),
        "batched a @ b.T (transpose_b=True by default, as TVM); batch dims broadcast",
        samples=_matmul_samples(True),
    )
)
declare(
    "nn.batch_matmul",
    lower=Rule("relay_core.te.lower_nn:_batch_matmul"),
    kernel=Kernel("relay_core.backend.kernels.gemm_ops:emit_batch_matmul"),
    dynamic_kernel=Kernel("relay_core.backend.kernels.gemm_dynamic:emit_dynamic_batch_matmul"),
    grad=Rule("relay_core.ops.grads_nn:_g_nn_batch_matmul"),
)
register(
    OpDef(
        "nn.bias_add",
        _bias_add_rel,
        _bias_add_ref,
        OpPattern.BROADCAST,
        BiasAddAttrs,
        (2, 2),
        "add a 1-D bias along `axis`",
        samples=_bias_add_samples,
    )
)
declare(
    "nn.bias_add",
    lower=Rule("relay_core.te.lower_nn:_bias_add"),
    grad=Rule("relay_core.ops.grads_nn:_bias_add"),
)
