"""Less common ops Keras layers and keras.ops emit: Bucketize, DenseBincount, Bitcast, Roll,
matrix diagonals, unsorted segment reductions, softmax cross-entropy."""

from __future__ import annotations

import numpy as np

from relay_core.ir import dtype as dt

from .table import TF
from .util import cast_to, ints, scalar_like


@TF.register("Mod")
def Mod(ctx, x, y):
    return ctx.call("mod", x, y)


@TF.register("Bitcast")
def Bitcast(ctx, x, type="int32"):  # noqa: A002 - TF's attribute name
    return ctx.call("bitcast", x, dtype=type)


@TF.register("Bucketize")
def Bucketize(ctx, x, boundaries=()):
    """The number of boundaries <= x, as int32."""
    b = ctx.const(np.asarray(boundaries, dt.to_numpy(ctx.dtype(x))))
    ge = ctx.call("greater_equal", ctx.call("expand_dims", x, axis=-1), b)
    return ctx.call("sum", ctx.call("cast", ge, dtype="int32"), axis=(ctx.ndim(x),))


@TF.register("DenseBincount")
def DenseBincount(ctx, x, size, weights, binary_output=False):
    """Counts (or weights) of the values in [0, size) per row; others are ignored."""
    n = ints(ctx, size, "size")[0]
    wt = ctx.dtype(weights)
    hot = ctx.call(
        "one_hot",
        x,
        ctx.const(np.asarray(1, dt.to_numpy(wt))),
        ctx.const(np.asarray(0, dt.to_numpy(wt))),
        depth=n,
        axis=-1,
        dtype=wt,
    )
    if ctx.shape_of(weights) not in ((0,), ()):
        hot = ctx.call("multiply", hot, ctx.call("expand_dims", weights, axis=-1))
    out = ctx.call("sum", hot, axis=(ctx.ndim(x) - 1,))
    if binary_output:
        ones = ctx.call("ones_like", out)
        out = ctx.call(
            "where",
            ctx.call("greater", out, scalar_like(ctx, 0, out)),
            ones,
            ctx.call("zeros_like", out),
        )
    return out


@TF.register("Roll")
def Roll(ctx, x, shift, axis):
    shifts, axes = ints(ctx, shift, "shift"), ints(ctx, axis, "axis")
    nd = ctx.ndim(x)
    total: dict[int, int] = {}
    for s, a in zip(shifts, axes):  # TF adds the shifts of repeated axes
        total[a % nd] = total.get(a % nd, 0) + s
    for a, s in total.items():
        n = ctx.shape_of(x)[a]
        if isinstance(n, int):
            if n == 0 or s % n == 0:
                continue
            idx = ctx.const(((np.arange(n) - s) % n).astype(np.int64))
        else:
            size = ctx.call(
                "take",
                ctx.call("shape_of", x, dtype="int64"),
                ctx.const(np.asarray(a, np.int64)),
                axis=0,
            )
            zero, one = (ctx.const(np.asarray(v, np.int64)) for v in (0, 1))
            pos = ctx.call("arange", zero, size, one, dtype="int64")
            back = ctx.call("subtract", pos, ctx.const(np.asarray(s, np.int64)))
            idx = ctx.call("floor_mod", back, size)
        x = ctx.call("take", x, idx, axis=a, mode="fast")
    return x


# -- matrix diagonals -----------------------------------------------------------------------------
def _diag_k(ctx, k):
    ks = ints(ctx, k, "k")
    if len(ks) > 1 and ks[0] != ks[-1]:
        raise ctx.error("a band of diagonals (k = [lo, hi] with lo != hi) is not supported")
    return ks[0]


def _mn(ctx, x):
    m, n = ctx.shape_of(x)[-2:]
    if not (isinstance(m, int) and isinstance(n, int)):
        raise ctx.error("matrix diagonal ops need static matrix dims")
    return m, n


def _diag_positions(m, n, k):
    rows = np.arange(max(-k, 0), m)
    cols = rows + k
    keep = cols < n
    return rows[keep], cols[keep]


@TF.register("MatrixDiagPartV3")
def MatrixDiagPartV3(ctx, x, k, padding_value, align="RIGHT_LEFT"):
    m, n = _mn(ctx, x)
    rows, cols = _diag_positions(m, n, _diag_k(ctx, k))
    flat = ctx.call("reshape", x, newshape=(-1, m * n))
    lead = ctx.shape_of(x)[:-2]
    out = ctx.call("take", flat, ctx.const((rows * n + cols).astype(np.int64)), axis=1)
    return (
        ctx.call(
            "reshape",
            out,
            newshape=tuple(d if isinstance(d, int) else -1 for d in lead) + (len(rows),),
        )
        if lead
        else ctx.call("reshape", out, newshape=(len(rows),))
    )


