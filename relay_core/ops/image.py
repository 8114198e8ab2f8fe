"""Image ops: image.resize1d/2d/3d, image.grid_sample, image.affine_grid.

Resize reproduces ONNX Resize (opset 19) exactly: it is separable, one spatial axis at a time,
computed in float64; each output position maps to a source coordinate x (coordinate
transformation mode), takes the n input samples nearest to x (edge-clamped; `cubic_exclude`
drops samples outside the input and renormalises) and weights them by the method's kernel:
nearest (rounding_method), linear, or cubic (Keys, `cubic_alpha`), widened by 1/scale when
`antialias` and downsampling. Integer results round half to even and saturate.

`size` is the output spatial size; `scale` (ONNX scales, PyTorch scale_factor) is the factor the
coordinate transform uses; with only `scale`, the output is floor(in * scale). Framework mappings
(checked against each framework):
- PyTorch: nearest = asymmetric + floor; nearest-exact = half_pixel + round_prefer_ceil;
  (bi/tri)linear and bicubic = half_pixel (align_corners=True: align_corners, give `size` only),
  cubic_alpha -0.75; antialias=True adds cubic_exclude=1 and, for bicubic, cubic_alpha -0.5.
- TF2 tf.image.resize: bilinear = half_pixel; nearest = tf_half_pixel_for_nn + floor; bicubic =
  half_pixel, cubic_alpha -0.5, cubic_exclude=1 (TF tabulates the kernel: ~1e-3 apart);
  antialias = antialias + cubic_exclude=1. TF1 (half_pixel_centers=False): asymmetric (nearest:
  floor); align_corners=True: align_corners (nearest: round_prefer_ceil).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType
from . import nn_util as U
from . import relations as R
from .factories import check_kind, random_array
from .registry import Kernel, OpDef, OpPattern, Rule, Sample, attrs, declare, register

_METHODS = {
    "nearest_neighbor": "nearest",
    "nearest": "nearest",
    "linear": "linear",
    "bilinear": "linear",
    "trilinear": "linear",
    "cubic": "cubic",
    "bicubic": "cubic",
}
_COORD_MODES = (
    "half_pixel",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
    "half_pixel_symmetric",
)
# "" and "round" (TVM) round halves away from zero; coordinates here are clamped at 0, so that
# is round_prefer_ceil.
_ROUNDING = {
    "round_prefer_floor": "round_prefer_floor",
    "round_prefer_ceil": "round_prefer_ceil",
    "floor": "floor",
    "ceil": "ceil",
    "round": "round_prefer_ceil",
    "": "round_prefer_ceil",
}


@attrs
class Resize2DAttrs:
    size: tuple[int, ...] | None = None  # output spatial size
    scale: tuple[float, ...] | None = None  # per spatial axis; None: size / input size
    roi: tuple[float, ...] | None = None  # tf_crop_and_resize: (starts..., ends...), normalised
    layout: str = "NCHW"
    method: str = "linear"  # nearest_neighbor | linear | cubic
    coordinate_transformation_mode: str = "half_pixel"
    rounding_method: str = "round_prefer_floor"  # nearest only
    cubic_alpha: float = -0.75
    cubic_exclude: int = 0
    extrapolation_value: float = 0.0  # tf_crop_and_resize outside the input
    antialias: bool = False
    out_dtype: str = ""


@attrs
class Resize1DAttrs(Resize2DAttrs):
    layout: str = "NCW"


@attrs
class Resize3DAttrs(Resize2DAttrs):
    layout: str = "NCDHW"


def _resize_rel(nd: int, op: str):
    def rel(args, attrs):
        x = R.tensor(args[0])
        check_kind(x, "numeric", op)
        ax = U.data_axes(attrs.layout, nd, op)
        if x.ndim != nd + 2:
            raise OpTypeError(
                f"{op}: data must have rank {nd + 2} ({attrs.layout}), got {tuple(x.shape)}"
            )
        U.check_choice(attrs.method, _METHODS, "method", op)
        U.check_choice(
            attrs.coordinate_transformation_mode, _COORD_MODES, "coordinate_transformation_mode", op
        )
        U.check_choice(attrs.rounding_method, _ROUNDING, "rounding_method", op)
        if attrs.antialias and _METHODS[attrs.method] == "nearest":
            raise OpTypeError(f"{op}: antialias needs method linear or cubic")
        if attrs.size is None and attrs.scale is None:
            raise OpTypeError(f"{op}: give the output size or the scale")
        if attrs.coordinate_transformation_mode == "tf_crop_and_resize" and (
            attrs.roi is None or len(attrs.roi) != 2 * nd
        ):
            raise OpTypeError(f"{op}: tf_crop_and_resize needs roi with {2 * nd} values")
        n, c, *sp = (x.shape[a] for a in ax)
        if attrs.size is not None:
            out = list(U.ntuple(attrs.size, nd, "size", op))
        else:
            scale = U.ntuple(attrs.scale, nd, "scale", op)
            if any(s <= 0 for s in scale):
                raise OpTypeError(f"{op}: scale must be positive, got {scale}")
            out = [int(d * s) if R.is_int(d) else Any for d, s in zip(sp, scale)]
        if attrs.scale is not None:
            U.ntuple(attrs.scale, nd, "scale", op)
        dtype = U.result_dtype(x.dtype, attrs.out_dtype, op)
        return TensorType(U.place((n, c, *out), ax), dtype)

    return rel


def _keys(t: np.ndarray, a) -> np.ndarray:
    """Keys' cubic convolution kernel with parameter a (computed in t's and a's dtype)."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0))


