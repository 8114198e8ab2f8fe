"""SimplifyInference: inference-time ops (batch / layer / instance / group / rms norm, dropout,
...) become elementwise ops and reductions, from each op's `OpDef.decompose`."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Expr, Op, Tuple, TupleGetItem
from ..ir.module import IRModule
from ._util import Rewriter, ensure_typed, map_functions, type_of
from .manager import Pass, PassContext, register_pass


@register_pass
@dataclass
class SimplifyInference(Pass):
    """Replace every call of an op that has a decomposition (`OpDef.decompose`, filled in
    relay_core/ops/decompose.py) by it, so the backend needs only elementwise ops and
    reductions: `nn.batch_norm` becomes `x * scale + shift` (per-channel constants once
    FoldConstant runs), `nn.dropout` the identity, layer / group / instance / rms norm their
    mean-variance formulas.

    >>> mod = SimplifyInference()(mod)
    """

    opt_level = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = ensure_typed(mod)
        return map_functions(mod, lambda gv, f: expand_decompositions(f))


def expand_decompositions(func: Expr, only=None) -> Expr:
    """`func` with calls of ops that have a decomposition replaced by it. `only(opdef)`
    restricts which ops are expanded."""

    class _Expand(Rewriter):
        def rewrite_call(self, orig, new):
            if type(orig.op) is Op:
                d = orig.op.opdef
                if d.decompose is not None and (only is None or only(d)):
                    types = [type_of(a) for a in orig.args]
                    if all(t is not None for t in types):
                        out = d.decompose(new, types)
                        if out is not None:
                            return out
            return new

        def rewrite_tuple_getitem(self, orig, new):
            if type(new) is TupleGetItem and type(new.tuple_value) is Tuple:
                # `nn.batch_norm(...).0` once the op became (x * scale + shift, mean, var)
                return new.tuple_value.fields[new.index]
            return new

    return _Expand().mutate(func)
