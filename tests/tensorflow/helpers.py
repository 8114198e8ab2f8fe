"""Shared helpers for the TensorFlow frontend tests: convert a tf.function, run it with the
reference interpreter (and compiled, once relay_core.build exists) and compare with TF itself."""

from __future__ import annotations

import inspect
import os
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest

from tests.expected import ExpectedFailures
from tests.require import require

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = require("tensorflow")


@dataclass
class Case:
    """One op-level test: `fn` applied to `inputs` must contain `ops` once frozen ("A|B": one
    of them)."""

    name: str
    fn: object
    inputs: list
    ops: tuple = ()
    rtol: float = 1e-5
    atol: float = 1e-5
    dynamic: tuple = ()  # indices of inputs whose first dim is None in the signature
    dynamic_all: tuple = ()  # indices of inputs whose dims are all None
    compile: bool = True  # also compare the compiled module (when relay_core.build exists)
    signature: list | None = field(default=None)
    autograph: bool = False  # trace with AutoGraph (Python loops over tensors)
    # the same function in other TF ops: the reference where TF's own kernel for the op is not
    # built for this CPU (TF without oneDNN, e.g. on AMD Zen 3: DepthwiseConv2dNative takes
    # neither dilations nor unequal strides, 'Current implementation ...'); where the kernel
    # runs, the two must agree
    equivalent: object = None

    def __str__(self) -> str:
        return self.name


def spec_of(x, dynamic=False, dynamic_all=False):
    shape = list(x.shape)
    if dynamic_all:
        shape = [None] * x.ndim
    elif dynamic and shape:
        shape[0] = None
    return tf.TensorSpec(shape, tf.as_dtype(x.dtype))


def tensor_function(fn, n: int):
    """`fn` as a function of exactly its first `n` parameters (the tensors), with no Python
    defaults for TF to bind. A case's lambda carries its attributes as defaults
    (`lambda x, w, p=_pad: ...`, made in a loop); leaving their binding to tf.function and
    AutoGraph (which re-creates the lambda from its source) failed on fresh machines with
    "missing a required argument: 'p'"."""
    params = list(inspect.signature(fn).parameters.values())[:n]
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        params = [
            inspect.Parameter(f"x{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD) for i in range(n)
        ]
    params = [p.replace(default=inspect.Parameter.empty) for p in params]

    def call(*args):
        return fn(*args)

    call.__signature__ = inspect.Signature(params)
    call.__name__ = getattr(fn, "__name__", "case").replace("<lambda>", "case")
    return call


def concrete(case: Case):
    sig = case.signature or [
        spec_of(x, i in case.dynamic, i in case.dynamic_all) for i, x in enumerate(case.inputs)
    ]
    fn = tensor_function(case.fn, len(sig))
    return tf.function(fn, autograph=case.autograph).get_concrete_function(*sig)


def graph_ops(cf) -> set[str]:
    """Op types in the frozen graph of a concrete function, function bodies included."""
    from converters.tensorflow.loader import load

    gd = load(cf).graph_def
    ops = {n.op for n in gd.node}
    for f in gd.library.function:
        ops |= {n.op for n in f.node_def}
    return ops


def flat(x):
    if isinstance(x, (list, tuple)):
        return [np.asarray(v) for item in x for v in flat(item)]
    if isinstance(x, dict):
        return [np.asarray(v) for k in sorted(x) for v in flat(x[k])]
    return [np.asarray(x)]


def tf_outputs(cf, inputs) -> list[np.ndarray]:
    out = cf(*[tf.constant(x) for x in inputs])
    return [np.asarray(o) for o in flat(tf.nest.map_structure(lambda t: t.numpy(), out))]


def relay_outputs(mod, inputs) -> list[np.ndarray]:
    import relay_core

    out = relay_core.evaluate(mod, *inputs)
    return flat(out)


# Compiled cases that fail, with the reason (tests/expected.py): the list only shrinks.
COMPILED_EXPECTED = ExpectedFailures(
    os.path.join(os.path.dirname(__file__), "compiled_expected_failures.txt")
)


def compiled_outputs(mod, inputs):
    """Outputs of the compiled module."""
    import relay_core

    return flat(relay_core.build(mod)(*inputs))


def assert_close(ours, theirs, rtol=1e-5, atol=1e-5, what=""):
    assert len(ours) == len(theirs), f"{what}: {len(ours)} outputs vs TF's {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.shape == b.shape, f"{what} output {i}: shape {a.shape} vs TF {b.shape}"
        assert a.dtype == b.dtype or (a.dtype.kind == b.dtype.kind == "O"), (
            f"{what} output {i}: dtype {a.dtype} vs TF {b.dtype}"
        )
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"{what} output {i}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{what} output {i}")


def rel_error(ours, theirs) -> float:
    """max |a - b| / max |b| over all outputs."""
    worst = 0.0
    for a, b in zip(ours, theirs):
        scale = max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-12)
        err = float(np.max(np.abs(a.astype(np.float64) - b))) if b.size else 0.0
        worst = max(worst, err / scale)
    return worst


def reference_outputs(case: Case, cf) -> list[np.ndarray]:
    """TF's outputs of the case: its own kernel's, or its `equivalent`'s where that kernel is
    unimplemented on this CPU (checked against the kernel where it runs)."""
    try:
        theirs = tf_outputs(cf, case.inputs)
    except (tf.errors.UnimplementedError, tf.errors.InvalidArgumentError) as e:
        if case.equivalent is None or "implementation" not in str(e):
            raise
        return [np.asarray(case.equivalent(*case.inputs))]
    if case.equivalent is not None:
        same = [np.asarray(case.equivalent(*case.inputs))]
        assert_close(same, theirs, case.rtol, case.atol, case.name + " (equivalent vs TF)")
    return theirs


def run_case(case: Case):
    """Convert, check the ops are really there, run and compare with TF (and compiled)."""
    from converters.tensorflow import from_tensorflow

    cf = concrete(case)
    if case.ops:
        have = graph_ops(cf)
        missing = [op for op in case.ops if not set(op.split("|")) & have]
        assert not missing, f"{case.name}: the frozen graph has no {missing}"
    mod = from_tensorflow(cf)
    theirs = reference_outputs(case, cf)
    assert_close(relay_outputs(mod, case.inputs), theirs, case.rtol, case.atol, case.name)
    if case.compile:
        with COMPILED_EXPECTED.check(case.name):
            got = compiled_outputs(mod, case.inputs)
            assert_close(got, theirs, case.rtol, case.atol, case.name + " (compiled)")
    return mod


def rand(*shape, dtype="float32", lo=-2.0, hi=2.0, seed=None):
    rng = np.random.default_rng(zlib.crc32(repr((shape, dtype, lo, hi, seed)).encode()))
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(lo), int(hi), size=shape).astype(dtype)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def params(cases):
    """pytest params with readable ids."""
    return [pytest.param(c, id=c.name) for c in cases]
