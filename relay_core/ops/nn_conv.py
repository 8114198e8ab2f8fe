"""Convolutions: nn.conv1d/2d/3d and nn.conv1d/2d/3d_transpose.

Conventions (TVM Relay attribute names, ONNX / PyTorch semantics):
- `padding`: 1 value, one per spatial axis (symmetric) or all begins then all ends, e.g. 2-D
  (top, left, bottom, right). `auto_pad` "SAME_UPPER" / "SAME_LOWER" / "VALID" (ONNX, TF "SAME")
  overrides it and is resolved from the input shape; the output is ceil(in / stride).
- Layouts name each axis by a letter: data "NCHW" / "NHWC" (NCW, NWC, NCDHW, NDHWC), kernels
  "OIHW" / "HWIO" / "OHWI" ... (transposed convolutions: "IOHW", as ONNX / PyTorch store them).
- Integer operands (ConvInteger: uint8 / int8, possibly mixed) accumulate exactly; `out_dtype`
  (e.g. "int32") sets the result dtype, "" means the data's dtype. Zero points are subtracted by
  the converter before the call.
- Depthwise: groups = channels with weight (C * multiplier, 1, kh, kw); a TF depthwise filter
  (kh, kw, C, multiplier) reshaped to (kh, kw, 1, C * multiplier) is that weight in "HWIO".
- Transposed convolutions take explicit padding only: ONNX ConvTranspose's output_shape /
  auto_pad are resolved into `padding` / `output_padding` by the converter.
The numpy reference is im2col + one matrix product per group (depthwise: a sum over taps).
"""

from __future__ import annotations

import itertools

import numpy as np

from ..errors import OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType
from . import nn_util as U
from . import relations as R
from .factories import random_array
from .nn_util import n_first
from .registry import Kernel, OpDef, OpPattern, Rule, Sample, attrs, declare, register


@attrs
class Conv2DAttrs:
    strides: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1, 1)
    groups: int = 1
    channels: int | None = None  # output channels, checked against the weight when given
    kernel_size: tuple[int, ...] | None = None
    data_layout: str = "NCHW"
    kernel_layout: str = "OIHW"
    out_layout: str = ""  # "" = data_layout
    out_dtype: str = ""  # "" = the data's dtype
    auto_pad: str = "NOTSET"


@attrs
class Conv1DAttrs(Conv2DAttrs):
    strides: tuple[int, ...] = (1,)
    padding: tuple[int, ...] = (0,)
    dilation: tuple[int, ...] = (1,)
    data_layout: str = "NCW"
    kernel_layout: str = "OIW"


@attrs
class Conv3DAttrs(Conv2DAttrs):
    strides: tuple[int, ...] = (1, 1, 1)
    padding: tuple[int, ...] = (0, 0, 0)
    dilation: tuple[int, ...] = (1, 1, 1)
    data_layout: str = "NCDHW"
    kernel_layout: str = "OIDHW"


@attrs
class Conv2DTransposeAttrs:
    strides: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    output_padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    data_layout: str = "NCHW"
    kernel_layout: str = "IOHW"
    out_layout: str = ""
    out_dtype: str = ""


@attrs
class Conv1DTransposeAttrs(Conv2DTransposeAttrs):
    strides: tuple[int, ...] = (1,)
    padding: tuple[int, ...] = (0,)
    output_padding: tuple[int, ...] = (0,)
    dilation: tuple[int, ...] = (1,)
    data_layout: str = "NCW"
    kernel_layout: str = "IOW"


@attrs
class Conv3DTransposeAttrs(Conv2DTransposeAttrs):
    strides: tuple[int, ...] = (1, 1, 1)
    padding: tuple[int, ...] = (0, 0, 0)
    output_padding: tuple[int, ...] = (0, 0, 0)
    dilation: tuple[int, ...] = (1, 1, 1)
    data_layout: str = "NCDHW"
    kernel_layout: str = "IODHW"


# ---------------------------------------------------------------------------------------------
# Shared checks.


