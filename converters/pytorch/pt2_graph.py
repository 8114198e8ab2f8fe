"""A `.pt2` program's JSON read straight into an FX graph, without torch's deserializer.

torch's `ExportedProgramDeserializer` costs seconds on a ResNet-50 before conversion starts:
importing it imports torch._dynamo (~1 s), and its JSON-to-dataclass step calls
`typing.get_type_hints` for every one of ~8,000 objects (~1 s), then it builds a FakeTensor per
value. Conversion needs much less: the nodes, their ATen targets and arguments, and each value's
shape and dtype. So for the programs this module understands, it builds the FX graph itself —
same node names, same args / kwargs split (by the op's schema, as torch does), and for each value
a tensor on the `meta` device (shape, strides, dtype; no data) instead of a FakeTensor.

The gate is explicit: `read_program` returns None, and the caller uses torch's deserializer,
whenever the program is outside what was checked against it — another schema major version or a
newer minor one, symbolic sizes, subgraphs (cond / while_loop), higher-order or size-arithmetic
targets, custom objects, named tuples in the output spec, a field or argument kind this reader
does not know. Anything that needs a real ExportedProgram (`module()`, `run_decompositions`)
gets one: the `FastProgram` builds it from the same JSON on first use.
"""

from __future__ import annotations

import keyword

# Schema versions this reader was checked against (torch/_export/serde/schema.py SCHEMA_VERSION):
# major 8, minors up to 20 (torch 2.13). A newer minor may add fields: those go to torch.
SCHEMA_MAJOR = 8
SCHEMA_MAX_MINOR = 20

# ScalarType (schema.py) -> torch dtype name
_DTYPES = {
    1: "uint8",
    2: "int8",
    3: "int16",
    4: "int32",
    5: "int64",
    6: "float16",
    7: "float32",
    8: "float64",
    9: "complex32",
    10: "complex64",
    11: "complex128",
    12: "bool",
    13: "bfloat16",
    28: "uint16",
    29: "float8_e4m3fn",
    30: "float8_e5m2",
    31: "float8_e4m3fnuz",
    32: "float8_e5m2fnuz",
    33: "float8_e8m0fnu",
    34: "uint32",
    35: "uint64",
}
# Layout / MemoryFormat (schema.py) -> torch attribute names
_LAYOUTS = {1: "sparse_coo", 2: "sparse_csr", 3: "sparse_csc", 4: "sparse_bsr", 5: "sparse_bsc",
            6: "_mkldnn", 7: "strided"}  # fmt: skip
_MEMORY_FORMATS = {1: "contiguous_format", 2: "channels_last", 3: "channels_last_3d",
                   4: "preserve_format"}  # fmt: skip

_PROGRAM_KEYS = {"graph_module", "opset_version", "range_constraints", "schema_version",
                 "verifiers", "torch_version", "guards_code"}  # fmt: skip
_GM_KEYS = {"graph", "signature", "module_call_graph", "metadata", "treespec_namedtuple_fields"}
_GRAPH_KEYS = {"inputs", "outputs", "nodes", "tensor_values", "sym_int_values",
               "sym_bool_values", "is_single_tensor_return", "custom_obj_values",
               "sym_float_values"}  # fmt: skip
_NODE_KEYS = {"target", "inputs", "outputs", "metadata", "is_hop_single_tensor_return", "name"}
_TENSOR_META_KEYS = {"dtype", "sizes", "requires_grad", "device", "strides", "storage_offset",
                     "layout"}  # fmt: skip
_SIG_KEYS = {"input_specs", "output_specs"}


class Unsupported(Exception):
    """The program is outside what this reader handles: use torch's deserializer."""


def dtype_of(code):
    """The torch dtype of a serialized ScalarType, or None."""
    import torch

    name = _DTYPES.get(code) if isinstance(code, int) and not isinstance(code, bool) else None
    return getattr(torch, name, None) if name else None


def read_program(program: dict, state_dict: dict, constants: dict, slow):
    """A FastProgram for `program` (the parsed models/*.json), or None when it is outside the
    gate. `slow()` returns torch's ExportedProgram for the same archive (used on demand)."""
    try:
        return _Reader(program).build(state_dict, constants, slow)
    except Unsupported:
        return None


class _CallSpec:
    __slots__ = ("in_spec", "out_spec")

    def __init__(self, in_spec, out_spec):
        self.in_spec, self.out_spec = in_spec, out_spec


