"""Golden tests: DeadCodeElimination, EliminateCommonSubexpr, ToANormalForm, ToGraphNormalForm."""

from __future__ import annotations

import numpy as np

from relay_core import passes

from .golden import check

X = np.array([0.5, -1.5], np.float32)


def test_dce_drops_unused_lets_and_cascades():
    check(
        passes.DeadCodeElimination(),
        """
        def @main(%x: Tensor[(2), float32]) {
          let %a = exp(%x);
          let %b = negative(%a);
          let %c = tanh(%x);
          %c
        }
        """,
        """
        def @main(%x: Tensor[(2), float32]) {
          let %c = tanh(%x);
          %c
        }
        """,
        inputs=[X],
    )


def test_dce_keeps_effects_and_drops_unused_recursive_closures():
    check(
        passes.DeadCodeElimination(),
        """
        def @main(%x: Tensor[(2), float32]) {
          let %r = ref(%x);
          let %u = ref_write(%r, negative(%x));
          let %f = fn (%y: Tensor[(2), float32]) -> Tensor[(2), float32] { %f(%y) };
          ref_read(%r)
        }
        """,
        """
        def @main(%x: Tensor[(2), float32]) {
          let %r = ref(%x);
          let %u = ref_write(%r, negative(%x));
          ref_read(%r)
        }
        """,
        inputs=[X],
    )


def test_dce_removes_unreachable_globals_when_asked():
    src = """
        def @helper(%a: Tensor[(2), float32]) { exp(%a) }
        def @unused(%a: Tensor[(2), float32]) { tanh(%a) }
        def @main(%x: Tensor[(2), float32]) { @helper(%x) }
        """
    check(passes.DeadCodeElimination(), src, src)
    check(
        passes.DeadCodeElimination(remove_unused_functions=True),
        src,
        """
        def @helper(%a: Tensor[(2), float32]) { exp(%a) }
        def @main(%x: Tensor[(2), float32]) { @helper(%x) }
        """,
    )


def test_cse_merges_duplicates_and_propagates_copies():
    check(
        passes.EliminateCommonSubexpr(),
        """
        def @main(%x: Tensor[(2), float32]) {
          let %a = exp(%x);
          let %b = exp(%x);
          %0 = tanh(%x);
          %1 = tanh(%x);
          add(add(%a, %b), multiply(%0, %1))
        }
        """,
        """
        def @main(%x: Tensor[(2), float32]) {
          let %a = exp(%x);
          %0 = tanh(%x);
          add(add(%a, %a), multiply(%0, %0))
        }
        """,
        inputs=[X],
    )


def test_cse_respects_scopes_and_state():
    # Duplicates in sibling branches do not dominate each other; random draws never merge;
    # a branch reuses what was computed before the if.
    check(
        passes.EliminateCommonSubexpr(),
        """
        def @main(%c: bool, %x: Tensor[(2), float32]) {
          let %e = exp(%x);
          %0 = if (%c) { add(exp(%x), sin(%x)) } else { sin(%x) };
          %1 = random.uniform(shape=[2]);
          %2 = random.uniform(shape=[2]);
          (%0, %1, %2, %e)
        }
        """,
        """
        def @main(%c: bool, %x: Tensor[(2), float32]) {
          let %e = exp(%x);
          %0 = if (%c) { add(%e, sin(%x)) } else { sin(%x) };
          %1 = random.uniform(shape=[2]);
          %2 = random.uniform(shape=[2]);
          (%0, %1, %2, %e)
        }
        """,
    )


GRAPH = """
    def @main(%c: bool, %x: Tensor[(2), float32]) {
      %0 = exp(%x);
      %1 = add(%0, %0);
      if (%c) { tanh(%1) } else { sin(%1) }
    }
    """
ANF = """
    def @main(%c: bool, %x: Tensor[(2), float32]) {
      let %a = exp(%x);
      let %b = add(%a, %a);
      let %r = if (%c) {
        let %t = tanh(%b);
        %t
      } else {
        let %s = sin(%b);
        %s
      };
      %r
    }
    """


def test_anf_binds_each_node_once_in_the_scope_of_its_uses():
    check(passes.ToANormalForm(), GRAPH, ANF, inputs=[np.bool_(True), X])


def test_gnf_is_the_inverse_of_anf():
    check(passes.ToGraphNormalForm(), ANF, GRAPH, inputs=[np.bool_(False), X])


def test_gnf_keeps_effects_and_closures_bound():
    src = """
        def @main(%x: Tensor[(2), float32]) {
          let %r = ref(%x);
          let %f = fn (%y: Tensor[(2), float32]) { multiply(%y, %x) };
          let %v = ref_read(%r);
          %f(%v)
        }
        """
    check(passes.ToGraphNormalForm(), src, src, inputs=[X])


def test_gnf_does_not_move_work_into_functions():
    # %a is loop-invariant: substituting it into the loop body would recompute it each call.
    src = """
        def @main(%x: Tensor[(2), float32]) {
          let %a = exp(%x);
          let %b = %x;
          let %loop = fn (%i: int32, %h: Tensor[(2), float32]) -> Tensor[(2), float32] {
            if (less(%i, 3)) { %loop(add(%i, 1), multiply(%h, %a)) } else { add(%h, %b) }
          };
          %loop(0, %x)
        }
        """
    check(
        passes.ToGraphNormalForm(),
        src,
        src.replace("let %b = %x;", "").replace("add(%h, %b)", "add(%h, %x)"),
        inputs=[X],
    )
