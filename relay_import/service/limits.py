"""Budgets checked before anything is allocated: request bodies (streamed, with a deadline),
shape overrides, `.npz` inputs (each member's declared shape and dtype read from its .npy
header before it is decompressed) and JSON inputs (size and nesting depth before parsing)."""

from __future__ import annotations

import asyncio
import io
import json
import math
import zipfile

import numpy as np

from ..io import read_npy_header
from .config import Limits
from .errors import ApiError

MAX_RANK = 32
MAX_MEMBERS = 256


# -- bodies ---------------------------------------------------------------------------------------
async def read_body(request, limits: Limits, max_bytes: int | None = None) -> bytes:
    """The request body, refused past `max_bytes` (from Content-Length before reading, then
    while streaming, so chunked bodies are bounded too) or when it is not all there within
    `read_timeout` seconds."""
    from starlette.requests import ClientDisconnect

    max_bytes = limits.max_body if max_bytes is None else max_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise too_large(int(declared), max_bytes)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limits.read_timeout
    stream = request.stream().__aiter__()
    buf = bytearray()
    while True:
        left = deadline - loop.time()
        try:
            if left <= 0:
                raise TimeoutError
            chunk = await asyncio.wait_for(stream.__anext__(), left)
        except StopAsyncIteration:
            break
        except TimeoutError:
            raise ApiError(
                "request_timeout",
                f"the request body did not arrive within {limits.read_timeout:g} s",
                close=True,
            ) from None
        except ClientDisconnect:
            raise ApiError("bad_request", "the client went away", close=True) from None
        buf += chunk
        if len(buf) > max_bytes:
            raise too_large(None, max_bytes)
    return bytes(buf)


def too_large(n: int | None, limit: int) -> ApiError:
    size = f"of {n:,} bytes " if n is not None else ""
    return ApiError(
        "body_too_large",
        f"the request body {size}exceeds the limit of {limit:,} bytes",
        close=True,
    )


# -- shapes ---------------------------------------------------------------------------------------
def parse_shapes(values: list[str]) -> dict[str, tuple[int, ...]] | None:
    """`?shape=x=1,3,8,8;y=2` (or repeated `shape=` parameters) -> {name: dims}."""
    out: dict[str, tuple[int, ...]] = {}
    for v in values:
        for item in v.split(";"):
            if not item.strip():
                continue
            name, sep, dims = item.rpartition("=")
            if not sep or not name:
                raise ApiError("invalid_parameter", f"shape wants NAME=D0,D1,..., got {item!r}")
            try:
                ds = tuple(int(d) for d in dims.split(",") if d.strip())
            except ValueError:
                raise ApiError(
                    "invalid_parameter", f"shape {item!r}: dimensions must be integers"
                ) from None
            if len(ds) > MAX_RANK or any(d < 0 for d in ds):
                raise ApiError(
                    "invalid_parameter",
                    f"shape {item!r}: at most {MAX_RANK} non-negative dimensions",
                )
            out[name] = ds
    return out or None


def itemsize(dtype: str | None) -> int:
    try:
        return np.dtype(dtype).itemsize if dtype else 8
    except TypeError:
        return 8 if not dtype or "64" in dtype else 4


def check_shapes(info: dict, shapes: dict | None, limits: Limits) -> dict[str, tuple]:
    """Every input's shape as a request will use it (overrides, else the model's dims with
    unknown ones at 1), each and all together within `max_input_bytes`."""
    inputs = {i["name"]: i for i in info.get("inputs", [])}
    shapes = shapes or {}
    unknown = [n for n in shapes if n not in inputs]
    if unknown:
        raise ApiError(
            "invalid_parameter",
            f"shape override for unknown input(s) {unknown}; the inputs are {list(inputs)}",
        )
    total = 0
    effective = {}
    for name, i in inputs.items():
        if name in shapes:
            dims = shapes[name]
            if i.get("shape") is not None and len(dims) != len(i["shape"]):
                raise ApiError(
                    "invalid_parameter",
                    f"input {name!r} has {len(i['shape'])} dimensions, the override {len(dims)}",
                )
        else:
            dims = tuple(d if isinstance(d, int) else 1 for d in (i.get("shape") or ()))
        n = math.prod(dims) * itemsize(i.get("dtype"))
        total += n
        if n > limits.max_input_bytes or total > limits.max_input_bytes:
            raise ApiError(
                "budget_exceeded",
                f"input {name!r} of shape {list(dims)} ({i.get('dtype')}) takes {n:,} bytes; "
                f"inputs may take {limits.max_input_bytes:,} bytes in all",
            )
        effective[name] = dims
    return effective


# -- decoded inputs -------------------------------------------------------------------------------
def _matches(shape: tuple, want) -> bool:
    if want is None:
        return True
    return len(shape) == len(want) and all(
        not isinstance(w, int) or w == s for w, s in zip(want, shape)
    )


