"""Op cases: backward (gradient) ops of core ATen, called directly and compared with torch's
own kernels."""

from __future__ import annotations

import torch

from .harness import fn_case
from .inputs import I, R

A = torch.ops.aten
CASES = []
TOL = dict(rtol=1e-4, atol=1e-5)


def bwd(name, overload, fn, *inputs, **kw):
    kw.setdefault("decomposed", False)
    for k, v in TOL.items():
        kw.setdefault(k, v)
    CASES.append(fn_case(name, fn, *inputs, expect=("aten." + overload,), **kw))


def _conv_bwd(stride, padding, dilation, groups, transposed=False, output_padding=None):
    def fn(g, x, w):
        nd = w.dim() - 2
        op = output_padding or [0] * nd
        return A.convolution_backward.default(
            g,
            x,
            w,
            [w.shape[1] * groups if transposed else w.shape[0]],
            [stride] * nd,
            [padding] * nd,
            [dilation] * nd,
            transposed,
            op,
            groups,
            [True, True, True],
        )

    return fn


bwd(
    "conv_backward",
    "convolution_backward.default",
    _conv_bwd(2, 1, 1, 1),
    R(2, 4, 4, 4),
    R(2, 3, 8, 7),
    R(4, 3, 3, 3),
)
bwd(
    "conv_backward_groups_dil",
    "convolution_backward.default",
    _conv_bwd(1, 2, 2, 2),
    R(1, 4, 7, 6),
    R(1, 6, 7, 6),
    R(4, 3, 3, 3),
)
bwd(
    "conv_backward_1d",
    "convolution_backward.default",
    _conv_bwd(2, 0, 1, 1),
    R(2, 5, 4),
    R(2, 3, 9),
    R(5, 3, 3),
)
bwd(
    "conv_backward_depthwise",
    "convolution_backward.default",
    _conv_bwd(1, 1, 1, 3),
    R(1, 3, 5, 5),
    R(1, 3, 5, 5),
    R(3, 1, 3, 3),
)
bwd(
    "conv_transpose_backward",
    "convolution_backward.default",
    _conv_bwd(2, 1, 1, 1, transposed=True, output_padding=[1, 1]),
    R(1, 2, 8, 8),
    R(1, 3, 4, 4),
    R(3, 2, 3, 3),
)
bwd(
    "conv_transpose_backward_groups",
    "convolution_backward.default",
    _conv_bwd(1, 0, 1, 2, transposed=True),
    R(1, 4, 6, 6),
    R(1, 4, 4, 4),
    R(4, 2, 3, 3),
)

for _name, _args in [
    ("avg_pool_backward", ([3, 3], [2, 2], [1, 1], False, True, None)),
    ("avg_pool_backward_excl", ([3, 3], [2, 2], [1, 1], False, False, None)),
    ("avg_pool_backward_ceil", ([3, 2], [2, 2], [1, 0], True, True, None)),
    ("avg_pool_backward_div", ([2, 2], [2, 2], [0, 0], False, True, 3)),
]:

    def _fn(x, args=_args):
        out = A.avg_pool2d.default(x, *args)
        g = torch.arange(out.numel(), dtype=x.dtype).reshape(out.shape) / out.numel()
        return A.avg_pool2d_backward.default(g, x, *args)

    bwd(_name, "avg_pool2d_backward.default", _fn, R(2, 3, 7, 8))


def _avg3d(x):
    out = A.avg_pool3d.default(x, [2, 2, 2], [2, 2, 2])
    return A.avg_pool3d_backward.default(
        torch.ones_like(out) * 0.5, x, [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, None
    )


bwd("avg_pool3d_backward", "avg_pool3d_backward.default", _avg3d, R(1, 2, 4, 4, 5))


def _maxpool_bwd(x, g):
    out, idx = A.max_pool2d_with_indices.default(x, [3, 3], [2, 2], [1, 1])
    return A.max_pool2d_with_indices_backward.default(
        g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, idx
    )


bwd(
    "max_pool_backward",
    "max_pool2d_with_indices_backward.default",
    _maxpool_bwd,
    R(2, 3, 7, 8),
    R(2, 3, 4, 4),
)


def _maxpool3d_bwd(x, g):
    out, idx = A.max_pool3d_with_indices.default(x, [2, 2, 2], [2, 2, 2])
    return A.max_pool3d_with_indices_backward.default(
        g, x, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False, idx
    )


bwd(
    "max_pool3d_backward",
    "max_pool3d_with_indices_backward.default",
    _maxpool3d_bwd,
    R(1, 2, 4, 4, 6),
    R(1, 2, 2, 2, 3),
)
bwd(
    "adaptive_avg_pool_backward",
    "_adaptive_avg_pool2d_backward.default",
    lambda g, x: A._adaptive_avg_pool2d_backward.default(g, x),
    R(2, 3, 3, 2),
    R(2, 3, 7, 8),
)
bwd(
    "adaptive_avg_pool3d_backward",
    "_adaptive_avg_pool3d_backward.default",
    lambda g, x: A._adaptive_avg_pool3d_backward.default(g, x),
    R(1, 2, 2, 3, 1),
    R(1, 2, 5, 7, 3),
)
bwd(
    "embedding_backward",
    "embedding_dense_backward.default",
    lambda g, i: A.embedding_dense_backward.default(g, i, 7, -1, False),
    R(2, 5, 3),
    I(2, 5, lo=0, hi=6),
)
bwd(
    "embedding_backward_pad_freq",
    "embedding_dense_backward.default",
    lambda g, i: A.embedding_dense_backward.default(g, i, 7, 2, True),
    R(2, 5, 3),
    I(2, 5, lo=0, hi=6),
)


def _ln_bwd(g, x, w, b):
    out, mean, rstd = A.native_layer_norm.default(x, [4], w, b, 1e-5)
    return A.native_layer_norm_backward.default(g, x, [4], mean, rstd, w, b, [True, True, True])


bwd(
    "layer_norm_backward",
    "native_layer_norm_backward.default",
    _ln_bwd,
    R(2, 3, 4),
    R(2, 3, 4),
    R(4),
    R(4),
)


def _gn_bwd(g, x, w, b):
    out, mean, rstd = A.native_group_norm.default(x, w, b, 2, 6, 12, 3, 1e-5)
    return A.native_group_norm_backward.default(
        g, x, mean, rstd, w, 2, 6, 12, 3, [True, True, True]
    )


bwd(
    "group_norm_backward",
    "native_group_norm_backward.default",
    _gn_bwd,
    R(2, 6, 3, 4),
    R(2, 6, 3, 4),
    R(6),
    R(6),
)
bwd("resize_shrink", "resize.default", lambda x: A.resize.default(x, [2, 3]) * 1.0, R(3, 4))
bwd("resize_inplace", "resize_.default", lambda x: A.resize_.default(x.clone(), [5]) * 2.0, R(3, 4))
