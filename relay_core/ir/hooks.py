"""What ir/ needs from the layers above it, installed by those layers when they load.

ir/ is the bottom layer: it imports nothing from ops/, typing/ or anything above. Two of its
services need a higher layer, so that layer hands them down at import time instead:

- the operator table (`Op.get`, `Op.opdef`, `call`): installed by relay_core/ops/registry.py;
- the type checker run by `parse(typecheck=True)`: installed by relay_core/typing/__init__.py.

`import relay_core` (or any of its submodules) loads both, so users never see an empty hook.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import RelayError

_op_lookup: Callable | None = None
_type_checker: Callable | None = None


def install_op_lookup(fn: Callable) -> None:
    """`fn(name) -> OpDef`, raising OpTypeError for an unknown name (ops/registry.lookup)."""
    global _op_lookup
    _op_lookup = fn


def install_type_checker(fn: Callable) -> None:
    """`fn(IRModule) -> IRModule`, type inference in place (typing.infer_type)."""
    global _type_checker
    _type_checker = fn


def lookup_op(name: str):
    if _op_lookup is None:
        raise RelayError("the operator table is not loaded: import relay_core.ops first")
    return _op_lookup(name)


def type_check(mod):
    if _type_checker is None:
        raise RelayError("the type checker is not loaded: import relay_core.typing first")
    return _type_checker(mod)


__all__ = ["install_op_lookup", "install_type_checker", "lookup_op", "type_check"]
