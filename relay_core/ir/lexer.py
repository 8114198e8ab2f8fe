"""Tokenizer for the Relay text format.

Token kinds: `local` (%x, value "x"), `graph` (%0, value 0), `global` (@f), `ident` (add,
nn.conv2d, Cons, float32), `number` (raw text: 1, -2.5f, 1i64), `string` (decoded), `version`,
punctuation (the text itself: `(`, `->`, `=>`, ...) and `eof`. Comments (`//`, nested `/* */`) and
whitespace are skipped. The `#[metadata]` section is cut off before tokenizing.
"""

from __future__ import annotations

import bisect
import json
import re

from ..errors import ParseError

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<lcomment>//[^\n]*)
  | (?P<bcomment>/\*)
  | (?P<version>\#\[\s*version\s*=\s*"[^"]*"\s*\])
  | (?P<attr>\#\[[^\]]*\])
  | (?P<graph>%\d+)
  | (?P<local>%[A-Za-z_][\w]*(?:[./][\w]+)*)
  | (?P<global>@[A-Za-z_][\w]*(?:[./][\w]+)*)
  | (?P<number>-?(?:\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|inf(?=f)|nan(?=f))(?:[fiu]\d*)?)
  | (?P<ident>[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>->|=>|==|!=|<=|>=|[()\[\]{},;:=.?+\-*/<>])
    """,
    re.VERBOSE,
)
_INDEX_RE = re.compile(r"\d+")
# Tokens after which `-` is a binary minus rather than the sign of a number.
_OPERAND_END = frozenset({"local", "graph", "global", "ident", "number", "string", ")", "]", "}"})


class Token:
    __slots__ = ("kind", "value", "pos", "line", "col")

    def __init__(self, kind: str, value, pos: int, line: int, col: int):
        self.kind = kind
        self.value = value
        self.pos = pos
        self.line = line
        self.col = col

    def describe(self) -> str:
        """How error messages name this token."""
        k = self.kind
        if k == "eof":
            return "end of input"
        if k == "local":
            return f"%{self.value}"
        if k == "graph":
            return f"%{self.value}"
        if k == "global":
            return f"@{self.value}"
        if k == "ident":
            return f"'{self.value}'"
        if k == "number":
            return f"number {self.value}"
        if k == "string":
            return f"string {json.dumps(self.value)}"
        if k == "version":
            return "#[version]"
        return f"'{k}'"

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.value!r}, {self.line}:{self.col})"


class Source:
    """The text being parsed, for positions and error messages with a caret."""

    def __init__(self, text: str, name: str):
        self.text = text
        self.name = name
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def position(self, pos: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.line_starts, pos) - 1
        return i + 1, pos - self.line_starts[i] + 1

    def line_text(self, line: int) -> str:
        if not 1 <= line <= len(self.line_starts):
            return ""
        start = self.line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start : end if end >= 0 else len(self.text)]

    def error(self, line: int, col: int, msg: str) -> ParseError:
        """`<source>:<line>:<col>: msg`, the source line and a caret under the column."""
        src = self.line_text(line).rstrip("\r").expandtabs(1)
        text = f"{self.name}:{line}:{col}: {msg}"
        if src.strip():
            text += f"\n  {src}\n  {' ' * (col - 1)}^"
        return ParseError(text, line, col, self.name)


def _skip_block_comment(text: str, pos: int) -> int:
    """End of the (nested) block comment that starts at `pos`, or -1."""
    depth = 0
    i = pos
    n = len(text)
    while i < n:
        if text.startswith("/*", i):
            depth += 1
            i += 2
        elif text.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return -1


def tokenize(src: Source, end: int | None = None) -> list[Token]:
    """Tokens of `src.text[:end]`, ending with an `eof` token."""
    text = src.text
    n = len(text) if end is None else end
    out: list[Token] = []
    pos = 0
    match = _TOKEN_RE.match
    while pos < n:
        m = match(text, pos, n)
        if m is None:
            line, col = src.position(pos)
            raise src.error(line, col, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup
        start, pos = pos, m.end()
        if kind == "ws" or kind == "lcomment":
            continue
        if kind == "bcomment":
            e = _skip_block_comment(text[:n], start)
            if e < 0:
                line, col = src.position(start)
                raise src.error(line, col, "unterminated comment: expected '*/'")
            pos = e
            continue
        line, col = src.position(start)
        tok = m.group()
        if kind == "punct":
            out.append(Token(tok, tok, start, line, col))
            if tok == ".":  # a tuple index: digits only, never a float
                m2 = _INDEX_RE.match(text, pos, n)
                if m2 is not None:
                    line2, col2 = src.position(pos)
                    out.append(Token("number", m2.group(), pos, line2, col2))
                    pos = m2.end()
            continue
        if kind == "number":
            if tok[0] == "-" and out and out[-1].kind in _OPERAND_END:
                out.append(Token("-", "-", start, line, col))  # binary minus: `%x -1f`
                start += 1
                tok = tok[1:]
                col += 1
            out.append(Token("number", tok, start, line, col))
        elif kind == "local":
            out.append(Token("local", tok[1:], start, line, col))
        elif kind == "graph":
            out.append(Token("graph", int(tok[1:]), start, line, col))
        elif kind == "global":
            out.append(Token("global", tok[1:], start, line, col))
        elif kind == "ident":
            out.append(Token("ident", tok, start, line, col))
        elif kind == "string":
            out.append(Token("string", json.loads(tok), start, line, col))
        elif kind == "version":
            version = tok[tok.index('"') + 1 : tok.rindex('"')]
            out.append(Token("version", version, start, line, col))
        elif kind == "attr":
            raise src.error(line, col, f"unsupported attribute {tok}; expected #[version = ...]")
    line, col = src.position(n)
    out.append(Token("eof", None, n, line, col))
    return out


_METADATA_RE = re.compile(r"^[ \t]*#\[\s*metadata\s*\][ \t]*\r?$", re.MULTILINE)


def split_metadata(text: str) -> tuple[int, str | None]:
    """(end of the program text, the metadata JSON text or None)."""
    m = _METADATA_RE.search(text)
    if m is None:
        return len(text), None
    return m.start(), text[m.end() :]
