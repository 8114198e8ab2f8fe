"""Pieces of the Relay text format shared by the printer and the parser: scalar literals,
attribute values, names, and the `#[metadata]` section (the constant side table)."""

from __future__ import annotations

import base64
import json
import math
import re
import struct

import numpy as np

from . import dtype as _dt

VERSION = "0.0.5"


def trampoline(gen):
    """Run generator-based recursive code without Python recursion: a generator yields a
    sub-generator to "call" it and receives its return value back."""
    stack = [gen]
    value = None
    while True:
        try:
            sub = stack[-1].send(value)
        except StopIteration as stop:
            stack.pop()
            if not stack:
                return stop.value
            value = stop.value
            continue
        stack.append(sub)
        value = None


# -- names ----------------------------------------------------------------------------------------
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_]")


def sanitize_name(name: str) -> str:
    """A name the lexer reads back as one identifier: `conv1.weight` -> `conv1_weight`."""
    s = _BAD_CHARS.sub("_", name) or "x"
    return "v" + s if s[0].isdigit() else s


def quote(s: str) -> str:
    """A string literal (JSON escapes, ASCII only)."""
    return json.dumps(s)


# -- scalar literals ------------------------------------------------------------------------------
# dtype -> literal suffix for scalars printed inline.
_INT_SUFFIX = {
    "int32": "",
    "int64": "i64",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
}
_FLOAT_SUFFIX = {"float32": "f", "float64": "f64", "float16": "f16"}
# literal suffix -> dtype
_SUFFIX_DTYPE = {
    "f": "float32",
    "f32": "float32",
    "f64": "float64",
    "f16": "float16",
    "i": "int32",
    "i32": "int32",
    "i64": "int64",
    "i16": "int16",
    "i8": "int8",
    "u": "uint32",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
}
NUMBER_RE = re.compile(
    r"(?P<num>-?(?:\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|inf|nan))(?P<suffix>[fiu]\d*)?\Z"
)


def _short_float(v, np_type) -> str:
    """Shortest decimal text that reads back as the same `np_type` value."""
    if np_type is np.float64:
        s = repr(float(v))
    else:
        s = str(np_type(v))
    if s.endswith(".0"):
        s = s[:-2]
    return s.replace(".0e", "e")


def format_scalar(data: np.ndarray) -> str | None:
    """Inline text of a scalar constant (`1f`, `2i64`, `True`), or None: print it as meta."""
    if data.ndim != 0:
        return None
    d = _dt.from_numpy(data.dtype) if data.dtype.kind not in "OUS" else "string"
    if d == "bool":
        return "True" if bool(data) else "False"
    if d in _INT_SUFFIX:
        return f"{int(data)}{_INT_SUFFIX[d]}"
    if d in _FLOAT_SUFFIX:
        v = data.item()
        if not math.isfinite(v):
            return None
        np_type = _dt.to_numpy(d).type
        text = _short_float(v, np_type) + _FLOAT_SUFFIX[d]
        try:  # print only what reads back bit-exact
            back, _ = parse_number(text)
        except ValueError:
            return None
        if back.tobytes() != data.tobytes():
            return None
        return text
    return None


def parse_number(text: str) -> tuple[np.ndarray, str]:
    """A literal in expression position: `1` int32, `1i64`, `0.5f`, `1f64`, `2u8`, ...

    A number with a point or an exponent and no suffix is float32. Raises ValueError.
    """
    m = NUMBER_RE.match(text)
    if m is None:
        raise ValueError(f"malformed number {text!r}")
    num, suffix = m.group("num"), m.group("suffix")
    is_float = any(c in num for c in ".eEn") or (suffix or "").startswith("f")
    if suffix:
        dtype = _SUFFIX_DTYPE.get(suffix)
        if dtype is None:
            raise ValueError(f"unknown number suffix {suffix!r} in {text!r}")
    else:
        dtype = "float32" if is_float else "int32"
    if _dt.is_float(dtype):
        v = float(num)
        with np.errstate(over="ignore"):
            arr = np.asarray(v).astype(_dt.to_numpy(dtype))
        big = float(_dt.finfo(dtype).max)
        # as TVM, refuse a value past the largest finite one (except its printed shortest form)
        if math.isfinite(v) and abs(v) > big and abs(v) != float(_short_float(big, arr.dtype.type)):
            raise ValueError(f"{text} overflows {dtype} (its largest finite value is {big:g})")
        return arr, dtype
    if is_float:
        raise ValueError(f"{text!r}: an integer suffix on a non-integer number")
    v = int(num)
    if not suffix and not -(2**31) <= v < 2**31:
        dtype = "int64"  # as TVM: an unsuffixed integer too large for int32 is int64
    info = np.iinfo(_dt.to_numpy(dtype))
    if not info.min <= v <= info.max:
        raise ValueError(f"{num} does not fit in {dtype}")
    return np.asarray(v, dtype=_dt.to_numpy(dtype)), dtype


# -- attribute values -----------------------------------------------------------------------------
def format_float_attr(v: float) -> str:
    """A float attribute as TVM prints it (`1e-05f`), but with every digit needed."""
    if math.isnan(v):
        return "nanf"
    if math.isinf(v):
        return "inff" if v > 0 else "-inff"
    return _short_float(v, np.float64) + "f"


