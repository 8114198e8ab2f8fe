"""`build(mod)`: optimise, fuse, lower, generate code, link, cache, load.

The compiled artifact (library + weights + manifest) is cached on disk under
`$RELAY_CACHE_DIR` (default `~/.cache/relay`), keyed by `cache_key`: the module's structural
hash and its interface (input / output names and order), the target (CPU name and features,
llvmlite version), the options and a fingerprint of the compiler (all relay_core sources, the
llvmlite / numpy / ml_dtypes versions); a second build of the same model only loads it.
`RELAY_CACHE_DIR=` (empty) disables the cache; `make clean-cache` clears it. The model
directories are kept within `$RELAY_MODEL_CACHE_MB` (default 4096): a store past it removes the
least recently used ones (a cache hit counts as a use) down to 80% of it, never the one just
built (`lru`). A process that has a model loaded keeps running it after its directory is
evicted (lib.so is mapped, weights.bin memory-mapped: both outlive their unlinking on POSIX).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
import time
import weakref

import numpy as np

from .. import events
from ..errors import RelayError
from ..ir.module import IRModule
from ..ir.structural import structural_hash
from . import lru
from .runtime import FORMAT_VERSION, CompiledModule, _contig

BUILD_OPTIONS = ("opt_level",)
DEFAULT_MODEL_CACHE_MB = 4096
_KEY_CHARS = frozenset("0123456789abcdef")
# what llvmlite's version and its LLVM come from
_LLVMLITE_FILES = ("llvmlite/_version.py", "llvmlite/binding/libllvmlite.so")


def cache_dir() -> str | None:
    d = os.environ.get("RELAY_CACHE_DIR")
    if d is not None:
        return d or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "relay")


def model_cache_limit() -> int:
    """The compiled-model cache's size limit in bytes ($RELAY_MODEL_CACHE_MB)."""
    return lru.limit_bytes("RELAY_MODEL_CACHE_MB", DEFAULT_MODEL_CACHE_MB)


def _is_model_key(name: str) -> bool:
    """A model entry's directory name (a `cache_key`): not kernels/, convert/, the runtime
    objects, nor a build or eviction in progress."""
    return len(name) == 32 and _KEY_CHARS.issuperset(name)


def model_entries(cdir: str) -> list:
    """(last use, size, path) of every compiled model in cache directory `cdir`."""
    return lru.scan_dirs(cdir, _is_model_key)


def evict_models(cdir: str, spare: tuple[str, ...] = (), limit: int | None = None) -> int:
    """Remove the least recently used compiled models until the cache is within 80% of its
    limit (once over it), never those in `spare`; returns the bytes removed."""
    limit = model_cache_limit() if limit is None else limit
    return lru.evict(model_entries(cdir), limit, spare=spare)


