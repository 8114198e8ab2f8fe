"""The host target: LLVM target machine, O3 pipeline, object emission, linking with `cc`.

The target machine is created with the host CPU name *and* its feature string: with the name
alone LLVM may assume features the (virtual) CPU hides, and the process dies with SIGILL.
Objects are position independent so that one code path serves the JIT (a shared library loaded
with ctypes) and ahead-of-time export.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

import llvmlite
import llvmlite.binding as llvm

from ..errors import RelayError


class BuildError(RelayError):
    """Compiling or linking generated code failed."""


@functools.cache
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@functools.cache
def _host_raw() -> tuple[str, str, tuple]:
    _init()
    return (
        llvm.get_process_triple(),
        llvm.get_host_cpu_name(),
        tuple(llvm.get_host_cpu_features().items()),
    )


# Masking a feature masks the host's features that build on it (LLVM clears them too).
_DEPENDENTS = {
    "sse4.2": ("avx",),
    "avx": ("avx2", "fma", "f16c", "avx512", "avxvnni", "vaes", "vpclmulqdq", "amx", "evex512"),
    "avx2": ("avx512", "avxvnni", "amx", "evex512"),
    "avx512f": ("avx512", "amx", "evex512"),
}


def cpu_features_mask() -> list[str]:
    """RELAY_CPU_FEATURES: comma-separated features to turn off (`-avx512f` or `avx512f`), so
    that code is built as for a smaller CPU of the same family (e.g. one that hides AVX-512).
    Features can only be removed: code for features the host lacks would die with SIGILL."""
    raw = os.environ.get("RELAY_CPU_FEATURES", "")
    out = []
    for item in raw.split(","):
        item = item.strip()
        if not item:
            continue
        if item.startswith("+"):
            raise RelayError(
                f"RELAY_CPU_FEATURES={raw!r}: {item!r} adds a feature; it can only remove "
                "features of this CPU (e.g. -avx512f)"
            )
        out.append(item.lstrip("-"))
    return out


def host() -> tuple[str, str, str]:
    """(triple, cpu name, feature string) to build for: this machine's, less the features
    RELAY_CPU_FEATURES masks."""
    triple, cpu, feats = _host_raw()
    return triple, cpu, _feature_string(feats, tuple(cpu_features_mask()))


@functools.cache
def _feature_string(items: tuple, mask: tuple) -> str:
    feats = dict(items)
    for name in mask:
        if name not in feats:
            raise RelayError(
                f"RELAY_CPU_FEATURES: {name!r} is not a feature LLVM knows for this CPU "
                f"(known: {', '.join(sorted(k for k, v in feats.items() if v))})"
            )
        for f in feats:
            if f == name or f.startswith(_DEPENDENTS.get(name, ())):
                feats[f] = False
    on = sorted(f for f, v in feats.items() if v)
    off = sorted(f for f, v in feats.items() if not v)
    # The "-" entries last: LLVM applies them in order and clears what depends on them.
    return ",".join([f"+{f}" for f in on] + [f"-{f}" for f in off])


def target_machine(opt: int = 3):
    triple, cpu, features = host()
    return _target_machine(triple, cpu, features, opt)


# one definition, shared with the compile workers (llvm_worker imports only llvmlite)
from .llvm_worker import target_machine as _target_machine  # noqa: E402


def target_key() -> str:
    """Identifies generated code: target, CPU, features and the LLVM version."""
    triple, cpu, features = host()
    h = hashlib.blake2b(features.encode(), digest_size=8).hexdigest()
    return f"{triple}/{cpu}/{h}/llvmlite-{llvmlite.__version__}"


def compile_ir(text: str, opt_level: int = 3) -> bytes:
    """LLVM IR text -> optimised object code for the host."""
    _init()
    tm = target_machine(3 if opt_level >= 2 else 0)
    try:
        mod = llvm.parse_assembly(text)
        mod.verify()
    except RuntimeError as e:
        raise BuildError(f"generated LLVM IR is invalid: {e}") from None
    mod.triple = host()[0]
    mod.data_layout = str(tm.target_data)
    if opt_level >= 1:
        pto = llvm.create_pipeline_tuning_options(speed_level=min(opt_level, 3))
        pto.loop_vectorization = opt_level >= 2
        pto.slp_vectorization = opt_level >= 2
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    return tm.emit_object(mod)


def cc() -> str:
    path = (
        os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    )
    if not path:
        raise BuildError("no C compiler found (cc / gcc / clang): it links generated code")
    return path


_RT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c")


def runtime_objects(cache: str | None) -> list[bytes]:
    """The C runtime (relay_core/backend/c/*.c) compiled to PIC object code, cached by the
    hash of each source."""
    out = []
    for name in sorted(os.listdir(_RT_DIR)):
        if name.endswith(".c"):
            out.append(_compile_c(os.path.join(_RT_DIR, name), cache))
    return out


_C_MEMO: dict = {}
_RT_FLAGS = ("-O2", "-fPIC")


@functools.cache
def _cc_version() -> str:
    """The C compiler's own version line: the runtime objects' cache key includes it."""
    try:
        r = subprocess.run([cc(), "--version"], capture_output=True, text=True, timeout=30)
        return r.stdout.splitlines()[0] if r.stdout else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def _compile_c(source: str, cache: str | None) -> bytes:
    with open(source, "rb") as f:
        src = f.read()
    key = hashlib.blake2b(
        src + repr((cc(), _cc_version(), _RT_FLAGS)).encode(), digest_size=8
    ).hexdigest()
    if key in _C_MEMO:  # compiled once per process even without a disk cache
        return _C_MEMO[key]
    obj = _compile_c_cached(source, cache, key)
    _C_MEMO[key] = obj
    return obj


def _compile_c_cached(source: str, cache: str | None, key: str) -> bytes:
    base = os.path.splitext(os.path.basename(source))[0]
    path = os.path.join(cache, f"{base}-{key}.o") if cache else None
    if path and os.path.exists(path):
        with open(path, "rb") as f:
            return f.read()
    with tempfile.TemporaryDirectory(prefix="relay-rt-") as d:
        out = os.path.join(d, "rt.o")
        cmd = [cc(), *_RT_FLAGS, "-c", source, "-o", out]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError(f"compiling the C runtime failed:\n{r.stderr[-4000:]}")
        with open(out, "rb") as f:
            obj = f.read()
    if path:
        os.makedirs(cache, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(obj)
        os.replace(tmp, path)
    return obj


def link_shared(objects: list[bytes], out_path: str, extra_sources: list[str] = ()) -> None:
    """Link object code (and C sources) into a shared library with the system C compiler."""
    with tempfile.TemporaryDirectory(prefix="relay-link-") as d:
        files = []
        for k, obj in enumerate(objects):
            p = os.path.join(d, f"m{k}.o")
            with open(p, "wb") as f:
                f.write(obj)
            files.append(p)
        tmp_out = os.path.join(d, "lib.so")
        cmd = [
            cc(),
            "-shared",
            "-fPIC",
            "-O2",
            "-o",
            tmp_out,
            *files,
            *extra_sources,
            "-Wl,--no-undefined",
            # the runtime's own symbols (thread pool state) bind inside this library even when
            # another copy of the runtime is loaded globally (tools/kernel_jit.py)
            "-Wl,-Bsymbolic",
            "-pthread",
            "-lm",
            "-lc",
        ]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError(f"linking generated code failed:\n{' '.join(cmd)}\n{r.stderr[-4000:]}")
        os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
        # atomic: another process may be loading the same cache entry
        tmp_final = f"{out_path}.{os.getpid()}.tmp"
        shutil.copyfile(tmp_out, tmp_final)
        os.replace(tmp_final, out_path)
