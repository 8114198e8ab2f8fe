"""`from_pytorch`: the PyTorch frontend's entry point."""

from __future__ import annotations

import os

from relay_core.errors import ModelLoadError
from relay_core.ir import IRModule

from . import loader
from .importer import TorchImporter, iter_targets
from .table import TORCH, target_name


def from_pytorch(
    obj,
    example_inputs=None,
    dynamic_shapes=None,
    custom_convert_map: dict | None = None,
    keep_params_as_inputs: bool = False,
    shapes: dict | None = None,
) -> IRModule:
    """Convert a PyTorch model to a Relay module.

    `obj` is a `torch.export.ExportedProgram`, a path to a `.pt2` archive, or an `nn.Module`
    with `example_inputs` (exported here in eval mode; `dynamic_shapes` as for
    `torch.export.export`, e.g. `{"x": {0: Dim("batch", min=1, max=64)}}`).

    User inputs become `@main`'s parameters in order; parameters and buffers become constants,
    or trailing parameters of `@main` with their values in `mod.attrs["params"]` when
    `keep_params_as_inputs`. Outputs keep their nesting as Relay tuples.
    `custom_convert_map` maps ATen overload names ("aten.foo.default") or OpOverloads to
    functions `fn(ctx, *args, **kwargs) -> Expr`.
    `shapes={"x": (1, 3, 16, 16)}` (input name -> shape; a -1 dim stays dynamic) re-exports the
    program (an ExportedProgram / .pt2: its module) or the nn.Module at those shapes; for an
    nn.Module without `example_inputs` they make float32 example inputs.

    >>> mod = from_pytorch(model, example_inputs=(torch.randn(1, 3, 32, 32),))
    >>> relay_core.evaluate(mod, x.numpy())
    """
    if shapes:
        obj, example_inputs, dynamic_shapes = _apply_shapes(
            obj, example_inputs, dynamic_shapes, shapes
        )
    ep, dim_names = _exported_program(obj, example_inputs, dynamic_shapes, fast=True)
    custom = {target_name(k): v for k, v in (custom_convert_map or {}).items()}
    ep = functionalize(ep, custom)
    ep = decompose_unsupported(ep, custom)
    imp = TorchImporter(ep, custom, keep_params_as_inputs, dim_names)
    imp.check_supported()
    return imp.convert()


def _apply_shapes(obj, example_inputs, dynamic_shapes, shapes: dict):
    """(module, example inputs, dynamic_shapes) that export `obj` at the given input shapes."""
    import inspect

    import torch

    if isinstance(obj, (str, os.PathLike)):
        obj, _ = _exported_program(obj, None, None)
    if isinstance(obj, torch.export.ExportedProgram):
        ep = obj
        placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
        names, metas = [], []
        for spec in ep.graph_signature.input_specs:
            if spec.kind.name == "USER_INPUT":
                names.append(getattr(spec.arg, "name", ""))
                metas.append(placeholders[names[-1]].meta.get("val"))
        if any(not isinstance(m, torch.Tensor) for m in metas):
            raise ModelLoadError("shapes= needs a program whose inputs are all tensors")
        dtypes = [m.dtype for m in metas]
        defaults = [tuple(int(d) if isinstance(d, int) else 2 for d in m.shape) for m in metas]
        module = ep.module()
    elif isinstance(obj, torch.nn.Module):
        module = obj
        try:
            params = list(inspect.signature(module.forward).parameters)
        except (TypeError, ValueError):
            params = []
        if example_inputs is not None:
            ex = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
            names = params[: len(ex)]
            dtypes = [getattr(x, "dtype", torch.float32) for x in ex]
            defaults = [tuple(getattr(x, "shape", ())) for x in ex]
        else:
            names = [p for p in params if p in shapes]
            dtypes = [torch.float32] * len(names)
            defaults = [None] * len(names)
    else:
        return obj, example_inputs, dynamic_shapes
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise ModelLoadError(f"shapes= names unknown inputs {unknown}; the inputs are {names}")
    args, dyn = [], []
    for name, dtype, default in zip(names, dtypes, defaults):
        shape = shapes.get(name, default)
        if shape is None:
            raise ModelLoadError(f"input {name!r} needs a shape (shapes={{'{name}': (...)}})")
        dims = [int(d) if d is not None else -1 for d in shape]
        real = [2 if d < 0 else d for d in dims]
        if dtype.is_floating_point:
            args.append(torch.randn(real, dtype=dtype))
        elif dtype == torch.bool:
            args.append(torch.ones(real, dtype=dtype))
        else:
            args.append(torch.zeros(real, dtype=dtype))
        dyn.append({i: torch.export.Dim.DYNAMIC for i, d in enumerate(dims) if d < 0} or None)
    dyn = tuple(dyn) if any(dyn) else None
    if isinstance(obj, torch.export.ExportedProgram):
        try:
            return torch.export.export(module, tuple(args), dynamic_shapes=dyn), None, None
        except Exception as e:  # a guard of the original export: a dim it fixed
            msg = str(e).splitlines()[0][:200]
            raise ModelLoadError(
                f"cannot re-export the program at shapes {shapes}: {msg}. Only dims that were "
                "dynamic at export can be changed; export again with dynamic_shapes="
            ) from None
    return module, tuple(args), dyn


