"""Op-level parity with TF: resizes, CropAndResize, NMS, TopK, space / depth / batch moves.

Resizes interpolate in a different order than TF: rtol / atol 1e-4."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import Case, params, rand, run_case, tf

R = tf.raw_ops
TOL = {"rtol": 1e-4, "atol": 1e-4}
IMG = rand(2, 5, 6, 3)
MODES = {"legacy": (False, False), "align": (True, False), "half": (False, True)}

CASES = []
for _mode, (_ac, _hp) in MODES.items():
    for _op, _size in (
        ("ResizeBilinear", [7, 4]),
        ("ResizeNearestNeighbor", [9, 3]),
        ("ResizeBicubic", [8, 11]),
    ):
        if _op == "ResizeBicubic" and _mode == "align":
            continue
        _fn = getattr(R, _op)
        CASES.append(
            Case(
                f"{_op}_{_mode}",
                lambda x, f=_fn, s=_size, a=_ac, h=_hp: f(
                    images=x, size=s, align_corners=a, half_pixel_centers=h
                ),
                [IMG],
                (_op,),
                **TOL,
            )
        )
CASES += [
    Case(
        "ResizeNearestNeighbor_int",
        lambda x: R.ResizeNearestNeighbor(images=x, size=[3, 10], half_pixel_centers=True),
        [rand(1, 4, 5, 2, dtype="int32", lo=0, hi=100)],
        ("ResizeNearestNeighbor",),
    ),
    Case(
        "ResizeBilinear_keras_upsampling",
        lambda x: tf.image.resize(x, [10, 12]),
        [IMG],
        ("ResizeBilinear",),
        **TOL,
    ),
    Case(
        "CropAndResize",
        lambda x, b, i: R.CropAndResize(image=x, boxes=b, box_ind=i, crop_size=[3, 4]),
        [
            IMG,
            np.array(
                [[0.1, 0.2, 0.8, 0.9], [0.5, 0.0, 1.2, 0.6], [0.9, 0.9, 0.2, 0.1]], np.float32
            ),
            np.array([0, 1, 1], np.int32),
        ],
        ("CropAndResize",),
        **TOL,
    ),
    Case(
        "CropAndResize_nearest",
        lambda x, b, i: R.CropAndResize(
            image=x,
            boxes=b,
            box_ind=i,
            crop_size=[4, 2],
            method="nearest",
            extrapolation_value=-1.0,
        ),
        [
            IMG,
            np.array([[0.0, 0.0, 1.0, 1.0], [-0.2, 0.3, 0.7, 1.1]], np.float32),
            np.array([1, 0], np.int32),
        ],
        ("CropAndResize",),
        **TOL,
    ),
    Case(
        "DepthToSpace",
        lambda x: R.DepthToSpace(input=x, block_size=2),
        [rand(2, 3, 4, 8)],
        ("DepthToSpace",),
    ),
    Case(
        "SpaceToDepth",
        lambda x: R.SpaceToDepth(input=x, block_size=2),
        [rand(2, 4, 6, 3)],
        ("SpaceToDepth",),
    ),
    Case(
        "SpaceToBatchND",
        lambda x: R.SpaceToBatchND(input=x, block_shape=[2, 3], paddings=[[1, 0], [2, 1]]),
        [rand(2, 5, 6, 3)],
        ("SpaceToBatchND",),
    ),
    Case(
        "BatchToSpaceND",
        lambda x: R.BatchToSpaceND(input=x, block_shape=[2, 2], crops=[[0, 1], [1, 0]]),
        [rand(8, 3, 4, 2)],
        ("BatchToSpaceND",),
    ),
    Case("TopKV2", lambda x: R.TopKV2(input=x, k=3), [rand(4, 7)], ("TopKV2",)),
    Case(
        "TopKV2_ties_int",
        lambda x: R.TopKV2(input=x, k=4),
        [np.array([[3, 1, 3, 2, 3, 1]], np.int32)],
        ("TopKV2",),
    ),
    Case(
        "TopKV2_dynamic_k",
        lambda x, k: R.TopKV2(input=x, k=k),
        [rand(2, 6), np.array(2, np.int32)],
        ("TopKV2",),
    ),
]

# -- non-max suppression: overlapping boxes so that suppression matters ----------------------------
_rng = np.random.default_rng(7)
_xy = _rng.uniform(0, 6, size=(20, 2)).astype(np.float32)
_wh = _rng.uniform(1, 4, size=(20, 2)).astype(np.float32)
BOXES = np.concatenate([_xy, _xy + _wh], axis=1)
BOXES[3] = BOXES[3][[2, 3, 0, 1]]  # corners in the other order
SCORES = _rng.uniform(0, 1, size=20).astype(np.float32)
CASES += [
    Case(
        "NonMaxSuppressionV2",
        lambda b, s: R.NonMaxSuppressionV2(boxes=b, scores=s, max_output_size=6, iou_threshold=0.3),
        [BOXES, SCORES],
        ("NonMaxSuppressionV2",),
    ),
    Case(
        "NonMaxSuppressionV3",
        lambda b, s: R.NonMaxSuppressionV3(
            boxes=b, scores=s, max_output_size=10, iou_threshold=0.4, score_threshold=0.3
        ),
        [BOXES, SCORES],
        ("NonMaxSuppressionV3",),
    ),
    Case(
        "NonMaxSuppressionV4_padded",
        lambda b, s: R.NonMaxSuppressionV4(
            boxes=b,
            scores=s,
            max_output_size=12,
            iou_threshold=0.5,
            score_threshold=0.2,
            pad_to_max_output_size=True,
        ),
        [BOXES, SCORES],
        ("NonMaxSuppressionV4",),
    ),
    Case(
        "NonMaxSuppressionV5",
        lambda b, s: R.NonMaxSuppressionV5(
            boxes=b,
            scores=s,
            max_output_size=8,
            iou_threshold=0.5,
            score_threshold=0.1,
            soft_nms_sigma=0.0,
        ),
        [BOXES, SCORES],
        ("NonMaxSuppressionV5",),
    ),
    Case(
        "NonMaxSuppressionV5_padded",
        lambda b, s: R.NonMaxSuppressionV5(
            boxes=b,
            scores=s,
            max_output_size=25,
            iou_threshold=0.3,
            score_threshold=0.0,
            soft_nms_sigma=0.0,
            pad_to_max_output_size=True,
        ),
        [BOXES, SCORES],
        ("NonMaxSuppressionV5",),
    ),
    Case(
        "NonMaxSuppression_v1",
        lambda b, s: R.NonMaxSuppression(boxes=b, scores=s, max_output_size=5, iou_threshold=0.3),
        [BOXES, SCORES],
        ("NonMaxSuppression",),
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_image(case):
    run_case(case)


def test_soft_nms_is_refused_clearly():
    from converters.common import ConversionError
    from converters.tensorflow import from_tensorflow

    @tf.function(input_signature=[tf.TensorSpec([4, 4]), tf.TensorSpec([4])])
    def f(b, s):
        return R.NonMaxSuppressionV5(
            boxes=b,
            scores=s,
            max_output_size=2,
            iou_threshold=0.5,
            score_threshold=0.0,
            soft_nms_sigma=0.5,
        )[0]

    with pytest.raises(ConversionError, match="soft NMS"):
        from_tensorflow(f)
