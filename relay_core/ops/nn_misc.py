"""nn.pad, nn.dropout, nn.depth_to_space, nn.space_to_depth."""

from __future__ import annotations

import numpy as np

from ..errors import OpTypeError
from ..ir.types import Any, TensorType
from . import nn_util as U
from . import relations as R
from .factories import random_array
from .registry import OpDef, OpPattern, Rule, Sample, attrs, declare, register

# -- pad ------------------------------------------------------------------------------------------

_PAD_MODES = {
    "constant": "constant",
    "reflect": "reflect",
    "edge": "edge",
    "wrap": "wrap",
    "symmetric": "symmetric",
}


@attrs
class PadAttrs:
    pad_width: tuple[tuple[int, int], ...] = ()  # (before, after) per axis; negative crops
    pad_value: float = 0.0  # used when there is no second (scalar tensor) input
    pad_mode: str = "constant"  # constant | reflect | edge | wrap | symmetric (TF MirrorPad)


def _pad_rel(args, attrs):
    x = R.tensor(args[0], "data")
    U.check_choice(attrs.pad_mode, _PAD_MODES, "pad_mode", "nn.pad")
    if len(args) > 1:
        v = R.tensor(args[1], "pad_value")
        # any dtype: cast to the data's, as TVM (`nn.pad(%half, 0, ...)`)
        if v.ndim > 1 or (v.ndim == 1 and R.dim_eq(v.shape[0], 1) is False):
            raise OpTypeError(f"nn.pad: pad_value must be a scalar, got {v.dtype}{list(v.shape)}")
    if len(attrs.pad_width) != x.ndim:
        raise OpTypeError(
            f"nn.pad: pad_width has {len(attrs.pad_width)} (before, after) pairs but the data has "
            f"rank {x.ndim}"
        )
    out = []
    for axis, (d, (b, a)) in enumerate(zip(x.shape, attrs.pad_width)):
        if not R.is_int(d):
            out.append(d if b == a == 0 else Any)
            continue
        n = d + b + a
        if n < 0:
            raise OpTypeError(f"nn.pad: axis {axis} of size {d} cropped below zero by ({b}, {a})")
        if attrs.pad_mode != "constant" and d + min(b, 0) + min(a, 0) <= 0 and (b > 0 or a > 0):
            raise OpTypeError(f"nn.pad: {attrs.pad_mode} padding of an empty axis {axis}")
        out.append(n)
    return TensorType(tuple(out), x.dtype)


def _pad_ref(xs, attrs):
    x = xs[0]
    if x.ndim == 0:
        return x.copy()
    # Negative widths crop first; the rest pads the cropped tensor.
    crop = tuple(
        slice(max(-b, 0), x.shape[i] - max(-a, 0)) for i, (b, a) in enumerate(attrs.pad_width)
    )
    x = x[crop]
    width = [(max(b, 0), max(a, 0)) for b, a in attrs.pad_width]
    mode = _PAD_MODES[attrs.pad_mode]
    if mode != "constant":
        return np.pad(x, width, mode=mode)
    value = xs[1].reshape(()) if len(xs) > 1 else np.asarray(attrs.pad_value)
    value = value.astype(x.dtype)
    return np.pad(x, width, constant_values=value)


def _pad_samples(rng):
    for dtype in ("float32", "int32", "float16", "bool"):
        x = random_array(rng, (3, 4, 5), dtype)
        yield Sample([x], {"pad_width": ((1, 2), (0, 0), (2, 1)), "pad_value": 1.0})
        yield Sample([x], {"pad_width": ((0, 0), (-1, 2), (1, -2))})
        for mode in ("reflect", "edge", "wrap", "symmetric"):
            yield Sample([x], {"pad_width": ((1, 2), (0, 3), (2, -1)), "pad_mode": mode})
        yield Sample([x, random_array(rng, (), dtype)], {"pad_width": ((1, 0), (0, 1), (2, 2))})
    yield Sample([random_array(rng, (1,), "float32")], {"pad_width": ((0, 3),), "pad_mode": "edge"})
    yield Sample([random_array(rng, (0, 2), "float32")], {"pad_width": ((1, 1), (0, 0))})
    yield Sample([random_array(rng, (), "float32")], {"pad_width": ()})


register(
    OpDef(
        "nn.pad",
        _pad_rel,
        _pad_ref,
        OpPattern.INJECTIVE,
        PadAttrs,
        (1, 2),
        "pad (or crop, with negative widths) each axis; the value may be a scalar input",
        samples=_pad_samples,
    )
)
declare(
    "nn.pad", lower=Rule("relay_core.te.lower_nn:_pad"), grad=Rule("relay_core.ops.grads_nn:_pad")
)


# -- dropout ------------------------------------------------------------------------------------


@attrs
class DropoutAttrs:
    rate: float = 0.5


def _dropout_samples(rng):
    for shape in [(3, 4), (), (0, 2)]:
        yield Sample([random_array(rng, shape, "float32")], {"rate": 0.3})


