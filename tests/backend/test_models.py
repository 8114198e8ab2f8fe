"""End-to-end: small models compiled and compared with the reference interpreter; the
CompiledModule API (inputs by name, validation, threads, cache, export / load)."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.errors import InputError
from relay_core.ir import Function, IRModule, Tuple, TupleGetItem, call, const, var
from tests.backend.support import run_in_threads, run_python


def _mlp(rng):
    x = var("x", (4, 32))
    w1 = const(rng.standard_normal((64, 32)).astype("float32") * 0.2)
    b1 = const(rng.standard_normal((64,)).astype("float32"))
    w2 = const(rng.standard_normal((10, 64)).astype("float32") * 0.2)
    h = call("nn.relu", call("nn.bias_add", call("nn.dense", x, w1), b1))
    y = call("nn.softmax", call("nn.dense", h, w2))
    return relay_core.infer_type(IRModule.from_expr(Function((x,), y)))


def _cnn(rng):
    x = var("data", (2, 3, 16, 16))

    def conv_bn_relu(h, cin, cout, stride):
        w = const(rng.standard_normal((cout, cin, 3, 3)).astype("float32") * 0.3)
        h = call("nn.conv2d", h, w, strides=(stride, stride), padding=(1, 1))
        gamma = const(rng.uniform(0.5, 1.5, cout).astype("float32"))
        beta = const(rng.standard_normal(cout).astype("float32"))
        mean = const(rng.standard_normal(cout).astype("float32") * 0.1)
        var_ = const(rng.uniform(0.5, 1.5, cout).astype("float32"))
        h = TupleGetItem(call("nn.batch_norm", h, gamma, beta, mean, var_), 0)
        return call("nn.relu", h)

    h = conv_bn_relu(x, 3, 8, 1)
    h = call("nn.max_pool2d", h, pool_size=(2, 2), strides=(2, 2))
    r = conv_bn_relu(h, 8, 8, 1)
    h = call("add", h, r)  # a residual connection
    h = conv_bn_relu(h, 8, 16, 2)
    h = call("nn.global_avg_pool2d", h)
    h = call("reshape", h, newshape=(2, 16))
    w = const(rng.standard_normal((5, 16)).astype("float32") * 0.3)
    y = call("nn.dense", h, w)
    return relay_core.infer_type(IRModule.from_expr(Function((x,), Tuple((y, h)))))


def test_mlp_matches_interpreter():
    rng = np.random.default_rng(0)
    mod = _mlp(rng)
    lib = relay_core.build(mod)
    x = rng.standard_normal((4, 32)).astype("float32")
    np.testing.assert_allclose(lib(x)[0], relay_core.evaluate(mod, x), rtol=1e-5, atol=1e-6)
    assert lib.input_names == ["x"] and len(lib.output_names) == 1


def test_cnn_matches_interpreter():
    rng = np.random.default_rng(1)
    mod = _cnn(rng)
    lib = relay_core.build(mod)
    x = rng.standard_normal((2, 3, 16, 16)).astype("float32")
    got = lib(data=x)
    want = relay_core.evaluate(mod, x)
    assert len(got) == 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_inputs_are_validated():
    rng = np.random.default_rng(2)
    lib = relay_core.build(_mlp(rng))
    with pytest.raises(InputError, match="shape"):
        lib(np.zeros((3, 32), np.float32))
    with pytest.raises(InputError, match="dtype"):
        lib(np.zeros((4, 32), np.complex64))
    with pytest.raises(InputError, match="unknown input"):
        lib(y=np.zeros((4, 32), np.float32))
    with pytest.raises(InputError, match="missing"):
        lib()
    # lists and other float dtypes are converted
    out = lib(np.zeros((4, 32)).tolist())[0]
    assert out.shape == (4, 10) and out.dtype == np.float32


def test_outputs_that_are_inputs_or_repeated():
    x = var("x", (3,))
    mod = relay_core.infer_type(
        IRModule.from_expr(
            Function(
                (x,),
                Tuple(
                    (
                        x,
                        call("exp", x),
                        call("exp", x),
                        const(np.ones(2, "float32")),
                        const(np.float32(2.5)),
                    )
                ),
            )
        )
    )
    lib = relay_core.build(mod)
    a = np.arange(3, dtype=np.float32)
    got = lib(a)
    want = relay_core.evaluate(mod, a)
    assert len(got) == 5
    for g, w in zip(got, want):
        assert g.shape == w.shape  # a scalar constant stays 0-d
        np.testing.assert_allclose(g, w, rtol=1e-6)
    got[0][0] = 42.0  # outputs are fresh arrays, never the caller's input
    assert a[0] == 0


def test_concurrent_calls_from_threads():
    rng = np.random.default_rng(3)
    mod = _mlp(rng)
    lib = relay_core.build(mod)
    xs = [rng.standard_normal((4, 32)).astype("float32") for _ in range(8)]
    want = [lib(x)[0] for x in xs]

    def work(k):
        for _ in range(20):
            np.testing.assert_array_equal(lib(xs[k])[0], want[k])

    run_in_threads(work, 8)


def test_second_build_comes_from_the_cache():
    rng = np.random.default_rng(4)
    mod = _mlp(rng)
    a = relay_core.build(mod)
    b = relay_core.build(_mlp(np.random.default_rng(4)))  # an equal module, built again
    assert not a.cache_hit and b.cache_hit
    assert a.path == b.path
    c = relay_core.build(_mlp(np.random.default_rng(5)))  # other weights: another entry
    assert not c.cache_hit and c.path != a.path


def test_export_and_load_without_llvmlite(tmp_path):
    rng = np.random.default_rng(6)
    mod = _cnn(rng)
    lib = relay_core.build(mod)
    x = rng.standard_normal((2, 3, 16, 16)).astype("float32")
    want = lib(x)
    out_dir = tmp_path / "model.relaylib"
    lib.export(str(out_dir))
    np.save(tmp_path / "x.npy", x)
    script = f"""
