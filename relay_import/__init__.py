"""The front door: load / convert / compile / verify / export models.

    >>> import relay_import as ri
    >>> mod = ri.load("model.onnx")
    >>> lib = ri.compile(mod)
    >>> outs = lib.run(None, {"image": x})     # onnxruntime's call, or lib(x) / lib(image=x)
    >>> report = ri.verify("model.onnx")
    >>> lib.export("model.relaylib"); lib2 = ri.load_compiled("model.relaylib")

Importing this package imports no ML framework (and not the compiler): each function imports
what it needs, so `load_compiled` works with only numpy installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

__version__ = "0.1.0"  # the one place: setup.cfg reads it (version = attr: ...)

__all__ = [
    "__version__",
    "load",
    "from_onnx",
    "from_pytorch",
    "from_tensorflow",
    "compile",
    "verify",
    "load_compiled",
    "VerifyReport",
    "BenchReport",
    "examples_dir",
]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load lazily
    from .api import compile, from_onnx, from_pytorch, from_tensorflow, load, load_compiled
    from .bench import BenchReport
    from .report import VerifyReport
    from .verifier import verify

_LAZY = {
    "load": "api",
    "from_onnx": "api",
    "from_pytorch": "api",
    "from_tensorflow": "api",
    "compile": "api",
    "load_compiled": "api",
    "verify": "verifier",
    "VerifyReport": "report",
    "BenchReport": "bench",  # bench() itself: relay_import.bench.bench
}


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'relay_import' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)


def examples_dir() -> Path:
    """The bundled examples (demo_cnn.onnx, mlp_loop.relay, c/run_model.c): inside the
    installed package, or the checkout's examples/ in a development install."""
    here = Path(__file__).resolve().parent
    for d in (here / "examples", here.parent / "examples"):
        if (d / "demo_cnn.onnx").is_file():
            return d
    raise FileNotFoundError(
        f"the bundled examples are missing (looked in {here / 'examples'} and "
        f"{here.parent / 'examples'}); reinstall relay-import"
    )
