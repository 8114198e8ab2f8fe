"""Lowering of the signal / ONNX-extra ops: complex.* (complex tensors stored as a trailing
axis of (real, imaginary) — see relay_core/backend/lower.py), dft / stft (direct sums with
twiddles computed in float64; O(n^2), fine for the short transforms models use),
mel_weight_matrix, col2im and tensor_scatter."""

from __future__ import annotations

import math

from . import expr as E
from . import tensor as T
from .expr import Const, call, cast, select
from .lowering import broadcast_read, broadcast_shape, out_shape
from .tensor import compute, reduce_axis, value_of

F64 = "float64"


# -- complex ----------------------------------------------------------------------------------
def _complex_make(inputs, attrs, out_type):
    re, im = inputs
    shape = broadcast_shape(re.shape, im.shape)

    def body(*i):
        j = i[:-1]
        return select(E.eq(i[-1], 0), broadcast_read(re, j), broadcast_read(im, j))

    return compute(tuple(shape) + (2,), body, "complex")


def _part(k):
    def lower(inputs, attrs, out_type):
        z = inputs[0]
        return compute(z.shape[:-1], lambda *i: z[i + (k,)], "complex_part")

    return lower


def _complex_abs(inputs, attrs, out_type):
    z = inputs[0]
    f = out_type.dtype

    def body(*i):
        a, b = z[i + (0,)], z[i + (1,)]
        if f == "float32":  # exact enough in double, no overflow
            a, b = cast(F64, a), cast(F64, b)
            return cast(f, call("sqrt", a * a + b * b))
        a, b = call("abs", a), call("abs", b)
        hi, lo = E.max_(a, b), E.min_(a, b)
        r = lo / select(E.eq(hi, 0.0), Const(1.0, f), hi)
        return select(E.eq(hi, 0.0), Const(0.0, f), hi * call("sqrt", 1.0 + r * r))

    return compute(z.shape[:-1], body, "complex_abs")


# -- dft / stft ------------------------------------------------------------------------------
def _angle(k, t, n):
    """2 pi (k t mod n) / n in float64."""
    m = E.floormod(E.index(k) * t, n)
    return cast(F64, m) * Const(2 * math.pi, F64) / cast(F64, E.index(n))


def _scalar_value(t):
    return value_of(t, (0,) * t.ndim)


def _part_reader(x, ax):
    """read(idx, t, c): part c (0 real, 1 imaginary) of the signal x (trailing axis 1 or 2)
    at index tuple `idx` with position `t` on axis `ax` (an int, or an index expression when
    the axis is only known at run time)."""
    parts = x.shape[-1]  # 2 (complex), 1 (real), or known at run time only
    static = isinstance(parts, int)

    def read(idx, t, c):
        if c == 1 and static and parts != 2:
            return Const(0.0, F64)
        last = c if static or c == 0 else E.min_(E.index(c), parts - 1)  # in bounds
        j = [select(E.eq(ax, d), t, i) for d, i in enumerate(idx[:-1])] + [last]
        v = cast(F64, x[tuple(j)])
        return v if static or c == 0 else select(E.eq(parts, 2), v, Const(0.0, F64))

    return read


def _on_axis(ax, values):
    """values[ax] with `ax` an int or a run-time index expression."""
    out = values[-1]
    for d in range(len(values) - 2, -1, -1):
        out = select(E.eq(ax, d), values[d], out)
    return out


def _combine(re, im, shape, dtype, name):
    return compute(
        tuple(shape[:-1]) + (2,),
        lambda *i: cast(dtype, select(E.eq(i[-1], 0), re[i[:-1]], im[i[:-1]])),
        name,
    )


