"""Lowering of shape transforms and indexing (relay_core/ops/transform*.py) to tensor expressions.

Output shapes come from the call's Relay type where they are static. Index tensors are read,
made non-negative and clamped into range (the references raise on out-of-range indices; compiled
code stays in bounds instead of failing).
"""

from __future__ import annotations

from ..ops.transform_slice import slice_axis, slice_plan
from . import expr as E
from .expr import Const, cast, select
from .lowering import broadcast_read, broadcast_shape, out_shape
from .tensor import compute


def _shape(out_type, fallback=None) -> tuple:
    if fallback is not None:
        return out_shape(out_type, fallback)
    return tuple(out_type.shape)


def unravel(flat, shape) -> tuple:
    """Row-major multi-index of a flat position."""
    idx = []
    for d in reversed(shape):
        idx.append(E.floormod(flat, d) if not (isinstance(d, int) and d == 1) else E.index(0))
        flat = E.floordiv(flat, d)
    return tuple(reversed(idx))


def ravel(idx, shape):
    off = E.index(0)
    for d, i in zip(shape, idx):
        off = off * d + i
    return off


def reshape_to(x, shape, name="reshape"):
    """x's elements in row-major order, viewed with `shape`."""
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return compute(shape, lambda *i: x[i], name)
    return compute(shape, lambda *i: x[unravel(ravel(i, shape), x.shape)], name)


def _static_type(t) -> bool:
    return all(isinstance(d, int) for d in t.shape)


def sym_reshape_shape(shape, newshape, allowzero: bool = False) -> tuple:
    """relay_core.ops.transform_reshape.reshape_shape over dims that may be run-time expressions."""
    out, consumed, explicit = [], set(), []
    infer_at = None
    i = j = 0
    ns = list(newshape)
    while j < len(ns):
        v = ns[j]
        if v > 0 or (v == 0 and allowzero):
            out.append(v)
            explicit.append(v)
            i += 1
        elif v == 0:
            out.append(shape[i])
            consumed.add(i)
            i += 1
        elif v == -1:
            infer_at = len(out)
            out.append(None)
            i += 1
        elif v == -2:
            out.extend(shape[i:])
            consumed.update(range(i, len(shape)))
            i = len(shape)
        elif v == -3:
            out.append(shape[i] * shape[i + 1])
            consumed.update((i, i + 1))
            i += 2
        elif v == -4:
            a, b, d = ns[j + 1], ns[j + 2], shape[i]
            a = E.floordiv(d, b) if a == -1 else a
            b = E.floordiv(d, a) if b == -1 else b
            out.extend((a, b))
            consumed.add(i)
            i += 1
            j += 2
        j += 1
    if infer_at is not None:
        rest = 1
        for k, d in enumerate(shape):
            if k not in consumed:
                rest = rest * d
        den = 1
        for v in explicit:
            den = den * v
        out[infer_at] = E.floordiv(rest, den) if den else 0
    return tuple(out)


def _reshape(inputs, attrs, out_type):
    x = inputs[0]
    if _static_type(out_type):
        return reshape_to(x, out_type.shape)
    return reshape_to(
        x, out_shape(out_type, sym_reshape_shape(x.shape, attrs.newshape, attrs.allowzero))
    )


def _squeeze(inputs, attrs, out_type):
    x = inputs[0]
    if _static_type(out_type):
        return reshape_to(x, out_type.shape)
    if attrs.axis is None:
        shape = tuple(d for d in x.shape if not (isinstance(d, int) and d == 1))
    else:
        axes = {a % x.ndim for a in attrs.axis}
        shape = tuple(d for k, d in enumerate(x.shape) if k not in axes)
    return reshape_to(x, out_shape(out_type, shape))


def _expand_dims(inputs, attrs, out_type):
    x = inputs[0]
    if _static_type(out_type):
        return reshape_to(x, out_type.shape)
    a = attrs.axis + x.ndim + 1 if attrs.axis < 0 else attrs.axis
    shape = tuple(x.shape[:a]) + (1,) * attrs.num_newaxis + tuple(x.shape[a:])
    return reshape_to(x, out_shape(out_type, shape))


