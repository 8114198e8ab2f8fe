"""The LLVM backend: fused groups -> loop nests -> LLVM IR -> one native entry point.

`build(mod)` compiles (importing llvmlite); `load_module(path)` loads an exported module with
numpy and ctypes only. Submodules below `build` / `codegen` / `llvm_*` import llvmlite; the
runtime does not.
"""

from __future__ import annotations


def build(mod, target: str = "llvm", opt_level: int = 3, **kwargs):
    """Compile a typed IRModule's @main to native code: see relay_core.backend.compiler.build."""
    from .compiler import build as _build

    return _build(mod, target, opt_level, **kwargs)


def load_module(path: str, num_threads: int | None = None):
    """Load a module written by CompiledModule.export (no llvmlite needed)."""
    from .runtime import load_module as _load

    return _load(path, num_threads)


__all__ = ["build", "load_module"]
