"""Op cases: pooling, padding, resizing, grid sampling, fold / unfold, pixel shuffle."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .harness import fn_case
from .inputs import R

CASES = []
add = CASES.append
A = torch.ops.aten
TOL = dict(rtol=1e-5, atol=1e-5)

add(
    fn_case(
        "max_pool2d",
        lambda x: F.max_pool2d(x, 3, 2, 1),
        R(2, 3, 9, 8),
        expect=("aten.max_pool2d.default", "aten.max_pool2d_with_indices.default"),
    )
)
add(
    fn_case(
        "max_pool2d_ceil",
        lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True),
        R(1, 2, 8, 8),
        expect=("aten.max_pool2d.default",),
    )
)
add(
    fn_case(
        "max_pool2d_dil",
        lambda x: F.max_pool2d(x, 2, 1, 0, 2),
        R(1, 2, 7, 7),
        expect=("aten.max_pool2d.default",),
    )
)
add(
    fn_case(
        "max_pool2d_indices",
        lambda x: F.max_pool2d(x, 2, return_indices=True),
        R(2, 3, 6, 6),
        expect=("aten.max_pool2d_with_indices.default",),
    )
)
add(
    fn_case(
        "max_pool1d",
        lambda x: F.max_pool1d(x, 3, 2),
        R(2, 3, 9),
        expect=("aten.max_pool1d.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "max_pool1d_indices",
        lambda x: F.max_pool1d(x, 3, 2, return_indices=True),
        R(2, 3, 9),
        expect=("aten.max_pool1d_with_indices.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "max_pool3d",
        lambda x: F.max_pool3d(x, 2),
        R(1, 2, 4, 4, 6),
        expect=("aten.max_pool3d.default", "aten.max_pool3d_with_indices.default"),
    )
)
add(
    fn_case(
        "max_pool3d_indices",
        lambda x: F.max_pool3d(x, 2, return_indices=True),
        R(1, 2, 4, 4, 6),
        expect=("aten.max_pool3d_with_indices.default",),
    )
)
add(
    fn_case(
        "max_pool2d_unbatched",
        lambda x: F.max_pool2d(x, 2),
        R(3, 6, 6),
        expect=("aten.max_pool2d.default",),
    )
)
add(
    fn_case(
        "avg_pool2d",
        lambda x: F.avg_pool2d(x, 3, 2, 1),
        R(2, 3, 9, 8),
        expect=("aten.avg_pool2d.default",),
    )
)
add(
    fn_case(
        "avg_pool2d_excl",
        lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
        R(2, 3, 9, 8),
        expect=("aten.avg_pool2d.default",),
    )
)
add(
    fn_case(
        "avg_pool2d_ceil",
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
        R(1, 2, 8, 8),
        expect=("aten.avg_pool2d.default",),
    )
)
# one ceil-mode window longer than the input (HF EfficientNet's pooler: AvgPool2d(2560,
# ceil_mode=True) on 7x7): the window's taps past the end are dropped, not materialised
add(
    fn_case(
        "avg_pool2d_window_past_end",
        lambda x: F.avg_pool2d(x, 2560, ceil_mode=True),
        R(2, 3, 7, 7),
        expect=("aten.avg_pool2d.default",),
    )
)
add(
    fn_case(
        "avg_pool2d_window_past_end_rows",
        lambda x: F.avg_pool2d(x, (9, 3), (16, 3), ceil_mode=True, count_include_pad=True),
        R(1, 2, 7, 8),
        expect=("aten.avg_pool2d.default",),
    )
)
add(
    fn_case(
        "max_pool2d_window_past_end",
        lambda x: F.max_pool2d(x, 64, ceil_mode=True),
        R(1, 2, 7, 5),
        expect=("aten.max_pool2d.default", "aten.max_pool2d_with_indices.default"),
    )
)
add(
    fn_case(
        "avg_pool2d_divisor",
        lambda x: F.avg_pool2d(x, 2, divisor_override=3),
        R(1, 2, 6, 6),
        expect=("aten.avg_pool2d.default",),
    )
)
add(
    fn_case(
        "avg_pool1d",
        lambda x: F.avg_pool1d(x, 3, 2, 1),
        R(2, 3, 9),
        expect=("aten.avg_pool1d.default",),
    )
)
add(
    fn_case(
        "avg_pool3d",
        lambda x: F.avg_pool3d(x, 2, 2),
        R(1, 2, 4, 4, 6),
        expect=("aten.avg_pool3d.default",),
    )
)
add(
    fn_case(
        "adaptive_avg_pool2d",
        lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
        R(2, 3, 7, 8),
        expect=("aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default"),
    )
)
add(
    fn_case(
        "adaptive_avg_pool2d_1",
        lambda x: F.adaptive_avg_pool2d(x, 1),
        R(2, 3, 7, 8),
        expect=("aten.adaptive_avg_pool2d.default",),
    )
)
add(
    fn_case(
        "adaptive_avg_pool2d_same",  # one element per bin: the input itself
        lambda x: F.adaptive_avg_pool2d(x, (7, 8)),
        R(2, 3, 7, 8),
        expect=("aten.adaptive_avg_pool2d.default",),
    )
)
add(
    fn_case(
        "adaptive_avg_pool1d_1_unbatched",
        lambda x: F.adaptive_avg_pool1d(x, 1),
        R(3, 9),
        expect=("aten.adaptive_avg_pool1d.default",),
    )
)
add(
    fn_case(
        "adaptive_avg_pool3d_1",
        lambda x: F.adaptive_avg_pool3d(x, 1),
        R(1, 2, 5, 6, 4),
        expect=("aten.adaptive_avg_pool3d.default",),
    )
)
add(
    fn_case(
        "adaptive_max_pool2d_1",
        lambda x: F.adaptive_max_pool2d(x, 1),
        R(2, 3, 7, 8),
        expect=("aten.adaptive_max_pool2d.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "adaptive_avg_pool2d_none",
        lambda x: F.adaptive_avg_pool2d(x, (None, 2)),
        R(2, 3, 7, 8),
        expect=("aten.adaptive_avg_pool2d.default",),
    )
)
add(
    fn_case(
        "adaptive_avg_pool1d",
        lambda x: F.adaptive_avg_pool1d(x, 4),
        R(2, 3, 9),
        expect=("aten.adaptive_avg_pool1d.default",),
    )
)
add(
    fn_case(
        "adaptive_avg_pool3d",
        lambda x: F.adaptive_avg_pool3d(x, (2, 3, 1)),
        R(1, 2, 5, 6, 4),
        expect=("aten.adaptive_avg_pool3d.default", "aten._adaptive_avg_pool3d.default"),
    )
)
add(
    fn_case(
        "adaptive_max_pool2d",
        lambda x: F.adaptive_max_pool2d(x, (3, 2)),
        R(2, 3, 7, 8),
        expect=("aten.adaptive_max_pool2d.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "adaptive_max_pool1d",
        lambda x: F.adaptive_max_pool1d(x, 3),
        R(2, 3, 7),
        expect=("aten.adaptive_max_pool1d.default",),
        decomposed=False,
    )
)

add(
    fn_case(
        "constant_pad",
        lambda x: F.pad(x, (1, 2, 0, 3), value=0.5),
        R(2, 3, 4),
        expect=("aten.constant_pad_nd.default",),
    )
)
add(
    fn_case(
        "constant_pad_crop",
        lambda x: F.pad(x, (-1, 2)),
        R(2, 3, 4),
        expect=("aten.constant_pad_nd.default",),
    )
)
add(
    fn_case(
        "reflect_pad",
        lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"),
        R(2, 3, 5, 4),
        expect=("aten.pad.default",),
    )
)
add(
    fn_case(
        "replicate_pad",
        lambda x: F.pad(x, (2, 1, 1, 2), mode="replicate"),
        R(2, 3, 5, 4),
        expect=("aten.pad.default",),
    )
)
for _kind in ("reflection", "replication"):
    for _nd, _pad, _shape in [
        (1, [2, 1], (2, 3, 5)),
        (2, [2, 1, 1, 2], (2, 3, 5, 4)),
        (3, [1, 1, 0, 1, 1, 0], (1, 2, 3, 4, 3)),
    ]:
        _op = getattr(A, f"{_kind}_pad{_nd}d").default
        add(
            fn_case(
                f"{_kind}_pad{_nd}d",
                (lambda op, p: lambda x: op(x, p))(_op, _pad),
                R(*_shape),
                expect=(f"aten.{_kind}_pad{_nd}d.default",),
                decomposed=False,
            )
        )
add(
    fn_case(
        "circular_pad",
        lambda x: F.pad(x, (2, 1, 1, 0), mode="circular"),
        R(1, 2, 3, 4),
        expect=("aten.pad.default",),
        decomposed=False,
    )
)

add(
    fn_case(
        "upsample_nearest2d",
        lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
        R(1, 2, 3, 4),
        expect=("aten.upsample_nearest2d.vec",),
    )
)
add(
    fn_case(
        "upsample_nearest2d_size",
        lambda x: F.interpolate(x, size=(5, 7), mode="nearest"),
        R(1, 2, 3, 4),
        expect=("aten.upsample_nearest2d.vec",),
    )
)
add(
    fn_case(
        "upsample_nearest_exact",
        lambda x: F.interpolate(x, size=(5, 7), mode="nearest-exact"),
        R(1, 2, 3, 4),
        expect=("aten._upsample_nearest_exact2d.vec",),
    )
)
add(
    fn_case(
        "upsample_bilinear2d",
        lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
        R(1, 2, 3, 4),
        expect=("aten.upsample_bilinear2d.vec",),
        **TOL,
    )
)
add(
    fn_case(
        "upsample_bilinear2d_ac",
        lambda x: F.interpolate(x, size=(5, 6), mode="bilinear", align_corners=True),
        R(1, 2, 3, 4),
        expect=("aten.upsample_bilinear2d.vec",),
        **TOL,
    )
)
add(
    fn_case(
        "upsample_bilinear2d_down",
        lambda x: F.interpolate(x, size=(3, 2), mode="bilinear"),
        R(1, 2, 7, 5),
        expect=("aten.upsample_bilinear2d.vec",),
        **TOL,
    )
)
add(
    fn_case(
        "upsample_bicubic2d",
        lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"),
        R(1, 2, 3, 4),
        expect=("aten.upsample_bicubic2d.vec",),
        **TOL,
    )
)
add(
    fn_case(
        "upsample_linear1d",
        lambda x: F.interpolate(x, size=7, mode="linear"),
        R(1, 2, 4),
        expect=("aten.upsample_linear1d.vec",),
        **TOL,
    )
)
add(
    fn_case(
        "upsample_nearest1d",
        lambda x: F.interpolate(x, size=7, mode="nearest"),
        R(1, 2, 4),
        expect=("aten.upsample_nearest1d.vec",),
    )
)
add(
    fn_case(
        "upsample_trilinear3d",
        lambda x: F.interpolate(x, scale_factor=2, mode="trilinear"),
        R(1, 1, 2, 3, 2),
        expect=("aten.upsample_trilinear3d.vec",),
        **TOL,
    )
)
add(
    fn_case(
        "upsample_nearest3d",
        lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
        R(1, 1, 2, 3, 2),
        expect=("aten.upsample_nearest3d.vec",),
    )
)
add(
    fn_case(
        "upsample_nearest2d_default",
        lambda x: A.upsample_nearest2d.default(x, [6, 8]),
        R(1, 2, 3, 4),
        expect=("aten.upsample_nearest2d.default",),
    )
)
add(
    fn_case(
        "upsample_bilinear2d_default",
        lambda x: A.upsample_bilinear2d.default(x, [6, 8], False),
        R(1, 2, 3, 4),
        expect=("aten.upsample_bilinear2d.default",),
        **TOL,
    )
)
add(
    fn_case(
        "grid_sample",
        lambda x, g: F.grid_sample(x, g, align_corners=False),
        R(1, 2, 5, 6),
        R(1, 4, 3, 2, lo=-1.1, hi=1.1),
        expect=("aten.grid_sampler_2d.default",),
        **TOL,
    )
)
add(
    fn_case(
        "grid_sample_nearest_border",
        lambda x, g: F.grid_sample(x, g, mode="nearest", padding_mode="border", align_corners=True),
        R(1, 2, 5, 6),
        R(1, 4, 3, 2, lo=-1.1, hi=1.1),
        expect=("aten.grid_sampler_2d.default",),
    )
)
add(
    fn_case(
        "affine_grid",
        lambda t: F.affine_grid(t, [1, 2, 4, 5], align_corners=False),
        R(1, 2, 3),
        expect=("aten.affine_grid_generator.default",),
        decomposed=False,
        **TOL,
    )
)
add(
    fn_case(
        "pixel_shuffle",
        lambda x: F.pixel_shuffle(x, 2),
        R(1, 8, 3, 4),
        expect=("aten.pixel_shuffle.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "pixel_unshuffle",
        lambda x: F.pixel_unshuffle(x, 2),
        R(1, 2, 4, 6),
        expect=("aten.pixel_unshuffle.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "unfold",
        lambda x: F.unfold(x, (2, 3), padding=1, stride=(1, 2)),
        R(2, 3, 5, 6),
        expect=("aten.im2col.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "fold",
        lambda x: F.fold(x, (5, 6), (2, 3), padding=1, stride=(1, 2)),
        R(2, 18, 18),
        expect=("aten.col2im.default",),
        **TOL,
    )
)
