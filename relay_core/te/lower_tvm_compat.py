"""Lowering of TVM's compatibility ops (relay_core/ops/tvm_compat.py)."""

from __future__ import annotations

from ..ops.tvm_compat import _plan, _src_index
from . import expr as E
from .expr import cast
from .lower_transform import reshape_to
from .lowering import out_shape
from .tensor import compute


def _layout_transform(inputs, attrs, out_type):
    x = inputs[0]
    src, dst, shape = _plan(attrs, tuple(x.shape))
    shape = out_shape(out_type, shape)

    def body(*i):
        idx = _src_index(
            src,
            dst,
            i,
            lambda u, f: u * E.index(f),
            lambda u, v: u + v,
            lambda u, f: E.floordiv(u, E.index(f)),
            lambda u, f: E.floormod(u, E.index(f)),
        )
        return x[idx]

    return compute(shape, body, "layout_transform")


def _view(inputs, attrs, out_type):
    return reshape_to(inputs[0], tuple(out_type.shape))


def _batch_flatten(inputs, attrs, out_type):
    x = inputs[0]  # extents from the input: its batch may be a run-time dim
    rest = 1
    for d in x.shape[1:]:
        rest = d * rest
    return reshape_to(x, (x.shape[0], rest))


def _identity(inputs, attrs, out_type):
    x = inputs[0]
    return compute(x.shape, lambda *i: x[i], "identity")


def _alloc_tensor(inputs, attrs, out_type):
    zero = cast(out_type.dtype, E.index(0))
    return compute(tuple(out_type.shape), lambda *i: zero, "alloc_tensor")
