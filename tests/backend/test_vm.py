"""The general path: control flow, closures, tuples, ADTs, references and dynamic shapes,
compiled (not interpreted) and compared with the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.backend.runtime import ModelRunError
from relay_core.errors import InputError


def _check(text: str, *inputs, rtol=1e-5):
    mod = relay_core.parse(text)
    lib = relay_core.build(mod)
    assert lib.kind == "vm"
    got = lib(*inputs)
    want = relay_core.evaluate(mod, *inputs)
    want = list(want) if isinstance(want, tuple) else [want]
    flat = []
    stack = list(reversed(want))
    while stack:
        w = stack.pop()
        if isinstance(w, tuple):
            stack.extend(reversed(w))
        else:
            flat.append(np.asarray(w))
    assert len(got) == len(flat)
    for g, w in zip(got, flat):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol)
    return lib


LOOP = """
#[version = "0.0.5"]
def @loop(%i: int32, %n: int32, %acc: Tensor[(3), float32],
    %x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  if (less(%i, %n)) {
    @loop(add(%i, 1), %n, add(%acc, multiply(%x, cast(%i, dtype="float32"))), %x)
  } else {
    %acc
  }
}
def @main(%x: Tensor[(3), float32], %n: int32) {
  @loop(0, %n, zeros_like(%x), %x)
}
"""


def test_tail_recursive_loop():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    lib = _check(LOOP, x, np.int32(7))
    # a long loop runs as a native loop: constant stack and memory
    n = 200_000
    out = lib(x, np.int32(n))[0]
    np.testing.assert_allclose(out, x * (n * (n - 1) / 2), rtol=1e-3)


def test_if_selects_a_branch():
    text = """
#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %c: bool) {
  %0 = nn.relu(%x);
  if (%c) { add(%0, 1f) } else { exp(%x) }
}
"""
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    _check(text, x, np.bool_(True))
    _check(text, x, np.bool_(False))


def test_recursive_closure_and_tuples():
    text = """
#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %n: int32) {
  let %loop = fn (%i: int32, %s: (Tensor[(4), float32], Tensor[(4), float32]))
      -> (Tensor[(4), float32], Tensor[(4), float32]) {
    if (less(%i, %n)) {
      %loop(add(%i, 1), (add(%s.0, %x), multiply(%s.1, 2f)))
    } else {
      %s
    }
  };
  %loop(0, (zeros_like(%x), ones_like(%x)))
}
"""
    x = np.arange(4, dtype=np.float32)
    _check(text, x, np.int32(5))


def test_higher_order_functions_over_lists():
    text = """
#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
  let %xs = Cons(%x, Cons(%y, Cons(add(%x, %y), Nil)));
  let %scaled = @map(fn (%t: Tensor[(3), float32]) { multiply(%t, %y) }, %xs);
  let %total = @foldl(fn (%a: Tensor[(3), float32], %b: Tensor[(3), float32]) { add(%a,
      %b) }, zeros_like(%x), %scaled);
  (%total, @nth(@rev(%scaled), 1), @length(%xs))
}
"""
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(3).astype(np.float32) for _ in range(2))
    _check(text, x, y)


def test_option_match_and_references():
    text = """
#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32], %k: int32) {
  let %r = ref(%x);
  let %o = if (greater(%k, 0)) { Some(%k) } else { None };
  let %unit = match (%o) {
    Some(%v) => { ref_write(%r, multiply(ref_read(%r), cast(%v, dtype="float32"))) },
    None => { ref_write(%r, negative(ref_read(%r))) },
  };
  ref_read(%r)
}
"""
    x = np.array([1.5, -2.0], np.float32)
    _check(text, x, np.int32(3))
    _check(text, x, np.int32(0))


def test_symbolic_batch_one_module():
    text = """
