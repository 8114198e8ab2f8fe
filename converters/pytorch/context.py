"""Conversion context for FX nodes: dtypes, torch's type promotion, scalars and symbolic sizes.

Values flowing between converters:
  - tensors: Relay expressions;
  - symbolic sizes (SymInt / SymFloat / SymBool nodes): Relay scalar expressions (int64 /
    float32 / bool);
  - everything else (ints, floats, lists, dtypes, None): Python values, dtypes as Relay names.
"""

from __future__ import annotations

import numpy as np

from relay_core.ir import Expr, TensorType
from relay_core.ir import dtype as dt

from ..common import ConvertContext

# torch dtype name (str(torch.float32) without "torch.") -> Relay dtype
_TORCH_DTYPES = {
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "int8": "int8",
    "int16": "int16",
    "short": "int16",
    "int32": "int32",
    "int": "int32",
    "int64": "int64",
    "long": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "bool": "bool",
    "complex64": "complex64",
    "complex128": "complex128",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz",
}


def relay_dtype(torch_dtype) -> str:
    """The Relay dtype of a torch.dtype (or of its name)."""
    name = str(torch_dtype).removeprefix("torch.")
    try:
        return _TORCH_DTYPES[name]
    except KeyError:
        raise ValueError(f"torch dtype {torch_dtype} has no Relay equivalent") from None


def torch_dtype(relay: str):
    import torch

    return getattr(torch, relay)


# -- torch's type promotion (c10 ResultTypeState) --------------------------------------------------


def _category(d: str) -> int:
    if d == "bool":
        return 0
    if dt.is_int(d):
        return 1
    if d.startswith("complex"):
        return 3
    return 2


