"""The loop IR: what one kernel does, as nested loops over flat buffers.

Expressions are TE PrimExprs, with `Load(buffer, index)` in place of tensor reads. Statements:
`For` (serial, or parallel across threads), `Store`, `Seq`, `IfThenElse`, `LetStmt`, `Allocate`
(a kernel-local buffer), `ReduceUpdate` (an accumulation the code generator may reassociate)
and `CallKernel` (an external kernel, e.g. a GEMM from relay_core.backend.kernels).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..te.expr import INDEX, PrimExpr, Var
from ..te.printer import expr_str

_ids = itertools.count()


@dataclass(eq=False)
class Buffer:
    """A flat array. scope: "param" (a kernel argument), "local" (registers / stack),
    "heap" (allocated inside the kernel), "const" (read-only data compiled into the kernel)."""

    name: str
    dtype: str
    size: object = None  # int | PrimExpr (elements)
    scope: str = "param"
    shape: tuple = ()
    id: int = field(default_factory=lambda: next(_ids))
    data: object = None  # numpy array of a "const" buffer (read-only data in the kernel)

    def __repr__(self) -> str:
        return f"Buffer({self.name}, {self.dtype}, {self.scope})"

    __hash__ = object.__hash__


class Stmt:
    __slots__ = ()

    def __str__(self) -> str:
        return stmt_str(self)


@dataclass(eq=False)
class For(Stmt):
    var: Var
    extent: object  # int | PrimExpr
    body: Stmt
    kind: str = "serial"  # serial | parallel
    begin: object = 0


@dataclass(eq=False)
class Store(Stmt):
    buffer: Buffer
    index: PrimExpr
    value: PrimExpr


@dataclass(eq=False)
class ReduceUpdate(Stmt):
    """`acc[0] = combine(acc[0], value)` for kind sum/prod/max/min/any/all, and for
    argmax/argmin `acc`, `acc_index` hold the best value and its position `pos`."""

    kind: str
    acc: Buffer
    value: PrimExpr
    acc_index: Buffer | None = None
    pos: PrimExpr | None = None
    last: bool = False


@dataclass(eq=False)
class Seq(Stmt):
    stmts: list


@dataclass(eq=False)
class IfThenElse(Stmt):
    cond: PrimExpr
    then: Stmt
    else_: Stmt | None = None


@dataclass(eq=False)
class LetStmt(Stmt):
    var: Var
    value: PrimExpr
    body: Stmt


@dataclass(eq=False)
class Allocate(Stmt):
    buffer: Buffer
    body: Stmt


@dataclass(eq=False)
class Offset:
    """A kernel argument: a pointer `offset` elements into `buffer`."""

    buffer: Buffer
    offset: PrimExpr


@dataclass(eq=False)
class CallKernel(Stmt):
    """Call `void name(args..., i32 nthreads)`; args are Buffers or scalar PrimExprs."""

    name: str
    args: list
    emit: object = None  # callable(llmod, name) -> llvm function, run once per module


def seq(*stmts) -> Stmt:
    flat = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, Seq):
            flat.extend(s.stmts)
        else:
            flat.append(s)
    return flat[0] if len(flat) == 1 else Seq(flat)


def loop_nest(vars_extents, body: Stmt) -> Stmt:
    for v, ext in reversed(list(vars_extents)):
        body = For(v, ext, body)
    return body


def index_var(name: str) -> Var:
    return Var(name, INDEX)


def stmt_children(s: Stmt) -> list:
    t = type(s)
    if t is For or t is LetStmt or t is Allocate:
        return [s.body]
    if t is Seq:
        return list(s.stmts)
    if t is IfThenElse:
        return [s.then] + ([s.else_] if s.else_ is not None else [])
    return []


def stmt_str(root: Stmt) -> str:
    lines: list[str] = []
    stack = [(root, 0)]
    while stack:
        s, d = stack.pop()
        pad = "  " * d
        t = type(s)
        if t is For:
            lines.append(f"{pad}for {s.var.name} in [{s.begin}, {s.extent}) {s.kind}:")
            stack.append((s.body, d + 1))
        elif t is Store:
            lines.append(f"{pad}{s.buffer.name}[{expr_str(s.index)}] = {expr_str(s.value)}")
        elif t is ReduceUpdate:
            lines.append(f"{pad}{s.acc.name} <{s.kind}= {expr_str(s.value)}")
        elif t is Seq:
            stack.extend((c, d) for c in reversed(s.stmts))
        elif t is IfThenElse:
            lines.append(f"{pad}if {expr_str(s.cond)}:")
            if s.else_ is not None:
                stack.append((s.else_, d + 1))
                stack.append((_Text(f"{pad}else:"), d))
            stack.append((s.then, d + 1))
        elif t is LetStmt:
            lines.append(f"{pad}let {s.var.name} = {expr_str(s.value)}")
            stack.append((s.body, d))
        elif t is Allocate:
            lines.append(
                f"{pad}alloc {s.buffer.name}: {s.buffer.dtype}[{s.buffer.size}] {s.buffer.scope}"
            )
            stack.append((s.body, d))
        elif t is CallKernel:
            args = ", ".join(_arg_str(a) for a in s.args)
            lines.append(f"{pad}call {s.name}({args})")
        elif t is _Text:
            lines.append(s.text)
    return "\n".join(lines)


def _arg_str(a) -> str:
    if isinstance(a, Buffer):
        return a.name
    if isinstance(a, Offset):
        return f"{a.buffer.name}+{expr_str(a.offset)}"
    return expr_str(a)


@dataclass(eq=False)
class _Text(Stmt):
    text: str


@dataclass(eq=False)
class Kernel:
    """One generated function: `void name(params..., i32 nthreads)`.

    `params` are Buffers (pointers) and Vars (int64 run-time dimensions)."""

    name: str
    params: list
    body: Stmt
    contract: bool = True  # allow FMA contraction (off for ops whose rounding must be exact)

    def __str__(self) -> str:
        ps = ", ".join(
            f"{p.dtype}* {p.name}" if isinstance(p, Buffer) else f"i64 {p.name}"
            for p in self.params
        )
        return f"kernel {self.name}({ps}):\n" + stmt_str(self.body)
