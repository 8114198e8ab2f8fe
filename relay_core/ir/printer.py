"""Text printer: TVM Relay text format v0.0.5.

Programs print in graph form, as TVM does: every non-atomic node (call, tuple, if, closure, ...)
is bound once to a numbered temporary `%3 = ...;` in the scope where it is first needed, and
referred to by that name afterwards, so sharing in the DAG stays visible. Variables, globals,
operators, constructors and constants are atoms, printed inline (constants as literals, or as
`meta[Constant][i]` into the `#[metadata]` side table). Scopes are function bodies, if branches,
let bodies and match clauses; a node needed again where its temporary is out of scope is printed
again there.

Printing is iterative: a block that contains nested blocks (if branches, closures) hands them to
a driver loop as generators instead of recursing, so depth costs heap, not Python stack.
"""

from __future__ import annotations

import dataclasses
from types import GeneratorType

from .dtype import from_numpy
from .expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from .text_format import (
    VERSION,
    encode_metadata,
    format_attr_value,
    format_scalar,
    sanitize_name,
    trampoline,
)
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
    TypeData,
    TypeVar,
)
from .visitor import SCOPE_OPERANDS, ExprFunctor, free_vars, method_table, post_order

# -- types ----------------------------------------------------------------------------------------


def _dim(d) -> str:
    return "?" if isinstance(d, AnyDim) else str(d)


def type_to_text(t: Type | None) -> str:
    """`Tensor[(1, 4), float32]`, `float32`, `(T, U)`, `fn [A](A) -> A`, `Ref[T]`, `List[A]`."""
    out: list[str] = []
    stack: list = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, TensorType):
            if not x.shape:
                out.append(x.dtype)
            else:
                out.append(f"Tensor[({', '.join(_dim(d) for d in x.shape)}), {x.dtype}]")
        elif isinstance(x, TupleType):
            _push_seq(stack, "(", x.fields, ",)" if len(x.fields) == 1 else ")")
        elif isinstance(x, FuncType):
            stack.append(x.ret_type)
            tp = "[" + ", ".join(v.name for v in x.type_params) + "]" if x.type_params else ""
            _push_seq(stack, f"fn {tp}(", x.arg_types, ") -> ")
        elif isinstance(x, TypeVar):
            out.append(x.name)
        elif isinstance(x, IncompleteType):
            out.append("_")
        elif isinstance(x, RefType):
            stack += ["]", x.value, "Ref["]
        elif isinstance(x, GlobalTypeVar):
            out.append(x.name)
        elif isinstance(x, TypeCall):
            if x.args:
                _push_seq(stack, f"{x.func.name}[", x.args, "]")
            else:
                out.append(x.func.name)
        elif x is None:
            out.append("_")
        else:
            out.append(repr(x))
    return "".join(out)


def _push_seq(stack: list, open_: str, items, close: str) -> None:
    """Push `open_ item, item, ... close` so that it pops in order."""
    stack.append(close)
    for i in range(len(items) - 1, -1, -1):
        stack.append(items[i])
        if i:
            stack.append(", ")
    stack.append(open_)


def typedata_to_text(td: TypeData) -> str:
    """`type List[A] {\\n  Cons(A, List[A]),\\n  Nil,\\n}`."""
    tv = "[" + ", ".join(v.name for v in td.type_vars) + "]" if td.type_vars else ""
    lines = [f"type {td.header.name}{tv} {{"]
    for c in td.constructors:
        args = "(" + ", ".join(type_to_text(t) for t in c.inputs) + ")" if c.inputs else ""
        lines.append(f"  {c.name}{args},")
    lines.append("}")
    return "\n".join(lines)


# -- expressions ----------------------------------------------------------------------------------
_ATOMS = frozenset({Var, GlobalVar, Op, Constructor, Constant})
_MARK_OPEN, _MARK_CLOSE = "\x01", "\x02"  # bracket the excerpt's target in the output


def _is_atom(e: Expr) -> bool:
    """Printed inline wherever used: leaves, and nullary constructor calls such as `Nil`."""
    t = type(e)
    return t in _ATOMS or (t is Call and not e.args and type(e.op) is Constructor)


