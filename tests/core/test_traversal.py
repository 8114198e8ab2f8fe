"""The traversal framework (ir/visitor.py) and its consumers.

- ExprFunctor / ExprVisitor / ExprMutator dispatch one method per node kind.
- A 20,000-node call chain and a 20,000-deep let chain go through every consumer (printer,
  structural equality and hash, type inference, interpreter, FuseOps, CSE) under the default
  recursion limit.
- The framework, its consumers and every pass keep no hand-written node-kind dispatch chains
  (an AST check).
"""

from __future__ import annotations

import ast
import pathlib
import sys

import numpy as np
import pytest

import relay_core
from relay_core import passes
from relay_core.interp import evaluate
from relay_core.ir import Call, Function, IRModule, Let, Op, Tuple, Var, call, var
from relay_core.ir.structural import structural_equal, structural_hash
from relay_core.ir.visitor import KINDS, ExprFunctor, ExprMutator, ExprVisitor, binders, kind

N = 20_000
X = np.array([0.25, -0.5], np.float32)


# -- the framework ----------------------------------------------------------------------------


def test_visitor_results_per_node_children_first_each_once():
    x = var("x", (2,))
    a = call("negative", x)
    e = Tuple((call("add", a, a), a))
    seen = []

    class Depth(ExprVisitor):
        def visit_var(self, v):
            seen.append(v)
            return 0

        def visit_op(self, op):
            return 0

        def visit_call(self, c):
            seen.append(c)
            return 1 + max(self.memo[a] for a in c.args)

        def visit_tuple(self, t):
            return max(self.memo[f] for f in t.fields)

    assert Depth().visit(e) == 2
    assert seen == [x, a, e.fields[0]]  # shared `a` visited once, after its operand


def test_visitor_children_hook_prunes_and_runs_in_pre_order():
    x = var("x", (2,))
    inner = Function((x,), call("exp", x))
    y = var("y", (2,))
    e = Call(inner, (y,))
    entered = []

    class NoFunctions(ExprVisitor):
        def children(self, n):
            entered.append(n)
            return () if isinstance(n, Function) else super().children(n)

        def visit_call(self, c):
            return "call"

    v = NoFunctions()
    assert v.visit(e) == "call"
    assert entered[0] is e and inner in entered and x not in v.memo


def test_functor_passes_extra_arguments_and_rejects_non_expressions():
    class Pair(ExprFunctor):
        def visit_var(self, a, b):
            return (a.name_hint, b)

    assert Pair().dispatch(var("x", (1,)), 7) == ("x", 7)
    with pytest.raises(TypeError, match="does not handle Call"):
        Pair().dispatch(call("exp", var("x", (1,))), 7)
    with pytest.raises(TypeError, match="not a Relay expression"):
        Pair().dispatch(3)


def test_mutator_rebuilds_only_what_changed():
    x = var("x", (2,))
    keep = call("exp", x)
    e = Tuple((call("negative", x), keep))

    class NegToAbs(ExprMutator):
        def rewrite_call(self, orig, new):
            if new.op is Op.get("negative"):
                return Call(Op.get("abs"), new.args)
            return new

    out = NegToAbs().mutate(e)
    assert out.fields[0].op is Op.get("abs") and out.fields[1] is keep
    assert NegToAbs().mutate(keep) is keep


def test_kinds_and_binders():
    x, v = var("x", (2,)), Var("v")
    let = Let(v, x, v)
    assert kind(let) == "let" and "tuple_getitem" in KINDS
    assert binders(let) == ((v,),) and binders(Function((x,), x)) == ((x,),)
    assert binders(x) == ()


# -- every consumer on deep programs, default recursion limit ---------------------------------


@pytest.fixture
def default_recursion_limit():
    assert sys.getrecursionlimit() <= 1000, "something raised the recursion limit"


def _call_chain():
    x = var("x", (2,))
    e = x
    for i in range(N):
        e = call("tanh", e) if i % 2 else call("negative", e)
    return IRModule.from_expr(Function((x,), e))


def _let_chain():
    x = var("x", (2,))
    vs = [Var(f"v{i}") for i in range(N)]
    body = vs[-1]
    for i in reversed(range(N)):
        prev = x if i == 0 else vs[i - 1]
        body = Let(vs[i], call("sin", prev) if i % 2 else call("negative", prev), body)
    return IRModule.from_expr(Function((x,), body))


def _reference(build):
    """numpy on the same chain (the interpreter's answer is checked against it)."""
    v = X
    for i in range(N):
        v = (np.tanh(v) if build is _call_chain else np.sin(v)) if i % 2 else -v
    return v


