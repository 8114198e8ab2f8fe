"""Registry-driven: every operator compiled with the leading dimension of its inputs unknown
(`?`) at compile time, one shape-generic module per op holding all its samples, run at two
concrete sizes (the sample's, and its inputs doubled along that axis) against the numpy
reference. The build may not fall back to per-shape versions (`specialize=False`): every
lowering rule has to take its extents from its inputs at run time.

And once more with *every* dim of those inputs unknown (a model exported with dynamic height
and width: RAFT's correlation pyramid fed grid_sample planes of run-time size), run at the
sample's size: a rule that takes a static extent from a `?` dim fails here.

A sample whose type relation refuses the unknown dimension is left out (the op does not allow
it); ops that fail are listed, with the reason, in unknown_dims_expected_failures.txt."""

from __future__ import annotations

import os

import numpy as np
import pytest

import relay_core
from relay_core.errors import RelayTypeError
from relay_core.ir import Any, Function, IRModule, TensorType, Tuple, Var, call
from relay_core.ir import dtype as dt
from relay_core.ops import all_ops
from relay_core.ops.registry import OpPattern
from tests.expected import ExpectedFailures

from .test_ops_compiled import EXPECTED_FAIL, _flat, _supported, check_output

_CANDIDATES = sorted(n for n, op in all_ops().items() if n not in EXPECTED_FAIL and not op.stateful)
EXPECTED = ExpectedFailures(
    os.path.join(os.path.dirname(__file__), "unknown_dims_expected_failures.txt")
)
EXPECTED_ALL = ExpectedFailures(
    os.path.join(os.path.dirname(__file__), "unknown_all_dims_expected_failures.txt")
)


def _batched(op, s) -> list[int]:
    """Inputs that share the first input's batch: for elementwise / broadcast ops those of the
    same rank and axis-0 size, for the others (conv, dense: weights) those of the same shape."""
    xs = s.inputs
    if not xs or xs[0].ndim == 0 or xs[0].shape[0] == 0:
        return []
    x0 = xs[0]
    if op.pattern <= OpPattern.BROADCAST:
        return [k for k, x in enumerate(xs) if x.ndim == x0.ndim and x.shape[0] == x0.shape[0]]
    return [k for k, x in enumerate(xs) if x.shape == x0.shape]


def _typed(op, s, si, batched, every=False):
    """(params, call) with the batched inputs' axis 0 (`every`: all their dims) unknown, or
    None if the type relation refuses it."""
    vs = []
    for k, x in enumerate(s.inputs):
        unknown = (Any,) * x.ndim if every else (Any,) + x.shape[1:]
        shape = unknown if k in batched else x.shape
        vs.append(Var(f"s{si}_{k}", TensorType(shape, dt.from_numpy(x.dtype))))
    c = call(op.name, *vs, **s.attrs)
    try:
        relay_core.infer_type(IRModule.from_expr(Function(tuple(vs), c)))
    except (RelayTypeError, TypeError, ValueError):
        return None
    return vs, c


def _doubled(s, batched):
    return [np.concatenate([x, x], 0) if k in batched else x for k, x in enumerate(s.inputs)]


def _ref(op, s, inputs):
    try:
        return _flat(op.ref(list(inputs), op.make_attrs(**s.attrs)))
    except Exception:
        return None


def _cases(name):
    op = all_ops()[name]
    rng = np.random.default_rng(0)
    params, outs, runs = [], [], [[], []]  # runs: per size, (feeds, [(sample, refs)])
    feeds = [[], []]
    for si, s in enumerate(op.samples(rng)):
        if not _supported(op, s):
            continue
        batched = _batched(op, s)
        if not batched:
            continue
        typed = _typed(op, s, si, batched)
        if typed is None:
            continue
        big = _doubled(s, batched)
        ref_big = _ref(op, s, big)
        if ref_big is None:  # the op's other inputs fix the size (indices into axis 0, ...)
            continue
        vs, c = typed
        params += vs
        outs.append(c)
        feeds[0] += list(s.inputs)
        feeds[1] += big
        runs[0].append((s, _flat(op.ref(list(s.inputs), op.make_attrs(**s.attrs)))))
        runs[1].append((s, ref_big))
    return params, outs, feeds, runs


