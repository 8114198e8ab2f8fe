"""ONNX element types, tensors and type protos as Relay dtypes, arrays and types."""

from __future__ import annotations

import numpy as np

from relay_core.errors import ModelLoadError
from relay_core.ir import (
    Any,
    GlobalTypeVar,
    IncompleteType,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    TypeCall,
)
from relay_core.ir import dtype as dt

# TensorProto.DataType -> Relay dtype (None: no Relay equivalent).
_ONNX_DTYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    8: "string",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
    14: "complex64",
    15: "complex128",
    16: "bfloat16",
    17: "float8_e4m3fn",
    18: "float8_e4m3fnuz",
    19: "float8_e5m2",
    20: "float8_e5m2fnuz",
    21: "uint4",
    22: "int4",
    23: "float4_e2m1fn",
    24: "float8_e8m0fnu",
    25: "uint2",
    26: "int2",
}
_TO_ONNX = {v: k for k, v in _ONNX_DTYPES.items()}

# Bits per element as stored in raw_data (sub-byte types are packed).
_PACKED_BITS = {21: 4, 22: 4, 23: 4, 25: 2, 26: 2}


def relay_dtype(elem_type: int, what: str = "tensor") -> str:
    """The Relay dtype of an ONNX element type, or a clear error."""
    name = _ONNX_DTYPES.get(int(elem_type))
    if name is None or name not in dt.DTYPES:
        raise ModelLoadError(f"{what} has ONNX element type {elem_type}, which has no Relay dtype")
    return name


def onnx_dtype(dtype: str) -> int:
    """The ONNX element type of a Relay dtype."""
    try:
        return _TO_ONNX[dtype]
    except KeyError:
        raise ValueError(f"dtype {dtype} has no ONNX element type") from None


def declared_nbytes(elem_type: int, n: int) -> int | None:
    """Bytes that `n` elements of `elem_type` take in raw_data (None for strings)."""
    if elem_type == 8:
        return None
    bits = _PACKED_BITS.get(elem_type)
    if bits is not None:
        return (n * bits + 7) // 8
    return n * dt.itemsize(relay_dtype(elem_type))


def tensor_to_numpy(t) -> np.ndarray:
    """A TensorProto's value (sizes are checked by the loader before this is called)."""
    from onnx import numpy_helper

    dtype = relay_dtype(t.data_type, f"tensor {t.name!r}")
    arr = numpy_helper.to_array(t)
    if dtype == "string":
        return np.array(
            [s.decode("utf-8", "replace") if isinstance(s, bytes) else s for s in arr.reshape(-1)],
            dtype=object,
        ).reshape(arr.shape)
    want = dt.to_numpy(dtype)
    if arr.dtype != want:
        arr = arr.astype(want)
    return arr


def sparse_to_numpy(sp) -> np.ndarray:
    """A SparseTensorProto as a dense array."""
    values = tensor_to_numpy(sp.values)
    idx = tensor_to_numpy(sp.indices).astype(np.int64)
    dims = tuple(int(d) for d in sp.dims)
    out = np.zeros(dims, dtype=values.dtype)
    flat = out.reshape(-1)
    if idx.ndim == 1:
        flat[idx] = values.reshape(-1)
    else:
        flat[np.ravel_multi_index(tuple(idx.T), dims)] = values.reshape(-1)
    return out


LIST = GlobalTypeVar("List")
OPTION = GlobalTypeVar("Option")


def dim_of(d) -> object:
    """An ONNX TensorShapeProto.Dimension as a Relay dim."""
    which = d.WhichOneof("value")
    if which == "dim_value":
        return int(d.dim_value) if d.dim_value >= 0 else Any
    if which == "dim_param" and d.dim_param:
        return ShapeVar(d.dim_param)
    return Any


def relay_type(tp, what: str = "value", shape_override=None) -> Type | None:
    """A TypeProto as a Relay type (None when the proto says nothing)."""
    which = tp.WhichOneof("value")
    if which == "tensor_type" or which == "sparse_tensor_type":
        tt = getattr(tp, which)
        dtype = relay_dtype(tt.elem_type, what) if tt.elem_type else "float32"
        if shape_override is not None:
            return TensorType(tuple(shape_override), dtype)
        if not tt.HasField("shape"):
            return None  # rank unknown: cannot be typed statically
        return TensorType(tuple(dim_of(d) for d in tt.shape.dim), dtype)
    if which == "sequence_type":
        # Elements of one sequence may differ in shape: their dims are all unknown.
        # An element rank the model leaves open is inferred from the sequence's uses (a
        # rank-0 element declaration is taken as open too: exporters write it for "unknown").
        elem = relay_type(tp.sequence_type.elem_type, what, shape_override)
        if isinstance(elem, TensorType):
            elem = TensorType((Any,) * elem.ndim, elem.dtype) if elem.ndim else None
        return TypeCall(LIST, (IncompleteType() if elem is None else elem,))
    if which == "optional_type":
        elem = relay_type(tp.optional_type.elem_type, what, shape_override)
        return TypeCall(OPTION, (IncompleteType() if elem is None else elem,))
    if which is None:
        return None
    raise ModelLoadError(f"{what} has ONNX type {which}, which the converter does not support")


def type_proto_of(t: Type):
    """A Relay type as an ONNX TypeProto (for context-dependent function bodies)."""
    from onnx import TypeProto

    tp = TypeProto()
    if isinstance(t, TensorType):
        tp.tensor_type.elem_type = onnx_dtype(t.dtype)
        shape = tp.tensor_type.shape
        for d in t.shape:
            dim = shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            elif isinstance(d, ShapeVar):
                dim.dim_param = d.name
    elif isinstance(t, TypeCall) and t.func == LIST:
        tp.sequence_type.elem_type.CopyFrom(type_proto_of(t.args[0]))
    elif isinstance(t, TypeCall) and t.func == OPTION:
        tp.optional_type.elem_type.CopyFrom(type_proto_of(t.args[0]))
    elif isinstance(t, TupleType):
        raise ValueError("a tuple has no ONNX type")
    return tp
