"""TVM's dialect of the Relay text: its type names, literal rules and grammar (issue 18).

The programs are written here from TVM's documented grammar; each one is parsed, typechecked,
printed and read back (structurally equal) and, where it has a result, interpreted.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import relay_core
from relay_core import ParseError, RelayTypeError, parse
from relay_core.ir.structural import structural_equal
from tests.expected import ExpectedFailures


def _round_trip(mod):
    """astext -> parse gives the same text, and a module structurally equal to the one read
    from that text (the printer adds the inferred annotations: the first text may lack them)."""
    back = parse(mod.astext())
    assert back.astext() == mod.astext()
    assert structural_equal(parse(back.astext()), back)
    return back


def test_int_and_uint1_are_aliases():
    mod = parse("def @main(%x: int, %y: Tensor[(2), int], %b: uint1) { (add(%x, %y), %b) }")
    assert str(mod["main"].checked_type) == (
        "fn (int32, Tensor[(2), int32], bool) -> (Tensor[(2), int32], bool)"
    )
    _round_trip(mod)


def test_vector_dtypes_are_distinct_types_that_do_not_compute():
    mod = parse("def @main(%x: Tensor[(2), int8x4], %y: float16x4) { (%x, %y) }")
    t = mod["main"].checked_type
    assert [a.dtype for a in t.arg_types] == ["int8x4", "float16x4"]
    _round_trip(mod)
    with pytest.raises(RelayTypeError, match="float16x4"):
        parse("def @main(%x: Tensor[(2), float16x4]) { add(%x, %x) }")
    with pytest.raises(RelayTypeError):  # Tensor[(2), int8x4] is not Tensor[(2), int8]
        parse("def @main(%x: Tensor[(2), int8x4]) -> Tensor[(2), int8] { %x }")


@pytest.mark.parametrize(
    "text,dtype", [("65505f16", "float16"), ("3.40283e+38f32", "float32"), ("-1e39f", "float32")]
)
def test_overflowing_float_literals_are_refused(text, dtype):
    with pytest.raises(ParseError, match=re.escape(f"{text} overflows {dtype}")):
        parse(f"def @main() {{ {text} }}")


def test_largest_finite_literals_are_kept():
    mod = parse("def @main() { (65504f16, 3.4028235e+38f) }")
    c = mod["main"].body.fields
    assert c[0].data == np.finfo(np.float16).max and c[1].data == np.finfo(np.float32).max
    _round_trip(mod)


def test_comparisons_bind_tighter_than_equality():
    mod = parse("def @main(%a: int32, %b: int32, %c: bool) { %a < %b == %c }")
    body = mod["main"].body
    assert body.op.name == "equal" and body.args[0].op.name == "less"
    mod2 = parse("def @main(%a: int32, %b: int32, %c: bool) { %c != %a >= %b }")
    assert mod2["main"].body.op.name == "not_equal"
    assert mod2["main"].body.args[1].op.name == "greater_equal"


def test_match_arms_are_blocks_without_braces():
    text = """def @main(%l: List[int32]) -> int32 {
  match (%l) {
    Cons(%x, %r) => let %y = add(%x, 1); %0 = multiply(%y, 2); %0,
    Nil => 0,
  }
}"""
    mod = parse(text)
    _round_trip(mod)


def test_attributes_on_parameters_and_non_operator_calls_are_dropped():
    text = """def @f(%x: float32) { %x }
