"""relay_core.ir.serialize: a module written to bytes reads back structurally equal, with its
constants bit-exact (every dtype the format stores) and its attributes as they were."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.ir import serialize
from relay_core.ir.parser import parse
from relay_core.ir.structural import structural_equal

TEXT = """
def @main(%x: Tensor[(2, 3), float32], %i: Tensor[(2, 3), int64]) -> Tensor[(2, 3), float32] {
  %0 = add(%x, meta[Constant][0]);
  %1 = multiply(%0, meta[Constant][1]);
  %2 = cast(%i, dtype="float32");
  %3 = where(meta[Constant][2], %1, %2);
  add(%3, cast(meta[Constant][3], dtype="float32"))
}
"""


def _constants():
    rng = np.random.default_rng(0)
    return [
        rng.standard_normal((2, 3)).astype("float32"),
        np.array([np.nan, -0.0, np.inf], "float32"),
        rng.random((2, 3)) > 0.5,
        rng.standard_normal((2, 3)).astype("float16"),
    ]


def _module():
    return parse(TEXT, constants=_constants())


def test_round_trip_is_exact():
    mod = _module()
    back = serialize.loads(serialize.dumps(mod))
    assert structural_equal(mod, back)
    main = back["main"]
    assert main.has_type and main.checked_type == mod["main"].checked_type
    got = relay_core.evaluate(back, np.ones((2, 3), "float32"), np.arange(6).reshape(2, 3))
    want = relay_core.evaluate(mod, np.ones((2, 3), "float32"), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_constants_are_bit_exact_and_read_only(tmp_path):
    mod = _module()
    path = tmp_path / "m.relaymod"
    serialize.save(mod, str(path))
    back = serialize.load(str(path))
    from relay_core.ir.expr import Constant
    from relay_core.ir.visitor import post_order

    def consts(m):
        return [e for e in post_order(m["main"].body) if isinstance(e, Constant)]

    a, b = consts(mod), consts(back)
    assert len(a) == len(b) == 4
    for x, y in zip(a, b):
        assert x.data.dtype == y.data.dtype and x.data.shape == y.data.shape
        assert x.data.tobytes() == y.data.tobytes()
        assert not y.data.flags.writeable


def test_attributes_survive():
    mod = _module()
    main = mod["main"]
    body = main.body
    mod.attrs["input_names"] = ["x", "i"]
    mod.attrs["source_nodes"] = [("n0", "Add", ["x"], ["y"]), ("n1", "Mul", ["y"], ["z"])]
    mod.attrs["params"] = {"w": np.arange(4, dtype="int32")}
    mod.attrs["source_outputs"] = {"y": body.args[0], "x": main.params[0]}
    back = serialize.loads(serialize.dumps(mod))
    assert back.attrs["input_names"] == ["x", "i"]
    assert back.attrs["source_nodes"] == mod.attrs["source_nodes"]
    assert isinstance(back.attrs["source_nodes"][0], tuple)
    np.testing.assert_array_equal(back.attrs["params"]["w"], mod.attrs["params"]["w"])
    so = back.attrs["source_outputs"]
    assert so["x"] is back["main"].params[0]  # @main's own parameter, not a copy
    assert structural_equal(so["y"], mod.attrs["source_outputs"]["y"], map_free_vars=True)
    assert so["y"].has_type
    assert back["main"].ret_type is not None
    assert structural_equal(back, mod)


def test_unsupported_attribute_is_refused():
    mod = _module()
    mod.attrs["callback"] = object()
    with pytest.raises(serialize.NotSerializable):
        serialize.dumps(mod)


def test_foreign_bytes_are_refused():
    with pytest.raises(ValueError, match="not a serialized Relay module"):
        serialize.loads(b"PK\x03\x04 something else")


def test_scalar_constants_stay_scalars(tmp_path):
    from relay_core.ir.expr import Constant
    from relay_core.ir.structural import structural_hash

    text = """
def @main(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
  multiply(%x, meta[Constant][0])
}
"""
    scalar = parse(text, constants=[np.array(2.5, "float32")])
    vector = parse(text, constants=[np.array([2.5], "float32")])
    assert structural_hash(scalar) != structural_hash(vector)
    path = tmp_path / "s.relaymod"
    serialize.save(scalar, str(path))
    back = serialize.load(str(path))
    (c,) = [e for e in _post(back) if isinstance(e, Constant)]
    assert c.data.shape == ()
    assert structural_hash(back) == structural_hash(scalar)


def test_loaded_constants_hash_without_reading(tmp_path):
    """load() maps the file and remembers the stored digests: hashing the loaded module gives
    the original's hash, and the digests are the bytes' own."""
    import hashlib

    from relay_core.ir import structural
    from relay_core.ir.expr import Constant
    from relay_core.ir.structural import structural_hash

    mod = _module()
    path = tmp_path / "m.relaymod"
    serialize.save(mod, str(path))
    back = serialize.load(str(path))
    for e in _post(back):
        if isinstance(e, Constant):
            assert id(e.data) in structural._DIGESTS
            want = hashlib.blake2b(np.ascontiguousarray(e.data).tobytes()).digest()
            assert structural.constant_digest(e.data) == want
    assert structural_hash(back) == structural_hash(mod)


def test_truncated_file_is_refused(tmp_path):
    mod = _module()
    data = serialize.dumps(mod)
    path = tmp_path / "t.relaymod"
    path.write_bytes(data[: len(data) - 64])
    with pytest.raises(ValueError):
        serialize.load(str(path))
    (tmp_path / "empty.relaymod").write_bytes(b"")
    with pytest.raises(ValueError):
        serialize.load(str(tmp_path / "empty.relaymod"))


def _post(mod):
    from relay_core.ir.visitor import post_order

    return post_order(mod["main"].body)
