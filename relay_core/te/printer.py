"""Readable text of PrimExprs (for errors, tests and debugging)."""

from __future__ import annotations

from .expr import Binary, Call, Cast, Compare, Const, Load, Read, Reduce, Select, Unary, Var
from .visit import post_order

_SYM = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "floordiv": "//",
    "floormod": "%",
    "and": "&",
    "or": "|",
    "xor": "^",
    "shl": "<<",
    "shr": ">>",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
}


def expr_str(root) -> str:
    text: dict[int, str] = {}
    for n in post_order(root):
        t = type(n)
        if t is Const:
            s = (
                repr(n.value)
                if n.dtype in ("int64", "float32", "bool")
                else f"{n.dtype}({n.value!r})"
            )
        elif t is Var:
            s = n.name
        elif t is Binary or t is Compare:
            a, b = text[id(n.a)], text[id(n.b)]
            s = f"({a} {_SYM[n.op]} {b})" if n.op in _SYM else f"{n.op}({a}, {b})"
        elif t is Unary:
            s = f"({'-' if n.op == 'neg' else '~'}{text[id(n.a)]})"
        elif t is Select:
            s = f"select({text[id(n.cond)]}, {text[id(n.t)]}, {text[id(n.f)]})"
        elif t is Cast:
            s = f"{n.dtype}({text[id(n.a)]})"
        elif t is Call:
            s = f"{n.name}({', '.join(text[id(a)] for a in n.args)})"
        elif t is Read:
            s = f"{n.tensor.name}[{', '.join(text[id(i)] for i in n.indices)}]"
        elif t is Load:
            s = f"{n.buffer.name}[{text[id(n.index)]}]"
        elif t is Reduce:
            axes = ", ".join(f"{a.name}<{a.extent}" for a in n.axes)
            w = f", where={text[id(n.where)]}" if n.where is not None else ""
            s = f"{n.kind}({text[id(n.source)]}, [{axes}]{w})"
        else:
            s = type(n).__name__
        text[id(n)] = s
    return text[id(root)]