def _exported_program(obj, example_inputs, dynamic_shapes, fast: bool = False):
    """(program, dim names). `fast`: a `.pt2` may come back as a pt2_graph.FastProgram (what
    conversion reads; torch's ExportedProgram is built from it on demand)."""
    import torch

    if isinstance(obj, torch.export.ExportedProgram):
        return obj, _shape_env_dim_names(obj)
    if isinstance(obj, (str, os.PathLike)):
        kind = loader.classify_file(obj)
        if kind == "pickle":
            loader.refuse_pickle_file(obj)
        if kind != "pt2":
            raise ModelLoadError(
                f"{os.fspath(obj)} is not a torch.export .pt2 archive; save one with "
                "torch.export.save(torch.export.export(model, example_inputs), 'model.pt2')"
            )
        return loader.load_pt2(obj, fast=fast), {}
    if isinstance(obj, torch.jit.ScriptModule):
        raise ModelLoadError(
            "TorchScript modules are not supported (TorchScript is deprecated); pass the "
            "original nn.Module with example_inputs, or a torch.export ExportedProgram"
        )
    if isinstance(obj, torch.nn.Module):
        if example_inputs is None:
            raise ModelLoadError(
                "an nn.Module needs example_inputs (a tuple of tensors) to be exported"
            )
        args = (
            tuple(example_inputs)
            if isinstance(example_inputs, (tuple, list))
            else (example_inputs,)
        )
        try:
            obj.eval()
        except NotImplementedError:  # an ExportedProgram's module(): already in its mode
            pass
        try:
            ep = torch.export.export(obj, args, dynamic_shapes=dynamic_shapes)
        except Exception as e:  # export reports many kinds of problems
            raise ModelLoadError(f"torch.export.export failed: {type(e).__name__}: {e}") from None
        return ep, _dim_names(ep, obj, args, dynamic_shapes)
    raise ModelLoadError(
        f"cannot convert a {type(obj).__name__}: pass an ExportedProgram, a .pt2 path, or an "
        "nn.Module with example_inputs"
    )


def _shape_env_dim_names(ep) -> dict:
    """torch's size symbols -> the names of the `Dim`s they came from, as the exporting
    ShapeEnv remembers them (an in-memory ExportedProgram; a .pt2 archive does not keep them)."""
    for node in ep.graph.nodes:
        if node.op != "placeholder":
            continue
        val = node.meta.get("val")
        for d in getattr(val, "shape", ()):
            env = getattr(getattr(d, "node", None), "shape_env", None)
            if env is None:
                continue
            names = getattr(env, "source_name_to_debug_name", {}) or {}
            out = {}
            for sym, sources in (getattr(env, "var_to_sources", {}) or {}).items():
                for src in sources:
                    name = names.get(getattr(src, "name", ""))
                    if name:
                        out[str(sym)] = name
                        break
            return out
    return {}


def output_names(ep) -> list[str]:
    """The program's output names: the keys of a returned dict (or a namedtuple's fields),
    joined with '.' when nested; elsewhere the output node's name."""
    specs = [s for s in ep.graph_signature.output_specs if s.kind.name == "USER_OUTPUT"]
    nodes = [getattr(s.arg, "name", "") or f"output{i}" for i, s in enumerate(specs)]
    try:
        paths = _leaf_paths(ep.call_spec.out_spec)
    except Exception:  # an unfamiliar pytree: node names are still names
        return nodes
    if paths is None or len(paths) != len(nodes):
        return nodes
    return [p or n for p, n in zip(paths, nodes)]


def _leaf_paths(spec) -> list[str] | None:
    """Per leaf of a pytree spec, its path of dict keys / namedtuple fields ('' if none)."""
    if spec is None:
        return None
    out: list[str] = []
    stack = [(spec, "", False)]
    while stack:
        sp, path, named = stack.pop()
        if sp.is_leaf():
            out.append(path if named else "")
            continue
        kids = [sp.child(i) for i in range(sp.num_children)]
        ctx = sp.context
        if isinstance(ctx, (list, tuple)) and len(ctx) == len(kids):
            keys = [str(k) for k in ctx]  # dict keys
            is_named = True
        elif isinstance(ctx, type) and hasattr(ctx, "_fields"):
            keys = list(ctx._fields)  # namedtuple
            is_named = True
        else:
            keys = [str(i) for i in range(len(kids))]
            is_named = False
        for k, kid in reversed(list(zip(keys, kids))):
            stack.append((kid, f"{path}.{k}" if path else k, named or is_named))
    return out