def _operands(args, nd: int, attrs, op: str, transpose: bool):
    data, weight = R.tensor(args[0], "data"), R.tensor(args[1], "weight")
    U.check_mixed_dtypes(data, weight, op)
    dax = U.data_axes(attrs.data_layout, nd, op, "data_layout")
    first, second = ("I", "O") if transpose else ("O", "I")
    kax = U.kernel_axes(attrs.kernel_layout, nd, op, first, second)
    oax = U.data_axes(attrs.out_layout or attrs.data_layout, nd, op, "out_layout")
    for t, what, layout in (
        (data, "data", attrs.data_layout),
        (weight, "weight", attrs.kernel_layout),
    ):
        if t.ndim != nd + 2:
            raise OpTypeError(
                f"{op}: {what} must have rank {nd + 2} ({layout}), got shape {tuple(t.shape)}"
            )
    n, c, *sp = (data.shape[a] for a in dax)
    k0, k1, *ks = (weight.shape[a] for a in kax)
    strides = U.ntuple(attrs.strides, nd, "strides", op)
    dilation = U.ntuple(attrs.dilation, nd, "dilation", op)
    U.check_positive(strides, "strides", op)
    U.check_positive(dilation, "dilation", op)
    if attrs.groups < 1:
        raise OpTypeError(f"{op}: groups must be positive, got {attrs.groups}")
    if attrs.kernel_size is not None:
        want = U.ntuple(attrs.kernel_size, nd, "kernel_size", op)
        for a, b in zip(ks, want):
            if R.dim_eq(a, b) is False:
                raise OpTypeError(
                    f"{op}: kernel_size {want} does not match the weight's {tuple(ks)}"
                )
        ks = [k if R.is_int(k) else w for k, w in zip(ks, want)]
    return data, weight, oax, n, c, sp, k0, k1, ks, strides, dilation


def _check_in_channels(c, per_group, groups: int, op: str, what: str = "input channels") -> None:
    if R.is_int(c) and R.is_int(per_group) and per_group * groups != c:
        if groups == 1:
            raise OpTypeError(f"{op}: weight has {per_group} {what} but data has {c} (groups=1)")
        raise OpTypeError(
            f"{op}: weight has {per_group} {what} per group but data has {c} channels "
            f"(groups={groups} needs {per_group * groups})"
        )
    if R.is_int(c) and c % groups:
        raise OpTypeError(f"{op}: data has {c} channels, not divisible by groups={groups}")


def _check_channels(attrs, out_c, op: str):
    if attrs.channels is None:
        return out_c
    if R.is_int(out_c) and out_c != attrs.channels:
        raise OpTypeError(
            f"{op}: channels={attrs.channels} but the weight gives {out_c} output channels"
        )
    return attrs.channels


# ---------------------------------------------------------------------------------------------
# Convolution.


def _conv_rel(nd: int, op: str):
    def rel(args, attrs):
        data, weight, oax, n, c, sp, o, i, ks, strides, dilation = _operands(
            args, nd, attrs, op, transpose=False
        )
        _check_in_channels(c, i, attrs.groups, op)
        if R.is_int(o) and o % attrs.groups:
            raise OpTypeError(
                f"{op}: weight has {o} output channels, not divisible by groups={attrs.groups}"
            )
        o = _check_channels(attrs, o, op)
        pads = U.resolve_pads(attrs.auto_pad, attrs.padding, sp, ks, strides, dilation, op)
        out = [
            U.window_out_dim(
                sp[a], ks[a], strides[a], dilation[a], pads[a], False, attrs.auto_pad, op, a
            )
            for a in range(nd)
        ]
        dtype = U.result_dtype(data.dtype, attrs.out_dtype, op)
        return TensorType(U.place((n, o, *out), oax), dtype)

    return rel


def conv_forward(x, w, strides, dilation, pads, groups: int) -> np.ndarray:
    """Canonical convolution: x (N, C, *sp), w (O, C/groups, *k) -> (N, O, *out)."""
    nd = x.ndim - 2
    kernel = w.shape[2:]
    n, c = x.shape[:2]
    o = w.shape[0]
    plain = all(v == 1 for v in (*kernel, *strides)) and all(p == (0, 0) for p in pads)
    if plain and groups == 1:  # 1x1 convolution: one matrix product
        y = np.matmul(w.reshape(o, c), x.reshape(n, c, -1))
        return y.reshape(n, o, *x.shape[2:])
    xp = U.pad_spatial(x, pads)
    out = [
        (xp.shape[2 + a] - dilation[a] * (kernel[a] - 1) - 1) // strides[a] + 1 for a in range(nd)
    ]
    win = U.windows(xp, kernel, strides, dilation, out)  # (N, C, *out, *k)
    g = groups
    cg, og = c // g, o // g
    if cg == 1 and og <= 4 and g > 1:  # depthwise: a sum over kernel taps beats tiny matmuls
        y = np.zeros((n, g, og, *out), dtype=np.result_type(x, w))
        wr = w.reshape(g, og, *kernel)
        bshape = (1, g, og) + (1,) * nd
        for tap in itertools.product(*(range(k) for k in kernel)):
            xs = win[(Ellipsis, *tap)]  # (N, C, *out)
            y += xs[:, :, None] * wr[(slice(None), slice(None), *tap)].reshape(bshape)
        return y.reshape(n, o, *out)
    lsize = int(np.prod(out))
    ksize = cg * int(np.prod(kernel))
    cols = win.reshape(n, g, cg, *out, *kernel)
    perm = (1, 0, *range(3, 3 + nd), 2, *range(3 + nd, 3 + 2 * nd))
    cols = np.ascontiguousarray(cols.transpose(perm)).reshape(g, n * lsize, ksize)
    wm = w.reshape(g, og, ksize).transpose(0, 2, 1)
    y = np.matmul(cols, wm)  # (G, N*L, Og)
    y = y.reshape(g, n, *out, og)
    y = y.transpose(1, 0, nd + 2, *range(2, nd + 2))  # (N, G, Og, *out)
    return y.reshape(n, o, *out)