def format_attr_value(v) -> str:
    """Attribute values: ints `1`, floats `0.5f`, strings quoted, tuples `[1, 1]`, `None`."""
    if v is None:
        return "None"
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return format_float_attr(float(v))
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(format_attr_value(x) for x in v) + "]"
    if isinstance(v, np.ndarray):
        return format_attr_value(v.tolist())
    return quote(repr(v))  # not representable: keep the text readable rather than fail


def attr_number(text: str):
    """A number in attribute position: a Python int or float (`1f` and `1.0` are floats)."""
    m = NUMBER_RE.match(text)
    if m is None:
        raise ValueError(f"malformed number {text!r}")
    num, suffix = m.group("num"), m.group("suffix") or ""
    if suffix.startswith("f") or any(c in num for c in ".eEn"):
        return float(num)
    if suffix and suffix not in _SUFFIX_DTYPE:
        raise ValueError(f"unknown number suffix {suffix!r} in {text!r}")
    return int(num)


# -- metadata -------------------------------------------------------------------------------------
def encode_metadata(constants: list[np.ndarray | None]) -> str:
    """The `#[metadata]` JSON: each constant's dtype, shape and base64 little-endian bytes."""
    rows = []
    for a in constants:
        if a is None:  # data left out (str(mod) elides large constants)
            rows.append("    null")
            continue
        d = _dt.from_numpy(a.dtype)
        entry = {"dtype": d, "shape": list(a.shape)}
        if d == "string":
            entry["data"] = [str(x) for x in a.reshape(-1).tolist()]
        else:
            entry["data"] = base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")
        rows.append("    " + json.dumps(entry))
    return '{\n  "Constant": [\n' + ",\n".join(rows) + "\n  ]\n}"


def _decode_constant(entry: dict) -> np.ndarray:
    d = entry["dtype"]
    shape = tuple(int(s) for s in entry["shape"])
    if d == "string":
        return np.array(entry["data"], dtype=object).reshape(shape)
    raw = base64.b64decode(entry["data"])
    npd = _dt.to_numpy(d)
    n = int(np.prod(shape, dtype=np.int64))
    if len(raw) != n * npd.itemsize:
        raise ValueError(
            f"constant of shape {list(shape)} {d} needs {n * npd.itemsize} bytes, "
            f"the metadata holds {len(raw)}"
        )
    return np.frombuffer(raw, dtype=npd).reshape(shape).copy()


def decode_metadata(text: str) -> dict[str, list]:
    """Constants by kind from a `#[metadata]` section: ours, or TVM's node-graph JSON (where
    entries other than constants are None)."""
    obj = json.loads(text)
    if not isinstance(obj, dict):
        raise ValueError("the metadata section must be a JSON object")
    if "nodes" in obj and "root" in obj:
        return _decode_tvm_metadata(obj)
    out = {}
    for kind, entries in obj.items():
        out[kind] = [None if e is None else _decode_constant(e) for e in entries]
    return out


# TVM's NDArray serialisation: magic, reserved, device, ndim, dtype (code, bits, lanes), shape,
# byte count, bytes.
_TVM_MAGIC = 0xDD5E40F096B4A13F
_TVM_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat"}


def _decode_tvm_ndarray(b64: str) -> np.ndarray:
    raw = base64.b64decode(b64)
    magic, _reserved, _dev_type, _dev_id, ndim = struct.unpack_from("<QQiii", raw, 0)
    if magic != _TVM_MAGIC:
        raise ValueError("not a TVM NDArray")
    code, bits, _lanes = struct.unpack_from("<BBH", raw, 28)
    off = 32
    shape = struct.unpack_from(f"<{ndim}q", raw, off)
    off += 8 * ndim
    (nbytes,) = struct.unpack_from("<q", raw, off)
    off += 8
    if code == 1 and bits == 1:
        d = "bool"
    else:
        d = f"{_TVM_CODES[code]}{bits}"
    data = np.frombuffer(raw[off : off + nbytes], dtype=_dt.to_numpy(d))
    return data.reshape(shape).copy()


def _decode_tvm_metadata(obj: dict) -> dict[str, list[np.ndarray]]:
    nodes = obj["nodes"]
    arrays = obj.get("b64ndarrays", [])
    root = nodes[obj["root"]]
    keys = root.get("keys")
    if keys is None:  # older TVM: a StrMap whose data alternates key and value
        keys, values = [], []
        for k, v in root.get("data", {}).items() if isinstance(root.get("data"), dict) else []:
            keys.append(k)
            values.append(v)
    else:
        values = root["data"]
    out: dict[str, list[np.ndarray]] = {}
    for key, arr_idx in zip(keys, values):
        consts = []
        for idx in nodes[int(arr_idx)].get("data", []):
            node = nodes[int(idx)]
            if node.get("type_key") != "relay.Constant":
                consts.append(None)  # not a constant: an error only if the program refers to it
                continue
            consts.append(_decode_tvm_ndarray(arrays[int(node["attrs"]["data"])]))
        out[key] = consts
    return out