def _dft(inputs, attrs, out_type):
    x = inputs[0]
    if len(inputs) > 2:  # the axis at run time (ONNX DFT-20)
        v = _scalar_value(inputs[2])
        ax = select(v < 0, v + x.ndim, v)
    else:
        ax = E.index(attrs.axis + x.ndim if attrs.axis < 0 else attrs.axis)
    base = list(x.shape[:-1])
    size = _on_axis(ax, [E.index(d) for d in base])
    if len(inputs) > 1 and not (inputs[1].ndim == 1 and inputs[1].shape[0] == 0):
        n = _scalar_value(inputs[1])
    elif attrs.inverse and attrs.onesided:
        n = E.index(2) * (size - 1)
    else:
        n = size
    read = _part_reader(x, ax)
    dtype = x.dtype

    def with_axis(dim):
        return [select(E.eq(ax, d), dim, E.index(b)) for d, b in enumerate(base)]

    if attrs.inverse and attrs.onesided:  # irfft: Hermitian half spectrum -> real signal
        shape = with_axis(n)
        half = E.floordiv(n, 2) + 1
        ext = E.min_(size, half)

        def irfft(*i):
            k = reduce_axis(ext, "k")
            th = _angle(k, _on_axis(ax, list(i)), n)
            xr, xi = read(i + (0,), k, 0), read(i + (0,), k, 1)
            even_top = E.logical_and(E.eq(E.floormod(n, 2), 0), E.eq(k * 2, n))
            w = select(E.logical_or(E.eq(k, 0), even_top), Const(1.0, F64), Const(2.0, F64))
            xi = select(E.eq(k, 0), Const(0.0, F64), xi)
            return T.sum(w * (xr * call("cos", th) - xi * call("sin", th)), k)

        shape = out_shape(out_type, tuple(shape) + (1,))[:-1]
        s = compute(tuple(shape), irfft, "irfft_sum")
        nf = cast(F64, n)
        return compute(tuple(shape) + (1,), lambda *i: cast(dtype, s[i[:-1]] / nf), "irfft")
    bins = E.floordiv(n, 2) + 1 if attrs.onesided else n
    shape = out_shape(out_type, tuple(with_axis(bins)) + (2,))[:-1]
    ext = E.min_(size, n)
    sign = 1.0 if attrs.inverse else -1.0
    scale = cast(F64, n) if attrs.inverse else None

    def part(c):
        def body(*i):
            t = reduce_axis(ext, "t")
            th = _angle(_on_axis(ax, list(i)), t, n)
            cs, sn = call("cos", th), call("sin", th) * Const(sign, F64)
            xr, xi = read(i + (0,), t, 0), read(i + (0,), t, 1)
            v = xr * cs - xi * sn if c == 0 else xr * sn + xi * cs
            return T.sum(v, t)

        return body

    re = compute(tuple(shape), part(0), "dft_re")
    im = compute(tuple(shape), part(1), "dft_im")
    if scale is not None:
        re0, im0 = re, im
        re = compute(tuple(shape), lambda *i: re0[i] / scale, "idft_re")
        im = compute(tuple(shape), lambda *i: im0[i] / scale, "idft_im")
    return _combine(re, im, tuple(shape) + (2,), dtype, "dft")


def _stft(inputs, attrs, out_type):
    x, step_t = inputs[0], inputs[1]
    window = inputs[2] if len(inputs) > 2 and inputs[2].shape[0] != 0 else None
    if len(inputs) > 3 and not (inputs[3].ndim == 1 and inputs[3].shape[0] == 0):
        length = _scalar_value(inputs[3])
    elif window is not None:
        length = window.shape[0]
    else:
        length = x.shape[1]
    step = _scalar_value(step_t)
    frames = E.max_(E.floordiv(E.index(x.shape[1]) - length, step) + 1, 0)
    bins = E.floordiv(E.index(length), 2) + 1 if attrs.onesided else E.index(length)
    shape = (x.shape[0], frames, bins)
    read = _part_reader(x, 1)

    def part(c):
        def body(b, f, k):
            t = reduce_axis(length, "t")
            pos = f * step + t
            th = _angle(k, t, length)
            cs, sn = call("cos", th), -call("sin", th)
            xr, xi = read((b, 0, 0), pos, 0), read((b, 0, 0), pos, 1)
            v = xr * cs - xi * sn if c == 0 else xr * sn + xi * cs
            if window is not None:
                v = v * cast(F64, window[(t,)])
            return T.sum(v, t)

        return body

    re = compute(shape, part(0), "stft_re")
    im = compute(shape, part(1), "stft_im")
    return _combine(re, im, out_shape(out_type, shape + (2,)), x.dtype, "stft")


