"""Lowering of the classic-ML ops (ml.label_encoder, ml.tree_ensemble) and tfidf_vectorizer
for numeric data: the tables of their attributes unrolled into select chains (string keys
and pools are not stored by the backend)."""

from __future__ import annotations

import math

from . import expr as E
from . import tensor as T
from .expr import Const, call, cast, select
from .tensor import compute, reduce_axis

# Trees bigger than this (in nodes, over the whole forest) would unroll into expressions too
# large to compile quickly.
MAX_FOREST_NODES = 4096


def _label_encoder(inputs, attrs, out_type):
    x = inputs[0]
    out = out_type.dtype
    if "string" in (x.dtype, out) or any(isinstance(k, (str, bytes)) for k in attrs.keys):
        raise NotImplementedError("string keys or values")
    default = attrs.default if attrs.default is not None else -1

    def body(*i):
        v = x[i]
        r = E.const(default, out)
        for k, val in reversed(list(zip(attrs.keys, attrs.values))):
            k = float(k)
            hit = (
                call("isnan", cast("float64", v)) if math.isnan(k) else E.eq(v, E.const(k, v.dtype))
            )
            r = select(hit, E.const(val, out), r)
        return r

    return compute(x.shape, body, "label_encoder")


_CMPS = [E.le, E.lt, E.ge, E.gt, E.eq, E.ne]


def _tree_ensemble(inputs, attrs, out_type):
    x = inputs[0]
    a = attrs
    if len(a.nodes_modes) > MAX_FOREST_NODES:
        raise NotImplementedError(f"forests over {MAX_FOREST_NODES} nodes")
    members, it = {}, iter(a.membership_values)
    for i, m in enumerate(a.nodes_modes):
        if m == 6:
            s = []
            for v in it:
                if math.isnan(v):
                    break
                s.append(v)
            members[i] = s
    tracks = a.nodes_missing_value_tracks_true or (0,) * len(a.nodes_modes)
    agg = a.aggregate_function
    f = x.dtype
    ident = {0: 0.0, 1: 0.0, 2: math.inf, 3: -math.inf}[agg]
    n_trees = len(a.tree_roots)

    def leaf_value(leaf, t):
        if a.leaf_targetids[leaf] != t:
            return Const(ident, "float64")
        w = float(a.leaf_weights[leaf])
        return Const(w / n_trees if agg == 0 else w, "float64")

    def subtree(row, node, is_leaf, t, depth):
        if is_leaf:
            return leaf_value(node, t)
        if depth > len(a.nodes_modes):
            raise NotImplementedError("ml.tree_ensemble: a tree has a cycle")
        v = x[row, a.nodes_featureids[node]]
        m = a.nodes_modes[node]
        if m == 6:
            go = E.const(False, "bool")
            for c in members[node]:
                go = E.logical_or(go, E.eq(v, E.const(c, f)))
        else:
            go = _CMPS[m](v, E.const(a.nodes_splits[node], f))
        if tracks[node]:
            go = E.logical_or(go, call("isnan", v))
        yes = subtree(row, a.nodes_truenodeids[node], a.nodes_trueleafs[node], t, depth + 1)
        no = subtree(row, a.nodes_falsenodeids[node], a.nodes_falseleafs[node], t, depth + 1)
        return select(go, yes, no)

    def body(r, t_var):
        per_target = []
        for t in range(a.n_targets):
            acc = Const(ident, "float64")
            for root in a.tree_roots:
                root_leaf = (
                    a.nodes_trueleafs[root]
                    and a.nodes_falseleafs[root]
                    and a.nodes_truenodeids[root] == a.nodes_falsenodeids[root]
                )
                start = a.nodes_truenodeids[root] if root_leaf else root
                v = subtree(r, start, bool(root_leaf), t, 0)
                acc = E.min_(acc, v) if agg == 2 else E.max_(acc, v) if agg == 3 else acc + v
            per_target.append(acc)
        out = per_target[-1]
        for t in range(a.n_targets - 2, -1, -1):
            out = select(E.eq(t_var, t), per_target[t], out)
        return cast(f, out)

    return compute((x.shape[0], a.n_targets), body, "tree_ensemble")


def _pool_grams(attrs) -> list[tuple[tuple, int]]:
    """(n-gram, output column) for the pool's n-grams of the wanted lengths."""
    pool = list(attrs.pool_int64s)
    starts = list(attrs.ngram_counts) + [len(pool)]
    out, gram_id = [], 0
    for n, (lo, hi) in enumerate(zip(starts[:-1], starts[1:]), start=1):
        for k in range((hi - lo) // n):
            if attrs.min_gram_length <= n <= attrs.max_gram_length:
                out.append(
                    (tuple(pool[lo + k * n : lo + (k + 1) * n]), attrs.ngram_indexes[gram_id])
                )
            gram_id += 1
    return out


def _tfidf(inputs, attrs, out_type):
    x = inputs[0]
    if attrs.pool_strings or x.dtype == "string":
        raise NotImplementedError("string pools")
    rows = x if x.ndim == 2 else None
    length = x.shape[-1]
    grams = _pool_grams(attrs)
    size = max(attrs.ngram_indexes, default=-1) + 1
    nrows = x.shape[0] if rows is not None else 1

    def read(r, j):
        return x[r, j] if rows is not None else x[(j,)]

    counts: dict[int, list] = {}  # output column -> (rows,) count tensors
    for gram, col in grams:
        n = len(gram)
        for skip in range(attrs.max_skip_count + 1):
            d = skip + 1
            if n == 1 and skip > 0:  # unigrams do not depend on the skip
                continue
            span = length - (n - 1) * d
            if not isinstance(span, int):
                raise NotImplementedError("tfidf_vectorizer with a run-time length")
            if span <= 0:
                continue

            def body(r, gram=gram, d=d, span=span):
                s = reduce_axis(span, "s")
                hit = E.all_of(
                    *(E.eq(read(r, s + i * d), E.const(g, x.dtype)) for i, g in enumerate(gram))
                )
                return T.sum(cast("int64", hit), s)

            counts.setdefault(col, []).append(compute((nrows,), body, "tfidf_count"))
    w = list(attrs.weights) if attrs.weights else None

    def out(*i):
        r = i[0] if rows is not None else 0
        c = i[-1]
        v = Const(0.0, "float64")
        for col, ts in counts.items():
            k = E.index(0)
            for t in ts:
                k = k + t[(r,)]
            k = cast("float64", k)
            if attrs.mode == "IDF":
                k = select(k > 0.0, Const(1.0, "float64"), Const(0.0, "float64"))
            if attrs.mode != "TF" and w is not None:
                k = k * float(w[col])
            v = select(E.eq(c, col), k, v)
        return cast("float32", v)

    shape = (x.shape[0], size) if rows is not None else (size,)
    return compute(shape, out, "tfidf")
