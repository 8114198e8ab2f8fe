"""Standalone JIT for kernels: compile one llvmlite module for the host and call a kernel with
numpy arrays. Used by the kernel tests and benchmarks; the backend has its own code generation.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools

import llvmlite.binding as llvm
import numpy as np

from relay_core.backend.kernels.common import KernelInfo
from relay_core.ir.types import TensorType


@functools.cache
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.load_library_permanently(_runtime_library())


def _runtime_library() -> str:
    """The backend's C runtime (thread pool, sorting, ...) as a shared library, built once per
    runtime version in the cache directory: JIT-compiled kernels call `relay_parallel` in it."""
    import hashlib
    import os
    import tempfile

    from relay_core.backend.compiler import cache_dir
    from relay_core.backend.llvm_target import link_shared, runtime_objects

    cache = cache_dir()
    objs = runtime_objects(cache)
    key = hashlib.blake2b(b"".join(objs), digest_size=8).hexdigest()
    path = os.path.join(cache or tempfile.gettempdir(), f"librelay_rt-{key}.so")
    if not os.path.exists(path):
        link_shared(objs, path)
    return path


def target_machine():
    """Host target with the CPU name *and* features (the name alone may enable AVX-512).

    A fresh one per engine: MCJIT takes ownership of the target machine it is given."""
    from relay_core.backend.llvm_target import host

    _init()
    triple, cpu, features = host()  # RELAY_CPU_FEATURES applies here too
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu, features=features, opt=3)


def _jit_cache():
    """The backend's per-kernel object cache (relay_core.backend.kernel_cache) rooted at
    $RELAY_KERNEL_JIT_CACHE, which the test suite sets for its run: kernel tests build the same
    module more than once (once per thread count, an argument of the kernel and not part of its
    code), in several worker processes. None (nothing kept) when unset."""
    import os

    import llvmlite

    from relay_core.backend.kernel_cache import KernelCache
    from relay_core.backend.llvm_target import host

    root = os.environ.get("RELAY_KERNEL_JIT_CACHE")
    return KernelCache(root, f"{host()!r}\0{llvmlite.__version__}") if root else None


@contextlib.contextmanager
def _locked(path: str | None):
    """An exclusive lock on `path`.lock for the duration (none without a path)."""
    if not path:
        yield
        return
    import fcntl
    import os

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def compile_module(llmod, opt: int = 3):
    """Parse, verify, optimise and JIT an llvmlite.ir.Module; returns the execution engine.
    The machine code is kept in the cache directory, keyed by the IR text (_jit_cache)."""
    tm = target_machine()
    text = str(llmod)
    mod = llvm.parse_assembly(text)
    mod.verify()
    mod.triple = llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    cache = _jit_cache()
    key = cache.key(text, opt) if cache else None
    path = cache._path(key) if cache else None  # noqa: SLF001 - its lock file sits beside it
    with _locked(path):  # a worker building the same module waits for it instead
        cached = cache.get(key) if cache else None
        if opt and cached is None:
            pto = llvm.create_pipeline_tuning_options(speed_level=opt)
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        ee = llvm.create_mcjit_compiler(mod, tm)
        ee.set_object_cache(
            notify_func=lambda _m, data: cache and cached is None and cache.put(key, data),
            getbuffer_func=lambda _m: cached,
        )
        ee.finalize_object()
    for name in ("relay_parallel", "relay_task_next", "aligned_alloc"):
        if f"declare void @{name}" in str(llmod) or f"@{name}(" in str(llmod):
            if not llvm.address_of_symbol(name):
                raise RuntimeError(f"symbol {name} is not available in this process")
    ee._keep = mod  # noqa: SLF001 - keep the module alive with the engine
    return ee


class KernelModule:
    """Several kernels JIT-compiled in one LLVM module (they share the GEMM driver etc.).

    km = KernelModule(); k = km.add(emit, in_types, out_types, attrs); km.compile(); k(x, w)
    """

    def __init__(self):
        import llvmlite.ir as ir

        self.llmod = ir.Module(name="kernels")
        self.llmod.triple = llvm.get_process_triple()
        self.kernels: list[Compiled] = []
        self.ee = None

    def add(self, emit, in_types, out_types, attrs=None, epilogue=None, const_inputs=(), **kw):
        name = f"kern{len(self.kernels)}"
        if const_inputs:
            kw["const_inputs"] = tuple(const_inputs)
        info = emit(
            self.llmod, name, list(in_types), list(out_types), attrs, epilogue=epilogue, **kw
        )
        k = Compiled(self, name, info, in_types, out_types)
        self.kernels.append(k)
        return k

    def compile(self, opt: int = 3):
        self.ir_text = str(self.llmod)
        self.ee = compile_module(self.llmod, opt)
        for k in self.kernels:
            nargs = len(k.info.func.args)
            proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (nargs - 1)), ctypes.c_int32)
            k.fn = proto(self.ee.get_function_address(k.name))
        return self


class Compiled:
    """A compiled kernel callable with numpy arrays: k(*inputs, nthreads=1) -> outputs."""

    def __init__(self, km, name, info: KernelInfo, in_types, out_types):
        self.km, self.name, self.info = km, name, info
        self.in_types = list(in_types)
        self.out_types = list(out_types)
        self.fn = None

    @classmethod
    def build(
        cls, emit, in_types, out_types, attrs=None, epilogue=None, const_inputs=(), opt=3, **kw
    ):
        """One kernel in a module of its own."""
        km = KernelModule()
        k = km.add(emit, in_types, out_types, attrs, epilogue, const_inputs, **kw)
        km.compile(opt)
        return k

    def prepare(self, idx: int, arr: np.ndarray) -> np.ndarray:
        """An input as the kernel reads it (prepacked when the kernel asks for it)."""
        if idx in self.info.prepack:
            return np.ascontiguousarray(self.info.prepack[idx](arr))
        return np.ascontiguousarray(arr)

    def __call__(self, *inputs, nthreads: int = 1, extras=(), outs=None):
        ins = [self.prepare(i, x) for i, x in enumerate(inputs)]
        if outs is None:
            outs = [np.empty(t.shape, _np_dtype(t.dtype)) for t in self.out_types]
        keep = ins + list(outs) + [np.ascontiguousarray(e) for e in extras]
        self.fn(*[a.ctypes.data for a in keep], nthreads)
        return outs


def _np_dtype(dtype: str):
    from relay_core.ir import dtype as dt

    return dt.to_numpy(dtype)


def tt(shape, dtype="float32") -> TensorType:
    return TensorType(tuple(shape), dtype)
