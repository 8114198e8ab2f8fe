"""A concatenation whose parts are contiguous ranges of its result (only size-1 axes before the
axis: channels at batch 1) costs no copy in the static graph: the steps that produce the parts
write them into the result (graph.GraphCompiler._elide_concats). Compiled against numpy: parts
computed far apart, nested concatenations, a part read by other steps too, a value in two
concatenations; and the cases that keep the copy (a batch of 2, an input, a repeated part, a part
not 64-byte aligned, a part or the result as an output)."""

from __future__ import annotations

import numpy as np
import pytest

from relay_core.ir import Tuple, call, const, var
from tests.backend.support import build_function

RNG = np.random.default_rng(11)


def _concat_steps(lib) -> int:
    return sum("concatenate" in s["ops"] for s in lib.manifest["steps"])


def _cat(*parts, axis=1):
    return call("concatenate", *parts, axis=axis)


class _Affine:
    """relu(dense(x, w) + b) over the last axis: a kernel of its own (a product does not fuse
    with the concatenation after it) whose output is a workspace value."""

    def __init__(self, shape):
        self.w = RNG.standard_normal((shape[-1], shape[-1])).astype("float32")
        self.b = RNG.standard_normal(shape[-1]).astype("float32")

    def __call__(self, x):
        return call("nn.relu", call("add", call("nn.dense", x, const(self.w)), const(self.b)))

    def want(self, x):
        return np.maximum(x @ self.w.T + self.b, 0)


def _x(shape):
    return var("x", shape), RNG.standard_normal(shape).astype("float32")


def _double(v):
    return call("multiply", v, const(np.float32(2.0)))


# A reader of the concatenation that does not fuse with it (an elementwise one would, and the
# group would compute more than the concatenation).
READ = _Affine((1, 4))


@pytest.mark.parametrize("axis", [1, 2])
def test_parts_written_in_place(axis):
    """Three parts, the second computed after a chain of other values (its lifetime overlaps
    theirs), concatenated and read by a consumer: no copy."""
    shape = (1, 16, 8, 4) if axis == 1 else (1, 1, 16, 4)
    x, xs = _x(shape)
    f, g, h, k = (_Affine(shape) for _ in range(4))
    a = f(x)
    mid = g(h(_double(x)))  # values alive while `a` waits for its concatenation
    c = k(mid)
    y = READ(_cat(a, mid, c, axis=axis))
    lib = build_function([x], y)
    m = g.want(h.want(2 * xs))
    want = READ.want(np.concatenate([f.want(xs), m, k.want(m)], axis=axis))
    np.testing.assert_allclose(lib(xs)[0], want, rtol=1e-5, atol=1e-5)
    assert _concat_steps(lib) == 0


def test_nested_and_shared():
    """concat(concat(a, b), c): both in place (the inner result a view of the outer, its parts
    views of views), the inner one also read by a step of its own; `a` also a part of a later
    concatenation, which copies it."""
    shape = (1, 16, 4, 4)
    x, xs = _x(shape)
    f, g, k, m = (_Affine(shape) for _ in range(4))
    a, b = f(x), g(x)
    inner = _cat(a, b)
    outer = _cat(inner, k(b))
    again = _cat(a, m(b))
    lib = build_function([x], Tuple((READ(outer), READ(inner), READ(again))))
    av, bv = f.want(xs), g.want(xs)
    wants = [
        np.concatenate([av, bv, k.want(bv)], axis=1),
        np.concatenate([av, bv], axis=1),
        np.concatenate([av, m.want(bv)], axis=1),
    ]
    for got, want in zip(lib(xs), wants):
        np.testing.assert_allclose(got, READ.want(want), rtol=1e-5, atol=1e-5)
    assert _concat_steps(lib) == 1  # `again`: its part `a` is already a part of `inner`


@pytest.mark.parametrize(
    "case",
    ["batch2", "input_part", "repeated", "unaligned", "part_is_output", "result_is_output"],
)
def test_copies_kept(case):
    shape = {"batch2": (2, 16, 4, 4), "unaligned": (1, 3, 3, 4)}.get(case, (1, 16, 4, 4))
    x, xs = _x(shape)
    f, g = _Affine(shape), _Affine(shape)
    a, b = f(x), g(x)
    av, bv = f.want(xs), g.want(xs)
    parts, want_parts = (a, b), [av, bv]
    if case == "input_part":
        parts, want_parts = (a, x), [av, xs]
    elif case == "repeated":
        parts, want_parts = (a, a), [av, av]
    cat = _cat(*parts)
    want = np.concatenate(want_parts, axis=1)
    if case == "part_is_output":
        lib = build_function([x], Tuple((READ(cat), a)))
        got = lib(xs)
        np.testing.assert_allclose(got[1], av, rtol=1e-6)
        got = got[0]
        want = READ.want(want)
    elif case == "result_is_output":
        lib = build_function([x], cat)
        got = lib(xs)[0]
    else:
        lib = build_function([x], READ(cat))
        got = lib(xs)[0]
        want = READ.want(want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert _concat_steps(lib) == 1
