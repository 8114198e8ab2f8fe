"""Relay: a purely functional, statically typed IR for machine-learning models.

>>> import relay_core
>>> mod = relay_core.parse('''
... #[version = "0.0.5"]
... def @main(%x: Tensor[(2), float32]) { add(%x, %x) }
... ''')
>>> relay_core.evaluate(mod, np.ones(2, "float32"))
array([2., 2.], dtype=float32)
"""

from __future__ import annotations

from . import ir, ops
from .errors import (
    EvalError,
    InputError,
    ModelLoadError,
    ModelRunError,
    OpTypeError,
    ParseError,
    RelayError,
    RelayTypeError,
    ResourceLimitError,
    UnsupportedOpsError,
)
from .ir import IRModule
from .ir.structural import structural_equal, structural_hash
from .typing import infer_expr, infer_type


def parse(text: str, source_name: str = "<string>", typecheck: bool = True) -> IRModule:
    """Read Relay text (TVM text format v0.0.5); typechecks the module unless told not to."""
    from .ir.parser import parse as _parse

    return _parse(text, source_name=source_name, typecheck=typecheck)


def build(mod, target: str = "llvm", opt_level: int = 3, **kwargs):
    """Compile `@main` to native code: a callable `CompiledModule` (see relay_core.backend)."""
    from .backend import build as _build

    return _build(mod, target, opt_level, **kwargs)


def load_module(path: str, num_threads: int | None = None):
    """Load a module written by `CompiledModule.export` with numpy and ctypes only."""
    from .backend.runtime import load_module as _load

    return _load(path, num_threads)


def gradient(mod: IRModule, mode: str = "higher_order") -> IRModule:
    """Reverse-mode AD: a module whose `@main` returns `(value, (d value/d param_i, ...))`.

    `mode="higher_order"` handles the whole language (if, closures, recursion, refs);
    `mode="first_order"` handles dataflow programs and needs no refs. Tensor-valued mains are
    seeded with ones (the gradient of the sum of the outputs).

    >>> value, (dx, dw) = relay_core.evaluate(relay_core.gradient(mod), x, w)
    """
    from .passes.gradient import gradient as _gradient

    return _gradient(mod, mode)


def evaluate(mod, *args, **kwargs):
    """Run `@main` of `mod` with numpy inputs in the reference interpreter."""
    from .interp import evaluate as _evaluate

    return _evaluate(mod, *args, **kwargs)


__all__ = [
    "ir",
    "ops",
    "IRModule",
    "parse",
    "infer_type",
    "infer_expr",
    "evaluate",
    "build",
    "load_module",
    "gradient",
    "structural_equal",
    "structural_hash",
    "RelayError",
    "RelayTypeError",
    "OpTypeError",
    "ParseError",
    "EvalError",
    "InputError",
    "ModelLoadError",
    "ModelRunError",
    "ResourceLimitError",
    "UnsupportedOpsError",
]
