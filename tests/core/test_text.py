"""The Relay text format: printer and parser round trips, layout, literals, deep programs."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import relay_core
from relay_core import infer_type, parse, structural_equal
from relay_core.interp import evaluate
from relay_core.ir import (
    Any,
    Call,
    Constant,
    Function,
    FuncType,
    If,
    IncompleteType,
    IRModule,
    Let,
    RefType,
    ShapeVar,
    TensorType,
    Tuple,
    TupleType,
    TypeVar,
    Var,
    call,
    const,
    var,
)
from relay_core.ir.parser import parse_type
from relay_core.ir.prelude import prelude_module
from relay_core.ops import all_ops

from .relay_gen import TEST_OP, programs, register_test_op, unregister_test_op

F32 = "float32"
HEADER = '#[version = "0.0.5"]\n'
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module", autouse=True)
def _test_op():
    register_test_op()
    yield
    unregister_test_op()


def round_trip(mod: IRModule, typecheck: bool) -> tuple[str, IRModule]:
    """print -> parse -> print is the identity and the parsed module equals the original."""
    if typecheck:
        infer_type(mod)
    text = mod.astext()
    back = parse(text, typecheck=typecheck)
    assert back.astext() == text
    assert structural_equal(back, mod), text
    return text, back


# -- round trips of random programs -----------------------------------------------------------


@SETTINGS
@given(programs())
def test_random_programs_round_trip(mod):
    round_trip(mod, typecheck=False)


@SETTINGS
@given(programs())
def test_random_typed_programs_round_trip(mod):
    infer_type(mod)
    text, back = round_trip(mod, typecheck=True)
    if isinstance(mod["main"].body, Call) and mod["main"].body.args:
        assert "/* ty=" in text
    assert back["main"].checked_type == mod["main"].checked_type


# -- layout -----------------------------------------------------------------------------------


def test_graph_form_binds_each_node_once_and_keeps_sharing():
    x = var("x", (2,))
    a = call("add", x, x)
    b = call("multiply", a, a)
    mod = IRModule.from_expr(Function((x,), Tuple((b, a))))
    text = mod.astext()
    assert text == HEADER + (
        "def @main(%x: Tensor[(2), float32]) {\n"
        "  %0 = add(%x, %x);\n"
        "  %1 = multiply(%0, %0);\n"
        "  (%1, %0)\n"
        "}"
    )
    body = parse(text)["main"].body
    mul, add_ = body.fields
    assert mul.args[0] is mul.args[1] is add_  # one node, as in the original DAG


def test_node_used_in_a_branch_and_after_is_printed_in_both_scopes():
    x, c = var("x", (2,)), var("c", (), "bool")
    a = call("exp", x)
    f = Function((c, x), Tuple((If(c, a, x), a)))
    text = IRModule.from_expr(f).astext()
    assert text.count("exp(%x)") == 2
    assert "if (%c) {\n    exp(%x)\n  } else {\n    %x\n  };" in text
    mod = parse(text)
    xs = np.array([0.5, -1.0], "float32")
    for cond in (True, False):
        got = evaluate(mod, np.array(cond), xs)
        want = np.exp(xs) if cond else xs
        np.testing.assert_allclose(got[0], want, rtol=1e-6)
        np.testing.assert_allclose(got[1], np.exp(xs), rtol=1e-6)


def test_let_if_closure_match_ref_layout():
    text = """#[version = "0.0.5"]
