"""Parser part 2: types, ADT definitions, attribute values and `meta[...]` references.

A mixin of `parser.Parser` (it uses the token helpers and scopes defined there).
"""

from __future__ import annotations

import difflib

from . import dtype as _dt
from .expr import Constant, Constructor
from .lexer import Token
from .text_format import attr_number, decode_metadata, trampoline
from .types import (
    Any,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    ShapeVar,
    TensorType,
    TupleType,
    TypeCall,
    TypeData,
    TypeVar,
    scaled,
)

DTYPES = frozenset(_dt.DTYPES)


def did_you_mean(name: str, options, prefix: str = "") -> str:
    close = difflib.get_close_matches(name, list(options), n=1)
    return f"; did you mean {prefix}{close[0]}?" if close else ""


def is_kw(t: Token, word: str) -> bool:
    return t.kind == "ident" and t.value == word


class TypeSyntax:
    """Types, `type` definitions, attribute values, metadata references."""

    # -- type definitions ------------------------------------------------------------------------
    def _typedefs(self) -> dict[int, int]:
        """Parse every top-level `type` first (defs may use them before their definition)."""
        starts = []
        depth = 0
        for j, t in enumerate(self.toks):
            k = t.kind
            if k in "([{":
                depth += 1
            elif k in ")]}":
                depth -= 1
            elif depth == 0 and k == "ident" and t.value in ("type", "extern"):
                if t.value == "extern":
                    starts.append(j)
                elif not (j and is_kw(self.toks[j - 1], "extern")):
                    starts.append(j)
        for j in starts:  # register every name first: constructors may refer to any ADT
            k = j + 1 if is_kw(self.toks[j], "type") else j + 2
            t = self.toks[k]
            if t.kind == "ident":
                if t.value in self.headers:
                    raise self.error(t, f"type {t.value} is defined twice")
                self.headers[t.value] = GlobalTypeVar(t.value)
        ends = {}
        save = self.i
        for j in starts:
            self.i = j
            self._typedef()
            ends[j] = self.i
        self.i = save
        return ends

    def _typedef(self) -> None:
        if is_kw(self.peek(), "extern"):
            self.next()
        self.expect_kw("type")
        name = self.expect("ident", "a type name")
        header = self.headers[name.value]
        mark = self.mark()
        tvars = self._type_params()
        ctors: list[Constructor] = []
        if self.accept("{"):
            while not self.accept("}"):
                c = self.expect("ident", "a constructor name")
                if c.value in self.ctors:
                    raise self.error(c, f"constructor {c.value} is defined twice")
                inputs = []
                if self.accept("("):
                    while not self.accept(")"):
                        inputs.append(trampoline(self.parse_type()))
                        if not self.accept(","):
                            self.expect(")", "',' or ')'")
                            break
                ctor = Constructor(c.value, tuple(inputs), header, len(ctors), span=self.span(c))
                ctors.append(ctor)
                self.ctors[c.value] = ctor
                if not self.accept(","):
                    self.expect("}", "',' or '}'")
                    break
        self.restore(mark)
        self.adts[name.value] = TypeData(header, tuple(tvars), tuple(ctors))

    def _type_params(self) -> list[TypeVar]:
        out = []
        if self.accept("["):
            while not self.accept("]"):
                t = self.expect("ident", "a type parameter name")
                tv = TypeVar(t.value)
                self.bind(self.tvars, t.value, tv)
                out.append(tv)
                if not self.accept(","):
                    self.expect("]", "',' or ']'")
                    break
        return out

    # -- metadata --------------------------------------------------------------------------------
    def _meta_ref(self, t: Token) -> Constant:
        self.expect("[", "'[' after meta")
        kind = self.expect("ident", "a metadata kind such as Constant").value
        self.expect("]", "']'")
        self.expect("[", "'['")
        n = self.expect("number", "a metadata index")
        self.expect("]", "']'")
        if self.meta_text is None:
            raise self.error(
                t,
                f"meta[{kind}][{n.value}] refers to a #[metadata] section, but the text has "
                "none (str(mod) and show_meta_data=False leave the data out; write the module "
                "with mod.astext() to keep it)",
            )
        if self.meta is None:
            try:
                self.meta = decode_metadata(self.meta_text)
            except (ValueError, KeyError, TypeError, IndexError) as e:
                msg = f"malformed #[metadata] section: {e}"
                raise self.src.error(self.meta_line, 1, msg) from None
        key = kind[len("relay.") :] if kind.startswith("relay.") else kind
        table = self.meta.get(key, self.meta.get("relay." + key))
        idx = int(n.value)
        if table is None or not 0 <= idx < len(table):
            size = len(table) if table is not None else 0
            raise self.error(n, f"meta[{kind}][{idx}] is out of range: the section has {size}")
        if table[idx] is None:
            raise self.error(
                t,
                f"meta[{kind}][{idx}] has no data: it was left out when printed (str(mod) "
                "elides large constants; write the module with mod.astext()), or it is not a "
                "constant",
            )
        c = self.meta_consts.get((key, idx))
        if c is None:
            c = self.meta_consts[(key, idx)] = Constant(table[idx], span=self.span(t))
        return c

    # -- attributes and types --------------------------------------------------------------------
    def parse_attr_value(self):
        t = self.next()
        k = t.kind
        if k == "number":
            try:
                return attr_number(t.value)
            except ValueError as e:
                raise self.error(t, str(e)) from None
        if k == "string":
            return t.value
        if k == "ident":
            v = t.value
            if self.peek().kind in ("[", "(") and (v == "meta" or v[:1].isupper()):
                return self._raw_attr(t)  # `meta[VirtualDevice][0]`, `VirtualDevice(...)`
            if v in ("True", "False"):
                return v == "True"
            if v in ("None", "nullptr"):
                return None
            if v in ("inf", "inff"):
                return float("inf")
            if v in ("nan", "nanf"):
                return float("nan")
            return v  # a bare word: read as a string
        if k == "{":  # a map (TVM's call_lowered metadata): kept as its text
            self.i -= 1
            return self._raw_attr(t, opened=True)
        if k in ("[", "("):
            closer = "]" if k == "[" else ")"
            items = []
            comma = False
            while not self.accept(closer):
                items.append((yield self.parse_attr_value()))
                if not self.accept(","):
                    self.expect(closer, f"',' or '{closer}'")
                    break
                comma = True
            if k == "(" and len(items) == 1 and not comma:
                return items[0]
            return tuple(items)
        raise self.expected("an attribute value", t)

    def _raw_attr(self, start: Token, opened: bool = False) -> str:
        """An attribute value kept as text: `meta[K][i]`, `Name(...)` or `{...}`, brackets
        balanced."""
        end = start.pos + len(start.value) if not opened else start.pos
        while self.peek().kind in ("[", "(") or (opened and self.peek().kind == "{"):
            opened = False
            depth = 0
            while True:
                t = self.next()
                if t.kind == "eof":
                    raise self.expected("a closing bracket", t)
                if t.kind in ("[", "(", "{"):
                    depth += 1
                elif t.kind in ("]", ")", "}"):
                    depth -= 1
                    if depth == 0:
                        end = t.pos + 1
                        break
        return self.src.text[start.pos : end]

    def parse_type(self):
        t = self.next()
        if t.kind == "(":
            fields = []
            while not self.accept(")"):
                fields.append((yield self.parse_type()))
                if not self.accept(","):
                    self.expect(")", "',' or ')'")
                    break
            return TupleType(tuple(fields))  # `(T)` is a 1-tuple, as in TVM
        if t.kind != "ident":
            raise self.expected("a type", t)
        v = t.value
        stack = self.tvars.get(v)
        if stack:
            return stack[-1]
        d = _dt.canonical(v)
        if d is not None:
            return TensorType((), d)
        if v == "_":
            return IncompleteType()
        if v == "Tensor":
            self.expect("[", "'[' after Tensor")
            shape = self._shape()
            self.expect(",", "',' after the shape")
            d = self.expect("ident", "a dtype")
            name = _dt.canonical(d.value)
            if name is None:
                raise self.error(d, f"unknown dtype {d.value}{did_you_mean(d.value, DTYPES)}")
            self.expect("]", "']'")
            return TensorType(shape, name)
        if v == "fn":
            mark = self.mark()
            tps = self._type_params()
            self.expect("(", "'(' in a function type")
            args = []
            while not self.accept(")"):
                args.append((yield self.parse_type()))
                if not self.accept(","):
                    self.expect(")", "',' or ')'")
                    break
            self.expect("->", "'->' in a function type")
            ret = yield self.parse_type()
            self.restore(mark)
            return FuncType(tuple(args), ret, tuple(tps))
        if v == "Ref" and self.peek().kind == "[":
            self.next()
            inner = yield self.parse_type()
            self.expect("]", "']'")
            return RefType(inner)
        if v == "ref" and self.peek().kind == "(":
            self.next()
            inner = yield self.parse_type()
            self.expect(")", "')'")
            return RefType(inner)
        if v == "Storage" and v not in self.headers and v not in self.adts:
            if self.peek().kind == "[" and self.peek(1).kind == "]":
                self.i += 2  # `Storage[]`
            return TypeCall(GlobalTypeVar(v), ())  # TVM's extern storage type (memory.*)
        if v in self.headers:
            header = self.headers[v]
        elif v in self.adts or self._prelude_adt(v) is not None:
            header = self.adts[v].header
        else:
            known = set(self.adts) | set(self.headers) | set(DTYPES) | {"Tensor", "Ref"}
            p = self._prelude()
            known |= {g.name for g in p.type_definitions} if p is not None else set()
            raise self.error(t, f"unknown type {v}{did_you_mean(v, known)}")
        args = []
        if self.accept("["):
            while not self.accept("]"):
                args.append((yield self.parse_type()))
                if not self.accept(","):
                    self.expect("]", "',' or ']'")
                    break
        return TypeCall(header, tuple(args))

    def _shape(self) -> tuple:
        self.expect("(", "'(' to open the shape")
        dims = []
        while not self.accept(")"):
            t = self.next()
            if t.kind == "number":
                try:
                    d = attr_number(t.value)
                except ValueError as e:
                    raise self.error(t, str(e)) from None
                if not isinstance(d, int) or d < 0:
                    msg = f"a dimension must be a non-negative integer, not {t.value}"
                    raise self.error(t, msg)
                if self.accept("*"):  # 2*n: a multiple of a named dim
                    name = self.next()
                    if name.kind != "ident":
                        raise self.expected("a dimension name after '*'", name)
                    d = scaled(ShapeVar(name.value), d)
                dims.append(d)
            elif t.kind == "?":
                dims.append(Any)
            elif t.kind == "ident":
                dims.append(ShapeVar(t.value))
            else:
                raise self.expected("a dimension (an integer, ? or a name)", t)
            if not self.accept(","):
                self.expect(")", "',' or ')'")
                break
        return tuple(dims)