def _dim_names(ep, module, args, dynamic_shapes) -> dict:
    """Map torch's size symbols (s0, s17, ...) to the names of the user's `Dim`s."""
    import inspect

    import torch

    if dynamic_shapes is None:
        return {}
    if isinstance(dynamic_shapes, dict):
        try:
            params = list(inspect.signature(module.forward).parameters)
        except (TypeError, ValueError):
            return {}
        per_arg = [dynamic_shapes.get(p) for p in params[: len(args)]]
    else:
        per_arg = list(dynamic_shapes)
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    tensor_nodes = [
        placeholders.get(getattr(s.arg, "name", ""))
        for s in ep.graph_signature.input_specs
        if s.kind.name == "USER_INPUT"
    ]
    if len(tensor_nodes) != len(args):  # nested inputs: what the ShapeEnv remembers
        return _shape_env_dim_names(ep)
    out = _shape_env_dim_names(ep)
    for arg, spec, node in zip(args, per_arg, tensor_nodes):
        if not isinstance(arg, torch.Tensor) or spec is None or node is None:
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        meta = node.meta.get("val")
        for axis, dim in items:
            name = getattr(dim, "__name__", None)
            if name is None or meta is None or axis >= meta.dim():
                continue
            expr = getattr(getattr(meta.shape[axis], "node", None), "expr", None)
            if expr is not None and getattr(expr, "is_Symbol", False):
                out[str(expr)] = name
    return out


def mutating_targets(ep, custom: dict | None = None) -> list[str]:
    """Names of the mutating / in-place overloads (`aten.add_.Tensor`, `aten.copy_.default`,
    `aten.index_put_.default`, ...) still in the program, except those with a custom converter."""
    import torch

    out = []
    for name, t in iter_targets(ep.graph_module):
        if name in (custom or {}) or name in out or not isinstance(t, torch._ops.OpOverload):
            continue
        if t._schema.is_mutable and not _is_noop(name):
            out.append(name)
    return out


def functionalize(ep, custom: dict | None = None):
    """An exported program may still hold mutating overloads (torch.export keeps torchvision's
    `relu_` / `+=`, a transformers T5 encoder `aten.add_.Tensor`). Where every mutation is an
    in-place op on a fresh intermediate nothing aliases, the op becomes its out-of-place twin in
    a copy of the graph (`_rewrite_inplace`). Otherwise the program is re-traced functionalised
    (`run_decompositions({})` keeps every op but rewrites mutation into functional ops plus
    copies back to mutated inputs: seconds for a ResNet-50)."""
    if not mutating_targets(ep, custom):
        return ep
    fast = _rewrite_inplace(ep, custom or {})
    if fast is not None:
        return fast
    try:
        return ep.run_decompositions({})
    except Exception as e:  # export's retrace reports many kinds of problems
        raise ModelLoadError(
            f"the exported program mutates tensors ({', '.join(mutating_targets(ep, custom))}) "
            f"and could not be functionalised: {type(e).__name__}: {e}"
        ) from None


class _Rewritten:
    """An ExportedProgram seen through a rewritten copy of its graph module (the user's program
    is left as it was); everything else is the program's own."""

    def __init__(self, ep, graph_module):
        self._ep = ep
        self.graph_module = graph_module
        self.graph = graph_module.graph

    def __getattr__(self, name):
        return getattr(self._ep, name)

    def run_decompositions(self, *args, **kwargs):  # re-traces the original: still correct
        return self._ep.run_decompositions(*args, **kwargs)


def _out_of_place(target):
    """The functional twin of an in-place overload (`aten.relu_.default` -> `aten.relu.default`)
    when it takes the same arguments and the in-place one writes only its first argument."""
    import torch

    if not isinstance(target, torch._ops.OpOverload):
        return None
    packet = target.overloadpacket.__name__
    if not packet.endswith("_") or packet.endswith("__"):
        return None
    twin = getattr(getattr(torch.ops, target.namespace), packet[:-1], None)
    twin = getattr(twin, target._overloadname, None)
    if not isinstance(twin, torch._ops.OpOverload):
        return None
    a, b = target._schema.arguments, twin._schema.arguments
    writes = [x for x in a if x.alias_info is not None and x.alias_info.is_write]
    if (
        [x.name for x in a] != [x.name for x in b]
        or len(writes) != 1
        or writes[0] is not a[0]
        or len(target._schema.returns) != 1
        or len(twin._schema.returns) != 1
        or twin._schema.is_mutable
        or _aliases(twin)
    ):
        return None
    return twin


