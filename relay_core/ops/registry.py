"""The operator registry: one `OpDef` per operator, holding everything about it.

name      "nn.conv2d", "add", ...
attrs     a frozen dataclass of its attributes with defaults (None: no attributes)
type_rel  (arg_types, attrs) -> result type; raises OpTypeError for incompatible inputs
ref       (inputs: list[np.ndarray], attrs) -> np.ndarray | tuple: the numpy reference
pattern   the fusion kind (OpPattern)
lower     how it is computed: an `Elementwise` spec, or a `Rule` naming its tensor-expression
          rule in relay_core/te/ or relay_core/backend/ (relay_core.te.lowering.rule_of reads both)
kernel    a `Kernel` naming its hand-written LLVM generator in relay_core/backend/kernels/, tried
          before `lower` by the backend
grad      (call, output_grad, ctx) -> input gradients, as Relay expressions: a function, or a
          `Rule` naming one in relay_core/ops/grads*.py

Every fact is declared by the op's own module: in the `OpDef(...)` or factory call, or in a
`declare(...)` beside it (JAX's lax style: rule tables beside the primitive). Rules that live in
a higher layer (te/, backend/) are named lazily by a `Rule` / `Kernel` ("package.module:function",
resolved on first use), so that ops/ imports nothing above it and no other module has to reach
into the OpDef. After registration only the declaring module may set a field
(`OpDef.__setattr__` refuses anyone else), and no table outside the OpDef maps op names to rules.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import OpTypeError
from ..ir.hooks import install_op_lookup


class OpPattern(enum.IntEnum):
    """Fusion kinds, ordered from most to least fusible (as in TVM)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_EWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


@dataclass(eq=False)
class OpDef:
    name: str
    type_rel: Callable
    ref: Callable
    pattern: OpPattern = OpPattern.OPAQUE
    attrs: type | None = None
    num_inputs: tuple[int, int | None] = (1, 1)
    doc: str = ""
    # Filled by later layers; kept here so that an op's facts stay in one place.
    lower: typing.Any = None
    grad: Callable | None = None
    # For dynamic ops (shape given as a tensor): (call) -> equivalent static call, or None.
    to_static: Callable | None = None
    # Output shape depends on input *values* (nonzero, unique): never constant-shaped.
    data_dependent_shape: bool = False
    # Has effects or randomness: never folded, never deduplicated.
    stateful: bool = False
    # (call, arg_types) -> an equivalent expression of simpler ops (batch_norm as multiply-add,
    # dropout as identity): SimplifyInference applies it, and an op without a gradient rule is
    # differentiated through it. Filled by relay_core/ops/decompose.py.
    decompose: Callable | None = None
    # The result depends only on the argument *types* (shape_of, ndarray_size): FoldConstant
    # evaluates it whenever the argument shapes are static.
    shape_only: bool = False
    # (rng) -> iterable of Sample: valid inputs + attrs for registry-driven tests.
    samples: Callable | None = None
    # Dynamic ops: the inputs (shape tensors) whose static *length* fixes the result's rank.
    shape_inputs: tuple[int, ...] = ()
    # Only reinterprets its first input's data (reshape, squeeze, ...): the backend may alias
    # the result to the input instead of copying.
    view: bool = False
    # `(attrs) -> bool`: axis 0 of the first input and of the output is an independent batch
    # axis, so a kernel for one element can serve a run-time batch (convolution, pooling, dense).
    batch_axis0: Callable | None = None
    # The result has the argument's type, whatever it is (on_device, device_copy): the type
    # checker unifies them directly instead of calling `type_rel`.
    type_identity: bool = False
    # A hand-written LLVM kernel generator (`Kernel`): the backend tries it before `lower`.
    kernel: typing.Any = None
    # A generator for calls with run-time extents beyond `batch_axis0`'s batch axis:
    # `emit(llmod, name, in_types, out_types, attrs, const_inputs)` defines
    # `void name(in..., out..., i64 dims of each input..., i32 nthreads)` (a static extent's
    # argument is passed too, and ignored), or raises NotImplementedError.
    dynamic_kernel: typing.Any = None
    # The module that declared the op (set by `register`): the only one that may set its fields.
    module: str = ""

    def __setattr__(self, key, value):
        if key in _GUARDED and self.__dict__.get("_sealed"):
            who = _caller_module()
            if who != self.module:
                raise AttributeError(
                    f"{who} sets {self.name}.{key} after registration: an operator's facts are "
                    f"declared by its own module ({self.module}), in its OpDef or a declare()"
                )
        object.__setattr__(self, key, value)

    def make_attrs(self, **kw):
        """An attrs instance from keyword arguments, lists coerced to tuples."""
        if self.attrs is None:
            if kw:
                raise OpTypeError(f"operator {self.name} takes no attributes, got {sorted(kw)}")
            return None
        return make_attrs(self.attrs, kw, self.name)

    def check_arity(self, n: int) -> None:
        lo, hi = self.num_inputs
        if n < lo or (hi is not None and n > hi):
            want = f"{lo}" if lo == hi else (f"{lo}..{hi}" if hi is not None else f"at least {lo}")
            raise OpTypeError(f"operator {self.name} takes {want} inputs, got {n}")


