"""Loading and calling compiled modules with numpy and ctypes only (no llvmlite).

A compiled module is a directory (the build cache entry, or what `export` writes):

    lib.so          position-independent shared library with `relay_run` (docs/c_abi.md)
    weights.bin     constants, each 64-byte aligned, in constant-slot order
    manifest.json   inputs, outputs, constants, workspace size, target, versions, hash

One inference is one ctypes call: the pointer tables are prepared once per thread, and each
thread has its own workspace, so a module may be called from several threads at once.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import threading

import numpy as np

from ..errors import InputError, ModelLoadError, RelayError
from ..ir import dtype as _dt

FORMAT_VERSION = 1
_c_ptr = ctypes.c_void_p


class RuntimeError_(RelayError, RuntimeError):
    """The generated code reported an error at run time."""


def _default_threads() -> int:
    env = os.environ.get("RELAY_NUM_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        return max(1, os.cpu_count() or 1)


def _type_str(shape, dtype) -> str:
    dims = ", ".join("?" if d is None else str(d) for d in shape)
    return f"Tensor[({dims}), {dtype}]"


class _ThreadState(threading.local):
    def __init__(self, nin: int, nout: int, ws_bytes: int):
        self.inputs = np.zeros(max(nin, 1), np.uint64)
        self.outputs = np.zeros(max(nout, 1), np.uint64)
        raw = np.empty(ws_bytes + 128, np.uint8)
        off = (-raw.ctypes.data) % 64
        self.ws_raw = raw
        self.ws_addr = raw.ctypes.data + off
        self.in_addr = self.inputs.ctypes.data
        self.out_addr = self.outputs.ctypes.data


class CompiledModule:
    """A compiled Relay module: call it with numpy arrays, get a list of numpy arrays.

    >>> lib = relay_core.build(mod)
    >>> outs = lib(x)             # positional, in input order
    >>> outs = lib(data=x)        # or by input name
    >>> lib.export("model.relaylib"); lib2 = relay_core.load_module("model.relaylib")
    """

    def __init__(self, path: str, num_threads: int | None = None):
        self.path = os.path.abspath(path)
        try:
            with open(os.path.join(self.path, "manifest.json")) as f:
                m = json.load(f)
        except (OSError, ValueError) as e:
            raise ModelLoadError(f"{path} is not a compiled Relay module: {e}") from None
        if m.get("format_version") != FORMAT_VERSION:
            raise ModelLoadError(
                f"{path} has format version {m.get('format_version')}, this runtime reads "
                f"{FORMAT_VERSION}; recompile the model"
            )
        _check_cpu(m.get("target", {}))
        self.manifest = m
        self.input_names = [i["name"] for i in m["inputs"]]
        self.output_names = [o["name"] for o in m["outputs"]]
        self.kind = m.get("kind", "graph")
        self._in_shapes = [tuple(i["shape"]) for i in m["inputs"]]
        self._in_dtypes = [np.dtype(_dt.to_numpy(i["dtype"])) for i in m["inputs"]]
        self._out_shapes = [tuple(o["shape"]) for o in m["outputs"]]
        self._out_dtypes = [np.dtype(_dt.to_numpy(o["dtype"])) for o in m["outputs"]]
        self.input_types = [_type_str(s, i["dtype"]) for s, i in zip(self._in_shapes, m["inputs"])]
        self.output_types = [
            _type_str(s, o["dtype"]) for s, o in zip(self._out_shapes, m["outputs"])
        ]
        self._index = {n: k for k, n in enumerate(self.input_names)}
        self.num_threads = num_threads or _default_threads()
        self._load_constants()
        self._lib = ctypes.CDLL(os.path.join(self.path, "lib.so"))
        if self.kind == "vm":
            self._setup_vm(m)
        else:
            fn = getattr(self._lib, m.get("entry", "relay_run"))
            fn.argtypes = [_c_ptr, _c_ptr, _c_ptr, _c_ptr, ctypes.c_int32]
            fn.restype = ctypes.c_int32
            self._fn = fn
        self._ws = int(m["workspace_bytes"])
        self._tls = _ThreadState(len(self.input_names), len(self.output_names), self._ws)

    def _load_constants(self) -> None:
        consts = self.manifest.get("constants", [])
        self._const_table = np.zeros(max(len(consts), 1), np.uint64)
        self._const_arrays = []
        if not consts:
            return
        wpath = os.path.join(self.path, "weights.bin")
        size = os.path.getsize(wpath)
        data = np.memmap(wpath, np.uint8, "r", shape=(size,)) if size else np.zeros(64, np.uint8)
        for k, c in enumerate(consts):
            dt = np.dtype(_dt.to_numpy(c["dtype"]))
            n = int(np.prod(c["shape"], dtype=np.int64))
            arr = data[c["offset"] : c["offset"] + n * dt.itemsize].view(dt).reshape(c["shape"])
            self._const_arrays.append(arr)
            self._const_table[k] = arr.ctypes.data if n else data.ctypes.data
        self._weights = data

    # -- calling -------------------------------------------------------------------------------
    def _bind(self, args, kwargs) -> list:
        n = len(self.input_names)
        if kwargs:
            if len(args) > n:
                raise InputError(f"the model takes {n} inputs, got {len(args)}")
            vals = list(args) + [None] * (n - len(args))
            for k, v in kwargs.items():
                i = self._index.get(k)
                if i is None:
                    raise InputError(f"unknown input {k!r}; inputs are {self.input_names}")
                if vals[i] is not None:
                    raise InputError(f"input {k!r} given twice")
                vals[i] = v
        else:
            vals = list(args)
        if len(vals) != n or any(v is None for v in vals):
            missing = [self.input_names[i] for i in range(n) if i >= len(vals) or vals[i] is None]
            if len(vals) > n:
                raise InputError(f"the model takes {n} inputs, got {len(vals)}")
            raise InputError(f"missing input(s) {missing}; inputs are {self.input_names}")
        for i, v in enumerate(vals):
            dt, shape = self._in_dtypes[i], self._in_shapes[i]
            if (
                type(v) is np.ndarray
                and v.dtype == dt
                and v.shape == shape
                and v.flags.c_contiguous
            ):
                continue
            vals[i] = self._coerce(i, v)
        if self.kind == "vm":
            self._check_dims(vals)
        return vals

    def _check_dims(self, vals) -> None:
        """Shape variables shared by several inputs must agree."""
        seen: dict = {}
        for i, v in enumerate(vals):
            for d, s in zip(self._in_shapes[i], v.shape):
                if isinstance(d, str):
                    if d in seen and seen[d][1] != s:
                        j = seen[d][0]
                        raise InputError(
                            f"dimension {d} is {seen[d][1]} in input {self.input_names[j]!r} "
                            f"but {s} in input {self.input_names[i]!r}"
                        )
                    seen.setdefault(d, (i, s))

    def _coerce(self, i: int, v) -> np.ndarray:
        name, dt, shape = self.input_names[i], self._in_dtypes[i], self._in_shapes[i]
        arr = np.asarray(v)
        if arr.dtype != dt:
            if isinstance(v, np.ndarray) and not np.can_cast(arr.dtype, dt, "same_kind"):
                raise InputError(
                    f"input {name!r} has dtype {arr.dtype}, expected {_dt.from_numpy(dt)}"
                )
            try:
                arr = arr.astype(dt)
            except (TypeError, ValueError):
                raise InputError(f"input {name!r} cannot be converted to {dt}") from None
        if len(arr.shape) != len(shape) or any(
            isinstance(d, int) and d != s for d, s in zip(shape, arr.shape)
        ):
            raise InputError(
                f"input {name!r} has shape {arr.shape}, expected {shape} ({self.input_types[i]})"
            )
        return np.ascontiguousarray(arr)

    def __call__(self, *args, **kwargs) -> list[np.ndarray]:
        vals = self._bind(args, kwargs)
        if self.kind == "vm":
            return self._call_vm(vals)
        st = self._tls
        ins = st.inputs
        for i, v in enumerate(vals):
            ins[i] = v.__array_interface__["data"][0]
        outs = [np.empty(s, d) for s, d in zip(self._out_shapes, self._out_dtypes)]
        optr = st.outputs
        for i, o in enumerate(outs):
            optr[i] = o.__array_interface__["data"][0]
        rc = self._fn(
            st.in_addr, st.out_addr, self._const_table.ctypes.data, st.ws_addr, self.num_threads
        )
        if rc != 0:
            raise RuntimeError_(f"the compiled model failed with code {rc}")
        return outs

    run = __call__

    # -- the general path (control flow, dynamic shapes): boxed values ------------------------
    def _setup_vm(self, m) -> None:
        lib = self._lib
        c = ctypes
        self._wrap = lib.relay_tensor_wrap
        self._wrap.argtypes = [_c_ptr, c.c_int64, _c_ptr, c.c_int64]
        self._wrap.restype = _c_ptr
        self._release = lib.relay_release
        self._release.argtypes = [_c_ptr]
        self._ndim = lib.relay_ndim
        self._ndim.argtypes = [_c_ptr]
        self._ndim.restype = c.c_int64
        self._shape = lib.relay_shape
        self._shape.argtypes = [_c_ptr]
        self._shape.restype = c.POINTER(c.c_int64)
        self._data = lib.relay_data
        self._data.argtypes = [_c_ptr]
        self._data.restype = _c_ptr
        self._guarded = lib.relay_guarded_call
        self._guarded.argtypes = [_c_ptr, _c_ptr, _c_ptr, _c_ptr, c.c_int32]
        self._guarded.restype = c.c_int32
        self._last_error = lib.relay_last_error
        self._last_error.restype = c.c_char_p
        self._entry_addr = c.cast(getattr(lib, m.get("entry", "relay_run_dyn")), c.c_void_p).value

    def _call_vm(self, vals) -> list[np.ndarray]:
        c = ctypes
        n, nout = len(vals), len(self.output_names)
        ins = (c.c_void_p * max(n, 1))()
        for i, v in enumerate(vals):
            shape = (c.c_int64 * max(v.ndim, 1))(*v.shape)
            ins[i] = self._wrap(v.ctypes.data, v.ndim, shape, v.itemsize)
        outs = (c.c_void_p * max(nout, 1))()
        rc = self._guarded(
            self._entry_addr, ins, outs, self._const_table.ctypes.data, self.num_threads
        )
        if rc != 0:
            msg = self._last_error().decode(errors="replace")
            raise RuntimeError_(f"the compiled model failed: {msg}")
        results = []
        for k in range(nout):
            o = outs[k]
            nd = self._ndim(o)
            sp = self._shape(o)
            shape = tuple(sp[i] for i in range(nd))
            dt = self._out_dtypes[k]
            count = int(np.prod(shape, dtype=np.int64))
            arr = np.empty(shape, dt)
            if count:
                c.memmove(arr.ctypes.data, self._data(o), count * dt.itemsize)
            results.append(arr)
            self._release(o)
        return results

    def profile(self) -> list[dict]:
        """Mean time per step since the last call (modules built with RELAY_PROFILE=1)."""
        if not self.manifest.get("profile"):
            raise RelayError("this module was not built with RELAY_PROFILE=1")
        steps = self.manifest["steps"]
        out = np.zeros(len(steps), np.float64)
        fn = self._lib.relay_prof_read
        fn.argtypes = [_c_ptr, ctypes.c_int32]
        fn(out.ctypes.data, len(steps))
        return [dict(s, us=float(t) / 1e3) for s, t in zip(steps, out)]

    # -- export --------------------------------------------------------------------------------
    def export(self, path: str) -> str:
        """Write the library, weights and manifest to directory `path` (created)."""
        os.makedirs(path, exist_ok=True)
        for f in ("lib.so", "weights.bin", "manifest.json"):
            src = os.path.join(self.path, f)
            if os.path.exists(src):
                shutil.copyfile(src, os.path.join(path, f))
        return path

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {t}" for n, t in zip(self.input_names, self.input_types))
        outs = ", ".join(self.output_types)
        return f"CompiledModule(({ins}) -> ({outs}))"


def load_module(path: str, num_threads: int | None = None) -> CompiledModule:
    """Load an exported module with numpy and ctypes only."""
    if not os.path.isdir(path):
        raise ModelLoadError(f"{path} is not a directory written by CompiledModule.export")
    return CompiledModule(path, num_threads)


_CPU_FLAGS = {
    "avx": "avx",
    "avx2": "avx2",
    "fma": "fma",
    "avx512f": "avx512f",
    "avx512bw": "avx512bw",
    "avx512dq": "avx512dq",
    "avx512vl": "avx512vl",
    "f16c": "f16c",
    "sse4.1": "sse4_1",
    "sse4.2": "sse4_2",
}


def _check_cpu(target: dict) -> None:
    """Refuse code built for CPU features this machine lacks (it would die with SIGILL)."""
    feats = target.get("features", "")
    try:
        with open("/proc/cpuinfo") as f:
            flags = set()
            for line in f:
                if line.startswith("flags"):
                    flags.update(line.split(":", 1)[1].split())
                    break
    except OSError:
        return
    if not flags:
        return
    missing = [n for n, fl in _CPU_FLAGS.items() if f"+{n}" in feats.split(",") and fl not in flags]
    if missing:
        raise ModelLoadError(
            f"this module was compiled for a CPU with {', '.join(missing)}, which this machine "
            "lacks; recompile it here"
        )
