"""A compiled module that specialises per input shape.

`build` compiles a module whose inputs have unknown (`?`) or symbolic dimensions once, shape-
generic, whenever every lowering rule can take its extents from its inputs at run time. Where
one cannot, `build` returns a `SpecializingModule` instead of failing: on the first call with a
new set of concrete input shapes it pins them into `@main`'s parameter types, builds that
version (through the normal on-disk compile cache, so a later process loads it) and keeps the
last `max_versions` versions in memory (least recently used first out).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np

from .. import events
from ..errors import InputError, RelayError
from ..ir.module import IRModule
from ..ir.types import TensorType
from .runtime import NodeArg, _node_arg

MAX_VERSIONS = 8


class SpecializingModule:
    """Callable like a CompiledModule (`lib(x)`, `lib(name=x)`, `run`, `get_inputs`); each new
    combination of input shapes compiles (or loads from the cache) one static version.

    >>> lib = relay_core.build(mod)        # mod's input has a `?` batch and a rule needs it
    >>> lib(np.ones((2, 3), "float32"))    # compiles the (2, 3) version, then runs it
    >>> lib.versions                        # [((2, 3),)]
    """

    def __init__(self, mod: IRModule, reason: str, max_versions: int = MAX_VERSIONS, **build_kw):
        from ..typing import infer_type
        from .compiler import _io_json

        self.mod = infer_type(mod)
        self.reason = reason  # why the generic build failed
        self.max_versions = max_versions
        self._build_kw = build_kw
        self._versions: OrderedDict = OrderedDict()
        main = self.mod["main"]
        params = [p.name_hint for p in main.params]
        names = list(main.attr("input_names") or ())[: len(params)]
        names += params[len(names) :]
        self.input_names = names
        self._param_types = [p.checked_type for p in main.params]
        ret = main.checked_type.ret_type
        outs = list(ret.fields) if type(ret).__name__ == "TupleType" else [ret]
        onames = list(main.attr("output_names") or self.mod.attrs.get("output_names") or [])
        if len(onames) != len(outs):
            onames = [f"output{k}" for k in range(len(outs))]
        self.output_names = [str(n) for n in onames]
        self.manifest = {
            "kind": "specializing",
            "inputs": [
                _io_json(n, t, None, p) for n, t, p in zip(names, self._param_types, params)
            ],
            "outputs": [_io_json(n, t, None) for n, t in zip(self.output_names, outs)],
        }
        self._index = {n: k for k, n in enumerate(params)}
        self._index.update({n: k for k, n in enumerate(names)})
        self.build_seconds = 0.0
        self.cache_hit = False
        # run-time budget of one call, handed to every version (see CompiledModule)
        self.max_iterations: int | None = None
        self.timeout: float | None = None

    @property
    def versions(self) -> list[tuple]:
        """The input shapes of the versions kept, least recently used first."""
        return list(self._versions)

    # -- calling -------------------------------------------------------------------------------
    def _bind(self, args, kwargs) -> list:
        n = len(self.input_names)
        vals = list(args) + [None] * (n - len(args))
        if len(args) > n:
            raise InputError(f"the model takes {n} inputs, got {len(args)}")
        for k, v in kwargs.items():
            i = self._index.get(k)
            if i is None:
                raise InputError(f"unknown input {k!r}; inputs are {self.input_names}")
            if vals[i] is not None:
                raise InputError(f"input {k!r} given twice")
            vals[i] = v
        missing = [self.input_names[i] for i, v in enumerate(vals) if v is None]
        if missing:
            raise InputError(f"missing input(s) {missing}; inputs are {self.input_names}")
        return vals

    def _version(self, vals):
        shapes = []
        for i, (v, t) in enumerate(zip(vals, self._param_types)):
            if not isinstance(t, TensorType):
                shapes.append(None)
                continue
            shape = tuple(np.shape(v))
            if len(shape) != len(t.shape) or any(
                isinstance(d, int) and d != s for d, s in zip(t.shape, shape)
            ):
                raise InputError(f"input {self.input_names[i]!r} has shape {shape}, expected {t}")
            shapes.append(shape)
        key = tuple(shapes)
        lib = self._versions.get(key)
        if lib is not None:
            self._versions.move_to_end(key)
            return lib
        from .compiler import build

        with events.stage("specialising", ", ".join(str(s) for s in key if s is not None)):
            lib = build(pin_shapes(self.mod, shapes), specialize=False, **self._build_kw)
        self.build_seconds += lib.build_seconds
        self._versions[key] = lib
        while len(self._versions) > self.max_versions:
            self._versions.popitem(last=False)
        return lib

    def _budgeted(self, lib):
        lib.max_iterations, lib.timeout = self.max_iterations, self.timeout
        return lib

    def __call__(self, /, *args, **kwargs) -> list[np.ndarray]:
        vals = self._bind(args, kwargs)
        return self._budgeted(self._version(vals))(*vals)

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping, run_options=None):
        """onnxruntime's `run` (see CompiledModule.run)."""
        if not isinstance(input_feed, Mapping):
            raise InputError("run(output_names, input_feed) takes the inputs as a dict")
        vals = self._bind((), dict(input_feed))
        lib = self._budgeted(self._version(vals))
        return lib.run(output_names, dict(zip(self.input_names, vals)))

    def get_inputs(self) -> list[NodeArg]:
        return [_node_arg(i) for i in self.manifest["inputs"]]

    def get_outputs(self) -> list[NodeArg]:
        return [_node_arg(o) for o in self.manifest["outputs"]]

    @property
    def input_types(self) -> list[str]:
        return [str(t) for t in self._param_types]

    def export(self, path: str) -> str:
        raise RelayError(
            "this module compiles one version per input shape (a lowering needs static "
            f"extents: {self.reason}); fix the input shapes (shapes= / --input-shape) to export it"
        )

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {t}" for n, t in zip(self.input_names, self.input_types))
        return f"SpecializingModule(({ins}), {len(self._versions)} versions)"


def pin_shapes(mod: IRModule, shapes: Sequence) -> IRModule:
    """`mod` with `@main`'s tensor parameters retyped to the given concrete shapes (None keeps
    a parameter's type); the result type is left to inference."""
    from ..ir.expr import Function, Var
    from ..ir.visitor import substitute
    from ..typing import infer_type

    main = mod["main"]
    new_params, mapping = [], {}
    for p, s in zip(main.params, shapes):
        t = p.checked_type
        if s is None or not isinstance(t, TensorType):
            new_params.append(p)
            continue
        q = Var(p.name_hint, TensorType(tuple(int(d) for d in s), t.dtype))
        new_params.append(q)
        mapping[p] = q
    body = substitute(main.body, mapping)
    out = mod.copy()
    out["main"] = Function(tuple(new_params), body, None, main.type_params, main.attrs)
    return infer_type(out)
