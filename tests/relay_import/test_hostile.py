"""The hostile-input suite of issue 11 (cases in tests/relay_import/hostile.py): every case, run
through the API and each CLI command as a subprocess under RLIMIT_AS and a timeout, and through
`relay serve`, ends in a clear error of our own type or onnxruntime's answer. A few API runs are
quick; the whole matrix is slow. `python -m tests.relay_import.hostile` prints the table.

Index semantics are also checked in-process against each framework: out-of-range indices raise in
the interpreter and in compiled code where onnxruntime / torch / TF refuse them."""

from __future__ import annotations

import numpy as np
import pytest

from tests.require import require

require("onnxruntime")

from tests.relay_import import hostile  # noqa: E402

FAST_API = ("string_identity", "gather_7", "gather_-1_ok", "loop_1e12", "expand_4TiB")
NAMES = [
    "string_identity",
    "string_identity_dynamic",
    "string_concat",
    "gather_7",
    "gather_-9",
    "gather_1e9",
    "gather_-1_ok",
    "gather_elements_5",
    "gather_nd_3",
    "scatter_nd_9",
    "expand_4TiB",
    "resize_596GiB",
    "input_8GiB",
    "loop_1e12",
    "npz_bomb_200MB",
    "input_wrong_shape",
    "input_strings_for_float",
    "input_big_endian",
    "input_bfloat16",
    "keras_zip_bomb",
]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    work = tmp_path_factory.mktemp("hostile")
    cases = {c.name: c for c in hostile.build_cases(work / "models")}
    assert sorted(cases) == sorted(NAMES)
    return work, cases


def _check(case, where, outcome):
    why = hostile.acceptable(case, where, outcome)
    assert why is None, f"{case.name} / {where}: {why}"


def _api_params():
    return [pytest.param(n, marks=() if n in FAST_API else pytest.mark.slow, id=n) for n in NAMES]


@pytest.mark.parametrize("name", _api_params())
def test_api(env, name):
    work, cases = env
    _check(cases[name], "api", hostile.run_api(cases[name], work))


def _cli_params():
    out = []
    for n in NAMES:
        inputs_only = n.startswith(("gather_", "input_", "npz_")) and n not in (
            "gather_7",
            "input_8GiB",
        )
        for cmd in hostile.INPUTS_ONLY[1:3] if inputs_only else hostile.COMMANDS:
            out.append(pytest.param(n, cmd, id=f"{n}-{cmd}"))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name,cmd", _cli_params())
def test_cli(env, name, cmd):
    work, cases = env
    assert cmd in cases[name].where
    _check(cases[name], cmd, hostile.run_cli(cases[name], cmd, work))


@pytest.mark.slow
def test_serve(env):
    """Every case through one `relay serve`: JSON errors or onnxruntime's answers, and the
    service still up after each."""
    work, cases = env
    srv = hostile.start_server(work)
    try:
        for name in NAMES:
            outcome = hostile.run_serve(cases[name], srv, work)
            assert hostile.serve_alive(srv), f"relay serve died on {name}"
            _check(cases[name], "serve", outcome)
    finally:
        srv.stop()


# -- index semantics in-process: interpreter and compiled code, against each framework ---------
def _onnx_index_cases():
    from onnx import TensorProto as TP
    from onnx import helper

    t = helper.make_tensor("t", TP.FLOAT, [3, 2], np.arange(6.0).tolist())

    def model(op, ishape, oshape, **kw):
        return hostile._onnx(
            [helper.make_node(op, ["t", "i"], ["y"], **kw)],
            [hostile._vi("i", TP.INT64, ishape)],
            [hostile._vi("y", TP.FLOAT, oshape)],
            [t],
        )

    g = model("Gather", [2], [2, 2], axis=0)
    ge = model("GatherElements", [2, 2], [2, 2], axis=0)
    gn = model("GatherND", [2, 1], [2, 2])
    return [
        ("gather", g, [np.array([v, 1]) for v in (7, -9, 10**9, -3, -1, 2)]),
        ("gather_elements", ge, [np.array([[0, 1], [v, 2 % 3]]) for v in (5, -4, -3, 2)]),
        ("gather_nd", gn, [np.array([[1], [v]]) for v in (3, -4, -1, 2)]),
    ]


