"""The graph driver: walks a frozen GraphDef (and the library functions its control flow calls)
and calls one converter per node. Converters never walk the graph themselves.

Every node of the main graph and of each function body is visited once, in topological order
computed with an explicit stack. Functions are converted when a While / If / call node needs them:
While becomes a recursive global function, If a Relay `If`, PartitionedCall a global function.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from relay_core.errors import RelayError
from relay_core.ir import (
    Any,
    Expr,
    Function,
    IRModule,
    ShapeVar,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
)
from relay_core.typing import infer_expr

from ..common import ConversionError, ConvertContext, check_supported, sanitize_name
from . import static
from .safety import refuse
from .table import TF, Unsupported, decode_attr

# Ops the driver handles itself.
_DRIVER_OPS = frozenset({"Placeholder", "NoOp"})


class TFContext(ConvertContext):
    """The conversion context handed to TF converters: expression building with spans, types,
    static values of shape tensors, attributes of the current node, and the driver."""

    def __init__(self, driver: GraphDriver):
        super().__init__("tensorflow")
        self.driver = driver
        self.node = None  # the NodeDef being converted
        self.memo: dict = {}

    def type_of(self, e: Expr):
        try:
            return infer_expr(e, self.driver.mod)
        except RelayError as err:
            raise ConversionError(self._where() + str(err)) from None

    def value(self, e: Expr):
        """The static value of `e` as a numpy array, or None (see static.py)."""
        return static.static_value(self, e)

    def partial(self, e: Expr):
        """Elements of a small integer tensor, None where unknown (see static.py)."""
        return static.partial_value(self, e)

    def require_value(self, e: Expr, what: str):
        v = self.value(e)
        if v is None:
            raise self.error(
                f"{what} must be known before run time (a constant or computable "
                "from static shapes)"
            )
        return v

    def attr(self, name: str, default=None):
        if self.node is None or name not in self.node.attr:
            return default
        return decode_attr(self.node.attr[name])

    @property
    def num_outputs(self) -> int:
        return self.driver.num_outputs(self.node)


class FunctionGraph:
    """A FunctionDef as a GraphDef: its argument placeholders and its output tensor names."""

    def __init__(self, fdef):
        from tensorflow.python.framework.function_def_to_graph import function_def_to_graph_def

        try:
            gd, names = function_def_to_graph_def(fdef)
        except Exception as e:
            raise ConversionError(f"cannot read TF function {fdef.signature.name}: {e}") from None
        self.name = fdef.signature.name
        self.nodes = list(gd.node)
        self.args = [a.name for a in fdef.signature.input_arg]
        self.outputs = [names[fdef.ret[a.name]] for a in fdef.signature.output_arg]
        self.by_name = {n.name: n for n in self.nodes}


class GraphDriver:
    """Converts one frozen graph with its function library into an IRModule."""

    def __init__(self, graph_def, custom_convert_map: dict | None = None):
        self.graph_def = graph_def
        self.library = {f.signature.name: f for f in graph_def.library.function}
        self.custom = dict(custom_convert_map or {})
        self.mod = IRModule()
        self.ctx = TFContext(self)
        self._fgraphs: dict[str, FunctionGraph] = {}
        self._sig_cache: dict[Callable, tuple] = {}
        self._names: set[str] = set()
        self.depth = 0  # nesting of function bodies being converted
        # main-graph nodes in topological order: (name, op, input tensors, output tensors)
        self.source_nodes: list[tuple] = []

    # -- checks before converting --------------------------------------------------------------
    def check(self, nodes) -> None:
        """Refuse denied ops anywhere in the graph and its library; then list every op without
        a converter among the nodes the outputs need (in the graph and in the functions those
        nodes call, transitively)."""
        everything = {n.op for n in self.graph_def.node}
        for f in self.library.values():
            everything.update(n.op for n in f.node_def)
        refuse(everything, "the TensorFlow graph")
        ops: dict[str, tuple[str, int]] = {}
        stack = [("", list(nodes))]
        seen_funcs: set[str] = set()
        while stack:
            where, ns = stack.pop()
            for n in ns:
                first, count = ops.get(n.op, (where + n.name, 0))
                ops[n.op] = (first, count + 1)
                for f in _func_refs(n):
                    if f in self.library and f not in seen_funcs:
                        seen_funcs.add(f)
                        stack.append((f + "/", _function_needed(self.library[f])))

        def supported(op):
            return op in _DRIVER_OPS or op in self.custom or op in TF

        entries = [
            (op, f"({count} node{'s' if count > 1 else ''}, e.g. {first})")
            for op, (first, count) in ops.items()
            if not supported(op)
        ]
        check_supported(
            "TensorFlow",
            entries,
            lambda e: False,
            "Pass custom_convert_map={'OpType': fn(ctx, *inputs, **attrs)} to convert them.",
        )

    # -- main graph ------------------------------------------------------------------------------
    def convert_main(self, frozen) -> IRModule:
        nodes = list(self.graph_def.node)
        by_name = {n.name: n for n in nodes}
        needed = _needed(by_name, [o.split(":")[0] for o in frozen.outputs])
        self.check([by_name[n] for n in needed])
        params, bindings = [], {}
        used = [i for i in frozen.inputs if i.node in needed]
        for inp in used:
            if inp.shape is None:
                raise ConversionError(
                    f"input {inp.name!r} has an unknown rank: give its shape in input_signature"
                )
            shape = _named_dims(inp, frozen.shared_batch or len(used) == 1)
            v = Var(self.unique(sanitize_name(inp.name)), TensorType(shape, inp.dtype))
            params.append(v)
            bindings[inp.node] = [v]
        outs = self.run(by_name, bindings, frozen.outputs, record=True)
        body = outs[0] if len(outs) == 1 else Tuple(tuple(outs))
        self.mod["main"] = Function(tuple(params), body)
        self.mod.attrs["input_names"] = [i.name for i in frozen.inputs if i.node in needed]
        self.mod.attrs["output_names"] = list(frozen.output_names)
        return self.mod

    # -- one graph ---------------------------------------------------------------------------------
    def run(self, by_name: dict, bindings: dict, outputs: list[str], record: bool = False):
        """Convert the nodes `outputs` depend on; `bindings` gives the values of placeholders
        (node name -> list of Exprs). Returns the output Exprs."""
        values: dict[str, list] = dict(bindings)
        order = _topo_order(by_name, [o.split(":")[0] for o in outputs])
        ctx = self.ctx
        for name in order:
            if name in values:
                continue
            node = by_name[name]
            if node.op == "Placeholder":
                raise ConversionError(
                    f"placeholder {name!r} has no value: it is not an input of the graph"
                )
            ins = [self._lookup(values, i, node) for i in node.input if not i.startswith("^")]
            saved = (ctx.node, ctx.node_name, ctx.node_op)
            ctx.node = node
            ctx.at(node.name, node.op)
            try:
                out = self._convert_node(node, ins)
            finally:
                ctx.node, ctx.node_name, ctx.node_op = saved
            values[name] = out
            if record:
                names = []
                for i, e in enumerate(out):
                    if isinstance(e, Expr):
                        ctx.source_outputs[f"{name}:{i}"] = e
                        names.append(f"{name}:{i}")
                data_in = [i if ":" in i else i + ":0" for i in node.input if not i.startswith("^")]
                self.source_nodes.append((name, node.op, data_in, names))
        return [self._lookup(values, o, None) for o in outputs]

    def _lookup(self, values, tensor: str, node):
        name, _, idx = tensor.partition(":")
        outs = values.get(name)
        if outs is None:
            raise ConversionError(f"tensor {tensor} is used before it is defined")
        i = int(idx) if idx else 0
        if i >= len(outs) or outs[i] is None:
            who = f" (input of {node.name})" if node is not None else ""
            raise ConversionError(
                f"tensor {tensor}{who} does not exist: {name} has {len(outs)} output(s)"
            )
        return outs[i]

    def _convert_node(self, node, ins: list) -> list:
        if node.op == "NoOp":
            return []
        fn = self.custom.get(node.op) or TF.lookup(node.op)
        if fn is None:
            raise ConversionError(f"no converter for TF op {node.op} (node {node.name})")
        try:
            kw = self._attrs_for(fn, node, len(ins))
            out = fn(self.ctx, *ins, **kw)
        except (ConversionError, RelayError):
            raise
        except Unsupported as e:
            raise self.ctx.error(str(e)) from None
        if out is None:
            return []
        if isinstance(out, Expr) and not isinstance(out, Tuple):
            n = self.num_outputs(node)
            if n > 1:  # a Relay tuple-valued call for a multi-output op
                return [TupleGetItem(out, i, span=self.ctx.span) for i in range(n)]
            return [out]
        if isinstance(out, Tuple):
            return list(out.fields)
        if isinstance(out, (list, tuple)):
            return list(out)
        return [out]  # a value that is not an expression (a PendingList)

    def _attrs_for(self, fn, node, n_inputs: int) -> dict:
        sig = self._sig_cache.get(fn)
        if sig is None:
            params = list(inspect.signature(fn).parameters.values())
            positional = [
                p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
            var_kw = any(p.kind == p.VAR_KEYWORD for p in params)
            sig = self._sig_cache[fn] = (positional, names, var_kw)
        positional, names, var_kw = sig
        taken = set(positional[: 1 + n_inputs])
        kw = {}
        for k, v in node.attr.items():
            if k.startswith("_") or k in taken:
                continue
            if k in names or var_kw:
                kw[k] = decode_attr(v)
        return kw

    def num_outputs(self, node) -> int:
        """How many outputs a node has, from its OpDef and attributes."""
        from tensorflow.python.framework import op_def_registry

        opdef = op_def_registry.get(node.op)
        if opdef is None:
            return 1
        n = 0
        for arg in opdef.output_arg:
            if arg.number_attr:
                n += node.attr[arg.number_attr].i
            elif arg.type_list_attr:
                n += len(node.attr[arg.type_list_attr].list.type)
            else:
                n += 1
        return n

    # -- functions -------------------------------------------------------------------------------
    def function_graph(self, fname: str) -> FunctionGraph:
        g = self._fgraphs.get(fname)
        if g is None:
            fdef = self.library.get(fname)
            if fdef is None:
                raise self.ctx.error(
                    f"the graph calls function {fname!r}, which is not in its library"
                )
            g = self._fgraphs[fname] = FunctionGraph(fdef)
        return g

    def inline(self, fname: str, args: list) -> list:
        """The outputs of function `fname` applied to `args`, built in place."""
        g = self.function_graph(fname)
        if len(args) != len(g.args):
            raise self.ctx.error(f"function {fname} takes {len(g.args)} arguments, got {len(args)}")
        if self.depth > 200:
            raise self.ctx.error("functions are nested more than 200 levels deep")
        self.depth += 1
        try:
            return self.run(g.by_name, {a: [v] for a, v in zip(g.args, args)}, g.outputs)
        finally:
            self.depth -= 1

    def unique(self, name: str) -> str:
        base, i = name, 1
        while name in self._names:
            name = f"{base}_{i}"
            i += 1
        self._names.add(name)
        return name


def _func_refs(node) -> list[str]:
    out = []
    for v in node.attr.values():
        kind = v.WhichOneof("value")
        if kind == "func":
            out.append(v.func.name)
        elif kind == "list":
            out.extend(f.name for f in v.list.func)
    return out


def _function_needed(fdef) -> list:
    """The nodes of a FunctionDef its outputs depend on through data inputs (FunctionDef inputs
    read "arg", "node:output_arg:index" or "^control")."""
    by_name = {n.name: n for n in fdef.node_def}
    stack = [v.split(":")[0] for v in fdef.ret.values()]
    seen: set[str] = set()
    while stack:
        name = stack.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        stack.extend(i.split(":")[0] for i in by_name[name].input if not i.startswith("^"))
    return [by_name[n] for n in seen]


def _data_inputs(node) -> list[str]:
    return [i.split(":")[0] for i in node.input if not i.startswith("^")]


def _needed(by_name: dict, roots: list[str]) -> set[str]:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        if n not in by_name:
            raise ConversionError(f"the graph has no node {n!r}")
        seen.add(n)
        stack.extend(i for i in _data_inputs(by_name[n]) if i not in seen)
    return seen


def _topo_order(by_name: dict, roots: list[str]) -> list[str]:
    """Nodes the roots depend on (through data inputs), each after its inputs; refuses cycles."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[tuple[str, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        name, expanded = stack.pop()
        if expanded:
            state[name] = 2
            order.append(name)
            continue
        st = state.get(name)
        if st == 2:
            continue
        if st == 1:
            raise ConversionError(f"the graph has a cycle through node {name!r}")
        if name not in by_name:
            raise ConversionError(f"the graph has no node {name!r}")
        state[name] = 1
        stack.append((name, True))
        for i in reversed(_data_inputs(by_name[name])):
            s = state.get(i)
            if s == 1:
                raise ConversionError(f"the graph has a cycle through node {i!r}")
            if s is None:
                stack.append((i, False))
    return order


def _named_dims(inp, shared_batch: bool) -> tuple:
    """An input's shape with its unknown dims named: axis 0 is `batch` (shared by all inputs of
    a Keras model or a single input), other axes `<input>_d<axis>`. Named dims are the same
    dimension wherever they flow, so a residual add of two tensors computed from the input is
    not a broadcast between two unknown batch sizes (whose kernels cannot fuse the add into
    the convolution producing one of them)."""
    base = sanitize_name(inp.name)
    out = []
    for axis, d in enumerate(inp.shape):
        if d is None or d is Any:
            name = "batch" if axis == 0 and shared_batch else f"{base}_d{axis}"
            d = ShapeVar(name)
        out.append(d)
    return tuple(out)