register(
    OpDef(
        "nn.dropout",
        # TVM's signature: (output, mask); at inference the output is x and the mask all ones
        lambda args, attrs: R.tuple_of(R.tensor(args[0]), R.tensor(args[0])),
        lambda xs, attrs: (xs[0].copy(), np.ones_like(xs[0])),
        OpPattern.OPAQUE,
        DropoutAttrs,
        (1, 1),
        "(x, ones_like(x)) at inference (TVM's tuple result: take .0 for the output)",
        samples=_dropout_samples,
    )
)
declare(
    "nn.dropout",
    lower=Rule("relay_core.te.lower_nn:_dropout"),
    decompose=Rule("relay_core.ops.decompose:_dropout"),
)


# -- depth_to_space / space_to_depth --------------------------------------------------------------


@attrs
class DepthToSpaceAttrs:
    block_size: int = 1
    layout: str = "NCHW"
    mode: str = "DCR"  # DCR: depth is (block_row, block_col, channel); CRD: (channel, row, col)


@attrs
class SpaceToDepthAttrs:
    block_size: int = 1
    layout: str = "NCHW"
    mode: str = "DCR"


def _d2s_rel(to_space: bool):
    op = "nn.depth_to_space" if to_space else "nn.space_to_depth"

    def rel(args, attrs):
        x = R.tensor(args[0])
        U.check_choice(attrs.mode, ("DCR", "CRD"), "mode", op)
        bs = attrs.block_size
        if bs < 1:
            raise OpTypeError(f"{op}: block_size must be positive, got {bs}")
        ax = U.data_axes(attrs.layout, 2, op)
        if x.ndim != 4:
            raise OpTypeError(f"{op}: data must have rank 4 ({attrs.layout}), got {tuple(x.shape)}")
        n, c, h, w = (x.shape[a] for a in ax)
        if to_space:
            if R.is_int(c) and c % (bs * bs):
                raise OpTypeError(
                    f"{op}: {c} channels are not divisible by block_size^2 = {bs * bs}"
                )
            dims = (n, c // (bs * bs) if R.is_int(c) else Any, R.dim_mul(h, bs), R.dim_mul(w, bs))
        else:
            for d, name in ((h, "height"), (w, "width")):
                if R.is_int(d) and d % bs:
                    raise OpTypeError(f"{op}: {name} {d} is not divisible by block_size {bs}")
            div = [d // bs if R.is_int(d) else Any for d in (h, w)]
            dims = (n, R.dim_mul(c, bs * bs), *div)
        return TensorType(U.place(dims, ax), x.dtype)

    return rel


def _d2s_ref(to_space: bool):
    def ref(xs, attrs):
        ax = U.data_axes(attrs.layout, 2, "")
        x = U.to_canonical(xs[0], ax)
        n, c, h, w = x.shape
        bs = attrs.block_size
        if to_space:
            oc = c // (bs * bs)
            if attrs.mode == "DCR":
                y = x.reshape(n, bs, bs, oc, h, w).transpose(0, 3, 4, 1, 5, 2)
            else:
                y = x.reshape(n, oc, bs, bs, h, w).transpose(0, 1, 4, 2, 5, 3)
            y = y.reshape(n, oc, h * bs, w * bs)
        else:
            y = x.reshape(n, c, h // bs, bs, w // bs, bs)
            perm = (0, 3, 5, 1, 2, 4) if attrs.mode == "DCR" else (0, 1, 3, 5, 2, 4)
            y = y.transpose(perm).reshape(n, c * bs * bs, h // bs, w // bs)
        return np.ascontiguousarray(U.from_canonical(y, ax))

    return ref


def _d2s_samples(to_space: bool):
    def gen(rng):
        for dtype in ("float32", "int64"):
            for bs, (c, h, w) in [
                (2, (8, 3, 2) if to_space else (2, 4, 6)),
                (3, (9, 1, 2) if to_space else (1, 3, 6)),
                (1, (3, 2, 2)),
            ]:
                for mode in ("DCR", "CRD"):
                    for layout in ("NCHW", "NHWC"):
                        x = random_array(rng, (2, c, h, w), dtype)
                        if layout == "NHWC":
                            x = x.transpose(0, 2, 3, 1)
                        yield Sample([x], {"block_size": bs, "mode": mode, "layout": layout})

    return gen


for _to_space, _name, _cls, _doc in (
    (True, "nn.depth_to_space", DepthToSpaceAttrs, "move channel blocks into spatial blocks"),
    (False, "nn.space_to_depth", SpaceToDepthAttrs, "move spatial blocks into channels"),
):
    register(
        OpDef(
            _name,
            _d2s_rel(_to_space),
            _d2s_ref(_to_space),
            OpPattern.INJECTIVE,
            _cls,
            (1, 1),
            _doc,
            samples=_d2s_samples(_to_space),
        )
    )

# -- how each op is computed (JAX lax style: declared beside the ops; a Rule / Kernel names a
# function of relay_core/te or relay_core/backend, imported on first use) ------------------
declare(
    "nn.depth_to_space",
    lower=Rule("relay_core.te.lower_nn:_d2s", True),
    grad=Rule("relay_core.ops.grads_nn:_g_depth_space"),
)
declare(
    "nn.space_to_depth",
    lower=Rule("relay_core.te.lower_nn:_d2s", False),
    grad=Rule("relay_core.ops.grads_nn:_g_depth_space"),
)
