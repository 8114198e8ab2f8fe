"""Type inference: constraint generation over the whole module, unification, op relations.

Each node gets a type term (possibly an IncompleteType). Operator calls become relations that
run the op's `type_rel` as soon as their argument types are fully known; the rest wait in a queue
that is re-run until nothing changes. Finally every node's resolved type is stored in its
`checked_type`. Traversal is iterative: a 10,000-node chain needs no recursion.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import OpTypeError, RelayTypeError
from ..ir import dtype as _dt
from ..ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.module import IRModule
from ..ir.types import (
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    is_concrete,
    substitute_types,
)
from ..ir.visitor import ExprFunctor, children, method_table, post_order
from .unify import Unifier, UnifyError

BOOL_SCALAR = TensorType((), "bool")


def constructor_type(c: Constructor, td) -> FuncType:
    """`Cons: fn [A](A, List[A]) -> List[A]`."""
    ret = TypeCall(td.header, td.type_vars)
    return FuncType(c.inputs, ret, td.type_vars)


class _Pending:
    __slots__ = ("node", "solve")

    def __init__(self, node: Expr, solve: Callable[[], bool]):
        self.node = node
        self.solve = solve


class TypeInferencer(ExprFunctor):
    """Types one node per `visit_<kind>` (children first, from `visit`'s explicit order)."""

    def __init__(self, mod: IRModule | None = None, reuse_types: bool = False):
        self.mod = mod
        self.u = Unifier()
        self.terms: dict[Expr, Type] = {}  # node -> type term
        self.pending: list[_Pending] = []
        self.reuse = reuse_types
        self.global_types: dict[GlobalVar, FuncType] = {}
        self.current_function: tuple[str, Function] | None = None
        self._fn_of_node: dict[Expr, tuple[str, Function]] = {}
        # let-bound polymorphic functions: var -> the function (instantiated at each call)
        self.poly_lets: dict[Var, Function] = {}

    # -- errors --------------------------------------------------------------------------------
    def error(self, node: Expr, msg: str) -> RelayTypeError:
        from ..ir.printer import excerpt

        where = self._fn_of_node.get(node, self.current_function)
        text = ""
        if where is not None:
            try:
                text = excerpt(where[1], node, name=where[0], mod=self.mod)
            except Exception:  # the message matters more than the excerpt
                text = ""
        span = getattr(node, "span", None)
        src = ""
        if span is not None and span.node:
            src = f" (from {span})"
        elif span is not None and span.line:  # parsed from text: where in the source
            src = f" at {span}"
        return RelayTypeError(f"type error{src}: {msg}" + (f"\n{text}" if text else ""))

    def unify(self, node: Expr, a: Type, b: Type, what: str = "") -> Type:
        try:
            return self.u.unify(a, b)
        except UnifyError as e:
            prefix = f"{what}: " if what else ""
            raise self.error(node, prefix + str(e)) from None

    # -- module --------------------------------------------------------------------------------
    def global_type(self, gv: GlobalVar) -> FuncType:
        t = self.global_types.get(gv)
        if t is None:
            if self.mod is None or gv not in self.mod.functions:
                raise RelayTypeError(f"unknown global function @{gv.name_hint}")
            f = self.mod.functions[gv]
            t = f.func_type_annotation
            if self.reuse and f.has_type and not is_concrete(t):
                t = f.checked_type  # incremental typing: the global was typed before
            self.global_types[gv] = t
        return t

    def instantiate(self, ft: FuncType) -> FuncType:
        if not ft.type_params:
            return ft
        sub = {tp: IncompleteType() for tp in ft.type_params}
        out = substitute_types(FuncType(ft.arg_types, ft.ret_type), sub)
        return out  # type: ignore[return-value]

    def constructor_type(self, c: Constructor) -> FuncType:
        if self.mod is None:
            raise RelayTypeError(f"constructor {c.name} used outside a module")
        td = self.mod.type_definitions.get(c.belong_to)
        if td is None:
            raise RelayTypeError(f"unknown ADT {c.belong_to.name} of constructor {c.name}")
        return constructor_type(c, td)

    def infer_module(self) -> None:
        mod = self.mod
        assert mod is not None
        todo = []
        for gv, f in mod.functions.items():
            self.global_type(gv)
            if f.type_params and not is_concrete_annotation(f):
                todo.append(gv)
        self._infer_polymorphic(todo)
        for gv, f in mod.functions.items():
            self.current_function = (gv.name_hint, f)
            t = self.visit(f)
            self.unify(f, self.global_types[gv], t, f"@{gv.name_hint}")
        self.solve_pending(final=True)
        for gv, f in mod.functions.items():
            self.current_function = (gv.name_hint, f)
            self.write_back(f)
        for gv in mod.functions:
            t = self.u.resolve(self.global_types[gv])
            self.global_types[gv] = t  # type: ignore[assignment]

    def _infer_polymorphic(self, todo: list[GlobalVar]) -> None:
        """The types of polymorphic globals not fully annotated (TVM infers them): each is
        typed alone, its type parameters rigid and its own recursive calls monomorphic, then
        generalized over its type parameters. Callees first."""
        pending = set(todo)
        uses = {gv: _globals_used(self.mod.functions[gv]) & pending for gv in todo}
        while pending:
            ready = [gv for gv in todo if gv in pending and not (uses[gv] & pending) - {gv}]
            if not ready:
                names = ", ".join(f"@{g.name_hint}" for g in todo if g in pending)
                raise RelayTypeError(
                    f"mutually recursive polymorphic functions {names} must annotate every "
                    "parameter and their return types"
                )
            for gv in ready:
                f = self.mod.functions[gv]
                sub = TypeInferencer(self.mod)
                sub.global_types = dict(self.global_types)
                mono = f.func_type_annotation
                mono = FuncType(mono.arg_types, mono.ret_type)  # recursion: not instantiated
                sub.global_types[gv] = mono
                sub.current_function = (gv.name_hint, f)
                t = sub.visit(f)
                sub.unify(f, mono, FuncType(t.arg_types, t.ret_type), f"@{gv.name_hint}")
                sub.solve_pending(final=True)
                ft = sub.u.resolve(mono)
                if _has_incomplete(ft):
                    raise RelayTypeError(
                        f"cannot infer the type of polymorphic function @{gv.name_hint} "
                        f"(got {ft}): annotate its parameters and return type"
                    )
                self.global_types[gv] = FuncType(ft.arg_types, ft.ret_type, f.type_params)
                pending.discard(gv)

    # -- expressions ---------------------------------------------------------------------------
    def children(self, e: Expr):
        if self.reuse and e.has_type:
            return ()
        return children(e)

    def visit(self, root: Expr) -> Type:
        terms = self.terms
        fn = self.current_function
        table = self._table
        order = list(post_order(root, self.children))
        for node in order:  # typed before their uses: let-bound polymorphic functions
            if type(node) is Let and type(node.value) is Function and node.value.type_params:
                if node.var.type_annotation is None:
                    self.poly_lets[node.var] = node.value
        for node in order:
            if node in terms:
                continue
            if fn is not None:
                self._fn_of_node[node] = fn
            if self.reuse and node.has_type and type(node) is not Op:
                terms[node] = node.checked_type
                continue
            terms[node] = table[type(node)](self, node)
        return terms[root]

    # One method per node kind (ExprFunctor): the type term of a node whose children are typed.
    def visit_var(self, e: Var) -> Type:
        return e.type_annotation if e.type_annotation is not None else IncompleteType()

    def visit_constant(self, e: Constant) -> Type:
        return e.type

    def visit_op(self, e: Op) -> None:
        return None  # typed at the call

    def visit_global_var(self, e: GlobalVar) -> Type:
        return self.global_type(e)  # polymorphic types are instantiated where they are used

    def visit_constructor(self, e: Constructor) -> Type:
        return self.constructor_type(e)

    def visit_tuple(self, e: Tuple) -> Type:
        terms = self.terms
        return TupleType(tuple(terms[f] for f in e.fields))

    def visit_let(self, e: Let) -> Type:
        terms = self.terms
        self.unify(e, terms[e.var], terms[e.value], f"let %{e.var.name_hint}")
        return terms[e.body]

    def visit_function(self, e: Function) -> Type:
        terms = self.terms
        ret = terms[e.body]
        if e.ret_type is not None:
            ret = self.unify(e, e.ret_type, ret, "return type")
        return FuncType(tuple(terms[p] for p in e.params), ret, e.type_params)

    def visit_if(self, e: If) -> Type:
        terms = self.terms
        c = self.u.resolve(terms[e.cond])
        if isinstance(c, TensorType) and c.dtype == "bool" and c.size == 1:
            pass  # a one-element bool tensor is accepted as a condition
        else:
            self.unify(e, terms[e.cond], BOOL_SCALAR, "if condition must be a bool scalar")
        return self.unify(e, terms[e.true_branch], terms[e.false_branch], "if branches")

    def visit_ref_create(self, e: RefCreate) -> Type:
        return RefType(self.terms[e.value])

    def visit_ref_read(self, e: RefRead) -> Type:
        v = IncompleteType()
        self.unify(e, self.terms[e.ref], RefType(v), "ref_read needs a reference")
        return v

    def visit_ref_write(self, e: RefWrite) -> Type:
        terms = self.terms
        self.unify(e, terms[e.ref], RefType(terms[e.value]), "ref_write")
        return TupleType(())

    def visit_call(self, e: Call) -> Type:
        terms = self.terms
        callee = e.op
        arg_terms = [terms[a] for a in e.args]
        if type(callee) is Op:
            return self._op_call(e, callee, arg_terms)
        ft = _CALLEE[type(callee)](self, e, callee)
        if len(ft.arg_types) != len(arg_terms):
            raise self.error(
                e, f"function expects {len(ft.arg_types)} arguments, got {len(arg_terms)}"
            )
        for i, (p, a) in enumerate(zip(ft.arg_types, arg_terms)):
            self.unify(e.args[i], p, a, f"argument {i}")
        return ft.ret_type

    # The function type of a callee, by its kind (operators are typed by `_op_call`).
    def callee_global_var(self, e: Call, callee: GlobalVar) -> FuncType:
        return self.instantiate(self.global_type(callee))

    def callee_constructor(self, e: Call, callee: Constructor) -> FuncType:
        return self.instantiate(self.constructor_type(callee))

    def callee_var(self, e: Call, callee: Var) -> FuncType:
        f = self.poly_lets.get(callee)
        if f is not None:
            return self.instantiate(self.u.resolve(self.terms[f]))
        return self.callee_default(e, callee)

    def callee_default(self, e: Call, callee: Expr) -> FuncType:
        ct = self.u.find(self.terms[callee])
        if isinstance(ct, IncompleteType):
            ft = FuncType(tuple(IncompleteType() for _ in e.args), IncompleteType())
            self.unify(e, ct, ft)
            return ft
        if isinstance(ct, FuncType):
            return self.instantiate(ct)
        raise self.error(e, f"calling a value of type {self.u.resolve(ct)}, not a function")

    def _op_call(self, e: Call, op: Op, arg_terms: list[Type]) -> Type:
        opdef = op.opdef
        try:
            opdef.check_arity(len(arg_terms))
        except OpTypeError as err:
            raise self.error(e, str(err)) from None
        if opdef.type_identity:  # on_device, device_copy: of any type
            return arg_terms[0]
        out = IncompleteType()

        def solve() -> bool:
            args = [self.u.resolve(a) for a in arg_terms]
            if not all(is_concrete(a) for a in args):
                return False
            try:
                res = opdef.type_rel(args, e.attrs)
            except OpTypeError as err:
                sig = ", ".join(str(a) for a in args)
                raise self.error(e, f"{opdef.name}({sig}): {err}") from None
            except RelayTypeError:
                raise
            except Exception as err:  # a relation that crashed is a bug, but say where
                sig = ", ".join(str(a) for a in args)
                raise self.error(
                    e, f"{opdef.name}({sig}): type relation failed: {type(err).__name__}: {err}"
                ) from None
            self.unify(e, out, res, f"result of {opdef.name}")
            return True

        if not solve():
            self.pending.append(_Pending(e, solve))
        return out

    def visit_tuple_getitem(self, e: TupleGetItem) -> Type:
        out = IncompleteType()
        src = self.terms[e.tuple_value]

        def solve() -> bool:
            t = self.u.find(src)
            if isinstance(t, IncompleteType):
                return False
            if not isinstance(t, TupleType):
                raise self.error(e, f"indexing .{e.index} into a non-tuple of type {t}")
            if not 0 <= e.index < len(t.fields):
                raise self.error(e, f"index {e.index} out of range for a {len(t.fields)}-tuple")
            self.unify(e, out, t.fields[e.index])
            return True

        if not solve():
            self.pending.append(_Pending(e, solve))
        return out

    def _pattern(self, node: Expr, p: Pattern, t: Type) -> None:
        stack = [(p, t)]
        while stack:
            q, ty = stack.pop()
            if isinstance(q, PatternVar):
                self.unify(node, self.terms[q.var], ty, f"pattern %{q.var.name_hint}")
            elif isinstance(q, PatternConstructor):
                ft = self.instantiate(self.constructor_type(q.constructor))
                self.unify(node, ft.ret_type, ty, f"pattern {q.constructor.name}")
                if len(q.patterns) != len(ft.arg_types):
                    raise self.error(
                        node,
                        f"constructor {q.constructor.name} takes {len(ft.arg_types)} "
                        f"fields, pattern has {len(q.patterns)}",
                    )
                stack.extend(zip(q.patterns, ft.arg_types))
            elif isinstance(q, PatternTuple):
                fs = tuple(IncompleteType() for _ in q.patterns)
                self.unify(node, TupleType(fs), ty, "tuple pattern")
                stack.extend(zip(q.patterns, fs))

    def visit_match(self, e: Match) -> Type:
        data = self.terms[e.data]
        out: Type = IncompleteType()
        for c in e.clauses:
            self._pattern(e, c.lhs, data)
            out = self.unify(c.rhs, out, self.terms[c.rhs], "match clauses")
        return out

    # -- solving -------------------------------------------------------------------------------
    def solve_pending(self, final: bool = False) -> None:
        while self.pending:
            progress = False
            rest = []
            for p in self.pending:
                if p.solve():
                    progress = True
                else:
                    rest.append(p)
            self.pending = rest
            if not progress:
                break
        if final and self.pending:
            p = self.pending[0]
            what = p.node.op.name if isinstance(p.node, Call) else type(p.node).__name__
            raise self.error(
                p.node,
                f"cannot infer the input types of {what}: annotate the function's parameters",
            )

    def write_back(self, root: Expr) -> None:
        for node in post_order(root, self.children):
            term = self.terms.get(node)
            if term is None:
                continue
            t = self.u.resolve(term)
            if not is_concrete(t) and _has_incomplete(t):
                raise self.error(node, "could not infer a type here: add a type annotation")
            node._set_type(t)


_CALLEE = method_table(TypeInferencer, "callee_")


def _has_incomplete(t: Type) -> bool:
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, IncompleteType):
            return True
        if isinstance(x, TupleType):
            stack.extend(x.fields)
        elif isinstance(x, FuncType):
            stack.extend(x.arg_types)
            stack.append(x.ret_type)
        elif isinstance(x, RefType):
            stack.append(x.value)
        elif isinstance(x, TypeCall):
            stack.extend(x.args)
    return False