@functools.cache
def compiler_fingerprint() -> str:
    """Hash of every relay_core source (the interpreter folds constants, the IR prints and
    hashes, ...) and of the versions of the libraries that shape the code or the constants
    (llvmlite, numpy, ml_dtypes): a changed compiler never reuses stale cached code.
    Remembered in the cache directory by the files' identities (stamp.remembered)."""
    from . import stamp

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = []
    for dirpath, dirs, names in sorted(os.walk(root)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [
            os.path.join(dirpath, f) for f in sorted(names) if f.endswith((".py", ".c", ".h"))
        ]
    ident, newest = stamp.file_identity(
        [*files, *stamp.package_files(("llvmlite", "numpy", "ml_dtypes"), _LLVMLITE_FILES)]
    )
    ident += f"\nnumpy {np.__version__}"
    return stamp.remembered(
        cache_dir(), "compiler", ident, newest, lambda: _compiler_fingerprint(root, files)
    )


def _compiler_fingerprint(root: str, files: list) -> str:
    import llvmlite

    h = hashlib.blake2b(digest_size=8)
    for p in files:
        h.update(p[len(root) :].encode())
        with open(p, "rb") as fh:
            h.update(fh.read())
    try:
        import ml_dtypes

        mld = ml_dtypes.__version__
    except ImportError:
        mld = ""
    h.update(f"llvmlite {llvmlite.__version__} numpy {np.__version__} ml_dtypes {mld}".encode())
    return h.hexdigest()


def interface_key(mod: IRModule) -> str:
    """What the structural hash leaves out on purpose (it is alpha-invariant): the names of
    `@main`'s parameters and their order, and the names the framework gave the inputs and
    outputs (`@main`'s and the module's attributes). Two models equal up to those names must not
    share a compiled module: its manifest binds inputs and outputs by name."""
    from ..ir.structural import _attrs_repr

    main = mod["main"]
    return repr(
        [
            [(p.name_hint, _type_key(p.type_annotation)) for p in main.params],
            _type_key(main.ret_type),
            _attrs_repr(main.attrs or {}),
            # only the names: the module's other attrs (source maps for verify) are large
            [repr(mod.attrs.get(k)) for k in ("input_names", "output_names")],
        ]
    )


def _type_key(t) -> str:
    """A type with its shape variables' bounds (the structural hash keeps their names only)."""
    from ..ir.types import ShapeVar, TensorType

    if isinstance(t, TensorType):
        dims = [(d.name, d.min, d.max) if isinstance(d, ShapeVar) else repr(d) for d in t.shape]
        return repr((t.dtype, dims))
    return repr(t)


def cache_key(mod: IRModule, opt_level: int, pass_context=None) -> str:
    """The compile cache key: everything that changes the compiled module's behaviour — the
    program (structure, types, attributes, constants), its interface (input / output names and
    order), the target (CPU and features, after RELAY_CPU_FEATURES), the options and the
    compiler's version."""
    key_src = json.dumps(
        [
            structural_hash(mod),
            interface_key(mod),
            host_target_key(),
            opt_level,
            compiler_fingerprint(),
            FORMAT_VERSION,
            os.environ.get("RELAY_PROFILE") == "1",
            sorted(pass_context.disabled) if pass_context is not None else [],
            repr(sorted(pass_context.config.items())) if pass_context is not None else "",
        ]
    )
    return hashlib.blake2b(key_src.encode(), digest_size=16).hexdigest()


def host_target_key() -> str:
    """llvm_target.target_key(), remembered in the cache directory for this host (its name and
    CPU description) and RELAY_CPU_FEATURES, so that a cache hit does not load LLVM."""
    from . import stamp

    def compute() -> str:
        from .llvm_target import target_key

        return target_key()

    host = stamp.host_identity()
    if host is None:
        return compute()
    ident, newest = stamp.file_identity(stamp.package_files(("llvmlite",), _LLVMLITE_FILES))
    ident = f"{host[0]}\n{ident}\nRELAY_CPU_FEATURES={os.environ.get('RELAY_CPU_FEATURES', '')}"
    return stamp.remembered(cache_dir(), "target", ident, newest, compute)


def prepare(mod: IRModule, opt_level: int = 3, ctx=None) -> IRModule:
    """The optimisation pipeline before code generation, then FuseOps."""
    from .. import passes
    from ..passes.fuse_ops import FuseOps
    from ..typing import infer_type

    mod = infer_type(mod)
    if ctx is None:
        ctx = passes.PassContext(opt_level=opt_level)
    if opt_level >= 1:
        mod = passes.optimize(mod, opt_level, ctx)
    return FuseOps(fuse_opt_level=2 if opt_level >= 1 else 0, fuse_reductions=opt_level >= 1)(
        mod, ctx
    )


def build(
    mod: IRModule,
    target: str = "llvm",
    opt_level: int = 3,
    num_threads: int | None = None,
    cache: bool = True,
    pass_context=None,
    specialize: bool = True,
    max_tensor_bytes: int | None = None,
    timings: bool = False,
) -> CompiledModule:
    """Compile `@main` of a typed module to native code; returns a callable CompiledModule.

    `pass_context` (a relay_core.passes.PassContext) runs the pipeline with its options:
    disabled passes, config, and a `dump_ir` hook called after each pass (a build with a
    hook always compiles, so the hook sees every pass).

    Inputs with unknown (`?`) or symbolic dims compile once, shape-generic. Where a lowering
    cannot take an unknown extent and `specialize` is on, the result is a SpecializingModule
    that compiles (and caches on disk) one version per concrete input shape at its first call.

    `max_tensor_bytes` bounds every tensor with a static shape the model computes (default:
    $RELAY_MAX_TENSOR_BYTES, else 4 GiB); over it, a ResourceLimitError names the node.

    `timings=True` prints where the build spent its time (each pass, lowering, LLVM
    optimisation and object emission, linking, the largest kernels) on stderr; the same
    report is `lib.timings` (a BuildTimings) either way.

    >>> lib = relay_core.build(mod)
    >>> outs = lib(np.ones((1, 4), "float32"))
    """
    if pass_context is not None:
        opt_level = pass_context.opt_level
    if target not in ("llvm", "llvm -mcpu=native", "cpu"):
        raise RelayError(f"unknown target {target!r}; the backend compiles for 'llvm' (this CPU)")
    if not isinstance(mod, IRModule):
        from ..ir.expr import Function

        if isinstance(mod, Function):
            mod = IRModule.from_expr(mod)
        else:
            raise TypeError(f"build takes an IRModule, not {type(mod).__name__}")
    from ..typing.infer import ensure_typed
    from .budget import check_tensor_budget
    from .budget import max_tensor_bytes as _budget

    t0 = time.perf_counter()
    from .timings import BuildTimings

    report = BuildTimings()
    limit = _budget(max_tensor_bytes)
    mod = ensure_typed(mod)
    check_tensor_budget(mod, limit)
    t = time.perf_counter()
    report.add("type check + budget", t - t0)
    key = cache_key(mod, opt_level, pass_context)
    report.add("cache key", time.perf_counter() - t)
    cdir = cache_dir() if cache else None
    if cdir:
        entry = os.path.join(cdir, key)
        hooked = pass_context is not None and pass_context.dump_ir is not None
        if not hooked and os.path.exists(os.path.join(entry, "manifest.json")):
            try:
                t = time.perf_counter()
                with events.stage("compiling") as st:
                    st.note("cache hit")
                    lib = CompiledModule(entry, num_threads)
                report.add("load (model cache hit)", time.perf_counter() - t)
                lru.touch(entry)  # last use, for eviction
                lib.build_seconds = time.perf_counter() - t0
                lib.cache_hit = True
                _finish(lib, report, timings)
                return lib
            except RelayError:
                shutil.rmtree(entry, ignore_errors=True)
            except OSError:  # evicted by another process while loading: build it again
                pass
    tmp = tempfile.mkdtemp(
        prefix=f"relay-build-{os.getpid()}-", dir=cdir if cdir and _mkdir(cdir) else None
    )
    try:
        try:
            _compile_to(mod, tmp, opt_level, key, pass_context, limit, cdir, report)
        except _needs_static() as e:
            if not (specialize and _has_unknown_inputs(mod)):
                raise
            shutil.rmtree(tmp, ignore_errors=True)
            from .specialize import SpecializingModule

            kw = dict(opt_level=opt_level, num_threads=num_threads, cache=cache)
            kw["max_tensor_bytes"] = max_tensor_bytes
            lib = SpecializingModule(
                mod, f"{type(e).__name__}: {e}", pass_context=pass_context, **kw
            )
            lib.build_seconds = time.perf_counter() - t0
            report.add("(compiles per input shape at the first call)", 0.0)
            _finish(lib, report, timings)
            return lib
        # Loaded before it is renamed into the cache: another process's eviction may remove
        # the entry at once, and a loaded model outlives its files.
        t = time.perf_counter()
        lib = CompiledModule(tmp, num_threads)
        report.add("load", time.perf_counter() - t)
        if cdir:
            entry = os.path.join(cdir, key)
            try:
                if hooked and os.path.exists(entry):
                    shutil.rmtree(entry, ignore_errors=True)
                os.rename(tmp, entry)
                stored = True
            except OSError:  # built concurrently by another process: same code, drop ours
                stored = os.path.exists(os.path.join(entry, "manifest.json"))
                if stored:
                    shutil.rmtree(tmp, ignore_errors=True)
            if stored:
                lib.path = entry
                lru.touch(entry)  # last use: the newest entry
                t = time.perf_counter()
                evict_models(cdir, spare=(entry,))
                report.add("model cache eviction", time.perf_counter() - t)
        if lib.path == os.path.abspath(tmp):  # not in the cache: the files go with the module
            weakref.finalize(lib, shutil.rmtree, tmp, True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    lib.build_seconds = time.perf_counter() - t0
    lib.cache_hit = False
    _finish(lib, report, timings)
    return lib


def _finish(lib, report, show: bool) -> None:
    report.total = lib.build_seconds
    lib.timings = report
    if show:
        import sys

        print(report.table(), file=sys.stderr)


def _hoist_shared(mod: IRModule) -> IRModule:
    """Nodes a closure shares with its enclosing scope bound outside it (vm_hoist.py)."""
    from ..ir.expr import Function
    from ..typing import infer_type
    from .vm_hoist import hoist_shared

    funcs, changed = {}, False
    for gv, f in mod.functions.items():
        body = f.body if isinstance(f, Function) and not f.attr("Primitive") else None
        nb = body if body is None else hoist_shared(body)
        if nb is not body:
            f = Function(f.params, nb, f.ret_type, f.type_params, f.attrs)
            changed = True
        funcs[gv] = f
    return infer_type(mod.with_functions(funcs)) if changed else mod


def _needs_static() -> tuple:
    """The errors of lowering rules that need static extents."""
    from ..errors import UnknownExtentError
    from .llvm_types import CodegenError
    from .lower import LoweringError

    return (UnknownExtentError, NotImplementedError, LoweringError, CodegenError)


def _has_unknown_inputs(mod: IRModule) -> bool:
    from ..ir.types import TensorType
    from ..typing import infer_type

    main = infer_type(mod)["main"]
    return any(
        isinstance(p.checked_type, TensorType)
        and not all(isinstance(d, int) for d in p.checked_type.shape)
        for p in main.params
    )


def _mkdir(d: str) -> bool:
    try:
        os.makedirs(d, exist_ok=True)
        return True
    except OSError:
        return False


def _compile_to(
    mod: IRModule,
    out_dir: str,
    opt_level: int,
    key: str,
    ctx=None,
    limit: int | None = None,
    cdir: str | None = None,
    report=None,
) -> None:
    from llvmlite import ir

    from .. import passes
    from . import derived
    from .codegen import ModuleContext
    from .graph import GraphCompiler
    from .kernel_cache import KernelCache
    from .llvm_target import host, link_shared, runtime_objects, target_key
    from .split import split_module
    from .timings import BuildTimings
    from .units import InvalidKernelIR, build_objects, jobs, warm

    report = BuildTimings() if report is None else report
    n_jobs = jobs()
    if n_jobs > 1:
        warm(n_jobs)  # the workers start while the model is optimised and lowered
    # the C runtime compiles (cc, once per cache) meanwhile too
    rt = _Background(lambda: runtime_objects(cache_dir()))
    t = time.perf_counter()
    if ctx is None:
        ctx = passes.PassContext(opt_level=opt_level)
    before = dict(ctx.timings)
    with events.stage("optimising"):
        fused = prepare(mod, opt_level, ctx)
        refuse_strings(fused["main"])
        if limit is not None:  # shapes the passes made static
            from .budget import check_tensor_budget

            check_tensor_budget(fused, limit)
    report.add("passes", time.perf_counter() - t)
    report.passes = [
        (n, s - before.get(n, 0.0))
        for n, s in ctx.timings.items()
        if n != "Sequential" and s - before.get(n, 0.0) > 0
    ]
    t = time.perf_counter()
    with events.stage("generating code"):
        llmod = ir.Module(name="relay")
        llmod.triple = host()[0]
        lctx = ModuleContext(llmod)
        main = fused["main"]
        from .graph import is_static_graph

        if is_static_graph(main):
            kind = "graph"
            plan = GraphCompiler(main, lctx).run()
        else:
            from .vm import VMCompiler

            if any(_has_string(p.checked_type) for p in main.params) or _has_string(
                main.body.checked_type
            ):
                from .llvm_target import BuildError

                raise BuildError(
                    "string tensors pass through compiled code only with static shapes and no "
                    "control flow; run this model with the interpreter (relay_core.interp)"
                )
            kind = "vm"
            plan = VMCompiler(_hoist_shared(fused), lctx).run()
        const_layout = derived.layout(plan.constants)
        derived.emit_prepare(llmod, const_layout)
    report.add("lower + generate IR", time.perf_counter() - t, f"{plan.kernels} kernels")
    with events.stage("compiling", f"{plan.kernels} kernels"):
        t = time.perf_counter()
        main_unit, units = split_module(llmod, lctx.kernels)
        report.add("split into units", time.perf_counter() - t, f"{len(units)} kernel units")
        t = time.perf_counter()
        kcache = None
        if cdir and _mkdir(cdir):
            kcache = KernelCache(cdir, f"{target_key()}|{compiler_fingerprint()}")
        ops = _kernel_ops(plan)
        try:
            objs, records, st = build_objects(
                main_unit, units, lambda u: _unit_level(u, opt_level), host(), kcache, n_jobs
            )
        except InvalidKernelIR as e:
            names = ", ".join(dict.fromkeys(o for k in e.kernels for o in ops.get(k, ())))
            raise InvalidKernelIR(e.kernels, e.detail, names) from None
        for r in records:
            r["ops"] = ", ".join(dict.fromkeys(o for k in r["kernels"] for o in ops.get(k, ())))
        report.units = records
        hits = sum(r["where"] == "cache" for r in records)
        far = sum(r["opt_s"] + r["emit_s"] for r in records if r["where"] == "worker")
        report.add("llvm", time.perf_counter() - t, f"{n_jobs} jobs, {hits} units from cache", far)
        report.notes["evicted_bytes"] = st["evicted_bytes"]
        t = time.perf_counter()
        rt = rt.result()
        report.add("C runtime objects (wait)", time.perf_counter() - t)
        t = time.perf_counter()
        link_shared([*objs, *rt], os.path.join(out_dir, "lib.so"))
        report.add("link", time.perf_counter() - t, f"{len(objs) + len(rt)} objects")
    t_write = time.perf_counter()
    timings = {
        "passes": report.seconds("passes"),
        "lower": report.seconds("lower + generate IR"),
        "llvm": report.seconds("llvm"),
        "link": report.seconds("link") + report.seconds("C runtime objects (wait)"),
    }
    consts = []
    with open(os.path.join(out_dir, "weights.bin"), "wb") as f:
        off = 0
        for arr, rec in zip(plan.constants, const_layout.records):
            entry = derived.manifest_entry(arr, rec)
            entry["dtype"] = _dtype_name(arr.dtype)
            consts.append(entry)
            if rec[0]:  # derived: computed at load time
                continue
            f.write(b"\0" * (rec[1] - off))
            data = _contig(arr)
            f.write(memoryview(data.reshape(-1).view(np.uint8)))  # no copy
            off = rec[1] + data.nbytes
    src_main = mod["main"]
    out_names = list(
        main.attr("output_names")
        or src_main.attr("output_names")
        or mod.attrs.get("output_names")
        or []
    )
    if len(out_names) != len(plan.output_types):
        out_names = [f"output{k}" for k in range(len(plan.output_types))]
    # The framework's input names where the parameters had to be renamed (`input.1`).
    in_names = list(plan.input_names)
    given = main.attr("input_names") or src_main.attr("input_names") or ()
    for k, n in enumerate(list(given)[: len(in_names)]):
        in_names[k] = n
    triple, cpu, features = host()
    import llvmlite

    manifest = {
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "hash": key,
        "entry": plan.entry,
        "workspace_bytes": getattr(plan, "workspace", 0),
        "derived_bytes": const_layout.derived_bytes,
        "prepare": derived.PREPARE,
        "inputs": [
            _io_json(n, t, d, param)
            for n, t, d, param in zip(
                in_names,
                plan.input_types,
                plan.info.get("input_descs") or [None] * len(plan.input_types),
                plan.input_names,
            )
        ],
        "outputs": [
            _io_json(n, t, d)
            for n, t, d in zip(
                out_names,
                plan.output_types,
                plan.info.get("output_descs") or [None] * len(plan.output_types),
            )
        ],
        "constants": consts,
        "target": {"triple": triple, "cpu": cpu, "features": features},
        "versions": {"llvmlite": llvmlite.__version__, "numpy": np.__version__},
        "stats": {"kernels": plan.kernels, "steps": getattr(plan, "steps", 0), "timings": timings},
        "steps": _steps_json(plan.info),
        "profile": plan.info.get("profile", False),
    }
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    report.add("weights + manifest", time.perf_counter() - t_write)


def _steps_json(info: dict) -> list[dict]:
    """The profile steps of the manifest: kernel, ops, FLOP count (or, in shape-generic
    builds, the count per element of the run-time batch) and the group's signature."""
    kernels = info.get("step_kernels", [])
    zeros = [0] * len(kernels)
    out = []
    for k, o, fl, fb, sig in zip(
        kernels,
        info.get("step_ops", []),
        info.get("step_flops") or zeros,
        info.get("step_flops_per_batch") or zeros,
        info.get("step_sigs") or [""] * len(kernels),
    ):
        step = {"kernel": k, "ops": o, "flops": fl, "shape": sig}
        out.append(step | ({"flops_per_batch": fb} if fb else {}))
    return out


class _Background:
    """`fn()` on a thread; `result()` waits for it and raises what it raised."""

    def __init__(self, fn):
        import threading

        self._out = None
        self._err = None

        def run():
            try:
                self._out = fn()
            except BaseException as e:
                self._err = e

        self._t = threading.Thread(target=run, daemon=True)
        self._t.start()

    def result(self):
        self._t.join()
        if self._err is not None:
            raise self._err
        return self._out


def _unit_level(unit, opt_level: int) -> int:
    """The LLVM pipeline of a unit: O3 for the kernels and the shared helpers (GEMM
    microkernels, packing, im2col) that hold the hot loops; O1 for the entry function, which
    only calls kernels in order. `RELAY_KERNEL_OPT_LEVEL` sets the kernels' level (to measure
    its effect on run time: see benchmarks/RESULTS.md)."""
    if opt_level < 2:
        return opt_level
    if unit.kind == "main":
        return 1
    if unit.kind == "kernel":
        raw = os.environ.get("RELAY_KERNEL_OPT_LEVEL", "").strip()
        if raw in ("0", "1", "2", "3"):
            return int(raw)
    return 3


def _kernel_ops(plan) -> dict:
    out: dict = dict(plan.info.get("kernel_ops", {}))  # VM plans: per kernel
    for k, o in zip(plan.info.get("step_kernels", []), plan.info.get("step_ops", [])):
        out.setdefault(k, o)
    return out


def _has_string(t) -> bool:
    from ..ir.types import TensorType, TupleType

    if isinstance(t, TensorType):
        return t.dtype == "string"
    return isinstance(t, TupleType) and any(_has_string(f) for f in t.fields)


def refuse_strings(main) -> None:
    """String tensors may only pass through: an input returned as an output. Native code holds
    no Python objects, so anything computing on strings is refused here, naming the op."""
    from ..ir.expr import Call, Constant, Function
    from ..ir.visitor import post_order
    from .llvm_target import BuildError

    for e in post_order(main):
        if isinstance(e, Constant) and e.data.dtype == object:
            raise BuildError(
                "the compiled backend cannot hold string constants; "
                "run this model with the interpreter (relay_core.interp)"
            )
        if not isinstance(e, Call):
            continue
        if _has_string(e.checked_type) or any(_has_string(a.checked_type) for a in e.args):
            op = e.op
            if isinstance(op, Function):  # a fused group: name its first op on strings
                inner = [
                    x
                    for x in post_order(op.body)
                    if isinstance(x, Call) and not isinstance(x.op, Function)
                ]
                op = inner[0].op if inner else op
            name = getattr(op, "name", None) or getattr(op, "name_hint", None) or "a function"
            raise BuildError(
                f"the compiled backend does not compute on string tensors (op {name!r}); it "
                "can only pass a string input through to an output. Run this model with the "
                "interpreter (relay_core.interp)"
            )


def _io_json(name, t, desc, param=None) -> dict:
    from ..ir.types import TensorType

    out = {"name": name}
    if param is not None and param != name:
        out["param"] = param  # the Relay parameter's name, accepted too
    if isinstance(t, TensorType):
        out.update(shape=[_dim_json(d) for d in t.shape], dtype=t.dtype)
    if desc is not None:
        out["type"] = desc
    return out


def _dim_json(d):
    """A dimension in the manifest: an int, a shape variable's name, `k*name` for a multiple of
    one, or null (unknown)."""
    from ..ir.types import ScaledDim, ShapeVar

    if isinstance(d, int):
        return d
    return d.name if isinstance(d, ShapeVar) else repr(d) if isinstance(d, ScaledDim) else None


def _dtype_name(dt) -> str:
    from ..ir import dtype as _dt

    return _dt.from_numpy(dt)
