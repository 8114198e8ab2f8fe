"""Lowering of nn activations, softmax, normalisation, linear algebra and layout ops
(relay_core/ops/nn_*.py) to tensor expressions. Convolution and pooling: lower_nn_window.py.

float16 / bfloat16 compute in float32 and round once at the end, as the references do; the
normalisations keep their statistics in float64 like the references.
"""

from __future__ import annotations

import math

from ..ir import dtype as _dt
from . import expr as E
from . import tensor as T
from .expr import Const, call, cast, select
from .lower_reduce import _Red, reduce_axes
from .lowering import broadcast_read, out_shape
from .tensor import compute, reduce_axis


def _fdt(dtype: str) -> str:
    return "float64" if dtype == "float64" else "float32"


def _c(v, dtype):
    return Const(float(v), dtype)


# -- activations ----------------------------------------------------------------------------------
def _softplus(v):
    # log(1 + exp(v)) without overflow: max(v, 0) + log1p(exp(-|v|))
    d = v.dtype
    return E.max_(v, _c(0, d)) + call("log1p", call("exp", E.neg(call("abs", v))))


def _sigmoid(v):
    return call("sigmoid", v)


def _act(name, fn):
    def lower(inputs, attrs, out_type):
        x = inputs[0]
        if not E.is_float(x.dtype):  # relu on integers
            return compute(x.shape, lambda *i: fn(x[i], attrs), name)
        f = _fdt(x.dtype)
        return compute(x.shape, lambda *i: cast(x.dtype, fn(cast(f, x[i]), attrs)), name)

    return lower


def _elu(v, alpha):
    d = v.dtype
    return select(v > _c(0, d), v, _c(alpha, d) * call("expm1", E.min_(v, _c(0, d))))


def _gelu(v, a):
    d = v.dtype
    if a.approximate == "tanh":
        inner = _c(math.sqrt(2 / math.pi), d) * (v + _c(0.044715, d) * v * v * v)
        return _c(0.5, d) * v * (_c(1, d) + call("tanh", inner))
    return _c(0.5, d) * v * (_c(1, d) + call("erf", v * _c(1 / math.sqrt(2), d)))


def _zero(v):
    return E.as_expr(0, v.dtype)


_r_relu = _act("nn.relu", lambda v, a: E.max_(v, _zero(v)))
_r_leaky_relu = _act(
    "nn.leaky_relu", lambda v, a: select(v >= _zero(v), v, _c(a.alpha, v.dtype) * v)
)
_r_elu = _act("nn.elu", lambda v, a: _elu(v, a.alpha))
_r_selu = _act("nn.selu", lambda v, a: _c(a.gamma, v.dtype) * _elu(v, a.alpha))
_r_celu = _act(
    "nn.celu",
    lambda v, a: (
        E.max_(v, _zero(v))
        + E.min_(
            _zero(v),
            _c(a.alpha, v.dtype) * call("expm1", E.min_(v, _zero(v)) / _c(a.alpha, v.dtype)),
        )
    ),
)
_r_gelu = _act("nn.gelu", _gelu)
_r_silu = _act("nn.silu", lambda v, a: v * _sigmoid(v))
_r_mish = _act("nn.mish", lambda v, a: v * call("tanh", _softplus(v)))
_r_hard_sigmoid = _act(
    "nn.hard_sigmoid",
    lambda v, a: E.min_(
        E.max_(_c(a.alpha, v.dtype) * v + _c(a.beta, v.dtype), _zero(v)), _c(1, v.dtype)
    ),
)
_r_hard_swish = _act(
    "nn.hard_swish",
    lambda v, a: (
        v * E.min_(E.max_(v / _c(6, v.dtype) + _c(0.5, v.dtype), _zero(v)), _c(1, v.dtype))
    ),
)


def _softplus_beta(v, a):
    d = v.dtype
    bx = _c(a.beta, d) * v
    return select(bx > _c(a.threshold, d), v, _softplus(bx) / _c(a.beta, d))


