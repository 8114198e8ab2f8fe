"""Parser for the Relay text format (TVM v0.0.5): a hand-written recursive-descent parser.

Grammar, informally:

    module   := [#[version = "0.0.5"]] (typedef | def)* [block] [#[metadata] json]
    typedef  := ["extern"] "type" Name ["[" A, ... "]"] ["{" Ctor["(" type, ... ")"], ... "}"]
    def      := "def" @name ["[" A, ... "]"] "(" (%p [: type] | key=value), ... ")" ["->" type]
                "{" block "}"
    block    := (let %x [: type] = expr ; | %N = expr ; | free_var %x : type ; | expr ;)* expr
    expr     := "let" ... ; expr | binary operators over postfix
    postfix  := primary ("(" args ")" | "." N)*
    primary  := %x | %N | @f | number | True | False | op.name | Ctor | meta[Constant][i]
              | "(" block ")" | "(" expr, ... ")" | "{" block "}" | fn ... | if ... | match ...
              | ref(e) | ref_read(e) | ref_write(e, e)

TVM's dialect: `int` is int32 and `uint1` bool; vector dtypes (`int8x4`) parse, print and
typecheck but do not compute. Attributes on a call of a non-operator (`@f(%x, k=v)`) and on a
parameter (`%a {virtual_device=...}: T`) are read and dropped: they carry placement and lowering
hints of TVM's passes that no part of this project consumes. Attribute values that are
references (`meta[VirtualDevice][0]`) or objects (`VirtualDevice(...)`) are kept as their text.
A `%x` used after the scope that binds it closed is an error, also in a standalone expression.

Every nonterminal that can nest is a generator run by a trampoline (`text_format.trampoline`),
so a 10,000-long chain or a 2,000-deep nested call costs heap, not Python stack. A text without
`def` is an expression and becomes the body of @main; its undeclared `%x` become parameters.
Names not defined in the text (List, Cons, @map, ...) come from the prelude.
"""

from __future__ import annotations

import numpy as np

from ..errors import OpTypeError, ParseError
from .expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Span,
    Tuple,
    TupleGetItem,
    Var,
)
from .hooks import type_check
from .lexer import Source, Token, split_metadata, tokenize
from .module import IRModule
from .parser_types import TypeSyntax, did_you_mean, is_kw
from .text_format import parse_number, trampoline
from .types import GlobalTypeVar, TupleType, TypeData

# Infix operators (TVM accepts them in hand-written text): token -> (precedence, op name).
# As in TVM, `<` `>` `<=` `>=` bind tighter than `==` `!=`.
_BINOPS = {
    "*": (4, "multiply"),
    "/": (4, "divide"),
    "+": (3, "add"),
    "-": (3, "subtract"),
    "<": (2, "less"),
    ">": (2, "greater"),
    "<=": (2, "less_equal"),
    ">=": (2, "greater_equal"),
    "==": (1, "equal"),
    "!=": (1, "not_equal"),
}
# TVM's signatures where ours differ (issue 18): these ops take one tuple in TVM and
# are variadic here; a tuple written in the text is spread into the arguments.
TUPLE_IN = frozenset({"concatenate", "stack", "einsum", "meshgrid"})
_KEYWORDS = frozenset(
    "fn let if else match ref ref_read ref_write def type extern free_var meta".split()
)


