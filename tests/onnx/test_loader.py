"""Hostile and malformed inputs: each is refused with a clear error, before anything unsafe is
opened or allocated."""

from __future__ import annotations

import builtins
import io
import os

import numpy as np
import pytest

from tests.require import require

onnx = require("onnx")
from onnx import TensorProto, helper  # noqa: E402

from converters.onnx import from_onnx, load_model  # noqa: E402
from relay_core.errors import ModelLoadError, ResourceLimitError, UnsupportedOpsError  # noqa: E402


def _model(nodes, inputs, outputs, initializers=(), opset=17, **kw):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], **kw)


def _vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def _add_model(init):
    return _model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add0")],
        [_vi("x", [4])],
        [_vi("y", [4])],
        [init],
    )


def _external_tensor(name, location, dims=(4,), offset=None, length=None):
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    entries = {"location": location}
    if offset is not None:
        entries["offset"] = str(offset)
    if length is not None:
        entries["length"] = str(length)
    for k, v in entries.items():
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


@pytest.fixture
def opened(monkeypatch):
    """Every path opened through builtins.open / io.open / os.open during the test."""
    paths: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def rec_open(file, *a, **k):
        if isinstance(file, (str, bytes, os.PathLike)):
            paths.append(os.path.realpath(os.fsdecode(file)))
        return real_open(file, *a, **k)

    def rec_os_open(path, *a, **k):
        paths.append(os.path.realpath(os.fsdecode(path)))
        return real_os_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", rec_open)
    monkeypatch.setattr(io, "open", rec_open)
    monkeypatch.setattr(os, "open", rec_os_open)
    return paths


def _layout(tmp_path):
    """model dir `tmp/m/`, a secret file `tmp/secret.bin` outside it."""
    mdir = tmp_path / "m"
    mdir.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(4, dtype=np.float32).tobytes())
    return mdir, secret


@pytest.mark.parametrize(
    "location",
    ["../secret.bin", "sub/../../secret.bin", "ABSOLUTE", "..\\secret.bin"],
)
def test_external_data_outside_model_dir_refused(tmp_path, opened, location):
    mdir, secret = _layout(tmp_path)
    (mdir / "sub").mkdir()
    loc = str(secret) if location == "ABSOLUTE" else location
    path = mdir / "model.onnx"
    onnx.save(_add_model(_external_tensor("w", loc)), str(path))
    opened.clear()
    with pytest.raises(ModelLoadError, match="absolute path|leaves the model's directory"):
        from_onnx(str(path))
    assert str(secret) not in opened
    assert all(p.startswith(str(mdir)) for p in opened), opened


def test_external_data_symlink_escape_refused(tmp_path, opened):
    mdir, secret = _layout(tmp_path)
    os.symlink(secret, mdir / "weights.bin")
    path = mdir / "model.onnx"
    onnx.save(_add_model(_external_tensor("w", "weights.bin")), str(path))
    opened.clear()
    with pytest.raises(ModelLoadError, match="symbolic link"):
        from_onnx(str(path))
    assert str(secret) not in opened


def test_external_data_inside_dir_is_loaded(tmp_path):
    mdir, _ = _layout(tmp_path)
    w = np.array([1, 2, 3, 4], np.float32)
    (mdir / "weights.bin").write_bytes(b"\0" * 8 + w.tobytes())
    path = mdir / "model.onnx"
    onnx.save(_add_model(_external_tensor("w", "weights.bin", offset=8, length=16)), str(path))
    mod = from_onnx(str(path))
    from converters.onnx.values import run

    x = np.ones(4, np.float32)
    np.testing.assert_array_equal(run(mod, [x])[0], x + w)


def test_external_data_huge_length_refused_before_reading(tmp_path, opened):
    mdir, _ = _layout(tmp_path)
    (mdir / "weights.bin").write_bytes(b"\0" * 16)
    path = mdir / "model.onnx"
    onnx.save(_add_model(_external_tensor("w", "weights.bin", length=10**12)), str(path))
    opened.clear()
    with pytest.raises(ModelLoadError, match="length is 1,000,000,000,000"):
        from_onnx(str(path))
    assert str(mdir / "weights.bin") not in opened


def test_external_data_file_too_short(tmp_path):
    mdir, _ = _layout(tmp_path)
    (mdir / "weights.bin").write_bytes(b"\0" * 8)
    path = mdir / "model.onnx"
    onnx.save(_add_model(_external_tensor("w", "weights.bin", length=16)), str(path))
    with pytest.raises(ModelLoadError, match="holds only 8"):
        from_onnx(str(path))


def test_external_data_in_memory_model_needs_a_directory():
    with pytest.raises(ModelLoadError, match="not loaded from a path"):
        from_onnx(_add_model(_external_tensor("w", "weights.bin")))


