"""Numpy references of the nn ops against independent oracles: PyTorch's functional ops, the
ONNX reference evaluator, and onnxruntime where ONNX's reference lacks an op or is wrong."""

from __future__ import annotations

import numpy as np
import pytest

from relay_core.errors import OpTypeError
from relay_core.ir import Any, TensorType

from .nn_oracles import RNG, F, T, onnx_run, ort_run, randn, rel, run, torch

# ---------------------------------------------------------------------------------------------
# Convolution.

CONV_CASES = [
    # (nd, n, c, o, spatial, kernel, stride, pad(begin..., end...), dilation, groups)
    (1, 2, 3, 4, (11,), (3,), (1,), (1, 1), (1,), 1),
    (1, 1, 4, 6, (8,), (2,), (3,), (0, 2), (2,), 2),
    (2, 2, 3, 5, (9, 8), (3, 3), (2, 1), (1, 0, 2, 1), (1, 2), 1),
    (2, 1, 6, 6, (7, 7), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6),
    (2, 1, 4, 8, (5, 6), (3, 2), (2, 2), (0, 1, 1, 0), (1, 1), 4),
    (2, 1, 8, 4, (6, 6), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 2),
    (2, 1, 1, 1, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (3, 1, 2, 3, (5, 4, 6), (3, 2, 3), (1, 2, 2), (1, 0, 1, 1, 1, 0), (1, 1, 2), 1),
]


def _torch_conv(x, w, stride, pad, dilation, groups):
    nd = x.ndim - 2
    tpad = []
    for a in reversed(range(nd)):
        tpad += [pad[a], pad[nd + a]]
    xt = F.pad(T(x), tpad)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    return fn(xt, T(w), stride=stride, dilation=dilation, groups=groups).numpy()


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_matches_torch(case):
    nd, n, c, o, sp, k, s, p, d, g = case
    x = randn(n, c, *sp)
    w = randn(o, c // g, *k)
    y = run(f"nn.conv{nd}d", x, w, strides=s, padding=p, dilation=d, groups=g)
    np.testing.assert_allclose(y, _torch_conv(x, w, s, p, d, g), rtol=1e-5, atol=1e-5)
    assert y.dtype == np.float32
    # Channel-last data with an HWIO kernel gives the same numbers, transposed.
    sp_letters = "DHW"[3 - nd :]
    dl, kl = "N" + sp_letters + "C", sp_letters + "IO"
    perm_x = [0, *range(2, nd + 2), 1]
    perm_w = [*range(2, nd + 2), 1, 0]
    y2 = run(
        f"nn.conv{nd}d",
        x.transpose(perm_x),
        w.transpose(perm_w),
        strides=s,
        padding=p,
        dilation=d,
        groups=g,
        data_layout=dl,
        kernel_layout=kl,
    )
    np.testing.assert_allclose(y2, y.transpose(perm_x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("stride,dilation,k", [(1, 1, 3), (2, 1, 2), (2, 2, 3), (3, 1, 4)])
def test_conv_auto_pad_matches_onnx(auto_pad, stride, dilation, k):
    x = randn(1, 2, 7, 8)
    w = randn(3, 2, k, k)
    y = run("nn.conv2d", x, w, auto_pad=auto_pad, strides=(stride,), dilation=(dilation,))
    (want,) = onnx_run(
        "Conv", [x, w], auto_pad=auto_pad, strides=[stride] * 2, dilations=[dilation] * 2
    )
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    t = rel(
        "nn.conv2d",
        TensorType((1, 2, 7, 8)),
        TensorType((3, 2, k, k)),
        auto_pad=auto_pad,
        strides=(stride,),
        dilation=(dilation,),
    )
    assert t.shape == y.shape


def test_conv_integer_matches_onnx():
    x = RNG.integers(0, 256, (2, 3, 6, 5)).astype(np.uint8)
    w = RNG.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    y = run("nn.conv2d", x, w, padding=(1,), out_dtype="int32")
    (want,) = onnx_run("ConvInteger", [x, w], pads=[1, 1, 1, 1])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, want)


CONV_T_CASES = [
    # (nd, n, c, og, spatial, kernel, stride, pad, output_padding, dilation, groups)
    (1, 2, 3, 2, (5,), (3,), (2,), (1,), (1,), (1,), 1),
    (2, 1, 4, 3, (4, 5), (3, 2), (2, 3), (1, 0), (1, 2), (1, 1), 2),
    (2, 2, 2, 2, (3, 3), (3, 3), (1, 1), (0, 0), (0, 0), (2, 2), 1),
    (2, 1, 3, 1, (4, 4), (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), 3),
    (3, 1, 2, 2, (3, 2, 3), (2, 3, 2), (2, 1, 2), (0, 1, 1), (1, 0, 0), (1, 1, 2), 1),
]


@pytest.mark.parametrize("case", CONV_T_CASES)
def test_conv_transpose_matches_torch(case):
    nd, n, c, og, sp, k, s, p, op, d, g = case
    x = randn(n, c, *sp)
    w = randn(c, og, *k)
    y = run(
        f"nn.conv{nd}d_transpose",
        x,
        w,
        strides=s,
        padding=p,
        output_padding=op,
        dilation=d,
        groups=g,
    )
    fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nd]
    want = fn(T(x), T(w), stride=s, padding=p, output_padding=op, groups=g, dilation=d).numpy()
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_conv_transpose_asymmetric_pads_match_onnx():
    x = randn(1, 2, 4, 3)
    w = randn(2, 3, 3, 3)
    y = run("nn.conv2d_transpose", x, w, strides=(2, 2), padding=(0, 1, 2, 1))
    (want,) = onnx_run("ConvTranspose", [x, w], strides=[2, 2], pads=[0, 1, 2, 1])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_conv_type_errors_and_unknown_dims():
    with pytest.raises(OpTypeError, match="weight has 3 input channels but data has 4"):
        rel("nn.conv2d", TensorType((1, 4, 8, 8)), TensorType((5, 3, 3, 3)))
    with pytest.raises(OpTypeError, match="groups=2 needs 6"):
        rel("nn.conv2d", TensorType((1, 4, 8, 8)), TensorType((4, 3, 3, 3)), groups=2)
    with pytest.raises(OpTypeError, match="does not fit"):
        rel("nn.conv2d", TensorType((1, 4, 2, 8)), TensorType((5, 4, 3, 3)))
    with pytest.raises(OpTypeError, match="float"):
        rel("nn.conv2d", TensorType((1, 4, 8, 8)), TensorType((5, 4, 3, 3), "float16"))
    t = rel(
        "nn.conv2d",
        TensorType(("n", 4, Any, 9)),
        TensorType((5, 4, 3, 3)),
        strides=(2, 2),
        padding=(1,),
    )
    assert t.shape == (TensorType(("n",)).shape[0], 5, Any, 5)
    t = rel(
        "nn.conv2d",
        TensorType((1, Any, Any, Any)),
        TensorType((Any,) * 4),
        channels=7,
        auto_pad="SAME_UPPER",
    )
    assert t.shape == (1, 7, Any, Any)


# ---------------------------------------------------------------------------------------------
# Matrix products.


def test_dense_and_bias_add_match_torch():
    x, w, b = randn(2, 3, 7), randn(5, 7), randn(5)
    y = run("nn.bias_add", run("nn.dense", x, w, units=5), b, axis=-1)
    np.testing.assert_allclose(y, F.linear(T(x), T(w), T(b)).numpy(), rtol=1e-5, atol=1e-5)
    xc = randn(2, 5, 3, 4)
    want = (T(xc) + T(b).reshape(5, 1, 1)).numpy()
    np.testing.assert_allclose(run("nn.bias_add", xc, b), want, rtol=1e-6)
    with pytest.raises(OpTypeError, match="reduction dims differ"):
        rel("nn.dense", TensorType((2, 6)), TensorType((5, 7)))
    with pytest.raises(OpTypeError, match="units=4"):
        rel("nn.dense", TensorType((2, 7)), TensorType((5, 7)), units=4)
    with pytest.raises(OpTypeError, match="bias must be 1-D with 5"):
        rel("nn.bias_add", TensorType((2, 5, 3)), TensorType((3,)))


MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((4,), (4,)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 3, 4), (6, 4, 2)),
    ((0, 3, 4), (4, 2)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_matches_torch(sa, sb):
    a, b = randn(*sa), randn(*sb)
    y = run("nn.matmul", a, b)
    np.testing.assert_allclose(y, torch.matmul(T(a), T(b)).numpy(), rtol=1e-5, atol=1e-5)
    assert rel("nn.matmul", TensorType(sa), TensorType(sb)).shape == y.shape
    if len(sa) >= 2 and len(sb) >= 2:
        at, bt = np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)
        y2 = run("nn.matmul", at, bt, transpose_a=True, transpose_b=True)
        np.testing.assert_allclose(y2, y, rtol=1e-5, atol=1e-5)
        y3 = run("nn.batch_matmul", a, bt)  # TVM default: b transposed
        np.testing.assert_allclose(y3, y, rtol=1e-5, atol=1e-5)


def test_integer_matmul_matches_onnx():
    a = RNG.integers(0, 256, (2, 3, 16)).astype(np.uint8)
    b = RNG.integers(-128, 128, (16, 5)).astype(np.int8)
    (want,) = onnx_run("MatMulInteger", [a, b])
    y = run("nn.matmul", a, b, out_dtype="int32")
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, want)
    y = run("nn.dense", a.reshape(6, 16), b.T.copy(), out_dtype="int32")
    np.testing.assert_array_equal(y, want.reshape(6, 5))
    with pytest.raises(OpTypeError, match="batch dims"):
        rel("nn.batch_matmul", TensorType((2, 3, 4)), TensorType((3, 5, 4)))