def @main(%x: float32, %c: bool) -> float32 {
  let %f = fn (%y: float32, Primitive=1) -> float32 {
    %0 = multiply(%y, %x);
    add(%0, 1f)
  };
  let %r = ref(%x);
  %1 = ref_read(%r);
  %2 = %f(%1);
  let %_ = ref_write(%r, %2);
  if (%c) {
    %3 = Cons(%x, Nil);
    %4 = match (%3) {
      Cons(%h, _) => {
        %h
      },
      Nil => {
        0f
      },
    };
    %5 = (%4,);
    %5.0
  } else {
    ref_read(%r)
  }
}"""
    mod = parse(text, typecheck=False)
    printed = mod.astext()  # the prelude's List comes first: the text uses Cons and Nil
    assert printed.startswith(HEADER + "type List[A]")
    assert printed.endswith(text[len(HEADER) :])
    assert mod["main"].body.value.attrs == {"Primitive": 1}
    got = evaluate(parse(text), np.float32(3), np.array(False))
    assert got == np.float32(3 * 3 + 1)


def test_standalone_expression_and_free_vars():
    x = var("x", (2,))
    e = call("add", x, const(1.0))
    assert str(e) == "free_var %x: Tensor[(2), float32];\nadd(%x, 1f)"
    assert str(x) == "%x"
    assert str(TensorType((2,), F32)) == "Tensor[(2), float32]"
    mod = parse(str(e))
    assert [p.name_hint for p in mod["main"].params] == ["x"]
    np.testing.assert_allclose(evaluate(mod, np.ones(2, F32)), [2, 2])
    # A text with no def is the body of @main; a function literal is @main itself.
    f = parse("fn (%a: float32) -> float32 { negative(%a) }")["main"]
    assert [p.name_hint for p in f.params] == ["a"]
    assert parse("negative(%y)", typecheck=False)["main"].params[0].name_hint == "y"


# -- literals ---------------------------------------------------------------------------------


def test_scalar_literals_per_dtype():
    vals = [
        (1.0, "float32", "1f"),
        (0.1, "float32", "0.1f"),
        (-2.5, "float64", "-2.5f64"),
        (0.1, "float16", "0.1f16"),
        (7, "int32", "7"),
        (-7, "int64", "-7i64"),
        (-3, "int8", "-3i8"),
        (200, "uint8", "200u8"),
        (True, "bool", "True"),
        (False, "bool", "False"),
    ]
    consts = [Constant(np.asarray(v, dtype=d)) for v, d, _ in vals]
    mod = IRModule.from_expr(Function((), Tuple(tuple(consts))))
    text = mod.astext()
    assert "(" + ", ".join(s for _, _, s in vals) + ")" in text
    assert "#[metadata]" not in text
    back = parse(text)["main"].body.fields
    for c, b in zip(consts, back):
        assert b.data.dtype == c.data.dtype and b.data.tobytes() == c.data.tobytes()


@pytest.mark.parametrize("bits", [0x3DCCCCCD, 0x00000001, 0x7F7FFFFF, 0x80000000, 0x3F800001])
def test_float32_literals_read_back_bit_exact(bits):
    c = Constant(np.array(bits, dtype=np.uint32).view(np.float32).reshape(()))
    text = IRModule.from_expr(Function((), c)).astext()
    assert "meta[" not in text
    assert parse(text)["main"].body.data.tobytes() == c.data.tobytes()


def test_unsuffixed_literals_follow_tvm():
    body = parse("(1.5, 7, 2147483648)")["main"].body
    assert [f.data.dtype.name for f in body.fields] == ["float32", "int32", "int64"]


def test_non_finite_and_exotic_scalars_and_tensors_go_to_metadata():
    import ml_dtypes

    w = Constant(np.arange(6, dtype="float32").reshape(2, 3))
    cs = (
        const(float("nan")),
        const(float("-inf")),
        Constant(np.asarray(1.5, ml_dtypes.bfloat16)),
        w,
        w,
        Constant(np.array(["a", 'b"c'], dtype=object)),
        Constant(np.zeros((0, 3), "int64")),
    )
    mod = IRModule.from_expr(Function((), Tuple(cs)))
    text = mod.astext()
    assert "meta[Constant][3], meta[Constant][3]" in text  # one entry for a shared constant
    assert text.count('"dtype"') == 6
    _, back = round_trip(mod, typecheck=False)
    f = back["main"].body.fields
    assert f[3] is f[4]
    assert math.isnan(float(f[0].data)) and float(f[1].data) == -math.inf
    # TVM spells the kind relay.Constant.
    tvm_text = text.replace("meta[Constant]", "meta[relay.Constant]")
    assert structural_equal(parse(tvm_text, typecheck=False), mod)


# Printed by TVM 0.8 (its node-graph metadata and NDArray serialisation).
TVM_METADATA_TEXT = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 3), float32]) {
  meta[relay.Constant][0]
}

#[metadata]
{
  "root": 1, 
  "nodes": [
    {
      "type_key": ""
    }, 
    {
      "type_key": "Map", 
      "keys": [
        "relay.Constant"
      ], 
      "data": [2]
    }, 
    {
      "type_key": "Array", 
      "data": [3]
    }, 
    {
      "type_key": "relay.Constant", 
      "attrs": {
        "_checked_type_": "0", 
        "data": "0", 
        "span": "0"
      }
    }
  ], 
  "b64ndarrays": [
    "P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAgAAAAIgAQACAAAAAAAAAAMAAAAAAAAAGAAAAAAAAAAAAIA/AAAAQAAAQEAAAIBAAACgQAAAwEA="
  ], 
  "attrs": {"tvm_version": "0.8.0"}
}"""  # noqa: W291


