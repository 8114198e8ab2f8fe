"""Op-level parity with TF: matrix products, convolutions (NHWC), pooling, batch norm, softmax.

Products and convolutions sum many terms in a different order than TF: rtol / atol 1e-4."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import Case, params, rand, run_case, tf

R = tf.raw_ops
TOL = {"rtol": 1e-4, "atol": 1e-4}
IMG = rand(2, 7, 8, 3)

CASES = [
    Case(
        "MatMul",
        lambda a, b: R.MatMul(a=a, b=b),
        [rand(3, 4), rand(4, 5, seed=1)],
        ("MatMul",),
        **TOL,
    ),
    Case(
        "MatMul_transposed",
        lambda a, b: R.MatMul(a=a, b=b, transpose_a=True, transpose_b=True),
        [rand(4, 3), rand(5, 4, seed=1)],
        ("MatMul",),
        **TOL,
    ),
    Case(
        "BatchMatMulV2_broadcast",
        lambda a, b: R.BatchMatMulV2(x=a, y=b, adj_y=True),
        [rand(2, 1, 3, 4), rand(5, 6, 4, seed=1)],
        ("BatchMatMulV2",),
        **TOL,
    ),
    Case(
        "BatchMatMulV3",
        lambda a, b: R.BatchMatMulV3(x=a, y=b, Tout=tf.float32, adj_x=True),
        [rand(2, 4, 3), rand(2, 4, 5, seed=1)],
        ("BatchMatMulV3",),
        **TOL,
    ),
    Case(
        "BatchMatMul",
        lambda a, b: R.BatchMatMul(x=a, y=b),
        [rand(2, 3, 4), rand(2, 4, 5, seed=1)],
        ("BatchMatMul",),
        **TOL,
    ),
    Case("BiasAdd", lambda x, b: R.BiasAdd(value=x, bias=b), [IMG, rand(3, seed=1)], ("BiasAdd",)),
    Case(
        "BiasAddV1",
        lambda x, b: R.BiasAddV1(value=x, bias=b),
        [rand(2, 5), rand(5, seed=1)],
        ("BiasAddV1",),
    ),
    Case(
        "Softmax_LogSoftmax",
        lambda x: (R.Softmax(logits=x), R.LogSoftmax(logits=x)),
        [rand(2, 3, 7, lo=-5, hi=5)],
        ("Softmax", "LogSoftmax"),
    ),
    Case(
        "LRN",
        lambda x: R.LRN(input=x, depth_radius=2, bias=1.5, alpha=0.3, beta=0.6),
        [rand(1, 3, 3, 7)],
        ("LRN",),
        **TOL,
    ),
    Case("L2Loss", lambda x: R.L2Loss(t=x), [rand(3, 4)], ("L2Loss",)),
]


# -- convolutions ---------------------------------------------------------------------------------
def _depthwise_by_taps(x, w, padding, strides, dilations):
    """DepthwiseConv2dNative (NHWC, filter KH x KW x C x M) as TF computes it tap by tap: a
    strided slice of the padded input times the tap's C x M weights, summed over the taps."""
    (kh, kw, c, m), (n, h, wd, _) = w.shape, x.shape
    s, d = strides[1:3], dilations[1:3]
    x = tf.constant(x)
    if padding == "SAME":
        pads = []
        for size, k, st, dl in zip((h, wd), (kh, kw), s, d):
            out = -(-size // st)
            total = max((out - 1) * st + (k - 1) * dl + 1 - size, 0)
            pads.append((total // 2, total - total // 2))
        x = tf.pad(x, [(0, 0), *pads, (0, 0)])
    ph, pw = int(x.shape[1]), int(x.shape[2])
    oh = (ph - (kh - 1) * d[0] - 1) // s[0] + 1
    ow = (pw - (kw - 1) * d[1] - 1) // s[1] + 1
    y = None
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * d[0], j * d[1]
            tap = x[:, r0 : r0 + (oh - 1) * s[0] + 1 : s[0], c0 : c0 + (ow - 1) * s[1] + 1 : s[1]]
            t = tf.reshape(tap[..., None] * tf.constant(w[i, j]), (n, oh, ow, c * m))
            y = t if y is None else y + t
    return y.numpy()


CONV = [
    ("VALID", [1, 1, 1, 1], [1, 1, 1, 1]),
    ("SAME", [1, 2, 2, 1], [1, 1, 1, 1]),
    ("SAME", [1, 1, 1, 1], [1, 2, 2, 1]),
    ("VALID", [1, 2, 3, 1], [1, 1, 1, 1]),
]
for _pad, _s, _d in CONV:
    CASES.append(
        Case(
            f"Conv2D_{_pad}_s{_s[1]}{_s[2]}_d{_d[1]}",
            lambda x, w, p=_pad, s=_s, d=_d: R.Conv2D(
                input=x, filter=w, strides=s, padding=p, dilations=d
            ),
            [IMG, rand(3, 2, 3, 4, seed=1)],
            ("Conv2D",),
            **TOL,
        )
    )
    CASES.append(
        Case(
            f"DepthwiseConv2dNative_{_pad}_s{_s[1]}{_s[2]}_d{_d[1]}",
            lambda x, w, p=_pad, s=_s, d=_d: R.DepthwiseConv2dNative(
                input=x, filter=w, strides=s, padding=p, dilations=d
            ),
            [IMG, rand(3, 3, 3, 2, seed=2)],
            ("DepthwiseConv2dNative",),
            equivalent=lambda x, w, p=_pad, s=_s, d=_d: _depthwise_by_taps(x, w, p, s, d),
            **TOL,
        )
    )
CASES += [
    Case(
        "Conv2D_explicit",
        lambda x, w: R.Conv2D(
            input=x,
            filter=w,
            strides=[1, 1, 2, 1],
            padding="EXPLICIT",
            explicit_paddings=[0, 0, 1, 2, 0, 1, 0, 0],
        ),
        [IMG, rand(2, 2, 3, 5, seed=1)],
        ("Conv2D",),
        **TOL,
    ),
    Case(
        "Conv2D_grouped",
        lambda x, w: R.Conv2D(input=x, filter=w, strides=[1, 1, 1, 1], padding="SAME"),
        [rand(1, 5, 5, 4), rand(3, 3, 2, 6, seed=1)],
        ("Conv2D",),
        **TOL,
    ),
    Case(
        "Conv2D_dynamic_batch",
        lambda x, w: R.Conv2D(input=x, filter=w, strides=[1, 2, 2, 1], padding="SAME"),
        [IMG, rand(3, 3, 3, 4, seed=1)],
        ("Conv2D",),
        dynamic=(0,),
        **TOL,
    ),
    Case(
        "Conv3D",
        lambda x, w: R.Conv3D(input=x, filter=w, strides=[1, 1, 2, 1, 1], padding="SAME"),
        [rand(1, 4, 5, 6, 2), rand(2, 3, 2, 2, 3, seed=1)],
        ("Conv3D",),
        **TOL,
    ),
    Case(
        "Conv2DBackpropInput_SAME",
        lambda w, y: R.Conv2DBackpropInput(
            input_sizes=[2, 7, 8, 3], filter=w, out_backprop=y, strides=[1, 2, 2, 1], padding="SAME"
        ),
        [rand(3, 3, 3, 4, seed=1), rand(2, 4, 4, 4)],
        ("Conv2DBackpropInput",),
        **TOL,
    ),
    Case(
        "Conv2DBackpropInput_VALID",
        lambda w, y: R.Conv2DBackpropInput(
            input_sizes=[1, 9, 8, 2],
            filter=w,
            out_backprop=y,
            strides=[1, 2, 3, 1],
            padding="VALID",
        ),
        [rand(3, 2, 2, 5, seed=1), rand(1, 4, 3, 5)],
        ("Conv2DBackpropInput",),
        **TOL,
    ),
    Case(
        "Conv3DBackpropInputV2",
        lambda w, y: R.Conv3DBackpropInputV2(
            input_sizes=[1, 4, 6, 6, 2],
            filter=w,
            out_backprop=y,
            strides=[1, 1, 2, 2, 1],
            padding="SAME",
        ),
        [rand(2, 3, 3, 2, 3, seed=1), rand(1, 4, 3, 3, 3)],
        ("Conv3DBackpropInputV2",),
        **TOL,
    ),
    Case(
        "Conv2DTranspose_keras_dynamic_batch",
        lambda x: tf.nn.conv2d_transpose(
            x,
            tf.constant(rand(3, 3, 2, 4, seed=5)),
            tf.stack([tf.shape(x)[0], 8, 8, 2]),
            strides=2,
            padding="SAME",
        ),
        [rand(2, 4, 4, 4)],
        ("Conv2DBackpropInput",),
        dynamic=(0,),
        **TOL,
    ),
]

# -- pooling --------------------------------------------------------------------------------------
for _op in ("MaxPool", "AvgPool"):
    _fn = getattr(R, _op)
    for _pad in ("SAME", "VALID"):
        CASES.append(
            Case(
                f"{_op}_{_pad}",
                lambda x, f=_fn, p=_pad, k="value" if _op == "AvgPool" else "input": f(
                    **{k: x}, ksize=[1, 3, 2, 1], strides=[1, 2, 2, 1], padding=p
                ),
                [IMG],
                (_op,),
            )
        )
CASES += [
    Case(
        "MaxPoolV2",
        lambda x: R.MaxPoolV2(input=x, ksize=[1, 2, 2, 1], strides=[1, 1, 2, 1], padding="SAME"),
        [IMG],
        ("MaxPoolV2",),
    ),
    Case(
        "MaxPool3D_AvgPool3D",
        lambda x: (
            R.MaxPool3D(input=x, ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="SAME"),
            R.AvgPool3D(input=x, ksize=[1, 3, 2, 2, 1], strides=[1, 1, 2, 1, 1], padding="SAME"),
        ),
        [rand(1, 4, 5, 5, 2)],
        ("MaxPool3D", "AvgPool3D"),
    ),
]

# -- batch norm -----------------------------------------------------------------------------------
_BN = [rand(3, seed=1), rand(3, seed=2), rand(3, seed=3), rand(3, lo=0.5, hi=2, seed=4)]
for _op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
    _fn = getattr(R, _op)
    CASES.append(
        Case(
            _op,
            lambda x, s, o, m, v, f=_fn: f(
                x=x, scale=s, offset=o, mean=m, variance=v, epsilon=1e-3, is_training=False
            )[0],
            [IMG, *_BN],
            (_op,),
            **TOL,
        )
    )
CASES.append(
    Case(
        "FusedBatchNormV3_training",
        lambda x, s, o: R.FusedBatchNormV3(
            x=x,
            scale=s,
            offset=o,
            mean=tf.zeros([0]),
            variance=tf.zeros([0]),
            epsilon=1e-3,
            is_training=True,
        )[:3],
        [IMG, *_BN[:2]],
        ("FusedBatchNormV3",),
        **TOL,
    )
)


@pytest.mark.parametrize("case", params(CASES))
def test_nn(case):
    run_case(case)


def test_nhwc_stays_nhwc():
    from converters.tensorflow import from_tensorflow
    from relay_core.ir import Call, post_order

    @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 3])])
    def f(x):
        y = tf.nn.conv2d(x, tf.ones([3, 3, 3, 4]), 1, "SAME")
        return tf.nn.max_pool2d(y, 2, 2, "VALID")

    mod = from_tensorflow(f)
    calls = [n for n in post_order(mod["main"].body) if isinstance(n, Call)]
    names = {c.op.name: c for c in calls if hasattr(c.op, "name")}
    assert names["nn.conv2d"].attrs.data_layout == "NHWC"
    assert names["nn.conv2d"].attrs.kernel_layout == "HWIO"
    assert names["nn.max_pool2d"].attrs.layout == "NHWC"
    assert "transpose" not in names
    np.testing.assert_equal(mod["main"].body.checked_type.shape, (1, 4, 4, 4))