def _conv_ref(nd: int, op: str):
    def ref(xs, attrs):
        x, w = xs
        dax = U.data_axes(attrs.data_layout, nd, op)
        kax = U.kernel_axes(attrs.kernel_layout, nd, op)
        oax = U.data_axes(attrs.out_layout or attrs.data_layout, nd, op)
        acc = U.accumulate_dtype(dt.from_numpy(x.dtype), dt.from_numpy(w.dtype))
        xc = U.to_canonical(x, dax).astype(acc, copy=False)
        wc = U.to_canonical(w, kax).astype(acc, copy=False)
        strides = U.ntuple(attrs.strides, nd, "strides", op)
        dilation = U.ntuple(attrs.dilation, nd, "dilation", op)
        pads = U.resolve_pads(
            attrs.auto_pad, attrs.padding, xc.shape[2:], wc.shape[2:], strides, dilation, op
        )
        y = conv_forward(xc, wc, strides, dilation, pads, attrs.groups)
        out_dtype = U.result_dtype(dt.from_numpy(x.dtype), attrs.out_dtype, op)
        return U.from_canonical(U.cast_result(y, out_dtype), oax)

    return ref


# ---------------------------------------------------------------------------------------------
# Transposed convolution.


def _transpose_out_dim(n, k, s, d, pb, pe, op_pad, op, axis):
    if not (R.is_int(n) and R.is_int(k)):
        return Any
    out = (n - 1) * s - pb - pe + d * (k - 1) + op_pad + 1
    if out < 1:
        raise OpTypeError(
            f"{op}: output along spatial axis {axis} would have size {out} "
            f"(input {n}, kernel {k}, stride {s}, dilation {d}, padding ({pb}, {pe}))"
        )
    return out


def _conv_t_rel(nd: int, op: str):
    def rel(args, attrs):
        data, weight, oax, n, c, sp, i, og, ks, strides, dilation = _operands(
            args, nd, attrs, op, transpose=True
        )
        if R.dim_eq(c, i) is False:
            raise OpTypeError(f"{op}: weight has {i} input channels but data has {c}")
        if R.is_int(c) and c % attrs.groups:
            raise OpTypeError(
                f"{op}: data has {c} channels, not divisible by groups={attrs.groups}"
            )
        o = _check_channels(attrs, R.dim_mul(og, attrs.groups), op)
        b, e = U.explicit_padding(attrs.padding, nd, op)
        opad = U.ntuple(attrs.output_padding, nd, "output_padding", op)
        if any(v < 0 for v in opad):
            raise OpTypeError(f"{op}: output_padding must not be negative, got {opad}")
        out = [
            _transpose_out_dim(sp[a], ks[a], strides[a], dilation[a], b[a], e[a], opad[a], op, a)
            for a in range(nd)
        ]
        dtype = U.result_dtype(data.dtype, attrs.out_dtype, op)
        return TensorType(U.place((n, o, *out), oax), dtype)

    return rel