def test_reads_tvm_metadata_section():
    c = parse(TVM_METADATA_TEXT)["main"].body
    np.testing.assert_array_equal(c.data, np.arange(1, 7, dtype=F32).reshape(2, 3))


def test_show_meta_data_false_prints_a_note():
    c = Constant(np.ones((2, 2), F32))
    mod = IRModule.from_expr(Function((), c))
    text = mod.astext(show_meta_data=False)
    assert "#[metadata]" not in text and "show_meta_data=True" in text
    with pytest.raises(relay_core.ParseError, match="show_meta_data=False"):
        parse(text)


# -- attributes -------------------------------------------------------------------------------


def test_op_attrs_print_non_defaults_and_read_back_exactly():
    x = var("x", (3,))
    e = call(
        TEST_OP,
        x,
        axes=(2, 3),
        alpha=0.1,
        layout='N"C\n',
        flag=True,
        units=4,
        nested=((0, 1), ()),
        anything=1,
    )
    text = IRModule.from_expr(Function((x,), e)).astext()
    assert (
        'test.attrs(%x, axes=[2, 3], alpha=0.1f, layout="N\\"C\\n", flag=True, units=4, '
        "nested=[[0, 1], []], anything=1)"
    ) in text
    _, back = round_trip(IRModule.from_expr(Function((x,), e, x.type_annotation)), True)
    assert back["main"].body.attrs == e.attrs
    assert type(back["main"].body.attrs.anything) is int


@pytest.mark.parametrize("alpha", [1e-300, -math.inf, math.inf, 5e-324, 1 / 3, -0.0])
def test_float_attrs_are_bit_exact(alpha):
    x = var("x", (3,))
    e = call(TEST_OP, x, alpha=alpha, anything=2.0)
    back = parse(IRModule.from_expr(Function((x,), e)).astext())["main"].body.attrs
    assert math.copysign(1, back.alpha) == math.copysign(1, alpha) and back.alpha == alpha
    assert type(back.anything) is float and back.anything == 2.0


def test_nan_attr_and_tvm_spellings():
    x = var("x", (3,))
    e = call(TEST_OP, x, alpha=float("nan"))
    assert "alpha=nanf" in str(e)
    mod = parse("fn (%x: float32) { test.attrs(%x, alpha=1e-05f, axes=(1, 2), units=nullptr) }")
    a = mod["main"].body.attrs
    assert a.alpha == 1e-05 and a.axes == (1, 2) and a.units is None


def test_function_attrs_and_none():
    text = 'fn (%x: float32, Primitive=1, Compiler="c", Extra=None, L=[1, 2]) { %x }'
    f = parse(text)["main"]
    assert f.attrs == {"Primitive": 1, "Compiler": "c", "Extra": None, "L": (1, 2)}
    assert 'fn (%x: float32, Primitive=1, Compiler="c", Extra=None, L=[1, 2])' in str(f)