#[version = "0.0.5"]
def @main(%x: Tensor[(n, 8), float32], %w: Tensor[(4, 8), float32]) {
  nn.softmax(nn.relu(nn.dense(%x, %w)))
}
"""
    mod = relay_core.parse(text)
    lib = relay_core.build(mod)
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 8)).astype(np.float32)
    for batch in (1, 3, 17, 0):
        x = rng.standard_normal((batch, 8)).astype(np.float32)
        got = lib(x, w)[0]
        assert got.shape == (batch, 4)
        np.testing.assert_allclose(got, relay_core.evaluate(mod, x, w), rtol=1e-5, atol=1e-6)
    with pytest.raises(InputError):
        lib(np.zeros((2, 7), np.float32), w)


def test_dataflow_releases_each_tensor_after_its_last_use():
    # A dataflow @main releases an intermediate after its last user, so the runtime hands
    # its block (>= 64 KB) to the next output of that size. %0 is used by the second and the
    # last convolution: released (and still looked up) after the second, %2 would be written
    # over it before the last reads it. The output %1 must survive too.
    text = """
#[version = "0.0.5"]
def @main(%x: Tensor[(?, 16, 32, 32), float32], %w: Tensor[(16, 16, 3, 3), float32]) {
  %0 = nn.relu(nn.conv2d(%x, %w, padding=[1, 1, 1, 1]));
  %1 = nn.conv2d(%0, %w, padding=[1, 1, 1, 1]);
  %2 = nn.conv2d(sigmoid(%1), %w, padding=[1, 1, 1, 1]);
  %3 = nn.conv2d(%0, %w, padding=[1, 1, 1, 1]);
  (add(%3, %2), %1)
}
"""
    mod = relay_core.parse(text)
    lib = relay_core.build(mod)
    assert lib.kind == "vm"
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((16, 16, 3, 3)) / 12).astype(np.float32)
    for batch in (1, 3, 9, 3):
        x = rng.standard_normal((batch, 16, 32, 32)).astype(np.float32)
        got = lib(x, w)
        want = relay_core.evaluate(mod, x, w)
        for g, v in zip(got, want):
            np.testing.assert_allclose(g, v, rtol=1e-4, atol=1e-5)


def test_shape_variables_must_agree():
    text = """
#[version = "0.0.5"]
def @main(%x: Tensor[(n), float32], %y: Tensor[(n), float32]) { add(%x, %y) }
"""
    lib = relay_core.build(relay_core.parse(text))
    a = np.ones(5, np.float32)
    np.testing.assert_array_equal(lib(a, a)[0], 2 * a)
    with pytest.raises(InputError, match="dimension n"):
        lib(a, np.ones(4, np.float32))


def test_multiples_of_a_shape_variable():
    # 2*n: twice n's size. Kernels read n off whichever input comes first (here x, n = its
    # dim / 2), so a y or z of another size must be refused before it is read out of bounds;
    # the reshape to (-1, 3) and the concatenation are typed with multiples of n too.
    text = """
#[version = "0.0.5"]
def @main(%x: Tensor[(2*n, 3), float32], %y: Tensor[(n, 3), float32],
          %z: Tensor[(4*n, 3), float32]) {
  %0 = add(%x, concatenate((%y, %y)));
  %1 = reshape(%z, newshape=[2, -1, 3]);
  (add(%1, %0), split(%z, indices_or_sections=2).1)
}
"""
    mod = relay_core.parse(text)
    assert str(mod["main"].checked_type.ret_type) == (
        "(Tensor[(2, 2*n, 3), float32], Tensor[(2*n, 3), float32])"
    )
    lib = relay_core.build(mod)
    rng = np.random.default_rng(0)
    for n in (1, 3):
        x, y, z = (rng.standard_normal((k * n, 3)).astype(np.float32) for k in (2, 1, 4))
        got = lib(x, y, z)
        want = relay_core.evaluate(mod, x, y, z)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6)
    y, z = np.ones((1, 3), np.float32), np.ones((4, 3), np.float32)
    with pytest.raises(InputError, match="multiple of 2"):
        lib(np.ones((3, 3), np.float32), y, z)
    with pytest.raises(InputError, match="dimension n is 1 in input 'x' but 2 in input 'z'"):
        lib(np.ones((2, 3), np.float32), y, np.ones((8, 3), np.float32))


def test_incomplete_match_fails_cleanly():
    text = """