class FastProgram:
    """What conversion reads of an ExportedProgram (graph_module, graph, graph_signature,
    state_dict, constants, range_constraints, call_spec); any other attribute comes from the
    ExportedProgram torch's deserializer builds from the same archive, on first use."""

    def __init__(self, graph_module, signature, state_dict, constants, out_spec, slow):
        self.graph_module = graph_module
        self.graph = graph_module.graph
        self.graph_signature = signature
        self.state_dict = state_dict
        self.constants = constants
        self.range_constraints = {}
        self.call_spec = _CallSpec(None, out_spec)
        self._slow = slow
        self._ep = None

    def exported_program(self):
        """torch's own ExportedProgram for this archive."""
        if self._ep is None:
            self._ep = self._slow()
        return self._ep

    def run_decompositions(self, *args, **kwargs):
        return self.exported_program().run_decompositions(*args, **kwargs)

    def module(self, *args, **kwargs):
        return self.exported_program().module(*args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.exported_program(), name)


def _one(union: dict, what: str):
    """(kind, value) of a serialized union ({"as_int": 3})."""
    if not isinstance(union, dict) or len(union) != 1:
        raise Unsupported(what)
    return next(iter(union.items()))


class _Reader:
    def __init__(self, program: dict):
        self.program = program
        self.nodes: dict = {}  # serialized value name -> fx.Node
        self.metas: dict = {}  # serialized tensor name -> its meta-device tensor

    def build(self, state_dict, constants, slow):
        import torch
        from torch.utils._pytree import treespec_loads

        p = self.program
        version = p.get("schema_version") or {}
        major, minor = version.get("major"), version.get("minor")
        if major != SCHEMA_MAJOR or not isinstance(minor, int) or minor > SCHEMA_MAX_MINOR:
            raise Unsupported(f"schema version {major}.{minor}")
        if set(p) - _PROGRAM_KEYS or p.get("range_constraints"):
            raise Unsupported("program fields / symbolic sizes")
        gm_json = p["graph_module"]
        if set(gm_json) - _GM_KEYS or gm_json.get("treespec_namedtuple_fields"):
            raise Unsupported("graph module fields")
        g = gm_json["graph"]
        if set(g) - _GRAPH_KEYS:
            raise Unsupported("graph fields")
        for key in ("sym_int_values", "sym_bool_values", "sym_float_values", "custom_obj_values"):
            if g.get(key):
                raise Unsupported(key)
        calls = gm_json.get("module_call_graph") or []
        if not calls or calls[0].get("fqn") != "" or not calls[0].get("signature"):
            raise Unsupported("module call graph")
        out_spec_json = calls[0]["signature"].get("out_spec")
        if not isinstance(out_spec_json, str) or "namedtuple" in out_spec_json:
            raise Unsupported("output spec")

        self.graph = torch.fx.Graph()
        self._tensor_values(g.get("tensor_values") or {})
        for inp in g.get("inputs") or []:
            kind, value = _one(inp, "graph input")
            if kind != "as_tensor":
                raise Unsupported("non-tensor graph input")
            name = value["name"]
            node = self.graph.placeholder(name)
            node.name = name
            self._bind(name, node)
        for sn in g.get("nodes") or []:
            self._node(sn)
        outs = [self._graph_output(o) for o in g.get("outputs") or []]
        if g.get("is_single_tensor_return"):
            if len(outs) != 1 or not isinstance(outs[0], torch.fx.Node):
                raise Unsupported("single tensor return")
            out_node = self.graph.output(outs[0])
            out_node.meta["val"] = outs[0].meta["val"]
        else:
            out_node = self.graph.output(tuple(outs))
            out_node.meta["val"] = tuple(
                o.meta["val"] if isinstance(o, torch.fx.Node) else o for o in outs
            )
        signature = self._signature(gm_json.get("signature") or {})
        try:
            out_spec = treespec_loads(out_spec_json)
        except Exception as e:  # an unfamiliar pytree encoding
            raise Unsupported(f"output spec: {e}") from None
        gm = torch.fx.GraphModule(torch.nn.Module(), self.graph)
        return FastProgram(gm, signature, state_dict, constants, out_spec, slow)

    # -- values ----------------------------------------------------------------------------------
    def _tensor_values(self, values: dict) -> None:
        import torch

        for name, tm in values.items():
            if not isinstance(tm, dict) or set(tm) - _TENSOR_META_KEYS:
                raise Unsupported("tensor meta fields")
            dtype = dtype_of(tm.get("dtype"))
            if dtype is None or tm.get("layout", 7) != 7:
                raise Unsupported("tensor dtype / layout")
            sizes = [_static(s) for s in tm.get("sizes", ())]
            strides = [_static(s) for s in tm.get("strides", ())]
            if len(sizes) != len(strides) or any(d < 0 for d in sizes):
                raise Unsupported("tensor sizes")
            self.metas[name] = torch.empty_strided(sizes, strides, dtype=dtype, device="meta")

    def _bind(self, name: str, node) -> None:
        if name in self.nodes or name not in self.metas:
            raise Unsupported(f"value {name!r} defined twice or without metadata")
        node.name = name
        node.meta["val"] = self.metas[name]
        self.nodes[name] = node

    def _tensor(self, value):
        name = value.get("name") if isinstance(value, dict) else None
        node = self.nodes.get(name)
        if node is None:
            raise Unsupported(f"tensor {name!r} used before it is defined")
        return node

    def _arg(self, arg: dict):
        import torch

        kind, v = _one(arg, "argument")
        if kind == "as_none":
            return None
        if kind == "as_tensor":
            return self._tensor(v)
        if kind == "as_tensors":
            return [self._tensor(t) for t in v]
        if kind == "as_optional_tensors":
            out = []
            for t in v:
                k, tv = _one(t, "optional tensor")
                if k == "as_none":
                    out.append(None)
                elif k == "as_tensor":
                    out.append(self._tensor(tv))
                else:
                    raise Unsupported("optional tensor")
            return out
        if kind in ("as_int", "as_float", "as_bool", "as_string"):
            return v
        if kind in ("as_ints", "as_floats", "as_bools", "as_strings"):
            return list(v)
        if kind in ("as_sym_int", "as_sym_float", "as_sym_bool"):
            return _static_scalar(v)
        if kind in ("as_sym_ints", "as_sym_floats", "as_sym_bools"):
            return [_static_scalar(x) for x in v]
        if kind == "as_scalar_type":
            dtype = dtype_of(v)
            if dtype is None:
                raise Unsupported("scalar type")
            return dtype
        if kind == "as_layout" and v in _LAYOUTS:
            return getattr(torch, _LAYOUTS[v])
        if kind == "as_memory_format" and v in _MEMORY_FORMATS:
            return getattr(torch, _MEMORY_FORMATS[v])
        if kind == "as_device" and isinstance(v, dict) and set(v) <= {"type", "index"}:
            return torch.device(v["type"], v.get("index"))
        raise Unsupported(f"argument kind {kind}")

    # -- nodes -----------------------------------------------------------------------------------
    def _node(self, sn: dict) -> None:
        if not isinstance(sn, dict) or set(sn) - _NODE_KEYS or not sn.get("name"):
            raise Unsupported("node fields")
        target = _overload(sn.get("target"))
        schema = target._schema
        given = {}
        for inp in sn.get("inputs") or []:
            if not isinstance(inp, dict) or set(inp) - {"name", "arg", "kind"}:
                raise Unsupported("node input fields")
            given[inp["name"]] = (self._arg(inp["arg"]), inp.get("kind"))
        if set(given) - {a.name for a in schema.arguments}:
            raise Unsupported("argument not in the op's schema")
        args, kwargs = _split_args(schema, given)
        node = self.graph.create_node("call_function", target, tuple(args), kwargs, sn["name"])
        outs = sn.get("outputs") or []
        if not outs:  # an op with no results (an assertion)
            return
        if len(outs) == 1 and "as_tensor" in outs[0]:
            self._bind(outs[0]["as_tensor"]["name"], node)
            return
        if len(outs) == 1 and "as_tensors" in outs[0]:
            items = [{"as_tensor": t} for t in outs[0]["as_tensors"]]
        elif len(outs) > 1:
            items = outs
        else:
            raise Unsupported("node outputs")
        vals = []
        for i, item in enumerate(items):
            kind, v = _one(item, "node output")
            if kind == "as_tensor":
                name = v["name"]
                get = self.graph.create_node("call_function", _getitem(), (node, i), name=name)
                self._bind(name, get)
                vals.append(get.meta["val"])
            elif kind == "as_none":
                get = self.graph.create_node("call_function", _getitem(), (node, i), name="as_none")
                get.meta["val"] = None
                vals.append(None)
            else:
                raise Unsupported("node output kind")
        node.meta["val"] = tuple(vals)  # the node keeps the name FX gave it, as in torch

    def _graph_output(self, out: dict):
        kind, v = _one(out, "graph output")
        if kind == "as_tensor":
            return self._tensor(v)
        if kind in ("as_int", "as_float", "as_bool"):
            return v
        if kind == "as_none":
            return None
        raise Unsupported("graph output kind")

    # -- signature -------------------------------------------------------------------------------
    def _signature(self, sig: dict):
        from torch.export.graph_signature import (
            ExportGraphSignature,
            InputKind,
            InputSpec,
            OutputKind,
            OutputSpec,
            TensorArgument,
        )

        if set(sig) - _SIG_KEYS:
            raise Unsupported("signature fields")
        inputs = []
        for spec in sig.get("input_specs") or []:
            kind, v = _one(spec, "input spec")
            if kind == "user_input":
                k, a = _one(v.get("arg"), "user input")
                if k != "as_tensor":
                    raise Unsupported("user input kind")
                inputs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(a["name"]), None))
            elif kind == "parameter":
                arg = TensorArgument(v["arg"]["name"])
                inputs.append(InputSpec(InputKind.PARAMETER, arg, v["parameter_name"]))
            elif kind == "buffer":
                arg = TensorArgument(v["arg"]["name"])
                inputs.append(
                    InputSpec(InputKind.BUFFER, arg, v["buffer_name"], bool(v["persistent"]))
                )
            elif kind == "tensor_constant":
                arg = TensorArgument(v["arg"]["name"])
                inputs.append(InputSpec(InputKind.CONSTANT_TENSOR, arg, v["tensor_constant_name"]))
            else:
                raise Unsupported(f"input spec {kind}")
        outputs = []
        for spec in sig.get("output_specs") or []:
            kind, v = _one(spec, "output spec")
            if kind != "user_output":
                raise Unsupported(f"output spec {kind}")
            k, a = _one(v.get("arg"), "user output")
            if k != "as_tensor":
                raise Unsupported("user output kind")
            outputs.append(OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(a["name"]), None))
        return ExportGraphSignature(inputs, outputs)