_r_softplus = _act("nn.softplus", _softplus_beta)
_r_softsign = _act("nn.softsign", lambda v, a: v / (_c(1, v.dtype) + call("abs", v)))
_r_thresholded_relu = _act(
    "nn.thresholded_relu", lambda v, a: select(v > _c(a.alpha, v.dtype), v, _zero(v))
)
_r_shrink = _act(
    "nn.shrink",
    lambda v, a: select(
        v < _c(-a.lambd, v.dtype),
        v + _c(a.bias, v.dtype),
        select(v > _c(a.lambd, v.dtype), v - _c(a.bias, v.dtype), _zero(v)),
    ),
)


def _prelu(inputs, attrs, out_type):
    x, a = inputs
    f = _fdt(x.dtype)

    def slope(i):
        if attrs.axis is None:
            return broadcast_read(a, i)
        ax = attrs.axis % x.ndim
        n = a.shape[0]
        return a[(0 if isinstance(n, int) and n == 1 else i[ax],)]

    def body(*i):
        v = cast(f, x[i])
        return cast(x.dtype, select(v >= _c(0, f), v, v * cast(f, slope(i))))

    return compute(x.shape, body, "prelu")


def _bias_add(inputs, attrs, out_type):
    x, b = inputs
    ax = attrs.axis % x.ndim
    return compute(x.shape, lambda *i: x[i] + b[(i[ax],)], "bias_add")


def _dropout(inputs, attrs, out_type):
    x = inputs[0]
    one = _c(1, x.dtype)
    return compute(x.shape, lambda *i: x[i], "dropout"), compute(
        x.shape, lambda *i: one, "dropout_mask"
    )


# -- softmax family -------------------------------------------------------------------------------
def _softmax_parts(x, axis):
    """(f dtype, max tensor, sum-of-exp tensor) with keepdims shapes along `axis`."""
    f = _fdt(x.dtype)
    n = x.shape[axis]
    kshape = tuple(1 if k == axis else d for k, d in enumerate(x.shape))

    def at(i, j):
        idx = list(i)
        idx[axis] = j
        return tuple(idx)

    def mx(*i):
        r = reduce_axis(n, "k")
        return T.max(cast(f, x[at(i, r)]), r)

    m = compute(kshape, mx, "sm_max")

    def sm(*i):
        r = reduce_axis(n, "k")
        return T.sum(call("exp", cast(f, x[at(i, r)]) - m[i]), r)

    s = compute(kshape, sm, "sm_sum")
    return f, m, s


def _kidx(i, axis):
    idx = list(i)
    idx[axis] = 0
    return tuple(idx)


def _softmax(inputs, attrs, out_type):
    x = inputs[0]
    axis = attrs.axis % max(x.ndim, 1)
    f, m, s = _softmax_parts(x, axis)

    def body(*i):
        k = _kidx(i, axis)
        return cast(x.dtype, call("exp", cast(f, x[i]) - m[k]) / s[k])

    return compute(x.shape, body, "softmax")


def _log_softmax(inputs, attrs, out_type):
    x = inputs[0]
    axis = attrs.axis % max(x.ndim, 1)
    f, m, s = _softmax_parts(x, axis)

    def body(*i):
        k = _kidx(i, axis)
        return cast(x.dtype, cast(f, x[i]) - m[k] - call("log", s[k]))

    return compute(x.shape, body, "log_softmax")


def _hardmax(inputs, attrs, out_type):
    x = inputs[0]
    axis = attrs.axis % max(x.ndim, 1)
    n = x.shape[axis]
    kshape = tuple(1 if k == axis else d for k, d in enumerate(x.shape))

    def am(*i):
        r = reduce_axis(n, "k")
        idx = list(i)
        idx[axis] = r
        return T.argmax(cast(_fdt(x.dtype), x[tuple(idx)]), r)

    a = compute(kshape, am, "hardmax_arg")
    one, zero = E.as_expr(1.0, x.dtype), E.as_expr(0.0, x.dtype)
    return compute(
        x.shape, lambda *i: select(E.eq(a[_kidx(i, axis)], i[axis]), one, zero), "hardmax"
    )