def test_huge_declared_initializer_without_data_refused():
    t = TensorProto()
    t.name, t.data_type = "w", TensorProto.FLOAT
    t.dims.extend([2**40])
    with pytest.raises(ResourceLimitError, match="over the byte budget"):
        from_onnx(_add_model(t))
    # Within the budget but without the bytes it declares: a size mismatch.
    t.ClearField("dims")
    t.dims.extend([4])
    with pytest.raises(ModelLoadError, match=r"declares shape \[4\]"):
        from_onnx(_add_model(t))


def test_raw_data_shorter_than_declared_refused():
    t = helper.make_tensor("w", TensorProto.FLOAT, [3], b"\0" * 12, raw=True)
    t.dims[0] = 4
    with pytest.raises(ModelLoadError, match=r"\(16 bytes\) but holds 12 bytes"):
        from_onnx(_add_model(t))


def test_byte_budget_is_configurable():
    w = helper.make_tensor("w", TensorProto.FLOAT, [4], np.ones(4, np.float32).tobytes(), raw=True)
    from_onnx(_add_model(w), byte_budget=1024)
    with pytest.raises(ResourceLimitError):
        from_onnx(_add_model(w), byte_budget=8)


@pytest.mark.parametrize("content", [b"", b"\x08", b"\xff" * 7, "random", "truncated"])
def test_malformed_files_are_not_valid_models(tmp_path, content):
    good = _add_model(helper.make_tensor("w", TensorProto.FLOAT, [4], [1.0] * 4))
    data = good.SerializeToString()
    if content == "random":
        content = np.random.default_rng(0).bytes(256)
    elif content == "truncated":
        content = data[: len(data) // 2]
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(ModelLoadError, match="not a valid ONNX model"):
        from_onnx(str(path))
    with pytest.raises(ModelLoadError, match="not a valid ONNX model"):
        load_model(bytes(content))


def test_missing_file_and_wrong_type(tmp_path):
    with pytest.raises(ModelLoadError, match="cannot open"):
        from_onnx(str(tmp_path / "nope.onnx"))
    with pytest.raises(ModelLoadError, match="not a file"):
        from_onnx(str(tmp_path))
    with pytest.raises(ModelLoadError, match="not int"):
        from_onnx(42)


@pytest.mark.parametrize("opset", [999, 29, 0])
def test_unsupported_opset_refused(opset):
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])])
    m.opset_import[0].version = opset
    with pytest.raises(ModelLoadError, match=r"opset|not a valid"):
        from_onnx(m)


def test_unsorted_and_cyclic_graphs_refused():
    unsorted = _model(
        [
            helper.make_node("Relu", ["t"], ["y"], name="second"),
            helper.make_node("Relu", ["x"], ["t"], name="first"),
        ],
        [_vi("x", [2])],
        [_vi("y", [2])],
    )
    with pytest.raises(ModelLoadError, match="topologically sorted|not a valid"):
        from_onnx(unsorted)
    cyclic = _model(
        [
            helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
            helper.make_node("Relu", ["a"], ["b"], name="n2"),
        ],
        [_vi("x", [2])],
        [_vi("b", [2])],
    )
    with pytest.raises(ModelLoadError, match="not a valid"):
        from_onnx(cyclic)


def test_undefined_input_names_the_node_without_checker():
    from converters.common import ConversionError
    from converters.onnx.graph import GraphConverter

    m = _model(
        [
            helper.make_node("Relu", ["t"], ["y"], name="second"),
            helper.make_node("Relu", ["x"], ["t"], name="first"),
        ],
        [_vi("x", [2])],
        [_vi("y", [2])],
    )
    with pytest.raises(ConversionError, match="'second'.*input 't' is not defined"):
        GraphConverter(m).convert_model()


def test_unsupported_ops_reported_together_including_subgraphs():
    then_g = helper.make_graph(
        [helper.make_node("FancyOp", ["x"], ["t"], domain="my.domain")],
        "then",
        [],
        [_vi("t", [2])],
    )
    else_g = helper.make_graph(
        [helper.make_node("OtherOp", ["x"], ["e"], domain="my.domain")],
        "else",
        [],
        [_vi("e", [2])],
    )
    nodes = [
        helper.make_node("Mystery", ["x"], ["a"], domain="my.domain"),
        helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
    ]
    m = helper.make_model(
        helper.make_graph(
            nodes,
            "g",
            [_vi("x", [2]), _vi("c", [], TensorProto.BOOL)],
            [_vi("y", [2]), _vi("a", [2])],
        ),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.domain", 1)],
    )
    with pytest.raises(UnsupportedOpsError) as info:
        from_onnx(m)
    ops = {(d, op) for d, op, _ in info.value.ops}
    assert ops == {("my.domain", "Mystery"), ("my.domain", "FancyOp"), ("my.domain", "OtherOp")}
    assert "3 unsupported" in str(info.value) and "custom_convert_map" in str(info.value)