def test_shape_vars_flow_through():
    n = TensorType(("n", 3)).shape[0]
    t = rel("nn.dense", TensorType((n, 7)), TensorType((5, 7)))
    assert t.shape == (n, 5)
    t = rel("nn.conv2d", TensorType((n, 3, 8, 8)), TensorType((4, 3, 3, 3)), padding=(1,))
    assert t.shape == (n, 4, 8, 8)
    t = rel("nn.batch_matmul", TensorType((n, 3, 4)), TensorType((n, 5, 4)))
    assert t.shape == (n, 3, 5)
    assert rel("nn.softmax", TensorType((n, 3))) == TensorType((n, 3))


# ---------------------------------------------------------------------------------------------
# Pooling.

POOL_CASES = [
    # (nd, spatial, kernel, stride, pad, dilation, ceil_mode)
    (1, (11,), (3,), (2,), (1,), (1,), False),
    (1, (10,), (2,), (3,), (1,), (2,), True),
    (2, (9, 8), (3, 3), (2, 2), (1, 1), (1, 1), True),
    (2, (7, 10), (2, 3), (2, 1), (0, 1), (1, 1), False),
    (2, (8, 8), (3, 2), (3, 2), (1, 0), (2, 1), True),
    (2, (1, 1), (1, 1), (1, 1), (0, 0), (1, 1), False),
    (3, (5, 6, 7), (2, 3, 2), (2, 2, 1), (1, 1, 0), (1, 1, 1), True),
]


