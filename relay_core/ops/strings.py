"""String ops with ONNX semantics (dtype "string": numpy object arrays of str):
strings.concat, strings.regex_full_match, strings.split, strings.normalize, and
tfidf_vectorizer (n-gram counts over ints or strings)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir.types import Any, TensorType, TupleType
from . import relations as R
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


def _strings(t, op, what="input"):
    t = R.tensor(t, what)
    if t.dtype != "string":
        raise OpTypeError(f"{op} needs a string {what}, got {t.dtype}")
    return t


def _obj(x) -> np.ndarray:
    return np.asarray(x, dtype=object)


def _text(v) -> str:
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


# -- concat, regex_full_match ------------------------------------------------------------------
def _concat_rel(args, attrs):
    a, b = _strings(args[0], "strings.concat", "lhs"), _strings(args[1], "strings.concat", "rhs")
    return TensorType(R.broadcast_shapes(a.shape, b.shape), "string")


def _concat_ref(xs, attrs):
    a, b = np.broadcast_arrays(_obj(xs[0]), _obj(xs[1]))
    out = np.empty(a.shape, dtype=object)
    for i in np.ndindex(a.shape):
        out[i] = _text(a[i]) + _text(b[i])
    return out


def _str_samples(rng):
    yield Sample([_obj([["ab", "c"], ["", "d"]]), _obj(["x", "yz"])])
    yield Sample([_obj("a"), _obj(["1", "2", "3"])])


register(
    OpDef(
        "strings.concat",
        _concat_rel,
        _concat_ref,
        OpPattern.BROADCAST,
        None,
        (2, 2),
        "elementwise string concatenation (ONNX StringConcat)",
        samples=_str_samples,
    )
)


@dataclass(frozen=True)
class RegexAttrs:
    pattern: str = ""


def _regex_rel(args, attrs):
    t = _strings(args[0], "strings.regex_full_match")
    try:
        re.compile(attrs.pattern)
    except re.error as e:
        raise OpTypeError(f"strings.regex_full_match: invalid pattern: {e}") from None
    return TensorType(t.shape, "bool")


def _regex_ref(xs, attrs):
    rx = re.compile(attrs.pattern)
    x = _obj(xs[0])
    out = np.zeros(x.shape, dtype=bool)
    for i in np.ndindex(x.shape):
        out[i] = rx.fullmatch(_text(x[i])) is not None
    return out


register(
    OpDef(
        "strings.regex_full_match",
        _regex_rel,
        _regex_ref,
        OpPattern.ELEMWISE,
        RegexAttrs,
        (1, 1),
        "whether each string matches `pattern` entirely (ONNX RegexFullMatch)",
        samples=lambda rng: [Sample([_obj(["ab1", "b", "ab"])], {"pattern": r"a.\d?"})],
    )
)


# -- split ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SplitAttrs:
    delimiter: str | None = None  # None or "": runs of whitespace
    maxsplit: int | None = None


def _split_rel(args, attrs):
    t = _strings(args[0], "strings.split")
    return TupleType((TensorType((*t.shape, Any), "string"), TensorType(t.shape, "int64")))


def _split_ref(xs, attrs):
    x = _obj(xs[0])
    sep = attrs.delimiter or None
    mx = -1 if attrs.maxsplit is None else attrs.maxsplit
    parts = {i: _text(x[i]).split(sep, mx) for i in np.ndindex(x.shape)}
    width = max((len(p) for p in parts.values()), default=0)
    out = np.full((*x.shape, width), "", dtype=object)
    counts = np.zeros(x.shape, np.int64)
    for i, p in parts.items():
        counts[i] = len(p)
        out[i][: len(p)] = p
    return out, counts


register(
    OpDef(
        "strings.split",
        _split_rel,
        _split_ref,
        OpPattern.OPAQUE,
        SplitAttrs,
        (1, 1),
        "split each string at `delimiter` (whitespace runs when None), padded with "
        "empty strings; returns (pieces, counts) as ONNX StringSplit",
        samples=lambda rng: [
            Sample([_obj(["a b  c", "d"])]),
            Sample([_obj([["a-b", "-"]])], {"delimiter": "-", "maxsplit": 1}),
        ],
        data_dependent_shape=True,
    )
)


# -- normalize -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NormalizeAttrs:
    case_change_action: str = "NONE"  # LOWER | UPPER | NONE
    is_case_sensitive: bool = False
    stopwords: tuple[str, ...] = ()


def _norm_rel(args, attrs):
    t = _strings(args[0], "strings.normalize")
    if t.ndim == 1:
        return TensorType((Any,), "string")
    if t.ndim == 2 and R.dim_eq(t.shape[0], 1) is not False:
        return TensorType((1, Any), "string")
    raise OpTypeError(f"strings.normalize needs shape (C,) or (1, C), got {t.shape}")


def _strip_accents(s: str) -> str:
    import unicodedata

    if s.isascii():
        return s
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


def _drop_words(s: str, stops: set) -> str:
    return " ".join(w for w in s.split(" ") if w not in stops)


def _norm_ref(xs, attrs):
    # As ONNX's reference: strip accents; drop stop words (words of each string) before the
    # case change when case-sensitive, after it (against case-changed stop words) otherwise;
    # then drop empty strings ([""] if nothing is left).
    x = _obj(xs[0])
    action = attrs.case_change_action
    if action not in ("LOWER", "UPPER", "NONE"):
        raise EvalError(f"strings.normalize: unknown case_change_action {action!r}")
    change = {"LOWER": str.lower, "UPPER": str.upper, "NONE": lambda w: w}[action]
    words = [_strip_accents(_text(v)) for v in x.reshape(-1)]
    if attrs.is_case_sensitive and attrs.stopwords:
        words = [_drop_words(w, set(attrs.stopwords)) for w in words]
    words = [change(w) for w in words]
    if not attrs.is_case_sensitive and attrs.stopwords:
        words = [_drop_words(w, {change(s) for s in attrs.stopwords}) for w in words]
    kept = [w for w in words if w] or [""]
    out = np.array(kept, dtype=object)
    return out.reshape(1, -1) if x.ndim == 2 else out


register(
    OpDef(
        "strings.normalize",
        _norm_rel,
        _norm_ref,
        OpPattern.OPAQUE,
        NormalizeAttrs,
        (1, 1),
        "drop stop words, then change case (ONNX StringNormalizer)",
        samples=lambda rng: [
            Sample(
                [_obj(["Mon", "tue", "Wed"])],
                {"stopwords": ("mon",), "case_change_action": "UPPER"},
            ),
            Sample([_obj([["a", "b"]])], {"stopwords": ("a", "b")}),
        ],
        data_dependent_shape=True,
    )
)


# -- tfidf_vectorizer ----------------------------------------------------------------------------
@dataclass(frozen=True)
class TfIdfAttrs:
    mode: str = "TF"  # TF | IDF | TFIDF
    min_gram_length: int = 1
    max_gram_length: int = 1
    max_skip_count: int = 0
    ngram_counts: tuple[int, ...] = ()
    ngram_indexes: tuple[int, ...] = ()
    pool_int64s: tuple[int, ...] = ()
    pool_strings: tuple[str, ...] = ()
    weights: tuple[float, ...] = ()


def _tfidf_rel(args, attrs):
    t = R.tensor(args[0])
    if t.ndim not in (1, 2):
        raise OpTypeError(f"tfidf_vectorizer needs a 1-D or 2-D input, got {t.shape}")
    if attrs.mode not in ("TF", "IDF", "TFIDF"):
        raise OpTypeError(f"tfidf_vectorizer: unknown mode {attrs.mode!r}")
    size = max(attrs.ngram_indexes, default=-1) + 1
    return TensorType((size,) if t.ndim == 1 else (t.shape[0], size), "float32")


def _pool_grams(attrs) -> dict:
    """n-gram (tuple) -> output column, for the pool's n-grams of the wanted lengths."""
    pool = list(attrs.pool_strings) if attrs.pool_strings else list(attrs.pool_int64s)
    starts = list(attrs.ngram_counts) + [len(pool)]
    out, gram_id = {}, 0
    for n, (lo, hi) in enumerate(zip(starts[:-1], starts[1:]), start=1):
        for k in range((hi - lo) // n):
            if attrs.min_gram_length <= n <= attrs.max_gram_length:
                out[tuple(pool[lo + k * n : lo + (k + 1) * n])] = attrs.ngram_indexes[gram_id]
            gram_id += 1
    return out


def _tfidf_ref(xs, attrs):
    x = xs[0]
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    grams = _pool_grams(attrs)
    size = max(attrs.ngram_indexes, default=-1) + 1
    counts = np.zeros((rows.shape[0], size), np.float64)
    conv = _text if attrs.pool_strings else int
    for r in range(rows.shape[0]):
        row = [conv(v) for v in rows[r]]
        for skip in range(attrs.max_skip_count + 1):
            d = skip + 1
            # Unigrams do not depend on the skip: count them in the first round only.
            lo = attrs.min_gram_length if skip == 0 else max(attrs.min_gram_length, 2)
            for n in range(lo, attrs.max_gram_length + 1):
                for s in range(len(row) - (n - 1) * d):
                    col = grams.get(tuple(row[s + i * d] for i in range(n)))
                    if col is not None:
                        counts[r, col] += 1
    w = np.asarray(attrs.weights, np.float64) if attrs.weights else None
    if attrs.mode == "IDF":
        out = (counts > 0) * (w if w is not None else 1.0)
    elif attrs.mode == "TFIDF":
        out = counts * w if w is not None else counts
    else:
        out = counts
    out = out.astype(np.float32)
    return out[0] if x.ndim == 1 else out


def _tfidf_samples(rng):
    x = np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int32)
    base = {
        "ngram_counts": (0, 4),
        "ngram_indexes": (0, 1, 2, 3, 4, 5, 6),
        "pool_int64s": (2, 3, 5, 4, 5, 6, 7, 8, 6, 7),
    }
    yield Sample([x], {**base, "max_gram_length": 2, "max_skip_count": 2})
    yield Sample(
        [x[0]],
        {
            **base,
            "mode": "IDF",
            "min_gram_length": 2,
            "max_gram_length": 2,
            "weights": (1, 2, 3, 4, 5, 6, 7),
        },
    )


register(
    OpDef(
        "tfidf_vectorizer",
        _tfidf_rel,
        _tfidf_ref,
        OpPattern.OPAQUE,
        TfIdfAttrs,
        (1, 1),
        "n-gram counts (TF), presence (IDF) or weighted counts (TFIDF) over a "
        "pool of n-grams, with skips (ONNX TfIdfVectorizer)",
        samples=_tfidf_samples,
    )
)
declare("tfidf_vectorizer", lower=Rule("relay_core.te.lower_ml:_tfidf"))
