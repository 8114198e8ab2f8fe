"""Golden tests: LambdaLift and Inline."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core import passes

from .golden import check, parse

X = np.array([0.5, -1.5], np.float32)


def test_lambda_lift_direct_recursive_and_escaping_closures():
    out = check(
        passes.LambdaLift(),
        """
        def @main(%x: Tensor[(2), float32]) {
          let %f = fn (%y: Tensor[(2), float32]) { multiply(%y, %x) };
          let %g = fn (%z: Tensor[(2), float32]) { add(%z, %x) };
          let %loop = fn (%i: int32, %h: Tensor[(2), float32]) -> Tensor[(2), float32] {
            if (less(%i, 3)) { %loop(add(%i, 1), %f(%h)) } else { %h }
          };
          (%loop(0, %x), %g, %g(%x))
        }
        """,
        """
        def @main(%x: Tensor[(2), float32]) {
          %0 = @main_g(%x);
          (@main_loop(%x, 0, %x), %0, %0(%x))
        }
        def @main_f(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) -> Tensor[(2), float32] {
          multiply(%y, %x)
        }
        def @main_g(%x: Tensor[(2), float32]) {
          fn (%z: Tensor[(2), float32], Closure=1) -> Tensor[(2), float32] { add(%z, %x) }
        }
        def @main_loop(%x: Tensor[(2), float32], %i: int32, %h: Tensor[(2), float32])
            -> Tensor[(2), float32] {
          if (less(%i, 3)) { @main_loop(%x, add(%i, 1), @main_f(%x, %h)) } else { %h }
        }
        """,
    )
    relay_core.infer_type(out)
    got = relay_core.evaluate(out, X)
    want = relay_core.evaluate(
        parse("""
        def @main(%x: Tensor[(2), float32]) {
          let %h = multiply(multiply(multiply(%x, %x), %x), %x);
          (%h, add(%x, %x))
        }"""),
        X,
    )
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[2], want[1], rtol=1e-6)
    np.testing.assert_allclose(relay_core.interp.Interpreter(out).apply(got[1], [X]), X + X)


def test_lambda_lift_is_idempotent():
    mod = passes.LambdaLift()(
        parse("""
        def @main(%x: Tensor[(2), float32]) {
          let %g = fn (%z: Tensor[(2), float32]) { add(%z, %x) };
          %g
        }""")
    )
    assert relay_core.structural_equal(passes.LambdaLift()(mod), mod)


def test_inline_marked_and_single_use_functions_not_recursive_ones():
    check(
        passes.Inline(),
        """
        def @double(%a: Tensor[(2), float32]) { add(%a, %a) }
        def @twice(%a: Tensor[(2), float32], Inline=1) { multiply(%a, 2f) }
        def @loop(%i: int32, %h: Tensor[(2), float32]) -> Tensor[(2), float32] {
          if (less(%i, 3)) { @loop(add(%i, 1), @twice(%h)) } else { %h }
        }
        def @main(%x: Tensor[(2), float32]) { @loop(0, @double(%x)) }
        """,
        """
        def @loop(%i: int32, %h: Tensor[(2), float32]) -> Tensor[(2), float32] {
          if (less(%i, 3)) {
            @loop(add(%i, 1), let %a: Tensor[(2), float32] = %h; multiply(%a, 2f))
          } else { %h }
        }
        def @main(%x: Tensor[(2), float32]) {
          @loop(0, let %b: Tensor[(2), float32] = %x; add(%b, %b))
        }
        """,
        inputs=[X],
    )


@pytest.mark.parametrize("called_once", [True, False])
def test_inline_leaves_functions_used_twice_or_as_values(called_once):
    src = """
        def @sq(%a: Tensor[(2), float32]) { multiply(%a, %a) }
        def @once(%a: Tensor[(2), float32]) { negative(%a) }
        def @main(%x: Tensor[(2), float32]) { (@sq(%x), @sq(@once(%x)), @once) }
        """
    check(passes.Inline(called_once=called_once), src, src)
