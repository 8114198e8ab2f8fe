"""ChannelsFirst: NHWC convolutions and pools computed in NCHW, the transposes moved forward
until they cancel; checked against the interpreter on the original program, and compiled
with an unknown batch at batch sizes 1, 3 and 9."""

from __future__ import annotations

import numpy as np

import relay_core
from relay_core import passes
from relay_core.ir.expr import Call, Op
from relay_core.ir.visitor import post_order

from .golden import check, parse

RNG = np.random.default_rng(17)
W1 = RNG.standard_normal((3, 3, 3, 8)).astype(np.float32) / 4  # HWIO
W2 = RNG.standard_normal((1, 1, 8, 8)).astype(np.float32) / 3
WD = RNG.standard_normal((3, 3, 1, 8)).astype(np.float32) / 3  # depthwise: groups=8
B8 = RNG.standard_normal(8).astype(np.float32)
C8 = RNG.standard_normal((1, 1, 8)).astype(np.float32)  # broadcasts along the channels


def _ops(mod) -> list[Call]:
    return [
        n
        for n in post_order(relay_core.infer_type(mod)["main"])
        if type(n) is Call and type(n.op) is Op
    ]


def test_conv_relu_becomes_nchw_between_two_transposes():
    x = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    check(
        passes.ChannelsFirst(),
        """
        def @main(%x: Tensor[(2, 6, 6, 3), float32]) {
          nn.relu(nn.conv2d(%x, meta[Constant][0], padding=[1, 1, 1, 1], data_layout="NHWC",
                            kernel_layout="HWIO"))
        }
        """,
        """
        def @main(%x: Tensor[(2, 6, 6, 3), float32]) {
          %0 = transpose(%x, axes=[0, 3, 1, 2]);
          %1 = nn.conv2d(%0, meta[Constant][0], padding=[1, 1, 1, 1]);
          transpose(nn.relu(%1), axes=[0, 2, 3, 1])
        }
        """,
        consts=[W1],
        consts_after=[W1.transpose(3, 2, 0, 1)],
        inputs=[x],
    )


NET = """
def @main(%x: Tensor[(BATCH, 12, 12, 3), float32]) {
  %0 = nn.conv2d(%x, meta[Constant][0], padding=[1, 1, 1, 1], data_layout="NHWC",
                 kernel_layout="HWIO");
  %1 = nn.bias_add(%0, meta[Constant][3], axis=-1);
  %2 = clip(%1, a_min=0f, a_max=6f);
  %3 = nn.conv2d(%2, meta[Constant][2], padding=[1, 1, 1, 1], groups=8, data_layout="NHWC",
                 kernel_layout="HWIO");
  %4 = add(%3, meta[Constant][4]);
  %5 = nn.conv2d(%4, meta[Constant][1], data_layout="NHWC", kernel_layout="HWIO");
  %6 = add(%2, %5);
  %7 = nn.pad(%6, pad_width=[[0, 0], [0, 1], [0, 1], [0, 0]]);
  %8 = nn.max_pool2d(%7, pool_size=[2, 2], strides=[2, 2], layout="NHWC");
  %9 = nn.avg_pool2d(%6, pool_size=[2, 2], strides=[2, 2], layout="NHWC");
  %10 = concatenate(%8, nn.relu(%9), axis=3);
  %11 = multiply(2f, %10);
  (mean(%11, axis=[1, 2]), %11)
}
"""


def _net(batch):
    return parse(NET.replace("BATCH", str(batch)), [W1, W2, WD, B8, C8])


def test_a_small_network_keeps_one_transpose_per_edge_and_its_values():
    mod = _net(3)
    out = passes.ChannelsFirst()(mod)
    ops = _ops(out)
    transposes = [c.attrs.axes for c in ops if c.op.name == "transpose"]
    # one after the input, one before the NHWC output: everything between is NCHW
    assert sorted(tuple(a) for a in transposes) == [(0, 2, 3, 1), (0, 3, 1, 2)], transposes
    assert {c.attrs.data_layout for c in ops if c.op.name == "nn.conv2d"} == {"NCHW"}
    assert {c.attrs.layout for c in ops if c.op.name.endswith("pool2d")} == {"NCHW"}
    x = RNG.standard_normal((3, 12, 12, 3)).astype(np.float32)
    want = relay_core.evaluate(mod, x)
    got = relay_core.evaluate(out, x)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_models_without_nhwc_layers_are_unchanged():
    src = """
    def @main(%x: Tensor[(1, 3, 6, 6), float32]) {
      %0 = transpose(%x, axes=[0, 2, 3, 1]);
      nn.relu(add(%0, 1f))
    }
    """
    mod = parse(src)
    assert relay_core.structural_equal(passes.ChannelsFirst()(mod), mod)


def test_what_it_cannot_move_keeps_an_explicit_transpose():
    # a reshape needs the NHWC order: the value is transposed back before it
    x = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    mod = parse(
        """
        def @main(%x: Tensor[(2, 6, 6, 3), float32]) {
          %0 = nn.conv2d(%x, meta[Constant][0], data_layout="NHWC", kernel_layout="HWIO");
          reshape(nn.relu(%0), newshape=[2, -1])
        }
        """,
        [W1],
    )
    out = passes.ChannelsFirst()(mod)
    names = [c.op.name for c in _ops(out)]
    assert names.count("transpose") == 2 and names[-1] == "reshape"
    np.testing.assert_allclose(
        relay_core.evaluate(out, x), relay_core.evaluate(mod, x), rtol=1e-5, atol=1e-5
    )


def test_compiled_with_an_unknown_batch():
    # the default pipeline runs the pass: compiled once with `?` batch, called with batch
    # sizes 1, 3 and 9, each against the interpreter on the unconverted program
    from relay_core.backend.compiler import prepare

    mod = _net("?")
    text = prepare(mod).astext(show_meta_data=False)
    assert 'data_layout="NHWC"' not in text
    lib = relay_core.build(mod)
    assert type(lib).__name__ == "CompiledModule"
    for n in (1, 3, 9):
        x = RNG.standard_normal((n, 12, 12, 3)).astype(np.float32)
        want = relay_core.evaluate(_net(n), x)
        got = lib(x)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
