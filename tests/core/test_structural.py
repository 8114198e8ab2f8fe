"""Structural equality and hashing modulo alpha-renaming."""

from __future__ import annotations

import numpy as np

from relay_core import parse, structural_equal, structural_hash
from relay_core.ir import Call, Function, FuncType, Let, TensorType, Tuple, TypeVar, const, var


def test_alpha_equivalent_functions_equal_and_hash_alike():
    x, y = var("x", (2,)), var("y", (2,))
    f = Function((x,), x * x + x)
    g = Function((y,), y * y + y)
    assert structural_equal(f, g)
    assert structural_hash(f) == structural_hash(g)


def test_different_programs_differ():
    x = var("x", (2,))
    assert not structural_equal(Function((x,), x + x), Function((x,), x * x))
    assert structural_hash(Function((x,), x + x)) != structural_hash(Function((x,), x * x))


def test_free_vars_by_identity_unless_mapped():
    a, b = var("a", (1,)), var("b", (1,))
    assert not structural_equal(a + a, b + b)
    assert structural_equal(a + a, b + b, map_free_vars=True)


def test_shared_closure_equals_its_unfolding_and_hashes_alike():
    x = var("x", (2,))
    p1 = var("p")
    shared = Function((p1,), p1 + x)
    f1 = Function((x,), Tuple((Call(shared, (x,)), Call(shared, (x,)))))
    q1, q2 = var("q"), var("r")
    f2 = Function(
        (x,), Tuple((Call(Function((q1,), q1 + x), (x,)), Call(Function((q2,), q2 + x), (x,))))
    )
    assert structural_equal(f1, f2)
    assert structural_hash(f1) == structural_hash(f2)


def test_constants_compare_by_value_and_bits():
    assert structural_equal(
        const(np.array([1.0, np.nan], "float32")), const(np.array([1.0, np.nan], "float32"))
    )
    assert not structural_equal(const(np.float32(0.0)), const(np.float32(-0.0)))
    assert not structural_equal(const([1, 2], "int32"), const([1, 2], "int64"))


def test_let_binding_mapped():
    a, b = var("a"), var("b")
    x = var("x", (1,))
    assert structural_equal(Function((x,), Let(a, x, a + a)), Function((x,), Let(b, x, b + b)))


def test_type_params_alpha():
    A, B = TypeVar("A"), TypeVar("B")
    assert structural_equal(FuncType((A,), A, (A,)), FuncType((B,), B, (B,)))
    assert structural_hash(FuncType((A,), A, (A,))) == structural_hash(FuncType((B,), B, (B,)))
    assert not structural_equal(FuncType((A,), TensorType((1,)), (A,)), FuncType((B,), B, (B,)))


def test_module_hash_stable_across_parses():
    text = """
    def @main(%x: Tensor[(2), float32]) { %0 = add(%x, %x); multiply(%0, %x) }
    """
    assert structural_hash(parse(text)) == structural_hash(parse(text))
