"""Elementwise consumers of a hand-written kernel, fused into it as an epilogue.

When a fused group is `anchor kernel -> elementwise stage` (conv2d + bias + relu + residual
add, dense + bias + gelu, ...), the stage's expression is handed to the kernel, which applies it
to each output tile while it is in cache, instead of a second pass over memory. The kernel calls
`fn(builder, value, indices, extra_ptrs)` with `value` a float scalar or an `<N x float>`
vector of consecutive elements along the last axis, `indices` the i64 multi-index of its first
element; other tensors the stage reads arrive as extra pointers.
"""

from __future__ import annotations

import copy

from llvmlite import ir

from ..te.expr import Call, Const, Load, Select, Var
from ..te.simplify import Simplifier
from ..te.visit import operands, post_order
from . import tir as T
from .codegen import F32, I1, I64, ModuleContext, _const, _Env, _FuncEmitter, compute_type
from .llvm_math import POLY_F32

# Expression nodes an epilogue may use; everything else keeps the separate stage.
_SUPPORTED_CALLS = set(POLY_F32) | {
    "sqrt",
    "floor",
    "ceil",
    "trunc",
    "round",
    "abs",
    "rsqrt",
    "fmax",
    "fmin",
    "copysign",
    "isnan",
    "isinf",
    "isfinite",
}


def can_fuse(expr, value_buf: T.Buffer, axes, env=()) -> bool:
    """The stage expression uses only float32 / bool values, vectorisable operations, and reads
    of buffers other than the anchor's at indices built from the axes (and the run-time
    extents `env` the kernel passes)."""
    known = {id(a) for a in axes} | {id(v) for v in env}
    for n in post_order(expr):
        if n.dtype not in ("float32", "bool", "int64"):
            return False
        t = type(n)
        if t is Call and n.name not in _SUPPORTED_CALLS:
            return False
        if t is Load and n.buffer is value_buf:
            continue
        if t is Load and n.buffer.scope not in ("param", "const"):
            return False
        if t is Select and n.dtype == "int64" and any(type(m) is Load for m in post_order(n)):
            return False  # an index chosen by data (lanes would differ)
        if t is Select and any(
            type(m) is Load and m.buffer is not value_buf
            for m in (*post_order(n.t), *post_order(n.f))
        ):
            return False  # reads in a branch (the other lanes' indices may be out of bounds);
            # the kernel's own value is there in every lane (where(isnan(p), 0, p))
        if t is Var and id(n) not in known:
            return False
    return True


class EpilogueBuilder:
    """Builds the epilogue callable for one fused stage."""

    def __init__(self, ctx: ModuleContext, expr, value_buf: T.Buffer, axes, extras: list, env=()):
        self.ctx = ctx
        self.expr = expr
        self.value_buf = value_buf
        self.axes = list(axes)
        self.env = list(env)  # run-time extents: the kernel passes them after the indices
        self.extras = extras  # Buffers passed after the kernel's outputs, in order
        self.simp = Simplifier()

    def permuted(self, order) -> EpilogueBuilder:
        """The same epilogue taking its output axes' indices in `order`; vector lanes run along
        the last of them (a kernel whose contiguous runs lie along another axis)."""
        view = copy.copy(self)
        view.axes = [self.axes[k] for k in order]
        return view

    def invariant_from(self, k: int) -> bool:
        """No output axis from k on occurs in the expression (but in the index of the kernel's
        own value, which is the element itself)."""
        tail = {id(a) for a in self.axes[k:]}
        stack = [self.expr]
        while stack:
            n = stack.pop()
            if type(n) is Load and n.buffer is self.value_buf:
                continue
            if type(n) is Var and id(n) in tail:
                return False
            stack.extend(operands(n))
        return True

    def flat_from(self, k: int, extents) -> bool:
        """Output axes k.. (of these extents) occur only in the indices of the buffers the
        expression reads, each with the coefficients of a row-major run of those axes (a
        residual of the output's own shape) or not at all: a kernel may then pass a position q
        of the flattened axes as (0, ..., 0, q)."""
        tail = [id(a) for a in self.axes[k:]]
        if len(tail) != len(extents) or not tail:
            return False
        pos = {t: j for j, t in enumerate(tail)}
        stack = [self.expr]
        while stack:
            n = stack.pop()
            if type(n) is Load:
                if n.buffer is self.value_buf:
                    continue
                terms, _ = self.simp.linear(n.index)
                coef = [0] * len(tail)
                for atom, co in terms.values():
                    if id(atom) in pos:
                        coef[pos[id(atom)]] = co
                    elif any(id(m) in pos for m in post_order(atom)):
                        return False  # a tail axis inside a non-linear term
                unit = coef[-1]
                for j in range(len(tail) - 2, -1, -1):
                    unit *= int(extents[j + 1])
                    if coef[j] != unit:
                        return False
                continue  # its index is all linear: the axes in it are accounted for
            if type(n) is Var and id(n) in pos:
                return False  # an axis used outside a buffer index
            stack.extend(operands(n))
        return True

    def axes_used(self) -> set[int]:
        """Positions of the output axes the expression uses (beyond its own value's index)."""
        pos = {id(a): k for k, a in enumerate(self.axes)}
        used, stack = set(), [self.expr]
        while stack:
            n = stack.pop()
            if type(n) is Load and n.buffer is self.value_buf:
                continue
            if type(n) is Var and id(n) in pos:
                used.add(pos[id(n)])
            stack.extend(operands(n))
        return used

    def __call__(self, b: ir.IRBuilder, value, indices, extra_ptrs):
        em = _EpilogueEmitter(self, b, value, indices, extra_ptrs)
        return em.expr(self.expr)