#[version = "0.0.5"]
def @main(%k: int32) {
  let %o = if (greater(%k, 0)) { Some(%k) } else { None };
  match? (%o) { Some(%v) => { %v } }
}
"""
    lib = relay_core.build(relay_core.parse(text))
    assert lib(np.int32(4))[0] == 4
    with pytest.raises(ModelRunError, match="no clause"):
        lib(np.int32(0))
    assert lib(np.int32(2))[0] == 2  # the module still works after an error


def test_results_that_are_constants_or_inputs():
    # the result may be a constant (whose wrapper dies with the call) or an input
    text = """
#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32], %c: bool) {
  if (%c) {
    (%x, ones(shape=[3], dtype="float32"))
  } else {
    (zeros(shape=[3], dtype="float32"), %x)
  }
}
"""
    x = np.array([1.0, 2.0, 3.0], np.float32)
    lib = _check(text, x, np.bool_(True))
    for _ in range(200):  # repeated calls would corrupt the heap if ownership were wrong
        a, b = lib(x, np.bool_(False))
        np.testing.assert_array_equal(a, np.zeros(3, np.float32))
        np.testing.assert_array_equal(b, x)


def test_lists_and_options_cross_the_boundary():
    text = """
#[version = "0.0.5"]
def @main(%xs: List[Tensor[(2), float32]], %o: Option[Tensor[(2), float32]]) {
  let %ys = @map(fn (%t: Tensor[(2), float32]) { multiply(%t, 2f) }, %xs);
  let %extra = match (%o) { Some(%v) => { Some(add(%v, 1f)) }, None => { None } };
  (%ys, %extra, @length(%xs), True)
}
"""
    lib = relay_core.build(relay_core.parse(text))
    xs = [np.array([1.0, 2.0], np.float32), np.array([3.0, -1.0], np.float32)]
    ys, extra, n, flag = lib(xs, np.array([5.0, 6.0], np.float32))
    assert isinstance(ys, list) and len(ys) == 2
    np.testing.assert_array_equal(ys[1], xs[1] * 2)
    np.testing.assert_array_equal(extra, [6.0, 7.0])
    assert n == 2 and n.shape == () and flag.shape == ()
    ys, extra, n, _ = lib([], None)
    assert ys == [] and extra is None and n == 0


@pytest.mark.parametrize("mode", ["update", "add"])
def test_scatter_with_run_time_dims(mode):
    # scatter_nd / scatter_elements whose data, indices and updates have run-time dims
    # (e.g. an index_put with a boolean mask): loop extents come from the shapes at run time.
    text = f"""
#[version = "0.0.5"]
def @main(%d: Tensor[(n, 4), float32], %i: Tensor[(1, k), int64], %u: Tensor[(k, 4), float32],
          %ei: Tensor[(k, 4), int64]) {{
  (scatter_nd(%d, %i, %u, mode="{mode}"), scatter_elements(%d, %ei, %u, axis=0))
}}
"""
    mod = relay_core.parse(text)
    lib = relay_core.build(mod)
    rng = np.random.default_rng(3)
    for n, k in ((5, 3), (9, 6), (2, 0)):
        d = rng.standard_normal((n, 4)).astype(np.float32)
        i = rng.integers(0, n, (1, k)).astype(np.int64)
        u = rng.standard_normal((k, 4)).astype(np.float32)
        ei = np.stack([rng.permutation(n)[:4] for _ in range(k)]) if k else np.zeros((0, 4))
        ei = ei.astype(np.int64)
        if mode == "update":  # duplicate indices make "update" order-dependent
            i = rng.permutation(n)[:k].reshape(1, k).astype(np.int64)
        got = lib(d, i, u, ei)
        want = relay_core.evaluate(mod, d, i, u, ei)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6)
