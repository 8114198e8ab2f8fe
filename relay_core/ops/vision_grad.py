"""Backward ops of the region ops: vision.roi_align_grad, vision.roi_pool_grad.

RoIAlign with an adaptive sampling grid (sample_ratio <= 0) takes ceil(roi size / pooled size)
samples per bin, a number known only at run time, and RoI max pooling takes the maximum over
windows whose extents come from the rounded roi values; so their gradients are ops of their own
rather than compositions of static-shaped ops. Each takes the forward inputs followed by the
output gradient and returns (d data, d rois), mirroring the forward reference step by step:

- roi_align: d data scatters g times each sample's bilinear weights into the four corners (avg:
  divided by the sample count; max: only the chosen corner value). d rois chains d output /
  d sample position (the weights' slopes times the corner values) through the positions:
  pos = start + p * bin + (i + 0.5) * bin / grid, bin = (end - start) / pooled, with coordinates
  v * spatial_scale - offset. The sample counts, validity and the edge clamps are piecewise
  constant (their derivative is zero where it exists); a roi clamped to size 1 (mode
  output_half_pixel) has no size derivative. A (K, 5) rois' batch column gets zero.
- roi_pool: d data sends g to the maximum of each window (the first one on ties); d rois is
  zero: the rois are rounded to whole pixels, so the output is piecewise constant in them.

Second derivatives through these ops are not provided (their gradient rules refuse).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import OpTypeError, RelayError
from ..ir import dtype as dt
from ..ir.types import TupleType
from . import nn_util as U
from . import relations as R
from .registry import Kernel, OpDef, OpPattern, Sample, declare, register
from .vision import RoiAlignAttrs, RoiPoolAttrs, _roi_rel, _roi_samples, _split_rois


def _grad_rel(op: str, forward: str):
    fwd = _roi_rel(forward)

    def rel(args, attrs):
        if len(args) < 3:
            raise OpTypeError(f"{op}: takes the forward inputs and the output gradient")
        out = fwd(args[:-1], attrs)
        g = R.tensor(args[-1], "output gradient")
        if g.dtype != out.dtype or g.ndim != out.ndim:
            raise OpTypeError(f"{op}: the output gradient must be {out}, got {g}")
        for a, b in zip(g.shape, out.shape):
            R.dim_unify(a, b, f"{op}: output gradient shape")
        return TupleType((R.tensor(args[0]), R.tensor(args[1])))

    return rel


def _axis_grad(start, bin_size, pooled, grid, size, ft):
    """RoIAlign's per-axis samples (as vision._bilinear_axis), each (pooled, grid): low and high
    indices, their weights, the weights' slopes d w / d pos, and d pos / d bin."""
    p = np.arange(pooled, dtype=ft)[:, None]
    g = np.arange(grid, dtype=ft)[None, :]
    dbin = p + (g + ft(0.5)) / ft(grid)
    pos = start + p * bin_size + (g + ft(0.5)) * bin_size / ft(grid)
    valid = (pos >= -1.0) & (pos <= size)
    moves = pos > 0  # max(pos, 0) holds still below 0
    pos = np.maximum(pos, ft(0))
    low = np.floor(pos).astype(np.int64)
    edge = low >= size - 1
    low = np.where(edge, size - 1, low)
    high = np.where(edge, size - 1, low + 1)
    pos = np.where(edge, low.astype(ft), pos)
    lw = (pos - low.astype(ft)).astype(np.float64)
    slope = np.where(valid & moves & ~edge, 1.0, 0.0)
    v = valid.astype(np.float64)
    return low, high, (1 - lw) * v, lw * v, -slope, slope, dbin.astype(np.float64)