# -- types ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "t,text",
    [
        (TensorType((1, 4), F32), "Tensor[(1, 4), float32]"),
        (TensorType((), "int64"), "int64"),
        (TensorType((3,), "bool"), "Tensor[(3), bool]"),
        (TensorType((Any, 4), "int8"), "Tensor[(?, 4), int8]"),
        (TensorType((ShapeVar("n"), 4), F32), "Tensor[(n, 4), float32]"),
        (
            TupleType((TensorType((), F32), TensorType((2,), F32))),
            "(float32, Tensor[(2), float32])",
        ),
        (TupleType((TensorType((), F32),)), "(float32,)"),
        (TupleType(()), "()"),
        (FuncType((TensorType((), F32),), TensorType((), "bool")), "fn (float32) -> bool"),
        (RefType(TensorType((), F32)), "Ref[float32]"),
    ],
)
def test_type_text_round_trip(t, text):
    assert str(t) == text
    assert parse_type(text) == t


def test_polymorphic_adt_and_incomplete_types():
    t = parse_type("fn [A](A, List[A]) -> List[A]")
    assert str(t) == "fn [A](A, List[A]) -> List[A]"
    assert isinstance(t.type_params[0], TypeVar) and t.arg_types[0] is t.type_params[0]
    assert isinstance(parse_type("_"), IncompleteType) and str(IncompleteType()) == "_"
    assert parse_type("ref(float32)") == RefType(TensorType((), F32))  # TVM's spelling
    assert parse_type("(float32)") == TupleType((TensorType((), F32),))  # as TVM: a 1-tuple


# -- names ------------------------------------------------------------------------------------


def test_names_are_sanitized_unique_and_stable():
    hints = ["x", "x", "x_1", "0", "conv1.weight", "", "a b"]
    vs = [Var(h, TensorType((), F32)) for h in hints]
    body = vs[0]
    for v in vs[1:]:
        body = call("add", body, v)
    mod = IRModule.from_expr(Function(tuple(vs), body, TensorType((), F32)))
    text, back = round_trip(mod, typecheck=True)
    names = [p.name_hint for p in back["main"].params]
    assert names == ["x", "x_1", "x_1_1", "v0", "conv1_weight", "x_2", "a_b"]
    assert "%0 = add(%x, %x_1)" in text  # temporaries never collide with variable names


def test_rebinding_a_shared_closure_gets_fresh_names():
    x = var("x", ())
    f = Function((x,), call("negative", x), TensorType((), F32))
    c = var("c", (), "bool")
    y = var("y", ())
    body = If(c, Call(f, (y,)), Call(f, (y,)))
    text, _ = round_trip(IRModule.from_expr(Function((c, y), body)), typecheck=False)
    assert "%0 = fn (%x: float32)" in text and "%1 = fn (%x_1: float32)" in text


# -- typed programs ---------------------------------------------------------------------------


def test_typed_program_shows_types():
    text = "fn (%x: Tensor[(2), float32]) { let %f = fn (%y) { exp(%y) }; %f(%x) }"
    mod = parse(text)
    out = mod.astext()
    assert out == HEADER + (
        "def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n"
        "  let %f = fn (%y: Tensor[(2), float32]) -> Tensor[(2), float32] {\n"
        "    exp(%y) /* ty=Tensor[(2), float32] */\n"
        "  } /* ty=fn (Tensor[(2), float32]) -> Tensor[(2), float32] */;\n"
        "  %f(%x) /* ty=Tensor[(2), float32] */\n"
        "}"
    )
    assert parse(out).astext() == out


# -- the parser's syntax ----------------------------------------------------------------------


def test_tvm_printed_text_with_comments_and_dotted_names():
    text = """#[version = "0.0.5"]
// a comment
def @main(%input.1: Tensor[(1, 4), float32], %conv1.weight: Tensor[(1, 4), float32]) {
  /* a block /* nested */ comment */
  %0 = add(%input.1, %conv1.weight) /* ty=Tensor[(1, 4), float32] */;
  %1 = (%0, %input.1) /* ty=(Tensor[(1, 4), float32], Tensor[(1, 4), float32]) */;
  let %t = %1;
  multiply(%t.0, %1.1) /* ty=Tensor[(1, 4), float32] */
}
"""
    mod = parse(text)
    assert [p.name_hint for p in mod["main"].params] == ["input.1", "conv1.weight"]
    a, b = np.full((1, 4), 2, F32), np.full((1, 4), 3, F32)
    np.testing.assert_allclose(evaluate(mod, a, b), (a + b) * a)


