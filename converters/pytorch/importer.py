"""ExportedProgram -> IRModule: the graph walk, the signature, symbolic sizes, subgraphs.

The importer never runs the model: it reads the FX graph node by node (the graph is already in
topological order, so a flat loop suffices), looks each call target up in the converter table,
and binds the node to what the converter built. Higher-order ops (cond, while_loop) convert
their subgraphs through `convert_graph`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relay_core.errors import RelayError, RelayTypeError, UnsupportedOpsError
from relay_core.ir import Any, Constant, Expr, Function, IRModule, ShapeVar, Tuple, Var
from relay_core.typing import infer_type

from ..common import ConversionError, check_supported, sanitize_name
from .context import TorchContext, relay_dtype, tensor_type_of_meta
from .table import TORCH, target_name

# Targets that are bookkeeping only: they produce nothing the computation needs.
_NO_OPS = {
    "aten._assert_scalar.default",
    "aten._assert_async.msg",
    "aten._assert_async.default",
    "aten.sym_constrain_range_for_size.default",
    "aten.sym_constrain_range.default",
    "aten._assert_tensor_metadata.default",
    "aten._functional_assert_async.msg",
    "aten._functional_sym_constrain_range.default",
    "aten._functional_sym_constrain_range_for_size.default",
    "torch._check",
    "torch._check_is_size",
    "torch._assert",
    "torch._assert_async",
}


def iter_targets(gm) -> list[tuple[str, object]]:
    """(name, target) of every call in `gm` and in its subgraphs, in first-seen order."""
    import torch

    out = []
    stack = [gm]
    seen = set()
    while stack:
        g = stack.pop()
        if id(g) in seen:
            continue
        seen.add(id(g))
        for node in g.graph.nodes:
            if node.op == "call_function":
                out.append((target_name(node.target), node.target))
            elif node.op == "get_attr":
                sub = _get_attr(g, node.target)
                if isinstance(sub, torch.fx.GraphModule):
                    stack.append(sub)
    return out


def _get_attr(gm, path: str):
    obj = gm
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


class TorchImporter:
    """Converts one ExportedProgram. Use `from_pytorch`."""

    def __init__(
        self,
        ep,
        custom_convert_map: dict | None = None,
        keep_params_as_inputs: bool = False,
        dim_names: dict | None = None,
    ):
        self.ep = ep
        self.custom = {target_name(k): v for k, v in (custom_convert_map or {}).items()}
        self.keep_params = keep_params_as_inputs
        self.dim_names = dict(dim_names or {})  # str(sympy symbol) -> user's Dim name
        self.ctx = TorchContext(self)
        self._shape_vars: dict[str, ShapeVar] = {}
        self.params: dict[str, np.ndarray] = {}
        self.graph_prefix = ""
        self.source_nodes: list[tuple] = []  # (FX node, target, [input nodes], [outputs])

    # -- support ------------------------------------------------------------------------------
    def lookup(self, name: str) -> Callable | None:
        return self.custom.get(name) or TORCH.lookup(name)

    def supported(self, name: str) -> bool:
        return name in _NO_OPS or self.lookup(name) is not None

    def check_supported(self) -> None:
        """Raise one UnsupportedOpsError naming every target without a converter."""
        import torch

        used = [(name,) for name, _ in iter_targets(self.ep.graph_module)]
        check_supported(
            "torch",
            used,
            lambda e: self.supported(e[0]),
            hint=f"(torch {torch.__version__}) Pass custom_convert_map="
            "{'aten.op.overload': fn(ctx, *args, **kwargs)} to supply converters for them.",
        )

    # -- symbolic sizes ------------------------------------------------------------------------
    def shape_dim(self, d):
        """A Relay dimension for a torch SymInt: a ShapeVar for a plain symbol, else Any."""
        expr = getattr(getattr(d, "node", None), "expr", None)
        if expr is None:
            return Any
        if not getattr(expr, "is_Symbol", False):
            if getattr(expr, "is_Integer", False):
                return int(expr)
            return Any
        key = str(expr)
        sv = self._shape_vars.get(key)
        if sv is None:
            lo, hi = 0, None
            for sym, vr in self.ep.range_constraints.items():
                if str(sym) == key:
                    lo = _bound(vr.lower, 0)
                    hi = _bound(vr.upper, None)
            sv = self._shape_vars[key] = ShapeVar(self.dim_names.get(key, key), lo, hi)
        return sv

    def tensor_type(self, meta):
        return tensor_type_of_meta(meta, self.shape_dim)

    # -- the program ---------------------------------------------------------------------------
    def convert(self) -> IRModule:
        import torch

        ep = self.ep
        sig = ep.graph_signature
        user_inputs: list[Var] = []
        param_vars: list[Var] = []
        bound: dict[str, object] = {}
        placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
        for spec in sig.input_specs:
            kind = spec.kind.name
            name = getattr(spec.arg, "name", "")
            node = placeholders.get(name)
            if kind == "USER_INPUT":
                meta = node.meta.get("val") if node is not None else None
                if isinstance(meta, torch.Tensor):
                    v = Var(sanitize_name(name), self.tensor_type(meta))
                    user_inputs.append(v)
                    bound[name] = v
                elif type(meta).__name__ in ("SymInt", "SymFloat", "SymBool"):
                    v = Var(sanitize_name(name), self._scalar_type(meta))
                    user_inputs.append(v)
                    bound[name] = v
                else:  # specialised at export time (an int, a float, None)
                    bound[name] = getattr(spec.arg, "value", meta)
            elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                value = self._lookup_state(spec)
                arr = tensor_to_numpy(value)
                if self.keep_params and kind != "CONSTANT_TENSOR":
                    v = Var(sanitize_name(name), self.tensor_type(value))
                    param_vars.append(v)
                    self.params[v.name_hint] = arr
                    bound[name] = v
                else:
                    self.ctx.at(name, kind.lower())
                    arr.setflags(write=False)  # our private copy: Constant need not copy it
                    bound[name] = self.ctx.const(arr)
            elif kind == "TOKEN":
                bound[name] = ()
            else:
                raise ConversionError(
                    f"input {name!r} is a {kind} (e.g. a TorchScript object); only tensors, "
                    "parameters, buffers and constants can be converted"
                )
        flat_outputs = self.convert_graph(ep.graph_module, bound, by_name=True)
        user_outputs = []
        for spec, value in zip(sig.output_specs, flat_outputs):
            if spec.kind.name == "USER_OUTPUT":
                user_outputs.append(value)
        body = self._structure(user_outputs, ep.call_spec.out_spec)
        func = Function(tuple(user_inputs + param_vars), body)
        mod = IRModule.from_expr(func)
        mod.attrs["input_names"] = [v.name_hint for v in user_inputs]
        from .frontend import output_names

        mod.attrs["output_names"] = output_names(ep)
        mod.attrs["source_outputs"] = dict(self.ctx.source_outputs)
        mod.attrs["source_nodes"] = list(self.source_nodes)
        if self.keep_params:
            mod.attrs["params"] = dict(self.params)
        try:
            infer_type(mod)
        except RelayTypeError as e:
            raise ConversionError(f"the converted program does not typecheck: {e}") from None
        # Annotate the result type, as the printed (and re-parsed) program has it.
        typed = mod["main"]
        annotated = Function(
            typed.params,
            typed.body,
            typed.checked_type.ret_type,
            typed.type_params,
            typed.attrs,
            span=typed.span,
        )
        annotated._set_type(typed.checked_type)
        mod.functions[mod.get_global_var("main")] = annotated
        return mod

    def _lookup_state(self, spec):
        target = spec.target
        if target in self.ep.state_dict:
            return self.ep.state_dict[target]
        if target in self.ep.constants:
            return self.ep.constants[target]
        raise ConversionError(f"no value for {spec.kind.name.lower()} {target!r} in the program")

    def _scalar_type(self, meta):
        from relay_core.ir import TensorType

        name = type(meta).__name__
        return TensorType((), {"SymInt": "int64", "SymFloat": "float32"}.get(name, "bool"))

    def _structure(self, leaves: list, spec) -> Expr:
        """Rebuild the output pytree as nested Relay tuples."""
        it = iter(leaves)

        def build(s):
            if s is None or s.is_leaf():
                return self._as_output(next(it))
            return Tuple(tuple(build(c) for c in s.children()))

        if spec is None:
            return Tuple(tuple(self._as_output(v) for v in leaves))
        return build(spec)

    def _as_output(self, v) -> Expr:
        if isinstance(v, Expr):
            return v
        if v is None:
            return Tuple(())
        if isinstance(v, (tuple, list)):
            return Tuple(tuple(self._as_output(x) for x in v))
        return self.ctx.expr(v)

    # -- graphs ---------------------------------------------------------------------------------
    def convert_graph(self, gm, inputs, by_name: bool = False, prefix: str = "") -> list:
        """Convert the nodes of `gm`; `inputs` binds its placeholders (a list in order, or a
        dict by name). Returns the flat list of output values."""
        import torch

        env: dict = {}
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if by_name:
            for n in placeholders:
                env[n] = inputs[n.name]
        else:
            if len(inputs) != len(placeholders):
                raise ConversionError(
                    f"subgraph {prefix or 'graph'} takes {len(placeholders)} inputs, "
                    f"got {len(inputs)}"
                )
            env.update(zip(placeholders, inputs))
        ctx = self.ctx
        outputs: list = []
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "get_attr":
                obj = _get_attr(gm, node.target)
                if isinstance(obj, torch.Tensor):
                    ctx.at(prefix + node.name, "get_attr")
                    obj = ctx.const(tensor_to_numpy(obj))
                env[node] = obj
            elif node.op == "call_function":
                env[node] = self._call(node, env, prefix)
                if not prefix:
                    self._record(node, env[node])
            elif node.op == "output":
                out = node.args[0]
                outputs = list(out) if isinstance(out, (tuple, list)) else [out]
                outputs = [_map_arg(o, env) for o in outputs]
            else:
                raise ConversionError(f"unsupported FX node kind {node.op!r} ({node.name})")
        return outputs

    def _record(self, node, value) -> None:
        """Source map for verify: FX node name -> Relay value, and the node's inputs."""
        import torch

        if not isinstance(value, Expr):
            return
        self.ctx.source_outputs[node.name] = value
        ins = []
        torch.fx.node.map_arg((node.args, node.kwargs), lambda a: ins.append(a.name))
        self.source_nodes.append((node.name, target_name(node.target), ins, [node.name]))

    def _call(self, node, env, prefix):
        name = target_name(node.target)
        if name in _NO_OPS:
            return None
        fn = self.lookup(name)
        if fn is None:
            raise UnsupportedOpsError("torch", [(name,)])
        ctx = self.ctx
        args = tuple(_map_arg(a, env) for a in node.args)
        kwargs = {k: _map_arg(v, env) for k, v in node.kwargs.items()}
        saved = (ctx.node, ctx.node_name, ctx.node_op, self.graph_prefix)
        ctx.node = node
        ctx.at(prefix + node.name, name)
        self.graph_prefix = prefix
        try:
            out = fn(ctx, *args, **kwargs)
        except RelayError:
            raise
        except Exception as e:  # a converter met a case it does not handle
            raise ctx.error(f"{type(e).__name__}: {e}") from e
        finally:
            ctx.node, ctx.node_name, ctx.node_op, self.graph_prefix = saved
        if isinstance(out, list):
            out = tuple(out)
        return out


