"""Converting ONNX graphs: nodes in order, scopes for subgraphs, function bodies inlined.

One `GraphConverter` per model. Names are resolved through a chain of `Scope`s: an If branch sees
the enclosing graph directly; a Loop / Scan body becomes a Relay function, so a value it takes
from outside is *captured*: the body sees a fresh variable and the caller let-binds it to the
outer value (`captures`), which keeps every function closed over variables only.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from converters.common import ConversionError, sanitize_name
from relay_core.errors import RelayError, RelayTypeError, UnsupportedOpsError
from relay_core.ir import Constant, Expr, Let, TensorType, TupleType, Type, Var

from .context import OnnxContext
from .dtypes import relay_type, sparse_to_numpy, tensor_to_numpy, type_proto_of
from .table import DEFAULT_DOMAIN, SUPPORTED_OPSETS, lookup, norm_domain

# Ops whose result depends only on their input's type: folded when that type is static.
_SHAPE_OPS = frozenset({"Shape", "Size"})


def _cut_shape_args(e: Expr) -> Expr:
    """`e` with the data arguments of shape-only calls (shape_of, ndarray_size) replaced by
    variables of their types. Folding those calls needs only the types, and the graph below a
    Shape node is the whole model up to it: folding each Shape of a 2,000-node export (timm's
    Swin) walked and re-typed the model so far every time (13 s of a 14 s load)."""
    from relay_core.ir.expr import Call, Op
    from relay_core.ir.visitor import ExprMutator, children, post_order

    cuts: dict = {}

    def kids(n):
        if type(n) is Call and type(n.op) is Op and n.op.opdef.shape_only:
            rest = []
            for a in n.args:
                if type(a) is Constant or not a.has_type:
                    rest.append(a)
                elif a not in cuts:
                    cuts[a] = Var(f"shape_arg{len(cuts)}", a.checked_type)
            return rest
        return children(n)

    for _ in post_order(e, kids):
        pass
    if not cuts:
        return e
    m = ExprMutator()
    m.memo.update(cuts)
    return m.mutate(e)


class Scope:
    """ONNX tensor names -> Relay expressions, chained to the enclosing graph's scope."""

    def __init__(self, parent: Scope | None = None, boundary: bool = False, ctx=None):
        self.values: dict[str, Expr] = {}
        self.parent = parent
        self.boundary = boundary  # a function boundary: outer values are captured
        self.captures: list[tuple[Var, Expr]] = []
        self.ctx = ctx
        self.record = False  # the main graph's scope: its tensors form the source map

    def bind(self, name: str, e: Expr) -> None:
        self.values[name] = e

    def lookup(self, name: str) -> Expr | None:
        e = self.values.get(name)
        if e is not None or self.parent is None:
            return e
        outer = self.parent.lookup(name)
        if outer is None or not self.boundary or isinstance(outer, Constant):
            return outer
        v = Var(sanitize_name(name), self.ctx.type_of(outer))
        self.captures.append((v, outer))
        self.values[name] = v
        return v


def wrap_captures(captures: list[tuple[Var, Expr]], body: Expr) -> Expr:
    """`let %c1 = outer1; ...; body`: bind the values a function body captured."""
    for v, outer in reversed(captures):
        body = Let(v, outer, body, span=body.span)
    return body


@dataclass
class Resolved:
    kind: str  # "converter" | "function"
    fn: object = None  # the converter
    function: object = None  # a FunctionProto (model-local) or a callable making one (schema)
    schema: object = None


# ---------------------------------------------------------------------------------------------
# Attributes.

_ATTR_KINDS = {
    1: "f",
    2: "i",
    3: "s",
    4: "t",
    5: "g",
    11: "sparse_tensor",
    13: "tp",
    6: "floats",
    7: "ints",
    8: "strings",
    9: "tensors",
    10: "graphs",
    12: "sparse_tensors",
    14: "type_protos",
}