def _keys_expanded(t: np.ndarray, a) -> np.ndarray:
    """The same kernel as ONNX evaluates it for antialiasing: float64 powers, then a's dtype."""
    x64 = np.abs(t.astype(np.float64))
    x, x2, x3 = (v.astype(a.dtype) for v in (x64, x64 * x64, x64 * x64 * x64))
    near = (a + 2) * x3 - (a + 3) * x2 + 1
    far = a * x3 - 5 * a * x2 + 8 * a * x - 4 * a
    return np.where(x64 <= 1, near, np.where(x64 < 2, far, 0))


def _source_coords(mode, out_len, in_len, scale, roi):
    """Source coordinate of each output position along one axis, and where to extrapolate."""
    y = np.arange(out_len, dtype=np.float64)
    width = scale * in_len  # the "real" (float) output length ONNX uses
    extrap = None
    if mode == "align_corners":
        x = np.zeros(out_len) if width == 1 else y * (in_len - 1) / (width - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_half_pixel_for_nn":
        x = (y + 0.5) / scale
    elif mode == "tf_crop_and_resize":
        # ONNX's roi is a float32 tensor and the reference does its roi arithmetic in float32;
        # so do we, so that rounding ties in nearest mode resolve the same way.
        start, end = np.float32(roi[0]), np.float32(roi[1])
        if width == 1:
            x = np.full(out_len, (end - start) * (in_len - 1) / 2)
        else:
            x = y * (end - start) * (in_len - 1) / (width - 1)
        x = x + start * (in_len - 1)
        extrap = (x < 0) | (x > in_len - 1)
    elif mode == "pytorch_half_pixel":
        x = np.full(out_len, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    elif mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric
        offset = in_len / 2 * (1 - out_len / width)
        x = offset + (y + 0.5) / scale - 0.5
    return x, extrap


def _weights(method, r, scale, attrs, cubic_dtype):
    """(offsets, coefficients (out, n)) for neighbours p + offset of a source at p + r.

    Cubic weights are computed in `cubic_dtype`: float32 except for float64 data, as ONNX (whose
    cubic_coeff_a is a float32) and PyTorch (which computes in the data's precision) do.
    """
    if method == "nearest":
        rm = _ROUNDING[attrs.rounding_method]
        right = {
            "round_prefer_floor": r > 0.5,
            "round_prefer_ceil": r >= 0.5,
            "floor": np.zeros_like(r, bool),
            "ceil": np.ones_like(r, bool),
        }[rm]
        right = right | (r == 1)  # an integral source coordinate picks itself
        return np.arange(2), np.stack([~right, right], axis=1).astype(np.float64)
    s = min(scale, 1.0) if attrs.antialias else 1.0
    support = 1 if method == "linear" else 2
    start = math.floor(-support / s) + 1
    offsets = np.arange(start, 2 - start)
    t = (offsets[None, :] - r[:, None]) * s
    if method == "linear":
        coef = np.maximum(0.0, 1 - np.abs(t))
    else:
        a = cubic_dtype.type(attrs.cubic_alpha)
        coef = _keys_expanded(t, a) if attrs.antialias else _keys(t.astype(cubic_dtype), a)
    if attrs.antialias:
        total = coef[:, 0].copy()
        for k in range(1, coef.shape[1]):  # left to right, in the coefficients' dtype
            total += coef[:, k]
        total = total[:, None]
        if method == "cubic" and coef.dtype != np.float64:
            # ONNX's row holds exact zeros beyond the support as Python floats, which makes that
            # row's division float64; rows without them divide in float32.
            wide = (np.abs(t) >= 2).any(axis=1, keepdims=True)
            coef = np.where(
                wide, coef.astype(np.float64) / total, (coef / total).astype(np.float64)
            )
        else:
            coef = coef / total
    return offsets, coef


def resize_axis(data, axis, out_len, scale, roi, attrs, cubic_dtype=None):
    """ONNX Resize along one axis of float64 `data`."""
    cubic_dtype = np.dtype(np.float64) if cubic_dtype is None else cubic_dtype
    in_len = data.shape[axis]
    if out_len == 0 or in_len == 0:
        shape = list(data.shape)
        shape[axis] = out_len
        return np.zeros(shape)
    method = _METHODS[attrs.method]
    x, extrap = _source_coords(attrs.coordinate_transformation_mode, out_len, in_len, scale, roi)
    p = np.floor(x)
    r = x - p
    whole = r == 0  # prefer the left neighbour: p - 1 with ratio 1
    p = np.where(whole, p - 1, p).astype(np.int64)
    r = np.where(whole, 1.0, r)
    offsets, coef = _weights(method, r, scale, attrs, cubic_dtype)
    coef = coef.astype(np.float64)
    idx = p[:, None] + offsets[None, :]
    if attrs.cubic_exclude:
        coef = np.where((idx < 0) | (idx >= in_len), 0.0, coef)
        total = coef.sum(axis=1, keepdims=True)
        coef = coef / np.where(total == 0, 1.0, total)
    idx = np.clip(idx, 0, in_len - 1)
    g = np.take(data, idx, axis=axis)  # (..., out, n, ...)
    cshape = (1,) * axis + coef.shape + (1,) * (data.ndim - axis - 1)
    y = (g * coef.reshape(cshape)).sum(axis=axis + 1)
    if extrap is not None and extrap.any():
        mshape = (1,) * axis + (out_len,) + (1,) * (data.ndim - axis - 1)
        y = np.where(extrap.reshape(mshape), attrs.extrapolation_value, y)
    return y


def _resize_ref(nd: int, op: str):
    def ref(xs, attrs):
        x = xs[0]
        ax = U.data_axes(attrs.layout, nd, op)
        sp = [x.shape[a] for a in ax[2:]]
        if attrs.size is not None:
            out = list(U.ntuple(attrs.size, nd, "size", op))
        else:
            out = [int(d * s) for d, s in zip(sp, U.ntuple(attrs.scale, nd, "scale", op))]
        if attrs.scale is not None:
            scale = [float(s) for s in U.ntuple(attrs.scale, nd, "scale", op)]
        else:
            scale = [o / d if d else 1.0 for o, d in zip(out, sp)]
        roi = attrs.roi if attrs.coordinate_transformation_mode == "tf_crop_and_resize" else None
        y = x.astype(np.float64)
        cubic_dtype = np.dtype(np.float64 if x.dtype == np.float64 else np.float32)
        for i, a in enumerate(ax[2:]):
            r = None if roi is None else (roi[i], roi[nd + i])
            trivial_roi = r is None or (math.isclose(r[0], 0.0) and math.isclose(r[1], 1.0))
            if out[i] == sp[i] and math.isclose(scale[i], 1.0) and trivial_roi:
                continue  # identity along this axis (as ONNX)
            y = resize_axis(y, a, out[i], scale[i], r, attrs, cubic_dtype)
        odt = U.result_dtype(dt.from_numpy(x.dtype), attrs.out_dtype, op)
        if dt.is_int(odt):
            info = np.iinfo(dt.to_numpy(odt))
            y = np.clip(np.round(y), info.min, info.max)
        return y.astype(dt.to_numpy(odt))

    return ref


def _resize_samples(nd: int):
    sp = {1: (5,), 2: (4, 5), 3: (3, 4, 2)}[nd]

    def gen(rng):
        up = tuple(2 * d + 1 for d in sp)
        down = tuple(max(1, d // 2) for d in sp)

        def mk(dtype="float32", layout=None, n=2, **kw):
            layout = layout or U.DATA_LAYOUTS[nd]
            x = random_array(rng, (n, 3, *sp), dtype)
            x = x.transpose(np.argsort(U.data_axes(layout, nd, "sample")))
            return Sample([x], dict(layout=layout, **kw))

        for mode in _COORD_MODES:
            extra = {"roi": (0.1,) * nd + (0.9,) * nd} if mode == "tf_crop_and_resize" else {}
            for method in ("nearest_neighbor", "linear", "cubic"):
                yield mk(size=up, method=method, coordinate_transformation_mode=mode, **extra)
            yield mk(size=down, method="linear", coordinate_transformation_mode=mode, **extra)
        yield mk(scale=(1.7,) * nd, method="nearest_neighbor", rounding_method="floor")
        yield mk(scale=(0.6,) * nd, method="cubic", antialias=True, cubic_exclude=1)
        yield mk(size=down, method="linear", antialias=True, layout=U.CHANNEL_LAST[nd])
        yield mk(size=(1,) * nd, method="cubic", cubic_alpha=-0.5, dtype="float64")
        yield mk(size=up, method="linear", dtype="uint8")
        yield mk(size=up, method="cubic", dtype="float16")
        yield mk(size=up, method="nearest_neighbor", dtype="int32", rounding_method="ceil")
        yield mk(size=up, method="cubic", n=0)  # empty batch

    return gen


for _nd, _cls in ((1, Resize1DAttrs), (2, Resize2DAttrs), (3, Resize3DAttrs)):
    _name = f"image.resize{_nd}d"
    register(
        OpDef(
            _name,
            _resize_rel(_nd, _name),
            _resize_ref(_nd, _name),
            OpPattern.INJECTIVE,
            _cls,
            (1, 1),
            f"resize the {_nd} spatial axes (ONNX Resize semantics)",
            samples=_resize_samples(_nd),
        )
    )


# ---------------------------------------------------------------------------------------------
# grid_sample / affine_grid (ONNX GridSample-20 / AffineGrid-20, PyTorch grid_sample).

_GRID_METHODS = {
    "bilinear": "linear",
    "linear": "linear",
    "nearest": "nearest",
    "bicubic": "cubic",
    "cubic": "cubic",
}


@attrs
class GridSampleAttrs:
    method: str = "bilinear"  # bilinear | nearest | bicubic (ONNX names linear / cubic too)
    layout: str = "NCHW"  # or NCDHW; the grid is (N, *out, nd) with (x, y[, z]) last
    padding_mode: str = "zeros"  # zeros | border | reflection
    align_corners: bool = False


def _grid_sample_rel(args, attrs):
    op = "image.grid_sample"
    x, g = R.tensor(args[0], "data"), R.tensor(args[1], "grid")
    check_kind(x, "float", op)
    U.check_choice(attrs.method, _GRID_METHODS, "method", op)
    U.check_choice(attrs.padding_mode, ("zeros", "border", "reflection"), "padding_mode", op)
    nd = x.ndim - 2
    if nd not in (2, 3):
        raise OpTypeError(f"{op}: data must have rank 4 or 5, got {tuple(x.shape)}")
    if attrs.layout != U.DATA_LAYOUTS[nd]:
        raise OpTypeError(f"{op}: layout must be {U.DATA_LAYOUTS[nd]} for rank-{nd + 2} data")
    if g.ndim != nd + 2 or R.dim_eq(g.shape[-1], nd) is False:
        raise OpTypeError(f"{op}: grid must have shape (N, *out, {nd}), got {tuple(g.shape)}")
    if g.dtype != x.dtype:
        raise OpTypeError(f"{op}: grid dtype {g.dtype} differs from the data's {x.dtype}")
    if R.dim_eq(x.shape[0], g.shape[0]) is False:
        raise OpTypeError(f"{op}: batch sizes differ: data {x.shape[0]}, grid {g.shape[0]}")
    n = x.shape[0] if R.is_int(x.shape[0]) else g.shape[0]
    return TensorType((n, x.shape[1], *g.shape[1:-1]), x.dtype)


def _reflect(x, lo, hi):
    """Fold coordinates into [lo, hi] by reflecting at the borders."""
    span = hi - lo
    if span <= 0:
        return np.zeros_like(x)
    below, above = x < lo, x > hi
    dx = np.where(below, lo - x, x - hi)
    n = np.floor(dx / span)
    r = dx - n * span
    even = n % 2 == 0
    return np.where(
        below, np.where(even, lo + r, hi - r), np.where(above, np.where(even, hi - r, lo + r), x)
    )


def _grid_sample_ref(xs, attrs):
    x, grid = xs
    nd = x.ndim - 2
    sp = x.shape[2:]
    xf = x.astype(np.float64)
    method = _GRID_METHODS[attrs.method]
    mode = attrs.padding_mode
    coords, los, his = [], [], []
    for a in range(nd):  # grid's last axis lists (x, y, z): the reverse of D, H, W
        gcoord = grid[..., nd - 1 - a].astype(np.float64)
        d = sp[a]
        if attrs.align_corners:
            c, lo, hi = (gcoord + 1) / 2 * (d - 1), 0.0, d - 1.0
        else:
            c, lo, hi = ((gcoord + 1) * d - 1) / 2, -0.5, d - 0.5
        if method == "nearest":
            c = np.rint(c)
        out = (c < lo) | (c > hi)
        # Bicubic pads each tap instead (PyTorch, onnxruntime; onnx.reference clamps the
        # coordinate first, which differs near the border).
        if mode == "border" and method != "cubic":
            c = np.where(out, np.clip(c, 0, d - 1), c)
        elif mode == "reflection" and method != "cubic":
            c = np.where(out, _reflect(c, lo, hi), c)
        coords.append(c)
        los.append(lo)
        his.append(hi)

    def pixel_index(i, a):
        """Integer tap -> (clamped index, valid mask) under the padding mode."""
        d = sp[a]
        if mode == "zeros":
            return np.clip(i, 0, d - 1), (i >= 0) & (i < d)
        if mode == "border":
            return np.clip(i, 0, d - 1), None
        i = _reflect(i.astype(np.float64), los[a], his[a]).astype(np.int64)
        return np.clip(i, 0, d - 1), None

    if method == "nearest":
        taps = [[(c.astype(np.int64), np.ones_like(c))] for c in coords]
    else:
        taps = []
        for c in coords:
            base = np.floor(c)
            t = c - base
            base = base.astype(np.int64)
            if method == "linear":
                taps.append([(base, 1 - t), (base + 1, t)])
            else:
                w = _keys(np.stack([t + 1, t, 1 - t, 2 - t]), -0.75)
                taps.append([(base + k - 1, w[k]) for k in range(4)])
    xt = np.moveaxis(xf, 1, -1)  # (N, *sp, C)
    nidx = np.arange(x.shape[0]).reshape((-1,) + (1,) * nd)
    y = 0.0
    for combo in itertools.product(*taps):
        weight = 1.0
        index = [nidx]
        for a, (i, w) in enumerate(combo):
            ci, valid = pixel_index(i, a)
            weight = weight * (w if valid is None else w * valid)
            index.append(ci)
        y = y + xt[tuple(index)] * weight[..., None]
    y = np.broadcast_to(y, grid.shape[:-1] + (x.shape[1],))
    return np.moveaxis(y, -1, 1).astype(x.dtype)


def _grid_sample_samples(rng):
    for nd in (2, 3):
        sp = (4, 5) if nd == 2 else (3, 4, 2)
        out = (3, 6) if nd == 2 else (2, 3, 4)
        for method in ("bilinear", "nearest", "bicubic"):
            for mode in ("zeros", "border", "reflection"):
                for align in (False, True):
                    x = random_array(rng, (2, 3, *sp), "float32")
                    g = random_array(rng, (2, *out, nd), "float32", (-1.3, 1.3))
                    yield Sample(
                        [x, g],
                        {
                            "method": method,
                            "padding_mode": mode,
                            "align_corners": align,
                            "layout": U.DATA_LAYOUTS[nd],
                        },
                    )
    x = random_array(rng, (1, 2, 1, 1), "float64")
    g = random_array(rng, (1, 2, 2, 2), "float64")
    yield Sample([x, g], {"padding_mode": "reflection", "align_corners": True})


register(
    OpDef(
        "image.grid_sample",
        _grid_sample_rel,
        _grid_sample_ref,
        OpPattern.INJECTIVE,
        GridSampleAttrs,
        (2, 2),
        "sample data at normalised grid positions (ONNX GridSample / torch grid_sample)",
        samples=_grid_sample_samples,
    )
)
declare(
    "image.grid_sample",
    lower=Rule("relay_core.te.lower_image:_grid_sample"),
    grad=Rule("relay_core.ops.grads_sample:_grid_sample"),
)


@attrs
class AffineGridAttrs:
    size: tuple[int, ...] = (1, 1, 1, 1)  # (N, C, H, W) or (N, C, D, H, W), as ONNX
    align_corners: bool = False


def _affine_grid_rel(args, attrs):
    op = "image.affine_grid"
    theta = R.tensor(args[0], "theta")
    check_kind(theta, "float", op)
    nd = len(attrs.size) - 2
    if nd not in (2, 3):
        raise OpTypeError(f"{op}: size must have 4 or 5 values, got {attrs.size}")
    want = (attrs.size[0], nd, nd + 1)
    if theta.ndim != 3 or any(R.dim_eq(a, b) is False for a, b in zip(theta.shape, want)):
        raise OpTypeError(f"{op}: theta must have shape {want}, got {tuple(theta.shape)}")
    return TensorType((attrs.size[0], *attrs.size[2:], nd), theta.dtype)


def _affine_grid_ref(xs, attrs):
    theta = xs[0]
    sp = attrs.size[2:]
    nd = len(sp)
    axes = []
    for d in sp:
        lin = np.linspace(-1.0, 1.0, d) if d > 1 else np.zeros(1)  # a unit axis samples 0
        if not attrs.align_corners:
            lin = lin * (d - 1) / d
        axes.append(lin)
    mesh = np.meshgrid(*axes, indexing="ij")  # D, H, W order
    base = np.stack([*mesh[::-1], np.ones(tuple(sp))], axis=-1)  # (..., x, y[, z], 1)
    grid = np.einsum("...k,njk->n...j", base, theta.astype(np.float64))
    return grid.astype(theta.dtype).reshape(attrs.size[0], *sp, nd)


def _affine_grid_samples(rng):
    for size in [(2, 3, 4, 5), (1, 1, 1, 3), (2, 2, 3, 4, 2)]:
        nd = len(size) - 2
        for align in (False, True):
            theta = random_array(rng, (size[0], nd, nd + 1), "float32")
            yield Sample([theta], {"size": size, "align_corners": align})


register(
    OpDef(
        "image.affine_grid",
        _affine_grid_rel,
        _affine_grid_ref,
        OpPattern.INJECTIVE,
        AffineGridAttrs,
        (1, 1),
        "sampling grid (N, *size, nd) of affine maps theta",
        samples=_affine_grid_samples,
    )
)
declare(
    "image.affine_grid",
    lower=Rule("relay_core.te.lower_image:_affine_grid"),
    grad=Rule("relay_core.ops.grads_nn:_affine_grid"),
)


# ---------------------------------------------------------------------------------------------
# crop_and_resize (TF CropAndResize): one tf_crop_and_resize per box.


@attrs
class CropAndResizeAttrs:
    crop_size: tuple[int, ...] = (1, 1)
    layout: str = "NCHW"
    method: str = "bilinear"  # bilinear | nearest_neighbor (rounds halves up, as TF)
    extrapolation_value: float = 0.0
    out_dtype: str = ""


def _crop_rel(args, attrs):
    op = "image.crop_and_resize"
    x, boxes, ind = (R.tensor(a, w) for a, w in zip(args, ("data", "boxes", "box_indices")))
    check_kind(x, "numeric", op)
    check_kind(boxes, "float", op, "boxes")
    U.check_choice(attrs.method, ("bilinear", "nearest_neighbor"), "method", op)
    ax = U.data_axes(attrs.layout, 2, op)
    if x.ndim != 4:
        raise OpTypeError(f"{op}: data must have rank 4 ({attrs.layout}), got {tuple(x.shape)}")
    if boxes.ndim != 2 or R.dim_eq(boxes.shape[1], 4) is False:
        raise OpTypeError(f"{op}: boxes must have shape (K, 4), got {tuple(boxes.shape)}")
    if not dt.is_int(ind.dtype) or ind.ndim != 1 or R.dim_eq(ind.shape[0], boxes.shape[0]) is False:
        raise OpTypeError(
            f"{op}: box_indices must be integers of shape (K,), got {ind.dtype}{list(ind.shape)}"
        )
    ch, cw = U.ntuple(attrs.crop_size, 2, "crop_size", op)
    k = boxes.shape[0] if R.is_int(boxes.shape[0]) else ind.shape[0]
    return TensorType(
        U.place((k, x.shape[ax[1]], ch, cw), ax), U.result_dtype(x.dtype, attrs.out_dtype, op)
    )


def _crop_ref(xs, attrs):
    x, boxes, ind = xs
    ax = U.data_axes(attrs.layout, 2, "image.crop_and_resize")
    xc = U.to_canonical(x, ax).astype(np.float64)
    ch, cw = U.ntuple(attrs.crop_size, 2, "crop_size", "image.crop_and_resize")
    rattrs = Resize2DAttrs(
        method="linear" if attrs.method == "bilinear" else "nearest_neighbor",
        coordinate_transformation_mode="tf_crop_and_resize",
        rounding_method="round_prefer_ceil",
        extrapolation_value=attrs.extrapolation_value,
    )
    if ind.size and (ind.min() < 0 or ind.max() >= xc.shape[0]):
        raise EvalError(
            f"image.crop_and_resize: box index {ind.max()} out of range for batch size "
            f"{xc.shape[0]}"
        )
    out = np.zeros((len(boxes), xc.shape[1], ch, cw))
    for k, (y1, x1, y2, x2) in enumerate(boxes):
        img = xc[ind[k]]  # (C, H, W)
        img = resize_axis(img, 1, ch, ch / img.shape[1], (y1, y2), rattrs)
        out[k] = resize_axis(img, 2, cw, cw / img.shape[2], (x1, x2), rattrs)
    odt = U.result_dtype(dt.from_numpy(x.dtype), attrs.out_dtype, "image.crop_and_resize")
    return U.from_canonical(out, ax).astype(dt.to_numpy(odt))


def _crop_samples(rng):
    for layout in ("NCHW", "NHWC"):
        for method in ("bilinear", "nearest_neighbor"):
            x = random_array(rng, (2, 3, 7, 6), "float32")
            if layout == "NHWC":
                x = x.transpose(0, 2, 3, 1)
            boxes = rng.uniform(-0.2, 1.2, (4, 4)).astype(np.float32)
            ind = rng.integers(0, 2, 4).astype(np.int32)
            for size in ((3, 4), (1, 1)):
                yield Sample(
                    [x, boxes, ind],
                    {
                        "crop_size": size,
                        "layout": layout,
                        "method": method,
                        "extrapolation_value": -1.0,
                    },
                )
    yield Sample(
        [
            random_array(rng, (1, 2, 3, 3), "float32"),
            np.zeros((0, 4), np.float32),
            np.zeros((0,), np.int64),
        ],
        {"crop_size": (2, 2)},
    )


register(
    OpDef(
        "image.crop_and_resize",
        _crop_rel,
        _crop_ref,
        OpPattern.INJECTIVE,
        CropAndResizeAttrs,
        (3, 3),
        "crop normalised boxes [y1, x1, y2, x2] and resize each to crop_size (TF "
        "CropAndResize); outside the image: extrapolation_value",
        samples=_crop_samples,
    )
)
declare(
    "image.crop_and_resize",
    kernel=Kernel("relay_core.backend.kernels.vision:emit_crop_and_resize"),
    grad=Rule("relay_core.ops.grads_sample:_crop_and_resize"),
)

# -- how each op is computed (JAX lax style: declared beside the ops; a Rule / Kernel names a
# function of relay_core/te or relay_core/backend, imported on first use) ------------------
declare(
    "image.resize1d",
    lower=Rule("relay_core.te.lower_image:_resize", 1),
    grad=Rule("relay_core.ops.grads_nn:separable_rule", "image.resize1d", 1, "layout"),
)
declare(
    "image.resize2d",
    lower=Rule("relay_core.te.lower_image:_resize", 2),
    grad=Rule("relay_core.ops.grads_nn:separable_rule", "image.resize2d", 2, "layout"),
)
declare(
    "image.resize3d",
    lower=Rule("relay_core.te.lower_image:_resize", 3),
    grad=Rule("relay_core.ops.grads_nn:separable_rule", "image.resize3d", 3, "layout"),
)
