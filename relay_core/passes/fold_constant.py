"""FoldConstant: evaluate constant subgraphs at compile time with the reference interpreter."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, ResourceLimitError
from ..interp import Interpreter
from ..ir import dtype as dt
from ..ir.expr import Call, Constant, Expr, Let, Op, Tuple
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..ir.visitor import post_order
from ..ops.shape_sources import picked_dims
from ..typing import infer_expr
from ._util import Rewriter, child_exprs, ensure_typed, map_functions, type_bytes, type_of
from .manager import Pass, PassContext, register_pass

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
# A broadcast of constants (EXPANSIONS) whose value would be over EXPAND_BYTES and over
# EXPAND_RATIO times its arguments (an index grid of a range) is left for run time: computed
# there it costs a cheap kernel (or fuses into its user); folded it is stored in the
# artifact. MViTv2's slice assignments folded to 1.4 GB of index grids beside 139 MB of
# weights. A `full` (ONNX ConstantOfShape) is a tensor the model declares: it folds.
EXPANSIONS = frozenset({"broadcast_to", "broadcast_to_like", "tile", "repeat"})
EXPAND_BYTES = 4 * 1024 * 1024
EXPAND_RATIO = 8


def _is_const(e: Expr) -> bool:
    t = type(e)
    return t is Constant or (t is Tuple and all(_is_const(f) for f in e.fields))


@register_pass
@dataclass
class FoldConstant(Pass):
    """Replace calls whose arguments are all constants by their value, computed by the
    interpreter; fold `shape_of` / `ndarray_size` (ops with `shape_only`) of statically
    shaped tensors; inline let-bound constants; pick the branch of an `if` on a constant;
    project tuples of known fields. Stateful ops are never evaluated.

    A broadcast whose value would be large (over EXPAND_BYTES) and much larger than its
    arguments (EXPAND_RATIO times) is left for run time: its value is not worth storing.
    `max_bytes` bounds every tensor folding would create. It is checked *before*
    evaluating, from the checked types, so an 84-byte model asking for a 4-petabyte constant
    fails at once: with `on_limit="error"` (default) a ResourceLimitError names the op and its
    shape; with `on_limit="skip"` the call is left for run time.

    >>> mod = FoldConstant(max_bytes=1 << 30)(mod)
    """

    max_bytes: int = DEFAULT_MAX_BYTES
    on_limit: str = "error"
    opt_level = 1

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if self.on_limit not in ("error", "skip"):
            raise ValueError(
                f"FoldConstant(on_limit=...) must be 'error' or 'skip', not {self.on_limit!r}"
            )
        mod = ensure_typed(mod)
        folder = _Folder(self, mod)
        return map_functions(mod, lambda gv, f: folder.fold(f))


class _Folder:
    def __init__(self, opts: FoldConstant, mod: IRModule):
        self.opts = opts
        self.mod = mod
        self.interp = Interpreter(mod, opts.max_bytes)

    def fold(self, func):
        let_of_var = {n.var: n for n in post_order(func, child_exprs) if type(n) is Let}
        folder = self

        class _Fold(Rewriter):
            def rewrite_var(self, orig, new):
                let = let_of_var.get(orig)
                if let is not None:
                    v = self.memo.get(let.value)
                    if v is not None and _is_const(v):
                        return v
                return new

            def rewrite_let(self, orig, new):
                return new.body if _is_const(new.value) else new

            def rewrite_call(self, orig, new):
                return folder.fold_call(orig, new)

            def rewrite_tuple_getitem(self, orig, new):
                if type(new.tuple_value) is Tuple:
                    return new.tuple_value.fields[new.index]
                return new

            def rewrite_if(self, orig, new):
                if type(new.cond) is Constant and new.cond.data.size == 1:
                    return (
                        new.true_branch if bool(new.cond.data.reshape(-1)[0]) else new.false_branch
                    )
                return new

        return _Fold().mutate(func)

    def fold_call(self, orig: Call, new: Call) -> Expr:
        if type(new.op) is not Op:
            return new
        opdef = new.op.opdef
        if opdef.stateful:
            return new
        if opdef.shape_only:
            return self._fold_shape_only(orig, new)
        if not all(type(a) is Constant for a in new.args):
            return _static_entries(new) or new
        out_t = type_of(orig)
        size = type_bytes(out_t)
        call = new
        if size is None and opdef.to_static is not None:
            static = opdef.to_static(new)  # e.g. dyn.full with a constant shape -> full
            if static is not None:
                infer_expr(static, self.mod)
                call, out_t = static, static.checked_type
                size = type_bytes(out_t)
        if size is not None and size > self.opts.max_bytes:
            if self.opts.on_limit == "skip":
                return new
            raise ResourceLimitError(
                f"FoldConstant: {opdef.name} would create a constant of type {out_t} "
                f"({size:,} bytes), over the budget of {self.opts.max_bytes:,} bytes. "
                "The model asks for a tensor this large; if that is intended, raise "
                "FoldConstant(max_bytes=...) or pass on_limit='skip' to leave it for run time."
            )
        if size is not None and size > EXPAND_BYTES and opdef.name in EXPANSIONS:
            if size > EXPAND_RATIO * sum(a.data.nbytes for a in new.args):
                return new
        if not call.has_type and out_t is not None:
            call._set_type(out_t)
        try:
            value = self.interp.eval(call)
        except ResourceLimitError as e:
            if self.opts.on_limit == "skip":
                return new
            raise ResourceLimitError(f"FoldConstant: {e}") from None
        except EvalError:
            return new  # fails at run time too (maybe never: it may sit in a dead branch)
        return _to_expr(value, new)

    def _fold_shape_only(self, orig: Call, new: Call) -> Expr:
        args = []
        for a in new.args:
            t = type_of(a)
            if not isinstance(t, TensorType) or not t.is_static:
                return new
            # A zero-strided stand-in: the right shape and dtype, no memory.
            args.append(np.broadcast_to(np.zeros((), dt.to_numpy(t.dtype)), t.shape))
        try:
            value = new.op.opdef.ref(args, new.attrs)
        except Exception:
            return new
        return _to_expr(value, new)


def _to_expr(value, like: Expr) -> Expr:
    if isinstance(value, tuple):
        return Tuple(tuple(_to_expr(v, like) for v in value), span=like.span)
    if isinstance(value, np.ndarray | np.generic):  # a 0-d result may come back as a scalar
        return Constant(np.array(value, copy=True, order="C"), span=like.span)
    return like


def _static_entries(call: Call) -> Constant | None:
    """`take` / `strided_slice` of `shape_of(x)` that picks only dims of x known statically
    (x of type (N, 116, 28, 28): `take(shape_of(x), 1)` is 116), as a constant; None when an
    unknown dim is picked or the call is not such a pick."""
    pos = picked_dims(call)
    if pos is None:
        return None
    src = call.args[0]
    dims, st = type_of(src.args[0]).shape, type_of(src)
    if not all(isinstance(dims[k], int) for k in pos.reshape(-1)):
        return None
    value = np.array([dims[k] for k in pos.reshape(-1)], dt.to_numpy(st.dtype)).reshape(pos.shape)
    return _to_expr(value, call)
