"""FuseOps: group operators into fused kernels, as TVM does, by post-dominator analysis.

For each scope (a function body, an If branch, a match clause) the dataflow graph of its calls
is built with one node per expression and edges labelled by fusion pattern. A node can fuse
into its immediate post-dominator when every path between them satisfies the pattern rule:

- phase 0: an OUT_EWISE_FUSABLE anchor (conv2d, dense, matmul) absorbs the elementwise /
  broadcast ops after it;
- phase 0 and 1: elementwise / broadcast ops fuse forward into injective ops, reductions and
  anchors; phase 1: injective ops fuse forward into injective consumers;
- phase 2: injective ops fuse into the tuple that consumes them;
- phase 3 (`fuse_reductions`, the compiled backend's choice; TVM stops at phase 2): a reduction
  fuses forward into the elementwise / broadcast group that post-dominates it, and an
  elementwise group joins such a group when every path to it already runs through it. A layer
  normalisation (mean, subtract, mean of squares, rsqrt, scale) becomes one group, whose
  schedule computes both statistics inside the loop over rows, instead of four kernels.

Each group becomes a call of `fn (...) { ... }` with attribute `Primitive=1` whose parameters are
the group's inputs; constants stay inside. Groups are capped at `max_depth` operators.

    %0 = fn (%p0, %p1, Primitive=1) { nn.relu(add(nn.conv2d(%p0, %p1), 1f)) };
    %0(%x, meta[Constant][0])
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Match,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.module import IRModule
from ..ir.types import TensorType, TupleType
from ..ir.visitor import ExprFunctor, children, post_order, with_children
from ..ops.factories import reduce_axes
from ..ops.registry import OpPattern
from .manager import Pass, PassContext, register_pass

ELEMWISE = OpPattern.ELEMWISE
BROADCAST = OpPattern.BROADCAST
INJECTIVE = OpPattern.INJECTIVE
COMM_REDUCE = OpPattern.COMM_REDUCE
OUT_EWISE_FUSABLE = OpPattern.OUT_EWISE_FUSABLE
TUPLE = OpPattern.TUPLE
OPAQUE = OpPattern.OPAQUE


def _is_tensor_type(t) -> bool:
    return isinstance(t, TensorType)


def _tuple_of_tensors(t) -> bool:
    return isinstance(t, TupleType) and all(isinstance(f, TensorType) for f in t.fields)


# Per node kind: the children in the same dataflow scope (If branches, clause bodies and
# nested function bodies are separate scopes), and the nested scopes themselves.
_SCOPE_CHILDREN = {
    If: lambda e: (e.cond,),
    Match: lambda e: (e.data,),
    Function: lambda e: (),
}
_NESTED_SCOPES = {
    If: lambda e: (e.true_branch, e.false_branch),
    Match: lambda e: tuple(c.rhs for c in e.clauses),
    Function: lambda e: () if e.attr("Primitive") else (e.body,),
}


def scope_children(e: Expr) -> tuple:
    """Children in the same dataflow scope."""
    return _SCOPE_CHILDREN.get(type(e), children)(e)


def _no_scopes(e: Expr) -> tuple:
    return ()


def nested_scopes(e: Expr) -> tuple:
    return _NESTED_SCOPES.get(type(e), _no_scopes)(e)


class _Node:
    __slots__ = ("ref", "index", "pattern", "extern_ref", "outputs")

    def __init__(self, ref, index):
        self.ref = ref
        self.index = index
        self.pattern = OPAQUE
        self.extern_ref = False
        self.outputs: list[tuple[_Node, OpPattern]] = []


def _call_pattern(call: Call) -> OpPattern:
    if not isinstance(call.op, Op):
        return OPAQUE
    od = call.op.opdef
    if od.data_dependent_shape or od.stateful:
        return OPAQUE
    return od.pattern


def build_graph(root: Expr, shared: frozenset = frozenset()) -> list[_Node]:
    """The indexed forward graph of one scope, in post-DFS order (producers first).

    Nodes in `shared` (reachable from several scopes) are kept unfused."""
    order = post_order(root, scope_children)
    nodes: dict[int, _Node] = {}
    graph = []
    for i, e in enumerate(order):
        n = _Node(e, i)
        nodes[id(e)] = n
        graph.append(n)

    edges = _Edges(nodes)
    for n in graph:
        edges.dispatch(n.ref, n)
    nodes[id(root)].extern_ref = True
    for n in graph:
        if id(n.ref) in shared:
            n.extern_ref = True
    return graph


class _Edges(ExprFunctor):
    """`visit_<kind>(e, n)`: the pattern of graph node `n` (for `e`) and its input edges."""

    def __init__(self, nodes: dict):
        self.nodes = nodes

    def update(self, arg, consumer: _Node | None, pattern) -> None:
        n = self.nodes.get(id(arg))
        if n is None:
            return
        if consumer is None:
            n.extern_ref = True
        else:
            n.outputs.append((consumer, pattern))

    def visit_call(self, e: Call, n: _Node) -> None:
        update = self.update
        pat = _call_pattern(e)
        n.pattern = pat
        if not isinstance(e.op, Op):
            update(e.op, None, OPAQUE)
        rtype = e.checked_type if e.has_type else None
        for a in e.args:
            atype = a.checked_type if a.has_type else None
            edge = pat
            if (
                pat == BROADCAST
                and _is_tensor_type(atype)
                and _is_tensor_type(rtype)
                and atype.shape == rtype.shape
            ):
                edge = ELEMWISE
            if pat == OPAQUE or not (_is_tensor_type(atype) or _tuple_of_tensors(atype)):
                update(a, None, OPAQUE)
            else:
                update(a, n, edge)

    def visit_tuple(self, e: Tuple, n: _Node) -> None:
        n.pattern = TUPLE
        for f in e.fields:
            if f.has_type and _is_tensor_type(f.checked_type):
                self.update(f, n, INJECTIVE)
            else:
                self.update(f, None, OPAQUE)

    def visit_tuple_getitem(self, e: TupleGetItem, n: _Node) -> None:
        tt = e.tuple_value.checked_type if e.tuple_value.has_type else None
        if _tuple_of_tensors(tt):
            n.pattern = INJECTIVE
            self.update(e.tuple_value, n, INJECTIVE)
        else:
            self.update(e.tuple_value, None, OPAQUE)

    def visit_default(self, e: Expr, n: _Node) -> None:  # opaque (constants too)
        n.pattern = OPAQUE
        for c in scope_children(e):
            self.update(c, None, OPAQUE)

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = visit_default
    visit_let = visit_function = visit_if = visit_match = visit_default
    visit_ref_create = visit_ref_read = visit_ref_write = visit_default


class _TreeNode:
    __slots__ = ("gnode", "parent", "depth", "pattern")

    def __init__(self, gnode):
        self.gnode = gnode
        self.parent = None
        self.depth = 1
        self.pattern = OPAQUE


def _lca(a, b, pattern):
    while a is not b:
        if a is None or b is None:
            return None, pattern
        if a.depth < b.depth:
            pattern = max(pattern, b.pattern)
            b = b.parent
        elif b.depth < a.depth:
            pattern = max(pattern, a.pattern)
            a = a.parent
        else:
            pattern = max(pattern, a.pattern, b.pattern)
            a, b = a.parent, b.parent
    return a, pattern


def post_dominator_tree(graph: list[_Node]) -> list[_TreeNode]:
    tree: list = [None] * len(graph)
    for i in range(len(graph) - 1, -1, -1):
        g = graph[i]
        tn = _TreeNode(g)
        if g.extern_ref or not g.outputs:
            tn.parent, tn.depth, tn.pattern = None, 1, OPAQUE
        else:
            pattern = ELEMWISE
            parent = None
            first = True
            for out, edge in g.outputs:
                pattern = max(pattern, edge)
                cand = tree[out.index]
                if first:
                    parent, first = cand, False
                else:
                    parent, pattern = _lca(parent, cand, pattern)
            tn.parent = parent
            tn.depth = parent.depth + 1 if parent is not None else 1
            tn.pattern = pattern
        tree[i] = tn
    return tree


class _Group:
    __slots__ = ("parent", "pattern", "root", "anchor", "num_nodes")

    def __init__(self, pattern, root):
        self.parent = None
        self.pattern = pattern
        self.root = root
        self.anchor = root if pattern == OUT_EWISE_FUSABLE else None
        self.num_nodes = 1

    def find_root(self):
        g = self
        while g.parent is not None:
            g = g.parent
        # path compression
        h = self
        while h.parent is not None and h.parent is not g:
            h.parent, h = g, h.parent
        return g


class _Partitioner:
    def __init__(self, graph, max_depth: int):
        self.graph = graph
        self.max_depth = max_depth
        self.groups = [_Group(n.pattern, n.ref) for n in graph]

    def _walk(self, src: _Node, sink: _Node, limit: int | None = None):
        """Nodes on paths from src's outputs up to sink (inclusive), each once; None as soon as
        there are more than `limit` of them."""
        seen: set[int] = set()
        out: list = []
        stack = []
        for o, _ in src.outputs:
            if o.index not in seen:
                seen.add(o.index)
                stack.append(o)
        limit = len(self.graph) if limit is None else limit
        while stack:
            n = stack.pop()
            out.append(n)
            if len(out) > limit:
                return None
            if n is not sink:
                for o, _ in n.outputs:
                    if o.index not in seen:
                        seen.add(o.index)
                        stack.append(o)
        return out

    def check_path(self, src, sink, fcond) -> bool:
        for n in self._walk(src, sink):
            g = self.groups[n.index].find_root()
            if not fcond(g.pattern, n is sink):
                return False
        return True

    def commit_fuse(self, src, sink) -> None:
        target = self.groups[sink.index]
        self._merge(self.groups[src.index], target)
        for n in self._walk(src, sink):
            self._merge(self.groups[n.index], target)

    def _merge(self, child, parent):
        child, parent = child.find_root(), parent.find_root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchor is not None:
            parent.anchor = child.anchor
            parent.pattern = max(child.pattern, parent.pattern)

    def count_fused(self, src, sink) -> int:
        # Every node belongs to one group, so the walk's length bounds the count from below: a
        # walk longer than max_depth is over the limit (and stopping it keeps fusion linear when
        # the post-dominator is far away, as in a chain where each node feeds the next two).
        walk = self._walk(src, sink, self.max_depth)
        if walk is None:
            return self.max_depth + 1
        roots = {id(self.groups[src.index].find_root()): self.groups[src.index].find_root()}
        for n in walk:
            g = self.groups[n.index].find_root()
            roots[id(g)] = g
        return sum(g.num_nodes for g in roots.values())

    def fuse_reductions(self, tree) -> bool:
        """Phase 3 (see the module docstring); whether anything fused."""
        changed = False
        for nid, gnode in enumerate(self.graph):
            dom = tree[nid]
            g = self.groups[nid].find_root()
            if dom.parent is None or g.root is not gnode.ref:
                continue  # only a group's output node carries the group forward
            sink = dom.parent.gnode
            target = self.groups[sink.index].find_root()
            if target is g or target.pattern > BROADCAST or target.anchor is not None:
                continue
            if g.pattern != COMM_REDUCE and g.pattern > BROADCAST:
                continue
            if g.pattern == COMM_REDUCE and not _over_trailing_axes(gnode.ref):
                continue
            walk = self._walk(gnode, sink, self.max_depth)
            if walk is None:
                continue
            # nodes outside the target join it: only elementwise / broadcast ones may
            inside = [self.groups[n.index].find_root() is target for n in walk]
            if any(not k and n.pattern > BROADCAST for n, k in zip(walk, inside)):
                continue
            # an elementwise group joins only across a reduction the target holds (else
            # phases 0-1 would have fused it, or refused for another reason)
            if g.pattern != COMM_REDUCE and not any(
                k and n.pattern == COMM_REDUCE for n, k in zip(walk, inside)
            ):
                continue
            if self.count_fused(gnode, sink) > self.max_depth:
                continue
            self.commit_fuse(gnode, sink)
            changed = True
        return changed

    def run(self, tree, phase: int) -> None:
        for nid, gnode in enumerate(self.graph):
            dom = tree[nid]
            grp = self.groups[nid]
            if grp.pattern == OPAQUE or dom.parent is None:
                continue
            sink = dom.parent.gnode
            dom_group = self.groups[sink.index]
            if self.count_fused(gnode, sink) > self.max_depth:
                continue
            if phase == 2:
                if grp.pattern > INJECTIVE:
                    continue
                root_group = dom_group.find_root()
                if root_group.pattern == TUPLE:
                    continue
                if dom_group.pattern == TUPLE and root_group.pattern <= INJECTIVE:
                    if self.check_path(gnode, sink, lambda k, s: k <= INJECTIVE):
                        self.commit_fuse(gnode, sink)
                continue
            if grp.find_root() is dom_group.find_root():
                continue
            if dom_group.pattern == TUPLE:
                continue
            if grp.pattern == OUT_EWISE_FUSABLE:
                if phase != 0:
                    continue
                if dom.pattern == ELEMWISE:
                    if self.check_path(gnode, sink, lambda k, s: k <= BROADCAST):
                        self.commit_fuse(gnode, sink)
            elif grp.pattern <= BROADCAST:
                if dom.pattern <= INJECTIVE or dom.pattern == COMM_REDUCE:

                    def fcond(k, is_sink):
                        if not is_sink:
                            return k <= INJECTIVE
                        return k <= INJECTIVE or k in (COMM_REDUCE, OUT_EWISE_FUSABLE)

                    if self.check_path(gnode, sink, fcond):
                        self.commit_fuse(gnode, sink)
            elif grp.pattern in (INJECTIVE, TUPLE):
                if phase != 1:
                    continue
                if self.check_path(gnode, sink, lambda k, s: k <= INJECTIVE):
                    self.commit_fuse(gnode, sink)


def _over_trailing_axes(e: Expr) -> bool:
    """A reduction over the last axes of its input (a row statistic: its readers read it at
    their leading indices, so the schedule computes it inside their loop over rows). Others (a
    channel mean of NCHW data) stay apart: their readers would recompute what depends on them
    per element."""
    if type(e) is not Call or not hasattr(e.attrs, "axis") or not e.args:
        return False
    t = e.args[0].checked_type if e.args[0].has_type else None
    if not _is_tensor_type(t):
        return False
    axes = sorted(set(reduce_axes(t, e.attrs)))
    return axes == list(range(t.ndim - len(axes), t.ndim))


# What a group's function may hold, per node kind: operator calls, tuples and projections.
_GROUPABLE = {
    Call: lambda e: type(e.op) is Op,
    Tuple: lambda e: True,
    TupleGetItem: lambda e: True,
}


def partition(
    root: Expr,
    fuse_opt_level: int = 2,
    max_depth: int = 256,
    shared: frozenset = frozenset(),
    fuse_reductions: bool = False,
) -> dict:
    """id(expr) -> group root expr, for the fusible nodes of one scope."""
    graph = build_graph(root, shared)
    part = _Partitioner(graph, max_depth)
    if fuse_opt_level > 0:
        tree = post_dominator_tree(graph)
        for phase in range(3):
            part.run(tree, phase)
        if fuse_reductions:
            for _ in range(4):  # a group joins once the groups between have fused
                if not part.fuse_reductions(tree):
                    break
    out = {}
    for n, g in zip(graph, part.groups):
        e = n.ref
        f = _GROUPABLE.get(type(e))
        if f is not None and f(e):
            out[id(e)] = g.find_root().root
    return out


def fuse_function_body(
    body: Expr, fuse_opt_level: int = 2, max_depth: int = 256, fuse_reductions: bool = False
) -> Expr:
    """`body` with every group replaced by a call of a Primitive function."""
    # Partition every scope (iteratively: scopes nested in If / Match / closures).
    group_of: dict[int, Expr] = {}
    scopes, todo = [], [body]
    seen_in: dict[int, int] = {}
    while todo:
        s = todo.pop()
        scopes.append(s)
        for e in post_order(s, scope_children):
            seen_in[id(e)] = seen_in.get(id(e), 0) + 1
            todo.extend(nested_scopes(e))
    shared = frozenset(k for k, v in seen_in.items() if v > 1)
    for s in scopes:
        group_of.update(partition(s, fuse_opt_level, max_depth, shared, fuse_reductions))
    members: dict[int, list] = {}
    for e in post_order(body, _all_children):
        r = group_of.get(id(e))
        if r is not None:
            members.setdefault(id(r), []).append(e)
    memo: dict[int, Expr] = {}
    for e in post_order(body, _all_children):
        r = group_of.get(id(e))
        if r is not None and r is not e:
            continue  # built inside its group's function
        if r is e and any(type(m) is Call and isinstance(m.op, Op) for m in members[id(e)]):
            memo[id(e)] = _make_group(members[id(e)], e, memo)
            continue
        kids = _all_children(e)
        new = with_children(e, tuple(memo.get(id(c), c) for c in kids)) if kids else e
        memo[id(e)] = new
    return memo[id(body)]


def _all_children(e: Expr) -> tuple:
    if type(e) is Function and e.attr("Primitive"):
        return ()
    return children(e)


def _make_group(nodes: list, root: Expr, memo: dict) -> Call:
    inside = {id(n) for n in nodes}
    params: list[Var] = []
    args: list[Expr] = []
    param_of: dict[int, Var] = {}
    new: dict[int, Expr] = {}

    def arg_for(a: Expr) -> Expr:
        if id(a) in inside:
            return new[id(a)]
        if type(a) is Constant:
            return a
        p = param_of.get(id(a))
        if p is None:
            p = Var(f"p{len(params)}", a.checked_type)
            param_of[id(a)] = p
            params.append(p)
            args.append(memo.get(id(a), a))
        return p

    for n in nodes:  # calls of operators, tuples and projections: operands become params
        if type(n) is Call:
            new[id(n)] = with_children(n, (n.op, *(arg_for(a) for a in n.args)))
        else:
            new[id(n)] = with_children(n, tuple(arg_for(c) for c in children(n)))
    fn = Function(tuple(params), new[id(root)], None, (), {"Primitive": 1})
    return Call(fn, tuple(args), span=root.span)


@register_pass
@dataclass
class FuseOps(Pass):
    """Fuse operators into Primitive functions (TVM's FuseOps).

    fuse_opt_level: 0 puts every operator in its own group; max_depth caps a group's size;
    fuse_reductions adds phase 3 (reductions fuse into their elementwise consumers).
    """

    fuse_opt_level: int = -1  # -1: follow the pass context's opt_level
    max_depth: int = 256
    fuse_reductions: bool = False

    opt_level = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        from ..typing import infer_type

        level = self.fuse_opt_level if self.fuse_opt_level >= 0 else ctx.opt_level
        mod = infer_type(mod)
        funcs = {}
        for gv, f in mod.functions.items():
            if f.attr("Primitive"):
                funcs[gv] = f
                continue
            body = fuse_function_body(f.body, level, self.max_depth, self.fuse_reductions)
            funcs[gv] = (
                f
                if body is f.body
                else Function(f.params, body, f.ret_type, f.type_params, f.attrs, span=f.span)
            )
        return infer_type(mod.with_functions(funcs))