def conv_transpose_forward(x, w, strides, dilation, pads, output_padding, groups: int):
    """Canonical transposed convolution: x (N, C, *sp), w (C, O/groups, *k) -> (N, O, *out)."""
    nd = x.ndim - 2
    n, c, *sp = x.shape
    _, og, *kernel = w.shape
    g = groups
    cg = c // g
    lsize = int(np.prod(sp))
    ksize = int(np.prod(kernel))
    xm = x.reshape(n, g, cg, lsize).transpose(1, 2, 0, 3).reshape(g, cg, n * lsize)
    wm = w.reshape(g, cg, og * ksize).transpose(0, 2, 1)  # (G, Og*K, Cg)
    contrib = np.matmul(wm, xm).reshape(g, og, *kernel, n, *sp)
    # -> (*k, N, G, Og, *sp): one slab per kernel tap, scattered with the stride.
    contrib = contrib.transpose(*range(2, 2 + nd), 2 + nd, 0, 1, *range(3 + nd, 3 + 2 * nd))
    full = [(sp[a] - 1) * strides[a] + dilation[a] * (kernel[a] - 1) + 1 for a in range(nd)]
    outl = [full[a] - pads[a][0] - pads[a][1] + output_padding[a] for a in range(nd)]
    alloc = [max(full[a], pads[a][0] + outl[a]) for a in range(nd)]
    y = np.zeros((n, g, og, *alloc), dtype=contrib.dtype)
    for tap in itertools.product(*(range(k) for k in kernel)):
        idx = tuple(
            slice(
                tap[a] * dilation[a],
                tap[a] * dilation[a] + (sp[a] - 1) * strides[a] + 1,
                strides[a],
            )
            for a in range(nd)
        )
        y[(slice(None), slice(None), slice(None), *idx)] += contrib[tap]
    crop = tuple(slice(pads[a][0], pads[a][0] + outl[a]) for a in range(nd))
    return y[(slice(None), slice(None), slice(None), *crop)].reshape(n, g * og, *outl)


def _conv_t_ref(nd: int, op: str):
    def ref(xs, attrs):
        x, w = xs
        dax = U.data_axes(attrs.data_layout, nd, op)
        kax = U.kernel_axes(attrs.kernel_layout, nd, op, "I", "O")
        oax = U.data_axes(attrs.out_layout or attrs.data_layout, nd, op)
        acc = U.accumulate_dtype(dt.from_numpy(x.dtype), dt.from_numpy(w.dtype))
        xc = U.to_canonical(x, dax).astype(acc, copy=False)
        wc = U.to_canonical(w, kax).astype(acc, copy=False)
        b, e = U.explicit_padding(attrs.padding, nd, op)
        y = conv_transpose_forward(
            xc,
            wc,
            U.ntuple(attrs.strides, nd, "strides", op),
            U.ntuple(attrs.dilation, nd, "dilation", op),
            list(zip(b, e)),
            U.ntuple(attrs.output_padding, nd, "output_padding", op),
            attrs.groups,
        )
        out_dtype = U.result_dtype(dt.from_numpy(x.dtype), attrs.out_dtype, op)
        return U.from_canonical(U.cast_result(y, out_dtype), oax)

    return ref


# ---------------------------------------------------------------------------------------------
# Samples.


def _layout_arrays(x, w, nd, data_layout, kernel_layout, kernel_canon):
    """Transpose canonical sample arrays into the requested layouts."""
    dax = U.data_axes(data_layout, nd, "sample")
    kax = U.layout_axes(kernel_layout, nd, kernel_canon[0], kernel_canon[1], "sample", "kernel")
    return x.transpose(np.argsort(dax)), w.transpose(np.argsort(kax))