@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool_matches_torch(case):
    nd, sp, k, s, p, d, ceil = case
    x = randn(2, 3, *sp)
    fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd]
    want, wind = fn(T(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
    y = run(f"nn.max_pool{nd}d", x, pool_size=k, strides=s, padding=p, dilation=d, ceil_mode=ceil)
    np.testing.assert_array_equal(y, want.numpy())
    vals, ind = run(
        f"nn.max_pool{nd}d_with_argmax",
        x,
        pool_size=k,
        strides=s,
        padding=p,
        dilation=d,
        ceil_mode=ceil,
    )
    np.testing.assert_array_equal(vals, want.numpy())
    plane = int(np.prod(sp))
    np.testing.assert_array_equal(ind % plane, wind.numpy())  # torch: index within the plane
    np.testing.assert_array_equal(x.ravel()[ind], vals)


@pytest.mark.parametrize("case", [c for c in POOL_CASES if c[5] == (1,) * c[0]])
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool_matches_torch(case, count_include_pad):
    nd, sp, k, s, p, d, ceil = case
    x = randn(2, 3, *sp)
    fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[nd]
    want = fn(T(x), k, s, p, ceil_mode=ceil, count_include_pad=count_include_pad).numpy()
    y = run(
        f"nn.avg_pool{nd}d",
        x,
        pool_size=k,
        strides=s,
        padding=p,
        ceil_mode=ceil,
        count_include_pad=count_include_pad,
    )
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("pads", [(0, 1, 2, 1), (1, 0, 0, 2)])
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_avg_pool_asymmetric_pads_match_onnx(pads, count_include_pad):
    x = randn(1, 2, 7, 6)
    (want,) = onnx_run(
        "AveragePool",
        [x],
        kernel_shape=[3, 3],
        strides=[2, 1],
        pads=list(pads),
        count_include_pad=count_include_pad,
    )
    y = run(
        "nn.avg_pool2d",
        x,
        pool_size=(3, 3),
        strides=(2, 1),
        padding=pads,
        count_include_pad=bool(count_include_pad),
    )
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("nd,storage_order", [(1, 0), (2, 0), (2, 1), (3, 0)])
def test_max_pool_indices_match_onnx(nd, storage_order):
    x = randn(2, 3, *(7, 6, 5)[:nd])
    pads = [1, 0, 1][:nd] + [1, 1, 0][:nd]
    outs = onnx_run(
        "MaxPool",
        [x],
        n_out=2,
        kernel_shape=[3] * nd,
        strides=[2] * nd,
        pads=pads,
        storage_order=storage_order,
    )
    vals, ind = run(
        f"nn.max_pool{nd}d_with_argmax",
        x,
        pool_size=(3,),
        strides=(2,),
        padding=pads,
        storage_order=storage_order,
    )
    np.testing.assert_array_equal(vals, outs[0])
    np.testing.assert_array_equal(ind, outs[1])


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool", "LpPool"])
def test_pool_auto_pad_matches_onnxruntime(auto_pad, op_type):
    x = randn(1, 2, 7, 8)
    (want,) = ort_run(op_type, [x], kernel_shape=[3, 2], strides=[2, 3], auto_pad=auto_pad)
    name = {"MaxPool": "nn.max_pool2d", "AveragePool": "nn.avg_pool2d", "LpPool": "nn.lp_pool2d"}
    y = run(name[op_type], x, pool_size=(3, 2), strides=(2, 3), auto_pad=auto_pad)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_pool_channel_last_layout():
    x = randn(2, 9, 8, 3)
    y = run("nn.max_pool2d", x, pool_size=(3, 3), strides=(2, 2), padding=(1,), layout="NHWC")
    want = F.max_pool2d(T(x.transpose(0, 3, 1, 2)), 3, 2, 1).numpy().transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(y, want)
    y = run("nn.avg_pool2d", x, pool_size=(2, 2), strides=(2, 2), layout="NHWC", out_layout="NCHW")
    np.testing.assert_allclose(y, F.avg_pool2d(T(x.transpose(0, 3, 1, 2)), 2).numpy(), rtol=1e-6)
    # TF's MaxPoolWithArgmax convention: flat index into the NHWC tensor.
    vals, ind = run("nn.max_pool2d_with_argmax", x, pool_size=(2, 2), strides=(2, 2), layout="NHWC")
    np.testing.assert_array_equal(x.ravel()[ind], vals)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool(p):
    x = randn(2, 3, 7, 8)
    (want,) = onnx_run("LpPool", [x], kernel_shape=[3, 2], strides=[2, 2], p=p)
    y = run("nn.lp_pool2d", x, pool_size=(3, 2), strides=(2, 2), p=p)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    ax = np.abs(x)  # torch's lp_pool uses x**p without abs
    want = F.lp_pool2d(T(ax), p, (3, 2), (2, 2)).numpy()
    np.testing.assert_allclose(
        run("nn.lp_pool2d", ax, pool_size=(3, 2), strides=(2, 2), p=p), want, rtol=1e-5, atol=1e-6
    )
    want = torch.linalg.vector_norm(T(x), ord=p, dim=(2, 3), keepdim=True).numpy()
    np.testing.assert_allclose(run("nn.global_lp_pool2d", x, p=p), want, rtol=1e-5)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_global_pools(nd):
    x = randn(2, 3, *(5, 4, 3)[:nd])
    (want,) = onnx_run("GlobalAveragePool", [x])
    np.testing.assert_allclose(run(f"nn.global_avg_pool{nd}d", x), want, rtol=1e-6)
    want = T(x).amax(dim=tuple(range(2, nd + 2)), keepdim=True).numpy()
    np.testing.assert_array_equal(run(f"nn.global_max_pool{nd}d", x), want)


@pytest.mark.parametrize("size", [(1, 1), (3, 4), (5, 2), (7, 9), (2, None)])
def test_adaptive_pools_match_torch(size):
    x = randn(2, 3, 7, 5)
    y = run("nn.adaptive_avg_pool2d", x, output_size=size)
    np.testing.assert_allclose(y, F.adaptive_avg_pool2d(T(x), size).numpy(), rtol=1e-5, atol=1e-6)
    y = run("nn.adaptive_max_pool2d", x, output_size=size)
    np.testing.assert_array_equal(y, F.adaptive_max_pool2d(T(x), size).numpy())
    x3 = randn(1, 2, 5, 3, 4)
    y = run("nn.adaptive_avg_pool3d", x3, output_size=(2, 3, 3))
    want = F.adaptive_avg_pool3d(T(x3), (2, 3, 3)).numpy()
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    x1 = randn(2, 3, 10)
    y = run("nn.adaptive_max_pool1d", x1, output_size=(4,))
    np.testing.assert_array_equal(y, F.adaptive_max_pool1d(T(x1), 4).numpy())


def test_max_unpool_matches_torch_and_onnxruntime():
    x = randn(2, 3, 7, 6)
    vals, ind = run("nn.max_pool2d_with_argmax", x, pool_size=(2, 2), strides=(2, 2))
    y = run("nn.max_unpool2d", vals, ind, pool_size=(2, 2), strides=(2, 2), output_size=(7, 6))
    tv, ti = F.max_pool2d(T(x), 2, 2, return_indices=True)
    want = F.max_unpool2d(tv, ti, 2, 2, output_size=(7, 6)).numpy()
    np.testing.assert_array_equal(y, want)
    (want,) = ort_run(
        "MaxUnpool",
        [vals, ind, np.array([2, 3, 7, 6], np.int64)],
        kernel_shape=[2, 2],
        strides=[2, 2],
    )
    np.testing.assert_array_equal(y, want)


def test_pool_type_relations():
    t = rel(
        "nn.max_pool2d",
        TensorType((1, 3, Any, 9)),
        pool_size=(3, 3),
        strides=(2, 2),
        padding=(1,),
        ceil_mode=True,
    )
    assert t.shape == (1, 3, Any, 5)
    t = rel("nn.max_pool2d_with_argmax", TensorType((1, 3, 8, 9)), pool_size=(2, 2), strides=(2, 2))
    assert t.fields[1] == TensorType((1, 3, 4, 4), "int64")
    with pytest.raises(OpTypeError, match="does not fit"):
        rel("nn.avg_pool2d", TensorType((1, 3, 2, 9)), pool_size=(3, 3))
    with pytest.raises(OpTypeError, match="float"):
        rel("nn.avg_pool2d", TensorType((1, 3, 4, 9), "int32"), pool_size=(3, 3))
    with pytest.raises(OpTypeError, match="layout"):
        rel("nn.max_pool2d", TensorType((1, 3, 4, 9)), layout="NCWX")


# ---------------------------------------------------------------------------------------------
# Activations.

ACT_TORCH = [
    ("nn.relu", {}, lambda t: F.relu(t)),
    ("nn.leaky_relu", {"alpha": 0.2}, lambda t: F.leaky_relu(t, 0.2)),
    ("nn.elu", {"alpha": 0.7}, lambda t: F.elu(t, 0.7)),
    ("nn.selu", {}, lambda t: F.selu(t)),
    ("nn.celu", {"alpha": 1.5}, lambda t: F.celu(t, 1.5)),
    ("nn.gelu", {}, lambda t: F.gelu(t)),
    ("nn.gelu", {"approximate": "tanh"}, lambda t: F.gelu(t, approximate="tanh")),
    ("nn.silu", {}, lambda t: F.silu(t)),
    ("nn.mish", {}, lambda t: F.mish(t)),
    ("nn.hard_sigmoid", {"alpha": 1 / 6, "beta": 0.5}, lambda t: F.hardsigmoid(t)),
    ("nn.hard_swish", {}, lambda t: F.hardswish(t)),
    ("nn.softplus", {"beta": 2.0, "threshold": 3.0}, lambda t: F.softplus(t, 2.0, 3.0)),
    ("nn.softsign", {}, lambda t: F.softsign(t)),
    ("nn.thresholded_relu", {"alpha": 0.5}, lambda t: F.threshold(t, 0.5, 0.0)),
    ("nn.shrink", {"lambd": 0.7}, lambda t: F.hardshrink(t, 0.7)),
    ("nn.shrink", {"lambd": 0.7, "bias": 0.7}, lambda t: F.softshrink(t, 0.7)),
]


@pytest.mark.parametrize("name,attrs,fn", ACT_TORCH, ids=[f"{a[0]}{a[1]}" for a in ACT_TORCH])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activations_match_torch(name, attrs, fn, dtype):
    x = (randn(4, 5, 6) * 4).astype(dtype)
    x.flat[:3] = [0.0, -0.0, 1e-8]
    y = run(name, x, **attrs)
    assert y.dtype == dtype
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, fn(T(x)).numpy(), rtol=tol, atol=tol)


ACT_ONNX = [
    ("nn.leaky_relu", "LeakyRelu", {"alpha": 0.1}),
    ("nn.elu", "Elu", {"alpha": 0.5}),
    ("nn.selu", "Selu", {"alpha": 1.5, "gamma": 2.0}),
    ("nn.celu", "Celu", {"alpha": 2.0}),
    ("nn.hard_sigmoid", "HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
    ("nn.hard_swish", "HardSwish", {}),
    ("nn.mish", "Mish", {}),
    ("nn.thresholded_relu", "ThresholdedRelu", {"alpha": 0.4}),
    ("nn.shrink", "Shrink", {"bias": 0.2, "lambd": 0.6}),
    ("nn.softsign", "Softsign", {}),
]


@pytest.mark.parametrize("name,op_type,attrs", ACT_ONNX)
def test_activations_match_onnx(name, op_type, attrs):
    x = randn(3, 4, 5) * 3
    (want,) = onnx_run(op_type, [x], **attrs)
    np.testing.assert_allclose(run(name, x, **attrs), want, rtol=1e-6, atol=1e-6)


def test_gelu_and_softplus_match_onnx():
    x = randn(3, 40) * 4
    for approx in ("none", "tanh"):
        (want,) = onnx_run("Gelu", [x], approximate=approx)
        np.testing.assert_allclose(
            run("nn.gelu", x, approximate=approx), want, rtol=1e-6, atol=1e-7
        )
    x = x * 10  # values beyond the default PyTorch threshold
    (want,) = onnx_run("Softplus", [x])
    np.testing.assert_allclose(run("nn.softplus", x, threshold=np.inf), want, rtol=1e-6)


def test_activation_float16_and_int():
    x = randn(50).astype(np.float16)
    y = run("nn.gelu", x)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, F.gelu(T(x.astype(np.float32))).numpy().astype(np.float16))
    xi = RNG.integers(-5, 5, 20).astype(np.int8)
    np.testing.assert_array_equal(run("nn.relu", xi), np.maximum(xi, 0))
    with pytest.raises(OpTypeError, match="float"):
        rel("nn.gelu", TensorType((3,), "int32"))


def test_prelu():
    x = randn(2, 4, 3, 3)
    w = RNG.random(4).astype(np.float32)
    np.testing.assert_allclose(run("nn.prelu", x, w), F.prelu(T(x), T(w)).numpy(), rtol=1e-6)
    w1 = RNG.random(1).astype(np.float32)
    np.testing.assert_allclose(run("nn.prelu", x, w1), F.prelu(T(x), T(w1)).numpy(), rtol=1e-6)
    slope = RNG.random((4, 1, 3)).astype(np.float32)  # ONNX: numpy broadcasting
    (want,) = onnx_run("PRelu", [x, slope])
    np.testing.assert_allclose(run("nn.prelu", x, slope, axis=None), want, rtol=1e-6)
    with pytest.raises(OpTypeError, match="does not broadcast"):
        rel("nn.prelu", TensorType((2, 4, 3)), TensorType((4,)), axis=None)
    with pytest.raises(OpTypeError, match="1 or 4 elements"):
        rel("nn.prelu", TensorType((2, 4, 3)), TensorType((3,)))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_family(axis):
    x = randn(3, 4, 5) * 5
    np.testing.assert_allclose(
        run("nn.softmax", x, axis=axis), F.softmax(T(x), axis).numpy(), rtol=1e-6, atol=1e-7
    )
    np.testing.assert_allclose(
        run("nn.log_softmax", x, axis=axis), F.log_softmax(T(x), axis).numpy(), rtol=1e-6, atol=1e-6
    )
    x[0, 0, :2] = 7.0  # a tie: the first maximum wins
    (want,) = onnx_run("Hardmax", [x], axis=axis)
    np.testing.assert_array_equal(run("nn.hardmax", x, axis=axis), want)
    big = np.array([[1000.0, 0.0, -1000.0]], np.float32)
    assert np.isfinite(run("nn.log_softmax", big)).all()


# ---------------------------------------------------------------------------------------------
# Normalisation.


def test_batch_norm_matches_torch():
    x = randn(2, 5, 4, 3)
    g, b, m = randn(5), randn(5), randn(5)
    v = RNG.random(5).astype(np.float32) + 0.1
    want = F.batch_norm(T(x), T(m), T(v), T(g), T(b), training=False, eps=1e-3).numpy()
    # TVM's signature: (normalized, moving_mean, moving_var)
    y, mo, vo = run("nn.batch_norm", x, g, b, m, v, epsilon=1e-3)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mo, m)
    np.testing.assert_array_equal(vo, v)
    xl = x.transpose(0, 2, 3, 1)
    y = run("nn.batch_norm", xl, g, b, m, v, axis=-1, epsilon=1e-3)[0]
    np.testing.assert_allclose(y, want.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)
    (want,) = onnx_run("BatchNormalization", [x, g, b, m, v], epsilon=1e-3)
    np.testing.assert_allclose(
        run("nn.batch_norm", x, g, b, m, v, epsilon=1e-3)[0], want, rtol=1e-5, atol=1e-6
    )
    with pytest.raises(OpTypeError, match="moving_var"):
        rel("nn.batch_norm", *(TensorType(s) for s in [(2, 5, 3), (5,), (5,), (5,), (4,)]))