_CASES: dict = {}
for _n in _CANDIDATES:
    _c = _cases(_n)
    if _c[1]:  # some sample allows an unknown leading dimension
        _CASES[_n] = _c
OPS = sorted(_CASES)


def test_most_ops_are_covered():
    """The ops left out are those none of whose samples has a batch-like leading axis."""
    assert len(OPS) >= 0.6 * len(_CANDIDATES), (len(OPS), len(_CANDIDATES))


@pytest.mark.parametrize("name", OPS)
def test_op_unknown_leading_dim(name):
    params, outs, feeds, runs = _CASES[name]
    with EXPECTED.check(name):
        mod = relay_core.infer_type(IRModule.from_expr(Function(tuple(params), Tuple(tuple(outs)))))
        lib = relay_core.build(mod, specialize=False)
        for size in (0, 1):
            got = lib(*feeds[size])
            pos = 0
            for s, refs in runs[size]:
                for r in refs:
                    g = got[pos]
                    pos += 1
                    where = f"{name} size {size} {[x.shape for x in s.inputs]} {s.attrs}"
                    check_output(g, r, s, where)


def _all_dims_cases(name):
    op = all_ops()[name]
    rng = np.random.default_rng(0)
    params, outs, feeds, refs = [], [], [], []
    for si, s in enumerate(op.samples(rng)):
        if not _supported(op, s):
            continue
        batched = _batched(op, s)
        if not batched or all(s.inputs[k].ndim < 2 for k in batched):
            continue  # nothing beyond axis 0 to make unknown
        typed = _typed(op, s, si, batched, every=True)
        if typed is None:
            continue
        vs, c = typed
        params += vs
        outs.append(c)
        feeds += list(s.inputs)
        refs.append((s, _flat(op.ref(list(s.inputs), op.make_attrs(**s.attrs)))))
    return params, outs, feeds, refs


_ALL: dict = {}
for _n in OPS:
    _c = _all_dims_cases(_n)
    if _c[1]:
        _ALL[_n] = _c
OPS_ALL = sorted(_ALL)


@pytest.mark.parametrize("name", OPS_ALL)
def test_op_unknown_all_dims(name):
    params, outs, feeds, refs = _ALL[name]
    with EXPECTED_ALL.check(name, also=EXPECTED):
        mod = relay_core.infer_type(IRModule.from_expr(Function(tuple(params), Tuple(tuple(outs)))))
        lib = relay_core.build(mod, specialize=False)
        got = lib(*feeds)
        pos = 0
        for s, rs in refs:
            for r in rs:
                check_output(got[pos], r, s, f"{name} {[x.shape for x in s.inputs]} {s.attrs}")
                pos += 1


@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_with_run_time_planes(align_corners, padding_mode):
    """RAFT's correlation pyramid samples planes whose size is known at run time only (its
    grid_sample lowering took a Python float of a `?` extent: a TypeError). Shape-generic, at
    two plane sizes, against the reference."""
    op = all_ops()["image.grid_sample"]
    x = Var("x", TensorType((Any, Any, Any, Any), "float32"))
    g = Var("g", TensorType((Any, Any, Any, 2), "float32"))
    attrs = dict(align_corners=align_corners, padding_mode=padding_mode)
    mod = relay_core.infer_type(
        IRModule.from_expr(Function((x, g), call("image.grid_sample", x, g, **attrs)))
    )
    lib = relay_core.build(mod, specialize=False)
    rng = np.random.default_rng(0)
    for xs, gs in [((2, 3, 5, 7), (2, 4, 6, 2)), ((1, 2, 9, 4), (1, 3, 3, 2))]:
        a = rng.normal(size=xs).astype("float32")
        b = rng.uniform(-1.3, 1.3, size=gs).astype("float32")
        want = op.ref([a, b], op.make_attrs(**attrs))
        np.testing.assert_allclose(lib(a, b)[0], want, rtol=1e-5, atol=1e-5)