def _roi_align_grad_ref(xs, attrs):
    x, gy = xs[0], xs[-1]
    fwd = xs[:-1]
    op = "vision.roi_align_grad"
    ax = U.data_axes(attrs.layout, 2, op)
    xc = U.to_canonical(x, ax).astype(np.float64)
    gc = U.to_canonical(gy, ax).astype(np.float64)
    boxes, batch = _split_rois(fwd, xc.shape[0], op)
    ft = U.compute_float(dt.from_numpy(boxes.dtype)).type
    boxes = boxes.astype(ft)
    ph, pw = U.ntuple(attrs.pooled_size, 2, "pooled_size", op)
    _, c, h, w = xc.shape
    dx = np.zeros_like(xc)
    dboxes = np.zeros((len(boxes), 4))
    half = attrs.coordinate_transformation_mode == "half_pixel"
    offset = ft(0.5 if half else 0.0)
    scale = ft(attrs.spatial_scale)
    for k in range(len(boxes)):
        x1, y1, x2, y2 = (v * scale - offset for v in boxes[k])
        rw, rh = x2 - x1, y2 - y1
        sw = sh = 1.0  # d size / d (end - start): 0 where a malformed roi became 1 wide
        if not half:
            sw, sh = float(rw >= 1), float(rh >= 1)
            rw, rh = max(rw, ft(1)), max(rh, ft(1))
        bh, bw = rh / ft(ph), rw / ft(pw)
        gh = attrs.sample_ratio if attrs.sample_ratio > 0 else int(math.ceil(rh / ft(ph)))
        gw = attrs.sample_ratio if attrs.sample_ratio > 0 else int(math.ceil(rw / ft(pw)))
        if gh <= 0 or gw <= 0:
            continue
        ylo, yhi, wylo, wyhi, sylo, syhi, dby = _axis_grad(y1, bh, ph, gh, h, ft)
        xlo, xhi, wxlo, wxhi, sxlo, sxhi, dbx = _axis_grad(x1, bw, pw, gw, w, ft)
        yidx = np.stack([ylo, yhi], -1)[:, :, :, None, None, None]  # (ph, gh, 2, 1, 1, 1)
        xidx = np.stack([xlo, xhi], -1)[None, None, None]  # (1, 1, 1, pw, gw, 2)
        wy = np.stack([wylo, wyhi], -1)[:, :, :, None, None, None]
        wx = np.stack([wxlo, wxhi], -1)[None, None, None]
        sy = np.stack([sylo, syhi], -1)[:, :, :, None, None, None]
        sx = np.stack([sxlo, sxhi], -1)[None, None, None]
        img = xc[batch[k]]  # (C, H, W)
        corners = img[:, yidx, xidx]  # (C, ph, gh, 2, pw, gw, 2)
        g = gc[k][:, :, None, None, :, None, None]  # (C, ph, 1, 1, pw, 1, 1)
        if attrs.mode == "avg":
            coef = np.broadcast_to(g / (gh * gw), corners.shape)
        else:  # the chosen (first maximal) weighted corner of each output gets g
            vals = corners * (wy * wx)
            flat = vals.transpose(0, 1, 4, 2, 3, 5, 6).reshape(c, ph, pw, -1)
            hit = np.zeros_like(flat)
            np.put_along_axis(hit, flat.argmax(-1)[..., None], 1.0, -1)
            hit = hit.reshape(c, ph, pw, gh, 2, gw, 2).transpose(0, 1, 3, 4, 2, 5, 6)
            coef = g * hit
        np.add.at(dx[batch[k]], (slice(None), yidx, xidx), coef * (wy * wx))
        s = (coef * corners).sum(axis=0)  # (ph, gh, 2, pw, gw, 2)
        dpy = (s * sy * wx).sum(axis=(2, 3, 4, 5))  # d L / d pos_y, (ph, gh)
        dpx = (s * wy * sx).sum(axis=(0, 1, 2, 5))  # d L / d pos_x, (pw, gw)
        # pos = start + dbin * (end - start) * s / pooled
        gyb, gxb = (dpy * dby).sum() * sh / ph, (dpx * dbx).sum() * sw / pw
        dy1, dx1 = dpy.sum() - gyb, dpx.sum() - gxb
        dboxes[k] = np.array([dx1, dy1, gxb, gyb]) * float(scale)
    rois = fwd[1]
    if len(fwd) == 3:
        drois = dboxes
    else:
        drois = np.concatenate([np.zeros((len(boxes), 1)), dboxes], axis=1)
    return U.from_canonical(dx, ax).astype(x.dtype), drois.astype(rois.dtype)