# Children printed before a node in the same scope (sub-blocks open their own scopes).
_HOISTED = {**SCOPE_OPERANDS, Call: lambda e: (*e.args, e.op)}


# str(mod) leaves out the data of constants larger than this (mod.astext() keeps everything).
ELIDE_BYTES = 1024


def _nbytes(a) -> int:
    if a.dtype == object:
        return sum(len(str(x)) for x in a.reshape(-1).tolist())
    return int(a.nbytes)


def _size(n: int) -> str:
    for unit, k in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} B"


class _Meta:
    """The constant side table shared by all functions of a module. Constants larger than
    `elide` bytes are referred to with their type and size in a comment, and their data is
    left out of the `#[metadata]` section."""

    def __init__(self, elide: int | None = None):
        self.constants: list[Constant] = []
        self.index: dict[int, int] = {}
        self.elide = elide

    def elided(self, c: Constant) -> bool:
        return self.elide is not None and _nbytes(c.data) > self.elide

    def ref(self, c: Constant) -> str:
        i = self.index.get(id(c))
        if i is None:
            i = self.index[id(c)] = len(self.constants)
            self.constants.append(c)
        if self.elided(c):
            dims = ", ".join(str(d) for d in c.data.shape)
            dt = from_numpy(c.data.dtype)
            return f"meta[Constant][{i}] /* {dt}[{dims}], {_size(_nbytes(c.data))} */"
        return f"meta[Constant][{i}]"


Line = tuple  # (indent level, text)