# -- normalisation (statistics in float64, like the references) -----------------------------------
def _stats(x, axes, name):
    """keepdims mean and variance (float64) of x over `axes`."""
    from types import SimpleNamespace

    attrs = SimpleNamespace(axis=tuple(axes), keepdims=True, exclude=False)
    r = _Red(x, attrs)
    n = float(r.count()) if isinstance(r.count(), int) else cast("float64", E.index(r.count()))
    nn = _c(n, "float64") if isinstance(n, float) else n
    s = r.reduce("sum", lambda idx: cast("float64", x[idx]), f"{name}_sum")
    mean = compute(s.shape, lambda *i: s[i] / nn, f"{name}_mean")

    def sq(idx):
        d = (
            cast("float64", x[idx])
            - mean[tuple(0 if k in r.axes else j for k, j in enumerate(idx))]
        )
        return d * d

    ss = r.reduce("sum", sq, f"{name}_ss")
    var = compute(ss.shape, lambda *i: ss[i] / nn, f"{name}_var")
    return r, mean, var


def _kpos(r, i):
    return tuple(0 if k in r.axes else j for k, j in enumerate(i))


def _affine(v, i, gamma, beta, attrs, param_index):
    if getattr(attrs, "scale", True) and gamma is not None:
        v = v * cast("float64", param_index(gamma, i))
    if getattr(attrs, "center", True) and beta is not None:
        v = v + cast("float64", param_index(beta, i))
    return v


def _batch_norm(inputs, attrs, out_type):
    x, gamma, beta, mean, var = inputs
    ax = attrs.axis % x.ndim

    def ch(p, i):
        return p[(i[ax],)]

    def body(*i):
        v = (cast("float64", x[i]) - cast("float64", ch(mean, i))) / call(
            "sqrt", cast("float64", ch(var, i)) + _c(attrs.epsilon, "float64")
        )
        return cast(x.dtype, _affine(v, i, gamma, beta, attrs, ch))

    # TVM's tuple: the running statistics pass through at inference
    return (
        compute(x.shape, body, "batch_norm"),
        compute(mean.shape, lambda *i: mean[i], "batch_norm_mean"),
        compute(var.shape, lambda *i: var[i], "batch_norm_var"),
    )


def _trailing(x, axis):
    return tuple(range(axis % x.ndim, x.ndim))


def _layer_norm(inputs, attrs, out_type):
    x, gamma, beta = inputs
    r, mean, var = _stats(x, _trailing(x, attrs.axis), "ln")

    def body(*i):
        k = _kpos(r, i)
        v = (cast("float64", x[i]) - mean[k]) / call("sqrt", var[k] + _c(attrs.epsilon, "float64"))
        return cast(x.dtype, _affine(v, i, gamma, beta, attrs, broadcast_read))

    return compute(x.shape, body, "layer_norm")


def _rms_norm(inputs, attrs, out_type):
    x, gamma = inputs
    from types import SimpleNamespace

    r = _Red(x, SimpleNamespace(axis=_trailing(x, attrs.axis), keepdims=True, exclude=False))
    n = _c(float(r.count()), "float64")
    ss = r.reduce("sum", lambda idx: cast("float64", x[idx]) * cast("float64", x[idx]), "rms_ss")

    def body(*i):
        k = _kpos(r, i)
        v = cast("float64", x[i]) / call("sqrt", ss[k] / n + _c(attrs.epsilon, "float64"))
        return cast(x.dtype, v * cast("float64", broadcast_read(gamma, i)))

    return compute(x.shape, body, "rms_norm")


