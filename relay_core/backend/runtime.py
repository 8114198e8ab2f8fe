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
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, ModelLoadError, ModelRunError, RelayError, ResourceLimitError
from ..ir import dtype as _dt

# 2: constants may be derived at load time (`derived` entries, `relay_prepare`); 1 still loads
FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
_c_ptr = ctypes.c_void_p


RuntimeError_ = ModelRunError  # its former name


def _default_threads() -> int:
    env = os.environ.get("RELAY_NUM_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        return max(1, os.cpu_count() or 1)


def _np_dtype(d):
    return None if d is None else np.dtype(_dt.to_numpy(d))


def _desc_str(entry: dict) -> str:
    desc = entry.get("type")
    if desc is None or desc.get("kind") == "tensor":
        return _type_str(entry["shape"], entry["dtype"])
    return _desc_type_str(desc)


def _desc_type_str(desc: dict) -> str:
    k = desc["kind"]
    if k == "tensor":
        return _type_str(desc["shape"], desc["dtype"])
    if k == "tuple":
        return "(" + ", ".join(_desc_type_str(f) for f in desc["fields"]) + ")"
    args = [f for c in desc["ctors"] for f in c["fields"] if f.get("kind") != "self"]
    return desc["name"] + (
        "[" + ", ".join(_desc_type_str(a) for a in args[:1]) + "]" if args else ""
    )


def _type_str(shape, dtype) -> str:
    dims = ", ".join("?" if d is None else str(d) for d in shape)
    return f"Tensor[({dims}), {dtype}]"


_MISSING = object()

# onnxruntime's names of element types (NodeArg.type is "tensor(<name>)").
_ORT_ELEM = {
    "float32": "float",
    "float64": "double",
    "float8_e4m3fn": "float8e4m3fn",
    "float8_e4m3fnuz": "float8e4m3fnuz",
    "float8_e5m2": "float8e5m2",
    "float8_e5m2fnuz": "float8e5m2fnuz",
    "float8_e8m0fnu": "float8e8m0",
    "float4_e2m1fn": "float4e2m1",
}


def _ort_type(desc: dict) -> str:
    """onnxruntime's type string: `tensor(float)`, `seq(tensor(int64))`, `optional(...)`;
    tuples (which ONNX lacks) read `tuple(tensor(float),tensor(int64))`."""
    k = desc.get("kind", "tensor")
    if k == "tensor":
        return f"tensor({_ORT_ELEM.get(desc['dtype'], desc['dtype'])})"
    if k == "tuple":
        return "tuple(" + ",".join(_ort_type(f) for f in desc["fields"]) + ")"
    args = [f for c in desc["ctors"] for f in c["fields"] if f.get("kind") != "self"]
    inner = _ort_type(args[0]) if args else ""
    if desc["name"] == "List":
        return f"seq({inner})"
    if desc["name"] == "Option":
        return f"optional({inner})"
    return desc["name"]


@dataclass(frozen=True)
class NodeArg:
    """An input or output as onnxruntime describes it: `name`, `shape` (ints; a name or None
    where the size is known only at run time) and `type` (`"tensor(float)"`, ...)."""

    name: str
    shape: list
    type: str
    dtype: str = ""  # the Relay dtype ("float32"), "" for non-tensors

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def _node_arg(entry: dict) -> NodeArg:
    desc = entry.get("type") or {"kind": "tensor", "dtype": entry["dtype"]}
    shape = list(entry["shape"]) if "shape" in entry else []
    return NodeArg(entry["name"], shape, _ort_type(desc), entry.get("dtype", ""))


def _named_dims(shapes) -> list[tuple]:
    """(input, axis, k, name) for each input dim that is a named dim n (k = 1) or a multiple
    `k*n` of one, read once from the manifest's shapes."""
    from ..ir.types import dim_monomial, normalize_dim

    out = []
    for i, shape in enumerate(shapes):
        for axis, d in enumerate(shape or ()):
            m = dim_monomial(normalize_dim(d)) if isinstance(d, str) else None
            if m is not None and m[1] is not None:
                out.append((i, axis, m[0], m[1].name))
    return out


def _contig(a) -> np.ndarray:
    """A C-contiguous array of the same shape (np.ascontiguousarray makes 0-d arrays 1-d)."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else a.copy(order="C")


def _derived_buffer(nbytes: int) -> np.ndarray:
    """Page-aligned memory for the derived constants, its pages mapped in one system call
    (MAP_POPULATE): relay_prepare writes all of it at once, and a page fault per 4 KB page cost
    more than the transform (numpy's own allocation also asks for huge pages, whose direct
    compaction took another 100 ms at load on a busy machine)."""
    import mmap

    flags = (
        mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20) | getattr(mmap, "MAP_POPULATE", 0)
    )
    try:
        buf = mmap.mmap(-1, nbytes, flags=flags)
    except (OSError, ValueError):
        raw = np.empty(nbytes + 64, np.uint8)
        return raw[(-raw.ctypes.data) % 64 :][:nbytes]
    return np.frombuffer(buf, np.uint8)


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

    It also speaks onnxruntime's dialect, so code written for an `InferenceSession` runs on it:
    `get_inputs()` / `get_outputs()` (objects with `name`, `shape`, `type`) and
    `run(output_names, input_feed)`.

    >>> lib = relay_core.build(mod)
    >>> outs = lib(x)             # positional, in input order
    >>> outs = lib(data=x)        # or by input name
    >>> probs, = lib.run(["probs"], {"data": x})        # onnxruntime's call
    >>> [(i.name, i.shape, i.type) for i in lib.get_inputs()]
    [('data', ['batch', 3, 224, 224], 'tensor(float)')]
    >>> lib.export("model.relaylib"); lib2 = relay_core.load_module("model.relaylib")

    A model with loops runs under a budget per call when `lib.max_iterations` (loop iterations
    and function calls) or `lib.timeout` (seconds) is set: past it, a ResourceLimitError.
    Indices out of range raise ModelRunError naming the index (nothing is clamped).
    """

    def __init__(self, path: str, num_threads: int | None = None):
        self.path = os.path.abspath(path)
        try:
            with open(os.path.join(self.path, "manifest.json"), "rb") as f:
                self._manifest_bytes = f.read()
            m = json.loads(self._manifest_bytes)
        except (OSError, ValueError) as e:
            raise ModelLoadError(f"{path} is not a compiled Relay module: {e}") from None
        if m.get("format_version") not in _READABLE_VERSIONS:
            raise ModelLoadError(
                f"{path} has format version {m.get('format_version')}, this runtime reads "
                f"versions {', '.join(map(str, _READABLE_VERSIONS))}; recompile the model"
            )
        _check_cpu(m.get("target", {}))
        self.manifest = m
        self.input_names = [i["name"] for i in m["inputs"]]
        self.output_names = [o["name"] for o in m["outputs"]]
        self.kind = m.get("kind", "graph")
        self._in_descs = [i.get("type") for i in m["inputs"]]
        self._out_descs = [o.get("type") for o in m["outputs"]]
        self._in_shapes = [tuple(i["shape"]) if "shape" in i else None for i in m["inputs"]]
        self._named_dims = _named_dims(self._in_shapes)
        self._in_dtypes = [_np_dtype(i.get("dtype")) for i in m["inputs"]]
        self._out_shapes = [tuple(o["shape"]) if "shape" in o else None for o in m["outputs"]]
        self._out_dtypes = [_np_dtype(o.get("dtype")) for o in m["outputs"]]
        self.input_types = [_desc_str(i) for i in m["inputs"]]
        self.output_types = [_desc_str(o) for o in m["outputs"]]
        self._index = {i["param"]: k for k, i in enumerate(m["inputs"]) if "param" in i}
        self._index.update({n: k for k, n in enumerate(self.input_names)})
        self._out_index = {n: k for k, n in enumerate(self.output_names)}
        self.num_threads = num_threads or _default_threads()
        so = os.path.join(self.path, "lib.so")
        self._lib = ctypes.CDLL(so)
        self._load_constants()
        # The library's file stays readable (for export) after its cache directory is evicted.
        try:
            self._so_fd = os.open(so, os.O_RDONLY)
            weakref.finalize(self, os.close, self._so_fd)
        except OSError:
            self._so_fd = None
        if self.kind == "vm":
            self._setup_vm(m)
        else:
            fn = getattr(self._lib, m.get("entry", "relay_run"))
            fn.argtypes = [_c_ptr, _c_ptr, _c_ptr, _c_ptr, ctypes.c_int32]
            fn.restype = ctypes.c_int32
            self._fn = fn
            self._lib.relay_last_error.restype = ctypes.c_char_p
        # run-time budget of one call (loops: models with control flow): None is unbounded
        self.max_iterations: int | None = None
        self.timeout: float | None = None
        self._has_strings = any(np.dtype(d).kind == "O" for d in self._out_dtypes)
        self._ws = int(m["workspace_bytes"])
        self._tls = _ThreadState(len(self.input_names), len(self.output_names), self._ws)

    def _load_constants(self) -> None:
        """weights.bin memory-mapped; the constant table filled, and the derived constants
        computed (once, into memory), by the library's `relay_prepare` (format 2)."""
        m = self.manifest
        consts = m.get("constants", [])
        self._const_table = np.zeros(max(len(consts), 1), np.uint64)
        self._derived = None
        wpath = os.path.join(self.path, "weights.bin")
        size = os.path.getsize(wpath) if consts else 0
        data = np.memmap(wpath, np.uint8, "r", shape=(size,)) if size else np.zeros(64, np.uint8)
        self._weights = data
        if not consts:
            return
        if m["format_version"] == 1:  # every constant stored
            for k, c in enumerate(consts):
                self._const_table[k] = data.ctypes.data + c["offset"]
            return
        nbytes = int(m.get("derived_bytes", 0))
        daddr = 0
        if nbytes:
            self._derived = _derived_buffer(nbytes)
            daddr = self._derived.ctypes.data
        prepare = getattr(self._lib, m.get("prepare", "relay_prepare"))
        prepare.argtypes = [_c_ptr, _c_ptr, _c_ptr, ctypes.c_int32]
        prepare.restype = ctypes.c_int32
        rc = prepare(data.ctypes.data, daddr, self._const_table.ctypes.data, self.num_threads)
        if rc != 0:
            raise ModelLoadError(f"{self.path}: relay_prepare failed (code {rc})")

    # -- calling -------------------------------------------------------------------------------
    def _bind(self, args, kwargs) -> list:
        n = len(self.input_names)
        if kwargs:
            if len(args) > n:
                raise InputError(f"the model takes {n} inputs, got {len(args)}")
            vals = list(args) + [_MISSING] * (n - len(args))
            for k, v in kwargs.items():
                i = self._index.get(k)
                if i is None:
                    raise InputError(f"unknown input {k!r}; inputs are {self.input_names}")
                if vals[i] is not _MISSING:
                    raise InputError(f"input {k!r} given twice")
                vals[i] = v
        else:
            vals = list(args)
        if len(vals) != n or any(v is _MISSING for v in vals):
            missing = [
                self.input_names[i] for i in range(n) if i >= len(vals) or vals[i] is _MISSING
            ]
            if len(vals) > n:
                raise InputError(f"the model takes {n} inputs, got {len(vals)}")
            raise InputError(f"missing input(s) {missing}; inputs are {self.input_names}")
        for i, v in enumerate(vals):
            dt, shape = self._in_dtypes[i], self._in_shapes[i]
            if shape is None:  # a tuple, list or option: converted when called
                continue
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
        """Shape variables shared by several inputs must agree (`2*n` is twice n's size)."""
        seen: dict = {}
        for i, axis, k, name in self._named_dims:
            s = vals[i].shape[axis]
            if s % k:
                raise InputError(
                    f"dimension {k}*{name} of input {self.input_names[i]!r} must be a multiple "
                    f"of {k}, got {s}"
                )
            if name in seen and seen[name][1] != s // k:
                j, n = seen[name]
                raise InputError(
                    f"dimension {name} is {n} in input {self.input_names[j]!r} "
                    f"but {s // k} in input {self.input_names[i]!r} (of size {s})"
                )
            seen.setdefault(name, (i, s // k))

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
        return _contig(arr)

    def __call__(self, /, *args, **kwargs) -> list[np.ndarray]:
        vals = self._bind(args, kwargs)
        if self.kind == "vm":
            return self._call_vm(vals)
        st = self._tls
        ins = st.inputs
        for i, v in enumerate(vals):
            ins[i] = v.__array_interface__["data"][0]
        # string tensors hold object pointers: the code only passes inputs through (build
        # refuses computing on them), so it writes addresses into a plain buffer, mapped back
        # to the input's objects below (never dereferenced, never stored uncounted)
        outs = [
            np.empty(s, np.uintp if np.dtype(d).kind == "O" else d)
            for s, d in zip(self._out_shapes, self._out_dtypes)
        ]
        optr = st.outputs
        for i, o in enumerate(outs):
            optr[i] = o.__array_interface__["data"][0]
        rc = self._fn(
            st.in_addr, st.out_addr, self._const_table.ctypes.data, st.ws_addr, self.num_threads
        )
        if rc != 0:
            msg = self._lib.relay_last_error().decode(errors="replace")
            raise ModelRunError(f"the compiled model failed: {msg or f'code {rc}'}")
        if self._has_strings:
            outs = self._string_outputs(vals, outs)
        return outs

    def _string_outputs(self, vals, outs) -> list:
        objs = {id(o): o for v in vals if v.dtype == object for o in v.flat}
        res = []
        for o, d in zip(outs, self._out_dtypes):
            if np.dtype(d).kind == "O":
                try:
                    items = [objs[int(p)] for p in o.flat]
                except KeyError:
                    raise ModelRunError("a string output is not one of the inputs") from None
                arr = np.empty(o.shape, object)
                arr.flat[:] = items
                o = arr
            res.append(o)
        return res

    # -- onnxruntime's dialect -----------------------------------------------------------------
    def get_inputs(self) -> list[NodeArg]:
        """The inputs as onnxruntime's `InferenceSession.get_inputs()` gives them."""
        return [_node_arg(i) for i in self.manifest["inputs"]]

    def get_outputs(self) -> list[NodeArg]:
        """The outputs as onnxruntime's `InferenceSession.get_outputs()` gives them."""
        return [_node_arg(o) for o in self.manifest["outputs"]]

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, object],
        run_options: object = None,
    ) -> list:
        """onnxruntime's `run`: the outputs named in `output_names` (None or empty: all, in
        order) for the inputs in `input_feed` (a dict name -> array). `run_options` is
        accepted for compatibility and ignored."""
        if not isinstance(input_feed, Mapping):
            raise InputError(
                "run(output_names, input_feed) takes the inputs as a dict name -> array; "
                "call the module directly for positional inputs: lib(x)"
            )
        picks = None
        if output_names:
            if isinstance(output_names, str):
                raise InputError("output_names is a list of names (or None for all outputs)")
            unknown = [n for n in output_names if n not in self._out_index]
            if unknown:
                raise InputError(f"unknown output(s) {unknown}; outputs are {self.output_names}")
            picks = [self._out_index[n] for n in output_names]
        outs = self(**input_feed)
        return outs if picks is None else [outs[k] for k in picks]

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
        self._set_budget = lib.relay_set_budget
        self._set_budget.argtypes = [c.c_int64, c.c_double]
        self._set_budget.restype = None
        for name, res, args in (
            ("relay_adt_new", _c_ptr, [c.c_int32, c.c_int64]),
            ("relay_tuple_new", _c_ptr, [c.c_int64]),
            ("relay_set_field", None, [_c_ptr, c.c_int64, _c_ptr]),
            ("relay_field", _c_ptr, [_c_ptr, c.c_int64]),
            ("relay_tag", c.c_int32, [_c_ptr]),
        ):
            f = getattr(lib, name)
            f.argtypes, f.restype = args, res
        self._adt_new, self._tuple_new = lib.relay_adt_new, lib.relay_tuple_new
        self._set_field, self._field, self._tag = (
            lib.relay_set_field,
            lib.relay_field,
            lib.relay_tag,
        )
        self._entry_addr = c.cast(getattr(lib, m.get("entry", "relay_run_dyn")), c.c_void_p).value

    def _call_vm(self, vals) -> list[np.ndarray]:
        c = ctypes
        n, nout = len(vals), len(self.output_names)
        ins = (c.c_void_p * max(n, 1))()
        keep = []  # arrays that wrapped objects point into, alive during the call
        for i, v in enumerate(vals):
            if self._in_shapes[i] is None:
                ins[i] = self._to_obj(v, self._in_descs[i], self.input_names[i], keep)
                continue
            shape = (c.c_int64 * max(v.ndim, 1))(*v.shape)
            ins[i] = self._wrap(v.ctypes.data, v.ndim, shape, v.itemsize)
        outs = (c.c_void_p * max(nout, 1))()
        self._set_budget(int(self.max_iterations or 0), float(self.timeout or 0.0))
        rc = self._guarded(
            self._entry_addr, ins, outs, self._const_table.ctypes.data, self.num_threads
        )
        if rc != 0:
            msg = self._last_error().decode(errors="replace")
            if msg.startswith("limit: "):
                hint = "raise lib.max_iterations / lib.timeout (--max-iterations / --timeout)"
                raise ResourceLimitError(f"{msg[7:]}; {hint} if the loop is meant to run on")
            raise ModelRunError(f"the compiled model failed: {msg}")
        results = []
        for k in range(nout):
            o = outs[k]
            desc = self._out_descs[k] or {
                "kind": "tensor",
                "dtype": _dt.from_numpy(self._out_dtypes[k]),
            }
            results.append(self._from_obj(o, desc))
            self._release(o)
        return results

    def _tensor_out(self, o, dtype) -> np.ndarray:
        c = ctypes
        nd = self._ndim(o)
        sp = self._shape(o)
        shape = tuple(sp[i] for i in range(nd))
        dt = np.dtype(_dt.to_numpy(dtype))
        count = int(np.prod(shape, dtype=np.int64))
        arr = np.empty(shape, dt)
        if count:
            c.memmove(arr.ctypes.data, self._data(o), count * dt.itemsize)
        return arr

    def _from_obj(self, o, desc):
        """A Python value (array, tuple, list, None) of a result object (borrowed)."""
        k = desc["kind"]
        if k == "tensor":
            return self._tensor_out(o, desc["dtype"])
        if k == "tuple":
            return tuple(self._from_obj(self._field(o, i), f) for i, f in enumerate(desc["fields"]))
        if desc["name"] == "List":
            items = []
            while True:
                ctor = _ctor(desc, self._tag(o))
                if ctor["name"] != "Cons":
                    return items
                items.append(self._from_obj(self._field(o, 0), ctor["fields"][0]))
                o = self._field(o, 1)
        ctor = _ctor(desc, self._tag(o))
        if desc["name"] == "Option":
            if ctor["name"] == "None":
                return None
            return self._from_obj(self._field(o, 0), ctor["fields"][0])
        return (ctor["name"],) + tuple(
            self._from_obj(self._field(o, i), f if f.get("kind") != "self" else desc)
            for i, f in enumerate(ctor["fields"])
        )

    def _to_obj(self, v, desc, where: str, keep: list):
        """A new object (owned: the call consumes it) for a Python value of type `desc`."""
        c = ctypes
        k = desc["kind"]
        if k == "tensor":
            arr = _contig(np.asarray(v, dtype=_dt.to_numpy(desc["dtype"])))
            if len(arr.shape) != len(desc["shape"]):
                raise InputError(f"{where}: a tensor of rank {len(desc['shape'])} was expected")
            keep.append(arr)
            shape = (c.c_int64 * max(arr.ndim, 1))(*arr.shape)
            return self._wrap(arr.ctypes.data, arr.ndim, shape, arr.itemsize)
        if k == "tuple":
            vals = tuple(v)
            if len(vals) != len(desc["fields"]):
                raise InputError(f"{where}: a tuple of {len(desc['fields'])} was expected")
            o = self._tuple_new(len(vals))
            for i, (x, f) in enumerate(zip(vals, desc["fields"])):
                self._set_field(o, i, self._to_obj(x, f, f"{where}[{i}]", keep))
            return o
        ctors = {ct["name"]: ct for ct in desc["ctors"]}
        if desc["name"] == "List":
            if not isinstance(v, (list, tuple)):
                raise InputError(f"{where}: a list (sequence) was expected")
            o = self._adt_new(ctors["Nil"]["tag"], 0)
            elem = ctors["Cons"]["fields"][0]
            for i in range(len(v) - 1, -1, -1):
                cell = self._adt_new(ctors["Cons"]["tag"], 2)
                self._set_field(cell, 0, self._to_obj(v[i], elem, f"{where}[{i}]", keep))
                self._set_field(cell, 1, o)
                o = cell
            return o
        if desc["name"] == "Option":
            if v is None:
                return self._adt_new(ctors["None"]["tag"], 0)
            o = self._adt_new(ctors["Some"]["tag"], 1)
            self._set_field(o, 0, self._to_obj(v, ctors["Some"]["fields"][0], where, keep))
            return o
        raise InputError(f"{where}: values of type {desc['name']} cannot be passed in")

    def profile(self) -> list[dict]:
        """Mean time per step since the last call (modules built with RELAY_PROFILE=1)."""
        if not self.manifest.get("profile"):
            raise RelayError("this module was not built with RELAY_PROFILE=1")
        steps = self.manifest["steps"]
        out = np.zeros(len(steps), np.float64)
        units = np.zeros(len(steps), np.float64)
        if any("flops_per_batch" in s for s in steps):  # before relay_prof_read resets them
            fu = self._lib.relay_prof_read_units
            fu.argtypes = [_c_ptr, ctypes.c_int32]
            fu(units.ctypes.data, len(steps))
        fn = self._lib.relay_prof_read
        fn.argtypes = [_c_ptr, ctypes.c_int32]
        fn(out.ctypes.data, len(steps))
        res = []
        for s, t, u in zip(steps, out, units):
            d = dict(s, us=float(t) / 1e3)
            per_batch = d.pop("flops_per_batch", 0)
            if per_batch and u > 0:  # for the mean batch of its calls
                d["flops"] = int(round(per_batch * u))
            res.append(d)
        return res

    # -- export --------------------------------------------------------------------------------
    def export(self, path: str) -> str:
        """Write the library, weights, manifest and C header `model.h` to directory `path`
        (created)."""
        from .c_header import render

        os.makedirs(path, exist_ok=True)
        if os.path.exists(os.path.join(self.path, "manifest.json")):
            for f in ("lib.so", "weights.bin", "manifest.json"):
                src = os.path.join(self.path, f)
                if os.path.exists(src):
                    shutil.copyfile(src, os.path.join(path, f))
        else:  # its directory was removed (an evicted cache entry): from what is loaded
            self._export_loaded(path)
        with open(os.path.join(path, "model.h"), "w") as f:
            f.write(render(self.manifest))
        return path

    def _export_loaded(self, path: str) -> None:
        if self._so_fd is None:
            raise ModelLoadError(f"{self.path} was removed; the model cannot be exported")
        with open(os.path.join(path, "lib.so"), "wb") as out:
            off = 0
            while chunk := os.pread(self._so_fd, 1 << 20, off):
                out.write(chunk)
                off += len(chunk)
        with open(os.path.join(path, "weights.bin"), "wb") as out:
            if self.manifest.get("constants"):
                out.write(memoryview(self._weights))
        with open(os.path.join(path, "manifest.json"), "wb") as out:
            out.write(self._manifest_bytes)

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {t}" for n, t in zip(self.input_names, self.input_types))
        outs = ", ".join(self.output_types)
        return f"CompiledModule(({ins}) -> ({outs}))"


def _ctor(desc: dict, tag: int) -> dict:
    for c in desc["ctors"]:
        if c["tag"] == tag:
            return c
    raise ModelRunError(f"unknown constructor tag {tag} of {desc['name']}")


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