def test_custom_convert_map_adds_and_overrides():
    m = helper.make_model(
        helper.make_graph(
            [
                helper.make_node("Twice", ["x"], ["a"], domain="my.domain", scale=2.0),
                helper.make_node("Relu", ["a"], ["y"]),
            ],
            "g",
            [_vi("x", [3])],
            [_vi("y", [3])],
        ),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.domain", 1)],
    )

    def twice(ctx, x, *, scale=1.0):
        return ctx.call("multiply", x, ctx.const(np.float32(scale)))

    def neg_relu(ctx, x):  # overrides the built-in Relu
        return ctx.call("negative", x)

    from converters.onnx.values import run

    x = np.array([-1.0, 0.5, 2.0], np.float32)
    mod = from_onnx(m, custom_convert_map={"Twice": twice, "Relu": neg_relu})
    np.testing.assert_allclose(run(mod, [x])[0], -2 * x)


def test_shapes_override_and_dim_params():
    m = _model(
        [helper.make_node("Abs", ["x"], ["y"])], [_vi("x", ["batch", 3])], [_vi("y", ["batch", 3])]
    )
    from relay_core.ir import ShapeVar

    mod = from_onnx(m)
    assert mod["main"].params[0].type_annotation.shape == (ShapeVar("batch"), 3)
    mod = from_onnx(m, shapes={"x": (5, 3)})
    assert mod["main"].params[0].type_annotation.shape == (5, 3)
    with pytest.raises(Exception, match="unknown input"):
        from_onnx(m, shapes={"nope": (1,)})


def test_conversion_errors_name_the_node():
    m = _model(
        [helper.make_node("Add", ["x", "z"], ["y"], name="the_add")],
        [_vi("x", [2]), _vi("z", [2], TensorProto.INT64)],
        [_vi("y", [2])],
    )
    with pytest.raises(Exception, match="the_add"):
        from_onnx(m)


def _field(num: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (to build what onnx's helpers refuse to)."""
    out = bytearray([(num << 3) | 2])
    n = len(payload)
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out) + payload


def _deep_if_model(depth: int) -> bytes:
    """y = x through `depth` nested If nodes, as raw ModelProto bytes."""
    y = _vi("y", [2]).SerializeToString()
    leaf = (
        _field(1, helper.make_node("Identity", ["x"], ["y"]).SerializeToString())
        + _field(2, b"g")
        + _field(12, y)
    )
    g = leaf
    for _ in range(depth):  # then: one level deeper; else: the leaf (type=GRAPH is 0xA0 0x01 5)
        attrs = b"".join(
            _field(5, _field(1, name) + _field(6, body) + bytes([0xA0, 0x01, 5]))
            for name, body in ((b"then_branch", g), (b"else_branch", leaf))
        )
        node = _field(1, b"c") + _field(2, b"y") + _field(4, b"If") + attrs
        g = _field(1, node) + _field(2, b"g") + _field(12, y)
    g += _field(11, _vi("x", [2]).SerializeToString())
    g += _field(11, _vi("c", [], TensorProto.BOOL).SerializeToString())
    opset = helper.make_opsetid("", 17).SerializeToString()
    return bytes([1 << 3, 8]) + _field(8, opset) + _field(7, g)


def test_deeply_nested_subgraphs():
    from converters.onnx.values import run

    x = np.array([1.0, 2.0], np.float32)
    mod = from_onnx(_deep_if_model(25))  # converts without recursing per node
    np.testing.assert_array_equal(run(mod, [x, np.array(False)])[0], x)
    with pytest.raises(ModelLoadError, match="not a valid ONNX model"):
        from_onnx(_deep_if_model(40))  # beyond protobuf's nesting limit


def test_constant_of_shape_beyond_the_budget_is_refused():
    shape = helper.make_tensor("s", TensorProto.INT64, [3], [100000, 100000, 100000])
    m = _model(
        [helper.make_node("ConstantOfShape", ["s"], ["y"])],
        [],
        [_vi("y", [100000, 100000, 100000])],
        [shape],
    )
    assert len(m.SerializeToString()) < 200
    from converters.onnx.values import run

    with pytest.raises(ResourceLimitError):
        mod = from_onnx(m)  # refused while folding constants, if the pass is there
        run(mod, [], max_bytes=1 << 30)  # else at run time by the interpreter's budget
