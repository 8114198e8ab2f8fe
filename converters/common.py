"""What the three frontends share: converter registries, the conversion context, spans.

Each frontend keeps one `ConverterTable`; a converter is a small function per source op,
registered with the op's name and the version it is valid since:

    ONNX = ConverterTable("onnx")

    @ONNX.register("HardSigmoid", since=6)
    def HardSigmoid(ctx, x, alpha=0.2, beta=0.5):
        return ctx.call("nn.hard_sigmoid", x, alpha=alpha, beta=beta)

`ConvertContext` builds expressions with the current source node recorded in their `span`, so
that every Relay expression knows which source node produced it (for verify's localisation), and
answers type questions incrementally (`ctx.type_of(expr)`).
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from relay_core.errors import OpTypeError, RelayError, RelayTypeError, UnsupportedOpsError
from relay_core.ir import (
    Call,
    Constant,
    Expr,
    Op,
    Span,
    TensorType,
    Tuple,
    TupleGetItem,
    Type,
    const,
)
from relay_core.ops import lookup
from relay_core.typing import infer_expr

# Recurrent layers (ONNX RNN / GRU / LSTM, aten lstm / gru / rnn_*) over a sequence of at most
# this many steps, known at conversion, are unrolled into a static graph; longer or symbolic
# ones stay a loop.
RNN_UNROLL_MAX_STEPS = 64


def gate_slices(ctx, x, n: int, width) -> list:
    """The n gate blocks of a recurrent cell, `width` wide each, along x's last axis: strided
    slices rather than one split, so that each fuses into the elementwise ops that read it. A
    split is a kernel of its own (its tuple feeds several groups): one more kernel and copy per
    step of an unrolled LSTM. `width` None (not known at conversion): the split."""
    try:
        width = operator.index(width)
    except TypeError:  # a dimension not known at conversion
        parts = ctx.call("split", x, indices_or_sections=n, axis=-1)
        return [ctx.item(parts, k) for k in range(n)]
    return [
        ctx.call(
            "strided_slice",
            x,
            begin=(k * width,),
            end=((k + 1) * width,),
            strides=(1,),
            axes=(-1,),
        )
        for k in range(n)
    ]


class ConversionError(RelayError, ValueError):
    """A source node could not be converted; the message names the node."""


@dataclass
class ConverterTable:
    """Converters of one framework by op name, each with the versions it covers."""

    framework: str
    _table: dict[str, list[tuple[int, Callable]]] = field(default_factory=dict)

    def register(self, name: str, since: int = 1, *more_names: str):
        """Decorator: `fn` converts op `name` (and aliases) from version `since` on."""

        def wrap(fn: Callable) -> Callable:
            for n in (name, *more_names):
                versions = self._table.setdefault(n, [])
                keys = [v for v, _ in versions]
                if since in keys:
                    raise ValueError(
                        f"{self.framework} converter {n} since {since} registered twice"
                    )
                versions.insert(bisect.bisect(keys, since), (since, fn))
            return fn

        return wrap

    def lookup(self, name: str, version: int | None = None) -> Callable | None:
        """The converter of the newest version <= `version` (any version if None)."""
        versions = self._table.get(name)
        if not versions:
            return None
        if version is None:
            return versions[-1][1]
        chosen = None
        for since, fn in versions:
            if since <= version:
                chosen = fn
        return chosen

    def versions(self, name: str) -> list[int]:
        return [v for v, _ in self._table.get(name, [])]

    def names(self) -> list[str]:
        return sorted(self._table)

    def __contains__(self, name: str) -> bool:
        return name in self._table


def check_supported(
    framework: str,
    used: Iterable[tuple],
    is_supported: Callable[[tuple], bool],
    hint: str = "",
) -> None:
    """Raise one UnsupportedOpsError listing every unsupported entry of `used` (deduplicated,
    in first-seen order). Entries are tuples like (domain, op, opset)."""
    missing: list[tuple] = []
    seen = set()
    for entry in used:
        if entry in seen:
            continue
        seen.add(entry)
        if not is_supported(entry):
            missing.append(entry)
    if missing:
        raise UnsupportedOpsError(framework, missing, hint)


class ConvertContext:
    """Per-model state while converting: the current source node and expression building."""

    def __init__(self, framework: str):
        self.framework = framework
        self.node_name = ""
        self.node_op = ""
        # source tensor name -> Relay expression (for verify's per-layer comparison)
        self.source_outputs: dict[str, Expr] = {}

    # -- the current node --------------------------------------------------------------------
    def at(self, node_name: str, op: str) -> ConvertContext:
        self.node_name, self.node_op = node_name, op
        return self

    @property
    def span(self) -> Span:
        return Span(self.framework, node=self.node_name, op=self.node_op)

    # -- building ----------------------------------------------------------------------------
    def call(self, op_name: str, *args, **attrs) -> Call:
        """`op_name(args, attrs)` tagged with the current source node."""
        opdef = lookup(op_name)
        exprs = tuple(a if isinstance(a, Expr) else const(a) for a in args)
        try:
            a = opdef.make_attrs(**attrs)
        except OpTypeError as e:
            raise ConversionError(self._where() + str(e)) from None
        return Call(Op.get(op_name), exprs, a, span=self.span)

    def const(self, value, dtype: str | None = None) -> Constant:
        if isinstance(value, np.ndarray) and dtype is not None:
            from relay_core.ir import dtype as dt

            value = value.astype(dt.to_numpy(dtype), copy=False)
            return Constant(value, span=self.span)
        c = const(value, dtype)
        return Constant(c.data, span=self.span)

    def tuple(self, fields) -> Tuple:
        return Tuple(tuple(fields), span=self.span)

    def item(self, tup: Expr, i: int) -> Expr:
        if isinstance(tup, Tuple):
            return tup.fields[i]
        return TupleGetItem(tup, i, span=self.span)

    # -- types -------------------------------------------------------------------------------
    def type_of(self, e: Expr) -> Type:
        """The type of `e`, inferred incrementally (nodes already typed are not revisited)."""
        try:
            return infer_expr(e)
        except RelayTypeError as err:
            raise ConversionError(self._where() + str(err)) from None

    def tensor_type(self, e: Expr) -> TensorType:
        t = self.type_of(e)
        if not isinstance(t, TensorType):
            raise ConversionError(self._where() + f"expected a tensor, got {t}")
        return t

    def shape_of(self, e: Expr) -> tuple:
        return self.tensor_type(e).shape

    def ndim(self, e: Expr) -> int:
        return len(self.tensor_type(e).shape)

    def dtype(self, e: Expr) -> str:
        return self.tensor_type(e).dtype

    def _where(self) -> str:
        if self.node_name or self.node_op:
            return f"{self.framework} node {self.node_name!r} ({self.node_op}): "
        return ""

    def error(self, msg: str) -> ConversionError:
        return ConversionError(self._where() + msg)


def constant_value(e: Expr) -> np.ndarray | None:
    """The value of `e` if it is literally a Constant (no folding), else None."""
    return e.data if isinstance(e, Constant) else None


def sanitize_name(name: str) -> str:
    """A source tensor name as a Relay variable name hint."""
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "x"
    return "v" + out if out[0].isdigit() else out