def _globals_used(f: Function) -> set[GlobalVar]:
    return {n for n in post_order(f, children) if type(n) is GlobalVar}


def is_concrete_annotation(f: Function) -> bool:
    return f.ret_type is not None and all(p.type_annotation is not None for p in f.params)


def infer_type(mod: IRModule) -> IRModule:
    """Typecheck every function of `mod`; every node gets its `checked_type`. Returns `mod`.

    >>> mod = relay_core.parse('def @main(%x: Tensor[(2), float32]) { add(%x, %x) }')
    >>> relay_core.infer_type(mod)["main"].checked_type
    FuncType(...)
    """
    inf = TypeInferencer(mod)
    inf.infer_module()
    for gv, t in inf.global_types.items():
        gv_obj = next(g for g in mod.functions if g == gv)
        gv_obj._set_type(t)
    return mod


def infer_expr(expr: Expr, mod: IRModule | None = None) -> Type:
    """Type a standalone expression, reusing types already on its nodes (incremental).

    Free variables must be annotated. Used by converters to learn the type of what they built.
    """
    inf = TypeInferencer(mod, reuse_types=True)
    t = inf.visit(expr)
    inf.solve_pending(final=True)
    inf.write_back(expr)
    return inf.u.resolve(t) if not expr.has_type else expr.checked_type


def ensure_typed(mod: IRModule) -> IRModule:
    """Run type inference unless every function already carries its type."""
    if all(f.has_type and f.body.has_type for f in mod.functions.values()):
        return mod
    return infer_type(mod)


def type_bytes(t: Type | None) -> int | None:
    """Bytes a value of type `t` occupies, or None if a dimension is unknown."""
    if isinstance(t, TensorType):
        n = 1
        for d in t.shape:
            if not isinstance(d, int):
                return None
            n *= d
        return n * (8 if t.dtype == "string" else _dt.itemsize(t.dtype))
    if isinstance(t, TupleType):
        total = 0
        for f in t.fields:
            b = type_bytes(f)
            if b is None:
                return None
            total += b
        return total
    return None


__all__ = [
    "infer_type",
    "infer_expr",
    "TypeInferencer",
    "constructor_type",
    "TypeVar",
    "ensure_typed",
    "type_bytes",
]