def _mel(inputs, attrs, out_type):
    num_mel, dft_len, rate = (_scalar_value(t) for t in inputs[:3])
    lower, upper = (cast(F64, value_of(t, (0,) * t.ndim, t.dtype)) for t in inputs[3:5])

    def to_mel(f):
        return 2595.0 * call("log10", 1.0 + f / 700.0)

    lo, hi = to_mel(lower), to_mel(upper)
    m2 = cast(F64, num_mel + 2)
    fl = cast(F64, dft_len + 1)
    fr = cast(F64, rate)

    def edge(k):
        mel = lo + cast(F64, k) * (hi - lo) / m2
        hz = 700.0 * (call("pow", Const(10.0, F64), mel / 2595.0) - 1.0)
        return cast("int64", call("floor", fl * hz / fr))

    n_spec = E.floordiv(dft_len, 2) + 1

    def body(j, i):
        left, center, right = edge(i), edge(i + 1), edge(i + 2)
        jf = cast(F64, j)
        rise = select(
            E.eq(center, left),
            select(E.eq(j, center), Const(1.0, F64), Const(0.0, F64)),
            select(
                E.logical_and(j >= left, j <= center),
                (jf - cast(F64, left)) / cast(F64, center - left),
                Const(0.0, F64),
            ),
        )
        fall_in = E.logical_and(right > center, E.logical_and(j >= center, j < right))
        v = select(fall_in, (cast(F64, right) - jf) / cast(F64, right - center), rise)
        return cast(attrs.dtype, v)

    return compute(out_shape(out_type, (n_spec, num_mel)), body, "mel_weight_matrix")


# -- col2im -----------------------------------------------------------------------------------
def _col2im(inputs, attrs, out_type):
    x, image_t, block_t = inputs
    nd = image_t.shape[0]
    image = [value_of(image_t, (i,)) for i in range(nd)]
    block = [value_of(block_t, (i,)) for i in range(nd)]
    strides = attrs.strides or (1,) * nd
    dil = attrs.dilations or (1,) * nd
    pads = attrs.pads or (0,) * (2 * nd)
    blocks = [
        E.floordiv(image[i] + (pads[i] + pads[i + nd]) - (dil[i] * (block[i] - 1) + 1), strides[i])
        + 1
        for i in range(nd)
    ]
    kprod = E.index(1)
    for b in block:
        kprod = kprod * b
    chans = E.floordiv(E.index(x.shape[1]), kprod)
    shape = (x.shape[0], chans, *image)

    def body(n, c, *p):
        offs = [reduce_axis(block[i], "o") for i in range(nd)]
        conds = []
        kflat, bflat = c, E.index(0)
        for i in range(nd):
            q = p[i] + pads[i] - offs[i] * dil[i]
            conds += [q >= 0, E.eq(E.floormod(q, strides[i]), 0)]
            b = E.floordiv(q, strides[i])
            conds.append(b < blocks[i])
            kflat = kflat * block[i] + offs[i]
            bflat = bflat * blocks[i] + b
        return T.sum(x[n, kflat, bflat], offs, where=E.all_of(*conds))

    return compute(out_shape(out_type, shape), body, "col2im")


# -- tensor_scatter ---------------------------------------------------------------------------
def _tensor_scatter(inputs, attrs, out_type):
    past, upd = inputs[0], inputs[1]
    idx = inputs[2] if len(inputs) > 2 else None
    ax = attrs.axis % past.ndim
    size = past.shape[ax]
    count = upd.shape[ax]

    def body(*i):
        p = i[ax]
        start = E.index(0) if ax == 0 or idx is None else cast("int64", idx[(i[0],)])
        k = p - start
        if attrs.mode == "circular":
            k = E.floormod(k, size)
        j = list(i)
        j[ax] = k
        inside = E.logical_and(k >= 0, k < count)
        return select(inside, upd[tuple(j)], past[i])

    return compute(past.shape, body, "tensor_scatter")