@pytest.mark.parametrize("axis", [-1, -2, 1])
def test_layer_norm(axis):
    x = randn(2, 3, 4, 5) * 3 + 1
    norm = x.shape[axis:]
    g, b = randn(*norm), randn(*norm)
    want = F.layer_norm(T(x), norm, T(g), T(b), eps=1e-5).numpy()
    np.testing.assert_allclose(run("nn.layer_norm", x, g, b, axis=axis), want, rtol=1e-5, atol=1e-5)
    (want,) = onnx_run("LayerNormalization", [x, g, b], axis=axis, epsilon=1e-5)
    np.testing.assert_allclose(run("nn.layer_norm", x, g, b, axis=axis), want, rtol=1e-5, atol=1e-5)
    want = F.rms_norm(T(x), norm, T(g), eps=1e-5).numpy()
    np.testing.assert_allclose(run("nn.rms_norm", x, g, axis=axis), want, rtol=1e-5, atol=1e-5)
    (want,) = onnx_run("RMSNormalization", [x, g], axis=axis, epsilon=1e-5)
    np.testing.assert_allclose(run("nn.rms_norm", x, g, axis=axis), want, rtol=1e-5, atol=1e-5)


def test_instance_and_group_norm():
    x = randn(2, 6, 5, 4) * 2 + 1
    g, b = randn(6), randn(6)
    want = F.instance_norm(T(x), weight=T(g), bias=T(b), eps=1e-5).numpy()
    np.testing.assert_allclose(run("nn.instance_norm", x, g, b), want, rtol=1e-5, atol=1e-5)
    (want,) = onnx_run("InstanceNormalization", [x, g, b], epsilon=1e-5)
    np.testing.assert_allclose(run("nn.instance_norm", x, g, b), want, rtol=1e-5, atol=1e-5)
    for groups in (1, 2, 3, 6):
        want = F.group_norm(T(x), groups, T(g), T(b), eps=1e-5).numpy()
        y = run("nn.group_norm", x, g, b, num_groups=groups)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    (want,) = onnx_run("GroupNormalization", [x, g, b], num_groups=3, epsilon=1e-5)
    np.testing.assert_allclose(
        run("nn.group_norm", x, g, b, num_groups=3), want, rtol=1e-5, atol=1e-5
    )
    y = run("nn.group_norm", x.transpose(0, 2, 3, 1), g, b, num_groups=2, axis=-1)
    want = F.group_norm(T(x), 2, T(g), T(b)).numpy().transpose(0, 2, 3, 1)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(OpTypeError, match="num_groups=4"):
        rel(
            "nn.group_norm", TensorType((2, 6, 3)), TensorType((6,)), TensorType((6,)), num_groups=4
        )


