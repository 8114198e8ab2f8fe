"""The prelude (List, Option, map/fold/...): it typechecks, and its functions compute what the
same operations on Python lists compute (run by the reference interpreter)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_core import EvalError, parse, structural_equal
from relay_core.interp import ConstructorValue, evaluate, to_list
from relay_core.ir import Call, Constructor, GlobalTypeVar, GlobalVar, IRModule
from relay_core.ir.prelude import prelude_module
from relay_core.ir.text_format import format_scalar

F = np.float32
floats = st.floats(-100, 100, width=32)
lists = st.lists(floats, max_size=6)


def lit(xs) -> str:
    """A float32 list literal: Cons(1f, Cons(2f, Nil)); an empty one needs its type."""
    s = "Nil" if xs else "(let %nil: List[float32] = Nil; %nil)"
    for v in reversed(xs):
        s = f"Cons({format_scalar(np.asarray(v, 'float32'))}, {s})"
    return s


def run(body: str, ret: str = ""):
    """Evaluate `body` as the body of a @main without parameters."""
    arrow = f" -> {ret}" if ret else ""
    return evaluate(parse(f"def @main(){arrow} {{ {body} }}"))


def values(v: ConstructorValue) -> list[float]:
    return [float(x) for x in to_list(v)]


def test_prelude_typechecks_with_polymorphic_signatures():
    p = prelude_module()
    sigs = {gv.name_hint: str(gv.checked_type) for gv in p.functions}
    assert sigs["map"] == "fn [A, B](fn (A) -> B, List[A]) -> List[B]"
    assert sigs["foldl"] == "fn [A, B](fn (A, B) -> A, A, List[B]) -> A"
    assert sigs["foldr"] == "fn [A, B](fn (A, B) -> B, B, List[A]) -> B"
    assert sigs["nth"] == "fn [A](List[A], int32) -> A"
    assert sigs["length"] == "fn [A](List[A]) -> int32"
    assert sigs["concat"] == "fn [A](List[A], List[A]) -> List[A]"
    assert {"hd", "tl", "rev", "update"} <= set(sigs)
    assert [c.name for c in p.get_type("List").constructors] == ["Cons", "Nil"]
    assert [c.name for c in p.get_type("Option").constructors] == ["Some", "None"]


@settings(max_examples=40, deadline=None)
@given(lists, lists)
def test_list_functions_match_python(xs, ys):
    double = "fn (%x: float32) -> float32 { multiply(%x, 2f) }"
    sub = "fn (%a: float32, %b: float32) -> float32 { subtract(%a, %b) }"
    assert values(run(f"@map({double}, {lit(xs)})")) == [float(F(x) * F(2)) for x in xs]
    acc = F(0.5)
    for x in xs:
        acc = F(acc - F(x))
    assert float(run(f"@foldl({sub}, 0.5f, {lit(xs)})")) == float(acc)
    acc = F(0.5)
    for x in reversed(xs):
        acc = F(F(x) - acc)
    assert float(run(f"@foldr({sub}, 0.5f, {lit(xs)})")) == float(acc)
    assert int(run(f"@length({lit(xs)})")) == len(xs)
    assert values(run(f"@concat({lit(xs)}, {lit(ys)})")) == [float(F(v)) for v in xs + ys]
    assert values(run(f"@rev({lit(xs)})")) == [float(F(v)) for v in reversed(xs)]


@settings(max_examples=40, deadline=None)
@given(st.lists(floats, min_size=1, max_size=6), st.data())
def test_indexing_functions_match_python(xs, data):
    i = data.draw(st.integers(0, len(xs) - 1))
    v = data.draw(floats)
    assert float(run(f"@nth({lit(xs)}, {i})")) == float(F(xs[i]))
    want = [float(F(x)) for x in xs]
    want[i] = float(F(v))
    new = format_scalar(np.asarray(v, "float32"))
    assert values(run(f"@update({lit(xs)}, {i}, {new})")) == want
    assert float(run(f"@hd({lit(xs)})")) == float(F(xs[0]))
    assert values(run(f"@tl({lit(xs)})")) == [float(F(x)) for x in xs[1:]]


def test_partial_functions_fail_on_the_empty_list():
    with pytest.raises(EvalError):
        run("@hd(Nil)", "float32")


def test_option_and_none_as_constructor_and_as_attribute_value():
    text = """fn (%x: float32, Note=None) {
  let %o: Option[float32] = None;
  let %p = Some(%x);
  %0 = match (%o) { Some(%v) => %v, None => negative(%x) };
  %1 = match (%p) { Some(%v) => %v, None => negative(%x) };
  (%0, %1)
}"""
    mod = parse(text)
    main = mod["main"]
    assert main.attrs == {"Note": None}
    none = main.body.value
    assert isinstance(none, Call) and isinstance(none.op, Constructor) and none.op.name == "None"
    a, b = evaluate(mod, F(3))
    assert float(a) == -3 and float(b) == 3
    assert parse(mod.astext()).astext() == mod.astext()


def test_parser_adds_only_the_prelude_items_used():
    mod = parse("fn (%x: float32) { @rev(Cons(%x, Nil)) }")
    assert {gv.name_hint for gv in mod.functions} == {"main", "rev", "foldl"}
    assert set(mod.type_definitions) == {GlobalTypeVar("List")}
    assert values(evaluate(mod, F(2))) == [2.0]
    mod = parse("fn (%x: Option[float32]) { %x }")
    assert set(mod.type_definitions) == {GlobalTypeVar("Option")} and len(mod.functions) == 1


def test_prelude_module_returns_independent_copies():
    a = prelude_module()
    a.add("extra", a["hd"])
    del a.functions[GlobalVar("map")]
    b = prelude_module()
    assert "extra" not in b and "map" in b
    assert structural_equal(b, prelude_module())


def test_import_prelude_keeps_existing_definitions():
    mine = parse("def @map(%x: float32) -> float32 { %x }", typecheck=False)["map"]
    mod = IRModule({GlobalVar("map"): mine})
    mod.import_prelude()
    assert mod["map"] is mine
    assert {"foldl", "foldr", "nth", "length", "concat"} <= {g.name_hint for g in mod.functions}
    assert set(mod.type_definitions) == {GlobalTypeVar("List"), GlobalTypeVar("Option")}


def test_user_defined_adt_next_to_the_prelude():
    text = """
def @sum(%t: Tree[float32]) -> float32 {
  match (%t) {
    Leaf(%v) => %v,
    Node(%l, %r) => add(@sum(%l), @sum(%r)),
  }
}

type Tree[A] {
  Leaf(A),
  Node(Tree[A], Tree[A]),
}

def @main(%x: float32) -> (float32, int32) {
  %0 = Node(Leaf(%x), Node(Leaf(2f), Leaf(3f)));
  (@sum(%0), @length(Cons(%0, Nil)))
}
"""
    mod = parse(text)
    # the type defined after its first use; the prelude's List and @length come along
    assert {g.name for g in mod.type_definitions} == {"Tree", "List"}
    total, n = evaluate(mod, F(1.5))
    assert float(total) == 1.5 + 2 + 3 and int(n) == 1
    out = mod.astext()
    assert out.index("type Tree") < out.index("def @sum")
    assert parse(out).astext() == out