class Rule:
    """A rule named lazily: `Rule("relay_core.te.lower_nn_window:conv", 2)` is
    `conv(2)` from that module (with no arguments: the function itself), imported on first use.
    Calling a Rule calls what it names, so it stands wherever a function does (`OpDef.lower`,
    `grad`, `decompose`). It lets an op name a rule of a higher layer without importing it."""

    __slots__ = ("target", "args", "_fn")

    def __init__(self, target: str, *args):
        if ":" not in target:
            raise ValueError(f"a rule is named 'package.module:function', got {target!r}")
        self.target, self.args, self._fn = target, args, None

    def resolve(self) -> Callable:
        fn = self._fn
        if fn is None:
            mod, _, name = self.target.partition(":")
            fn = getattr(importlib.import_module(mod), name)
            if self.args:
                fn = fn(*self.args)
            self._fn = fn
        return fn

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __eq__(self, other):
        return type(other) is type(self) and (self.target, self.args) == (other.target, other.args)

    def __hash__(self):
        return hash((self.target, self.args))

    def __repr__(self):
        args = "".join(f", {a!r}" for a in self.args)
        return f"{type(self).__name__}({self.target!r}{args})"


class Kernel(Rule):
    """A hand-written kernel generator named lazily, as `Rule` does
    (`Kernel("relay_core.backend.kernels.pool:emit_pool", "max", 2)`): the backend calls it as
    `emit(llmod, name, in_types, out_types, attrs, epilogue, const_inputs)` (see
    relay_core/backend/kernels/__init__.py) before falling back to the op's `lower`."""

    __slots__ = ()


@dataclass(frozen=True)
class Elementwise:
    """How an elementwise op is computed, declared with the op: `fn(x, E)` is one output element
    from one input element in the tensor-expression language, `E` being relay_core.te.expr
    (handed in by the lowering, so that ops/ never imports te/). Used as `OpDef.lower`."""

    fn: Callable


@dataclass
class Sample:
    """One valid call of an op for tests: numpy inputs and attribute keywords."""

    inputs: list
    attrs: dict = field(default_factory=dict)
    # Tolerance when comparing lowered code with `ref` (ops like exp need more than 0).
    rtol: float = 1e-5
    atol: float = 1e-6


_REGISTRY: dict[str, OpDef] = {}