def _reshape_like(inputs, attrs, out_type):
    x, like = inputs
    if _static_type(out_type):
        return reshape_to(x, out_type.shape)
    lb = attrs.lhs_begin % (x.ndim + 1) if attrs.lhs_begin < 0 else attrs.lhs_begin
    le = x.ndim if attrs.lhs_end is None else attrs.lhs_end % (x.ndim + 1)
    rb = attrs.rhs_begin % (like.ndim + 1) if attrs.rhs_begin < 0 else attrs.rhs_begin
    re_ = like.ndim if attrs.rhs_end is None else attrs.rhs_end % (like.ndim + 1)
    shape = tuple(x.shape[:lb]) + tuple(like.shape[rb:re_]) + tuple(x.shape[le:])
    return reshape_to(x, out_shape(out_type, shape))


def _forget_shape(inputs, attrs, out_type):
    x = inputs[0]
    return compute(x.shape, lambda *i: x[i], "forget_shape")


def _transpose(inputs, attrs, out_type):
    x = inputs[0]
    nd = x.ndim
    perm = (
        tuple(range(nd - 1, -1, -1))
        if attrs.axes is None
        else tuple(a % nd if nd else a for a in attrs.axes)
    )
    shape = tuple(x.shape[p] for p in perm)

    def body(*i):
        src = [None] * nd
        for k, p in enumerate(perm):
            src[p] = i[k]
        return x[tuple(src)]

    return compute(shape, body, "transpose")


def _concatenate(inputs, attrs, out_type):
    nd = inputs[0].ndim
    ax = attrs.axis % nd
    total = 0
    for t in inputs:
        total = total + t.shape[ax]
    base = list(inputs[0].shape)
    for t in inputs[1:]:  # a static size wins over a run-time one
        base = [b if isinstance(b, int) else d for b, d in zip(base, t.shape)]
    base[ax] = total
    shape = _shape(out_type, tuple(base))
    parts = [t for t in inputs]

    def body(*i):
        # a balanced tree of selects on the concatenation index: log2(len(parts)) compares
        # per element, not one per part (each select is a branch: an unrolled LSTM's output,
        # 64 parts, spent 150 us in a chain of 64)
        level, off = [], 0
        for t in parts:
            idx = list(i)
            idx[ax] = i[ax] - off
            level.append((off, t[tuple(idx)]))
            off = off + t.shape[ax]
        while len(level) > 1:
            nxt = [
                (lo, select(i[ax] < hi_start, lv, hv))
                for (lo, lv), (hi_start, hv) in zip(level[0::2], level[1::2])
            ]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        return level[0][1]

    return compute(shape, body, "concatenate")


def _stack(inputs, attrs, out_type):
    nd = inputs[0].ndim
    ax = attrs.axis + nd + 1 if attrs.axis < 0 else attrs.axis
    base = list(inputs[0].shape)
    shape = _shape(out_type, tuple(base[:ax]) + (len(inputs),) + tuple(base[ax:]))

    def body(*i):
        rest = i[:ax] + i[ax + 1 :]
        val = None
        for k in range(len(inputs) - 1, -1, -1):
            v = inputs[k][rest]
            val = v if val is None else select(E.eq(i[ax], k), v, val)
        return val

    return compute(shape, body, "stack")