class Parser(TypeSyntax):
    def __init__(
        self,
        text: str,
        source_name: str = "<string>",
        use_prelude: bool = True,
        constants: list | None = None,
    ):
        end, self.meta_text = split_metadata(text)
        if constants is not None:
            if self.meta_text is not None:
                raise ValueError("pass constants= for a text without a #[metadata] section")
            self.meta_text = ""
        self.src = Source(text, source_name)
        self.meta_line = self.src.position(end)[0] if self.meta_text is not None else 0
        self.toks = tokenize(self.src, end)
        self.i = 0
        self.use_prelude = use_prelude
        # Scopes: name -> stack of bindings, undone through `undo` when a scope closes.
        self.locals: dict[str, list] = {}
        self.graph: dict[int, list] = {}
        self.tvars: dict[str, list] = {}
        self.undo: list[tuple[dict, object]] = []
        self.headers: dict[str, GlobalTypeVar] = {}  # ADTs defined in the text
        self.adts: dict[str, TypeData] = {}  # ADTs used: the text's, then the prelude's
        self.ctors: dict[str, Constructor] = {}
        self.functions: dict[str, Function] = {}
        self.global_uses: dict[str, Token] = {}
        self.free: list[Var] | None = None  # standalone expression: its free variables
        self.free_by_name: dict[str, Var] = {}
        self.scoped: dict[str, Var] = {}  # every local bound so far (for out-of-scope uses)
        self.let_tuples: dict[Var, int] = {}  # let-bound tuples: their arity
        self.meta: dict | None = None if constants is None else {"Constant": list(constants)}
        self.meta_consts: dict[tuple[str, int], Constant] = {}

    # -- tokens ----------------------------------------------------------------------------------
    def peek(self, k: int = 0) -> Token:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else self.toks[-1]

    def next(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "eof":
            self.i += 1
        return t

    def accept(self, kind: str) -> Token | None:
        t = self.toks[self.i]
        if t.kind == kind:
            self.i += 1
            return t
        return None

    def expect(self, kind: str, what: str | None = None) -> Token:
        t = self.toks[self.i]
        if t.kind != kind:
            raise self.expected(what or f"'{kind}'", t)
        self.i += 1
        return t

    def expect_kw(self, word: str) -> Token:
        t = self.toks[self.i]
        if not is_kw(t, word):
            raise self.expected(f"'{word}'", t)
        self.i += 1
        return t

    def error(self, t: Token, msg: str) -> ParseError:
        return self.src.error(t.line, t.col, msg)

    def expected(self, what: str, t: Token | None = None) -> ParseError:
        t = t or self.peek()
        return self.error(t, f"expected {what}, found {t.describe()}")

    def span(self, t: Token) -> Span:
        return Span(self.src.name, t.line, t.col)

    # -- scopes ----------------------------------------------------------------------------------
    def mark(self) -> int:
        return len(self.undo)

    def bind(self, table: dict, key, value) -> None:
        stack = table.get(key)
        if stack is None:
            table[key] = [value]
        else:
            stack.append(value)
        if table is self.locals:
            self.scoped[key] = value
        self.undo.append((table, key))

    def restore(self, mark: int) -> None:
        undo = self.undo
        while len(undo) > mark:
            table, key = undo.pop()
            stack = table[key]
            stack.pop()
            if not stack:
                del table[key]

    # -- module ----------------------------------------------------------------------------------
    def parse_module(self) -> IRModule:
        t = self.accept("version")
        if t is not None and not t.value.startswith("0.0."):
            raise self.error(t, f'unsupported text format version "{t.value}"; expected "0.0.5"')
        typedef_ends = self._typedefs()
        body = None
        while True:
            t = self.peek()
            if t.kind == "eof":
                break
            if is_kw(t, "type") or is_kw(t, "extern"):
                self.i = typedef_ends[self.i]
            elif is_kw(t, "def"):
                self.next()
                g = self.expect("global", "a global name @name after 'def'")
                if g.value in self.functions:
                    raise self.error(g, f"@{g.value} is defined twice")
                self.scoped.clear()
                self.functions[g.value] = trampoline(self.parse_function(g))
            else:  # a standalone expression: the body of @main
                self.free = []
                body = trampoline(self.parse_block("eof"))
                self.expect("eof", "end of input")
        return self._build(body)

    def _build(self, body) -> IRModule:
        for name, tok in self.global_uses.items():
            if name not in self.functions:
                self._prelude_global(name, tok)
        if body is not None:
            if "main" in self.functions:
                raise ParseError(
                    f"{self.src.name}: the text defines @main and also has a top-level expression"
                )
            if isinstance(body, Function) and not self.free:
                main = body
            else:
                main = Function(tuple(self.free or ()), body)
            self.functions["main"] = main
        mod = IRModule()
        for td in self.adts.values():
            mod.add_type(td)
        for name, f in self.functions.items():
            mod.add(GlobalVar(name), f)
        return mod

    # -- prelude ---------------------------------------------------------------------------------
    def _prelude(self):
        if not self.use_prelude:
            return None
        from .prelude import prelude_module

        return prelude_module(copy=False)

    def _prelude_adt(self, name: str) -> TypeData | None:
        p = self._prelude()
        if p is None:
            return None
        td = p.type_definitions.get(GlobalTypeVar(name))
        if td is not None and name not in self.adts:
            self.adts[name] = td
            for c in td.constructors:
                self.ctors.setdefault(c.name, c)
        return td

    def _ctor(self, name: str) -> Constructor | None:
        c = self.ctors.get(name)
        if c is not None:
            return c
        p = self._prelude()
        if p is None:
            return None
        try:
            c = p.get_constructor(name)
        except KeyError:
            return None
        self._prelude_adt(c.belong_to.name)
        return self.ctors.get(name)

    def _prelude_global(self, name: str, tok: Token) -> None:
        from .prelude import dependencies

        p = self._prelude()
        if p is None or GlobalVar(name) not in p.functions:
            raise self.error(tok, f"unknown global function @{name}")
        work = [name]
        while work:
            n = work.pop()
            if n in self.functions:
                continue
            f = p.functions[GlobalVar(n)]
            self.functions[n] = f
            globals_used, adts_used = dependencies(f)
            work.extend(globals_used)
            for a in adts_used:
                if a not in self.adts:
                    self._prelude_adt(a)

    # -- functions and blocks --------------------------------------------------------------------
    def parse_function(self, start: Token):
        """`[A, ...](%p: T, ..., key=value) -> R { block }` after `fn` or `def @name`."""
        mark = self.mark()
        tparams = self._type_params()
        self.expect("(", "'(' to open the parameter list")
        params: list[Var] = []
        attrs: dict = {}
        seen: set[str] = set()
        while not self.accept(")"):
            t = self.peek()
            if t.kind == "local":
                self.next()
                if t.value in seen:
                    raise self.error(t, f"parameter %{t.value} appears twice")
                seen.add(t.value)
                if self.peek().kind == "{":  # `%a {virtual_device=...}`: dropped (see above)
                    yield from self._attr_dict()
                ann = (yield self.parse_type()) if self.accept(":") else None
                params.append(Var(t.value, ann, span=self.span(t)))
            elif t.kind == "ident" and self.peek(1).kind == "=":
                self.i += 2
                attrs[t.value] = yield self.parse_attr_value()
            else:
                raise self.expected("a parameter %name or an attribute key=value", t)
            if not self.accept(","):
                self.expect(")", "',' or ')'")
                break
        for p in params:
            self.bind(self.locals, p.name_hint, p)
        ret = (yield self.parse_type()) if self.accept("->") else None
        self.expect("{", "'{' to open the function body")
        body = yield self.parse_block("}")
        self.expect("}", "'}' to close the function body")
        self.restore(mark)
        return Function(
            tuple(params), body, ret, tuple(tparams), attrs or None, span=self.span(start)
        )

    def _attr_dict(self):
        """`{key=value, ...}`, as a dict."""
        self.expect("{", "'{'")
        out = {}
        while not self.accept("}"):
            k = self.expect("ident", "an attribute key")
            self.expect("=", "'=' after the attribute key")
            out[k.value] = yield self.parse_attr_value()
            if not self.accept(","):
                self.expect("}", "',' or '}'")
                break
        return out

    def _let_head(self, let_tok: Token):
        """`%x [: T] = value ;` after `let`; the variable is in scope in its value."""
        t = self.expect("local", "a variable %name after 'let'")
        ann = (yield self.parse_type()) if self.accept(":") else None
        v = Var(t.value, ann, span=self.span(t))
        self.bind(self.locals, t.value, v)
        self.expect("=", "'=' in let")
        value = yield self.parse_expr()
        if type(value) is Tuple:
            self.let_tuples[v] = len(value.fields)
        self.expect(";", "';' after the let-bound value")
        return v, value, self.span(let_tok)

    def parse_block(self, closer):
        """Bindings, then one expression; `closer` (a token kind or a tuple of them, not
        consumed) ends a trailing `;`."""
        closers = (closer,) if isinstance(closer, str) else closer
        mark = self.mark()
        lets = []
        while True:
            t = self.peek()
            if is_kw(t, "let"):
                self.next()
                lets.append((yield from self._let_head(t)))
                continue
            if t.kind == "graph" and self.peek(1).kind == "=":
                self.i += 2
                value = yield self.parse_expr()
                self.expect(";", f"';' after the binding of %{t.value}")
                self.bind(self.graph, t.value, value)
                continue
            if is_kw(t, "free_var"):
                self.next()
                self._free_var()
                continue
            e = yield self.parse_expr()
            if self.peek().kind == ";":
                if self.peek(1).kind in closers:  # trailing `;`
                    self.next()
                    break
                sep = self.next()
                lets.append((Var("_"), e, self.span(sep)))  # `e; rest` runs e for its effect
                continue
            break
        for v, value, sp in reversed(lets):
            e = Let(v, value, e, span=sp)
        self.restore(mark)
        return e

    def _free_var(self) -> None:
        t = self.expect("local", "a variable %name after 'free_var'")
        if self.free is None:
            raise self.error(t, "free_var is only allowed in a standalone expression")
        ann = trampoline(self.parse_type()) if self.accept(":") else None
        self.expect(";", "';' after free_var")
        v = Var(t.value, ann, span=self.span(t))
        self.free.append(v)
        self.free_by_name[t.value] = v

    # -- expressions -----------------------------------------------------------------------------
    def parse_expr(self):
        t = self.peek()
        if is_kw(t, "let"):  # `let %x = v; body` in expression position
            mark = self.mark()
            lets = []
            while is_kw(self.peek(), "let"):
                lets.append((yield from self._let_head(self.next())))
            e = yield self.parse_expr()
            self.restore(mark)
            for v, value, sp in reversed(lets):
                e = Let(v, value, e, span=sp)
            return e
        lhs = yield from self._unary()
        if self.peek().kind not in _BINOPS:
            return lhs
        operands, ops = [lhs], []
        while self.peek().kind in _BINOPS:
            op = self.next()
            rhs = yield from self._unary()
            while ops and _BINOPS[ops[-1].kind][0] >= _BINOPS[op.kind][0]:
                self._reduce(operands, ops)
            ops.append(op)
            operands.append(rhs)
        while ops:
            self._reduce(operands, ops)
        return operands[0]

    def _reduce(self, operands: list, ops: list) -> None:
        op = ops.pop()
        b, a = operands.pop(), operands.pop()
        operands.append(self._op_call(op, _BINOPS[op.kind][1], [a, b], {}))

    def _unary(self):
        t = self.peek()
        if t.kind == "-":
            self.next()
            e = yield self.parse_expr_unary()
            return self._op_call(t, "negative", [e], {})
        return (yield from self._postfix())

    def parse_expr_unary(self):
        return (yield from self._unary())

    def _postfix(self):
        start = self.peek()
        e = yield from self._primary()
        while True:
            t = self.peek()
            if t.kind == "(":
                e = yield from self._call(e, t, start)
            elif t.kind == ".":
                self.next()
                n = self.expect("number", "a tuple index after '.'")
                e = TupleGetItem(e, int(n.value), span=self.span(n))
            else:
                return e

    def _call(self, callee, open_tok: Token, start: Token):
        self.next()
        args: list = []
        kw: dict = {}
        kw_tok: Token | None = None
        while not self.accept(")"):
            t = self.peek()
            if t.kind == "ident" and self.peek(1).kind == "=":
                self.i += 2
                if t.value in kw:
                    raise self.error(t, f"attribute {t.value} is given twice")
                kw_tok = kw_tok or t
                kw[t.value] = yield self.parse_attr_value()
            else:
                if kw:
                    raise self.error(t, "positional argument after attributes")
                args.append((yield self.parse_expr()))
            if not self.accept(","):
                self.expect(")", "',' or ')'")
                break
        if type(callee) is Op:
            return self._op_call(start, callee.name, args, kw, kw_tok)
        # attributes of a call of a non-operator are dropped (see the module docstring)
        if type(callee) is Constructor and len(args) != len(callee.inputs):
            raise self.error(
                open_tok,
                f"constructor {callee.name} takes {len(callee.inputs)} argument(s), "
                f"got {len(args)}",
            )
        return Call(callee, tuple(args), span=self.span(start))

    def _op_call(self, tok: Token, name: str, args: list, kw: dict, kw_tok=None):
        if name in TUPLE_IN and len(args) == 1:
            args = self._spread(args[0])
        op = Op.get(name)
        opdef = op.opdef
        try:
            attrs = opdef.make_attrs(**kw)
        except OpTypeError as e:
            raise self.error(kw_tok or tok, str(e)) from None
        try:
            opdef.check_arity(len(args))
        except OpTypeError as e:
            raise self.error(tok, str(e)) from None
        return Call(op, tuple(args), attrs, span=self.span(tok))

    def _spread(self, arg) -> list:
        """The fields of a tuple argument: written out, let-bound, or typed (TVM's form)."""
        if type(arg) is Tuple:
            return list(arg.fields)
        n = None
        if type(arg) is Var:
            n = self.let_tuples.get(arg)
            if n is None and type(arg.type_annotation) is TupleType:
                n = len(arg.type_annotation.fields)
        if n is None:
            return [arg]
        return [TupleGetItem(arg, i) for i in range(n)]

    def _primary(self):
        t = self.next()
        k = t.kind
        if k == "local":
            return self._local(t)
        if k == "graph":
            stack = self.graph.get(t.value)
            if not stack:
                raise self.error(t, f"unknown graph binding %{t.value}")
            return stack[-1]
        if k == "global":
            self.global_uses.setdefault(t.value, t)
            return GlobalVar(t.value, span=self.span(t))
        if k == "number":
            try:
                arr, _ = parse_number(t.value)
            except ValueError as e:
                raise self.error(t, str(e)) from None
            return Constant(arr, span=self.span(t))
        if k == "(":
            if self.accept(")"):
                return Tuple((), span=self.span(t))
            first = yield self.parse_block(")")
            if self.accept(")"):
                return first
            if not self.accept(","):
                raise self.expected("',' or ')'")
            fields = [first]
            while not self.accept(")"):
                fields.append((yield self.parse_expr()))
                if not self.accept(","):
                    self.expect(")", "',' or ')'")
                    break
            return Tuple(tuple(fields), span=self.span(t))
        if k == "{":
            body = yield self.parse_block("}")
            self.expect("}", "'}' to close the block")
            return body
        if k == "ident":
            return (yield from self._word(t))
        raise self.expected("an expression", t)

    def _local(self, t: Token):
        name = t.value
        stack = self.locals.get(name)
        if stack:
            return stack[-1]
        if "." in name:  # `%t.0`: a tuple index on %t (the lexer keeps dots in names)
            parts = name.split(".")
            for k in range(len(parts) - 1, 0, -1):
                if not all(p.isdigit() for p in parts[k:]):
                    break
                base = self.locals.get(".".join(parts[:k]))
                if base:
                    e = base[-1]
                    for p in parts[k:]:
                        e = TupleGetItem(e, int(p), span=self.span(t))
                    return e
        v = self.free_by_name.get(name)
        if v is not None:
            return v
        bound = self.scoped.get(name)
        if bound is not None:
            where = f" (bound at line {bound.span.line})" if bound.span is not None else ""
            raise self.error(t, f"%{name} is used outside the scope that binds it{where}")
        if self.free is not None:  # standalone expression: an undeclared free variable
            if v is None:
                v = self.free_by_name[name] = Var(name, span=self.span(t))
                self.free.append(v)
            return v
        hint = did_you_mean(name, self.locals, "%")
        raise self.error(t, f"unknown variable %{name}{hint}")

    def _word(self, t: Token):
        v = t.value
        sp = self.span(t)
        if v == "fn":
            return (yield self.parse_function(t))
        if v == "if":
            cond = yield self.parse_expr()
            self.expect("{", "'{' after the if condition")
            tb = yield self.parse_block("}")
            self.expect("}", "'}' to close the then-branch")
            self.expect_kw("else")
            self.expect("{", "'{' after else")
            fb = yield self.parse_block("}")
            self.expect("}", "'}' to close the else-branch")
            return If(cond, tb, fb, span=sp)
        if v == "match":
            return (yield from self._match(t))
        if v in ("ref", "ref_read"):
            self.expect("(", f"'(' after {v}")
            e = yield self.parse_expr()
            self.expect(")", "')'")
            return RefCreate(e, span=sp) if v == "ref" else RefRead(e, span=sp)
        if v == "ref_write":
            self.expect("(", "'(' after ref_write")
            r = yield self.parse_expr()
            self.expect(",", "','")
            e = yield self.parse_expr()
            self.expect(")", "')'")
            return RefWrite(r, e, span=sp)
        if v == "meta":
            return self._meta_ref(t)
        if v == "call_lowered" and self.peek().kind == "(":
            return (yield from self._call_lowered(t))
        if v in ("True", "False"):
            return Constant(np.array(v == "True"), span=sp)
        if v in _KEYWORDS:
            raise self.expected("an expression", t)
        ctor = self.ctors.get(v)
        if ctor is None:
            try:
                return Op.get(v)
            except OpTypeError as e:
                ctor = self._ctor(v)
                if ctor is None:
                    raise self.error(t, str(e)) from None
        if not ctor.inputs and self.peek().kind != "(":
            return Call(ctor, (), span=sp)  # `Nil` is a call of the nullary constructor
        return ctor

    def _call_lowered(self, t: Token):
        """TVM's `call_lowered(f, (args), attrs)` is the call `f(args)`; its attrs are
        dropped (they name the lowered primitive functions)."""
        self.expect("(", "'(' after call_lowered")
        callee = yield self.parse_expr()
        self.expect(",", "',' after the function called by call_lowered")
        args = self._spread((yield self.parse_expr()))
        while self.accept(","):
            if self.peek().kind == ")":
                break
            self.expect("ident", "an attribute key")
            self.expect("=", "'=' after the attribute key")
            yield self.parse_attr_value()
        self.expect(")", "')' to close call_lowered")
        return Call(callee, tuple(args), span=self.span(t))

    def _match(self, t: Token):
        complete = self.accept("?") is None
        data = yield self.parse_expr()
        self.expect("{", "'{' to open the match clauses")
        clauses = []
        while not self.accept("}"):
            mark = self.mark()
            pat = yield self.parse_pattern()
            self.expect("=>", "'=>' after the pattern")
            if self.accept("{"):
                rhs = yield self.parse_block("}")
                self.expect("}", "'}' to close the clause")
            else:  # TVM: an arm is a block without braces (`let %y = ...; %y`)
                rhs = yield self.parse_block((",", "}"))
            self.restore(mark)
            clauses.append(Clause(pat, rhs))
            if not self.accept(","):
                self.expect("}", "',' or '}'")
                break
        return Match(data, tuple(clauses), complete, span=self.span(t))

    def parse_pattern(self):
        t = self.next()
        if t.kind == "ident" and t.value == "_":
            return PatternWildcard()
        if t.kind == "local":
            ann = (yield self.parse_type()) if self.accept(":") else None
            v = Var(t.value, ann, span=self.span(t))
            self.bind(self.locals, t.value, v)
            return PatternVar(v)
        if t.kind == "ident":
            ctor = self._ctor(t.value)
            if ctor is None:
                raise self.error(t, f"unknown constructor {t.value} in pattern")
            subs = []
            if self.accept("("):
                subs = yield from self._patterns()
            if len(subs) != len(ctor.inputs):
                raise self.error(
                    t,
                    f"constructor {ctor.name} takes {len(ctor.inputs)} field(s), "
                    f"the pattern has {len(subs)}",
                )
            return PatternConstructor(ctor, tuple(subs))
        if t.kind == "(":
            return PatternTuple(tuple((yield from self._patterns())))
        raise self.expected("a pattern (_, %x, Ctor(...) or a tuple)", t)

    def _patterns(self):
        out = []
        while not self.accept(")"):
            out.append((yield self.parse_pattern()))
            if not self.accept(","):
                self.expect(")", "',' or ')'")
                break
        return out


def parse(
    text: str,
    source_name: str = "<string>",
    typecheck: bool = True,
    use_prelude: bool = True,
    constants: list | None = None,
) -> IRModule:
    """Read Relay text into an IRModule; runs type inference unless `typecheck=False`.
    `constants` (arrays) are what `meta[Constant][i]` refers to in a text printed without its
    metadata (printer.module_to_text_and_constants).

    >>> mod = parse('def @main(%x: Tensor[(2), float32]) { add(%x, %x) }')
    >>> parse("fn (%x: float32) { exp(%x) }")["main"]      # an expression becomes @main
    """
    mod = Parser(text, source_name, use_prelude, constants).parse_module()
    if typecheck:
        type_check(mod)  # typing.infer_type, installed by relay_core.typing
    return mod


def parse_type(text: str, source_name: str = "<string>"):
    """Read a type: `parse_type("Tensor[(n, 4), float32]")`."""
    p = Parser(text, source_name)
    t = trampoline(p.parse_type())
    p.expect("eof", "end of input")
    return t


__all__ = ["parse", "parse_type", "Parser"]
