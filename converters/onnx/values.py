"""Run-time values between ONNX's Python form and Relay's: a sequence is a Python list here
and a prelude `List` there; an optional is None or its value here and an `Option` there."""

from __future__ import annotations

import numpy as np

from relay_core.interp import ConstructorValue, to_list
from relay_core.ir import IRModule, TensorType, TypeCall

from .dtypes import LIST, OPTION


def to_relay_value(value, t, mod: IRModule):
    """`value` (array, list, None) as the interpreter's value of Relay type `t`."""
    if isinstance(t, TypeCall) and t.func == LIST:
        out = ConstructorValue(mod.get_constructor("Nil"), ())
        cons = mod.get_constructor("Cons")
        for v in reversed(list(value)):
            out = ConstructorValue(cons, (to_relay_value(v, t.args[0], mod), out))
        return out
    if isinstance(t, TypeCall) and t.func == OPTION:
        if value is None:
            return ConstructorValue(mod.get_constructor("None"), ())
        return ConstructorValue(
            mod.get_constructor("Some"), (to_relay_value(value, t.args[0], mod),)
        )
    if isinstance(t, TensorType) and isinstance(value, np.ndarray) and value.dtype.kind in "OUS":
        return np.asarray(value, dtype=object)
    return value


def from_relay_value(value):
    """An interpreter value as arrays, lists (List) and None / value (Option)."""
    if isinstance(value, ConstructorValue):
        name = value.constructor.name
        if name in ("Cons", "Nil"):
            return [from_relay_value(v) for v in to_list(value)]
        if name == "None":
            return None
        if name == "Some":
            return from_relay_value(value.fields[0])
        raise TypeError(f"unexpected constructor {name} in a model output")
    if isinstance(value, tuple):
        return tuple(from_relay_value(v) for v in value)
    return value


def run(mod: IRModule, inputs: list, max_bytes: int | None = None) -> list:
    """Evaluate @main of a converted model on ONNX-form inputs; a list of ONNX-form outputs."""
    from relay_core.interp import Closure, Env, Interpreter

    main = mod["main"]
    args = []
    for p, v in zip(main.params, inputs):
        t = p.type_annotation or p.checked_type
        args.append(
            to_relay_value(v, t, mod) if not isinstance(t, TensorType) else _tensor_input(v, t)
        )
    if len(inputs) != len(main.params):
        from relay_core.errors import InputError

        raise InputError(f"the model takes {len(main.params)} inputs, got {len(inputs)}")
    interp = Interpreter(mod, max_bytes)
    out = interp.apply(Closure(main, Env(), "main"), args)
    n = len(mod.attrs.get("output_names", ())) or 1
    outs = list(out) if n > 1 else [out]
    return [from_relay_value(o) for o in outs]


def _tensor_input(v, t: TensorType):
    from relay_core.interp import _coerce_input

    if isinstance(v, np.ndarray) and v.dtype.kind in "OUS":
        return np.asarray(v, dtype=object)
    return _coerce_input(v, t, "input")