class _Printer(ExprFunctor):
    """`visit_<kind>(e, level)` prints a node; `atom_<kind>(e)` an atom (ExprFunctor)."""

    def __init__(self, meta: _Meta, show_types: bool, target=None):
        self.meta = meta
        self.types = show_types
        self.target = target
        self.marked = False
        self.names: dict[Var, str] = {}
        self.used: set[str] = set()
        self.suffix: dict[str, int] = {}
        self.temp = 0
        self.memo: dict[Expr, str] = {}  # nodes bound to a temporary visible in this scope
        self.log: list[Expr] = []  # binding order, to pop a scope's temporaries on exit

    # -- names ---------------------------------------------------------------------------------
    def _fresh(self, hint: str) -> str:
        base = sanitize_name(hint)
        name = base
        k = self.suffix.get(base, 0)
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.suffix[base] = k
        self.used.add(name)
        return name

    def binder(self, v: Var, param: bool = False) -> str:
        """A binding occurrence `%x: T`; every binding gets a fresh name (unique per def)."""
        name = self.names[v] = self._fresh(v.name_hint)
        t = v.type_annotation
        if t is None and param and self.types and v.has_type:
            t = v.checked_type
        s = f"%{name}: {type_to_text(t)}" if t is not None else f"%{name}"
        return self._mark(v, s)

    def _mark(self, e, s: str) -> str:
        if e is self.target and not self.marked:
            self.marked = True
            return _MARK_OPEN + s + _MARK_CLOSE
        return s

    # -- atoms: printed inline; `atom_<kind>` (None: not an atom) -----------------------------
    def atom(self, e: Expr) -> str | None:
        return _ATOM[type(e)](self, e)

    def atom_var(self, e: Var) -> str:
        name = self.names.get(e)
        if name is None:  # a free variable
            name = self.names[e] = self._fresh(e.name_hint)
        return "%" + name

    def atom_global_var(self, e: GlobalVar) -> str:
        return "@" + e.name_hint

    def atom_op(self, e: Op) -> str:
        return e.name

    def atom_constructor(self, e: Constructor) -> str:
        return e.name

    def atom_constant(self, e: Constant) -> str:
        s = format_scalar(e.data)
        return s if s is not None else self.meta.ref(e)

    def atom_call(self, e: Call) -> str | None:
        if not e.args and type(e.op) is Constructor:  # a nullary constructor call: `Nil`
            return e.op.name if not e.op.inputs else f"{e.op.name}()"
        return None

    def atom_default(self, e: Expr) -> None:
        return None

    def ref(self, e: Expr) -> str:
        """The text of a child that is an atom or bound to a visible temporary."""
        s = self.memo.get(e)
        if s is None:
            s = _ATOM[type(e)](self, e)
            if s is None:  # pragma: no cover - the hoisting guarantees this
                raise AssertionError(f"{type(e).__name__} printed before its operands")
        return self._mark(e, s)

    def _ty(self, e: Expr) -> str:
        if self.types and e.has_type:
            return f" /* ty={type_to_text(e.checked_type)} */"
        return ""

    # -- scopes --------------------------------------------------------------------------------
    def _prepare(self, e: Expr, level: int, lines: list):
        """Bind every non-atomic operand of `e` (transitively) that is not yet visible."""
        memo = self.memo

        def pending(n):
            f = _HOISTED.get(type(n))
            if f is None:
                return ()
            # leaves are atoms: test their type before calling _is_atom
            return [c for c in f(n) if type(c) not in _ATOMS and c not in memo and not _is_atom(c)]

        order = post_order(e, pending)
        for n in order[:-1]:
            name = f"%{self.temp}"
            self.temp += 1
            body = yield from self._render(n, level)
            body[0] = (level, f"{name} = {body[0][1]}")
            body[-1] = (body[-1][0], body[-1][1] + self._ty(n) + ";")
            lines.extend(body)
            memo[n] = name
            self.log.append(n)

    def _inline(self, e: Expr, level: int, lines: list):
        """`e` printed in place (its operands bound first); a visible node prints its name."""
        if _is_atom(e) or e in self.memo:
            return [(level, self.ref(e))]
        yield from self._prepare(e, level, lines)
        body = yield from self._render(e, level)
        body[-1] = (body[-1][0], body[-1][1] + self._ty(e))
        return body

    def _block(self, root: Expr, level: int):
        """The lines of a scope: bindings, `let` lines, then the result expression."""
        lines: list[Line] = []
        mark = len(self.log)
        e = root
        while type(e) is Let and e not in self.memo:
            head = f"let {self.binder(e.var)} = "
            body = yield from self._inline(e.value, level, lines)
            body[0] = (level, self._mark(e, head + body[0][1]))
            body[-1] = (body[-1][0], body[-1][1] + ";")
            lines.extend(body)
            e = e.body
        lines.extend((yield from self._inline(e, level, lines)))
        log, memo = self.log, self.memo
        while len(log) > mark:
            del memo[log.pop()]
        return lines

    # -- nodes ---------------------------------------------------------------------------------
    def _render(self, e: Expr, level: int):
        """Lines of `e` itself (operands already visible): first line at `level`. One
        `visit_<kind>(e, level)` per node kind; those that open blocks (if, fn, let, match)
        are generators handing their sub-blocks to the driver loop."""
        out = self._table[type(e)](self, e, level)
        if type(out) is GeneratorType:
            out = yield from out
        return out

    def visit_call(self, e: Call, level: int) -> list:
        return [(level, self._mark(e, self._call(e)))]

    def visit_tuple(self, e: Tuple, level: int) -> list:
        fs = [self.ref(f) for f in e.fields]
        text = "(" + ", ".join(fs) + ("," if len(fs) == 1 else "") + ")"
        return [(level, self._mark(e, text))]

    def visit_tuple_getitem(self, e: TupleGetItem, level: int) -> list:
        return [(level, self._mark(e, f"{self.ref(e.tuple_value)}.{e.index}"))]

    def visit_ref_create(self, e: RefCreate, level: int) -> list:
        return [(level, self._mark(e, f"ref({self.ref(e.value)})"))]

    def visit_ref_read(self, e: RefRead, level: int) -> list:
        return [(level, self._mark(e, f"ref_read({self.ref(e.ref)})"))]

    def visit_ref_write(self, e: RefWrite, level: int) -> list:
        return [(level, self._mark(e, f"ref_write({self.ref(e.ref)}, {self.ref(e.value)})"))]

    def visit_if(self, e: If, level: int):
        head = f"if ({self.ref(e.cond)}) {{"
        tb = yield self._block(e.true_branch, level + 1)
        fb = yield self._block(e.false_branch, level + 1)
        lines = [(level, head), *tb, (level, "} else {"), *fb, (level, "}")]
        return self._mark_first(e, lines)

    def visit_function(self, e: Function, level: int):
        return self._mark_first(e, (yield from self._function(e, level, "fn ")))

    def visit_let(self, e: Let, level: int):
        body = yield self._block(e, level + 1)
        return self._mark_first(e, [(level, "("), *body, (level, ")")])

    def visit_match(self, e: Match, level: int):
        q = "" if e.complete else "?"
        lines = [(level, f"match{q} ({self.ref(e.data)}) {{")]
        for c in e.clauses:
            pat = self._pattern(c.lhs)
            body = yield self._block(c.rhs, level + 2)
            lines += [(level + 1, f"{pat} => {{"), *body, (level + 1, "},")]
        lines.append((level, "}"))
        return self._mark_first(e, lines)

    def visit_default(self, e: Expr, level: int):  # pragma: no cover - atoms print inline
        raise TypeError(f"cannot print {type(e).__name__}")

    def _mark_first(self, e, lines: list) -> list:
        if e is self.target and not self.marked:
            lines[0] = (lines[0][0], self._mark(e, lines[0][1]))
        return lines

    def _call(self, e: Call) -> str:
        op = e.op
        args = [self.ref(a) for a in e.args]
        if type(op) is Op:
            args += [f"{k}={format_attr_value(v)}" for k, v in _non_default_attrs(e.attrs)]
        return f"{self.ref(op)}({', '.join(args)})"

    def _pattern(self, p: Pattern) -> str:
        if isinstance(p, PatternWildcard):
            return "_"
        if isinstance(p, PatternVar):
            return self.binder(p.var)
        if isinstance(p, PatternConstructor):
            if not p.patterns:
                return p.constructor.name
            return f"{p.constructor.name}({', '.join(self._pattern(q) for q in p.patterns)})"
        if isinstance(p, PatternTuple):
            ps = [self._pattern(q) for q in p.patterns]
            return "(" + ", ".join(ps) + ("," if len(ps) == 1 else "") + ")"
        raise TypeError(f"cannot print pattern {type(p).__name__}")  # pragma: no cover

    def _function(self, f: Function, level: int, prefix: str):
        tp = "[" + ", ".join(v.name for v in f.type_params) + "]" if f.type_params else ""
        params = [self.binder(p, param=True) for p in f.params]
        params += [f"{k}={format_attr_value(v)}" for k, v in (f.attrs or {}).items()]
        ret = f.ret_type
        if ret is None and self.types and f.has_type and isinstance(f.checked_type, FuncType):
            ret = f.checked_type.ret_type
        arrow = f" -> {type_to_text(ret)}" if ret is not None else ""
        head = f"{prefix}{tp}({', '.join(params)}){arrow} {{"
        body = yield self._block(f.body, level + 1)
        return [(level, head), *body, (level, "}")]

    # -- entry points --------------------------------------------------------------------------
    def def_lines(self, name: str, f: Function) -> list:
        return self._mark_first(f, trampoline(self._function(f, 0, f"def @{name}")))

    def expr_lines(self, e: Expr) -> list:
        lines = [(0, f"free_var {self.binder(v)};") for v in free_vars(e)]
        return lines + trampoline(self._block(e, 0))