def attribute_value(a):
    """An AttributeProto as a Python value: numbers, str, numpy arrays, GraphProtos, lists."""
    kind = _ATTR_KINDS.get(a.type)
    if kind is None:
        raise ConversionError(f"attribute {a.name} has unknown type {a.type}")
    if kind == "f":
        return float(a.f)
    if kind == "i":
        return int(a.i)
    if kind == "s":
        return a.s.decode("utf-8", "replace")
    if kind == "t":
        return tensor_to_numpy(a.t)
    if kind == "g":
        return a.g
    if kind == "sparse_tensor":
        return sparse_to_numpy(a.sparse_tensor)
    if kind == "tp":
        return a.tp
    if kind == "floats":
        return [float(x) for x in a.floats]
    if kind == "ints":
        return [int(x) for x in a.ints]
    if kind == "strings":
        return [s.decode("utf-8", "replace") for s in a.strings]
    if kind == "tensors":
        return [tensor_to_numpy(t) for t in a.tensors]
    if kind == "graphs":
        return list(a.graphs)
    if kind == "sparse_tensors":
        return [sparse_to_numpy(t) for t in a.sparse_tensors]
    return list(a.type_protos)


@dataclass
class _Signature:
    max_inputs: int | None  # None: variadic
    min_inputs: int
    keywords: frozenset | None  # None: **kwargs


_SIGS: dict[object, _Signature] = {}


def _signature(fn) -> _Signature:
    s = _SIGS.get(fn)
    if s is None:
        params = list(inspect.signature(fn).parameters.values())[1:]  # skip ctx
        pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        var_pos = any(p.kind == p.VAR_POSITIONAL for p in params)
        var_kw = any(p.kind == p.VAR_KEYWORD for p in params)
        kws = frozenset(p.name for p in params if p.kind in (p.KEYWORD_ONLY,))
        s = _Signature(
            None if var_pos else len(pos),
            sum(1 for p in pos if p.default is p.empty),
            None if var_kw else kws,
        )
        _SIGS[fn] = s
    return s


def call_converter(fn, ctx: OnnxContext, inputs: list, attrs: dict):
    """Check the node against the converter's signature, then call it."""
    inputs = list(inputs)
    while inputs and inputs[-1] is None:
        inputs.pop()
    sig = _signature(fn)
    if sig.max_inputs is not None and len(inputs) > sig.max_inputs:
        raise ctx.error(f"takes at most {sig.max_inputs} inputs, got {len(inputs)}")
    if len(inputs) < sig.min_inputs or any(x is None for x in inputs[: sig.min_inputs]):
        raise ctx.error(f"needs {sig.min_inputs} inputs, got {len(inputs)}")
    if sig.keywords is not None:
        unknown = sorted(set(attrs) - sig.keywords)
        if unknown:
            raise ctx.error(f"unsupported attribute(s) {', '.join(unknown)}")
    return fn(ctx, *inputs, **attrs)


# ---------------------------------------------------------------------------------------------