@pytest.mark.slow
@pytest.mark.parametrize("build", [_call_chain, _let_chain])
def test_deep_program_through_every_consumer(build, default_recursion_limit):
    mod = relay_core.infer_type(build())
    ret = mod["main"].checked_type.ret_type
    text = mod.astext()
    assert text.count("\n") > N
    assert structural_equal(mod, build())
    assert structural_hash(mod) == structural_hash(build())
    want = _reference(build)
    np.testing.assert_allclose(evaluate(mod, X), want, rtol=1e-5)
    for p in (passes.EliminateCommonSubexpr(), passes.FuseOps()):
        out = p(relay_core.infer_type(build()))
        assert relay_core.infer_type(out)["main"].checked_type.ret_type == ret
        np.testing.assert_allclose(evaluate(out, X), want, rtol=1e-5)


# -- no hand-written dispatch chains in the consumers -----------------------------------------

ROOT = pathlib.Path(relay_core.__file__).parent
_NODE_KINDS = {
    "Call", "Tuple", "TupleGetItem", "Let", "Function", "If", "Match", "Var", "GlobalVar",
    "Constant", "Op", "Constructor", "RefCreate", "RefRead", "RefWrite",
}  # fmt: skip

# The traversal framework and its consumers: none may dispatch on node kinds by hand.
CONSUMERS = sorted(
    [
        "ir/visitor.py",
        "ir/printer.py",
        "ir/structural.py",
        "ir/prelude.py",
        "backend/graph.py",
        "backend/lower.py",
        "interp.py",
        "backend/vm.py",
        "backend/vm_emit.py",
        "typing/infer.py",
    ]
    + [f"passes/{p.name}" for p in (ROOT / "passes").glob("*.py")]
)


def _kinds_tested(test: ast.expr) -> set[str]:
    """Node kinds named in `type(x) is K`, `t in (K, L)`, `isinstance(x, (K, L))` tests."""
    out: set[str] = set()

    def names(n):
        items = n.elts if isinstance(n, (ast.Tuple, ast.List, ast.Set)) else [n]
        return {m.id for m in items if isinstance(m, ast.Name) and m.id in _NODE_KINDS}

    for n in ast.walk(test):
        if isinstance(n, ast.Compare) and any(
            isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for o in n.ops
        ):
            for c in n.comparators:
                out |= names(c)
        elif isinstance(n, ast.Call) and getattr(n.func, "id", None) == "isinstance":
            if len(n.args) == 2:
                out |= names(n.args[1])
    return out


def dispatch_chains(source: str) -> list[tuple[int, list[str]]]:
    """Runs of consecutive `if` / `elif` statements that test three or more node kinds."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list):
                continue
            group: set[str] = set()
            start = None
            for st in [*stmts, None]:
                if isinstance(st, ast.If) and not (isinstance(node, ast.If) and field == "orelse"):
                    ks: set[str] = set()
                    cur = st
                    while True:
                        ks |= _kinds_tested(cur.test)
                        if len(cur.orelse) == 1 and isinstance(cur.orelse[0], ast.If):
                            cur = cur.orelse[0]
                        else:
                            break
                    if ks:
                        start = st.lineno if start is None else start
                        group |= ks
                        continue
                if len(group) >= 3:
                    found.append((start, sorted(group)))
                group, start = set(), None
    return found


def test_the_checker_finds_a_chain():
    src = "def f(e):\n    t = type(e)\n    if t is Call:\n        return 1\n"
    src += "    if isinstance(e, (Tuple, Let)):\n        return 2\n"
    assert dispatch_chains(src) == [(3, ["Call", "Let", "Tuple"])]
    src2 = "def f(e):\n    if t is Call:\n        pass\n    elif t is Var:\n        pass\n"
    src2 += "    elif t is Let:\n        pass\n"
    assert len(dispatch_chains(src2)) == 1


@pytest.mark.parametrize("module", CONSUMERS)
def test_no_hand_written_dispatch_chains(module):
    chains = dispatch_chains((ROOT / module).read_text())
    assert not chains, (
        f"{module}: node-kind dispatch chains at lines {chains}; dispatch through "
        "relay_core.ir.visitor (ExprFunctor / ExprVisitor / ExprMutator) instead"
    )


def test_overriding_the_default_covers_every_kind_not_overridden():
    class Names(ExprVisitor):
        def visit_default(self, e):
            return kind(e)

        def visit_var(self, v):
            return "a var"

    x = var("x", (2,))
    v = Names()
    assert v.visit(Tuple((x,))) == "tuple" and v.memo[x] == "a var"