def test_scoping_innermost_binder_and_block_local_graph_bindings():
    text = """def @main(%x: float32) {
  let %x = add(%x_outer, 1f);
  %x
}"""
    with pytest.raises(relay_core.ParseError, match="unknown variable %x_outer"):
        parse(text)
    mod = parse("fn (%x: float32) { let %y = fn (%x: float32) { negative(%x) }; %y(add(%x, 1f)) }")
    assert evaluate(mod, np.float32(2)) == -3
    leak = "fn (%c: bool, %x: float32) { %0 = if (%c) { %1 = exp(%x); %1 } else { %x }; %1 }"
    with pytest.raises(relay_core.ParseError, match="unknown graph binding %1"):
        parse(leak)


def test_globals_before_definition_mutual_recursion():
    text = """
def @main(%n: int32) -> bool { @even(%n) }
def @even(%n: int32) -> bool { if (equal(%n, 0)) { True } else { @odd(subtract(%n, 1)) } }
def @odd(%n: int32) -> bool { if (equal(%n, 0)) { False } else { @even(subtract(%n, 1)) } }
"""
    mod = parse(text)
    for n in (0, 1, 6, 7):
        assert bool(evaluate(mod, np.int32(n))) == (n % 2 == 0)
    round_trip(mod, typecheck=True)


def test_infix_sequencing_blocks_and_nullary_calls():
    mod = parse("fn (%x: float32) { %x * 2f + -%x - 1f < 3f * %x }")
    x = np.float32(1.5)
    assert bool(evaluate(mod, x)) == bool(x * 2 + -x - 1 < 3 * x)
    seq = "fn (%x: float32) { let %r = ref(%x); ref_write(%r, 5f); ref_read(%r) }"
    assert evaluate(parse(seq), np.float32(1)) == 5
    blocks = "fn (%x: float32) { %0 = (let %y = exp(%x); %y); { %1 = negative(%0); %1 } }"
    assert np.isclose(evaluate(parse(blocks), np.float32(0.5)), -np.exp(0.5))
    nil = parse("fn () { @length(Cons(1f, Nil())) }")
    assert evaluate(nil) == 1


# -- sample programs in TVM's style -----------------------------------------------------------

_CONV_OPS = {"nn.conv2d", "nn.bias_add", "nn.relu", "nn.max_pool2d", "nn.global_avg_pool2d",
             "reshape", "nn.dense", "nn.softmax"}  # fmt: skip


def test_tvm_conv_net_sample():
    assert _CONV_OPS <= set(all_ops())
    text = """#[version = "0.0.5"]
def @main(%data: Tensor[(1, 3, 32, 32), float32], %conv_weight: Tensor[(16, 3, 3, 3), float32],
          %conv_bias: Tensor[(16), float32], %fc_weight: Tensor[(10, 16), float32],
          %fc_bias: Tensor[(10), float32]) {
  %0 = nn.conv2d(%data, %conv_weight, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %conv_bias);
  %2 = nn.relu(%1);
  %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);
  %4 = nn.global_avg_pool2d(%3);
  %5 = reshape(%4, newshape=[1, 16]);
  %6 = nn.dense(%5, %fc_weight, units=10);
  %7 = nn.bias_add(%6, %fc_bias, axis=-1);
  nn.softmax(%7)
}
"""
    mod = parse(text)
    assert mod["main"].checked_type.ret_type == TensorType((1, 10), F32)
    out = mod.astext()
    assert "%2 = nn.relu(%1) /* ty=Tensor[(1, 16, 32, 32), float32] */;" in out
    assert parse(out).astext() == out


def test_tvm_recursive_loop_sample():
    text = """#[version = "0.0.5"]
def @loop(%i: int32, %n: int32, %x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  if (less(%i, %n)) {
    %0 = add(%i, 1);
    %1 = multiply(%x, 2f);
    @loop(%0, %n, %1)
  } else {
    %x
  }
}

def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  @loop(0, 5, %x)
}
"""
    mod = parse(text)
    x = np.array([1.5, -0.25], F32)
    np.testing.assert_array_equal(evaluate(mod, x), x * 32)
    round_trip(mod, typecheck=True)


