"""Loop partitioning (loop_nest.partition): a fused stage that selects on a loop
variable against constants (concatenate, stack) is compiled as one loop per range of that
variable. Compiled against numpy on concatenations and stacks along the first, a middle and the
last axis, with elementwise ops and transposes fused around them (an unrolled LSTM's output), on
one and two threads; each case also checks that the partitioned path was taken."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.backend import loop_nest
from relay_core.backend import tir as T
from relay_core.ir import call, const, var
from tests.backend.support import build_function


def _spy(monkeypatch, name: str) -> list:
    """What each call of loop_nest.<name> returned during the test."""
    made = []
    orig = getattr(loop_nest, name)

    def spy(*args):
        r = orig(*args)
        made.append(r)
        return r

    monkeypatch.setattr(loop_nest, name, spy)
    return made


@pytest.fixture
def partitions(monkeypatch):
    """What loop_nest.partition returned for each stage compiled in the test (a loop nest,
    always true, or None: not cut)."""
    return _spy(monkeypatch, "partition")


def _inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype("float32") for s in shapes]


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize(
    "shapes,axis",
    [
        ([(3, 4, 20), (1, 4, 20), (7, 4, 20), (2, 4, 20), (5, 4, 20)], 0),
        ([(2, 3, 40), (2, 9, 40), (2, 1, 40)], 1),  # inside the loop over the first axis
        ([(1, 6, 5), (1, 6, 11), (1, 6, 1), (1, 6, 16)], 2),  # the innermost axis
        ([(64, 300)] * 8, 0),  # ranges large enough for two threads each
    ],
)
def test_concatenate_sigmoid(shapes, axis, nthreads, partitions):
    xs = _inputs(shapes)
    params = [var(f"x{k}", s) for k, s in enumerate(shapes)]
    body = call("sigmoid", call("concatenate", *params, axis=axis))
    got = build_function(params, body, nthreads)(*xs)[0]
    want = 1 / (1 + np.exp(-np.concatenate(xs, axis=axis)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert any(partitions)


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_stack_scaled(axis, nthreads, partitions):
    shapes = [(4, 33)] * 6
    xs = _inputs(shapes, axis)
    params = [var(f"x{k}", s) for k, s in enumerate(shapes)]
    body = call("multiply", call("stack", *params, axis=axis), const(np.float32(-0.5)))
    got = build_function(params, body, nthreads)(*xs)[0]
    want = np.stack(xs, axis=axis) * np.float32(-0.5)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert any(partitions)


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("steps,batch,hidden", [(64, 8, 256), (5, 3, 17)])
def test_unrolled_rnn_output(steps, batch, hidden, nthreads, partitions):
    """The ONNX LSTM converter's output: per-step states expanded, concatenated along time,
    the last one computed in the same group, then transposed to batch-first."""
    shapes = [(batch, hidden)] * (steps + 1)
    xs = _inputs(shapes, steps)
    params = [var(f"h{k}", s) for k, s in enumerate(shapes)]
    last = call("multiply", call("sigmoid", params[-2]), call("tanh", params[-1]))
    hs = [call("expand_dims", p, axis=0) for p in params[:-2]]
    hs.append(call("expand_dims", last, axis=0))
    seq = call("concatenate", *hs, axis=0)  # (steps, batch, hidden)
    body = call("transpose", seq, axes=(1, 0, 2))
    got = build_function(params, body, nthreads)(*xs)[0]
    states = xs[:-2] + [1 / (1 + np.exp(-xs[-2])) * np.tanh(xs[-1])]
    want = np.stack(states, axis=0).transpose(1, 0, 2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert any(partitions)


def test_where_on_data_is_not_partitioned(partitions):
    """A select on values (not on a loop variable) stays one loop nest."""
    shapes = [(6, 40), (6, 40)]
    xs = _inputs(shapes, 3)
    params = [var(f"x{k}", s) for k, s in enumerate(shapes)]
    body = call("where", call("greater", params[0], params[1]), params[0], params[1])
    got = build_function(params, body, 2)(*xs)[0]
    np.testing.assert_allclose(got, np.where(xs[0] > xs[1], xs[0], xs[1]))
    assert partitions and not any(partitions)


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("groups,batch", [(2, "8"), (2, "?"), (3, "2"), (4, "?")])
def test_channel_shuffle(groups, batch, nthreads, monkeypatch):
    """ShuffleNet's unit: concatenate two branches, shuffle the channels (reshape, transpose,
    reshape), split in halves. The concatenation then selects on c % groups: the nests are cut
    by residue (and by range for the halves) until no select is left."""
    made = _spy(monkeypatch, "partition")
    half, hw = 6 * groups, (5, 7)
    c = 2 * half
    shp = f"{batch}, {half}, {hw[0]}, {hw[1]}"
    end, st = 2**31 - 1, "strides=[1, 1, 1, 1]"
    src = f"""
