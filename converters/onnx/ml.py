"""ai.onnx.ml ops: LabelEncoder, TreeEnsemble, ArrayFeatureExtractor, Binarizer (the ones the
conformance suite exercises), and Scaler, Normalizer, LinearRegressor, Imputer,
FeatureVectorizer, CategoryMapper (common in scikit-learn exports)."""

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


@converter("Scaler", 1, domain=ML)
def Scaler(ctx, x, *, offset=None, scale=None):
    x = cast_float32(ctx, x)
    if offset is not None:
        x = ctx.call("subtract", x, ctx.const(np.asarray(offset, np.float32)))
    if scale is not None:
        x = ctx.call("multiply", x, ctx.const(np.asarray(scale, np.float32)))
    return x


def cast_float32(ctx, x):
    return x if ctx.dtype(x) == "float32" else ctx.call("cast", x, dtype="float32")


@converter("Normalizer", 1, domain=ML)
def Normalizer(ctx, x, *, norm="MAX"):
    x = cast_float32(ctx, x)
    axis = (ctx.ndim(x) - 1,)
    if norm == "MAX":
        d = ctx.call("max", x, axis=axis, keepdims=True)
    elif norm == "L1":
        d = ctx.call("l1_norm", x, axis=axis, keepdims=True)
    elif norm == "L2":
        d = ctx.call("l2_norm", x, axis=axis, keepdims=True)
    else:
        raise ctx.error(f"unknown norm {norm!r}")
    return ctx.call("divide", x, d)


@converter("LinearRegressor", 1, domain=ML)
def LinearRegressor(
    ctx, x, *, coefficients=None, intercepts=None, post_transform="NONE", targets=1
):
    if post_transform != "NONE":
        raise ctx.error(f"post_transform {post_transform!r} is not supported")
    x = cast_float32(ctx, x)
    n_in = ctx.shape_of(x)[-1]
    coef = np.asarray(coefficients, np.float32).reshape(targets, -1)
    if isinstance(n_in, int) and coef.shape[1] != n_in:
        raise ctx.error(f"{coef.shape[1]} coefficients per target for {n_in} features")
    out = ctx.call("nn.matmul", x, ctx.const(coef), transpose_b=True)
    if intercepts is not None:
        out = ctx.call("add", out, ctx.const(np.asarray(intercepts, np.float32)))
    return out


@converter("Imputer", 1, domain=ML)
def Imputer(
    ctx,
    x,
    *,
    imputed_value_floats=None,
    imputed_value_int64s=None,
    replaced_value_float=0.0,
    replaced_value_int64=0,
):
    if ctx.dtype(x).startswith("float"):
        values = np.asarray(imputed_value_floats, dtype=dt.to_numpy(ctx.dtype(x)))
        missing = (
            ctx.call("isnan", x)
            if np.isnan(replaced_value_float)
            else ctx.call("equal", x, scalar_like(ctx, replaced_value_float, x))
        )
    else:
        values = np.asarray(imputed_value_int64s, dtype=dt.to_numpy(ctx.dtype(x)))
        missing = ctx.call("equal", x, scalar_like(ctx, replaced_value_int64, x))
    return ctx.call(
        "where",
        missing,
        ctx.const(values.reshape(-1) if values.size > 1 else values.reshape(())),
        x,
    )


@converter("FeatureVectorizer", 1, domain=ML)
def FeatureVectorizer(ctx, *xs, inputdimensions=None):
    cols = []
    for x in xs:
        x = cast_float32(ctx, x)
        if ctx.ndim(x) == 1:
            x = ctx.call("expand_dims", x, axis=1)
        cols.append(x)
    return ctx.call("concatenate", *cols, axis=1)


@converter("CategoryMapper", 1, domain=ML)
def CategoryMapper(
    ctx, x, *, cats_int64s, cats_strings, default_int64=-1, default_string="_Unused"
):
    if ctx.dtype(x) == "string":
        return ctx.call(
            "ml.label_encoder",
            x,
            keys=tuple(cats_strings),
            values=tuple(cats_int64s),
            default=default_int64,
            out_dtype="int64",
        )
    return ctx.call(
        "ml.label_encoder",
        x,
        keys=tuple(cats_int64s),
        values=tuple(cats_strings),
        default=default_string,
        out_dtype="string",
    )