def _static(s) -> int:
    if isinstance(s, dict) and len(s) == 1 and isinstance(s.get("as_int"), int):
        return s["as_int"]
    raise Unsupported("symbolic size")


def _static_scalar(s):
    if isinstance(s, dict) and len(s) == 1:
        kind, v = next(iter(s.items()))
        if kind in ("as_int", "as_float", "as_bool"):
            return v
    raise Unsupported("symbolic scalar")


def _getitem():
    import operator

    return operator.getitem


def _overload(target):
    """The OpOverload a serialized target names ("torch.ops.aten.conv2d.default")."""
    import torch

    parts = target.split(".") if isinstance(target, str) else []
    if len(parts) != 5 or parts[:2] != ["torch", "ops"] or parts[2] == "higher_order":
        raise Unsupported(f"target {target!r}")
    try:
        op = getattr(getattr(getattr(torch.ops, parts[2]), parts[3]), parts[4])
    except (AttributeError, RuntimeError):
        raise Unsupported(f"target {target!r}") from None
    if not isinstance(op, torch._ops.OpOverload):
        raise Unsupported(f"target {target!r}")
    if any(r.type.kind() not in ("TensorType", "ListType") for r in op._schema.returns):
        raise Unsupported(f"target {target!r} returns a non-tensor")  # sizes, scalars
    return op


def _split_args(schema, given: dict):
    """Positional args and kwargs for the op, the way torch's deserializer splits them: by the
    serialized argument kind, else positional for required non-keyword-only arguments."""
    args: list = []
    kwargs: dict = {}
    for a in schema.arguments:
        if a.name in given:
            value, kind = given[a.name]
            if kind == 1:
                args.append(value)
                continue
            if kind == 2 and not keyword.iskeyword(a.name):
                kwargs[a.name] = value
                continue
        if not a.has_default_value() and not a.kwarg_only:
            if a.name not in given:
                raise Unsupported(f"missing argument {a.name}")
            args.append(given[a.name][0])
        elif keyword.iskeyword(a.name):
            raise Unsupported("keyword-named argument")
        elif a.name in given:
            kwargs[a.name] = given[a.name][0]
    return args, kwargs
