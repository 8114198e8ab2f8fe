"""A binary file for an IRModule: its text (relay_core.parse reads it) with the constants' data
as raw bytes beside it, and the module's attributes. Large weights never go through text, so a
ResNet-50 writes and reads back in well under a second; the conversion cache
(relay_import.convert_cache) stores converted models this way.

Layout: the magic `RELAYMOD`, a little-endian uint64 header length, the header (JSON: format
version, text length, each constant's dtype / shape / offset / digest, the attributes), the
text (UTF-8), then the constants' bytes, each at a 64-byte aligned offset of the data block.

`load` maps the file read-only instead of reading it: the constants are views of the mapping
(read from disk only when used), and their digests (structural.constant_digest, stored beside
the bytes) are remembered, so hashing the loaded module for the compile cache reads no weights.

Module attributes survive when they are JSON values (tuples stay tuples), arrays (`params`), or
a dict of names to expressions of `@main` (`source_outputs`): those print as a second field of
`@main`'s body and are split off again on reading, so they share `@main`'s parameters and
sub-expressions as before. `dumps` raises NotSerializable for anything else.
"""

from __future__ import annotations

import json
import struct

import numpy as np

from . import dtype as dt
from .expr import Expr, Function, Tuple
from .module import IRModule
from .types import FuncType

MAGIC = b"RELAYMOD"
FORMAT = 2
_ALIGN = 64


class NotSerializable(ValueError):
    """The module holds something this format does not keep (an attribute of another kind)."""


def dumps(mod: IRModule) -> bytes:
    """The module as bytes (see the module docstring)."""
    import io

    f = io.BytesIO()
    write(mod, f)
    return f.getvalue()


def save(mod: IRModule, path: str) -> None:
    """Write the module to `path` (see `write`)."""
    with open(path, "wb") as f:
        write(mod, f)


def load(path: str) -> IRModule:
    """Read a module `save` wrote. The file is mapped read-only (the constants are views of
    the mapping, which outlives the file's removal); it must not be rewritten in place
    (replace it by renaming a new file over it, as the conversion cache does)."""
    import mmap

    with open(path, "rb") as f:
        try:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            raise ValueError(f"{path}: not a serialized Relay module") from None
    return loads(memoryview(mm), path, trusted_digests=True)