def _diag_mask(m, n, k) -> np.ndarray:
    return np.eye(m, n, k, dtype=bool)


@TF.register("MatrixSetDiagV3")
def MatrixSetDiagV3(ctx, x, diagonal, k, align="RIGHT_LEFT"):
    m, n = _mn(ctx, x)
    kk = _diag_k(ctx, k)
    rows, cols = _diag_positions(m, n, kk)
    # Spread diagonal element i over the row of position i (i.e. scatter along the diagonal).
    place = np.zeros((len(rows), m, n), dt.to_numpy(ctx.dtype(x)))
    place[np.arange(len(rows)), rows, cols] = 1
    spread = ctx.call("einsum", diagonal, ctx.const(place), equation="...d,dmn->...mn")
    return ctx.call("where", ctx.const(_diag_mask(m, n, kk)), spread, x)


@TF.register("MatrixDiagV3")
def MatrixDiagV3(ctx, diagonal, k, num_rows, num_cols, padding_value, align="RIGHT_LEFT"):
    kk = _diag_k(ctx, k)
    d = ctx.shape_of(diagonal)[-1]
    if not isinstance(d, int):
        raise ctx.error("MatrixDiagV3 needs a static diagonal length")
    m, n = ints(ctx, num_rows, "num_rows")[0], ints(ctx, num_cols, "num_cols")[0]
    if m <= 0 and n <= 0:  # TF's default: the smallest square matrix holding the diagonal
        m = n = d + abs(kk)
    m = m if m > 0 else d + max(-kk, 0)
    n = n if n > 0 else d + max(kk, 0)
    rows, cols = _diag_positions(m, n, kk)
    place = np.zeros((d, m, n), dt.to_numpy(ctx.dtype(diagonal)))
    place[np.arange(len(rows)), rows, cols] = 1
    spread = ctx.call("einsum", diagonal, ctx.const(place), equation="...d,dmn->...mn")
    pad = cast_to(ctx, padding_value, ctx.dtype(diagonal))
    return ctx.call("where", ctx.const(_diag_mask(m, n, kk)), spread, pad)


# -- segment reductions ---------------------------------------------------------------------------
def _unsorted_segment(mode: str):
    def convert(ctx, data, segment_ids, num_segments):
        n = ints(ctx, num_segments, "num_segments")[0]
        ids_rank = ctx.ndim(segment_ids)
        rest = ctx.shape_of(data)[ids_rank:]
        if any(not isinstance(d, int) for d in rest):
            raise ctx.error("the data dims after the segment ids must be static")
        dtype = ctx.dtype(data)
        init = {"add": 0, "mul": 1}.get(mode)
        if init is None:  # max / min: TF fills empty segments with the dtype's lowest / highest
            info = np.finfo if dt.is_float(dtype) else np.iinfo
            lim = info(dt.to_numpy(dtype))
            init = lim.min if mode == "max" else lim.max
        base = ctx.call(
            "full", ctx.const(np.asarray(init, dt.to_numpy(dtype))), shape=(n, *rest), dtype=dtype
        )
        idx = ctx.call("expand_dims", segment_ids, axis=0)
        return ctx.call("scatter_nd", base, idx, data, mode=mode)

    return convert


for _tf_op, _mode in {
    "UnsortedSegmentSum": "add",
    "UnsortedSegmentProd": "mul",
    "UnsortedSegmentMax": "max",
    "UnsortedSegmentMin": "min",
}.items():
    _fn = _unsorted_segment(_mode)
    _fn.__name__ = _fn.__qualname__ = _tf_op
    TF.register(_tf_op)(_fn)


# -- losses ---------------------------------------------------------------------------------------
@TF.register("SoftmaxCrossEntropyWithLogits")
def SoftmaxCrossEntropyWithLogits(ctx, features, labels):
    logp = ctx.call("nn.log_softmax", features, axis=-1)
    loss = ctx.call("negative", ctx.call("sum", ctx.call("multiply", labels, logp), axis=(-1,)))
    back = ctx.call("subtract", ctx.call("nn.softmax", features, axis=-1), labels)
    return [loss, back]


@TF.register("SparseSoftmaxCrossEntropyWithLogits")
def SparseSoftmaxCrossEntropyWithLogits(ctx, features, labels):
    depth = ctx.shape_of(features)[-1]
    if not isinstance(depth, int):
        raise ctx.error("the number of classes must be static")
    dtype = ctx.dtype(features)
    one, zero = (ctx.const(np.asarray(v, dt.to_numpy(dtype))) for v in (1, 0))
    hot = ctx.call("one_hot", labels, one, zero, depth=depth, axis=-1, dtype=dtype)
    return SoftmaxCrossEntropyWithLogits(ctx, features, hot)