def test_tvm_closure_over_param_and_tuple_result_sample():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
  %0 = fn (%z: Tensor[(3), float32]) -> Tensor[(3), float32] {
    multiply(%z, %x)
  };
  %1 = %0(%y);
  %2 = %0(%1);
  (%1, %2, %x)
}
"""
    mod = parse(text)
    x, y = np.array([1, 2, 3], F32), np.array([-1, 0.5, 4], F32)
    a, b, c = evaluate(mod, x, y)
    np.testing.assert_array_equal(a, y * x)
    np.testing.assert_array_equal(b, y * x * x)
    np.testing.assert_array_equal(c, x)
    out = mod.astext()
    assert out.startswith(
        HEADER + "def @main(%x: Tensor[(3), float32], %y: Tensor[(3), float32]) "
        "-> (Tensor[(3), float32], Tensor[(3), float32], Tensor[(3), float32])"
    )
    assert parse(out).astext() == out


# -- deep programs with the default recursion limit -------------------------------------------


@pytest.fixture
def default_recursion_limit():
    assert sys.getrecursionlimit() <= 1000, "something raised the recursion limit"


def test_ten_thousand_call_chain(default_recursion_limit):
    x = var("x", (4,))
    e = x
    for _ in range(10_000):
        e = call("negative", e)
    mod = IRModule.from_expr(Function((x,), e))
    text, back = round_trip(mod, typecheck=False)
    assert "%9998 = negative(%9997);" in text
    typed = parse(text)
    assert typed.astext() == parse(typed.astext()).astext()
    np.testing.assert_array_equal(evaluate(typed, np.ones(4, F32)), np.ones(4, F32))


def test_ten_thousand_nested_lets(default_recursion_limit):
    x = var("x", (4,))
    vs = [Var(f"v{i}") for i in range(10_000)]
    body = vs[-1]
    for i in range(len(vs) - 1, 0, -1):
        body = Let(vs[i], call("exp", vs[i - 1]), body)
    mod = IRModule.from_expr(Function((x,), Let(vs[0], x, body)))
    text, _ = round_trip(mod, typecheck=False)
    assert text.count("let %") == 10_000
    assert parse(text)["main"].checked_type.ret_type == TensorType((4,), F32)


def test_deeply_nested_text_parses(default_recursion_limit):
    calls = "fn (%x: float32) { " + "negative(" * 2000 + "%x" + ")" * 2000 + " }"
    assert evaluate(parse(calls), np.float32(2)) == 2
    e = "%x"
    for i in range(1000):  # let values nested 1000 deep: let %y1 = (let %y0 = (...)); ...
        e = f"let %y{i} = ({e}); negative(%y{i})"
    assert evaluate(parse("fn (%x: float32) { " + e + " }"), np.float32(2)) == 2
    parens = "fn (%x: float32) { " + "(" * 2000 + "%x" + ")" * 2000 + " }"
    assert evaluate(parse(parens), np.float32(2)) == 2
    sums = "fn (%x: int32) { " + " + ".join(["%x"] * 5000) + " }"
    assert evaluate(parse(sums), np.int32(1)) == 5000
    ifs = "fn (%x: float32) { " + "if (True) { " * 1000 + "%x" + " } else { %x }" * 1000 + " }"
    mod = parse(ifs)
    out = mod.astext()
    assert parse(out).astext() == out


def test_long_nested_let_values_print_and_parse(default_recursion_limit):
    x = var("x", ())
    e = x
    for i in range(2000):
        v = Var(f"v{i}")
        e = Let(v, e, call("negative", v))
    mod = IRModule.from_expr(Function((x,), e))
    text, back = round_trip(mod, typecheck=False)
    assert evaluate(parse(text), np.float32(1)) == 1


def test_prelude_module_is_printed_with_its_adts():
    mod = prelude_module()
    text = mod.astext()
    assert text.startswith(
        HEADER + "type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n\n"
        "type Option[A] {\n  Some(A),\n  None,\n}\n\n"
    )
    round_trip(mod, typecheck=True)
