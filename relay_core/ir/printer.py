"""Text printer (TVM Relay text format v0.0.5). Placeholder: types only, expressions by repr."""

from __future__ import annotations

from .types import (
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)


def _dim(d) -> str:
    return "?" if isinstance(d, AnyDim) else str(d)


def type_to_text(t: Type) -> str:
    if isinstance(t, TensorType):
        if not t.shape:
            return t.dtype
        dims = ", ".join(_dim(d) for d in t.shape)
        return f"Tensor[({dims}), {t.dtype}]"
    if isinstance(t, TupleType):
        if len(t.fields) == 1:
            return f"({type_to_text(t.fields[0])},)"
        return "(" + ", ".join(type_to_text(f) for f in t.fields) + ")"
    if isinstance(t, FuncType):
        tp = "[" + ", ".join(v.name for v in t.type_params) + "]" if t.type_params else ""
        args = ", ".join(type_to_text(a) for a in t.arg_types)
        return f"fn {tp}({args}) -> {type_to_text(t.ret_type)}"
    if isinstance(t, TypeVar):
        return t.name
    if isinstance(t, IncompleteType):
        return "_"
    if isinstance(t, RefType):
        return f"Ref[{type_to_text(t.value)}]"
    if isinstance(t, GlobalTypeVar):
        return t.name
    if isinstance(t, TypeCall):
        if not t.args:
            return t.func.name
        return f"{t.func.name}[" + ", ".join(type_to_text(a) for a in t.args) + "]"
    return repr(t)


def expr_to_text(e) -> str:
    return repr(e)


def module_to_text(mod, show_meta_data: bool = True) -> str:
    return repr(mod)


def excerpt(func, node, name: str = "", mod=None) -> str:
    return ""