def write(mod: IRModule, f) -> None:
    """Write the module to the binary file object `f`: the arrays' bytes go straight to it.
    Raises NotSerializable (before writing anything) for an attribute it cannot keep."""
    from .printer import module_to_text_and_constants

    attrs, arrays, exprs = _split_attrs(mod.attrs or {})
    work = mod
    if exprs:
        main = mod["main"]
        names = list(exprs)
        combined = Function(
            main.params,
            Tuple((main.body, Tuple(tuple(exprs[n] for n in names)))),
            None,
            main.type_params,
            main.attrs,
        )
        work = IRModule(dict(mod.functions), dict(mod.type_definitions))
        work["main"] = combined
        attrs["__exprs__"] = {"names": names}
        if main.ret_type is not None:
            attrs["__exprs__"]["ret_text"] = _ret_text(main)
    text, constants = module_to_text_and_constants(work)
    from .structural import constant_digest

    table, blobs, offset = [], [], 0
    for data in [*constants, *arrays.values()]:
        data = np.asarray(data)
        a = np.ascontiguousarray(data).reshape(data.shape)  # a 0-d array stays 0-d
        try:
            name = dt.from_numpy(a.dtype)
        except Exception:  # strings, objects: no Relay dtype
            raise NotSerializable(f"a constant of numpy dtype {a.dtype}") from None
        if a.dtype.hasobject:
            raise NotSerializable(f"a constant of numpy dtype {a.dtype}")
        entry = {"dtype": name, "shape": list(a.shape), "offset": offset}
        entry["digest"] = constant_digest(data).hex()
        table.append(entry)
        blobs.append((offset, a))
        offset += -(-a.nbytes // _ALIGN) * _ALIGN
    text_b = text.encode("utf-8")
    header = {
        "format": FORMAT,
        "text": len(text_b),
        "constants": table[: len(constants)],
        "arrays": {k: e for k, e in zip(arrays, table[len(constants) :])},
        "attrs": attrs,
    }
    head = json.dumps(header).encode("utf-8")
    prefix = MAGIC + struct.pack("<Q", len(head)) + head + text_b
    f.write(prefix + b"\0" * (-len(prefix) % _ALIGN))
    pos = 0
    for off, a in blobs:
        f.write(b"\0" * (off - pos))
        f.write(memoryview(a.reshape(-1).view(np.uint8)))
        pos = off + a.nbytes
    f.write(b"\0" * (offset - pos))


def loads(data: bytes, source_name: str = "<bytes>", trusted_digests: bool = False) -> IRModule:
    """The module `dumps` wrote. Raises ValueError for anything else. `trusted_digests`: the
    buffer is read-only memory that nothing rewrites (`load`'s mapping), so the digests stored
    beside the constants are remembered for them (structural.remember_digest)."""
    from .parser import parse
    from .structural import remember_digest

    if data[: len(MAGIC)] != MAGIC:
        raise ValueError(f"{source_name}: not a serialized Relay module")
    (n,) = struct.unpack_from("<Q", data, len(MAGIC))
    start = len(MAGIC) + 8
    header = json.loads(bytes(data[start : start + n]).decode("utf-8"))
    if header.get("format") != FORMAT:
        raise ValueError(f"{source_name}: serialized module format {header.get('format')}")
    text_end = start + n + header["text"]
    text = bytes(data[start + n : text_end]).decode("utf-8")
    base = text_end + (-text_end % _ALIGN)
    buf = memoryview(data)

    def array(e):
        dtype = np.dtype(dt.to_numpy(e["dtype"]))
        count = int(np.prod(e["shape"], dtype=np.int64))
        off = base + e["offset"]
        if count == 0:
            return np.zeros(e["shape"], dtype)
        if off + count * dtype.itemsize > len(buf):
            raise ValueError(f"{source_name}: truncated serialized module")
        a = np.frombuffer(buf, dtype=dtype, count=count, offset=off).reshape(e["shape"])
        a.setflags(write=False)  # read-only: Constant keeps it without a copy
        if trusted_digests and buf.readonly and e.get("digest"):
            remember_digest(a, bytes.fromhex(e["digest"]))
        return a

    constants = [array(e) for e in header["constants"]]
    attrs = dict(header["attrs"])
    exprs = attrs.pop("__exprs__", None)
    # typed as printed: the side expressions get their types with @main's
    mod = parse(text, source_name, typecheck=True, constants=constants)
    out_attrs = {k: _decode(v) for k, v in attrs.items()}
    if isinstance(out_attrs.get("params"), dict) and "__params__" in out_attrs["params"]:
        names = out_attrs["params"]["__params__"]
        out_attrs["params"] = {k: array(header["arrays"][f"params/{k}"]) for k in names}
    if exprs is not None:
        main = mod["main"]
        both = main.body
        items = both.fields[1].fields if isinstance(both, Tuple) and len(both.fields) == 2 else None
        if not isinstance(items, tuple) or len(items) != len(exprs["names"]):
            raise ValueError(f"{source_name}: malformed serialized module")
        ret = None
        if exprs.get("ret_text") is not None:
            ret = parse(exprs["ret_text"], typecheck=False)["main"].ret_type
        body = both.fields[0]
        new = Function(main.params, body, ret, main.type_params, main.attrs)
        # typed with the combined function: @main's type is its parameters' and body's
        ftype = FuncType(
            tuple(p.checked_type for p in main.params), body.checked_type, main.type_params
        )
        new._set_type(ftype)
        mod["main"] = new
        for gv in mod.functions:
            if gv.name_hint == "main":
                gv._set_type(ftype)
        out_attrs["source_outputs"] = dict(zip(exprs["names"], items))
    mod.attrs.update(out_attrs)
    return mod


def _ret_text(main: Function) -> str:
    from .printer import module_to_text

    stub = Function(main.params, Tuple(()), main.ret_type, main.type_params)
    return module_to_text(IRModule.from_expr(stub), show_meta_data=False)


def _split_attrs(attrs: dict):
    """(JSON-able attributes encoded, arrays, expressions of @main) or NotSerializable."""
    plain, arrays, exprs = {}, {}, {}
    for k, v in attrs.items():
        if k == "params" and isinstance(v, dict):
            for name, a in v.items():
                arrays[f"params/{name}"] = np.asarray(a)
            plain[k] = {"__params__": list(v)}
        elif isinstance(v, dict) and v and all(isinstance(e, Expr) for e in v.values()):
            if k != "source_outputs":
                raise NotSerializable(f"module attribute {k!r} holds expressions")
            exprs = dict(v)
        else:
            plain[k] = _encode(v, k)
    return plain, arrays, exprs


def _encode(v, where: str):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, tuple):
        return {"__tuple__": [_encode(x, where) for x in v]}
    if isinstance(v, list):
        return [_encode(x, where) for x in v]
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        if "__tuple__" in v or "__params__" in v:
            raise NotSerializable(f"module attribute {where!r} uses a reserved key")
        return {k: _encode(x, where) for k, x in v.items()}
    raise NotSerializable(f"module attribute {where!r} holds a {type(v).__name__}")


def _decode(v):
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if isinstance(v, dict):
        if "__tuple__" in v:
            return tuple(_decode(x) for x in v["__tuple__"])
        return {k: _decode(x) for k, x in v.items()}
    return v


__all__ = ["dumps", "loads", "save", "load", "write", "NotSerializable", "MAGIC"]