def @main(%a: Tensor[({shp}), float32], %b: Tensor[({shp}), float32]) {{
  %0 = concatenate((%a, %b), axis=1);
  %1 = reshape(%0, newshape=[-1, {groups}, {c // groups}, {hw[0]}, {hw[1]}]);
  %2 = transpose(%1, axes=[0, 2, 1, 3, 4]);
  %3 = reshape(%2, newshape=[-1, {c}, {hw[0]}, {hw[1]}]);
  %4 = strided_slice(%3, begin=[0, 0, 0, 0], end=[{end}, {half}, {end}, {end}], {st});
  %5 = strided_slice(%3, begin=[0, {half}, 0, 0], end=[{end}, {c}, {end}, {end}], {st});
  (%4, add(%5, 1f))
}}
"""
    lib = relay_core.build(relay_core.parse(src), num_threads=nthreads, cache=False)
    n = 3 if batch == "?" else int(batch)
    a, b = _inputs([(n, half) + hw] * 2, groups)
    y = np.concatenate([a, b], 1).reshape(n, groups, c // groups, *hw)
    y = y.transpose(0, 2, 1, 3, 4).reshape(n, c, *hw)
    got = lib(a, b)
    np.testing.assert_array_equal(got[0], y[:, :half])
    np.testing.assert_array_equal(got[1], y[:, half:] + 1)
    cut = [str(s) for s in made if s is not None]
    assert cut and not any("select" in s for s in cut), cut


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("shape", [(2, 3, 5, 16), (3, 6, 7, 64), (1, 4, 9, 40), (2, 4, 9, 8)])
def test_head_merge_splits_the_inner_loop(shape, nthreads, monkeypatch):
    """Attention's head merge (transpose (0, 2, 1, 3), reshape to (b, t, heads * d)) reads
    in[b, j // d, t, j % d]: the loop over j becomes loops over heads and d (d >= 16: a
    vector of 16 floats; shorter runs stay one loop)."""
    made = _spy(monkeypatch, "split_inner")
    b, h, t, d = shape
    x = var("x", shape)
    body = call("reshape", call("transpose", x, axes=(0, 2, 1, 3)), newshape=(b, t, h * d))
    (xv,) = _inputs([shape], d)
    got = build_function([x], call("multiply", body, const(np.float32(2))), nthreads)(xv)[0]
    want = xv.transpose(0, 2, 1, 3).reshape(b, t, h * d) * 2
    np.testing.assert_array_equal(got, want)
    split = [r for r in made if r is not None]
    if d >= loop_nest.MIN_INNER:
        assert split and split[0][1][-1] == d, made
    else:
        assert not split, split


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("batch", ["1", "?", "4"])
def test_concatenation_nests_in_one_region(batch, nthreads, monkeypatch):
    """DenseNet's batch norm + relu over a concatenation of many inputs: at batch 1, or with a
    batch known only at run time (a dynamic-batch export), the nests (one per input) run in
    one parallel region whose units are chunks of them, for every image; with a static batch
    of at least the threads, the loop over the images is the parallel one."""
    made = _spy(monkeypatch, "_one_region")
    chans, hw = [64] + [32] * 12, (14, 14)
    c = sum(chans)
    rng = np.random.default_rng(7)
    scale = rng.standard_normal((c, 1, 1)).astype("float32")
    shift = rng.standard_normal((c, 1, 1)).astype("float32")
    params = ", ".join(
        f"%x{k}: Tensor[({batch}, {n}, {hw[0]}, {hw[1]}), float32]" for k, n in enumerate(chans)
    )
    names = ", ".join(f"%x{k}" for k in range(len(chans)))
    src = f"""
def @main({params}, %s: Tensor[({c}, 1, 1), float32], %t: Tensor[({c}, 1, 1), float32]) {{
  %0 = concatenate(({names}), axis=1);
  nn.relu(add(multiply(%0, %s), %t))
}}
"""
    mod = relay_core.parse(src)
    lib = relay_core.build(mod, num_threads=nthreads, cache=False)
    n = 3 if batch == "?" else int(batch)
    xs = _inputs([(n, k) + hw for k in chans], n)
    got = lib(*xs, scale, shift)[0]
    want = np.maximum(np.concatenate(xs, 1) * scale + shift, 0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    region = [r for r in made if r is not None]
    if batch != "4":  # (scheduled for the machine's threads; run on nthreads)
        assert region and all(r.kind == "parallel" for r in region), region
    else:
        assert not region  # the images in parallel


@pytest.mark.parametrize("batch", ["1", "?"])
def test_small_concatenation_region(batch, monkeypatch):
    """A concatenation too small for two threads: one thread at batch 1; with a run-time batch
    (possibly large), the loop over the images stays the parallel one (no region of chunks)."""
    made = _spy(monkeypatch, "_one_region")
    chans, hw = [8, 8, 16], (4, 4)
    params = ", ".join(f"%x{k}: Tensor[({batch}, {n}, 4, 4), float32]" for k, n in enumerate(chans))
    names = ", ".join(f"%x{k}" for k in range(len(chans)))
    src = f"def @main({params}) {{ nn.relu(concatenate(({names}), axis=1)) }}"
    lib = relay_core.build(relay_core.parse(src), num_threads=2, cache=False)
    n = 5 if batch == "?" else 1
    xs = _inputs([(n, k) + hw for k in chans], n)
    np.testing.assert_array_equal(lib(*xs)[0], np.maximum(np.concatenate(xs, 1), 0))
    kinds = {type(r).__name__ if r is None or type(r) is not T.For else r.kind for r in made}
    assert kinds == ({"NoneType"} if batch == "?" else {"serial"}), made


def _stores(stmt) -> int:
    """The stores (one per loop nest of a partitioned stage) in a loop IR statement."""
    n, stack = 0, [stmt]
    while stack:
        x = stack.pop()
        if isinstance(x, T.Store):
            n += 1
        elif isinstance(x, T.Seq):
            stack.extend(x.stmts)
        elif isinstance(x, T.IfThenElse):
            stack.extend(c for c in (x.then, x.else_) if c is not None)
        elif hasattr(x, "body"):
            stack.append(x.body)
    return n


@pytest.mark.parametrize("size,pad", [(56, 0), (28, 4)])
def test_shifted_windows_few_nests(size, pad, partitions):
    """Swin-V2's shifted windows: a roll as two concatenations of slices (after a pad), then
    windows of 8 x 8 by reshape and transpose. Cutting by residues of the window axis resolves
    the column selects; the row selects compare a sum of two loop axes, which no further cut
    resolves, so none is made (cutting the rows by residues too had made 56 nests that all kept
    their selects, and LLVM took 35 s over them)."""
    c, s, win = 8, 4, 8
    x = var("x", (1, size, size, c))
    p = call("nn.pad", x, pad_width=((0, 0), (0, pad), (0, pad), (0, 0)))
    hp = size + pad

    def roll(v, axis):
        a = call("strided_slice", v, begin=[s], end=[hp], strides=[1], axes=[axis])
        b = call("strided_slice", v, begin=[0], end=[s], strides=[1], axes=[axis])
        return call("concatenate", a, b, axis=axis)

    n = hp // win
    r = call("reshape", roll(roll(p, 1), 2), newshape=[1, n, win, n, win, c])
    t = call("transpose", r, axes=[0, 1, 3, 2, 4, 5])
    y = call("reshape", t, newshape=[n * n, win * win, c])
    (xs,) = _inputs([(1, size, size, c)])
    got = build_function([x], y, 2)(xs)[0]
    xp = np.pad(xs, ((0, 0), (0, pad), (0, pad), (0, 0)))
    want = np.roll(np.roll(xp, -s, 1), -s, 2).reshape(1, n, win, n, win, c)
    want = want.transpose(0, 1, 3, 2, 4, 5).reshape(n * n, win * win, c)
    np.testing.assert_array_equal(got, want)
    made = [_stores(r) for r in partitions if r is not None]
    assert made and max(made) < n * win, made  # not a nest per window row and column