def decode_npz(data: bytes, expected: dict, max_bytes: int) -> dict[str, np.ndarray]:
    """Arrays of an .npz body. `expected` maps input name -> (shape with str/None for free
    dims, numpy dtype or None). Each member's header is read and checked (name, dtype, shape,
    size, the archive's own size field) before its data is decompressed."""
    if not data:
        raise ApiError(
            "empty_body",
            "send the inputs: an .npz archive, or JSON with Content-Type: application/json",
        )
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError):
        raise ApiError(
            "invalid_inputs",
            "the body is not an .npz archive; send np.savez output, or JSON "
            '{"inputs": {...}} with Content-Type: application/json',
        ) from None
    infos = z.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ApiError("invalid_inputs", f"the archive has {len(infos)} members")
    total = 0
    plan = []
    for info in infos:
        name = info.filename.removesuffix(".npy")
        if name not in expected:
            raise ApiError(
                "invalid_inputs",
                f"unknown input {name!r}; the model's inputs are {list(expected)}",
            )
        try:
            with z.open(info) as f:
                shape, fortran, dtype = read_npy_header(f)
                offset = f.tell()
        except (ValueError, OSError, zipfile.BadZipFile, EOFError, RuntimeError):
            raise ApiError("invalid_inputs", f"member {name!r} is not a .npy array") from None
        if dtype.hasobject:
            raise ApiError("invalid_inputs", f"input {name!r} holds Python objects")
        nbytes = math.prod(shape) * dtype.itemsize
        total += nbytes
        if total > max_bytes:
            raise ApiError(
                "budget_exceeded",
                f"input {name!r} of shape {list(shape)} {dtype} takes {nbytes:,} bytes; "
                f"inputs may take {max_bytes:,} bytes in all",
            )
        if info.file_size != offset + nbytes:
            raise ApiError("invalid_inputs", f"member {name!r}: its size does not match its header")
        want_shape, want_dtype = expected[name]
        if not _matches(shape, want_shape):
            raise ApiError(
                "invalid_inputs",
                f"input {name!r} has shape {shape}, expected {tuple(want_shape)}",
            )
        if want_dtype is not None and not np.can_cast(dtype, want_dtype, "same_kind"):
            raise ApiError(
                "invalid_inputs", f"input {name!r} has dtype {dtype}, expected {want_dtype}"
            )
        plan.append((name, info, offset, shape, fortran, dtype))
    out = {}
    for name, info, offset, shape, fortran, dtype in plan:
        try:
            with z.open(info) as f:
                f.seek(offset)
                data = f.read(info.file_size - offset)
            a = np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")
        except (ValueError, OSError, zipfile.BadZipFile, EOFError, RuntimeError):
            raise ApiError("invalid_inputs", f"member {name!r} is corrupt") from None
        out[name] = np.array(a, order="C")
    return out


def json_depth(data: bytes, max_strings: int = 4096) -> int:
    """Nesting depth of a JSON document, computed without parsing it (so a deep document
    cannot exhaust the parser's stack)."""
    b = np.frombuffer(data, np.uint8)
    quotes = np.flatnonzero(b == 34)
    if len(quotes) > max_strings:
        raise ApiError("invalid_inputs", f"the document has more than {max_strings} strings")
    real = []
    for q in quotes.tolist():  # a quote is escaped by an odd run of backslashes before it
        window = data[max(0, q - 256) : q]
        run = len(window) - len(window.rstrip(b"\\"))
        if run == 256:
            raise ApiError("invalid_json", "the body is not valid JSON")
        if run % 2 == 0:
            real.append(q)
    if len(real) % 2:
        raise ApiError("invalid_json", "the body is not valid JSON (an unterminated string)")
    delta = (b == 91).astype(np.int32) + (b == 123) - (b == 93) - (b == 125)
    if real:
        inside = np.zeros(len(b) + 1, np.int32)
        inside[real[0::2]] += 1
        inside[np.asarray(real[1::2]) + 1] -= 1
        delta[np.cumsum(inside)[:-1] > 0] = 0
    return int(np.cumsum(delta).max()) if len(delta) else 0


def decode_json(data: bytes, expected: dict, limits: Limits) -> dict[str, np.ndarray]:
    """`{"inputs": {name: nested lists}}` -> arrays, with size, depth and budget checks."""
    if not data:
        raise ApiError("empty_body", 'send {"inputs": {"name": [...]}}')
    if len(data) > limits.max_json_body:
        raise ApiError(
            "body_too_large",
            f"a JSON body may have {limits.max_json_body:,} bytes; send larger inputs as .npz",
        )
    depth = json_depth(data)
    if depth > limits.max_json_depth:
        raise ApiError(
            "json_too_deep",
            f"the JSON document nests {depth} levels; at most {limits.max_json_depth}",
        )
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        raise ApiError("invalid_json", "the body is not valid JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("inputs"), dict):
        raise ApiError(
            "invalid_inputs",
            'the body must be a JSON object {"inputs": {"name": [...]}}, '
            f"got {type(doc).__name__}" + ("" if not isinstance(doc, dict) else " without inputs"),
        )
    out = {}
    total = 0
    for name, v in doc["inputs"].items():
        if name not in expected:
            raise ApiError(
                "invalid_inputs", f"unknown input {name!r}; the model's inputs are {list(expected)}"
            )
        want_shape, want_dtype = expected[name]
        try:
            arr = np.asarray(v, dtype=want_dtype)
        except (ValueError, TypeError, OverflowError):
            raise ApiError(
                "invalid_inputs",
                f"input {name!r} is not a rectangular array of numbers"
                + (f" convertible to {want_dtype}" if want_dtype is not None else ""),
            ) from None
        if arr.dtype.hasobject:
            raise ApiError("invalid_inputs", f"input {name!r} is not an array of numbers")
        total += arr.nbytes
        if total > limits.max_input_bytes:
            raise ApiError("budget_exceeded", f"inputs may take {limits.max_input_bytes:,} bytes")
        if not _matches(arr.shape, want_shape):
            raise ApiError(
                "invalid_inputs",
                f"input {name!r} has shape {arr.shape}, expected {tuple(want_shape)}",
            )
        out[name] = arr
    return out
