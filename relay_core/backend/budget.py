"""The compile-time byte budget: every tensor a model computes with a static shape is checked
against it before anything is optimised or allocated, so a tiny file asking for terabytes fails
at once with the node's name, not in an allocator."""

from __future__ import annotations

import os

from ..errors import InputError, ResourceLimitError
from ..ir.expr import Call
from ..ir.module import IRModule
from ..ir.types import TensorType, TupleType
from ..ir.visitor import post_order
from ..typing.infer import type_bytes

DEFAULT_MAX_TENSOR_BYTES = 4 << 30  # 4 GiB
ENV = "RELAY_MAX_TENSOR_BYTES"


def max_tensor_bytes(value: int | None = None) -> int:
    """The budget: `value` if given, else $RELAY_MAX_TENSOR_BYTES, else 4 GiB."""
    if value is None:
        env = os.environ.get(ENV, "").strip()
        if not env:
            return DEFAULT_MAX_TENSOR_BYTES
        try:
            value = int(float(env))
        except ValueError:
            raise InputError(f"{ENV}={env!r} is not a number of bytes") from None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(f"max_tensor_bytes must be a positive number of bytes, got {value!r}")
    return value


def _tensors(t):
    stack = [t]
    while stack:
        t = stack.pop()
        if isinstance(t, TensorType):
            yield t
        elif isinstance(t, TupleType):
            stack.extend(t.fields)


def check_tensor_budget(mod: IRModule, limit: int) -> None:
    """Raise ResourceLimitError naming the first op whose static result exceeds `limit` bytes.

    >>> check_tensor_budget(infer_type(mod), 1 << 30)
    """
    for fn in mod.functions.values():
        for e in post_order(fn):
            if type(e) is not Call or e._checked_type is None:
                continue
            for t in _tensors(e._checked_type):
                size = type_bytes(t)
                if size is not None and size > limit:
                    op = getattr(e.op, "name", None) or getattr(e.op, "name_hint", "a call")
                    where = f"node {e.span} " if e.span is not None and e.span.node else ""
                    raise ResourceLimitError(
                        f"{where}({op}) would produce a {t} tensor of {size:,} bytes, over the "
                        f"budget of {limit:,} bytes; if the model really needs it, raise "
                        f"max_tensor_bytes= (or ${ENV})"
                    )
