"""Errors from the text format: parse errors with positions, and type errors with an excerpt."""

from __future__ import annotations

import numpy as np
import pytest

from relay_core import ParseError, RelayTypeError, parse
from relay_core.ir import Function, Let, Var, call, var
from relay_core.ir.printer import excerpt


def _err(text: str) -> ParseError:
    with pytest.raises(ParseError) as e:
        parse(text, source_name="model.relay")
    return e.value


@pytest.mark.parametrize(
    "text,line,col,message",
    [
        ("def @main(%x: float32) {\n  add(%x, %x\n}", 3, 1, "expected ',' or ')', found '}'"),
        (
            "def @main(%x: float32) {\n  %x",
            2,
            5,
            "expected '}' to close the function body, found end of input",
        ),  # fmt: skip
        ("def @main(%x float32) { %x }", 1, 14, "expected ',' or ')', found 'float32'"),
        ("def main(%x: float32) { %x }", 1, 5, "expected a global name @name after 'def'"),
        (
            "def @main(%x: float32) {\n  let x = %x;\n  x\n}",
            2,
            7,
            "expected a variable %name after 'let', found 'x'",
        ),  # fmt: skip
        (
            "def @main(%x: float32) {\n  %0 = negative(%x)\n  %0\n}",
            3,
            3,
            "expected ';' after the binding of %0, found %0",
        ),  # fmt: skip
        ("def @main(%x: float32) { if (%x) { %x } %x }", 1, 41, "expected 'else', found %x"),
        ("def @main(%x: float32) {\n  match (%x) { %y %x }\n}", 2, 19, "expected '=>'"),
        ("def @main(%x: float32) { %x $ %x }", 1, 29, "unexpected character '$'"),
        ("def @main(%x: float32) { %x } /* open", 1, 31, "unterminated comment"),
        ("#[vers = 1]\ndef @main() { 1 }", 1, 1, "unsupported attribute #[vers = 1]"),
        ('#[version = "1.0.0"]\ndef @main() { 1 }', 1, 1, "unsupported text format version"),
        ("def @main(%x: float32) { (%x).a }", 1, 31, "expected a tuple index after '.'"),
        ("def @main(%x: float32) { %x.a }", 1, 26, "unknown variable %x.a"),
    ],
)
def test_syntax_errors_say_where_and_what_was_expected(text, line, col, message):
    e = _err(text)
    assert str(e).startswith(f"model.relay:{line}:{col}: ")
    assert message in str(e)
    assert (e.line, e.column, e.source) == (line, col, "model.relay")
    # The offending line is quoted with a caret under the column.
    lines = str(e).split("\n")
    src_line = text.split("\n")[line - 1]
    if src_line.strip():
        assert lines[1] == "  " + src_line
        assert lines[2] == "  " + " " * (col - 1) + "^"


@pytest.mark.parametrize(
    "text,line,col,message",
    [
        ("def @main(%x: float32) {\n  add(%x, %y)\n}", 2, 11, "unknown variable %y"),
        (
            "def @main(%input: float32) {\n  add(%input, %inptu)\n}",
            2,
            15,
            "unknown variable %inptu; did you mean %input?",
        ),  # fmt: skip
        (
            "def @main(%x: float32) {\n  nagative(%x)\n}",
            2,
            3,
            "unknown operator 'nagative'; did you mean negative?",
        ),  # fmt: skip
        (
            "def @main(%x: float32) {\n  add(%x, %x, axis=1)\n}",
            2,
            15,
            "operator add takes no attributes",
        ),  # fmt: skip
        ("def @main(%x: float32) {\n  add(%x)\n}", 2, 3, "operator add takes 2 inputs, got 1"),
        (
            "def @main(%x: float32) {\n  Cons(%x)\n}",
            2,
            7,
            "constructor Cons takes 2 argument(s), got 1",
        ),  # fmt: skip
        (
            "def @main(%x: float32) {\n  match (Nil) { Cons(%a) => %a }\n}",
            2,
            17,
            "constructor Cons takes 2 field(s), the pattern has 1",
        ),  # fmt: skip
        (
            "def @main(%x: float32) {\n  match (%x) { Conz(%a) => %a }\n}",
            2,
            16,
            "unknown constructor Conz in pattern",
        ),  # fmt: skip
        ("def @main(%x: float32) {\n  @nope(%x)\n}", 2, 3, "unknown global function @nope"),
        (
            "def @main(%x: Tensor[(2), flot32]) { %x }",
            1,
            27,
            "unknown dtype flot32; did you mean float32?",
        ),  # fmt: skip
        ("def @main(%x: Lis[float32]) { %x }", 1, 15, "unknown type Lis; did you mean List?"),
        (
            "def @main(%x: Tensor[(-1), float32]) { %x }",
            1,
            23,
            "a dimension must be a non-negative integer",
        ),  # fmt: skip
        ("def @main() {\n  300u8\n}", 2, 3, "300 does not fit in uint8"),
        ("def @main() { 1.5i8 }", 1, 15, "an integer suffix on a non-integer number"),
        (
            "def @main(%c: bool) {\n  %0 = if (%c) { %1 = 1f; %1 } else { 2f };\n  %1\n}",
            3,
            3,
            "unknown graph binding %1",
        ),  # fmt: skip
        (
            "def @main(%x: float32) { %x }\ndef @main(%x: float32) { %x }",
            2,
            5,
            "@main is defined twice",
        ),  # fmt: skip
        (
            "type T { A, B }\ntype U { A }\ndef @main() { 1 }",
            2,
            10,
            "constructor A is defined twice",
        ),  # fmt: skip
        ("def @main(%x: float32, %x: float32) { %x }", 1, 24, "parameter %x appears twice"),
        (
            "def @main() {\n  meta[Constant][0]\n}",
            2,
            3,
            "refers to a #[metadata] section, but the text has none",
        ),  # fmt: skip
        (
            "def @main(%x: float32) { free_var %y: float32; %x }",
            1,
            35,
            "free_var is only allowed in a standalone expression",
        ),  # fmt: skip
        (
            "def @main(%x: float32) { negative(%x, alpha=1) }",
            1,
            39,
            "operator negative takes no attributes",
        ),  # fmt: skip
        (
            "def @main(%x: float32) { (fn (%y: float32) { %y }, %y) }",
            1,
            52,
            "%y is used outside the scope that binds it (bound at line 1)",
        ),  # fmt: skip
        ("def @main() { 65505f16 }", 1, 15, "65505f16 overflows float16"),
    ],
)
def test_name_and_arity_errors_have_positions(text, line, col, message):
    e = _err(text)
    assert str(e).startswith(f"model.relay:{line}:{col}: "), str(e)
    assert message in str(e)


