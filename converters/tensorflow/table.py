"""The TensorFlow converter table and the small protobuf helpers every converter module shares.

A converter is one function per TF op type, named after it, with the op's inputs as positional
parameters and its attributes as keyword parameters (TF's defaults):

    @TF.register("LeakyRelu")
    def LeakyRelu(ctx, x, alpha=0.2):
        return ctx.call("nn.leaky_relu", x, alpha=alpha)

The graph driver passes only the attributes a converter names. A converter returns one Expr, or a
list of Exprs for ops with several outputs.
"""

from __future__ import annotations

import numpy as np

from ..common import ConverterTable

TF = ConverterTable("tensorflow")

# TF DataType enum -> Relay dtype (types.proto). Variant (TensorList) and resource have no dtype.
DTYPES = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    9: "int64",
    10: "bool",
    14: "bfloat16",
    17: "uint16",
    19: "float16",
    22: "uint32",
    23: "uint64",
}
DT_RESOURCE, DT_VARIANT = 20, 21
DTYPE_NAMES = {
    8: "complex64",
    11: "qint8",
    12: "quint8",
    13: "qint32",
    15: "qint16",
    16: "quint16",
    18: "complex128",
    20: "resource",
    21: "variant",
}


MAX_CONST_BYTES = 2**31  # refuse constants declared larger than this, before allocating


class Unsupported(Exception):
    """Raised inside the driver for a dtype or attribute value we cannot represent."""


def tf_dtype(enum: int, handles: bool = False) -> str:
    """The Relay dtype of a TF DataType enum value ("variant" / "resource" when `handles`)."""
    enum = int(enum) % 100  # *_REF types are the base type + 100
    if handles and enum in (DT_RESOURCE, DT_VARIANT):
        return DTYPE_NAMES[enum]
    try:
        return DTYPES[enum]
    except KeyError:
        raise Unsupported(f"TF dtype {DTYPE_NAMES.get(enum, enum)} is not supported") from None


def decode_attr(value):
    """A TF AttrValue as a Python value: str, int, float, bool, dtype str, shape tuple (None for
    unknown dims, None for unknown rank), numpy array (tensor), function name, or a list."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "s":
        return value.s.decode("utf-8", "replace")
    if kind in ("i", "f", "b"):
        return getattr(value, kind)
    if kind == "type":
        return tf_dtype(value.type, handles=True)
    if kind == "shape":
        return decode_shape(value.shape)
    if kind == "tensor":
        return decode_tensor(value.tensor)
    if kind == "func":
        return value.func.name
    if kind == "placeholder":
        return value.placeholder
    lst = value.list
    for field in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
        items = getattr(lst, field)
        if len(items):
            if field == "s":
                return [x.decode("utf-8", "replace") for x in items]
            if field == "type":
                return [tf_dtype(x, handles=True) for x in items]
            if field == "shape":
                return [decode_shape(x) for x in items]
            if field == "tensor":
                return [decode_tensor(x) for x in items]
            if field == "func":
                return [x.name for x in items]
            return list(items)
    return []


def decode_shape(proto):
    """TensorShapeProto -> tuple of int / None, or None for an unknown rank."""
    if proto.unknown_rank:
        return None
    return tuple(None if d.size < 0 else int(d.size) for d in proto.dim)


def decode_tensor(proto) -> np.ndarray:
    """TensorProto -> numpy array (strings stay bytes objects)."""
    from tensorflow.python.framework import tensor_util

    tf_dtype(proto.dtype)  # refuses complex / quantized dtypes with a clear message
    shape = decode_shape(proto.tensor_shape) or ()
    n = 1
    for d in shape:
        n *= d or 0
    if n * 8 > MAX_CONST_BYTES:
        raise Unsupported(f"a constant of shape {shape} exceeds the {MAX_CONST_BYTES} byte budget")
    return np.asarray(tensor_util.MakeNdarray(proto))
