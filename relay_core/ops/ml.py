"""Classic-ML ops with ai.onnx.ml semantics: ml.label_encoder, ml.tree_ensemble."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from ..ir.types import TensorType
from . import relations as R
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


# -- label_encoder -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LabelEncoderAttrs:
    keys: tuple = ()
    values: tuple = ()
    default: object = None
    out_dtype: str = "int64"


def _le_rel(args, attrs):
    t = R.tensor(args[0])
    R.dtype_attr(attrs.out_dtype, "ml.label_encoder")
    if len(attrs.keys) != len(attrs.values):
        raise OpTypeError("ml.label_encoder: keys and values differ in length")
    return TensorType(t.shape, attrs.out_dtype)


def _key(v):
    if isinstance(v, (bytes, str)):
        return v.decode() if isinstance(v, bytes) else v
    f = float(v)
    return ("nan",) if np.isnan(f) else f  # NaN keys match NaN inputs


def _le_ref(xs, attrs):
    table = {_key(k): v for k, v in zip(attrs.keys, attrs.values)}
    x = np.asarray(xs[0])
    out_np = dt.to_numpy(attrs.out_dtype)
    default = attrs.default
    if default is None:
        default = "" if attrs.out_dtype == "string" else -1
    out = np.empty(x.shape, dtype=out_np)
    for i in np.ndindex(x.shape):
        out[i] = table.get(_key(x[i]), default)
    return out


def _le_samples(rng):
    yield Sample(
        [np.array(["a", "b", "z"], object)],
        {"keys": ("a", "b"), "values": (1, 2), "default": 7, "out_dtype": "int64"},
    )
    yield Sample(
        [np.array([1, 3, 5], np.int64)],
        {"keys": (1, 3), "values": ("x", "y"), "default": "?", "out_dtype": "string"},
    )
    yield Sample(
        [np.array([0.5, np.nan], np.float32)],
        {"keys": (0.5, float("nan")), "values": (1.0, 2.0), "default": 0.0, "out_dtype": "float32"},
    )


register(
    OpDef(
        "ml.label_encoder",
        _le_rel,
        _le_ref,
        OpPattern.ELEMWISE,
        LabelEncoderAttrs,
        (1, 1),
        "map each key to its value, others to `default` (ai.onnx.ml LabelEncoder)",
        samples=_le_samples,
    )
)
declare(
    "ml.label_encoder",
    lower=Rule("relay_core.te.lower_ml:_label_encoder"),
    grad=Rule("relay_core.ops.grads_tensor:nondiff", "ml.label_encoder"),
)


# -- tree_ensemble -------------------------------------------------------------------------------
@dataclass(frozen=True)
class TreeEnsembleAttrs:
    n_targets: int = 1
    aggregate_function: int = 1  # 0 average, 1 sum, 2 min, 3 max
    post_transform: int = 0  # only 0 (none) is supported
    tree_roots: tuple[int, ...] = ()
    nodes_featureids: tuple[int, ...] = ()
    nodes_modes: tuple[int, ...] = ()  # 0 <=, 1 <, 2 >=, 3 >, 4 ==, 5 !=, 6 member
    nodes_splits: tuple[float, ...] = ()
    nodes_truenodeids: tuple[int, ...] = ()
    nodes_falsenodeids: tuple[int, ...] = ()
    nodes_trueleafs: tuple[int, ...] = ()
    nodes_falseleafs: tuple[int, ...] = ()
    nodes_missing_value_tracks_true: tuple[int, ...] = ()
    membership_values: tuple[float, ...] = ()  # NaN-separated sets, one per member node
    leaf_targetids: tuple[int, ...] = ()
    leaf_weights: tuple[float, ...] = ()


def _te_rel(args, attrs):
    t = R.tensor(args[0])
    if t.ndim != 2:
        raise OpTypeError(f"ml.tree_ensemble needs (N, features), got {t.shape}")
    if attrs.post_transform != 0:
        raise OpTypeError("ml.tree_ensemble: only post_transform NONE is supported")
    if attrs.aggregate_function not in (0, 1, 2, 3):
        raise OpTypeError(
            f"ml.tree_ensemble: unknown aggregate_function {attrs.aggregate_function}"
        )
    return TensorType((t.shape[0], attrs.n_targets), t.dtype)


_CMP = [np.less_equal, np.less, np.greater_equal, np.greater, np.equal, np.not_equal]


def _te_ref(xs, attrs):
    x = np.asarray(xs[0])
    a = attrs
    members = {}
    it = iter(a.membership_values)
    for i, m in enumerate(a.nodes_modes):
        if m == 6:
            s = set()
            for v in it:
                if np.isnan(v):
                    break
                s.add(v)
            members[i] = s
    tracks = a.nodes_missing_value_tracks_true or (0,) * len(a.nodes_modes)

    def leaf_of(row, node, is_leaf):
        for _ in range(len(a.nodes_modes) + 1):
            if is_leaf:
                return node
            v = row[a.nodes_featureids[node]]
            m = a.nodes_modes[node]
            go = (v in members[node]) if m == 6 else bool(_CMP[m](v, a.nodes_splits[node]))
            go = go or (bool(tracks[node]) and np.isnan(v))
            if go:
                node, is_leaf = a.nodes_truenodeids[node], a.nodes_trueleafs[node]
            else:
                node, is_leaf = a.nodes_falsenodeids[node], a.nodes_falseleafs[node]
        raise EvalError("ml.tree_ensemble: a tree has a cycle")

    n_trees = len(a.tree_roots)
    init = {0: 0.0, 1: 0.0, 2: np.inf, 3: -np.inf}[a.aggregate_function]
    out = np.full((x.shape[0], a.n_targets), init)
    for r in range(x.shape[0]):
        for root in a.tree_roots:
            # A root that is a leaf: both branches point at one leaf.
            root_leaf = (
                a.nodes_trueleafs[root]
                and a.nodes_falseleafs[root]
                and a.nodes_truenodeids[root] == a.nodes_falsenodeids[root]
            )
            leaf = leaf_of(x[r], a.nodes_truenodeids[root] if root_leaf else root, bool(root_leaf))
            t, w = a.leaf_targetids[leaf], a.leaf_weights[leaf]
            if a.aggregate_function == 2:
                out[r, t] = min(out[r, t], w)
            elif a.aggregate_function == 3:
                out[r, t] = max(out[r, t], w)
            else:
                out[r, t] += w / n_trees if a.aggregate_function == 0 else w
    return out.astype(x.dtype)


def _te_samples(rng):
    x = rng.uniform(-1, 1, (4, 2)).astype(np.float32)
    # One tree: x0 <= 0 ? leaf 0 : (x1 < 0.5 ? leaf 1 : leaf 2); a second tree is a leaf.
    base = dict(
        n_targets=2,
        tree_roots=(0, 2),
        nodes_featureids=(0, 1, 0),
        nodes_modes=(0, 1, 0),
        nodes_splits=(0.0, 0.5, 0.0),
        nodes_truenodeids=(0, 1, 3),
        nodes_falsenodeids=(1, 2, 3),
        nodes_trueleafs=(1, 1, 1),
        nodes_falseleafs=(0, 1, 1),
        leaf_targetids=(0, 1, 0, 1),
        leaf_weights=(1.0, 2.0, 3.0, 0.5),
    )
    yield Sample([x], base)
    yield Sample([x.astype(np.float64)], {**base, "aggregate_function": 3})


register(
    OpDef(
        "ml.tree_ensemble",
        _te_rel,
        _te_ref,
        OpPattern.OPAQUE,
        TreeEnsembleAttrs,
        (1, 1),
        "a forest of decision trees, leaf weights aggregated per target (ai.onnx.ml TreeEnsemble)",
        samples=_te_samples,
    )
)
declare(
    "ml.tree_ensemble",
    lower=Rule("relay_core.te.lower_ml:_tree_ensemble"),
    grad=Rule("relay_core.ops.grads_tensor:nondiff", "ml.tree_ensemble"),
)