def test_l2_normalize_lrn_mvn():
    x = randn(2, 7, 4, 3)
    want = F.normalize(T(x), dim=1, eps=1e-6).numpy()
    np.testing.assert_allclose(run("nn.l2_normalize", x, axis=(1,), eps=1e-12), want, rtol=1e-6)
    for size in (1, 2, 3, 4, 5, 9):
        y = run("nn.lrn", x, size=size, alpha=0.02, beta=0.6, bias=1.5)
        if size % 2:  # onnxruntime and PyTorch take odd sizes only (onnx.reference loops over N)
            (want,) = ort_run("LRN", [x], size=size, alpha=0.02, beta=0.6, bias=1.5)
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
            want = F.local_response_norm(T(x), size, 0.02, 0.6, 1.5).numpy()
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
        else:  # the ONNX spec's window: [c - floor((size-1)/2), c + ceil((size-1)/2)]
            lo, hi = (size - 1) // 2, size // 2
            sq = np.stack([(x[:, max(0, c - lo) : c + hi + 1] ** 2).sum(1) for c in range(7)], 1)
            want = x / (1.5 + 0.02 / size * sq) ** 0.6
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    (want,) = onnx_run("MeanVarianceNormalization", [x])
    np.testing.assert_allclose(run("nn.mean_variance_normalization", x), want, rtol=1e-5, atol=1e-6)
    (want,) = onnx_run("MeanVarianceNormalization", [x], axes=[1, 3])
    np.testing.assert_allclose(
        run("nn.mean_variance_normalization", x, axes=(1, 3)), want, rtol=1e-5, atol=1e-6
    )


