"""Reading inputs from .npy / .npz files and writing outputs."""

from __future__ import annotations

import math
import os
import re
import zipfile
from pathlib import Path

import numpy as np

from relay_core.errors import InputError, ResourceLimitError


def _budget() -> int:
    from relay_core.backend.budget import max_tensor_bytes

    return max_tensor_bytes()


_NPY_MAGIC = b"\x93NUMPY"
_NPY_TOKEN = re.compile(r"\s*(?:'([^'\\]*)'|(True|False)|(\d+)|([{}(),:]))")
_NPY_KEYS = {"descr", "fortran_order", "shape"}


def read_npy_header(f) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran order, dtype) from a .npy header, parsed without `ast`: numpy's own
    reader calls `ast.literal_eval`, whose AST constructor keeps a recursion counter shared
    by all threads in CPython 3.11 ("SystemError: AST constructor recursion depth mismatch"
    when two threads parse at once, as a server's request threads do; CPython gh-106905).
    Plain dtypes only (a string descr); raises ValueError on anything else."""
    magic = f.read(8)
    if len(magic) != 8 or magic[:6] != _NPY_MAGIC or magic[6] not in (1, 2, 3):
        raise ValueError("no .npy magic string")
    width = 2 if magic[6] == 1 else 4
    raw = f.read(width)
    if len(raw) != width:
        raise ValueError("truncated header")
    n = int.from_bytes(raw, "little")
    if n > 1 << 20:
        raise ValueError(f"a header of {n:,} bytes")
    text = f.read(n)
    if len(text) != n:
        raise ValueError("truncated header")
    text = text.decode("latin1" if magic[6] < 3 else "utf8").rstrip()
    toks, pos = [], 0
    while pos < len(text):
        m = _NPY_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot parse the header {text[:80]!r}")
        toks.append(m.groups())
        pos = m.end()
    # {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }
    if not toks or toks[0][3] != "{" or toks[-1][3] != "}":
        raise ValueError(f"the header {text[:80]!r} is not a dictionary")
    try:
        vals = _npy_dict(toks, text)
    except IndexError:
        raise ValueError(f"cannot parse the header {text[:80]!r}") from None
    shape, fortran, descr = vals.get("shape"), vals.get("fortran_order"), vals.get("descr")
    if not isinstance(shape, tuple) or not isinstance(fortran, bool) or not isinstance(descr, str):
        raise ValueError(f"the header {text[:80]!r} lacks descr, fortran_order or shape")
    try:
        dtype = np.dtype(descr)
    except TypeError:
        raise ValueError(f"unknown dtype {descr!r}") from None
    return shape, fortran, dtype


def _npy_dict(toks: list, text: str) -> dict:
    vals: dict = {}
    k = 1
    while k < len(toks) - 1:
        key, colon = toks[k][0], toks[k + 1][3] if k + 1 < len(toks) else None
        if key not in _NPY_KEYS or key in vals or colon != ":":
            raise ValueError(f"unexpected key in the header {text[:80]!r}")
        k += 2
        if toks[k][3] == "(":
            dims, k = [], k + 1
            while toks[k][3] != ")":
                if toks[k][2] is None:
                    raise ValueError(f"a shape of non-integers in {text[:80]!r}")
                dims.append(int(toks[k][2]))
                k += 1
                if toks[k][3] == ",":
                    k += 1
                elif toks[k][3] != ")":
                    raise ValueError(f"cannot parse the shape in {text[:80]!r}")
            vals[key] = tuple(dims)
        elif toks[k][0] is not None or toks[k][1] is not None:
            vals[key] = toks[k][0] if toks[k][0] is not None else toks[k][1] == "True"
        else:
            raise ValueError(f"unexpected value in the header {text[:80]!r}")
        k += 1
        if toks[k][3] == ",":
            k += 1
        elif k != len(toks) - 1:
            raise ValueError(f"cannot parse the header {text[:80]!r}")
    return vals


def read_npy(f, size: int, what: str, budget: int) -> np.ndarray:
    """One .npy array from the stream `f` holding `size` bytes: the header is checked (no
    Python objects, data size matching the file, within `budget`) before any data is read."""
    try:
        shape, fortran, dtype = read_npy_header(f)
    except (ValueError, OSError, EOFError) as e:
        raise InputError(f"{what} is not a .npy array: {e}") from None
    if dtype.hasobject:
        raise InputError(f"{what} holds Python objects (a pickle); save plain arrays")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > budget:
        raise ResourceLimitError(
            f"{what} declares a {list(shape)} {dtype} array of {nbytes:,} bytes, over the budget "
            f"of {budget:,} (RELAY_MAX_TENSOR_BYTES)"
        )
    if size - f.tell() != nbytes:
        raise InputError(
            f"{what}: its header declares {list(shape)} {dtype} ({nbytes:,} bytes) but it holds "
            f"{size - f.tell():,} bytes of data"
        )
    data = f.read(nbytes)
    arr = np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")
    return np.array(arr, order="C")


def read_npz(path: str, budget: int) -> dict:
    """The arrays of an .npz file by name, each checked as `read_npy` does (and, unlike
    np.load, safe to call from several threads at once: see `read_npy_header`)."""
    from converters.archive import check_zip

    check_zip(path, f"inputs archive {path}", budget, InputError)
    out = {}
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                name = info.filename.removesuffix(".npy")
                with z.open(info) as f:
                    out[name] = read_npy(f, info.file_size, f"{path}: member {name!r}", budget)
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError) as e:
        raise InputError(f"cannot read inputs from {path}: {e}") from None
    return out


def load_array(path: str, what: str) -> np.ndarray:
    """An array from a .npy file, checked before its data is read."""
    try:
        with open(path, "rb") as f:
            return read_npy(f, os.fstat(f.fileno()).st_size, what, _budget())
    except OSError as e:
        raise InputError(f"cannot read {what}: {e.strerror or e}") from None


def read_inputs(pairs: list[str] | None, npz: str | None, names: list[str] | None) -> dict:
    """Inputs from `name=file.npy` pairs and / or an .npz of arrays by name."""
    feed: dict[str, np.ndarray] = {}
    if npz:
        feed.update(read_npz(npz, _budget()))
    for p in pairs or []:
        name, sep, path = p.partition("=")
        if not sep:
            if names and len(names) == 1:
                name, path = names[0], p
            else:
                raise InputError(f"--input wants NAME=FILE.npy, got {p!r}")
        feed[name] = load_array(path, f"input {name} ({path})")
    if names is not None:
        unknown = [k for k in feed if k not in names]
        if unknown:
            raise InputError(f"unknown input(s) {unknown}; the model's inputs are {names}")
    return feed


def _storable(v) -> np.ndarray:
    """An array np.load reads back without pickle: string tensors become unicode arrays."""
    v = np.asarray(v)
    if v.dtype == object:
        return np.array(v.tolist(), dtype=str).reshape(v.shape)
    return v


def write_outputs(path: str, names: list[str], outs: list) -> Path:
    p = Path(path)
    np.savez(p, **{n: _storable(v) for n, v in zip(names, outs)})
    return p


def _one(d) -> int:
    """A run-time dim filled in: 1, or k for a multiple `k*n` of a named dim n (n = 1)."""
    from relay_core.ir.types import dim_monomial, normalize_dim

    m = dim_monomial(normalize_dim(d))
    return 1 if m is None else m[0]


def fill_inputs(lib, feed: dict, mode: str, seed: int = 0) -> dict[str, tuple]:
    """Add the inputs `feed` lacks, made of zeros, ones or random values (tvmc's fill modes);
    dims unknown until run time are 1. Returns {name: shape} of what was filled."""
    from relay_core.ir import dtype as dt

    rng = np.random.default_rng(seed)
    filled = {}
    for a in lib.get_inputs():
        if a.name in feed:
            continue
        if not a.dtype:
            raise InputError(f"input {a.name!r} is a {a.type}: give it with --input / --inputs")
        shape = tuple(_one(d) for d in a.shape)
        if a.dtype == "string":
            raise InputError(f"input {a.name!r} holds strings: give it with --input / --inputs")
        npd = dt.to_numpy(a.dtype)
        nbytes = math.prod(shape) * np.dtype(npd).itemsize
        if nbytes > _budget():
            raise ResourceLimitError(
                f"input {a.name!r} would be a {list(shape)} {a.dtype} tensor of {nbytes:,} "
                f"bytes, over the budget of {_budget():,} (RELAY_MAX_TENSOR_BYTES)"
            )
        if mode == "zeros":
            v = np.zeros(shape, npd)
        elif mode == "ones":
            v = np.ones(shape, npd)
        elif a.dtype == "bool":
            v = rng.random(shape) < 0.5
        elif dt.is_int(a.dtype):
            v = rng.integers(0, 10, size=shape).astype(npd)
        else:
            v = rng.standard_normal(shape).astype(npd)
        feed[a.name] = v
        filled[a.name] = shape
    return filled
