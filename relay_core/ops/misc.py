"""Cast, where, clip, cumulative sums and products, einsum, trilu, shape_of, ndarray_size."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from ..ir.types import TensorType
from . import relations as R
from .factories import check_kind, random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register

# -- cast -----------------------------------------------------------------------------------------
# Float8 types with a saturating cast (ONNX Cast `saturate`): out-of-range and +-inf go to +-max.
SATURATING_FLOAT8 = frozenset(
    ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"]
)


# Integers narrower than a byte (ml_dtypes types).
SUB_BYTE_INTS = frozenset(["int4", "uint4", "int2", "uint2"])


@dataclass(frozen=True)
class CastAttrs:
    dtype: str = "float32"
    saturate: bool = True  # float8 targets only: clamp out-of-range values to +-max


def _parse_number(s) -> float:
    # Python's float() reads "1e-5", "INF", "+inf", "NaN" case-insensitively, as ONNX asks.
    try:
        return float(str(s).strip())
    except ValueError:
        raise EvalError(f"cast: {s!r} is not a number") from None


def _parse_int(s) -> int:
    t = str(s).strip()
    try:
        v = int(t)
    except ValueError:
        v = math.trunc(_parse_number(t))
    return v % 2**64  # wraps like an integer cast once viewed as uint64


def cast_array(x: np.ndarray, dtype: str, saturate: bool = True) -> np.ndarray:
    """ONNX Cast: floats to ints truncate toward zero, ints wrap, float8 saturates if asked;
    floats out of a 4- or 2-bit integer's range (and NaN) give 0, as ONNX's reference does.

    >>> cast_array(np.array([-1.7, 2.9]), "int32")
    array([-1,  2], dtype=int32)
    """
    x = np.asarray(x)
    src = dt.from_numpy(x.dtype)
    target = dt.to_numpy(dtype)
    if src == dtype:
        return x.copy()
    if dtype == "string":
        return x.astype(np.str_).astype(object)
    if src == "string":
        if dt.is_int(dtype):
            wrapped = np.vectorize(_parse_int, otypes=[object])(x).astype(np.uint64)
            return wrapped.astype(target)
        if dtype == "bool":
            return np.vectorize(_parse_number, otypes=[np.float64])(x).astype(bool)
        x = np.vectorize(_parse_number, otypes=[np.float64])(x)
        src = "float64"
    with np.errstate(all="ignore"):
        if src not in dt.NATIVE_DTYPES:  # ml_dtypes sources go through a numpy type
            x = x.astype(dt.to_numpy(dt.compute_dtype(src)))
        if dtype in SUB_BYTE_INTS and x.dtype.kind == "f":
            # ONNX's reference (ml_dtypes >= 0.7): truncate; out of range, +-inf and NaN give 0
            info = dt.iinfo(dtype)
            t = np.trunc(x)
            t = np.where((t >= int(info.min)) & (t <= int(info.max)), t, 0)
            return t.astype(np.int8).astype(target)
        if dtype not in dt.NATIVE_DTYPES:
            if dt.is_float(dtype):
                if x.dtype != np.float64:  # float64 rounds once, straight to the target
                    x = x.astype(np.float32)
                if saturate and dtype in SATURATING_FLOAT8:
                    big = float(dt.finfo(dtype).max)
                    x = np.clip(x, -big, big)  # +-inf to +-max; NaN stays NaN
            elif x.dtype == np.bool_:
                x = x.astype(np.int8)
        return np.asarray(np.asarray(x).astype(target))


def _cast_rel(args, attrs):
    t = R.tensor(args[0])
    return TensorType(t.shape, R.dtype_attr(attrs.dtype, "cast"))


def _cast_samples(rng):
    special = np.array([0.0, -0.0, 1.5, -2.5, 1e5, -1e5, np.inf, -np.inf, np.nan], np.float32)
    for src, dst in [
        ("float32", "int32"),
        ("float32", "uint8"),
        ("float64", "float16"),
        ("int64", "int8"),
        ("int32", "float32"),
        ("bool", "float32"),
        ("float32", "bool"),
        ("int8", "bool"),
        ("float32", "bfloat16"),
        ("bfloat16", "float32"),
        ("int32", "int4"),
        ("float32", "int4"),
        ("float16", "uint4"),
        ("float32", "int2"),
        ("float32", "uint2"),
        ("float16", "int64"),
        ("float32", "float32"),
        ("uint8", "int8"),
        ("int32", "float8_e4m3fn"),
    ]:
        for shape in [(), (7,), (2, 3), (0, 4)]:
            yield Sample([random_array(rng, shape, src, (-100, 100))], {"dtype": dst})
    for dst in sorted(SATURATING_FLOAT8 | SUB_BYTE_INTS) + ["float4_e2m1fn", "float16"]:
        yield Sample([special], {"dtype": dst})
        yield Sample([special], {"dtype": dst, "saturate": False})
    yield Sample([np.array(["1.5", "-INF", "nan", "1e3"], object)], {"dtype": "float32"})
    yield Sample([np.array(["12", "-7", "9007199254740993"], object)], {"dtype": "int64"})
    yield Sample([np.array([1.5, -2.0], np.float32)], {"dtype": "string"})


register(
    OpDef(
        "cast",
        _cast_rel,
        lambda xs, a: cast_array(xs[0], a.dtype, a.saturate),
        OpPattern.ELEMWISE,
        CastAttrs,
        (1, 1),
        "convert to `dtype` with ONNX Cast rules (float->int truncates toward zero, int->int "
        "wraps, float8 saturates unless saturate=False, strings parse / print numbers)",
        samples=_cast_samples,
    )
)
declare(
    "cast",
    lower=Rule("relay_core.te.lower_misc:_cast"),
    grad=Rule("relay_core.ops.grads_tensor:_cast"),
)


def _cast_like_rel(args, attrs):
    t, like = R.tensor(args[0]), R.tensor(args[1], "dtype_like")
    return TensorType(t.shape, like.dtype)


def _cast_like_samples(rng):
    for src, dst in [("float32", "int32"), ("int64", "float16"), ("bool", "float64")]:
        for shape in [(), (3, 1), (0,)]:
            yield Sample([random_array(rng, shape, src), random_array(rng, (2,), dst)])


register(
    OpDef(
        "cast_like",
        _cast_like_rel,
        lambda xs, a: cast_array(xs[0], dt.from_numpy(xs[1].dtype)),
        OpPattern.ELEMWISE,
        None,
        (2, 2),
        "cast to the dtype of the second argument",
        samples=_cast_like_samples,
    )
)
declare(
    "cast_like",
    lower=Rule("relay_core.te.lower_misc:_cast_like"),
    grad=Rule("relay_core.ops.grads_tensor:_cast_like"),
)


# -- where, clip ----------------------------------------------------------------------------
def _where_rel(args, attrs):
    c, x, y = (R.tensor(a, w) for a, w in zip(args, ("condition", "x", "y")))
    if x.dtype != y.dtype:
        raise OpTypeError(f"where: x and y must have one dtype, got {x.dtype} and {y.dtype}")
    if c.dtype == "string":
        raise OpTypeError("where: the condition cannot be a string tensor")
    return TensorType(R.broadcast_shapes(c.shape, x.shape, y.shape), x.dtype)


def _where(xs, attrs):
    c, x, y = xs
    return np.where(c.astype(bool), x, y).astype(x.dtype)


def _where_samples(rng):
    for dtype in ["float32", "int64", "bool", "float16"]:
        for cs, xs, ys in [
            ((), (), ()),
            ((5,), (5,), ()),
            ((3, 1), (1, 4), (4,)),
            ((2, 1, 3), (3,), (2, 4, 1)),
            ((0, 3), (3,), (1, 3)),
        ]:
            c = random_array(rng, cs, "bool")
            yield Sample([c, random_array(rng, xs, dtype), random_array(rng, ys, dtype)])
    yield Sample(
        [random_array(rng, (4,), "int32"), np.ones(4, np.float32), np.zeros(1, np.float32)]
    )


register(
    OpDef(
        "where",
        _where_rel,
        _where,
        OpPattern.BROADCAST,
        None,
        (3, 3),
        "where(condition, x, y): x where the condition is true (non-zero), else y; all three "
        "broadcast",
        samples=_where_samples,
    )
)
declare(
    "where",
    lower=Rule("relay_core.te.lower_transform:_where"),
    grad=Rule("relay_core.ops.grads_tensor:_where"),
)


@dataclass(frozen=True)
class ClipAttrs:
    a_min: int | float | None = None  # None: unbounded
    a_max: int | float | None = None


def _clip_bound(x: np.ndarray, v, lower: bool):
    if v is None:
        return None
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        v = min(max(v, info.min), info.max)  # also maps +-inf into range
        # The integers >= 2.5 start at 3; those <= 2.5 end at 2.
        v = math.ceil(v) if lower else math.floor(v)
    with np.errstate(all="ignore"):
        return np.asarray(v).astype(x.dtype)


def _clip(xs, attrs):
    x = xs[0]
    src = dt.from_numpy(x.dtype)
    xc = x.astype(dt.to_numpy(dt.compute_dtype(src)), copy=False)
    lo, hi = _clip_bound(xc, attrs.a_min, True), _clip_bound(xc, attrs.a_max, False)
    out = xc
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)  # a_min > a_max: every value becomes a_max (ONNX)
    return np.asarray(out).astype(x.dtype)


def _clip_rel(args, attrs):
    t = R.tensor(args[0])
    check_kind(t, "numeric", "clip")
    return t


def _clip_samples(rng):
    for dtype in ["float32", "float16", "int32", "uint8", "int8"]:
        for shape in [(), (7,), (3, 4), (0, 2)]:
            x = random_array(rng, shape, dtype, (-5, 5))
            yield Sample([x], {"a_min": -1.5, "a_max": 2.5})
            yield Sample([x], {"a_min": 0})
            yield Sample([x], {"a_max": 1})
            yield Sample([x], {"a_min": 3, "a_max": 1})
            yield Sample([x], {"a_min": -1e30, "a_max": float("inf")})
    yield Sample([np.array([np.nan, -np.inf, 4.0], np.float32)], {"a_min": 0.0, "a_max": 1.0})


register(
    OpDef(
        "clip",
        _clip_rel,
        _clip,
        OpPattern.ELEMWISE,
        ClipAttrs,
        (1, 1),
        "clamp to [a_min, a_max] (None: unbounded); NaN stays NaN; integer inputs clamp to the "
        "integers inside the bounds",
        samples=_clip_samples,
    )
)
declare(
    "clip",
    lower=Rule("relay_core.te.lower_misc:_clip"),
    grad=Rule("relay_core.ops.grads_tensor:_clip"),
)


# -- cumsum / cumprod -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ScanAttrs:
    axis: int | None = None  # None: over the flattened tensor
    dtype: str | None = None  # result (and accumulation) dtype; None: the input's
    exclusive: bool = False  # element i excludes x[i] (the first is the identity)
    reverse: bool = False  # accumulate from the end


def _scan_rel(name):
    def rel(args, attrs):
        t = R.tensor(args[0])
        check_kind(t, "numeric", name)
        out = R.dtype_attr(attrs.dtype, name) if attrs.dtype else t.dtype
        if attrs.axis is None:
            return TensorType((R.prod(t.shape),), out)
        R.normalize_axis(attrs.axis, t.ndim)
        if t.ndim == 0:
            raise OpTypeError(f"{name} needs a tensor of rank >= 1 when an axis is given")
        return TensorType(t.shape, out)

    return rel


def _scan_ref(fn, identity):
    def ref(xs, attrs):
        x = xs[0]
        out_dt = attrs.dtype or dt.from_numpy(x.dtype)
        acc = dt.compute_dtype(out_dt)
        y = x.astype(dt.to_numpy(acc))
        if y.dtype == np.float16:
            y = y.astype(np.float32)
        axis = 0 if attrs.axis is None else attrs.axis
        if attrs.axis is None:
            y = y.reshape(-1)
        if attrs.reverse:
            y = np.flip(y, axis)
        if attrs.exclusive and y.shape[axis]:
            pad = np.full_like(np.take(y, [0], axis=axis), identity)
            y = np.concatenate([pad, np.take(y, np.arange(y.shape[axis] - 1), axis=axis)], axis)
        with np.errstate(all="ignore"):
            r = fn(y, axis=axis)
        if attrs.reverse:
            r = np.flip(r, axis)
        return np.ascontiguousarray(r).astype(dt.to_numpy(out_dt))

    return ref


def _scan_samples(rng):
    for dtype in ["float32", "int32", "int64", "float16"]:
        for shape in [(1,), (7,), (3, 4), (2, 3, 5), (0, 3)]:
            x = random_array(rng, shape, dtype, (-2, 2))
            yield Sample([x], {})
            yield Sample([x], {"axis": -1, "exclusive": True})
            yield Sample([x], {"axis": 0, "reverse": True})
            yield Sample([x], {"axis": 0, "reverse": True, "exclusive": True})
    yield Sample([random_array(rng, (3, 4), "int8")], {"axis": 1, "dtype": "int64"})


for _name, _fn, _id in [("cumsum", np.cumsum, 0), ("cumprod", np.cumprod, 1)]:
    register(
        OpDef(
            _name,
            _scan_rel(_name),
            _scan_ref(_fn, _id),
            OpPattern.OPAQUE,
            ScanAttrs,
            (1, 1),
            f"{_name} along `axis` (None: flattened), optionally exclusive and / or reversed",
            samples=_scan_samples,
        )
    )


# -- einsum ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EinsumAttrs:
    equation: str = ""


def parse_einsum(equation: str, ranks: list[int]) -> tuple[list[str], str, int]:
    """Split `equation` into per-input labels and output labels; "..." becomes "*".

    Returns (input label strings, output label string, ellipsis rank). Raises OpTypeError.
    """
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise OpTypeError(
            f"einsum equation {equation!r} names {len(terms)} inputs, got {len(ranks)}"
        )
    labels, ell = [], 0
    for term, rank in zip(terms, ranks):
        t = term.replace("...", "*")
        if t.count("*") > 1 or not all(c.isalpha() or c == "*" for c in t):
            raise OpTypeError(f"einsum: malformed term {term!r} in {equation!r}")
        n = len(t) - ("*" in t)
        if n > rank or ("*" not in t and n != rank):
            raise OpTypeError(f"einsum: term {term!r} does not fit an input of rank {rank}")
        if "*" in t:
            ell = max(ell, rank - n)
        labels.append(t)
    if arrow:
        o = out.replace("...", "*")
        if o.count("*") > 1 or not all(c.isalpha() or c == "*" for c in o):
            raise OpTypeError(f"einsum: malformed output {out!r}")
        if len(set(o)) != len(o):
            raise OpTypeError(f"einsum: output {out!r} repeats a label")
        seen = set("".join(labels))
        for c in o:
            if c != "*" and c not in seen:
                raise OpTypeError(f"einsum: output label {c!r} is not in any input")
        if ell and "*" not in o:
            raise OpTypeError("einsum: inputs use '...' but the output does not")
    else:
        counts: dict[str, int] = {}
        for c in "".join(labels):
            counts[c] = counts.get(c, 0) + 1
        o = ("*" if "*" in counts else "") + "".join(
            sorted(c for c, n in counts.items() if n == 1 and c != "*")
        )
    return labels, o, ell


def _einsum_rel(args, attrs):
    ts = [R.tensor(a, f"input {i}") for i, a in enumerate(args)]
    dtype = R.same_dtype(ts)
    check_kind(ts[0], "numeric", "einsum")
    labels, out, ell = parse_einsum(attrs.equation, [t.ndim for t in ts])
    dims: dict[str, object] = {}
    ell_shapes = []
    for t, lab in zip(ts, labels):
        shape = list(t.shape)
        if "*" in lab:
            i = lab.index("*")
            k = t.ndim - (len(lab) - 1)
            ell_shapes.append(tuple(shape[i : i + k]))
            shape = shape[:i] + shape[i + k :]
            lab = lab.replace("*", "")
        for c, d in zip(lab, shape):
            dims[c] = R.dim_unify(dims[c], d, f"einsum label {c!r}") if c in dims else d
    ell_shape = R.broadcast_shapes(*ell_shapes) if ell_shapes else ()
    shape = []
    for c in out:
        shape.extend(ell_shape if c == "*" else [dims[c]])
    return TensorType(tuple(shape), dtype)


def _einsum(xs, attrs):
    src = dt.from_numpy(xs[0].dtype)
    cd = dt.compute_dtype(src)
    # floats sum in float64 and round once (order-independent, as nn.dense / conv)
    acc = np.float64 if dt.is_float(cd) else dt.to_numpy(cd)
    arrs = [x.astype(acc) for x in xs]
    eq = attrs.equation.replace(" ", "")
    return np.asarray(np.einsum(eq, *arrs)).astype(xs[0].dtype)


def _einsum_samples(rng):
    cases = [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("ij,jk", [(2, 1), (1, 3)]),
        ("ii->i", [(4, 4)]),
        ("ii", [(3, 3)]),
        ("ij->ji", [(2, 5)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 1)]),
        ("...ij,...jk->...ik", [(2, 3, 4), (1, 4, 2)]),
        ("i,i->", [(7,), (7,)]),
        ("i,j->ij", [(3,), (4,)]),
        ("...j->...", [(2, 3, 4)]),
        ("ij->", [(0, 3)]),
        ("bhqd, bhkd -> bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
        ("...,...->...", [(), (3,)]),
    ]
    for dtype in ["float32", "int32", "float64"]:
        for eq, shapes in cases:
            yield Sample([random_array(rng, s, dtype) for s in shapes], {"equation": eq})


register(
    OpDef(
        "einsum",
        _einsum_rel,
        _einsum,
        OpPattern.OPAQUE,
        EinsumAttrs,
        (1, None),
        "Einstein summation over the inputs (numpy / ONNX equation syntax, '...' broadcasts)",
        samples=_einsum_samples,
    )
)
declare(
    "einsum",
    lower=Rule("relay_core.te.lower_misc:_einsum"),
    grad=Rule("relay_core.ops.grads_tensor:_einsum"),
)


# -- trilu ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TriluAttrs:
    k: int = 0  # diagonal offset: > 0 above the main diagonal
    upper: bool = True  # keep the upper triangle (triu), else the lower (tril)


def _trilu_rel(args, attrs):
    t = R.tensor(args[0])
    if t.ndim < 2:
        raise OpTypeError(f"trilu needs a tensor of rank >= 2, got rank {t.ndim}")
    return t


def trilu_array(x: np.ndarray, k: int, upper: bool) -> np.ndarray:
    """Zero the elements below (upper) or above (lower) diagonal k of the last two axes."""
    n, m = x.shape[-2:]
    rows, cols = np.arange(n)[:, None], np.arange(m)[None, :]
    keep = (cols - rows >= k) if upper else (cols - rows <= k)
    return np.where(keep, x, np.zeros((), x.dtype)).astype(x.dtype)


def _trilu_samples(rng):
    for dtype in ["float32", "int64", "bool"]:
        for shape in [(1, 1), (3, 4), (5, 2), (2, 3, 3), (0, 3), (3, 0)]:
            x = random_array(rng, shape, dtype)
            for k in (0, 1, -1, 7, -7):
                yield Sample([x], {"k": k})
                yield Sample([x], {"k": k, "upper": False})


register(
    OpDef(
        "trilu",
        _trilu_rel,
        lambda xs, a: trilu_array(xs[0], a.k, a.upper),
        OpPattern.INJECTIVE,
        TriluAttrs,
        (1, 1),
        "upper / lower triangle of the last two axes (ONNX Trilu)",
        samples=_trilu_samples,
    )
)
declare(
    "trilu",
    lower=Rule("relay_core.te.lower_transform:_trilu"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "trilu", (0,)),
)


# -- shape_of / ndarray_size ----------------------------------------------------------------------
@dataclass(frozen=True)
class ShapeAttrs:
    dtype: str = "int64"


def _int_dtype(attrs, op):
    d = R.dtype_attr(attrs.dtype, op)
    if not dt.is_int(d):
        raise OpTypeError(f"{op}: dtype must be an integer type, got {d}")
    return d


def _shape_samples(rng):
    for shape in [(), (1,), (3, 4), (2, 0, 5)]:
        for dtype in ["float32", "bool"]:
            x = random_array(rng, shape, dtype)
            yield Sample([x], {})
            yield Sample([x], {"dtype": "int32"})


register(
    OpDef(
        "shape_of",
        lambda args, a: TensorType((R.tensor(args[0]).ndim,), _int_dtype(a, "shape_of")),
        lambda xs, a: np.array(xs[0].shape, dtype=dt.to_numpy(a.dtype)).reshape(-1),
        OpPattern.OPAQUE,
        ShapeAttrs,
        (1, 1),
        "the shape of a tensor as a 1-D tensor",
        samples=_shape_samples,
        shape_only=True,
    )
)
declare("shape_of", lower=Rule("relay_core.te.lower_misc:_shape_of"))


def _size_rel(args, attrs):
    R.tensor(args[0])
    return TensorType((), _int_dtype(attrs, "ndarray_size"))


register(
    OpDef(
        "ndarray_size",
        _size_rel,
        lambda xs, a: np.array(xs[0].size, dtype=dt.to_numpy(a.dtype)),
        OpPattern.OPAQUE,
        ShapeAttrs,
        (1, 1),
        "the number of elements, as a scalar",
        samples=_shape_samples,
        shape_only=True,
    )
)
declare("ndarray_size", lower=Rule("relay_core.te.lower_misc:_ndarray_size"))

__all__ = ["cast_array", "parse_einsum", "trilu_array", "SATURATING_FLOAT8"]

# -- how each op is computed (JAX lax style: declared beside the ops; a Rule / Kernel names a
# function of relay_core/te or relay_core/backend, imported on first use) ------------------
declare(
    "cumsum",
    lower=Rule("relay_core.te.lower_misc:_scan", "sum"),
    grad=Rule("relay_core.ops.grads_tensor:_cumsum"),
)
declare(
    "cumprod",
    lower=Rule("relay_core.te.lower_misc:_scan", "prod"),
    grad=Rule("relay_core.ops.grads_tensor:_cumprod"),
)
