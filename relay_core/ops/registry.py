"""The operator registry: one `OpDef` per operator, holding everything about it.

name      "nn.conv2d", "add", ...
attrs     a frozen dataclass of its attributes with defaults (None: no attributes)
type_rel  (arg_types, attrs) -> result type; raises OpTypeError for incompatible inputs
ref       (inputs: list[np.ndarray], attrs) -> np.ndarray | tuple: the numpy reference
pattern   the fusion kind (OpPattern)
lower     how it is computed: an `Elementwise` spec declared with the op, or a tensor-expression
          rule filled by relay_core/te/lower_*.py (relay_core.te.lowering.rule_of reads both)
grad      (call, output_grad, ctx) -> input gradients, as Relay expressions
          (declared with the op, as `unary(..., grad=...)` does, or by relay_core/ops/grads*.py)
"""

from __future__ import annotations

import dataclasses
import enum
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


def register(opdef: OpDef) -> OpDef:
    if opdef.name in _REGISTRY:
        raise ValueError(f"operator {opdef.name} is registered twice")
    if opdef.attrs is not None and not dataclasses.is_dataclass(opdef.attrs):
        raise TypeError(f"attrs of {opdef.name} must be a dataclass")
    _REGISTRY[opdef.name] = opdef
    return opdef


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