def _conv_samples(nd: int):
    sp = {1: (9,), 2: (7, 6), 3: (5, 4, 3)}[nd]
    k3 = (3,) * nd

    def gen(rng):
        def mk(c, o_per, k, groups=1, spatial=sp, n=2, dtype="float32", wdtype=None, **kw):
            x = random_array(rng, (n, c, *spatial), dtype)
            w = random_array(rng, (o_per, c // groups, *k), wdtype or dtype)
            layout = kw.pop("data_layout", U.DATA_LAYOUTS[nd])
            klayout = kw.pop("kernel_layout", U.KERNEL_LAYOUTS[nd])
            x, w = _layout_arrays(x, w, nd, layout, klayout, "OI")
            attrs = dict(groups=groups, data_layout=layout, kernel_layout=klayout, **kw)
            return Sample([x, w], attrs, rtol=1e-4, atol=1e-4)

        yield mk(3, 4, k3)
        yield mk(3, 4, k3, padding=(1,) * nd, strides=(2,) * nd)
        yield mk(4, 6, k3, groups=2, dilation=(2,) * nd, padding=tuple(range(2 * nd)))
        yield mk(4, 4, (1,) * nd, groups=4, spatial=(1,) * nd, n=1)  # depthwise, 1x1
        yield mk(4, 8, k3, groups=4, padding=(1,))  # depthwise, multiplier 2
        yield mk(2, 3, (2,) * nd, auto_pad="SAME_UPPER", strides=(2,) * nd)
        yield mk(2, 3, (2,) * nd, auto_pad="SAME_LOWER", dilation=(2,) * nd)
        yield mk(2, 3, k3, auto_pad="VALID", dtype="float64")
        yield mk(
            3,
            2,
            k3,
            padding=(1,) * nd,
            data_layout=U.CHANNEL_LAST[nd],
            kernel_layout=U.SPATIAL[nd] + "IO",
            channels=2,
            kernel_size=k3,
        )
        yield mk(3, 2, k3, dtype="float16", strides=(1, 2, 1)[:nd])
        yield mk(3, 5, k3, dtype="uint8", wdtype="int8", out_dtype="int32", padding=(1,) * nd)
        yield mk(2, 2, k3, dtype="int8", padding=(1,), out_dtype="int32", groups=2)
        yield mk(2, 3, k3, n=0, padding=(1,))  # empty batch

    return gen


def _conv_t_samples(nd: int):
    sp = {1: (5,), 2: (4, 3), 3: (3, 3, 2)}[nd]
    k3 = (3,) * nd

    def gen(rng):
        def mk(c, og, k, groups=1, n=2, dtype="float32", **kw):
            x = random_array(rng, (n, c, *sp), dtype)
            w = random_array(rng, (c, og, *k), dtype)
            layout = kw.pop("data_layout", U.DATA_LAYOUTS[nd])
            klayout = kw.pop("kernel_layout", "IO" + U.SPATIAL[nd])
            x, w = _layout_arrays(x, w, nd, layout, klayout, "IO")
            attrs = dict(groups=groups, data_layout=layout, kernel_layout=klayout, **kw)
            return Sample([x, w], attrs, rtol=1e-4, atol=1e-4)

        yield mk(3, 2, k3)
        yield mk(3, 2, k3, strides=(2,) * nd, padding=(1,) * nd, output_padding=(1,) * nd)
        yield mk(4, 3, (2,) * nd, groups=2, dilation=(2,) * nd, strides=(3,) * nd)
        yield mk(2, 1, k3, padding=(0, 1, 2, 1, 0, 2)[: 2 * nd], strides=(2,) * nd, n=1)
        yield mk(4, 1, (1,) * nd, groups=4)
        yield mk(2, 3, k3, data_layout=U.CHANNEL_LAST[nd], dtype="float64", channels=3)
        yield mk(2, 2, k3, dtype="int8", out_dtype="int32", strides=(2,) * nd)
        yield mk(2, 3, k3, n=0)  # empty batch

    return gen


# Each op with how it is computed (JAX lax style: a Rule / Kernel names a function of
# relay_core/te or relay_core/backend, imported on first use).
_CONV_KERNELS = {1: "emit_conv1d", 2: "emit_conv2d", 3: "emit_conv3d"}
for _nd in (1, 2, 3):
    _name = f"nn.conv{_nd}d"
    register(
        OpDef(
            _name,
            _conv_rel(_nd, _name),
            _conv_ref(_nd, _name),
            OpPattern.OUT_EWISE_FUSABLE,
            {1: Conv1DAttrs, 2: Conv2DAttrs, 3: Conv3DAttrs}[_nd],
            (2, 2),
            f"{_nd}-D convolution (cross-correlation) of data with weight",
            samples=_conv_samples(_nd),
        )
    )
    declare(
        _name,
        lower=Rule("relay_core.te.lower_nn_window:_conv", _nd),
        kernel=Kernel(f"relay_core.backend.kernels.conv:{_CONV_KERNELS[_nd]}"),
        batch_axis0=n_first("data_layout", "out_layout"),
        grad=Rule("relay_core.ops.grads_nn:conv_rule", _nd),
    )
    _name = f"nn.conv{_nd}d_transpose"
    register(
        OpDef(
            _name,
            _conv_t_rel(_nd, _name),
            _conv_t_ref(_nd, _name),
            OpPattern.OUT_EWISE_FUSABLE,
            {1: Conv1DTransposeAttrs, 2: Conv2DTransposeAttrs, 3: Conv3DTransposeAttrs}[_nd],
            (2, 2),
            f"{_nd}-D transposed convolution (the gradient of conv{_nd}d w.r.t. its data)",
            samples=_conv_t_samples(_nd),
        )
    )
    declare(
        _name,
        lower=Rule("relay_core.te.lower_nn_window:_conv_transpose", _nd),
        kernel=Kernel("relay_core.backend.kernels.conv_transpose:emit_conv_transpose", _nd),
        batch_axis0=n_first("data_layout", "out_layout"),
        grad=Rule("relay_core.ops.grads_nn:conv_transpose_rule", _nd),
    )
