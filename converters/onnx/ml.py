"""ai.onnx.ml ops the conformance suite exercises: LabelEncoder, TreeEnsemble,
ArrayFeatureExtractor, Binarizer."""

from __future__ import annotations

import numpy as np

from relay_core.ir import dtype as dt

from .table import converter
from .util import scalar_like

ML = "ai.onnx.ml"


def _values(v):
    return tuple(np.asarray(v).reshape(-1).tolist()) if v is not None else None


@converter("LabelEncoder", 1, domain=ML)
def LabelEncoder(
    ctx,
    x,
    *,
    default_float=-0.0,
    default_int64=-1,
    default_string="_Unused",
    default_tensor=None,
    keys_floats=None,
    keys_int64s=None,
    keys_strings=None,
    keys_tensor=None,
    values_floats=None,
    values_int64s=None,
    values_strings=None,
    values_tensor=None,
):
    keys = next(
        k for k in (keys_floats, keys_int64s, keys_strings, _values(keys_tensor)) if k is not None
    )
    if values_tensor is not None:
        values, dtype = _values(values_tensor), dt.from_numpy(np.asarray(values_tensor).dtype)
        default = (
            np.asarray(default_tensor).reshape(-1)[0].item() if default_tensor is not None else None
        )
    elif values_floats is not None:
        values, dtype, default = values_floats, "float32", default_float
    elif values_int64s is not None:
        values, dtype, default = values_int64s, "int64", default_int64
    else:
        values, dtype, default = values_strings, "string", default_string
    return ctx.call(
        "ml.label_encoder",
        x,
        keys=tuple(keys),
        values=tuple(values),
        default=default,
        out_dtype=dtype,
    )


@converter("TreeEnsemble", 5, domain=ML)
def TreeEnsemble(
    ctx,
    x,
    *,
    aggregate_function=1,
    leaf_targetids,
    leaf_weights,
    membership_values=None,
    n_targets=None,
    nodes_falseleafs,
    nodes_falsenodeids,
    nodes_featureids,
    nodes_hitrates=None,
    nodes_missing_value_tracks_true=None,
    nodes_modes,
    nodes_splits,
    nodes_trueleafs,
    nodes_truenodeids,
    post_transform=0,
    tree_roots,
):
    return ctx.call(
        "ml.tree_ensemble",
        x,
        n_targets=n_targets or 1,
        aggregate_function=aggregate_function,
        post_transform=post_transform,
        tree_roots=tuple(tree_roots),
        nodes_featureids=tuple(nodes_featureids),
        nodes_modes=_values(nodes_modes),
        nodes_splits=_values(nodes_splits),
        nodes_truenodeids=tuple(nodes_truenodeids),
        nodes_falsenodeids=tuple(nodes_falsenodeids),
        nodes_trueleafs=tuple(nodes_trueleafs),
        nodes_falseleafs=tuple(nodes_falseleafs),
        nodes_missing_value_tracks_true=tuple(nodes_missing_value_tracks_true or ()),
        membership_values=_values(membership_values) or (),
        leaf_targetids=tuple(leaf_targetids),
        leaf_weights=_values(leaf_weights),
    )


@converter("ArrayFeatureExtractor", 1, domain=ML)
def ArrayFeatureExtractor(ctx, x, indices):
    idx = ctx.call("reshape", indices, newshape=(-1,))
    out = ctx.call("take", x, idx, axis=ctx.ndim(x) - 1)
    if ctx.ndim(x) == 1:  # a vector input gives one row
        out = ctx.call("expand_dims", out, axis=0)
    return out


@converter("Binarizer", 1, domain=ML)
def Binarizer(ctx, x, *, threshold=0.0):
    above = ctx.call("greater", x, scalar_like(ctx, threshold, x))
    return ctx.call("cast", above, dtype=ctx.dtype(x))