_ATOM = method_table(_Printer, "atom_")


def _non_default_attrs(attrs) -> list:
    if attrs is None:
        return []
    if isinstance(attrs, dict):
        return list(attrs.items())
    if not dataclasses.is_dataclass(attrs):
        return []
    out = []
    for f in dataclasses.fields(attrs):
        v = getattr(attrs, f.name)
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            out.append((f.name, v))
            continue
        try:
            same = type(v) is type(default) and bool(v == default)
        except Exception:  # e.g. arrays: compare by printing
            same = False
        if not same:
            out.append((f.name, v))
    return out


def _join(lines: list) -> str:
    return "\n".join("  " * lvl + text for lvl, text in lines)


def _typed(mod) -> bool:
    return bool(mod.functions) and all(f.has_type for f in mod.functions.values())


def expr_to_text(e: Expr, show_meta_data: bool = False, show_types: bool | None = None) -> str:
    """A standalone expression; free variables are declared with `free_var %x: T;`."""
    p = _Printer(_Meta(), e.has_type if show_types is None else show_types)
    if _is_atom(e):
        return p.atom(e) or ""
    text = _join(p.expr_lines(e))
    return text + _metadata_text(p.meta, show_meta_data)


def _metadata_text(meta: _Meta, show: bool) -> str:
    if not meta.constants:
        return ""
    if show:
        big = [c for c in meta.constants if meta.elided(c)]
        if not big:
            return "\n\n#[metadata]\n" + encode_metadata([c.data for c in meta.constants])
        total = _size(sum(_nbytes(c.data) for c in big))
        note = (
            f"\n\n// the data of {len(big)} large constant(s) ({total}) is left out; "
            "mod.astext() prints every constant"
        )
        if len(big) == len(meta.constants):
            return note
        data = [None if meta.elided(c) else c.data for c in meta.constants]
        return note + "\n#[metadata]\n" + encode_metadata(data)
    return (
        f"\n\n// {len(meta.constants)} constant(s) in the metadata section are omitted; "
        "print with show_meta_data=True to include them"
    )