def _group_norm_impl(x, gamma, beta, attrs, groups):
    """Statistics per (batch, group); the channel axis may be anywhere."""
    ax = attrs.axis % x.ndim
    c = x.shape[ax]
    g = c if groups is None else groups
    cg = c // g
    rest = [k for k in range(x.ndim) if k not in (0, ax)]
    f = "float64"
    cnt = cg
    for k in rest:
        cnt *= x.shape[k]
    n = _c(float(cnt), f)
    shape_ng = (x.shape[0], g)

    def src(b, grp, rc, rr):
        idx = [None] * x.ndim
        idx[0] = b
        idx[ax] = grp * cg + rc
        for k, v in zip(rest, rr):
            idx[k] = v
        return tuple(idx)

    def mk_sum(fn, name):
        def body(b, grp):
            rc = reduce_axis(cg, "c")
            rr = [reduce_axis(x.shape[k], "r") for k in rest]
            return T.sum(fn(x[src(b, grp, rc, rr)], b, grp), [rc] + rr)

        return compute(shape_ng, body, name)

    s = mk_sum(lambda v, b, grp: cast(f, v), "gn_sum")
    mean = compute(shape_ng, lambda b, grp: s[b, grp] / n, "gn_mean")

    def dev(v, b, grp):
        d = cast(f, v) - mean[b, grp]
        return d * d

    ss = mk_sum(dev, "gn_ss")
    var = compute(shape_ng, lambda b, grp: ss[b, grp] / n, "gn_var")

    def body(*i):
        grp = E.floordiv(i[ax], cg)
        b = i[0]
        v = (cast(f, x[i]) - mean[b, grp]) / call("sqrt", var[b, grp] + _c(attrs.epsilon, f))
        return cast(x.dtype, _affine(v, i, gamma, beta, attrs, lambda p, i: p[(i[ax],)]))

    return compute(x.shape, body, "group_norm")


def _instance_norm(inputs, attrs, out_type):
    x, gamma, beta = inputs
    return _group_norm_impl(x, gamma, beta, attrs, None)


def _group_norm(inputs, attrs, out_type):
    x, gamma, beta = inputs
    return _group_norm_impl(x, gamma, beta, attrs, attrs.num_groups)


def _l2_normalize(inputs, attrs, out_type):
    x = inputs[0]
    from types import SimpleNamespace

    r = _Red(x, SimpleNamespace(axis=tuple(attrs.axis), keepdims=True, exclude=False))
    ss = r.reduce("sum", lambda idx: cast("float64", x[idx]) * cast("float64", x[idx]), "l2n_ss")

    def body(*i):
        s = E.max_(ss[_kpos(r, i)], _c(attrs.eps, "float64"))
        return cast(x.dtype, cast("float64", x[i]) / call("sqrt", s))

    return compute(x.shape, body, "l2_normalize")


def _mvn(inputs, attrs, out_type):
    x = inputs[0]
    r, mean, var = _stats(x, [a % x.ndim for a in attrs.axes], "mvn")

    def body(*i):
        k = _kpos(r, i)
        v = (cast("float64", x[i]) - mean[k]) / (
            call("sqrt", var[k]) + _c(attrs.epsilon, "float64")
        )
        return cast(x.dtype, v)

    return compute(x.shape, body, "mvn")


def _lrn(inputs, attrs, out_type):
    x = inputs[0]
    ax = attrs.axis % x.ndim
    c = x.shape[ax]
    before = (attrs.size - 1) // 2  # the window is [c - before, c - before + size)
    f = "float64"

    def sq(*i):
        r = reduce_axis(attrs.size, "w")
        j = i[ax] - before + r
        idx = list(i)
        idx[ax] = j
        v = cast(f, x[tuple(idx)])
        return T.sum(v * v, r, where=E.logical_and(j >= 0, j < c))

    win = compute(x.shape, sq, "lrn_win")

    def body(*i):
        den = _c(attrs.bias, f) + _c(attrs.alpha / attrs.size, f) * win[i]
        return cast(x.dtype, cast(f, x[i]) / call("pow", den, _c(attrs.beta, f)))

    return compute(x.shape, body, "lrn")


