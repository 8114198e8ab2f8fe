"""The front door: load / convert / compile / verify / export models.

    >>> import relay_import as ri
    >>> mod = ri.load("model.onnx")
    >>> lib = ri.compile(mod)
    >>> report = ri.verify("model.onnx")
    >>> lib.export("model.relaylib"); lib2 = ri.load_compiled("model.relaylib")

Importing this package imports no ML framework (and not the compiler): each function imports
what it needs, so `load_compiled` works with only numpy installed.
"""

from __future__ import annotations

__all__ = [
    "load",
    "from_onnx",
    "from_pytorch",
    "from_tensorflow",
    "compile",
    "verify",
    "load_compiled",
    "VerifyReport",
]


def __getattr__(name):
    if name in ("load", "from_onnx", "from_pytorch", "from_tensorflow", "compile", "load_compiled"):
        from . import api

        return getattr(api, name)
    if name == "verify":
        from .verifier import verify

        return verify
    if name == "VerifyReport":
        from .report import VerifyReport

        return VerifyReport
    raise AttributeError(f"module 'relay_import' has no attribute {name!r}")