@pytest.mark.parametrize("label", ["gather", "gather_elements", "gather_nd"])
def test_onnx_indices_match_onnxruntime(label):
    """onnxruntime's answer where it gives one; where it refuses, the interpreter raises
    EvalError and the compiled module ModelRunError, both naming the index."""
    import relay_core
    import relay_import as ri
    from relay_core.errors import RelayError

    _, model, feeds = next(c for c in _onnx_index_cases() if c[0] == label)
    mod = ri.from_onnx(model)
    lib = ri.compile(mod)
    refused = 0
    for i in feeds:
        i = i.astype(np.int64)
        want = hostile._ort(model, {"i": i})
        if want is None:
            refused += 1
            with pytest.raises(RelayError, match="out of range"):
                relay_core.evaluate(mod, i)
            with pytest.raises(RelayError, match="out of range"):
                lib(i)
            continue
        np.testing.assert_array_equal(relay_core.evaluate(mod, i), want[0])
        np.testing.assert_array_equal(lib(i)[0], want[0])
    assert refused >= 2


@pytest.mark.slow
def test_torch_index_ops_refuse_like_torch():
    """embedding, index_select, gather, scatter, scatter_add, index_add: torch refuses negative
    and out-of-range indices; so do we (interpreted by the reference, compiled here)."""
    torch = require("torch")
    import relay_import as ri
    from relay_core.errors import RelayError

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(3, 2)

        def forward(self, i):
            w = self.emb.weight
            picked = torch.gather(w, 0, i.reshape(-1, 1).expand(-1, 2))
            z = torch.zeros(3)
            ones = torch.ones(2)
            scattered = z.scatter(0, i, ones), z.scatter_add(0, i, ones), z.index_add(0, i, ones)
            return (self.emb(i), torch.index_select(w, 0, i), picked) + scattered

    m = M().eval()
    lib = ri.compile(ri.from_pytorch(m, example_inputs=(torch.tensor([0, 1]),)))
    for v in (1, 2, -1, 3, 10**9):
        i = torch.tensor([0, v])
        try:
            want = [o.detach().numpy() for o in m(i)]
        except (IndexError, RuntimeError):
            with pytest.raises(RelayError, match="out of range"):
                lib(i.numpy())
            continue
        for g, w in zip(lib(i.numpy()), want):
            np.testing.assert_array_equal(g, w)


@pytest.mark.slow
def test_tf_index_ops_refuse_like_tf():
    """gather, embedding_lookup, gather_nd, scatter_nd, tensor_scatter_nd_add: TF (CPU) refuses
    negative and out-of-range indices; so do we."""
    tf = require("tensorflow")
    import relay_import as ri
    from relay_core.errors import RelayError

    table = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))

    @tf.function(input_signature=[tf.TensorSpec([2], tf.int64)])
    def f(i):
        nd = tf.reshape(i, (2, 1))
        return (
            tf.gather(table, i),
            tf.nn.embedding_lookup(table, i),
            tf.gather_nd(table, nd),
            tf.scatter_nd(nd, tf.ones(2), [3]),
            tf.tensor_scatter_nd_add(tf.zeros(3), nd, tf.ones(2)),
        )

    lib = ri.compile(ri.from_tensorflow(f))
    for v in (2, -1, 3, 10**9):
        i = np.array([0, v], np.int64)
        try:
            want = [o.numpy() for o in f(tf.constant(i))]
        except tf.errors.InvalidArgumentError:
            with pytest.raises(RelayError, match="out of range"):
                lib(i)
            continue
        for g, w in zip(lib(i), want):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize(
    "mode,ok,bad",
    [("strict", (0, 2), (-1, 3, 10**9)), ("fast", (-3, -1, 2), (-4, 3, 10**9))],
)
def test_take_modes_check_indices(mode, ok, bad):
    """take's strict mode (torch, TF) refuses negatives, fast (ONNX) takes [-n, n); both raise
    out of range in the interpreter and in compiled code; in range they agree with numpy."""
    import relay_core
    from relay_core.errors import RelayError

    mod = relay_core.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%d: Tensor[(3, 2), float32], %i: Tensor[(2), int64]) {\n"
        f'  take(%d, %i, axis=0, mode="{mode}")\n'
        "}\n"
    )
    lib = relay_core.build(mod)
    d = np.arange(6, dtype=np.float32).reshape(3, 2)
    for v in ok:
        i = np.array([1, v], np.int64)
        np.testing.assert_array_equal(relay_core.evaluate(mod, d, i), d[i])
        np.testing.assert_array_equal(lib(d, i)[0], d[i])
    for v in bad:
        i = np.array([1, v], np.int64)
        with pytest.raises(RelayError, match=f"index {v} is out of range"):
            relay_core.evaluate(mod, d, i)
        with pytest.raises(RelayError, match=f"index {v} is out of range"):
            lib(d, i)