def _aliases(target) -> bool:
    """Whether an overload's result may alias an argument (views, in-place ops)."""
    import torch

    if not isinstance(target, torch._ops.OpOverload):
        return True
    sch = target._schema
    return any(x.alias_info is not None for x in (*sch.arguments, *sch.returns))


def _rewrite_inplace(ep, custom: dict):
    """A copy of `ep` with its in-place ops made functional, or None where that is not safe.

    Safe: every mutating op in the graph is an in-place op (`x.relu_()`, `x += y`) whose
    operand's storage was made by a non-aliasing op of this graph (not an input, parameter or
    buffer, not a view) and whose other tensor operands have its dtype (no promotion
    difference). Reads between mutations then read the latest version (the graph is in program
    order); a view of the storage is allowed only after its last mutation."""
    import operator

    import torch

    gm = ep.graph_module
    nodes = list(gm.graph.nodes)
    pos = {n: i for i, n in enumerate(nodes)}
    root: dict = {}  # in-place node -> the node whose storage it mutates
    chain: dict = {}  # root -> its in-place nodes in order
    twin_of: dict = {}
    for n in nodes:
        if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
            continue
        if not n.target._schema.is_mutable or target_name(n.target) in custom:
            continue
        if _is_noop(target_name(n.target)):
            continue
        twin = _out_of_place(n.target)
        if twin is None or not n.args or not isinstance(n.args[0], torch.fx.Node):
            return None
        src = n.args[0]
        r = root.get(src, src)
        if r not in chain and not _fresh(r, operator, torch):
            return None
        dtype = getattr(r.meta.get("val"), "dtype", None)
        for a in [*n.args[1:], *n.kwargs.values()]:
            if isinstance(a, torch.fx.Node):
                if getattr(a.meta.get("val"), "dtype", None) != dtype or dtype is None:
                    return None
                if root.get(a, a) is r:  # x.add_(x): reads the storage it writes
                    return None
            elif isinstance(a, (list, tuple)) and any(isinstance(x, torch.fx.Node) for x in a):
                return None
        root[n] = r
        chain.setdefault(r, []).append(n)
        twin_of[n] = twin
    if not chain:
        return None
    # every read of the storage (any version of it): before the last mutation only plain
    # functional ops, which then read the version current at their position
    for r, muts in chain.items():
        last = pos[muts[-1]]
        for a in (r, *muts):
            for u in a.users:
                if u in twin_of and u.args[0] is a:
                    continue
                if pos[u] > last and a is muts[-1]:
                    continue
                if u.op != "call_function" or _aliases(u.target) or u.target._schema.is_mutable:
                    return None
    # the copy, with the twins and every read redirected to the current version
    graph = torch.fx.Graph()
    env: dict = {}
    current: dict = {}  # root -> its latest version (a node of the new graph)
    for n in nodes:
        new = graph.node_copy(n, lambda x: current.get(root.get(x, x)) or env[x])
        if n in twin_of:
            new.target = twin_of[n]
            current[root[n]] = new
        elif n in chain:
            current[n] = new
        env[n] = new
    new_gm = torch.fx.GraphModule(gm, graph)
    out = _Rewritten(ep, new_gm)
    if mutating_targets(out, custom):  # e.g. in a cond / while_loop body
        return None
    return out


def _fresh(node, operator, torch) -> bool:
    """Whether `node` makes new storage: a non-aliasing, non-mutating op (or an element of the
    tuple such an op returns)."""
    if node.op != "call_function":
        return False
    t = node.target
    if t is operator.getitem and isinstance(node.args[0], torch.fx.Node):
        return _fresh(node.args[0], operator, torch)
    return isinstance(t, torch._ops.OpOverload) and not t._schema.is_mutable and not _aliases(t)


def decompose_unsupported(ep, custom: dict | None = None, rounds: int = 4):
    """Decompose only the ops we have no converter for (keeping conv2d, linear, ... intact),
    using torch's own decomposition table. Returns the (possibly) new ExportedProgram."""
    import torch

    custom = custom or {}
    table = None
    tried: set = set()
    for _ in range(rounds):
        missing = {
            t
            for name, t in iter_targets(ep.graph_module)
            if isinstance(t, torch._ops.OpOverload)
            and name not in custom
            and name not in TORCH
            and not _is_noop(name)
            and t not in tried
        }
        if not missing:
            break
        if table is None:
            table = torch.export.default_decompositions()
        sub = {t: table[t] for t in missing if t in table}
        if not sub:
            break
        tried.update(sub)
        try:
            ep = ep.run_decompositions(sub)
        except Exception:  # decomposition is best effort; check_supported reports the rest
            break
    return ep


def _is_noop(name: str) -> bool:
    from .importer import _NO_OPS

    return name in _NO_OPS
