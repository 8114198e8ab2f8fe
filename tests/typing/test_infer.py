"""Type inference: ops, closures, recursion, polymorphism, ADTs, refs, errors."""

from __future__ import annotations

import pytest

import relay_core
from relay_core.errors import RelayTypeError
from relay_core.ir import (
    Any,
    Call,
    Clause,
    Constructor,
    Function,
    FuncType,
    GlobalTypeVar,
    GlobalVar,
    If,
    IRModule,
    Let,
    Match,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefType,
    RefWrite,
    ShapeVar,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TypeCall,
    TypeData,
    TypeVar,
    call,
    const,
    var,
)

F32 = "float32"


def typed(expr_or_mod):
    mod = expr_or_mod if isinstance(expr_or_mod, IRModule) else IRModule.from_expr(expr_or_mod)
    return relay_core.infer_type(mod)


def test_broadcast_and_result_types():
    x, y = var("x", (2, 3)), var("y", (3,))
    out = call("less", call("exp", x + y), x)
    typed(Function((x, y), out))
    assert out.checked_type == TensorType((2, 3), "bool")


def test_unannotated_params_inferred_from_use_in_call():
    a = var("a")  # no annotation: inferred from the call site below
    inner = Function((a,), call("negative", a))
    x = var("x", (4,))
    body = Call(inner, (x,))
    typed(Function((x,), body))
    assert body.checked_type == TensorType((4,), F32)
    assert a.checked_type == TensorType((4,), F32)


def test_closure_over_parameter_and_tuple_result():
    x = var("x", (2,))
    y = var("y", (2,))
    add_x = Function((y,), y + x)  # closes over %x
    f = var("f")
    body = Let(f, add_x, Tuple((Call(f, (x,)), Call(f, (x * x,)))))
    typed(Function((x,), body))
    assert body.checked_type == TupleType((TensorType((2,), F32),) * 2)


def test_recursive_global_infers_return_type():
    i, acc = var("i", (), "int32"), var("acc", (3,))
    loop = GlobalVar("loop")
    body = If(
        call("less", i, const(10, "int32")),
        Call(loop, (i + const(1, "int32"), acc * const(2.0))),
        acc,
    )
    x = var("x", (3,))
    mod = IRModule(
        {
            loop: Function((i, acc), body),
            GlobalVar("main"): Function((x,), Call(loop, (const(0, "int32"), x))),
        }
    )
    typed(mod)
    assert mod["loop"].checked_type == FuncType(
        (TensorType((), "int32"), TensorType((3,), F32)), TensorType((3,), F32)
    )


def test_any_and_shape_vars_propagate():
    x = var("x", ("n", 4))
    one = var("one", (1, 4))
    out = x + one
    typed(Function((x, one), out))
    assert out.checked_type == TensorType((ShapeVar("n"), 4), F32)
    y = var("y", (Any, 4))
    out = x + y  # Any may be 1 or n at run time, n may be 1: unknown
    typed(Function((x, y), out))
    assert out.checked_type == TensorType((Any, 4), F32)
    z = var("z", (Any, 1))
    out2 = z + y
    typed(Function((z, y), out2))
    assert out2.checked_type.shape == (Any, 4)


def test_polymorphic_adt_and_match():
    a = TypeVar("A")
    lst = GlobalTypeVar("MyList")
    cons = Constructor("MyCons", (a, TypeCall(lst, (a,))), lst, 0)
    nil = Constructor("MyNil", (), lst, 1)
    td = TypeData(lst, (a,), (cons, nil))
    # @head_or(%l: MyList[A], %d: A) -> A
    b = TypeVar("B")
    l = var("l", type_annotation=TypeCall(lst, (b,)))
    d = var("d", type_annotation=b)
    h = var("h")
    head_or = Function(
        (l, d),
        Match(
            l,
            (
                Clause(PatternConstructor(cons, (PatternVar(h), PatternWildcard())), h),
                Clause(PatternConstructor(nil), d),
            ),
        ),
        b,
        (b,),
    )
    x = var("x", (2,))
    items = Call(cons, (x, Call(nil, ())))
    main_body = Call(GlobalVar("head_or"), (items, x))
    k = var("k", (), "int32")
    ints = Call(cons, (k, Call(nil, ())))
    both = Tuple((main_body, Call(GlobalVar("head_or"), (ints, k))))
    mod = IRModule(
        {GlobalVar("head_or"): head_or, GlobalVar("main"): Function((x, k), both)},
        {lst: td},
    )
    typed(mod)
    assert both.checked_type == TupleType((TensorType((2,), F32), TensorType((), "int32")))
    assert items.checked_type == TypeCall(lst, (TensorType((2,), F32),))


def test_refs():
    x = var("x", (2,))
    r = var("r")
    body = Let(r, RefCreate(x), Let(var("_"), RefWrite(r, x + x), RefRead(r)))
    typed(Function((x,), body))
    assert body.checked_type == TensorType((2,), F32)
    assert r.checked_type == RefType(TensorType((2,), F32))


def test_ten_thousand_node_chain_default_recursion_limit():
    x = var("x", (4,))
    e = x
    for _ in range(10_000):
        e = call("negative", e)
    typed(Function((x,), e))
    assert e.checked_type == TensorType((4,), F32)


def test_deep_let_chain():
    x = var("x", (4,))
    vs = [var(f"v{i}") for i in range(10_000)]
    body = vs[-1]
    for i in range(len(vs) - 1, 0, -1):
        body = Let(vs[i], call("exp", vs[i - 1]), body)
    body = Let(vs[0], x, body)
    typed(Function((x,), body))
    assert body.checked_type == TensorType((4,), F32)


# -- errors -------------------------------------------------------------------------------------


def test_error_names_op_and_argument_types():
    x, y = var("x", (2, 3)), var("y", (4,))
    with pytest.raises(RelayTypeError) as e:
        typed(Function((x, y), call("add", x, y)))
    msg = str(e.value)
    assert "add" in msg and "Tensor[(2, 3), float32]" in msg and "Tensor[(4), float32]" in msg
    assert "broadcast" in msg


def test_error_dtype_mismatch():
    x, y = var("x", (2,)), var("y", (2,), "int32")
    with pytest.raises(RelayTypeError, match="one dtype"):
        typed(Function((x, y), call("multiply", x, y)))


def test_error_if_branches_differ():
    c, x, y = var("c", (), "bool"), var("x", (2,)), var("y", (3,))
    with pytest.raises(RelayTypeError, match="if branches"):
        typed(Function((c, x, y), If(c, x, y)))


def test_error_if_condition_not_bool():
    c, x = var("c", (), "float32"), var("x", (2,))
    with pytest.raises(RelayTypeError, match="bool scalar"):
        typed(Function((c, x), If(c, x, x)))


def test_error_wrong_arity_and_tuple_index():
    x = var("x", (2,))
    with pytest.raises(RelayTypeError, match="takes 2 inputs"):
        typed(Function((x,), Call(call("add", x, x).op, (x,))))
    with pytest.raises(RelayTypeError, match="out of range"):
        typed(Function((x,), TupleGetItem(Tuple((x, x)), 2)))


def test_error_unknown_op_suggests():
    with pytest.raises(relay_core.OpTypeError, match="did you mean"):
        call("nagative", var("x", (1,)))


def test_error_uninferable_param():
    a = var("a")
    with pytest.raises(RelayTypeError, match="annotate|add a type annotation"):
        typed(Function((a,), call("exp", a)))