# -- linear algebra (used when no hand-written kernel takes the call) -----------------------------
def _acc_dtype(a: str, b: str) -> str:
    if _dt.is_float(a) and _dt.is_float(b):
        return "float64" if "float64" in (a, b) else "float32"
    return "int64"


def _bidx(d, j):
    """Index into a batch dim of extent d at output index j: 0 where d broadcasts (d == 1, at
    run time when d is not static)."""
    if isinstance(d, int):
        return 0 if d == 1 else j
    return select(E.eq(d, 1), E.index(0), j)


def matmul_te(a, b, ta: bool, tb: bool, out_type, name="matmul"):
    """numpy matmul semantics (1-D promotion, batch broadcast, transposes) as a reduction."""
    acc = _acc_dtype(a.dtype, b.dtype)
    sa, sb = list(a.shape), list(b.shape)
    a1, b1 = len(sa) == 1, len(sb) == 1
    k_dim = sa[-1] if (a1 or not ta) else sa[-2]
    m_dim = None if a1 else (sa[-1] if ta else sa[-2])
    n_dim = None if b1 else (sb[-2] if tb else sb[-1])
    from .lowering import broadcast_shape, out_shape

    batch = broadcast_shape(tuple(sa[:-2]) if not a1 else (), tuple(sb[:-2]) if not b1 else ())
    computed = tuple(batch) + (() if a1 else (m_dim,)) + (() if b1 else (n_dim,))
    oshape = out_shape(out_type, computed)
    nb = len(oshape) - (0 if a1 else 1) - (0 if b1 else 1)

    def body(*o):
        batch = o[:nb]
        rest = o[nb:]
        m = None if a1 else rest[0]
        n = None if b1 else rest[-1]
        k = reduce_axis(k_dim, "k")
        if a1:
            ai = (k,)
        else:
            ab = batch[len(batch) - (len(sa) - 2) :] if len(sa) > 2 else ()
            ab = tuple(_bidx(d, j) for d, j in zip(sa[:-2], ab))
            ai = ab + ((k, m) if ta else (m, k))
        if b1:
            bi = (k,)
        else:
            bb = batch[len(batch) - (len(sb) - 2) :] if len(sb) > 2 else ()
            bb = tuple(_bidx(d, j) for d, j in zip(sb[:-2], bb))
            bi = bb + ((n, k) if tb else (k, n))
        return T.sum(cast(acc, a[ai]) * cast(acc, b[bi]), k)

    s = compute(oshape, body, f"{name}_acc")
    return compute(oshape, lambda *i: _cast_result(s[i], out_type.dtype), name)


def _cast_result(v, dtype):
    if _dt.is_int(dtype) and E.is_float(v.dtype):
        v = call("round", v)
    return cast(dtype, v)


def _dense(inputs, attrs, out_type):
    x, w = inputs
    return matmul_te(x, w, False, True, out_type, "dense")


def _matmul(inputs, attrs, out_type):
    a, b = inputs
    return matmul_te(
        a, b, attrs.transpose_a and a.ndim >= 2, attrs.transpose_b and b.ndim >= 2, out_type
    )


def _batch_matmul(inputs, attrs, out_type):
    a, b = inputs
    return matmul_te(a, b, attrs.transpose_a, attrs.transpose_b, out_type, "batch_matmul")