def promote_types(a: str | None, b: str | None) -> str | None:
    """torch.promote_types over Relay dtype names (None: undefined)."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b
    if {a, b} == {"float16", "bfloat16"}:
        return "float32"
    if ca == 0:
        return "bool"
    return dt.from_numpy(np.promote_types(dt.to_numpy(a), dt.to_numpy(b)))


def _combine_categories(higher: str | None, lower: str | None) -> str | None:
    if higher is not None and _category(higher) == 3:
        return higher
    if lower is not None and _category(lower) == 3:
        if higher is not None and _category(higher) == 2:
            return "complex128" if higher == "float64" else "complex64"
        return lower
    if higher is not None and _category(higher) == 2:
        return higher
    if higher == "bool" or (lower is not None and _category(lower) == 2):
        return promote_types(higher, lower)
    return higher if higher is not None else lower


def scalar_dtype(v) -> str:
    """The dtype torch gives a Python scalar operand (wrapped number)."""
    if isinstance(v, bool) or isinstance(v, np.bool_):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int64"
    if isinstance(v, complex):
        return "complex64"
    return "float32"


class TorchContext(ConvertContext):
    """ConvertContext plus what ATen converters need: the FX node, its output metadata,
    torch's type promotion, scalars and symbolic-size helpers."""

    def __init__(self, importer=None):
        super().__init__("torch")
        self.importer = importer
        self.node = None  # the fx.Node being converted

    # -- the node's output metadata ----------------------------------------------------------
    @property
    def meta(self):
        return None if self.node is None else self.node.meta.get("val")

    def out_dtype(self, index: int | None = None) -> str | None:
        """Relay dtype of the node's output (its `index`-th output for multi-output ops)."""
        v = self.meta
        if index is not None and isinstance(v, (tuple, list)):
            v = v[index]
        return meta_dtype(v)

    def out_shape(self, index: int | None = None) -> tuple | None:
        """The node's output shape with symbolic dims as None."""
        v = self.meta
        if index is not None and isinstance(v, (tuple, list)):
            v = v[index]
        if v is None or not hasattr(v, "shape"):
            return None
        return tuple(d if isinstance(d, int) else _maybe_int(d) for d in v.shape)

    # -- values ------------------------------------------------------------------------------
    @staticmethod
    def is_tensor(v) -> bool:
        return isinstance(v, Expr)

    def dtype_of(self, v) -> str:
        """Dtype of a tensor expression or of a Python scalar operand."""
        if isinstance(v, Expr):
            return self.dtype(v)
        return scalar_dtype(v)

    def promote(self, *operands) -> str:
        """The dtype torch computes `operands` in (tensors beat 0-d tensors beat scalars)."""
        dim = zero = wrapped = None
        for v in operands:
            if v is None:
                continue
            if isinstance(v, Expr):
                t = self.tensor_type(v)
                if len(t.shape) > 0:
                    dim = promote_types(dim, t.dtype)
                else:
                    zero = promote_types(zero, t.dtype)
            else:
                wrapped = promote_types(wrapped, scalar_dtype(v))
        out = _combine_categories(dim, _combine_categories(zero, wrapped))
        return out or "float32"

    def expr(self, v, dtype: str | None = None) -> Expr:
        """`v` as a Relay expression of `dtype`: tensors are cast, scalars become constants."""
        if isinstance(v, Expr):
            return self.cast(v, dtype) if dtype is not None else v
        if dtype is None:
            dtype = scalar_dtype(v)
        if isinstance(v, (list, tuple)):
            return self.const(np.asarray(v), dtype)
        return self.const(_scalar_value(v, dtype), dtype)

    def cast(self, e: Expr, dtype: str) -> Expr:
        if self.dtype(e) == dtype:
            return e
        return self.call("cast", e, dtype=dtype)

    def operands(self, *vals, dtype: str | None = None) -> list[Expr]:
        """All operands as expressions of one dtype (torch's promotion unless given)."""
        d = dtype or self.promote(*vals)
        return [self.expr(v, d) for v in vals]

    def const(self, value, dtype: str | None = None):
        if isinstance(value, np.ndarray) or dtype is None:
            return super().const(value, dtype)
        return super().const(np.asarray(value, dtype=dt.to_numpy(dtype)), dtype)

    # -- int lists that may hold symbolic sizes ----------------------------------------------
    @staticmethod
    def static_ints(values) -> tuple[int, ...] | None:
        """The list as ints, or None when an entry is a symbolic size (an expression)."""
        if values is None:
            return None
        if isinstance(values, (int, np.integer)):
            return (int(values),)
        if isinstance(values, Expr):
            return None
        if any(isinstance(v, Expr) for v in values):
            return None
        return tuple(int(v) for v in values)

    def int_tensor(self, values, dtype: str = "int64") -> Expr:
        """A 1-D int tensor of `values` (ints and symbolic-size scalars mixed)."""
        if isinstance(values, Expr):
            return self.cast(values, dtype)
        if self.static_ints(values) is not None:
            return self.const(np.asarray(values, dtype=dt.to_numpy(dtype)), dtype)
        parts = []
        for v in values:
            if isinstance(v, Expr):
                parts.append(self.call("reshape", self.cast(v, dtype), newshape=(1,)))
            else:
                parts.append(self.const(np.asarray([v], dtype=dt.to_numpy(dtype)), dtype))
        return self.call("concatenate", *parts, axis=0)

    def iota(self, n, dtype: str = "int64") -> Expr:
        """0, 1, ..., n - 1: a constant when n is static, else an arange."""
        if isinstance(n, (int, np.integer)):
            return self.const(np.arange(int(n)).astype(dt.to_numpy(dtype)), dtype)
        zero, one = self.const(0, dtype), self.const(1, dtype)
        return self.call("arange", zero, self.expr(n, dtype), one, dtype=dtype)

    def dim_size(self, e: Expr, axis: int) -> int | Expr:
        """Size of `e` along `axis`: an int when static, else an int64 scalar expression."""
        shape = self.shape_of(e)
        axis = axis + len(shape) if axis < 0 else axis
        d = shape[axis]
        if isinstance(d, int):
            return d
        sh = self.call("shape_of", e, dtype="int64")
        return self.call("take", sh, self.const(np.asarray(axis, dtype=np.int64), "int64"))


def meta_dtype(v) -> str | None:
    """Relay dtype of an FX meta value (FakeTensor, SymInt, SymFloat, SymBool, scalar)."""
    if v is None:
        return None
    d = getattr(v, "dtype", None)
    if d is not None:
        return relay_dtype(d)
    name = type(v).__name__
    if name in ("SymInt", "int"):
        return "int64"
    if name in ("SymBool", "bool"):
        return "bool"
    if name in ("SymFloat", "float"):
        return "float32"
    return None


def _maybe_int(d):
    try:
        return int(d) if getattr(d, "node", None) is None or d.node.is_constant() else None
    except Exception:
        return None


def _scalar_value(v, dtype: str):
    if isinstance(v, float) and dt.is_int(dtype):
        return int(v)
    if isinstance(v, float) and dtype == "bool":
        return bool(v)
    if isinstance(v, float) and not np.isfinite(v) and dt.is_int(dtype):
        raise ValueError(f"cannot represent {v} as {dtype}")
    return v


def tensor_type_of_meta(v, shape_dim) -> TensorType:
    """A Relay TensorType from a FakeTensor meta value; `shape_dim(sym)` maps a symbolic
    size to a Relay dimension."""
    dims = tuple(d if isinstance(d, int) else shape_dim(d) for d in v.shape)
    return TensorType(dims, relay_dtype(v.dtype))