class _EpilogueEmitter(_FuncEmitter):
    """The loop-IR expression emitter, on the kernel's builder, scalar or vector."""

    def __init__(self, spec: EpilogueBuilder, b: ir.IRBuilder, value, indices, extra_ptrs):
        self.ctx = spec.ctx
        self.spec = spec
        self.fn = b.function
        self.b = b
        self.env = _Env()
        self.scopes = [{}]
        self.has_load = {}
        self.local_bufs = {}
        self.fm, self.fm_red = ("contract",), ("contract", "reassoc", "nsz")
        self.value = value
        self.lanes = value.type.count if isinstance(value.type, ir.VectorType) else 0
        self.int_ctx = 0  # > 0 while an int64 (index) node is emitted: its operands stay scalar
        self.index_only: dict[int, bool] = {}
        for a, v in zip(spec.axes + spec.env, indices):
            self.env.vars[id(a)] = v
        for buf, p in zip(spec.extras, extra_ptrs):
            self.env.bufs[buf.id] = p

    def val(self, e):
        v = super().val(e)
        if self.lanes and not self.int_ctx and e.dtype != "int64":
            if not isinstance(v.type, ir.VectorType):
                v = self.splat(v)
        return v

    def _scalar_node(self, e):
        """`e` emitted as a scalar, its operands too (val does not splat them meanwhile)."""
        self.int_ctx += 1
        try:
            return super()._node(e)
        finally:
            self.int_ctx -= 1

    def _guarded(self, e) -> bool:
        """No select is a branch here: can_fuse let through only selects whose arms read at
        most the kernel's own value, which every lane has."""
        return False

    def _index_only(self, e) -> bool:
        """A bool computed from indices alone (no reads, no floats): the same for every lane,
        kept scalar so that index selects can use it (val splats it for vector consumers)."""
        r = self.index_only.get(id(e))
        if r is None:
            r = all(type(m) is not Load and m.dtype in ("int64", "bool") for m in post_order(e))
            self.index_only[id(e)] = r
        return r

    def splat(self, v):
        if not self.lanes or isinstance(v.type, ir.VectorType):
            return v
        b = self.b
        vt = ir.VectorType(v.type, self.lanes)
        if isinstance(v, ir.Constant):  # a constant vector (codegen_arith reads its value)
            return ir.Constant(vt, [v] * self.lanes)
        z = b.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(ir.IntType(32), 0))
        return b.shuffle_vector(
            z,
            ir.Constant(vt, ir.Undefined),
            ir.Constant(ir.VectorType(ir.IntType(32), self.lanes), [0] * self.lanes),
        )

    def _same_lanes(self, a, c):
        """Operands of one operation, a vector and a scalar (index arithmetic on values read
        per lane: Gemma2's sliding window, positions - window): the scalar splatted."""
        if isinstance(a.type, ir.VectorType) and not isinstance(c.type, ir.VectorType):
            return a, self.splat(c)
        if isinstance(c.type, ir.VectorType) and not isinstance(a.type, ir.VectorType):
            return self.splat(a), c
        return a, c

    def binary(self, op: str, a, c, dtype: str):
        return super().binary(op, *self._same_lanes(a, c), dtype)

    def compare(self, op: str, a, c, dtype: str):
        return super().compare(op, *self._same_lanes(a, c), dtype)

    def _node(self, e):
        t = type(e)
        if t is Const:
            c = _const(compute_type(e.dtype), e.dtype, e.value)
            if e.dtype == "int64":
                return c
            return self.splat(c)
        if t is Var:
            return self.env.vars[id(e)]
        if t is Load:
            if e.buffer is self.spec.value_buf:
                return self.value
            return self.load_lanes(e)
        if e.dtype == "int64":  # index arithmetic stays scalar (its conditions too)
            return self._scalar_node(e)
        if (
            t is Call
            and self.lanes
            and e.name not in POLY_F32
            and e.name in ("isnan", "isinf", "isfinite")
        ):
            return super()._node(e)
        if e.dtype == "bool" and self._index_only(e):
            return self._scalar_node(e)
        args_vec = self.lanes
        v = super()._node(e)
        if args_vec and not isinstance(v.type, ir.VectorType):
            v = self.splat(v)
        return v

    def load_lanes(self, e: Load):
        """A scalar, or `lanes` consecutive / broadcast / gathered elements."""
        b = self.b
        ptr = self.bufptr(e.buffer)
        idx = self.val(e.index)
        if not self.lanes:
            return self.from_storage(b.load(b.gep(ptr, [idx])), e.buffer.dtype)
        last = self.spec.axes[-1]
        terms, _ = self.spec.simp.linear(e.index)
        coef = None
        pure = True
        for atom, co in terms.values():
            if atom is last:
                coef = co
            elif any(n is last for n in post_order(atom)):
                pure = False
        if pure and coef is None:  # the same element for every lane
            return self.splat(self.from_storage(b.load(b.gep(ptr, [idx])), e.buffer.dtype))
        if pure and coef == 1 and e.buffer.dtype == "float32":
            vt = ir.VectorType(F32, self.lanes)
            p = b.bitcast(b.gep(ptr, [idx]), vt.as_pointer())
            return b.load(p, align=4)
        # a gather: one index per lane, each computed afresh (the scopes memoise the index
        # computed above for lane 0, which every lane would otherwise get)
        lanes = []
        saved = self.scopes
        for k in range(self.lanes):
            self.env.vars[id(last)] = b.add(self._last0(), ir.Constant(I64, k))
            self.scopes = [{}]
            i_k = self.expr(e.index)
            lanes.append(self.from_storage(b.load(b.gep(ptr, [i_k])), e.buffer.dtype))
        self.scopes = saved
        self.env.vars[id(last)] = self._last0()
        vt = ir.VectorType(lanes[0].type, self.lanes)
        v = ir.Constant(vt, ir.Undefined)
        for k, x in enumerate(lanes):
            v = b.insert_element(v, x, ir.Constant(ir.IntType(32), k))
        return v

    def cast(self, v, src: str, dst: str):
        """Casts of vectors (a bool mask to float32 in the epilogue: the scalar rules would
        convert a <N x i1> to a float): lane by lane, but for bool -> float32."""
        if not isinstance(v.type, ir.VectorType):
            return super().cast(v, src, dst)
        b, n = self.b, v.type.count
        if src == "bool" and dst == "float32":
            return b.uitofp(v, ir.VectorType(F32, n))
        out = None
        for k in range(n):
            ik = ir.Constant(ir.IntType(32), k)
            r = super().cast(b.extract_element(v, ik), src, dst)
            if out is None:
                out = ir.Constant(ir.VectorType(r.type, n), ir.Undefined)
            out = b.insert_element(out, r, ik)
        return out

    def _last0(self):
        if not hasattr(self, "_l0"):
            self._l0 = self.env.vars[id(self.spec.axes[-1])]
        return self._l0

    def libm(self, name: str, t, args):
        if not isinstance(t, ir.VectorType):
            return super().libm(name, t, args)
        b = self.b
        out = ir.Constant(t, ir.Undefined)
        for k in range(t.count):
            ik = ir.Constant(ir.IntType(32), k)
            r = super().libm(name, t.element, [b.extract_element(a, ik) for a in args])
            out = b.insert_element(out, r, ik)
        return out


def epilogue_for(ctx: ModuleContext, expr, value_buf: T.Buffer, axes, env=()):
    """(Epilogue object for the kernels package, extra Buffers) or None when not fusable.
    `env`: run-time extents (te.Vars) the kernel passes after the indices."""
    if not can_fuse(expr, value_buf, axes, env):
        return None
    extras = []
    seen = set()
    for n in post_order(expr):
        if type(n) is Load and n.buffer is not value_buf and n.buffer.scope == "param":
            if n.buffer.id not in seen:
                seen.add(n.buffer.id)
                extras.append(n.buffer)
    from ..ir.types import TensorType
    from .kernels import Epilogue

    spec = EpilogueBuilder(ctx, expr, value_buf, axes, extras, env)
    types = tuple(
        TensorType((int(b.size),) if isinstance(b.size, int) else (0,), b.dtype) for b in extras
    )
    return Epilogue(spec, types), extras


__all__ = ["epilogue_for", "can_fuse", "I1"]
