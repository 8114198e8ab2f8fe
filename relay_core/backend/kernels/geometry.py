"""Window geometry shared by convolution and pooling kernels.

Spatial ops compute in a canonical view: data (N, C, D, H, W) with unit dims added for 1-D and
2-D ops, weights (O, I, KD, KH, KW). `layout_axes` finds where each canonical axis sits in a
layout string, so NCHW, NHWC, NCDHW, OIHW, HWIO, ... are all handled by strides.
"""

from __future__ import annotations

from dataclasses import dataclass

from .common import attr

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def layout_axes(layout: str, nd: int, first: str, second: str) -> tuple[int, ...]:
    """Positions of `first`, `second` and the spatial letters (D, H, W order) in `layout`."""
    letters = first + second + SPATIAL[nd]
    if len(layout) != nd + 2 or sorted(layout) != sorted(letters):
        raise NotImplementedError(f"layout {layout!r} is not a permutation of {letters!r}")
    return (layout.index(first), layout.index(second)) + tuple(layout.index(c) for c in SPATIAL[nd])


def ntuple(v, nd: int) -> tuple[int, ...]:
    v = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    if len(v) == 1:
        v = v * nd
    if len(v) != nd:
        raise ValueError(f"expected {nd} values, got {v}")
    return tuple(int(x) for x in v)


def explicit_padding(padding, nd: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(begins, ends) from 1, nd (symmetric) or 2 * nd (all begins, then all ends) values."""
    p = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,)
    if len(p) == 1:
        return p * nd, p * nd
    if len(p) == nd:
        return tuple(p), tuple(p)
    if len(p) == 2 * nd:
        return tuple(p[:nd]), tuple(p[nd:])
    raise ValueError(f"padding needs 1, {nd} or {2 * nd} values, got {p}")


def same_pads(n: int, k: int, s: int, d: int, lower: bool) -> tuple[int, int]:
    """ONNX / TF SAME padding: output ceil(n / s); the odd pixel goes at the end (UPPER)."""
    out = -(-n // s)
    total = max(0, (out - 1) * s + d * (k - 1) + 1 - n)
    small = total // 2
    return (total - small, small) if lower else (small, total - small)


def resolve_pads(attrs, nd: int, in_sp, ks, strides, dil) -> tuple[tuple, tuple]:
    auto = attr(attrs, "auto_pad", "NOTSET") or "NOTSET"
    if auto == "VALID":
        return (0,) * nd, (0,) * nd
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pp = [
            same_pads(n, k, s, d, auto == "SAME_LOWER")
            for n, k, s, d in zip(in_sp, ks, strides, dil)
        ]
        return tuple(p[0] for p in pp), tuple(p[1] for p in pp)
    return explicit_padding(attr(attrs, "padding", 0), nd)


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