# -- layout ops -----------------------------------------------------------------------------------
def _pad(inputs, attrs, out_type):
    x = inputs[0]
    if x.ndim == 0:
        return compute((), lambda: x[()], "pad")
    mode = attrs.pad_mode
    width = attrs.pad_width
    # extents from the input (a run-time dim where the type has `?`)
    oshape = out_shape(out_type, tuple(d + b + a for d, (b, a) in zip(x.shape, width)))
    if len(inputs) > 1:
        pv = inputs[1]
        value = pv[(0,) * pv.ndim]
        if pv.dtype != x.dtype:
            value = cast(x.dtype, value)
    else:
        value = cast(x.dtype, Const(float(attrs.pad_value), "float64"))
    # negative widths crop first: the cropped tensor starts at max(-b, 0)
    crop_lo = [max(-b, 0) for b, a in width]
    crop_n = [d - max(-b, 0) - max(-a, 0) for d, (b, a) in zip(x.shape, width)]
    pad_lo = [max(b, 0) for b, a in width]

    def ix(v):  # an index expression from an int or a run-time extent
        return E.index(v) if isinstance(v, int) else v

    def at_least(v, lo: int):
        return max(v, lo) if isinstance(v, int) else E.max_(v, E.index(lo))

    def src_index(j, n):
        """Position in the cropped axis of length n for padded position j (non-constant)."""
        if mode == "edge":
            return E.max_(E.min_(j, ix(n - 1)), E.index(0))
        if mode == "wrap":
            return E.floormod(j, ix(at_least(n, 1)))
        if mode == "reflect":
            period = at_least(2 * (n - 1), 1)
            t = E.floormod(j, ix(period))
            return select(t < n, t, ix(period) - t)
        if mode == "symmetric":
            period = 2 * n
            t = E.floormod(j, ix(at_least(period, 1)))
            return select(t < n, t, ix(period - 1) - t)
        raise NotImplementedError(f"pad_mode {mode}")

    def body(*i):
        idx, inside = [], []
        for k in range(x.ndim):
            j = i[k] - pad_lo[k]
            n = crop_n[k]
            if mode == "constant":
                if tuple(width[k]) != (0, 0):
                    inside.append(E.logical_and(j >= 0, j < n))
                idx.append(j + crop_lo[k])
            elif tuple(width[k]) == (0, 0):
                idx.append(j)
            else:
                idx.append(src_index(j, n) + crop_lo[k])
        v = x[tuple(idx)]
        if mode == "constant" and inside:
            return select(E.all_of(*inside), v, value)
        return v

    return compute(oshape, body, "pad")


def _d2s(to_space: bool):
    def lower(inputs, attrs, out_type):
        from ..ops import nn_util as U

        x = inputs[0]
        ax = U.data_axes(attrs.layout, 2, "")
        bs = attrs.block_size
        # the batch is the input's (a run-time batch: the type's is `?`)
        oshape = tuple(x.shape[k] if k == ax[0] else d for k, d in enumerate(out_type.shape))
        n_, c_, h_, w_ = (x.shape[a] for a in ax)

        def body(*o):
            on, oc, oh, ow = (o[a] for a in ax)
            if to_space:
                occ = c_ // (bs * bs)
                by, bx = E.floormod(oh, bs), E.floormod(ow, bs)
                if attrs.mode == "DCR":
                    ic = (by * bs + bx) * occ + oc
                else:
                    ic = oc * bs * bs + by * bs + bx
                src = (on, ic, E.floordiv(oh, bs), E.floordiv(ow, bs))
            else:
                if attrs.mode == "DCR":
                    blk, ic = E.floordiv(oc, c_), E.floormod(oc, c_)
                else:
                    ic, blk = E.floordiv(oc, bs * bs), E.floormod(oc, bs * bs)
                by, bx = E.floordiv(blk, bs), E.floormod(blk, bs)
                src = (on, ic, oh * bs + by, ow * bs + bx)
            idx = [None] * 4
            for a, v in zip(ax, src):
                idx[a] = v
            return x[tuple(idx)]

        return compute(oshape, body, "depth_to_space" if to_space else "space_to_depth")

    return lower


__all__ = ["matmul_te", "reduce_axes"]