def _caller_module() -> str:
    """The module whose top-level code is running (the one being imported): the module that
    declares an op, whatever helpers (factories, `_reg`) it calls to do so."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_name != "<module>":
        f = f.f_back
    return f.f_globals.get("__name__", "") if f is not None else ""


def register(opdef: OpDef) -> OpDef:
    if opdef.name in _REGISTRY:
        raise ValueError(f"operator {opdef.name} is registered twice")
    if opdef.attrs is not None and not dataclasses.is_dataclass(opdef.attrs):
        raise TypeError(f"attrs of {opdef.name} must be a dataclass")
    opdef.module = _caller_module()
    object.__setattr__(opdef, "_sealed", True)
    _REGISTRY[opdef.name] = opdef
    return opdef


_DECLARABLE = ("lower", "kernel", "dynamic_kernel", "grad", "decompose", "view", "batch_axis0")
# The facts that other packages used to attach after registration: only the op's module may set
# them once it is registered (`OpDef.__setattr__`; tests/core/test_layers.py checks the source).
_GUARDED = frozenset(_DECLARABLE) | {"to_static", "shape_inputs", "type_identity", "module"}


def declare(*names: str, **facts) -> None:
    """Declare more facts of ops registered just before, in the same module (JAX lax style:
    `declare("nn.conv2d", lower=Rule(...), kernel=Kernel(...), grad=_conv2d_grad)`): how each is
    computed, differentiated or decomposed, and the `view` / `batch_axis0` flags. Only the op's
    own module may do this (checked), and a fact is declared once."""
    bad = sorted(set(facts) - set(_DECLARABLE))
    if bad:
        raise TypeError(f"declare() takes {', '.join(_DECLARABLE)}, not {', '.join(bad)}")
    for n in names:
        op = lookup(n)
        for k, v in facts.items():
            if getattr(op, k) not in (None, False):
                raise ValueError(f"{n}.{k} is declared twice")
            setattr(op, k, v)


def lookup(name: str) -> OpDef:
    try:
        return _REGISTRY[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise OpTypeError(f"unknown operator {name!r}{hint}") from None


def all_ops() -> dict[str, OpDef]:
    return dict(_REGISTRY)


install_op_lookup(lookup)  # ir/ resolves `Op.get` / `call` through this table


# ---------------------------------------------------------------------------------------------
# Attributes.

_hints_cache: dict[type, dict] = {}


def _field_types(cls: type) -> dict:
    h = _hints_cache.get(cls)
    if h is None:
        h = _hints_cache[cls] = typing.get_type_hints(cls)
    return h


def _coerce(value, hint):
    """Coerce parsed/converter values to the attr field's declared type."""
    origin = typing.get_origin(hint)
    if hint is typing.Any or hint is None:
        return _freeze(value)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(value, a)
            except (TypeError, ValueError):
                continue
        return _freeze(value)
    if origin is tuple:
        if value is None:
            return None
        if not isinstance(value, (list, tuple)):
            value = (value,)
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0]) for v in value)
        if args and len(args) == len(value):
            return tuple(_coerce(v, a) for v, a in zip(value, args))
        return tuple(_freeze(v) for v in value)
    if hint is bool:
        if isinstance(value, str):
            return value.lower() in ("true", "1")
        return bool(value)
    if hint is int:
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"expected an integer, got {value}")
        return int(value)
    if hint is float:
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise TypeError(f"expected a string, got {value!r}")
        return value
    return _freeze(value)


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


def make_attrs(cls: type, kw: dict, op_name: str = ""):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in kw if k not in fields]
    if unknown:
        raise OpTypeError(
            f"operator {op_name} has no attribute(s) {', '.join(unknown)}; "
            f"its attributes are: {', '.join(fields) or '(none)'}"
        )
    hints = _field_types(cls)
    vals = {}
    for k, v in kw.items():
        try:
            vals[k] = _coerce(v, hints.get(k, typing.Any))
        except (TypeError, ValueError) as e:
            raise OpTypeError(f"attribute {k} of {op_name}: {e}") from None
    return cls(**vals)


def attrs_to_dict(attrs, non_default_only: bool = False) -> dict:
    if attrs is None:
        return {}
    out = {}
    for f in dataclasses.fields(attrs):
        v = getattr(attrs, f.name)
        if non_default_only:
            if f.default is not dataclasses.MISSING and v == f.default:
                continue
            if f.default_factory is not dataclasses.MISSING and v == f.default_factory():
                continue
        out[f.name] = v
    return out


def attrs(cls=None, /):
    """Decorator for op attribute classes: a frozen dataclass."""

    def wrap(c):
        return dataclass(frozen=True)(c)

    return wrap if cls is None else wrap(cls)