# ---------------------------------------------------------------------------------------------
# pad, depth_to_space, space_to_depth.


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_matches_onnx(mode):
    x = randn(3, 4, 5)
    pads = [1, 0, 2, 2, 3, 1]  # ONNX: all begins, then all ends
    value = np.array(1.5, np.float32) if mode == "constant" else None
    (want,) = onnx_run("Pad", [x, np.array(pads, np.int64), value], mode=mode)
    width = tuple(zip(pads[:3], pads[3:]))
    np.testing.assert_array_equal(
        run("nn.pad", x, pad_width=width, pad_mode=mode, pad_value=1.5), want
    )
    if value is not None:
        np.testing.assert_array_equal(run("nn.pad", x, value, pad_width=width), want)


def test_pad_negative_and_torch():
    x = randn(2, 3, 6, 5)
    y = run("nn.pad", x, pad_width=((0, 0), (0, 0), (-1, 2), (3, -2)), pad_value=-1.0)
    np.testing.assert_array_equal(y, F.pad(T(x), (3, -2, -1, 2), value=-1.0).numpy())
    y = run("nn.pad", x, pad_width=((0, 0), (0, 0), (2, 1), (1, 3)), pad_mode="reflect")
    np.testing.assert_array_equal(y, F.pad(T(x), (1, 3, 2, 1), mode="reflect").numpy())
    y = run("nn.pad", x, pad_width=((0, 0), (0, 0), (2, 1), (1, 3)), pad_mode="edge")
    np.testing.assert_array_equal(y, F.pad(T(x), (1, 3, 2, 1), mode="replicate").numpy())
    y = run("nn.pad", x, pad_width=((0, 0), (0, 0), (2, 1), (1, 3)), pad_mode="wrap")
    np.testing.assert_array_equal(y, F.pad(T(x), (1, 3, 2, 1), mode="circular").numpy())
    t = rel("nn.pad", TensorType((Any, 4)), pad_width=((1, 1), (-1, 2)))
    assert t.shape == (Any, 5)
    with pytest.raises(OpTypeError, match="rank 2"):
        rel("nn.pad", TensorType((3, 4)), pad_width=((1, 1),))


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_space_match_onnx_and_torch(mode):
    x = randn(2, 12, 3, 4)
    (want,) = onnx_run("DepthToSpace", [x], blocksize=2, mode=mode)
    y = run("nn.depth_to_space", x, block_size=2, mode=mode)
    np.testing.assert_array_equal(y, want)
    if mode == "CRD":
        np.testing.assert_array_equal(y, F.pixel_shuffle(T(x), 2).numpy())
    z = randn(2, 3, 6, 4)
    (want,) = onnx_run("SpaceToDepth", [z], blocksize=2)
    if mode == "DCR":
        np.testing.assert_array_equal(run("nn.space_to_depth", z, block_size=2), want)
    else:
        np.testing.assert_array_equal(
            run("nn.space_to_depth", z, block_size=2, mode="CRD"),
            F.pixel_unshuffle(T(z), 2).numpy(),
        )
    # Round trip and channel-last layout.
    back = run("nn.space_to_depth", y, block_size=2, mode=mode)
    np.testing.assert_array_equal(back, x)
    yl = run("nn.depth_to_space", x.transpose(0, 2, 3, 1), block_size=2, mode=mode, layout="NHWC")
    np.testing.assert_array_equal(yl, y.transpose(0, 2, 3, 1))
    with pytest.raises(OpTypeError, match="not divisible"):
        rel("nn.depth_to_space", TensorType((1, 6, 2, 2)), block_size=2)
