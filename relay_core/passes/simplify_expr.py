"""SimplifyExpr: algebraic simplification by rules written as data.

Each rule is `rule(pattern, replacement, "what it does")`; the lists below are combined with
`+` and run by one RewriteDriver. A replacement returns None when the rule does not apply;
the driver keeps a rewrite only if the result has exactly the matched node's type, so a rule
like x*1 -> x never drops a broadcast.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import dtype as dt
from ..ir.expr import Constant, Expr, call
from ..ir.module import IRModule
from ..ir.types import TensorType
from ._util import ensure_typed, is_layout_free, map_functions, type_of
from .manager import Pass, PassContext, register_pass
from .pattern import RewriteDriver, all_equal, const, op, rule, tuple_, tuple_get, wild

X, Y, W = wild("x"), wild("y"), wild("w")
ONE = const("one", all_equal(1))
ZERO = const("zero", all_equal(0))


def _static(e: Expr) -> TensorType | None:
    t = type_of(e)
    return t if isinstance(t, TensorType) and t.is_static else None


def _dtype(e: Expr) -> str | None:
    t = type_of(e)
    return t.dtype if isinstance(t, TensorType) else None


def _ndim(e: Expr) -> int | None:
    t = type_of(e)
    return t.ndim if isinstance(t, TensorType) else None


# -- arithmetic identities --------------------------------------------------------------------
ARITH = [
    # x*1 -> x (also 1*x, and a constant tensor of ones)
    rule(op("multiply", X, ONE, commutative=True), lambda x, **_: x, "x*1 -> x"),
    # x+0 -> x (also 0+x)
    rule(op("add", X, ZERO, commutative=True), lambda x, **_: x, "x+0 -> x"),
    # x-0 -> x
    rule(op("subtract", X, ZERO), lambda x, **_: x, "x-0 -> x"),
    # bias_add(x, 0) -> x (a zero-initialised bias, as the ONNX exporter drops it)
    rule(op("nn.bias_add", X, ZERO), lambda x, **_: x, "bias_add(x, 0) -> x"),
    # x/1 -> x
    rule(op("divide", X, ONE), lambda x, **_: x, "x/1 -> x"),
    # -(-x) -> x
    rule(op("negative", op("negative", X)), lambda x, **_: x, "neg(neg(x)) -> x"),
    # 0-x -> -x
    rule(op("subtract", ZERO, X), lambda x, **_: call("negative", x), "0-x -> neg(x)"),
    # x + (-y) -> x - y
    rule(
        op("add", X, op("negative", Y)), lambda x, y, **_: call("subtract", x, y), "x+neg(y) -> x-y"
    ),
]


# -- layout and shape -------------------------------------------------------------------------
def _perm(axes, ndim: int) -> tuple[int, ...]:
    if axes is None or len(axes) == 0:
        return tuple(reversed(range(ndim)))
    return tuple(a + ndim if a < 0 else a for a in axes)


def _compose_transposes(root, x, inner, **_):
    n = _ndim(x)
    if n is None:
        return None
    a, b = _perm(inner.attrs.axes, n), _perm(root.attrs.axes, n)
    c = tuple(a[j] for j in b)  # out[j] = x[a[b[j]]]
    return x if c == tuple(range(n)) else call("transpose", x, axes=c)


def _identity_transpose(root, x, **_):
    n = _ndim(x)
    if n is None or _perm(root.attrs.axes, n) != tuple(range(n)):
        return None
    return x


def _reshape_of_reshape(root, x, **_):
    t = _static(root)
    if t is None:
        return None
    return call("reshape", x, newshape=t.shape)


def _identity_reshape(root, x, **_):
    # Types equal and static: the reshape moves nothing.
    return x if _static(x) is not None and type_of(x) == type_of(root) else None


def _pointwise(od) -> bool:
    from ..ops.registry import OpPattern

    return od.pattern in (OpPattern.ELEMWISE, OpPattern.BROADCAST)


def _sink_reshape(root, **_):
    """f(reshape(a), reshape(b), scalar constants) -> reshape(f(a, b, ...)): a, b of one static
    shape, their reshapes of the result's shape. An anchor (dense, conv) then meets the
    elementwise ops in its own shape and fuses them (GPT-2's Conv1D: dense, reshape to
    (batch, seq, units), GELU's tanh chain, reshape back)."""
    t = _static(root)
    if t is None or not root.args or not is_layout_free(root):
        return None
    inner, args = None, []
    for a in root.args:
        ta = _static(a)
        if ta is None or ta.dtype != _dtype(a):
            return None
        if type(a) is Constant and a.data.size == 1:
            args.append(Constant(np.asarray(a.data).reshape(())))
            continue
        is_reshape = getattr(getattr(a, "op", None), "name", None) == "reshape"
        if not is_reshape or ta.shape != t.shape:
            return None
        src = _static(a.args[0])
        if src is None or (inner is not None and src.shape != inner):
            return None
        inner = src.shape
        args.append(a.args[0])
    if inner is None or inner == t.shape:
        return None
    return call("reshape", call(root.op.name, *args, **_attrs(root)), newshape=t.shape)


def _same_cast(root, x, **_):
    return x if _dtype(x) == root.attrs.dtype else None


def _exact_roundtrip_cast(root, x, inner, **_):
    # cast(cast(x, wider), x.dtype) -> x when the wider type holds every value of x exactly.
    src, mid = _dtype(x), inner.attrs.dtype
    if src is None or root.attrs.dtype != src:
        return None
    if (
        dt.is_float(src)
        and dt.is_float(mid)
        and src in dt.NATIVE_DTYPES
        and mid in dt.NATIVE_DTYPES
    ):
        ok = np.finfo(dt.to_numpy(mid)).bits >= np.finfo(dt.to_numpy(src)).bits
    elif dt.is_int(src) and dt.is_int(mid) and src in dt.NATIVE_DTYPES and mid in dt.NATIVE_DTYPES:
        a, b = np.iinfo(dt.to_numpy(src)), np.iinfo(dt.to_numpy(mid))
        ok = b.min <= a.min and a.max <= b.max
    else:
        ok = False
    return x if ok else None


def _squeeze_expand(root, x, inner, **_):
    a, k = inner.attrs.axis, inner.attrs.num_newaxis
    n = _ndim(inner)
    sq = root.attrs.axis
    if n is None or sq is None:
        return None
    a = a + n - k + 1 if a < 0 else a
    want = tuple(range(a, a + k))
    got = tuple(sorted(s + n if s < 0 else s for s in sq))
    return x if got == want else None


def _expand_squeeze(root, x, inner, **_):
    sq = inner.attrs.axis
    n = _ndim(x)
    if n is None or sq is None or root.attrs.num_newaxis != len(sq) or len(sq) != 1:
        return None
    s = sq[0] + n if sq[0] < 0 else sq[0]
    m = _ndim(inner)
    a = root.attrs.axis + m + 1 if root.attrs.axis < 0 else root.attrs.axis
    return x if a == s else None


def _take_one(root) -> tuple[int, int] | None:
    """(axis, index) of a take of one constant index along an axis of a static input."""
    a, idx = root.attrs, root.args[1]
    n = _ndim(root.args[0])
    if type(idx) is not Constant or idx.data.ndim != 0 or a.axis is None or n is None:
        return None
    if a.batch_dims or not np.issubdtype(idx.data.dtype, np.integer):
        return None
    return a.axis % n, int(idx.data)


def _retake(root, x, axis: int):
    return call("take", x, root.args[1], axis=axis, batch_dims=0, mode=root.attrs.mode)


def _take_of_transpose(root, x, inner, **_):
    """take(transpose(x, p), i, axis=a) -> transpose(take(x, i, axis=p[a]), q): the one slice
    read where it lies, so that a transpose shared by takes of its slices (ViT's q, k, v out of
    one (3, L, N, E) copy) is not materialised."""
    t, n = _take_one(root), _ndim(x)
    if t is None or n is None:
        return None
    b = _perm(inner.attrs.axes, n)[t[0]]
    q = [r - (r > b) for j, r in enumerate(_perm(inner.attrs.axes, n)) if j != t[0]]
    out = _retake(root, x, b)
    return out if q == sorted(q) else call("transpose", out, axes=q)


def _take_of_squeeze(root, x, inner, **_):
    # take(squeeze(x, S), i, axis=a) -> squeeze(take(x, i, axis=a'), S')
    t, tx = _take_one(root), _static(x)
    if t is None or tx is None:
        return None
    m = len(tx.shape)
    sq = inner.attrs.axis
    sq = [k for k, d in enumerate(tx.shape) if d == 1] if sq is None else [s % m for s in sq]
    kept = [k for k in range(m) if k not in sq]
    b = kept[t[0]]
    return call("squeeze", _retake(root, x, b), axis=[s - (s > b) for s in sq])


def _take_of_expand_dims(root, x, inner, **_):
    # take(expand_dims(x, e, k), i, axis=a) -> expand_dims(take(x, i, axis=a'), e', k) (a not new)
    t, m = _take_one(root), _ndim(x)
    if t is None or m is None:
        return None
    k = inner.attrs.num_newaxis
    e = inner.attrs.axis % (m + 1)
    a = t[0]
    if e <= a < e + k:
        if t[1] != 0:
            return None
        return x if k == 1 else call("expand_dims", x, axis=e, num_newaxis=k - 1)
    b = a if a < e else a - k
    return call("expand_dims", _retake(root, x, b), axis=e - (b < e), num_newaxis=k)


def _split_part(root, x, inner, **_):
    """split(x)[i] -> strided_slice(x): each part read where it lies by its consumers (GPT-2's
    q, k, v out of the qkv dense: the split was a copy of the whole product)."""
    from ..ops.transform_concat import split_sizes

    tx = _static(x)
    if tx is None:
        return None
    axis = inner.attrs.axis % len(tx.shape)
    sizes = split_sizes(tx.shape[axis], inner.attrs.indices_or_sections)
    start = sum(sizes[: root.index])
    end = start + sizes[root.index]
    return call("strided_slice", x, begin=(start,), end=(end,), strides=(1,), axes=(axis,))


SHAPE = [
    # split(x)[i] -> strided_slice(x)
    rule(
        tuple_get(op("split", X, name="inner")),
        _split_part,
        "part of a split -> strided_slice",
    ),
    # take(transpose(x), i) -> transpose(take(x, i)): the slice read in place
    rule(
        op("take", op("transpose", X, name="inner"), wild()),
        _take_of_transpose,
        "take of transpose -> transpose of take",
    ),
    # take(squeeze(x), i) -> squeeze(take(x, i))
    rule(
        op("take", op("squeeze", X, name="inner"), wild()),
        _take_of_squeeze,
        "take of squeeze -> squeeze of take",
    ),
    # take(expand_dims(x), i) -> expand_dims(take(x, i))
    rule(
        op("take", op("expand_dims", X, name="inner"), wild()),
        _take_of_expand_dims,
        "take of expand_dims -> expand_dims of take",
    ),
    # transpose(transpose(x, a), b) -> transpose(x, a∘b), or x when that is the identity
    rule(
        op("transpose", op("transpose", X, name="inner")),
        _compose_transposes,
        "transpose of transpose -> one transpose",
    ),
    # transpose(x, identity) -> x
    rule(op("transpose", X), _identity_transpose, "identity transpose -> x"),
    # reshape(reshape(x)) -> reshape(x) (static result shape)
    rule(op("reshape", op("reshape", X)), _reshape_of_reshape, "reshape of reshape -> reshape"),
    # reshape(x) to its own static shape -> x
    rule(op("reshape", X), _identity_reshape, "reshape to the same shape -> x"),
    # cast(x, x.dtype) -> x
    rule(op("cast", X), _same_cast, "cast to the same dtype -> x"),
    # cast(cast(x, wider), dtype(x)) -> x
    rule(
        op("cast", op("cast", X, name="inner")), _exact_roundtrip_cast, "exact cast round trip -> x"
    ),
    # squeeze(expand_dims(x, a), a) -> x
    rule(
        op("squeeze", op("expand_dims", X, name="inner")),
        _squeeze_expand,
        "squeeze of expand_dims -> x",
    ),
    # expand_dims(squeeze(x, a), a) -> x
    rule(
        op("expand_dims", op("squeeze", X, name="inner")),
        _expand_squeeze,
        "expand_dims of squeeze -> x",
    ),
    # (a, b, c).1 -> b
    rule(
        tuple_get(tuple_(any_fields=True, name="tup")),
        lambda root, tup, **_: tup.fields[root.index],
        "tuple projection of a tuple -> field",
    ),
]


# -- consecutive strided slices -----------------------------------------------------------------
def _norm_slices(attrs, shape) -> list[tuple[int, int, int]] | None:
    """Per-axis (start, stop, step) in Python slice semantics, or None when not static."""
    nd = len(shape)
    b, e = attrs.begin, attrs.end
    s = attrs.strides or (1,)
    axes = getattr(attrs, "axes", None)
    mode = getattr(attrs, "slice_mode", "end")
    if b is None or e is None:
        return None
    axes = list(range(len(b))) if axes is None else [a + nd if a < 0 else a for a in axes]
    out = [(0, d, 1) for d in shape]
    for i, ax in enumerate(axes):
        st = s[i] if i < len(s) else s[-1]
        bi, ei = b[i], e[i] if i < len(e) else shape[ax]
        if mode == "size":
            if ei < 0:
                ei = shape[ax]
            else:
                ei = bi + ei
            st = 1
        out[ax] = slice(bi, ei, st).indices(shape[ax])
    return out


def _merge_slices(root, x, inner, **_):
    tx = _static(x)
    ti = _static(inner)
    if tx is None or ti is None:
        return None
    first = _norm_slices(inner.attrs, tx.shape)
    second = _norm_slices(root.attrs, ti.shape)
    if first is None or second is None:
        return None
    begin, end, strides = [], [], []
    for (s1, _e1, k1), (s2, e2, k2), n in zip(first, second, tx.shape):
        count = len(range(s2, e2, k2))
        start, step = s1 + s2 * k1, k1 * k2
        if step <= 0:
            return None
        begin.append(start if count else 0)
        end.append(min(start + count * step, n) if count else 0)
        strides.append(step)
    return call("strided_slice", x, begin=tuple(begin), end=tuple(end), strides=tuple(strides))


SLICES = [
    # x[a:b:s][c:d:t] -> x[a+c*s : ... : s*t] (static shapes, positive steps)
    rule(
        op("strided_slice", op("strided_slice", X, name="inner")),
        _merge_slices,
        "consecutive strided_slices -> one",
    ),
]


# -- folding into convolutions and dense layers -------------------------------------------------
def _channel_scale(scale: np.ndarray, out_ndim: int, axis: int) -> np.ndarray | None:
    """`scale` as a 1-D per-channel vector if it broadcasts along `axis` only, else None."""
    if scale.ndim > out_ndim:
        return None
    full = scale.reshape((1,) * (out_ndim - scale.ndim) + scale.shape)
    for i, d in enumerate(full.shape):
        if i != axis and d != 1:
            return None
    return full.reshape(-1)


def _conv_out_axis(conv) -> tuple[int, int] | None:
    """(channel axis of the conv output, output-channel axis of its kernel)."""
    a = conv.attrs
    layout = a.out_layout or a.data_layout
    if "C" not in layout or "O" not in a.kernel_layout:
        return None
    if a.out_dtype not in ("", _dtype(conv.args[1])):
        return None
    return layout.index("C"), a.kernel_layout.index("O")


def _scaled_weight(w: np.ndarray, vec: np.ndarray, axis: int) -> Constant:
    shape = [1] * w.ndim
    shape[axis] = -1
    if vec.size == 1:
        vec = np.broadcast_to(vec, (w.shape[axis],))
    return Constant((w * vec.reshape(shape)).astype(w.dtype))


def _fold_scale_into_conv(root, conv, w, s, **_):
    axes = _conv_out_axis(conv)
    if axes is None or not dt.is_float(_dtype(conv) or ""):
        return None
    vec = _channel_scale(s.data, _ndim(conv), axes[0])
    if vec is None:
        return None
    new_w = _scaled_weight(w.data, vec, axes[1])
    return call(conv.op.name, conv.args[0], new_w, **_attrs(conv))


def _fold_scale_into_dense(root, dense, w, s, **_):
    if not dt.is_float(_dtype(dense) or ""):
        return None
    vec = _channel_scale(s.data, _ndim(dense), _ndim(dense) - 1)
    if vec is None:
        return None
    return call("nn.dense", dense.args[0], _scaled_weight(w.data, vec, 0), **_attrs(dense))


def _bias_for(root, layer, b, axis_of):
    axis = axis_of(layer)
    if axis is None:
        return None
    vec = _channel_scale(b.data, _ndim(layer), axis)
    t = type_of(layer)
    dim = t.shape[axis] if isinstance(t, TensorType) and axis < t.ndim else None
    if vec is None or not isinstance(dim, int) or vec.size != dim:
        return None
    nd = _ndim(layer)
    return call("nn.bias_add", layer, Constant(vec.astype(b.data.dtype)), axis=axis - nd)


def _conv_bias(root, conv, b, **_):
    return _bias_for(root, conv, b, lambda c: (_conv_out_axis(c) or (None,))[0])


def _dense_bias(root, dense, b, **_):
    return _bias_for(root, dense, b, lambda d: _ndim(d) - 1)


def _conv_batch_norm(root, conv, w, gamma, beta, mean, var, bn, **_):
    axes = _conv_out_axis(conv)
    a = bn.attrs
    if axes is None or (a.axis + _ndim(conv)) % _ndim(conv) != axes[0]:
        return None
    g = gamma.data if a.scale else np.ones_like(gamma.data)
    scale = g / np.sqrt(var.data + np.asarray(a.epsilon, var.data.dtype))
    shift = (beta.data if a.center else 0) - mean.data * scale
    new_w = _scaled_weight(w.data, scale.astype(w.data.dtype), axes[1])
    new_conv = call(conv.op.name, conv.args[0], new_w, **_attrs(conv))
    nd = _ndim(conv)
    return call("nn.bias_add", new_conv, Constant(shift.astype(w.data.dtype)), axis=axes[0] - nd)


def _zero_pad_widths(pad) -> list[tuple[int, int]] | None:
    """The (before, after) widths of a constant zero `nn.pad`, None for any other pad."""
    a = pad.attrs
    if a.pad_mode != "constant" or any(b < 0 or e < 0 for b, e in a.pad_width):
        return None
    if len(pad.args) > 1:
        v = pad.args[1]
        if not (isinstance(v, Constant) and v.data.size == 1 and float(v.data.reshape(-1)[0]) == 0):
            return None
    elif float(a.pad_value) != 0:
        return None
    return [(int(b), int(e)) for b, e in a.pad_width]


def _pad_into_conv(root, pad, w, **_):
    # conv(pad(x, zeros on spatial axes), W) -> conv(x, W) with the widths added to its padding
    # (tf2onnx writes TF's explicit ZeroPadding2D + "VALID" stride-2 convolutions this way;
    # Keras MobileNetV2 has them itself): one pass over the input instead of a padded copy.
    from ..ops.nn_util import resolve_pads

    widths = _zero_pad_widths(pad)
    a = root.attrs
    layout, klayout = a.data_layout, a.kernel_layout
    xt, wt = type_of(pad), _static(w)
    if widths is None or not isinstance(xt, TensorType) or wt is None or len(layout) != len(widths):
        return None
    sp = [i for i, c in enumerate(layout) if c not in "NC"]
    if any(widths[i] != (0, 0) for i, c in enumerate(layout) if c in "NC"):
        return None
    ks = [wt.shape[i] for i, c in enumerate(klayout) if c not in "OI"]
    nd = len(sp)
    if len(ks) != nd or not all(isinstance(xt.shape[i], int) for i in sp):
        return None
    try:
        pads = resolve_pads(
            a.auto_pad, a.padding, [xt.shape[i] for i in sp], ks, a.strides, a.dilation, "conv"
        )
    except Exception:  # noqa: BLE001 - an attribute the type checker would refuse: leave it
        return None
    if any(p is None for p in pads):
        return None
    begins = [pb + widths[i][0] for (pb, _), i in zip(pads, sp)]
    ends = [pe + widths[i][1] for (_, pe), i in zip(pads, sp)]
    attrs = _attrs(root)
    attrs.update(padding=tuple(begins + ends), auto_pad="NOTSET")
    return call(root.op.name, pad.args[0], w, **attrs)


def _live_taps(n: int, k: int, s: int, d: int, pb: int, out: int) -> tuple[int, int]:
    """[first, last] window taps along an axis that some output position reads inside the
    input (n positions, window k, stride s, dilation d, leading pad pb, `out` outputs)."""
    live = [t for t in range(k) if t * d - pb < n and (out - 1) * s + t * d - pb >= 0]
    return (live[0], live[-1]) if live else (0, k - 1)


def _conv_dead_taps(root, x, w, **_):
    # conv(x, W) whose window rows / columns at the edges only ever read padding (DeepLabV3's
    # ASPP: dilation 36 on a 28x28 plane reads 1 of its 9 taps, 24 reads 3 of 9 on 4 rows only)
    # -> conv(x, W cut to the live taps, the padding cut with it): the same sums, no zeros.
    from ..ops.nn_util import resolve_pads

    a = root.attrs
    layout, klayout = a.data_layout, a.kernel_layout
    xt, yt = _static(x), _static(root)
    if xt is None or yt is None or (a.out_layout or layout) != layout:
        return None
    sp = [i for i, c in enumerate(layout) if c not in "NC"]
    ksp = [i for i, c in enumerate(klayout) if c not in "OI"]
    ks = [w.data.shape[i] for i in ksp]
    if len(ks) != len(sp):
        return None
    n_in = [xt.shape[i] for i in sp]
    try:
        pads = resolve_pads(a.auto_pad, a.padding, n_in, ks, a.strides, a.dilation, "conv")
    except Exception:  # noqa: BLE001 - an attribute the type checker would refuse: leave it
        return None
    if any(p is None for p in pads):
        return None
    nd = len(sp)
    per_axis = lambda v: tuple(v) * nd if len(tuple(v)) == 1 else tuple(v)  # noqa: E731
    strides, dilation = per_axis(a.strides), per_axis(a.dilation)
    if len(strides) != nd or len(dilation) != nd:
        return None
    cut, begins, ends = [], [], []
    for n, k, st, d, (pb, pe), i in zip(n_in, ks, strides, dilation, pads, sp):
        lo, hi = _live_taps(n, k, st, d, pb, yt.shape[i])
        cut.append(slice(lo, hi + 1))
        begins.append(pb - lo * d)
        ends.append(pe - (k - 1 - hi) * d)
    if all(c.stop - c.start == k for c, k in zip(cut, ks)) or min(begins + ends) < 0:
        return None
    index = [slice(None)] * w.data.ndim
    for i, c in zip(ksp, cut):
        index[i] = c
    attrs = _attrs(root)
    kernel = tuple(c.stop - c.start for c in cut)
    attrs.update(padding=tuple(begins + ends), auto_pad="NOTSET")
    if attrs.get("kernel_size") is not None:
        attrs["kernel_size"] = kernel
    return call(root.op.name, x, Constant(np.ascontiguousarray(w.data[tuple(index)])), **attrs)


def _matmul_to_dense(root, x, w, **_):
    # x @ W with a constant 2-D W is dense(x, W^T): the form the backend fuses with a bias.
    a = root.attrs
    if a.transpose_a or w.data.ndim != 2 or _ndim(x) is None or _ndim(x) < 1:
        return None
    wt = w if a.transpose_b else Constant(np.ascontiguousarray(w.data.T))
    return call("nn.dense", x, wt, out_dtype=a.out_dtype)


def _attrs(c) -> dict:
    from ..ops.registry import attrs_to_dict

    return attrs_to_dict(c.attrs)


def _is_conv(d) -> bool:
    # Any forward convolution (nn.conv1d/2d/3d): a kernel_layout with an O axis, no transpose.
    a = d.attrs
    return (
        a is not None
        and hasattr(a, "kernel_layout")
        and hasattr(a, "groups")
        and not hasattr(a, "output_padding")
        and d.name.startswith("nn.conv")
    )


CONV = op(_is_conv, X, const("w"), name="conv")
DENSE = op("nn.dense", X, const("w"), name="dense")
FOLD = [
    # conv(x, W) -> conv(x, W[live taps]) when edge taps only ever read padding
    rule(CONV, _conv_dead_taps, "conv(x, W) -> conv(x, W without taps that read only padding)"),
    # conv(pad(x), W) -> conv(x, W) with the pad in the convolution's padding
    rule(
        op(_is_conv, op("nn.pad", any_args=True, name="pad"), const("w")),
        _pad_into_conv,
        "conv(zero-pad(x), W) -> conv(x, W, padding + pad widths)",
    ),
    # matmul(x, W) -> dense(x, W^T) (W a constant matrix)
    rule(op("nn.matmul", X, const("w")), _matmul_to_dense, "matmul(x, W) -> dense(x, W^T)"),
    # conv(x, W) * s -> conv(x, W*s) (s constant, per output channel)
    rule(
        op("multiply", CONV, const("s"), commutative=True),
        _fold_scale_into_conv,
        "conv(x, W) * s -> conv(x, W*s)",
    ),
    # dense(x, W) * s -> dense(x, W*s) (s constant, per unit)
    rule(
        op("multiply", DENSE, const("s"), commutative=True),
        _fold_scale_into_dense,
        "dense(x, W) * s -> dense(x, W*s)",
    ),
    # batch_norm(conv(x, W), constants) -> bias_add(conv(x, W'), b')
    rule(
        tuple_get(
            op(
                "nn.batch_norm",
                CONV,
                const("gamma"),
                const("beta"),
                const("mean"),
                const("var"),
                name="bn",
            ),
            0,
        ),
        _conv_batch_norm,
        "batch_norm(conv(x, W)) -> bias_add(conv(x, W'), b')",
    ),
    # conv(x, W) + b -> bias_add(conv(x, W), b) (b constant, per output channel)
    rule(
        op("add", op(_is_conv, any_args=True, name="conv"), const("b"), commutative=True),
        _conv_bias,
        "conv + per-channel constant -> bias_add",
    ),
    # dense(x, W) + b -> bias_add(dense(x, W), b)
    rule(
        op("add", op("nn.dense", any_args=True, name="dense"), const("b"), commutative=True),
        _dense_bias,
        "dense + per-unit constant -> bias_add",
    ),
]

DEFAULT_RULES = ARITH + SHAPE + SLICES + FOLD


@register_pass
@dataclass
class SimplifyExpr(Pass):
    """Rewrite with the algebraic rules of this module (DEFAULT_RULES) to a fixed point.

    >>> mod = SimplifyExpr()(mod)              # x*1, transpose(transpose(x)), ... removed
    """

    max_iterations: int = 8
    opt_level = 1

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return _rewrite(mod, ctx, DEFAULT_RULES, self.max_iterations, "SimplifyExpr.stats")


def _rewrite(mod: IRModule, ctx: PassContext, rules, max_iterations: int, stats: str) -> IRModule:
    """Every function of `mod` rewritten with `rules` to a fixed point; the rule counts go to
    ctx.config[stats]."""
    mod = ensure_typed(mod)
    driver = RewriteDriver(rules, max_iterations=max_iterations)
    out = map_functions(mod, lambda gv, f: driver.rewrite_function(f, mod))
    ctx.config.setdefault(stats, {}).update(driver.stats)
    return out


# Run apart from (after) the rules above and FoldScaleAxis: there `dense(x, W) * s` becomes a
# second dense with W*s when the dense has other uses (a sunk GELU's x * 0.5 would copy it).
SINK = [
    # f(reshape(a), reshape(b), scalars) -> reshape(f(a, b, scalars)) (f elementwise)
    rule(op(_pointwise, any_args=True), _sink_reshape, "elementwise of reshapes -> reshape"),
    rule(op("reshape", op("reshape", X)), _reshape_of_reshape, "reshape of reshape -> reshape"),
    rule(op("reshape", X), _identity_reshape, "reshape to the same shape -> x"),
]


@register_pass
@dataclass
class SinkReshape(Pass):
    """Move reshapes below the elementwise ops that read them (the SINK rules), so that a
    matrix product or convolution meets its elementwise consumers in its own shape and fuses
    them as an epilogue.

    >>> mod = SinkReshape()(mod)   # tanh(reshape(dense(x, W))) -> reshape(tanh(dense(x, W)))
    """

    max_iterations: int = 8
    opt_level = 2

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return _rewrite(mod, ctx, SINK, self.max_iterations, "SinkReshape.stats")


__all__ = [
    "SimplifyExpr",
    "SinkReshape",
    "DEFAULT_RULES",
    "ARITH",
    "SHAPE",
    "SLICES",
    "FOLD",
    "SINK",
]
