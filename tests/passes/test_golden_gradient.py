"""Golden tests: the Gradient pass in both modes, and its errors."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core import passes
from relay_core.passes.gradient import GradientError

from .golden import check, parse

T = "Tensor[(2), float32]"
CELL = f"({T}, Ref[{T}])"


def test_first_order_is_straight_line_code():
    check(
        passes.Gradient(mode="first_order"),
        f"def @main(%x: {T}, %y: {T}) {{ multiply(%x, tanh(%y)) }}",
        f"""
        def @main(%x: {T}, %y: {T}) {{
          let %t = tanh(%y);
          let %z = multiply(%x, %t);
          let %g: {T} = ones_like(%z);
          let %gt: {T} = multiply(%g, %x);
          (%z, (multiply(%g, %t), multiply(%gt, subtract(1f, multiply(%t, %t)))))
        }}
        """,
    )


def test_higher_order_uses_adjoint_cells_and_a_backprop_closure():
    check(
        passes.Gradient(mode="higher_order"),
        f"def @main(%x: {T}) {{ tanh(%x) }}",
        f"""
        def @main(%x: {T}) {{
          let %bp: Ref[fn () -> ()] = ref(fn () -> () {{ () }});
          let %x_ad: {CELL} = (%x, ref(zeros_like(%x)));
          let %result: {CELL} = @main_ad(%x_ad, %bp);
          let %_ = ref_write(%result.1, add(ref_read(%result.1), ones_like(%result.0)));
          let %__1 = ref_read(%bp)();
          (%result.0, (ref_read(%x_ad.1),))
        }}

        def @main_ad(%x: {CELL}, %bp: Ref[fn () -> ()]) -> {CELL} {{
          let %x_1: {CELL} = (
            let %v: {T} = %x.0;
            let %y: {T} = tanh(%v);
            let %r: {CELL} = (%y, ref(zeros_like(%y)));
            let %prev: fn () -> () = ref_read(%bp);
            let %_ = ref_write(%bp, fn () -> () {{
              let %g: {T} = ref_read(%r.1);
              let %__1 = ref_write(%x.1, add(ref_read(%x.1),
                                             multiply(%g, subtract(1f, multiply(%y, %y)))));
              %prev()
            }});
            %r
          );
          %x_1
        }}
        """,
    )


def test_gradient_values_of_both_modes():
    mod = parse(f"def @main(%x: {T}, %y: {T}) {{ multiply(%x, tanh(%y)) }}")
    x, y = np.array([1.0, 2.0], np.float32), np.array([0.5, -0.5], np.float32)
    for mode in ("first_order", "higher_order"):
        value, (dx, dy) = relay_core.evaluate(relay_core.gradient(mod, mode), x, y)
        np.testing.assert_allclose(value, x * np.tanh(y), rtol=1e-6)
        np.testing.assert_allclose(dx, np.tanh(y), rtol=1e-6)
        np.testing.assert_allclose(dy, x * (1 - np.tanh(y) ** 2), rtol=1e-6)


def test_tuple_outputs_are_seeded_with_ones_and_int_params_get_zeros():
    mod = parse(f"""
        def @main(%x: {T}, %n: int32) {{
          (multiply(%x, %x), add(%x, cast(%n, dtype="float32")), %n)
        }}""")
    x = np.array([1.0, 3.0], np.float32)
    for mode in ("first_order", "higher_order"):
        value, (dx, dn) = relay_core.evaluate(relay_core.gradient(mod, mode), x, np.int32(4))
        np.testing.assert_allclose(dx, 2 * x + 1)
        assert dn.dtype == np.int32 and dn == 0


def test_closures_refs_and_adts_differentiate():
    # A closure stored in a ref, called through a list built with the prelude's Cons.
    mod = parse(f"""
        def @main(%x: {T}) {{
          let %k = ref(fn (%a: {T}) -> {T} {{ multiply(%a, %x) }});
          let %l = Cons(%x, Cons(sin(%x), Nil));
          match (%l) {{
            Cons(%h, Cons(%s, _)) => add(ref_read(%k)(%h), %s),
            _ => %x,
          }}
        }}""")
    x = np.array([0.3, -1.2], np.float32)
    value, (dx,) = relay_core.evaluate(relay_core.gradient(mod), x)
    np.testing.assert_allclose(value, x * x + np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(dx, 2 * x + np.cos(x), rtol=1e-6)


def test_errors_are_clear():
    control = parse(f"def @main(%c: bool, %x: {T}) {{ if (%c) {{ %x }} else {{ exp(%x) }} }}")
    with pytest.raises(GradientError, match="use mode='higher_order'"):
        relay_core.gradient(control, "first_order")
    returns_fn = parse(f"def @main(%x: {T}) {{ fn (%y: {T}) {{ add(%x, %y) }} }}")
    with pytest.raises(GradientError, match="only tensors and tuples"):
        relay_core.gradient(returns_fn)
    with pytest.raises(ValueError, match="mode"):
        relay_core.gradient(control, "sideways")
