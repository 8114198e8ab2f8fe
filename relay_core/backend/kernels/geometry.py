"""Window geometry shared by convolution and pooling kernels.

Spatial ops compute in a canonical view: data (N, C, D, H, W) with unit dims added for 1-D and
2-D ops, weights (O, I, KD, KH, KW). `layout_axes` finds where each canonical axis sits in a
layout string, so NCHW, NHWC, NCDHW, OIHW, HWIO, ... are all handled by strides.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import OpTypeError
from ...ops import nn_util as U
from .common import attr

SPATIAL = U.SPATIAL

# The geometry itself is the operators' (ops/nn_util.py: the type relations and references use
# it); here it is wrapped so that a kernel declines (NotImplementedError) what it cannot serve.


def layout_axes(layout: str, nd: int, first: str, second: str) -> tuple[int, ...]:
    """Positions of `first`, `second` and the spatial letters (D, H, W order) in `layout`."""
    try:
        return U.layout_axes(layout, nd, first, second, "kernel", "layout")
    except OpTypeError as e:
        raise NotImplementedError(str(e)) from None


def ntuple(v, nd: int) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in U.ntuple(v, nd, "a per-axis attribute", "kernel"))
    except OpTypeError as e:
        raise NotImplementedError(str(e)) from None


def explicit_padding(padding, nd: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(begins, ends) from 1, nd (symmetric) or 2 * nd (all begins, then all ends) values."""
    try:
        return U.explicit_padding(padding, nd, "kernel")
    except OpTypeError as e:
        raise NotImplementedError(str(e)) from None


same_pads = U.same_pads


def resolve_pads(attrs, nd: int, in_sp, ks, strides, dil) -> tuple[tuple, tuple]:
    auto = attr(attrs, "auto_pad", "NOTSET") or "NOTSET"
    try:
        pads = U.resolve_pads(auto, attr(attrs, "padding", 0), in_sp, ks, strides, dil, "kernel")
    except OpTypeError as e:
        raise NotImplementedError(str(e)) from None
    if any(p is None for p in pads):
        raise NotImplementedError("kernels need static spatial dims for SAME padding")
    return tuple(p[0] for p in pads), tuple(p[1] for p in pads)


def pad3(v: tuple, fill: int) -> tuple[int, int, int]:
    """A per-spatial-axis tuple extended on the left to (D, H, W)."""
    return (fill,) * (3 - len(v)) + tuple(v)


@dataclass
class Window:
    """A sliding window over (D, H, W) of a canonical (N, C, D, H, W) view."""

    nd: int
    N: int
    C: int
    sp: tuple  # input (D, H, W)
    osp: tuple  # output (OD, OH, OW)
    k: tuple  # window (KD, KH, KW)
    s: tuple
    d: tuple
    pb: tuple  # padding at the beginning of each axis
    pe: tuple

    @property
    def P(self) -> int:
        return self.osp[0] * self.osp[1] * self.osp[2]

    @property
    def IP(self) -> int:
        return self.sp[0] * self.sp[1] * self.sp[2]

    @property
    def KK(self) -> int:
        return self.k[0] * self.k[1] * self.k[2]


def data_view(shape, layout: str, nd: int) -> tuple[int, int, tuple, bool]:
    """(N, C, (D, H, W), channel_last) of data with `layout`; channel_last for N...C."""
    ax = layout_axes(layout, nd, "N", "C")
    n, c = shape[ax[0]], shape[ax[1]]
    sp = pad3(tuple(shape[a] for a in ax[2:]), 1)
    if ax == tuple(range(nd + 2)):
        return n, c, sp, False
    if ax == (0, nd + 1) + tuple(range(1, nd + 1)):
        return n, c, sp, True
    raise NotImplementedError(f"data layout {layout} (only N C spatial or N spatial C)")
