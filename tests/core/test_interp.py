"""The reference interpreter: every expression kind, recursion depth, budgets, input checks."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.errors import EvalError, InputError, ResourceLimitError
from relay_core.interp import ConstructorValue, to_list
from relay_core.ir import (
    Call,
    Clause,
    Constructor,
    Function,
    GlobalTypeVar,
    GlobalVar,
    If,
    IRModule,
    Let,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    TypeCall,
    TypeData,
    TypeVar,
    call,
    const,
    var,
)


def run(fn, *args, **kw):
    mod = IRModule.from_expr(fn) if not isinstance(fn, IRModule) else fn
    relay_core.infer_type(mod)
    return relay_core.evaluate(mod, *args, **kw)


def test_dataflow_matches_numpy():
    rng = np.random.default_rng(0)
    x, y = var("x", (3, 4)), var("y", (4,))
    f = Function((x, y), call("tanh", x * y + x))
    a = rng.standard_normal((3, 4)).astype("float32")
    b = rng.standard_normal(4).astype("float32")
    np.testing.assert_allclose(run(f, a, b), np.tanh(a * b + a), rtol=1e-6)
    np.testing.assert_allclose(run(f, y=b, x=a), np.tanh(a * b + a), rtol=1e-6)


def test_shared_subgraph_evaluated_once(monkeypatch):
    x = var("x", (2,))
    shared = call("exp", x)
    f = Function((x,), Tuple((shared + shared, shared * shared)))
    from relay_core.ops import lookup

    op = lookup("exp")
    calls = []
    orig = op.ref
    monkeypatch.setattr(op, "ref", lambda xs, a: calls.append(1) or orig(xs, a))
    run(f, np.ones(2, "float32"))
    assert len(calls) == 1


def test_closures_capture_environment():
    x = var("x", (2,))
    y = var("y", (2,))
    f = var("f")
    body = Let(f, Function((y,), y * x), Tuple((Call(f, (x,)), Call(f, (x + x,)))))
    a = np.array([1.0, 2.0], "float32")
    r = run(Function((x,), body), a)
    np.testing.assert_allclose(r[0], a * a)
    np.testing.assert_allclose(r[1], 2 * a * a)


def test_recursive_let_closure():
    # let %fact = fn(%n) { if (n == 0) 1 else n * fact(n - 1) }
    n = var("n", (), "int64")
    fact = var("fact")
    one = const(1, "int64")
    body = If(call("equal", n, const(0, "int64")), one, n * Call(fact, (n - one,)))
    prog = Let(fact, Function((n,), body), Call(fact, (const(10, "int64"),)))
    assert int(run(Function((), prog))) == 3628800


def _loop_module(iters: int):
    i, acc = var("i", (), "int32"), var("acc", (2,))
    loop = GlobalVar("loop")
    body = If(
        call("less", i, const(iters, "int32")),
        Call(loop, (i + const(1, "int32"), acc + const(0.5))),
        acc,
    )
    x = var("x", (2,))
    return IRModule(
        {
            loop: Function((i, acc), body),
            GlobalVar("main"): Function((x,), Call(loop, (const(0, "int32"), x))),
        }
    )


def test_hundred_thousand_iteration_tail_recursion():
    out = run(_loop_module(100_000), np.zeros(2, "float32"))
    np.testing.assert_allclose(out, [50_000.0, 50_000.0])


def test_deep_non_tail_recursion():
    n = var("n", (), "int32")
    r = GlobalVar("sumto")
    f = Function(
        (n,),
        If(
            call("equal", n, const(0, "int32")),
            const(0, "int32"),
            n + Call(r, (n - const(1, "int32"),)),
        ),
    )
    mod = IRModule({r: f, GlobalVar("main"): Function((), Call(r, (const(20_000, "int32"),)))})
    assert int(run(mod)) == 20_000 * 20_001 // 2


def test_refs_are_mutable_cells():
    x = var("x", (), "float32")
    r = var("r")
    body = Let(
        r,
        RefCreate(x),
        Let(
            var("u"),
            RefWrite(r, RefRead(r) + const(1.0)),
            Let(var("u2"), RefWrite(r, RefRead(r) * const(3.0)), RefRead(r)),
        ),
    )
    assert float(run(Function((x,), body), np.float32(1))) == 6.0


def test_adt_construction_and_match():
    a = TypeVar("A")
    lst = GlobalTypeVar("L")
    cons = Constructor("C", (a, TypeCall(lst, (a,))), lst, 0)
    nil = Constructor("N", (), lst, 1)
    td = TypeData(lst, (a,), (cons, nil))
    # sum of a list of scalars via a recursive global with match
    l = var("l", type_annotation=TypeCall(lst, (relay_core.ir.TensorType((), "float32"),)))
    h, t = var("h"), var("t")
    s = GlobalVar("sum")
    body = Match(
        l,
        (
            Clause(PatternConstructor(cons, (PatternVar(h), PatternVar(t))), h + Call(s, (t,))),
            Clause(PatternConstructor(nil), const(0.0)),
        ),
    )
    x = var("x", (), "float32")
    items = Call(
        cons, (x, Call(cons, (x * const(2.0), Call(cons, (x * const(3.0), Call(nil, ()))))))
    )
    mod = IRModule(
        {
            s: Function((l,), body),
            GlobalVar("main"): Function((x,), Tuple((Call(s, (items,)), items))),
        },
        {lst: td},
    )
    total, value = run(mod, np.float32(2))
    assert float(total) == 12.0
    assert isinstance(value, ConstructorValue)
    assert [float(v) for v in to_list(value)] == [2.0, 4.0, 6.0]


def test_tuple_pattern_and_wildcard():
    x = var("x", (2,))
    p, q = var("p"), var("q")
    m = Match(
        Tuple((x, x + x)),
        (Clause(PatternTuple((PatternVar(p), PatternVar(q))), q - p), Clause(PatternWildcard(), x)),
    )
    np.testing.assert_allclose(run(Function((x,), m), np.ones(2, "float32")), [1, 1])


def test_incomplete_match_raises():
    lst = GlobalTypeVar("L2")
    a = TypeVar("A")
    cons = Constructor("C2", (a, TypeCall(lst, (a,))), lst, 0)
    nil = Constructor("N2", (), lst, 1)
    td = TypeData(lst, (a,), (cons, nil))
    x = var("x", (), "float32")
    data = Call(cons, (x, Call(nil, ())))
    m = Match(data, (Clause(PatternConstructor(nil), x),), complete=False)
    mod = IRModule({GlobalVar("main"): Function((x,), m)}, {lst: td})
    with pytest.raises(EvalError, match="no match clause"):
        run(mod, np.float32(1))


def test_ten_thousand_chain_evaluates():
    x = var("x", (3,))
    e = x
    for _ in range(10_000):
        e = call("negative", e)
    np.testing.assert_array_equal(run(Function((x,), e), np.ones(3, "float32")), np.ones(3))


def test_input_errors_are_clear():
    x = var("x", (2, 3))
    f = Function((x,), call("exp", x))
    with pytest.raises(InputError, match=r"shape \(3, 2\), expected \(2, 3\)"):
        run(f, np.ones((3, 2), "float32"))
    with pytest.raises(InputError, match="missing input 'x'"):
        run(f)
    with pytest.raises(InputError, match="unknown input"):
        run(f, y=np.ones((2, 3), "float32"))


def test_byte_budget_refuses_before_computing():
    x = var("x", (1000, 1000))
    f = Function((x,), call("exp", x))
    mod = IRModule.from_expr(f)
    relay_core.infer_type(mod)
    with pytest.raises(ResourceLimitError, match="budget"):
        relay_core.evaluate(mod, np.ones((1000, 1000), "float32"), max_bytes=1000)


def test_tuple_get_item_and_if():
    c = var("c", (), "bool")
    x = var("x", (2,))
    t = Tuple((x, x * x))
    f = Function((c, x), If(c, TupleGetItem(t, 0), TupleGetItem(t, 1)))
    a = np.array([3.0, 4.0], "float32")
    np.testing.assert_allclose(run(f, np.bool_(True), a), a)
    np.testing.assert_allclose(run(f, np.bool_(False), a), a * a)
