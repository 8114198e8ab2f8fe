"""Registry-driven checks: every OpDef is complete, and its type relation agrees with its
numpy reference on the sample inputs it declares (static shapes, and the same with every
dimension unknown)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from relay_core.ir import Any, TensorType, TupleType, TypeCall
from relay_core.ir import dtype as dt
from relay_core.ops import OpPattern, all_ops

OPS = sorted(all_ops())


def _arg_type(x):
    if isinstance(x, (tuple, list)):
        return TupleType(tuple(_arg_type(v) for v in x))
    return TensorType(x.shape, dt.from_numpy(x.dtype))


def _erase_dims(t):
    if isinstance(t, TupleType):
        return TupleType(tuple(_erase_dims(f) for f in t.fields))
    return TensorType(tuple(Any for _ in t.shape), t.dtype)


def _check(value, t, where, allow_any=True):
    if isinstance(t, TypeCall):  # an opaque handle (TVM's Storage): bytes here
        assert isinstance(value, np.ndarray) and value.dtype == np.uint8, f"{where}: {t}"
        return
    if isinstance(t, TupleType):
        assert isinstance(value, tuple), f"{where}: type says tuple, ref gave {type(value)}"
        assert len(value) == len(t.fields), f"{where}: tuple arity"
        for i, (v, f) in enumerate(zip(value, t.fields)):
            _check(v, f, f"{where}.{i}", allow_any)
        return
    assert isinstance(t, TensorType), f"{where}: unexpected type {t}"
    assert isinstance(value, np.ndarray), f"{where}: ref returned {type(value)}"
    assert dt.from_numpy(value.dtype) == t.dtype, f"{where}: dtype {value.dtype} vs {t.dtype}"
    assert value.ndim == len(t.shape), f"{where}: rank {value.shape} vs {t.shape}"
    for i, (a, b) in enumerate(zip(value.shape, t.shape)):
        if isinstance(b, int):
            assert a == b, f"{where}: dim {i}: ref {value.shape} vs type {t.shape}"
        else:
            assert allow_any, f"{where}: dim {i} not static"


@pytest.mark.parametrize("name", OPS)
def test_opdef_complete(name):
    op = all_ops()[name]
    assert op.name == name
    assert callable(op.type_rel) and callable(op.ref)
    assert isinstance(op.pattern, OpPattern)
    assert op.attrs is None or dataclasses.is_dataclass(op.attrs)
    assert op.samples is not None, f"{name} declares no sample inputs"
    if op.attrs is not None:  # every attribute has a default, so calls can omit it
        for f in dataclasses.fields(op.attrs):
            has_default = f.default is not dataclasses.MISSING or (
                f.default_factory is not dataclasses.MISSING
            )
            assert has_default or name in _REQUIRED_ATTRS_OK, f"{name}.{f.name} has no default"


_REQUIRED_ATTRS_OK: set[str] = set()


@pytest.mark.parametrize("name", OPS)
def test_type_rel_matches_ref(name):
    op = all_ops()[name]
    rng = np.random.default_rng(0)
    n = 0
    for s in op.samples(rng):
        n += 1
        attrs = op.make_attrs(**s.attrs)
        types = [_arg_type(x) for x in s.inputs]
        out_t = op.type_rel(types, attrs)
        out = op.ref(list(s.inputs), attrs)
        shapes = [getattr(x, "shape", None) for x in s.inputs]
        where = f"{name}{shapes} {s.attrs}"
        _check(out, out_t, where, allow_any=op.data_dependent_shape or _has_any(out_t))
        # With every input dim unknown the relation still works and stays compatible. Inputs
        # whose static length fixes the result's rank (dyn.* shape tensors) keep their dims.
        keep = op.shape_inputs
        erased = op.type_rel(
            [t if i in keep else _erase_dims(t) for i, t in enumerate(types)], attrs
        )
        _check(out, erased, where + " (dims erased)")
    assert n > 0, f"{name}: samples() yielded nothing"


def _has_any(t):
    if isinstance(t, TypeCall):
        return False
    if isinstance(t, TupleType):
        return any(_has_any(f) for f in t.fields)
    return not all(isinstance(d, int) for d in t.shape)


def test_op_count_floor():
    # The frontends need a broad set; this only grows.
    assert len(OPS) >= 140