def _map_arg(a, env):
    """Replace FX nodes by their converted values and torch dtypes by Relay dtype names."""
    import torch

    if isinstance(a, torch.fx.Node):
        return env[a]
    if isinstance(a, (list, tuple)):
        return type(a)(_map_arg(x, env) for x in a)
    if isinstance(a, dict):
        return {k: _map_arg(v, env) for k, v in a.items()}
    if isinstance(a, torch.dtype):
        return relay_dtype(a)
    if isinstance(a, torch.Tensor):
        return Constant(tensor_to_numpy(a))
    return a


def _bound(v, default):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    if not np.isfinite(f) or abs(f) > 2**62:
        return default
    return int(f)


def tensor_to_numpy(t) -> np.ndarray:
    """A CPU copy of a torch tensor as numpy (bfloat16 via ml_dtypes)."""
    import torch

    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype == torch.bfloat16:
        from relay_core.ir import dtype as dt

        return t.view(torch.int16).numpy().view(dt.to_numpy("bfloat16")).copy()
    if t.dtype.is_floating_point and t.dtype.itemsize == 1:  # float8 kinds
        from relay_core.ir import dtype as dt

        return t.view(torch.uint8).numpy().view(dt.to_numpy(relay_dtype(t.dtype))).copy()
    return t.contiguous().numpy().copy()