import sys, numpy as np
import relay_core
lib = relay_core.load_module({str(out_dir)!r})
outs = lib(np.load({str(tmp_path / "x.npy")!r}))
for k, o in enumerate(outs):
    np.save({str(tmp_path)!r} + f"/out{{k}}.npy", o)
assert "llvmlite" not in sys.modules, "llvmlite was imported"
print("ok", lib.input_names, lib.output_names)
"""
    (out,) = run_python([["-c", script]])
    assert out.startswith("ok")
    for k, w in enumerate(want):
        np.testing.assert_array_equal(np.load(tmp_path / f"out{k}.npy"), w)


LSTM_LOOP = """
#[version = "0.0.5"]
def @step(%t: int32, %n: int32, %xs: Tensor[(6, 1, 8), float32], %h: Tensor[(1, 16), float32],
          %c: Tensor[(1, 16), float32], %wi: Tensor[(64, 8), float32],
          %wh: Tensor[(64, 16), float32], %b: Tensor[(64), float32])
          -> (Tensor[(1, 16), float32], Tensor[(1, 16), float32]) {
  if (less(%t, %n)) {
    %0 = squeeze(take(%xs, %t, axis=0), axis=[0]);
    %1 = add(nn.dense(%0, %wi), nn.dense(%h, %wh));
    %2 = nn.bias_add(%1, %b, axis=-1);
    %3 = split(%2, indices_or_sections=4, axis=1);
    %4 = add(multiply(sigmoid(%3.1), %c), multiply(sigmoid(%3.0), tanh(%3.2)));
    %5 = multiply(sigmoid(%3.3), tanh(%4));
    @step(add(%t, 1), %n, %xs, %5, %4, %wi, %wh, %b)
  } else {
    (%h, %c)
  }
}
def @main(%xs: Tensor[(6, 1, 8), float32], %n: int32, %wi: Tensor[(64, 8), float32],
          %wh: Tensor[(64, 16), float32], %b: Tensor[(64), float32]) {
  let %z = zeros(shape=[1, 16], dtype="float32");
  @step(0, %n, %xs, %z, %z, %wi, %wh, %b)
}
"""


def test_lstm_written_as_a_loop():
    mod = relay_core.parse(LSTM_LOOP)
    lib = relay_core.build(mod)
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((6, 1, 8)).astype("float32")
    wi = (rng.standard_normal((64, 8)) * 0.3).astype("float32")
    wh = (rng.standard_normal((64, 16)) * 0.3).astype("float32")
    b = rng.standard_normal(64).astype("float32")
    for n in (0, 3, 6):
        got = lib(xs, np.int32(n), wi, wh, b)
        want = relay_core.evaluate(mod, xs, np.int32(n), wi, wh, b)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
