"""Ops no other family has: det, col2im, nn.deformable_conv2d, tensor_scatter (KV-cache
writes)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType
from . import relations as R
from .factories import check_kind, random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


# -- det -----------------------------------------------------------------------------------------
def _det_rel(args, attrs):
    t = R.tensor(args[0])
    check_kind(t, "float", "det")
    if t.ndim < 2 or R.dim_eq(t.shape[-1], t.shape[-2]) is False:
        raise OpTypeError(f"det needs square matrices (..., M, M), got {t.shape}")
    return TensorType(t.shape[:-2], t.dtype)


def _det_ref(xs, attrs):
    x = xs[0]
    cd = np.float64 if x.dtype == np.float64 else np.float32
    return np.asarray(np.linalg.det(x.astype(cd))).astype(x.dtype)


def _det_samples(rng):
    yield Sample([random_array(rng, (3, 3), "float32")])
    yield Sample([random_array(rng, (2, 4, 4), "float64")])
    yield Sample([random_array(rng, (0, 2, 2), "float32")])


register(
    OpDef(
        "det",
        _det_rel,
        _det_ref,
        OpPattern.OPAQUE,
        None,
        (1, 1),
        "determinant of the square matrices in the last two axes",
        samples=_det_samples,
    )
)
declare("det", decompose=Rule("relay_core.ops.grads_misc:_det"))


# -- col2im ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Col2ImAttrs:
    strides: tuple[int, ...] | None = None
    dilations: tuple[int, ...] | None = None
    pads: tuple[int, ...] | None = None  # all begins, then all ends


def _col2im_params(image, block, attrs):
    nd = len(image)
    if len(block) != nd:
        raise EvalError("col2im: image_shape and block_shape differ in length")
    strides = attrs.strides or (1,) * nd
    dil = attrs.dilations or (1,) * nd
    pads = attrs.pads or (0,) * (2 * nd)
    blocks = []
    for i in range(nd):
        span = dil[i] * (block[i] - 1) + 1
        n = (image[i] + pads[i] + pads[i + nd] - span) // strides[i] + 1
        if n < 1:
            raise EvalError(f"col2im: no block fits axis {i}")
        blocks.append(n)
    return nd, strides, dil, pads, blocks


def _col2im_rel(args, attrs):
    t = R.tensor(args[0])
    image, block = R.tensor(args[1], "image_shape"), R.tensor(args[2], "block_shape")
    if t.ndim != 3:
        raise OpTypeError(f"col2im: input must be (N, C * prod(block), L), got {t.shape}")
    if image.ndim != 1 or not isinstance(image.shape[0], int):
        raise OpTypeError("col2im: image_shape must be a 1-D tensor of static length")
    if not dt.is_int(image.dtype) or not dt.is_int(block.dtype):
        raise OpTypeError("col2im: image_shape and block_shape must be integers")
    return TensorType((t.shape[0], Any) + (Any,) * image.shape[0], t.dtype)


def _col2im_ref(xs, attrs):
    x = xs[0]
    image = tuple(int(v) for v in np.asarray(xs[1]).reshape(-1))
    k = tuple(int(v) for v in np.asarray(xs[2]).reshape(-1))
    nd, strides, dil, pads, blocks = _col2im_params(image, k, attrs)
    n, ck, cols_n = x.shape
    if ck % int(np.prod(k)) or cols_n != int(np.prod(blocks)):
        raise EvalError(f"col2im: input {x.shape} does not hold blocks {k} of {blocks}")
    c = ck // int(np.prod(k))
    cols = x.reshape(n, c, *k, *blocks)
    padded = [image[i] + pads[i] + pads[i + nd] for i in range(nd)]
    out = np.zeros((n, c, *padded), dtype=x.dtype)
    for off in itertools.product(*(range(s) for s in k)):
        idx = tuple(
            slice(off[i] * dil[i], off[i] * dil[i] + strides[i] * (blocks[i] - 1) + 1, strides[i])
            for i in range(nd)
        )
        out[(slice(None), slice(None), *idx)] += cols[(slice(None), slice(None), *off)]
    crop = tuple(slice(pads[i], pads[i] + image[i]) for i in range(nd))
    return out[(slice(None), slice(None), *crop)].copy()


def _col2im_samples(rng):
    def ints(*v):
        return np.array(v, np.int64)

    yield Sample([random_array(rng, (1, 5, 5), "float32"), ints(5, 5), ints(1, 5)])
    yield Sample(
        [random_array(rng, (2, 8, 9), "float32"), ints(4, 4), ints(2, 2)],
        {"pads": (1, 1, 1, 1), "strides": (2, 2)},
    )
    yield Sample(
        [random_array(rng, (1, 4, 4), "float64"), ints(4, 4), ints(2, 2)], {"dilations": (2, 2)}
    )


register(
    OpDef(
        "col2im",
        _col2im_rel,
        _col2im_ref,
        OpPattern.OPAQUE,
        Col2ImAttrs,
        (3, 3),
        "col2im(data, image_shape, block_shape): sum sliding blocks "
        "(N, C * prod(block), L) back into images (ONNX Col2Im)",
        samples=_col2im_samples,
        shape_inputs=(1,),
    )
)
declare(
    "col2im",
    lower=Rule("relay_core.te.lower_signal:_col2im"),
    grad=Rule("relay_core.ops.grads_misc:_g_col2im"),
)


# -- nn.deformable_conv2d -------------------------------------------------------------------------
@dataclass(frozen=True)
class DeformConvAttrs:
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, ...] = (0, 0, 0, 0)  # top, left, bottom, right
    dilation: tuple[int, int] = (1, 1)
    deformable_groups: int = 1
    groups: int = 1


def _deform_rel(args, attrs):
    x, off, w = (R.tensor(a, n) for a, n in zip(args[:3], ("data", "offset", "weight")))
    check_kind(x, "float", "nn.deformable_conv2d")
    if x.ndim != 4 or w.ndim != 4 or off.ndim != 4:
        raise OpTypeError("nn.deformable_conv2d needs 4-D data, offset and weight")
    if len(args) > 3:
        R.tensor(args[3], "mask")
    return TensorType((x.shape[0], w.shape[0], off.shape[2], off.shape[3]), x.dtype)


def _bilinear(img, h, w):
    """img (C, H, W) sampled at float positions h, w (same shape S): (C, *S), zero outside."""
    c, ih, iw = img.shape
    h0, w0 = np.floor(h).astype(np.int64), np.floor(w).astype(np.int64)
    out = np.zeros((c, *h.shape), dtype=np.float64)
    for dh in (0, 1):
        for dw in (0, 1):
            hh, ww = h0 + dh, w0 + dw
            wt = (1 - np.abs(h - hh)) * (1 - np.abs(w - ww))
            ok = (hh >= 0) & (hh < ih) & (ww >= 0) & (ww < iw)
            vals = img[:, np.clip(hh, 0, ih - 1), np.clip(ww, 0, iw - 1)]
            out += np.where(ok, wt, 0.0) * vals
    return out


def _deform_ref(xs, attrs):
    x, off, w = (np.asarray(a, np.float64) for a in xs[:3])
    mask = np.asarray(xs[3], np.float64) if len(xs) > 3 else None
    n, ic, _, _ = x.shape
    oc, icg, kh, kw = w.shape
    _, _, oh, ow = off.shape
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    g, og = attrs.groups, attrs.deformable_groups
    if ic != icg * g or oc % g or ic % og or off.shape[1] != og * kh * kw * 2:
        raise EvalError("nn.deformable_conv2d: inconsistent channels / groups / offsets")
    off = off.reshape(n, og, kh, kw, 2, oh, ow)
    mask = np.ones((n, og, kh, kw, oh, ow)) if mask is None else mask.reshape(n, og, kh, kw, oh, ow)
    base_h = (np.arange(oh) * sh - attrs.padding[0])[:, None]
    base_w = (np.arange(ow) * sw - attrs.padding[1])[None, :]
    out = np.zeros((n, oc, oh, ow))
    per_og = ic // og
    for b in range(n):
        # cols[c, i, j, oh, ow]: the sampled input for kernel tap (i, j).
        cols = np.zeros((ic, kh, kw, oh, ow))
        for o in range(og):
            chans = slice(o * per_og, (o + 1) * per_og)
            for i in range(kh):
                for j in range(kw):
                    h = base_h + i * dh + off[b, o, i, j, 0]
                    wpos = base_w + j * dw + off[b, o, i, j, 1]
                    cols[chans, i, j] = _bilinear(x[b, chans], h, wpos) * mask[b, o, i, j]
        ocg = oc // g
        for gi in range(g):
            cg = cols[gi * icg : (gi + 1) * icg].reshape(icg * kh * kw, oh * ow)
            wg = w[gi * ocg : (gi + 1) * ocg].reshape(ocg, -1)
            out[b, gi * ocg : (gi + 1) * ocg] = (wg @ cg).reshape(ocg, oh, ow)
    return out.astype(xs[0].dtype)


def _deform_samples(rng):
    x = random_array(rng, (1, 2, 4, 4), "float32")
    w = random_array(rng, (2, 2, 2, 2), "float32")
    off = random_array(rng, (1, 8, 3, 3), "float32", (-1, 1))
    yield Sample([x, off, w])
    yield Sample(
        [
            x,
            random_array(rng, (1, 8, 4, 4), "float32", (-1, 1)),
            w,
            random_array(rng, (1, 4, 4, 4), "float32", (0, 1)),
        ],
        {"padding": (1, 1, 0, 0)},
    )


register(
    OpDef(
        "nn.deformable_conv2d",
        _deform_rel,
        _deform_ref,
        OpPattern.OPAQUE,
        DeformConvAttrs,
        (3, 4),
        "nn.deformable_conv2d(data, offset, weight[, mask]): convolution sampling the "
        "input bilinearly at offset positions (ONNX DeformConv; the output size is the "
        "offset's)",
        samples=_deform_samples,
    )
)
declare("nn.deformable_conv2d", decompose=Rule("relay_core.ops.grads_misc:_deform"))


# -- tensor_scatter -----------------------------------------------------------------------------
@dataclass(frozen=True)
class TensorScatterAttrs:
    axis: int = -2
    mode: str = "linear"  # or circular


def _ts_rel(args, attrs):
    past, upd = R.tensor(args[0], "past"), R.tensor(args[1], "update")
    if past.dtype != upd.dtype or past.ndim != upd.ndim:
        raise OpTypeError("tensor_scatter: past and update differ in dtype or rank")
    R.normalize_axis(attrs.axis, past.ndim)
    if attrs.mode not in ("linear", "circular"):
        raise OpTypeError(f"tensor_scatter: unknown mode {attrs.mode!r}")
    return past


def _ts_ref(xs, attrs):
    past, upd = xs[0], xs[1]
    ax = attrs.axis % past.ndim
    idx = np.asarray(xs[2]).reshape(-1) if len(xs) > 2 else np.zeros(past.shape[0], np.int64)
    out = past.copy()
    size = past.shape[ax]
    for k in range(upd.shape[ax]):
        pos = idx.reshape((-1,) + (1,) * (ax - 1)) + k if ax > 0 else np.array(k)
        if attrs.mode == "circular":
            pos = pos % size
        if np.any(pos >= size) or np.any(pos < 0):
            raise EvalError("tensor_scatter: write position beyond the cache")
        src = np.take(upd, k, axis=ax)
        prefix = np.indices(past.shape[:ax])
        target = (*prefix, np.broadcast_to(pos, past.shape[:ax]))
        out[target] = src
    return out


def _ts_samples(rng):
    past = random_array(rng, (2, 3, 5, 4), "float32")
    upd = random_array(rng, (2, 3, 2, 4), "float32")
    yield Sample([past, upd, np.array([1, 3], np.int64)])
    yield Sample([past, upd, np.array([4, 0], np.int64)], {"mode": "circular"})
    yield Sample([past, upd])


register(
    OpDef(
        "tensor_scatter",
        _ts_rel,
        _ts_ref,
        OpPattern.OPAQUE,
        TensorScatterAttrs,
        (2, 3),
        "tensor_scatter(past, update[, write_indices]): write update into past "
        "along `axis` from per-batch positions (ONNX TensorScatter, KV caches)",
        samples=_ts_samples,
    )
)
declare(
    "tensor_scatter",
    lower=Rule("relay_core.te.lower_signal:_tensor_scatter"),
    grad=Rule("relay_core.ops.grads_misc:_g_tensor_scatter"),
)


# -- image.decode ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ImageDecodeAttrs:
    pixel_format: str = "RGB"  # RGB | BGR | Grayscale


_CHANNELS = {"RGB": 3, "BGR": 3, "Grayscale": 1}


def _decode_rel(args, attrs):
    t = R.tensor(args[0], "encoded")
    if t.dtype != "uint8" or t.ndim != 1:
        raise OpTypeError(f"image.decode needs 1-D uint8 bytes, got {t.dtype}{list(t.shape)}")
    if attrs.pixel_format not in _CHANNELS:
        raise OpTypeError(f"image.decode: unknown pixel_format {attrs.pixel_format!r}")
    return TensorType((Any, Any, _CHANNELS[attrs.pixel_format]), "uint8")


def _decode_ref(xs, attrs):
    import io

    try:
        import PIL.Image
    except ImportError:
        raise EvalError("image.decode needs Pillow (pip install pillow)") from None
    try:
        img = PIL.Image.open(io.BytesIO(np.asarray(xs[0], np.uint8).tobytes()))
        img = img.convert("L" if attrs.pixel_format == "Grayscale" else "RGB")
        out = np.asarray(img, dtype=np.uint8)
    except (OSError, ValueError, PIL.Image.DecompressionBombError) as e:
        raise EvalError(f"image.decode: cannot decode the image: {e}") from None
    if attrs.pixel_format == "Grayscale":
        return out[:, :, None].copy()
    return out[:, :, ::-1].copy() if attrs.pixel_format == "BGR" else out.copy()


def _decode_samples(rng):
    import io

    try:
        import PIL.Image
    except ImportError:
        return
    img = PIL.Image.fromarray(random_array(rng, (4, 6, 3), "uint8"))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    data = np.frombuffer(buf.getvalue(), np.uint8)
    for fmt in _CHANNELS:
        yield Sample([data], {"pixel_format": fmt})


register(
    OpDef(
        "image.decode",
        _decode_rel,
        _decode_ref,
        OpPattern.OPAQUE,
        ImageDecodeAttrs,
        (1, 1),
        "decode an encoded image (PNG, JPEG, BMP, TIFF, WebP, ... as Pillow "
        "reads them) to (H, W, C) uint8 (ONNX ImageDecoder)",
        samples=_decode_samples,
        data_dependent_shape=True,
    )
)
