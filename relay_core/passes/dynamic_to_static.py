"""DynamicToStatic: dyn.* ops whose shape inputs became constants turn into static ops."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Call, Op
from ..ir.module import IRModule
from ..typing import infer_type
from ._util import Rewriter, ensure_typed, map_functions
from .fold_constant import FoldConstant
from .manager import Pass, PassContext, register_pass


@register_pass
@dataclass
class DynamicToStatic(Pass):
    """Replace each call of an op with `OpDef.to_static` (the dyn.* ops) by the static call it
    returns once its shape / parameter inputs are constants, then re-infer types so the
    static shapes flow on. Between rounds, constant shape computations are folded
    (`shape_of` of a now-static tensor, arithmetic on it), which can make more shape inputs
    constant: `dyn.reshape(%x, shape_of(%y))` becomes `reshape(%x, newshape=[...])`.

    Rounds repeat until one changes nothing: a chain of dyn ops, each shaped by the one before
    (ShuffleNet's channel shuffles: reshape and slices per block, 16 blocks deep), becomes
    static one link per round. Every round that continues removes a dyn call, so this ends;
    `max_iterations` caps the rounds when set.

    >>> mod = DynamicToStatic()(mod)
    """

    max_iterations: int | None = None
    fold_constants: bool = True
    opt_level = 1

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = ensure_typed(mod)
        rounds = 0
        while self.max_iterations is None or rounds < self.max_iterations:
            rounds += 1
            if self.fold_constants:
                mod = FoldConstant(on_limit="skip")(mod, PassContext(opt_level=ctx.opt_level))
                mod = ensure_typed(mod)
            changed = [False]

            class _Static(Rewriter):
                flag = changed  # bound now, not looked up by the loop

                def rewrite(self, orig, new):
                    if type(new) is Call and type(new.op) is Op:
                        to_static = new.op.opdef.to_static
                        if to_static is not None:
                            static = to_static(new)
                            if static is not None:
                                self.flag[0] = True
                                return static
                    return new

            mod = map_functions(mod, lambda gv, f: _Static().mutate(f))
            if not changed[0]:
                break
            mod = infer_type(mod)
        return mod