def test_metadata_errors():
    def text(index: int, shape: int) -> str:
        entry = f'{{"dtype": "int8", "shape": [{shape}], "data": "AAE="}}'
        program = f"def @main() {{\n  meta[Constant][{index}]\n}}\n"
        return program + f'#[metadata]\n{{"Constant": [{entry}]}}'

    e = _err(text(1, 2))
    assert "model.relay:2:18: meta[Constant][1] is out of range: the section has 1" in str(e)
    e = _err(text(0, 3))
    assert "model.relay:4:1: malformed #[metadata] section" in str(e) and "3 bytes" in str(e)
    np.testing.assert_array_equal(parse(text(0, 2))["main"].body.data, np.array([0, 1], "int8"))


# -- type errors --------------------------------------------------------------------------------


def test_type_error_from_text_marks_the_offending_line():
    text = """def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3, 2), float32]) {
  %0 = exp(%x);
  %1 = add(%0, %y);
  negative(%1)
}"""
    with pytest.raises(RelayTypeError) as e:
        parse(text, source_name="m.relay")
    msg = str(e.value)
    assert msg.startswith("type error at m.relay:3:8: add(Tensor[(2, 3), float32], "
                          "Tensor[(3, 2), float32]): shapes (2, 3) and (3, 2)")  # fmt: skip
    lines = msg.split("\n")
    marked = [i for i, ln in enumerate(lines) if ln.startswith("--> ")]
    assert len(marked) == 1
    row = lines[marked[0]]
    assert row == "-->   %1 = add(%0, %y);"
    caret = lines[marked[0] + 1]
    assert caret.strip() == "^" * len("add(%0, %y)")
    assert caret.index("^") == row.index("add(")


def test_type_error_excerpt_shows_only_nearby_lines():
    x = var("x", (4,))
    e = x
    for _ in range(30):
        e = call("negative", e)
    bad = call("add", e, var("y", (5,)))
    for _ in range(30):
        bad = call("exp", bad)
    f = Function((x, _free_var_of(bad)), bad)
    text = excerpt(f, _find_add(bad), name="main")
    lines = text.split("\n")
    assert lines[0].startswith("    def @main(%x: Tensor[(4), float32]")
    assert lines[1] == "    ..."
    row = next(i for i, ln in enumerate(lines) if ln.startswith("-->"))
    assert lines[row] == "-->   %30 = add(%29, %y);"
    assert set(lines[row + 1].strip()) == {"^"}
    # about six lines of context on each side, then an ellipsis
    assert 4 <= row - 2 <= 8 and 4 <= len(lines) - row - 3 <= 8
    assert lines[-1] == "    ..."
    assert "%10 = " not in text and "%50 = " not in text


def _free_var_of(e):
    from relay_core.ir import free_vars

    return next(v for v in free_vars(e) if v.name_hint == "y")


def _find_add(e):
    from relay_core.ir import post_order

    return next(n for n in post_order(e) if getattr(getattr(n, "op", None), "name", "") == "add")


def test_excerpt_marks_let_binders_and_functions():
    a = var("a", (2,))
    v = Var("v")
    body = Let(v, call("exp", a), call("negative", v))
    f = Function((a,), body)
    let_text = excerpt(f, body, name="f")
    assert "-->   let %v = exp(%a);" in let_text
    fn_text = excerpt(f, f)
    assert fn_text.split("\n")[0] == "--> fn (%a: Tensor[(2), float32]) {"
    var_text = excerpt(f, a, name="f")
    assert "--> def @f(%a: Tensor[(2), float32]) {" in var_text
    assert var_text.split("\n")[1].index("^") == len("    def @f(")


def test_type_error_inside_closure_and_branch():
    text = """def @main(%c: bool, %x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  let %f = fn (%y: Tensor[(2), float32]) -> Tensor[(2), float32] {
    if (%c) {
      %y
    } else {
      equal(%y, %y)
    }
  };
  %f(%x)
}"""
    with pytest.raises(RelayTypeError) as e:
        parse(text)
    msg = str(e.value)
    assert "if branches" in msg and "float32" in msg and "bool" in msg
    assert "-->     if (%c) {" in msg