def module_to_text(mod, show_meta_data: bool = True, elide_bytes: int | None = None) -> str:
    """The whole module: version header, ADTs, `def`s, then the `#[metadata]` constants.

    With `elide_bytes` (what `str(mod)` uses), constants larger than that many bytes print as
    `meta[Constant][3] /* float32[64, 3, 7, 7], 36.8 KB */` and their data is left out."""
    meta = _Meta(elide_bytes)
    return _module_text(mod, meta) + _metadata_text(meta, show_meta_data)


def module_to_text_and_constants(mod) -> tuple[str, list]:
    """The module's text without a `#[metadata]` section, and the data of its constants in the
    order `meta[Constant][i]` refers to them: `parse(text, constants=...)` reads it back
    without the data ever becoming text (relay_core.ir.serialize)."""
    meta = _Meta()
    text = _module_text(mod, meta)
    return text, [c.data for c in meta.constants]


def _module_text(mod, meta: _Meta) -> str:
    show_types = _typed(mod)
    parts = [f'#[version = "{VERSION}"]']
    items = [typedata_to_text(td) for td in mod.type_definitions.values()]
    for gv, f in mod.functions.items():
        items.append(_join(_Printer(meta, show_types).def_lines(gv.name_hint, f)))
    return parts[0] + "\n" + "\n\n".join(items)


def excerpt(func: Function, node, name: str = "", mod=None, context: int = 6) -> str:
    """`func` printed with `node` marked (`-->` and a line of `^^^`), ~`context` lines around."""
    p = _Printer(_Meta(), show_types=False, target=node)
    if name:
        lines = _join(p.def_lines(name, func)).split("\n")
    else:
        lines = _join(p.expr_lines(func)).split("\n")
    row = next((i for i, ln in enumerate(lines) if _MARK_OPEN in ln), None)
    clean = [ln.replace(_MARK_OPEN, "").replace(_MARK_CLOSE, "") for ln in lines]
    if row is None:
        shown = clean[: 2 * context + 1]
        more = ["    ..."] if len(clean) > len(shown) else []
        return "\n".join("    " + ln for ln in shown) + ("\n" + more[0] if more else "")
    ln = lines[row]
    col = ln.index(_MARK_OPEN)
    end = ln.find(_MARK_CLOSE)
    width = (end if end >= 0 else len(ln)) - col - 1
    lo, hi = max(0, row - context), min(len(clean), row + context + 1)
    out = []
    if lo > 0:
        out.append("    " + clean[0])
        if lo > 1:
            out.append("    ...")
    for i in range(lo, hi):
        out.append(("--> " if i == row else "    ") + clean[i])
        if i == row:
            out.append("    " + " " * col + "^" * max(1, width))
    if hi < len(clean):
        out.append("    ...")
    return "\n".join(out)


__all__ = ["type_to_text", "typedata_to_text", "expr_to_text", "module_to_text", "excerpt"]