def _split(inputs, attrs, out_type):
    x = inputs[0]
    ax = attrs.axis % x.ndim
    d = x.shape[ax]
    ios = attrs.indices_or_sections
    if isinstance(ios, int):
        sizes = [E.floordiv(d, ios) if not isinstance(d, int) else d // ios] * ios
    else:
        bounds = [0] + list(ios)
        sizes = [b - a for a, b in zip(bounds, bounds[1:])] + [d - bounds[-1]]
    outs = []
    off = 0
    for k, ft in enumerate(out_type.fields):
        computed = list(x.shape)
        computed[ax] = sizes[k]
        shape = out_shape(ft, tuple(computed))

        def body(*i, off=off):
            idx = list(i)
            idx[ax] = i[ax] + off
            return x[tuple(idx)]

        outs.append(compute(shape, body, f"split{k}"))
        off = off + shape[ax]
    return tuple(outs)


def _bcast(inputs, attrs, out_type):
    x = inputs[0]
    target = inputs[1].shape if len(inputs) > 1 else tuple(attrs.shape)
    shape = _shape(out_type, broadcast_shape(x.shape, target))
    return compute(shape, lambda *i: broadcast_read(x, i), "broadcast_to")


def _tile(inputs, attrs, out_type):
    x = inputs[0]
    reps = tuple(attrs.reps)
    n = max(len(reps), x.ndim)
    xs = (1,) * (n - x.ndim) + tuple(x.shape)
    rs = (1,) * (n - len(reps)) + reps
    shape = _shape(out_type, tuple(d * r for d, r in zip(xs, rs)))

    def body(*i):
        idx = []
        for k, d in enumerate(x.shape):
            j = i[n - x.ndim + k]
            idx.append(E.floormod(j, d) if not (isinstance(d, int) and d == 1) else 0)
        return x[tuple(idx)]

    return compute(shape, body, "tile")


def _repeat(inputs, attrs, out_type):
    x = inputs[0]
    ax = attrs.axis % x.ndim
    r = max(attrs.repeats, 1)

    def body(*i):
        idx = list(i)
        idx[ax] = E.floordiv(i[ax], r)
        return x[tuple(idx)]

    computed = list(x.shape)
    computed[ax] = x.shape[ax] * attrs.repeats
    return compute(_shape(out_type, tuple(computed)), body, "repeat")


def _reverse(inputs, attrs, out_type):
    x = inputs[0]
    ax = attrs.axis % x.ndim

    def body(*i):
        idx = list(i)
        idx[ax] = x.shape[ax] - 1 - i[ax]
        return x[tuple(idx)]

    return compute(x.shape, body, "reverse")


def _meshgrid(inputs, attrs, out_type):
    outs = []
    n = len(inputs)
    for k, (t, ft) in enumerate(zip(inputs, out_type.fields)):
        axis = k
        if attrs.indexing == "xy" and n > 1 and k < 2:
            axis = 1 - k

        def body(*i, t=t, axis=axis):
            return t[(i[axis],)] if t.ndim else t[()]

        outs.append(compute(tuple(ft.shape), body, f"meshgrid{k}"))
    return tuple(outs)


def _strided_slice(inputs, attrs, out_type):
    x = inputs[0]
    shape = tuple(x.shape)
    if not all(isinstance(d, int) for d in shape):
        return _strided_slice_dynamic(x, attrs, out_type)
    plan = slice_plan(shape, attrs.begin, attrs.end, attrs.strides, attrs.axes, attrs.slice_mode)
    start = [0] * x.ndim
    step = [1] * x.ndim
    for ax, b, e, s in plan:
        sl, _ = slice_axis(shape[ax], b, e, s)
        start[ax] = sl.start if sl.start is not None else 0
        step[ax] = sl.step or 1

    def body(*i):
        return x[tuple(start[k] + i[k] * step[k] for k in range(x.ndim))]

    return compute(_shape(out_type), body, "strided_slice")


def _strided_slice_dynamic(x, attrs, out_type):
    """strided_slice of a tensor with run-time dims: the ONNX clamping as index expressions."""
    from .lower_dyn import _slice_axis

    big = 2**31 - 1
    nd = x.ndim
    n = len(attrs.axes) if attrs.axes is not None else max(len(attrs.begin), len(attrs.end))
    axes = [a % nd for a in attrs.axes] if attrs.axes is not None else list(range(n))
    starts, lens, steps = [E.index(0)] * nd, list(x.shape), [E.index(1)] * nd
    for k, a in enumerate(axes):
        s = 1 if attrs.slice_mode == "size" else (attrs.strides[k] if k < len(attrs.strides) else 1)
        b = attrs.begin[k] if k < len(attrs.begin) else (0 if s > 0 else big)
        e = attrs.end[k] if k < len(attrs.end) else (big if s > 0 else -big - 1)
        b_e, e_e = E.index(b), E.index(e)
        if attrs.slice_mode == "size":
            bpos = select(b_e < 0, E.max_(b_e + x.shape[a], E.index(0)), b_e)
            e_e = E.index(big) if e < 0 else bpos + e
        st, ln = _slice_axis(x.shape[a], b_e, e_e, E.index(s))
        starts[a], lens[a], steps[a] = st, ln, E.index(s)
    shape = _shape(out_type, tuple(lens))
    return compute(
        shape, lambda *i: x[tuple(starts[k] + i[k] * steps[k] for k in range(nd))], "strided_slice"
    )


def _fix_index(v, n, mode="fast"):
    """An int64 index into an axis of size n. fast: negatives count from the end, anything
    outside [-n, n) is a run-time error; strict: anything outside [0, n) is; clip / wrap: clamp
    or wrap around."""
    v = E.index(v)
    if mode == "wrap":
        return select(E.eq(E.index(n), 0), E.index(0), E.floormod(v, n))
    if mode == "strict":
        return E.check_index(v, n)
    w = select(v < 0, v + n, v)
    if mode == "fast":
        return E.check_index(w, n, v)
    return E.max_(E.min_(w, E.index(n) - 1), E.index(0))


def _take(inputs, attrs, out_type):
    data, idx = inputs
    if attrs.axis is None:
        computed = tuple(idx.shape)
    else:
        ax_ = attrs.axis % data.ndim
        bd_ = attrs.batch_dims % idx.ndim if attrs.batch_dims < 0 else attrs.batch_dims
        computed = tuple(data.shape[:ax_]) + tuple(idx.shape[bd_:]) + tuple(data.shape[ax_ + 1 :])
    shape = _shape(out_type, computed)
    if attrs.axis is None:
        size = 1
        for d in data.shape:
            size = size * d
        return compute(
            shape,
            lambda *i: data[unravel(_fix_index(idx[i], size, attrs.mode), data.shape)],
            "take",
        )
    ax = attrs.axis % data.ndim
    bd = attrs.batch_dims % idx.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    ni = idx.ndim

    def body(*o):
        # o = batch (bd) + data[bd:ax] + idx[bd:] + data[ax+1:]
        batch = o[:bd]
        pre = o[bd:ax]
        ii = o[ax : ax + ni - bd]
        post = o[ax + ni - bd :]
        j = _fix_index(idx[tuple(batch) + tuple(ii)], data.shape[ax], attrs.mode)
        return data[tuple(batch) + tuple(pre) + (j,) + tuple(post)]

    return compute(shape, body, "take")


def _gather(inputs, attrs, out_type):
    data, idx = inputs
    ax = attrs.axis % data.ndim

    def body(*i):
        src = list(i)
        src[ax] = _fix_index(idx[i], data.shape[ax], attrs.mode)
        return data[tuple(src)]

    return compute(idx.shape, body, "gather")


def _gather_nd(inputs, attrs, out_type):
    data, idx = inputs
    m = idx.shape[0] if isinstance(idx.shape[0], int) else attrs.index_rank
    b = attrs.batch_dims
    shape = _shape(
        out_type, tuple(data.shape[:b]) + tuple(idx.shape[1 + b :]) + tuple(data.shape[b + m :])
    )
    ny = idx.ndim - 1 - b

    def body(*o):
        batch = o[:b]
        ys = o[b : b + ny]
        rest = o[b + ny :]
        coords = [
            _fix_index(idx[(k,) + tuple(batch) + tuple(ys)], data.shape[b + k], attrs.index_mode)
            for k in range(m)
        ]
        return data[tuple(batch) + tuple(coords) + tuple(rest)]

    return compute(shape, body, "gather_nd")


def _reverse_sequence(inputs, attrs, out_type):
    data, lens = inputs
    s, b = attrs.seq_axis % data.ndim, attrs.batch_axis % data.ndim

    def body(*i):
        n = E.index(lens[(i[b],)])
        src = list(i)
        src[s] = select(i[s] < n, n - 1 - i[s], i[s])
        return data[tuple(src)]

    return compute(data.shape, body, "reverse_sequence")


def _trilu_body(x, k, upper):
    def body(*i):
        r, c = i[-2], i[-1]
        keep = (c - r >= k) if upper else (c - r <= k)
        zero = E.as_expr(0, x.dtype) if x.dtype != "bool" else Const(False, "bool")
        return select(keep, x[i], zero)

    return body


def _trilu(inputs, attrs, out_type):
    x = inputs[0]
    return compute(x.shape, _trilu_body(x, attrs.k, attrs.upper), "trilu")


def _where(inputs, attrs, out_type):
    c, x, y = inputs
    shape = _shape(out_type, broadcast_shape(c.shape, x.shape, y.shape))

    def body(*i):
        cv = broadcast_read(c, i, shape)
        if cv.dtype != "bool":
            cv = cast("bool", cv)
        return select(cv, broadcast_read(x, i, shape), broadcast_read(y, i, shape))

    return compute(shape, body, "where")


__all__ = ["unravel", "ravel", "reshape_to"]