def _roi_pool_grad_ref(xs, attrs):
    x, gy = xs[0], xs[-1]
    op = "vision.roi_pool_grad"
    ax = U.data_axes(attrs.layout, 2, op)
    xc = U.to_canonical(x, ax)
    gc = U.to_canonical(gy, ax).astype(np.float64)
    boxes, batch = _split_rois(xs[:-1], xc.shape[0], op)
    ph, pw = U.ntuple(attrs.pooled_size, 2, "pooled_size", op)
    _, c, h, w = xc.shape
    dx = np.zeros(xc.shape)
    ft = U.compute_float(dt.from_numpy(boxes.dtype)).type
    scale = ft(attrs.spatial_scale)
    chans = np.arange(c)

    def c_round(v):  # as the forward: halves away from zero
        return int(np.sign(v) * np.floor(np.abs(v) + 0.5))

    for k in range(len(boxes)):
        x1, y1, x2, y2 = (c_round(ft(v) * scale) for v in boxes[k])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bh, bw = ft(rh) / ft(ph), ft(rw) / ft(pw)
        img = xc[batch[k]]
        for i in range(ph):
            hs = min(max(int(np.floor(ft(i) * bh)) + y1, 0), h)
            he = min(max(int(np.ceil(ft(i + 1) * bh)) + y1, 0), h)
            if he <= hs:
                continue
            for j in range(pw):
                ws = min(max(int(np.floor(ft(j) * bw)) + x1, 0), w)
                we = min(max(int(np.ceil(ft(j + 1) * bw)) + x1, 0), w)
                if we > ws:
                    win = img[:, hs:he, ws:we].reshape(c, -1).argmax(axis=1)
                    hh, ww = np.divmod(win, we - ws)
                    np.add.at(dx[batch[k]], (chans, hs + hh, ws + ww), gc[k, :, i, j])
    return U.from_canonical(dx, ax).astype(x.dtype), np.zeros_like(xs[1])


def _grad_samples(forward: str, align: bool):
    base = _roi_samples(align)

    def gen(rng):
        from .registry import lookup

        fwd = lookup(forward)
        for s in base(rng):
            out = fwd.ref(list(s.inputs), fwd.make_attrs(**s.attrs))
            g = rng.uniform(-1, 1, out.shape).astype(out.dtype)
            yield Sample([*s.inputs, g], s.attrs)

    return gen


for _name, _attrs, _ref, _align, _n in (
    ("vision.roi_align", RoiAlignAttrs, _roi_align_grad_ref, True, (3, 4)),
    ("vision.roi_pool", RoiPoolAttrs, _roi_pool_grad_ref, False, (3, 3)),
):
    register(
        OpDef(
            _name + "_grad",
            _grad_rel(_name + "_grad", _name),
            _ref,
            OpPattern.OPAQUE,
            _attrs,
            _n,
            f"backward of {_name}: (forward inputs..., output gradient) -> (d data, d rois)",
            samples=_grad_samples(_name, _align),
        )
    )


def _refuse(name):
    def rule(c, g, ctx):
        raise RelayError(
            f"no gradient for {name}: second derivatives through {name[:-5]} are not provided"
        )

    return rule


for _name in ("vision.roi_align_grad", "vision.roi_pool_grad"):
    declare(_name, grad=_refuse(_name))

# -- how each op is computed (JAX lax style: declared beside the ops; a Rule / Kernel names a
# function of relay_core/te or relay_core/backend, imported on first use) ------------------
declare(
    "vision.roi_align_grad",
    kernel=Kernel("relay_core.backend.kernels.vision_grad:emit_roi_align_grad"),
)
declare(
    "vision.roi_pool_grad",
    kernel=Kernel("relay_core.backend.kernels.vision_grad:emit_roi_pool_grad"),
)