class GraphConverter:
    """Converts one model's graphs. See `converters.onnx.from_onnx`."""

    def __init__(
        self,
        model,
        custom_convert_map: dict | None = None,
        shapes: dict | None = None,
        byte_budget: int | None = None,
    ):
        self.model = model
        self.byte_budget = byte_budget
        self.custom = dict(custom_convert_map or {})
        self.shapes = dict(shapes or {})
        self.opsets = {norm_domain(o.domain): int(o.version) for o in model.opset_import}
        self.local_functions = {(norm_domain(f.domain), f.name): f for f in model.functions}
        self.ctx = OnnxContext(self)
        self.ctx.opsets = self.opsets
        self.mod = None  # the IRModule being built (prelude ADTs are added on demand)
        self._schema_cache: dict = {}
        # results computed from tensor shapes only (Shape, then Gather / Concat / Mul ... of
        # it) that did not fold: folded again when a later node uses them, as the static dims
        # they pick may make them constants (see `_convert_nodes`)
        self._shape_derived: set = set()
        # sequences whose items are known at conversion time (id -> (list expr, items)):
        # SequenceAt of a constant position is then the item itself, with its own type
        self.known_seqs: dict = {}

    # -- resolution --------------------------------------------------------------------------
    def resolve(self, domain: str, op: str, opsets: dict[str, int]) -> Resolved | None:
        domain = norm_domain(domain)
        fn = self.custom.get((domain, op)) or self.custom.get(op)
        if fn is not None:
            return Resolved("converter", fn=fn)
        version = opsets.get(domain)
        if domain in SUPPORTED_OPSETS and version is not None:
            fn = lookup(domain, op, version)
            if fn is not None:
                return Resolved("converter", fn=fn)
        local = self.local_functions.get((domain, op))
        if local is not None:
            return Resolved("function", function=local)
        if version is not None:
            schema, has_fn = self._schema_function(domain, op, version)
            if has_fn:
                return Resolved("function", schema=schema)
        return None

    def _schema_function(self, domain: str, op: str, version: int):
        key = (domain, op, version)
        hit = self._schema_cache.get(key)
        if hit is None:
            import onnx.defs

            d = "" if domain == DEFAULT_DOMAIN else domain
            try:
                schema = onnx.defs.get_schema(op, version, d)
            except Exception:
                schema = None
            has = False
            if schema is not None:
                has = any(v <= version for v in schema.function_opset_versions) or any(
                    v <= version for v in schema.context_dependent_function_opset_versions
                )
            hit = self._schema_cache[key] = (schema, has)
        return hit

    def unsupported(self) -> list[tuple]:
        """Every (domain, op, opset) in the model (subgraphs and function bodies included)
        that no converter, local function or schema function body covers."""
        import onnx

        missing: list[tuple] = []
        seen_fn: set = set()
        stack = [(self.model.graph.node, self.opsets)]
        while stack:
            nodes, opsets = stack.pop()
            for node in nodes:
                domain = norm_domain(node.domain)
                version = opsets.get(domain)
                res = self.resolve(domain, node.op_type, opsets)
                if res is None:
                    missing.append((domain, node.op_type, version))
                elif res.kind == "function":
                    key = (domain, node.op_type, version)
                    if key not in seen_fn:
                        seen_fn.add(key)
                        fp = res.function
                        if fp is None and res.schema.function_opset_versions:
                            data = res.schema.get_function_with_opset_version(version)
                            fp = onnx.FunctionProto()
                            fp.ParseFromString(data)
                        if fp is not None:
                            stack.append((fp.node, self._function_opsets(fp, opsets)))
                for a in node.attribute:
                    if a.HasField("g"):
                        stack.append((a.g.node, opsets))
                    for g in a.graphs:
                        stack.append((g.node, opsets))
        return missing

    def _function_opsets(self, fp, opsets: dict[str, int]) -> dict[str, int]:
        out = dict(opsets)
        out.update({norm_domain(o.domain): int(o.version) for o in fp.opset_import})
        return out

    # -- graphs ------------------------------------------------------------------------------
    def convert_model(self):
        """The model as an IRModule whose @main takes the graph inputs (initializers are
        constants) and returns its outputs (a tuple when there are several)."""
        from relay_core.ir import Function, IRModule, Tuple

        self.mod = IRModule()
        graph = self.model.graph
        scope = Scope(None, ctx=self.ctx)
        scope.record = True
        inits = self.bind_initializers(graph, scope)
        params = self.main_params(graph, scope, inits)
        self.convert_nodes(graph.node, scope, self.opsets)
        self.ctx.at("", "")
        outs = self._graph_outputs(graph, scope, "graph")
        body = outs[0] if len(outs) == 1 else Tuple(tuple(outs))
        self.mod.add("main", Function(tuple(params), body))
        # The source map relay_import's verify / inspect read (see relay_import/verify.py).
        attrs = self.mod.attrs
        attrs["input_names"] = [i.name for i in graph.input if i.name not in inits]
        attrs["output_names"] = [o.name for o in graph.output]
        attrs["source_outputs"] = dict(self.ctx.source_outputs)
        attrs["source_nodes"] = [
            (n.name or f"{n.op_type}_{k}", n.op_type, list(n.input), list(n.output))
            for k, n in enumerate(graph.node)
        ]
        return self.mod

    def lookup_name(self, name: str):
        """The expression of an ONNX tensor name in the current scope (None if unknown)."""
        return self._current_scope.lookup(name) if self._current_scope is not None else None

    def use_prelude(self):
        """The module, with the prelude's List and Option added (for sequence / optional)."""
        if "List" not in self.mod:
            self.mod.import_prelude()
        return self.mod

    def bind_initializers(self, graph, scope: Scope) -> set[str]:
        names = set()
        for t in graph.initializer:
            scope.bind(t.name, Constant(tensor_to_numpy(t)))
            names.add(t.name)
        for sp in graph.sparse_initializer:
            scope.bind(sp.values.name, Constant(sparse_to_numpy(sp)))
            names.add(sp.values.name)
        return names

    def main_params(self, graph, scope: Scope, init_names: set[str]) -> list[Var]:
        names = [i.name for i in graph.input if i.name not in init_names]
        unknown = sorted(set(self.shapes) - set(names))
        if unknown:
            raise ConversionError(
                f"shapes= names unknown input(s) {unknown}; the model's inputs are {names}"
            )
        params: list[Var] = []
        used: set[str] = set()
        for inp in graph.input:
            if inp.name in init_names:
                continue
            override = self.shapes.get(inp.name)
            t = relay_type(inp.type, f"input {inp.name!r}", override)
            if t is None:
                raise ConversionError(
                    f"input {inp.name!r} has no shape in the model; pass "
                    f"shapes={{{inp.name!r}: (...)}}"
                )
            if not isinstance(t, TensorType):
                self.use_prelude()
            hint = sanitize_name(inp.name)
            base, k = hint, 1
            while hint in used:
                hint, k = f"{base}_{k}", k + 1
            used.add(hint)
            v = Var(hint, t)
            scope.bind(inp.name, v)
            params.append(v)
        return params

    def convert_nodes(self, nodes, scope: Scope, opsets: dict[str, int], prefix: str = "") -> None:
        prev = self._current_scope
        self._current_scope = scope
        try:
            self._convert_nodes(nodes, scope, opsets, prefix)
        finally:
            self._current_scope = prev

    def _convert_nodes(self, nodes, scope: Scope, opsets: dict[str, int], prefix: str) -> None:
        ctx = self.ctx
        for idx, node in enumerate(nodes):
            label = prefix + (node.name or f"{node.op_type}_{idx}")
            inputs = []
            for name in node.input:
                if not name:
                    inputs.append(None)
                    continue
                e = scope.lookup(name)
                if e is None:
                    raise ConversionError(
                        f"onnx node {label!r} ({node.op_type}): input {name!r} is not defined "
                        "before this node (the graph is not topologically sorted, has a cycle, "
                        "or names a missing tensor)"
                    )
                inputs.append(e)
            outs = self.convert_node(node, inputs, opsets, label)
            derived = self._shape_derived
            if node.op_type in _SHAPE_OPS or all(
                x is None or isinstance(x, Constant) or x in derived for x in inputs
            ):
                # x.view(-1, x.size(1), x.size(3)) exported with a dynamic batch: Gather of
                # Shape(x) at a static dim is a constant, and so the Concat of it, and the
                # Reshape gets a static shape while the converters run (an LSTM after it
                # needs its static sequence length then, not after DynamicToStatic)
                outs = [self.fold(e) for e in outs]
                derived.update(
                    e for e in outs if isinstance(e, Expr) and not isinstance(e, Constant)
                )
            for name, e in zip(node.output, outs):
                if name and e is not None:
                    scope.bind(name, e)
                    if scope.record:
                        ctx.source_outputs[name] = e

    def convert_node(self, node, inputs: list, opsets: dict[str, int], label: str) -> list:
        ctx = self.ctx
        domain = norm_domain(node.domain)
        res = self.resolve(domain, node.op_type, opsets)
        if res is None:
            raise UnsupportedOpsError("onnx", [(domain, node.op_type, opsets.get(domain))])
        ctx.at(label, node.op_type)
        ctx.node, ctx.num_outputs, ctx.opsets = node, len(node.output), opsets
        ctx.output_names = list(node.output)
        if res.kind == "function":
            return self.inline_function(node, res, inputs, opsets, label)
        try:
            attrs = {a.name: attribute_value(a) for a in node.attribute}
            out = call_converter(res.fn, ctx, inputs, attrs)
            ctx.at(label, node.op_type)  # subgraph conversion may have moved it
            ctx.node, ctx.num_outputs, ctx.opsets = node, len(node.output), opsets
            return self.split_outputs(out, node)
        except (ConversionError, UnsupportedOpsError):
            raise
        except RelayError as e:
            raise ConversionError(ctx._where() + str(e)) from None
        except Exception as e:
            raise ConversionError(f"{ctx._where()}converter failed: {type(e).__name__}: {e}") from e

    def fold(self, e):
        """`e` after the FoldConstant pass when that makes it a Constant, else `e`.

        The driver (not the converters) calls it on the outputs of nodes whose inputs are all
        constants, and of Shape / Size: ONNX function bodies compute shapes that later nodes
        need as constants for their result rank to be known. The byte budget applies.
        """
        if e is None or isinstance(e, Constant) or not isinstance(e, Expr):
            return e
        from relay_core import passes
        from relay_core.ir import Function, IRModule
        from relay_core.ir.visitor import free_vars

        fold = passes.all_passes().get("FoldConstant")
        if fold is None:
            return e
        try:
            t = self.ctx.type_of(e)
        except ConversionError:
            return e
        if not isinstance(t, TensorType):
            return e
        cut = _cut_shape_args(e)
        mod = IRModule.from_expr(
            Function(tuple(free_vars(cut)), cut), type_definitions=self.mod.type_definitions
        )
        for gv, f in self.mod.functions.items():  # the prelude, when the model uses it
            mod.functions.setdefault(gv, f)
        kw = {"max_bytes": self.byte_budget} if self.byte_budget else {}
        try:
            body = fold(**kw)(mod)["main"].body
        except RelayTypeError:
            return e
        if isinstance(body, Constant):
            data = body.data
            if t.is_static and data.shape != t.shape and data.size == t.size:
                data = data.reshape(t.shape)  # keep the type's shape (a scalar stays one)
            return Constant(data, span=e.span)
        return e

    def split_outputs(self, out, node) -> list:
        n = len(node.output)
        ctx = self.ctx
        if isinstance(out, (list, tuple)):
            outs = list(out)
        elif n == 1:
            outs = [out]
        else:
            t = ctx.type_of(out)
            if not isinstance(t, TupleType):
                outs = [out]
            else:
                outs = [ctx.item(out, i) for i in range(len(t.fields))]
        for i, name in enumerate(node.output):
            if name and (i >= len(outs) or outs[i] is None):
                raise ctx.error(f"output {i} ({name!r}) is not supported by this converter")
        return outs[:n]

    # -- function bodies ---------------------------------------------------------------------
    def inline_function(self, node, res: Resolved, inputs: list, opsets, label: str) -> list:
        import onnx

        ctx = self.ctx
        domain = norm_domain(node.domain)
        fp = res.function
        schema = res.schema
        if fp is None:
            version = opsets[domain]
            if any(v <= version for v in schema.context_dependent_function_opset_versions):
                types = [
                    type_proto_of(ctx.type_of(x)).SerializeToString()
                    if x is not None
                    else onnx.TypeProto().SerializeToString()
                    for x in inputs
                ]
                data = schema.get_context_dependent_function_with_opset_version(
                    version, node.SerializeToString(), types
                )
            else:
                data = schema.get_function_with_opset_version(version)
            fp = onnx.FunctionProto()
            fp.ParseFromString(data)
        fscope = Scope(None)
        for name, e in zip(fp.input, inputs):
            if name and e is not None:
                fscope.bind(name, e)
        given = {a.name: a for a in node.attribute}
        defaults = {a.name: a for a in fp.attribute_proto}
        if schema is not None:
            for name, a in schema.attributes.items():
                if name not in defaults and a.default_value.type:
                    defaults[name] = a.default_value
        body = [_substitute_attr_refs(n, given, defaults) for n in fp.node]
        self.convert_nodes(body, fscope, self._function_opsets(fp, opsets), label + "/")
        outs = []
        for i, name in enumerate(fp.output):
            e = fscope.values.get(name)
            if e is None and i < len(node.output) and node.output[i]:
                raise ConversionError(
                    f"onnx node {label!r} ({node.op_type}): its function body does not "
                    f"produce output {name!r}"
                )
            outs.append(e)
        return outs

    # -- subgraphs ---------------------------------------------------------------------------
    def _save(self):
        c = self.ctx
        return (c.node_name, c.node_op, c.node, c.num_outputs, c.opsets, c.output_names)

    def _restore(self, s) -> None:
        c = self.ctx
        c.node_name, c.node_op, c.node, c.num_outputs, c.opsets, c.output_names = s

    def _graph_outputs(self, graph, scope: Scope, what: str) -> list[Expr]:
        outs = []
        for o in graph.output:
            e = scope.lookup(o.name)
            if e is None:
                raise ConversionError(f"{what}: output {o.name!r} is never produced")
            outs.append(e)
        return outs

    def convert_branch(self, graph, ctx: OnnxContext, inputs=()) -> list[Expr]:
        """An If branch (or one iteration of an unrolled Loop body, its inputs bound to
        `inputs`): converted in a child scope of the current one."""
        saved = self._save()
        parent = self._current_scope
        scope = Scope(parent, ctx=self.ctx)
        self.bind_initializers(graph, scope)
        for inp, e in zip(graph.input, inputs):
            scope.bind(inp.name, e)
        prefix = f"{saved[0]}/{graph.name or 'branch'}/"
        try:
            self.convert_nodes(graph.node, scope, saved[4], prefix)
            return self._graph_outputs(graph, scope, f"subgraph {graph.name!r}")
        finally:
            self._restore(saved)

    def convert_body(self, graph, param_types: list[Type], ctx: OnnxContext):
        """A Loop / Scan body: (params, outputs, captures). Parameters are fresh variables of
        `param_types`; `captures` lists (var, outer value) pairs the caller must let-bind."""
        saved = self._save()
        parent = self._current_scope
        scope = Scope(parent, boundary=True, ctx=self.ctx)
        self.bind_initializers(graph, scope)
        params = []
        for inp, t in zip(graph.input, param_types):
            v = Var(sanitize_name(inp.name), t)
            scope.bind(inp.name, v)
            params.append(v)
        prefix = f"{saved[0]}/{graph.name or 'body'}/"
        try:
            self.convert_nodes(graph.node, scope, saved[4], prefix)
            outs = self._graph_outputs(graph, scope, f"subgraph {graph.name!r}")
        finally:
            self._restore(saved)
        return params, outs, scope.captures

    _current_scope: Scope | None = None


def _substitute_attr_refs(node, given: dict, defaults: dict):
    """A function-body node with attribute references replaced by the caller's values."""
    if not any(a.ref_attr_name for a in node.attribute):
        return node
    import onnx

    out = onnx.NodeProto()
    out.CopyFrom(node)
    del out.attribute[:]
    for a in node.attribute:
        if not a.ref_attr_name:
            out.attribute.append(a)
            continue
        src = given.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
        if src is None:
            continue  # not given and no default: the attribute is absent
        b = onnx.AttributeProto()
        b.CopyFrom(src)
        b.name = a.name
        out.attribute.append(b)
    return out


__all__ = ["GraphConverter", "Scope", "wrap_captures", "attribute_value"]