def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(2), float32],
          %b {virtual_device=VirtualDevice(device_type=1, virtual_device_id=0)}: float32) {
  add(%a, @f(%b, some_hint=1))
}"""
    mod = parse(text)
    plain = parse(
        "def @f(%x: float32) { %x }\n"
        "def @main(%a: Tensor[(2), float32], %b: float32) { add(%a, @f(%b)) }"
    )
    assert structural_equal(mod["main"], plain["main"], map_free_vars=True)


def test_slash_in_names_and_a_bare_global():
    mod = parse("def @f/g(%conv1/weight: int32) { %conv1/weight }\ndef @main() { @f/g }")
    assert str(mod["main"].checked_type) == "fn () -> fn (int32) -> int32"
    _round_trip(mod)


@pytest.mark.parametrize(
    "text",
    [
        "def @main(%a: int32) { (fn (%x: int32) { %x }, %x) }",
        "def @main(%a: int32) { let %y = { let %z = 1; %z }; %z }",
        "fn (%x: int32) { let %y = 1; %y }(1); %y",
    ],
)
def test_a_variable_used_outside_its_scope_is_refused(text):
    with pytest.raises(ParseError, match="outside the scope that binds it"):
        parse(text)


# -- TVM's operator signatures: tuple in, tuple out ---------------------------------------------

_BN = """def @main(%x: Tensor[(1, 2, 3), float32], %g: Tensor[(2), float32],
          %b: Tensor[(2), float32], %m: Tensor[(2), float32], %v: Tensor[(2), float32]) {
  %0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=1e-3f);
  %1 = %0.0;
  %2 = nn.dropout(%1, rate=0.25f);
  %3 = (%2.0, %x);
  %4 = concatenate(%3, axis=1);
  let %t = (%4, %4);
  %5 = stack(%t, axis=0);
  (%5, %0.1, %0.2, %2.1)
}"""


def _bn_inputs():
    rng = np.random.default_rng(0)
    x, g, b, m, v = (rng.standard_normal(s).astype("float32") for s in [(1, 2, 3)] + [(2,)] * 4)
    return x, g, b, m, np.abs(v) + 0.5


def _bn_expected(x, g, b, m, v):
    c = (-1, 1)
    y = (x - m.reshape(c)) / np.sqrt(v.reshape(c) + 1e-3) * g.reshape(c) + b.reshape(c)
    cat = np.concatenate([y, x], axis=1)
    return [np.stack([cat, cat]), m, v, np.ones_like(y)]


def test_tuple_in_and_tuple_out_ops_mean_what_they_mean_in_tvm():
    mod = parse(_BN)
    out = mod["main"].checked_type.ret_type
    assert str(out) == (
        "(Tensor[(2, 1, 4, 3), float32], Tensor[(2), float32], Tensor[(2), float32], "
        "Tensor[(1, 2, 3), float32])"
    )
    _round_trip(mod)
    # the op itself returns the tuple, as in TVM: the text prints it unchanged
    text = mod.astext()
    assert "nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.001f) /* ty=(Tensor[(1, 2, 3)" in text
    inputs = _bn_inputs()
    got = relay_core.evaluate(mod, *inputs)
    for g, w in zip(got, _bn_expected(*inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_tuple_typed_parameter_is_spread_into_a_tuple_in_op():
    mod = parse("def @main(%t: (Tensor[(2), float32], Tensor[(3), float32])) { concatenate(%t) }")
    assert str(mod["main"].checked_type.ret_type) == "Tensor[(5), float32]"
    a, b = np.arange(2, dtype="float32"), np.arange(3, dtype="float32")
    np.testing.assert_array_equal(relay_core.evaluate(mod, (a, b)), np.concatenate([a, b]))


def test_whole_batch_norm_tuple_is_the_normalized_value_and_the_moving_stats():
    mod = parse(
        "def @main(%x: Tensor[(2, 2), float32], %g: Tensor[(2), float32], "
        "%b: Tensor[(2), float32], %m: Tensor[(2), float32], %v: Tensor[(2), float32]) "
        "{ nn.batch_norm(%x, %g, %b, %m, %v) }"
    )
    t = mod["main"].checked_type.ret_type
    assert str(t) == "(Tensor[(2, 2), float32], Tensor[(2), float32], Tensor[(2), float32])"
    _round_trip(mod)


@pytest.mark.slow
def test_tuple_in_and_tuple_out_ops_compiled():
    mod = parse(_BN)
    inputs = _bn_inputs()
    got = relay_core.build(mod)(*inputs)
    for g, w in zip(got, _bn_expected(*inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


# -- the corpus: programs in TVM's dialect (tests/core/tvm_dialect/*.rly) ------------------------

_DIR = os.path.join(os.path.dirname(__file__), "tvm_dialect")
_EXPECTED = ExpectedFailures(os.path.join(_DIR, "expected_failures.txt"))
_RNG = np.random.default_rng(18)


def _f32(*shape):
    return _RNG.standard_normal(shape).astype("float32")


def _ops_case():
    x, g, b, m = _f32(1, 2, 3), _f32(2), _f32(2), _f32(2)
    v = np.abs(_f32(2)) + 0.5
    c = (-1, 1)
    y = (x - m.reshape(c)) / np.sqrt(v.reshape(c) + 1e-3) * g.reshape(c) + b.reshape(c)
    cat = np.concatenate([y, x], axis=1)
    want = (np.stack([cat, cat], axis=-1), m, np.meshgrid(g, m, indexing="ij")[1], (4 < 3) != True)  # noqa: E712
    return (x, g, b, m, v, np.int32(3), np.bool_(True)), want


def _list_nat_case():
    x, n = _f32(3), np.int32(5)
    return (x, n), (x + 1, 3, (n < 2) == False)  # noqa: E712


def _tree_case():
    a, b = _f32(2), _f32(2)
    return (a, b), (a + b + (-b + b), 4)


def _lowered_case():
    x, s = _f32(2, 8, 3, 3), np.array([8, 18], "int64")
    y = 2 * x
    nchw4c = y.reshape(2, 2, 4, 3, 3).transpose(0, 1, 3, 4, 2)
    flat = y.transpose(0, 2, 3, 1).reshape(2, -1).reshape(8, 18)
    return (x, s), (flat, nchw4c, np.zeros((8, 18), "float32"))


def _memory_case():
    x = _f32(2, 3)
    return (np.zeros(24, np.uint8), x), (x, np.zeros((2, 3), "float32"), ())


CORPUS = {
    "memory": _memory_case,
    "ops": _ops_case,
    "list_nat": _list_nat_case,
    "tree": _tree_case,
    "lowered": _lowered_case,
}


def _close(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def _load(name):
    with open(os.path.join(_DIR, name + ".rly")) as f:
        return parse(f.read(), name + ".rly")


def test_corpus_lists_every_file():
    assert sorted(CORPUS) == sorted(n[:-4] for n in os.listdir(_DIR) if n.endswith(".rly"))


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_parses_types_round_trips_and_runs(name):
    with _EXPECTED.check(f"{name}:interp"):
        mod = _load(name)
        _round_trip(mod)
        inputs, want = CORPUS[name]()
        _close(relay_core.evaluate(mod, *inputs), want)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_compiled(name):
    with _EXPECTED.check(f"{name}:compiled"):
        mod = _load(name)
        inputs, want = CORPUS[name]()
        _close(tuple(relay_core.build(mod)(*inputs)), want)


# -- typing: polymorphic globals without a return annotation, let-polymorphism -------------------


def test_polymorphic_global_return_type_is_inferred():
    mod = parse(
        "def @twice[A](%f: fn(A) -> A) { fn (%x: A) { %f(%f(%x)) } }\n"
        "def @main(%x: int32, %y: float32) {\n"
        "  (@twice(fn (%a: int32) { add(%a, 1) })(%x),"
        "   @twice(fn (%b: float32) { multiply(%b, 2f) })(%y))\n"
        "}"
    )
    assert str(mod["twice"].checked_type) == "fn [A](fn (A) -> A) -> fn (A) -> A"
    _round_trip(mod)
    x, y = np.int32(3), np.float32(2.5)
    got = relay_core.evaluate(mod, x, y)
    assert got[0] == x + 2 and got[1] == y * 4


def test_let_bound_polymorphic_function_is_used_at_two_types():
    mod = parse(
        "def @main(%x: int32, %y: Tensor[(2), float32]) {\n"
        "  let %id = fn [A](%v: A) -> A { %v };\n"
        "  (%id(%x), %id(%y))\n"
        "}"
    )
    assert str(mod["main"].checked_type.ret_type) == "(int32, Tensor[(2), float32])"
    y = np.arange(2, dtype="float32")
    got = relay_core.evaluate(mod, np.int32(7), y)
    assert got[0] == 7 and np.array_equal(got[1], y)


def test_polymorphic_functions_that_cannot_be_inferred_say_so():
    with pytest.raises(RelayTypeError, match="mutually recursive polymorphic functions"):
        parse(
            "def @f[A](%x: A) { @g(%x) }\ndef @g[A](%x: A) { @f(%x) }\n"
            "def @main(%x: int32) { @f(%x) }"
        )
    with pytest.raises(RelayTypeError, match="polymorphic function @loop"):
        parse("def @loop[A](%x: A) { @loop(%x) }\ndef @main(%x: int32) { @loop(%x) }")


def test_placement_ops_pass_any_value_and_let_the_types_flow():
    text = """def @main(%x: bool, %y: Tensor[(2), float32], %z: Tensor[(2), float32]) {
  let %f = fn (%a {virtual_device=meta[VirtualDevice][0]}) { add(%a, %y) };
  let %g = fn (%b) { subtract(%b, %y) };
  let %h = on_device(if (%x) { %f } else { %g }, virtual_device=meta[VirtualDevice][0]);
  device_copy((%h(%z), %z))
}"""
    mod = parse(text)
    assert str(mod["main"].checked_type.ret_type) == "(Tensor[(2), float32], Tensor[(2), float32])"
    y, z = np.arange(2, dtype="float32"), np.ones(2, "float32")
    got = relay_core.evaluate(mod, np.bool_(False), y, z)
    np.testing.assert_array_equal(got[0], z - y)
    _round_trip(mod)


_PAD = """def @main(%x: Tensor[(2, 3), float16]) {
  nn.pad(%x, 1, pad_width=[[0, 1], [2, 0]])
}"""


def test_pad_value_of_another_dtype_is_cast_as_in_tvm():
    mod = parse(_PAD)
    assert str(mod["main"].checked_type.ret_type) == "Tensor[(3, 5), float16]"
    x = _f32(2, 3).astype("float16")
    want = np.pad(x, [(0, 1), (2, 0)], constant_values=np.float16(1))
    np.testing.assert_array_equal(relay_core.evaluate(mod, x), want)


@pytest.mark.slow
def test_pad_value_of_another_dtype_compiled():
    x = _f32(2, 3).astype("float16")
    want = np.pad(x, [(0, 1), (2, 0)], constant_values=np.float16(1))
    np.testing.assert_array_equal(relay_core.build(parse(_PAD))(x)[0], want)
