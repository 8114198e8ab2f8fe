"""Pooling: max / avg / lp pools (1-3 D), max pool with argmax, global, adaptive, max unpool.

Window attributes follow nn_conv: `padding` (1, nd or 2*nd values), `auto_pad` (ONNX / TF SAME),
layouts "NCHW" / "NHWC" .... `ceil_mode` rounds the output size up, but a window must start
inside the input or its left padding (PyTorch / ONNX). Average pooling divides by the number of
input elements in the window, or with `count_include_pad` by the window clipped to the padded
input (never counting the extra ceil-mode area), as PyTorch does. lp pooling is
(sum |x|^p)^(1/p) over the window (ONNX LpPool; padding adds nothing).
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType, TupleType
from . import nn_util as U
from . import relations as R
from .factories import check_kind, random_array
from .nn_util import n_first
from .registry import Kernel, OpDef, OpPattern, Rule, Sample, declare, register


def _pool_attrs(name: str, nd: int, extra: list) -> type:
    """A frozen attrs dataclass for an nd-dimensional window op."""
    base = [
        ("pool_size", tuple[int, ...], dataclasses.field(default=(1,) * nd)),
        ("strides", tuple[int, ...], dataclasses.field(default=(1,) * nd)),
        ("dilation", tuple[int, ...], dataclasses.field(default=(1,) * nd)),
        ("padding", tuple[int, ...], dataclasses.field(default=(0,) * nd)),
        ("layout", str, dataclasses.field(default=U.DATA_LAYOUTS[nd])),
        ("out_layout", str, dataclasses.field(default="")),
        ("ceil_mode", bool, dataclasses.field(default=False)),
        ("auto_pad", str, dataclasses.field(default="NOTSET")),
    ]
    cls = dataclasses.make_dataclass(name, base + extra, frozen=True)
    cls.__module__ = __name__
    return cls


POOL_ATTRS: dict[tuple[str, int], type] = {}  # (kind, nd) -> attrs class


_EXTRA = {
    "max": [],
    "avg": [("count_include_pad", bool, dataclasses.field(default=False))],
    "lp": [("p", float, dataclasses.field(default=2.0))],
    "argmax": [("storage_order", int, dataclasses.field(default=0))],
}


def _geometry(x_shape_canon, attrs, nd: int, op: str):
    """(kernel, strides, dilation, pads, out dims) with dims possibly Any."""
    sp = x_shape_canon[2:]
    k = U.ntuple(attrs.pool_size, nd, "pool_size", op)
    s = U.ntuple(attrs.strides, nd, "strides", op)
    d = U.ntuple(attrs.dilation, nd, "dilation", op)
    for v, name in ((k, "pool_size"), (s, "strides"), (d, "dilation")):
        U.check_positive(v, name, op)
    pads = U.resolve_pads(attrs.auto_pad, attrs.padding, sp, k, s, d, op)
    ceil = attrs.ceil_mode and attrs.auto_pad == "NOTSET"
    out = [
        U.window_out_dim(sp[a], k[a], s[a], d[a], pads[a], ceil, attrs.auto_pad, op, a)
        for a in range(nd)
    ]
    k = tuple(U.fit_window(sp[a], k[a], d[a], pads[a], out[a]) for a in range(nd))
    return k, s, d, pads, out


def _pool_rel(nd: int, op: str, kind: str):
    def rel(args, attrs):
        x = R.tensor(args[0])
        check_kind(x, "float" if kind in ("avg", "lp") else "numeric", op)
        ax = U.data_axes(attrs.layout, nd, op)
        oax = U.data_axes(attrs.out_layout or attrs.layout, nd, op, "out_layout")
        if x.ndim != nd + 2:
            raise OpTypeError(
                f"{op}: data must have rank {nd + 2} ({attrs.layout}), got {tuple(x.shape)}"
            )
        canon = [x.shape[a] for a in ax]
        *_, out = _geometry(canon, attrs, nd, op)
        t = TensorType(U.place((canon[0], canon[1], *out), oax), x.dtype)
        if kind == "argmax":
            if attrs.storage_order not in (0, 1):
                raise OpTypeError(f"{op}: storage_order must be 0 or 1, got {attrs.storage_order}")
            if attrs.storage_order == 1 and ax[:2] != (0, 1):
                raise OpTypeError(f"{op}: storage_order=1 needs a channel-first layout")
            return TupleType((t, TensorType(t.shape, "int64")))
        return t

    return rel


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _padded(x, kernel, strides, dilation, pads, out, fill):
    """x padded by `pads` plus the extra end padding ceil mode needs; also that extra per axis."""
    sp = x.shape[2:]
    extra = [
        max(
            0,
            (out[a] - 1) * strides[a]
            + dilation[a] * (kernel[a] - 1)
            + 1
            - (sp[a] + pads[a][0] + pads[a][1]),
        )
        for a in range(len(sp))
    ]
    full = [(pads[a][0], pads[a][1] + extra[a]) for a in range(len(sp))]
    return U.pad_spatial(x, full, fill), extra


def pool_forward(
    x, kind: str, kernel, strides, dilation, pads, out, count_include_pad=False, p=2.0
):
    """Canonical pooling of x (N, C, *sp) into (N, C, *out) with resolved integer pads."""
    taps = list(itertools.product(*(range(k) for k in kernel)))
    if kind == "max":
        xp, _ = _padded(x, kernel, strides, dilation, pads, out, _lowest(x.dtype))
        win = U.windows(xp, kernel, strides, dilation, out)
        y = np.array(win[(Ellipsis, *taps[0])])
        for tap in taps[1:]:
            np.maximum(y, win[(Ellipsis, *tap)], out=y)
        return y
    src = np.abs(x) ** p if kind == "lp" else x
    xp, extra = _padded(src, kernel, strides, dilation, pads, out, 0)
    win = U.windows(xp, kernel, strides, dilation, out)
    y = np.zeros(win.shape[: 2 + len(out)], dtype=x.dtype)
    for tap in taps:
        y += win[(Ellipsis, *tap)]
    if kind == "lp":
        return y ** (1.0 / p)
    sp = x.shape[2:]
    mask = np.pad(np.ones(sp, x.dtype), pads, constant_values=1 if count_include_pad else 0)
    mask = np.pad(mask, [(0, e) for e in extra])
    count = U.windows(mask, kernel, strides, dilation, out).sum(
        axis=tuple(range(len(out), 2 * len(out)))
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return y / count


def _pool_ref(nd: int, op: str, kind: str):
    def ref(xs, attrs):
        x = xs[0]
        ax = U.data_axes(attrs.layout, nd, op)
        oax = U.data_axes(attrs.out_layout or attrs.layout, nd, op)
        xc = U.to_canonical(x, ax)
        k, s, d, pads, out = _geometry(xc.shape, attrs, nd, op)
        if kind == "argmax":
            return _argmax_pool(x, xc, ax, oax, attrs, k, s, d, pads, out)
        if kind != "max":
            xc = U.to_float(xc)
        y = pool_forward(
            xc,
            kind,
            k,
            s,
            d,
            pads,
            out,
            getattr(attrs, "count_include_pad", False),
            getattr(attrs, "p", 2.0),
        )
        return U.from_canonical(y.astype(x.dtype, copy=False), oax)

    return ref


def _argmax_pool(x, xc, ax, oax, attrs, k, s, d, pads, out):
    """Max values and the flat index of each maximum into x (first one on ties)."""
    if attrs.storage_order == 1:  # ONNX column-major: spatial axes flattened last-to-first
        n, c, *sp = xc.shape
        idx = np.arange(xc.size, dtype=np.int64).reshape(n, c, *sp[::-1])
        idx = idx.transpose(0, 1, *range(xc.ndim - 1, 1, -1))
    else:
        idx = U.to_canonical(np.arange(x.size, dtype=np.int64).reshape(x.shape), ax)
    vp, _ = _padded(xc, k, s, d, pads, out, _lowest(xc.dtype))
    ip, _ = _padded(idx, k, s, d, pads, out, -1)
    vw = U.windows(vp, k, s, d, out)
    iw = U.windows(ip, k, s, d, out)
    lead = vw.shape[: 2 + len(out)]
    taps = int(np.prod(k))
    vals = vw.reshape(*lead, taps)
    if vals.size == 0:
        return U.from_canonical(np.zeros(lead, xc.dtype), oax), U.from_canonical(
            np.zeros(lead, np.int64), oax
        )
    pick = np.argmax(vals, axis=-1)[..., None]
    y = np.take_along_axis(vals, pick, -1)[..., 0]
    ind = np.take_along_axis(iw.reshape(*lead, taps), pick, -1)[..., 0]
    return U.from_canonical(y, oax), U.from_canonical(ind, oax)


def _pool_samples(nd: int, kind: str):
    sp = {1: (9,), 2: (7, 6), 3: (5, 4, 5)}[nd]

    def gen(rng):
        def mk(shape=sp, dtype="float32", layout=None, n=2, **kw):
            x = random_array(rng, (n, 3, *shape), dtype)
            layout = layout or U.DATA_LAYOUTS[nd]
            x = x.transpose(np.argsort(U.data_axes(layout, nd, "sample")))
            return Sample([x], dict(layout=layout, **kw))

        two, three = (2,) * nd, (3,) * nd
        yield mk(pool_size=two, strides=two)
        yield mk(pool_size=three, strides=two, padding=(1,), ceil_mode=True)
        yield mk(
            pool_size=three, strides=(1, 2, 3)[:nd], padding=tuple(range(2 * nd)), ceil_mode=True
        )
        yield mk(pool_size=two, dilation=two, padding=(1,) * nd)
        yield mk(pool_size=three, strides=two, auto_pad="SAME_UPPER")
        yield mk(pool_size=two, strides=three, auto_pad="SAME_LOWER", dtype="float64")
        yield mk(pool_size=three, auto_pad="VALID", layout=U.CHANNEL_LAST[nd])
        yield mk(shape=(1,) * nd, pool_size=(1,) * nd)
        yield mk(n=0, pool_size=(2,) * nd, padding=(1,))  # empty batch
        # one ceil-mode window longer than the padded input (HF EfficientNet's pooler)
        yield mk(pool_size=(64,) * nd, strides=(64,) * nd, padding=(1,), ceil_mode=True)
        if kind == "avg":
            yield mk(
                pool_size=three, strides=two, padding=(1,), count_include_pad=True, ceil_mode=True
            )
        if kind == "lp":
            yield mk(pool_size=two, p=3.0, padding=(1,))
        if kind in ("max", "argmax"):
            yield mk(pool_size=two, strides=two, dtype="int8", ceil_mode=True)
        if kind == "argmax":
            yield mk(pool_size=three, strides=two, padding=(1,), storage_order=1)
        else:
            yield mk(pool_size=two, strides=two, dtype="float16")

    return gen


_POOL_DOC = {
    "max": "max pooling",
    "avg": "average pooling",
    "lp": "lp pooling: (sum |x|^p)^(1/p) over each window",
    "argmax": "max pooling that also returns int64 flat indices of the maxima into the input "
    "(ONNX MaxPool's Indices: row-major over the input's own layout, or column-major spatial "
    "with storage_order=1)",
}


def _grads_nn(rule: str, *args) -> Rule:
    return Rule(f"relay_core.ops.grads_nn:{rule}", *args)


def _declare_pool(name: str, te: str, kernel: str, kind: str, nd: int, grad: Rule) -> None:
    """How a pooling op of `kind` ("max", "avg", "lp") over `nd` spatial axes is computed (JAX
    lax style: a Rule / Kernel names a function of relay_core/te/lower_nn_window.py or
    relay_core/backend/kernels/pool.py, imported on first use), with a kernel per batch element
    for a run-time batch, and its gradient."""
    declare(
        name,
        lower=Rule(f"relay_core.te.lower_nn_window:{te}", nd, kind),
        kernel=Kernel(f"relay_core.backend.kernels.pool:{kernel}", kind, nd),
        batch_axis0=n_first("layout", "out_layout"),
        grad=grad,
    )


# Each op with how it is computed; a kind's gradient rule is named in the table (grads_nn.py).
for _nd in (1, 2, 3):
    for _kind, _fmt, _grad in (
        ("max", "nn.max_pool{}d", "max_pool_rule"),
        ("avg", "nn.avg_pool{}d", "avg_pool_rule"),
        ("lp", "nn.lp_pool{}d", "lp_pool_rule"),
        ("argmax", "nn.max_pool{}d_with_argmax", "max_pool_argmax_rule"),
    ):
        _name = _fmt.format(_nd)
        _cls = _pool_attrs(f"{_kind.capitalize()}Pool{_nd}DAttrs", _nd, _EXTRA[_kind])
        POOL_ATTRS[_kind, _nd] = _cls
        register(
            OpDef(
                _name,
                _pool_rel(_nd, _name, _kind),
                _pool_ref(_nd, _name, _kind),
                OpPattern.OUT_EWISE_FUSABLE if _kind != "argmax" else OpPattern.OPAQUE,
                _cls,
                (1, 1),
                _POOL_DOC[_kind],
                samples=_pool_samples(_nd, _kind),
            )
        )
        if _kind == "argmax":  # rules of its own, and no batch_axis0
            declare(
                _name,
                lower=Rule("relay_core.te.lower_nn_window:_argmax_pool", _nd),
                kernel=Kernel("relay_core.backend.kernels.pool:emit_argmax_pool", _nd),
                grad=_grads_nn(_grad, _nd),
            )
        else:
            _declare_pool(_name, "_pool", "emit_pool", _kind, _nd, _grads_nn(_grad, _nd))


# ---------------------------------------------------------------------------------------------
# Global and adaptive pooling.


def _spatial_attrs(name: str, nd: int, fields: list) -> type:
    """A frozen attrs dataclass: `fields` plus layout (channel-first default) and out_layout."""
    layout = [
        ("layout", str, dataclasses.field(default=U.DATA_LAYOUTS[nd])),
        ("out_layout", str, dataclasses.field(default="")),
    ]
    cls = dataclasses.make_dataclass(name, fields + layout, frozen=True)
    cls.__module__ = __name__
    return cls


def _global_attrs(nd: int, kind: str) -> type:
    extra = [("p", float, dataclasses.field(default=2.0))] if kind == "lp" else []
    return _spatial_attrs(f"Global{kind.capitalize()}Pool{nd}DAttrs", nd, extra)


def _adaptive_attrs(nd: int) -> type:
    # None keeps that axis' input size.
    size = ("output_size", tuple[int | None, ...], dataclasses.field(default=(1,) * nd))
    return _spatial_attrs(f"AdaptivePool{nd}DAttrs", nd, [size])


def _spatial_rel(nd, op, kind, out_dims):
    def rel(args, attrs):
        x = R.tensor(args[0])
        check_kind(x, "numeric" if kind == "max" else "float", op)
        ax = U.data_axes(attrs.layout, nd, op)
        oax = U.data_axes(attrs.out_layout or attrs.layout, nd, op, "out_layout")
        if x.ndim != nd + 2:
            raise OpTypeError(
                f"{op}: data must have rank {nd + 2} ({attrs.layout}), got {tuple(x.shape)}"
            )
        n, c, *sp = (x.shape[a] for a in ax)
        return TensorType(U.place((n, c, *out_dims(sp, attrs, op)), oax), x.dtype)

    return rel


def _global_ref(nd, op, kind):
    def ref(xs, attrs):
        x = xs[0]
        ax = U.data_axes(attrs.layout, nd, op)
        oax = U.data_axes(attrs.out_layout or attrs.layout, nd, op)
        xc = U.to_canonical(x, ax)
        axes = tuple(range(2, nd + 2))
        if kind == "max":
            y = xc.max(axis=axes, keepdims=True)
        elif kind == "avg":
            y = U.to_f64(xc).mean(axis=axes, keepdims=True)
        else:
            y = (np.abs(U.to_f64(xc)) ** attrs.p).sum(axis=axes, keepdims=True) ** (1.0 / attrs.p)
        return U.from_canonical(y.astype(x.dtype, copy=False), oax)

    return ref


def _adaptive_out(nd):
    def out(sp, attrs, op):
        size = U.ntuple(attrs.output_size, nd, "output_size", op)
        if any(v is not None and v < 1 for v in size):
            raise OpTypeError(f"{op}: output_size must be positive, got {size}")
        return [d if v is None else v for d, v in zip(sp, size)]

    return out


def adaptive_1d(x: np.ndarray, axis: int, out: int, kind: str) -> np.ndarray:
    """PyTorch adaptive pooling along one axis: bin i covers [floor(i*n/o), ceil((i+1)*n/o))."""
    n = x.shape[axis]
    i = np.arange(out)
    starts = (i * n) // out
    ends = -((-(i + 1) * n) // out)
    if n == 0 or (out == n and np.all(ends - starts == 1)):
        return x
    # reduceat over [s0, e0, s1, e1, ...]: even slots are the bins. One extra element makes the
    # end index n valid; no bin includes it.
    idx = np.empty(2 * out, dtype=np.intp)
    idx[0::2] = starts
    idx[1::2] = ends
    xe = np.concatenate([x, x.take([n - 1], axis=axis)], axis=axis)
    fn = np.maximum if kind == "max" else np.add
    y = fn.reduceat(xe, idx, axis=axis).take(np.arange(0, 2 * out, 2), axis=axis)
    if kind == "avg":
        shape = [1] * x.ndim
        shape[axis] = out
        y = y / (ends - starts).reshape(shape)
    return y


def _adaptive_ref(nd, op, kind):
    def ref(xs, attrs):
        x = xs[0]
        ax = U.data_axes(attrs.layout, nd, op)
        oax = U.data_axes(attrs.out_layout or attrs.layout, nd, op)
        y = U.to_canonical(x, ax)
        if kind == "avg":
            y = U.to_float(y)
        for a, o in enumerate(_adaptive_out(nd)(y.shape[2:], attrs, op)):
            y = adaptive_1d(y, 2 + a, o, kind)
        return U.from_canonical(np.asarray(y).astype(x.dtype, copy=False), oax)

    return ref


def _spatial_samples(nd, adaptive: bool, kind: str):
    sp = {1: (9,), 2: (7, 6), 3: (5, 4, 3)}[nd]

    def gen(rng):
        dtypes = ["float32", "float64"] + (["int32"] if kind == "max" else ["float16"])
        for dtype in dtypes:
            for layout in (U.DATA_LAYOUTS[nd], U.CHANNEL_LAST[nd]):
                for shape in (sp, (1,) * nd):
                    x = random_array(rng, (2, 3, *shape), dtype)
                    x = x.transpose(np.argsort(U.data_axes(layout, nd, "sample")))
                    if not adaptive:
                        extra = {"p": 3.0} if kind == "lp" else {}
                        yield Sample([x], {"layout": layout, **extra})
                        continue
                    for size in [(1,) * nd, (3, 2, 4)[:nd], (None, 5, 2)[:nd] if nd > 1 else (4,)]:
                        yield Sample([x], {"layout": layout, "output_size": size})

    return gen


# Each op with how it is computed, as for the windowed pools above.
for _nd in (1, 2, 3):
    _acls = _adaptive_attrs(_nd)
    for _kind, _grad in (
        ("max", "global_max_rule"),
        ("avg", "global_avg_rule"),
        ("lp", "global_lp_rule"),
    ):
        _name = f"nn.global_{_kind}_pool{_nd}d"
        register(
            OpDef(
                _name,
                _spatial_rel(_nd, _name, _kind, lambda sp, a, op: [1] * len(sp)),
                _global_ref(_nd, _name, _kind),
                OpPattern.OUT_EWISE_FUSABLE,
                _global_attrs(_nd, _kind),
                (1, 1),
                f"global {_kind} pooling over the spatial axes (kept as size 1)",
                samples=_spatial_samples(_nd, False, _kind),
            )
        )
        _declare_pool(_name, "_global", "emit_global_pool", _kind, _nd, _grads_nn(_grad, _nd))
    for _kind in ("max", "avg"):
        _name = f"nn.adaptive_{_kind}_pool{_nd}d"
        register(
            OpDef(
                _name,
                _spatial_rel(_nd, _name, _kind, _adaptive_out(_nd)),
                _adaptive_ref(_nd, _name, _kind),
                OpPattern.OUT_EWISE_FUSABLE,
                _acls,
                (1, 1),
                f"adaptive {_kind} pooling to output_size (PyTorch bins)",
                samples=_spatial_samples(_nd, True, _kind),
            )
        )
        _declare_pool(
            _name,
            "_adaptive",
            "emit_adaptive_pool",
            _kind,
            _nd,
            _grads_nn("adaptive_max_rule", _nd)
            if _kind == "max"
            else _grads_nn("separable_rule", _name, _nd, "layout"),
        )


# ---------------------------------------------------------------------------------------------
# Max unpooling (ONNX MaxUnpool / torch max_unpool with global flat indices).


def _unpool_attrs(nd: int) -> type:
    cls = dataclasses.make_dataclass(
        f"MaxUnpool{nd}DAttrs",
        [
            ("pool_size", tuple[int, ...], dataclasses.field(default=(1,) * nd)),
            ("strides", tuple[int, ...], dataclasses.field(default=(1,) * nd)),
            ("padding", tuple[int, ...], dataclasses.field(default=(0,) * nd)),
            # Spatial output size; default (in - 1) * stride - pads + pool_size.
            ("output_size", tuple[int, ...] | None, dataclasses.field(default=None)),
            ("layout", str, dataclasses.field(default=U.DATA_LAYOUTS[nd])),
        ],
        frozen=True,
    )
    cls.__module__ = __name__
    return cls


def _unpool_out(nd, sp, attrs, op):
    if attrs.output_size is not None:
        return list(U.ntuple(attrs.output_size, nd, "output_size", op))
    k = U.ntuple(attrs.pool_size, nd, "pool_size", op)
    s = U.ntuple(attrs.strides, nd, "strides", op)
    b, e = U.explicit_padding(attrs.padding, nd, op)
    return [(n - 1) * s[a] - b[a] - e[a] + k[a] if R.is_int(n) else Any for a, n in enumerate(sp)]


def _unpool_rel(nd, op):
    def rel(args, attrs):
        x, ind = R.tensor(args[0], "data"), R.tensor(args[1], "indices")
        if not dt.is_int(ind.dtype):
            raise OpTypeError(f"{op}: indices must be integers, got {ind.dtype}")
        ax = U.data_axes(attrs.layout, nd, op)
        if x.ndim != nd + 2:
            raise OpTypeError(f"{op}: data must have rank {nd + 2}, got {tuple(x.shape)}")
        R.broadcast_shapes(x.shape, ind.shape)
        n, c, *sp = (x.shape[a] for a in ax)
        return TensorType(U.place((n, c, *_unpool_out(nd, sp, attrs, op)), ax), x.dtype)

    return rel


def _unpool_ref(nd, op):
    def ref(xs, attrs):
        x, ind = xs
        ax = U.data_axes(attrs.layout, nd, op)
        n, c, *sp = (x.shape[a] for a in ax)
        shape = U.place((n, c, *_unpool_out(nd, sp, attrs, op)), ax)
        y = np.zeros(int(np.prod(shape)), dtype=x.dtype)
        flat = np.broadcast_to(ind, x.shape).ravel()
        if flat.size and (flat.min() < 0 or flat.max() >= y.size):
            raise EvalError(f"{op}: index {flat.max()} out of range for an output of shape {shape}")
        y[flat] = x.ravel()
        return y.reshape(shape)

    return ref


def _unpool_samples(nd):
    def gen(rng):
        sp = {1: (8,), 2: (6, 4), 3: (4, 4, 2)}[nd]
        argmax = _pool_ref(nd, "sample", "argmax")
        for k, s, pad in [((2,) * nd, (2,) * nd, (0,)), ((3,) * nd, (2,) * nd, (1,))]:
            x = random_array(rng, (2, 3, *sp), "float32")
            pa = POOL_ATTRS["argmax", nd](pool_size=k, strides=s, padding=pad)
            vals, ind = argmax([x], pa)
            yield Sample(
                [vals, ind], {"pool_size": k, "strides": s, "padding": pad, "output_size": sp}
            )
            if pad == (0,):  # the default output size reproduces the input's only here
                yield Sample([vals, ind], {"pool_size": k, "strides": s, "padding": pad})

    return gen


for _nd in (1, 2, 3):
    _name = f"nn.max_unpool{_nd}d"
    _ucls = _unpool_attrs(_nd)
    register(
        OpDef(
            _name,
            _unpool_rel(_nd, _name),
            _unpool_ref(_nd, _name),
            OpPattern.OPAQUE,
            _ucls,
            (2, 2),
            "scatter data into zeros at flat indices (as from max_pool_with_argmax)",
            samples=_unpool_samples(_nd),
        )
    )
    declare(
        _name,
        lower=Rule("relay_core.backend.lower_loops:_max_unpool", _nd),
        grad=_grads_nn("unpool_rule", _nd),
    )
