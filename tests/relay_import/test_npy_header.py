""".npy headers parsed without `ast` (relay_import.io.read_npy_header).

numpy's reader calls `ast.literal_eval`; in CPython 3.11 two threads doing so at once can fail
with "SystemError: AST constructor recursion depth mismatch" (gh-106905). `relay serve` decodes
request bodies on several threads, and a wrong-shape request got a 500 from it under load. The
parser must agree with numpy's on what numpy writes and refuse what it cannot read."""

from __future__ import annotations

import ast
import io
import struct
import threading

import numpy as np
import pytest

from relay_import.io import read_npy_header
from relay_import.service.errors import ApiError
from relay_import.service.limits import decode_npz

ARRAYS = [
    np.zeros((1, 3, 32, 32), np.float32),
    np.arange(6, dtype=np.int64).reshape(2, 3),
    np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4)),
    np.float32(2.5).reshape(()),
    np.zeros((0, 5), np.uint8),
    np.array([True, False]),
    np.array(["ab", "cde"]),
    np.array([b"x", b"yz"]),
    np.zeros((7,), np.float16),
    np.zeros((2, 2), np.complex64),
    np.array(["2020-01-01"], dtype="datetime64[s]"),
    np.zeros((2,), ">i4"),
]


def _npy(a: np.ndarray, version=None) -> bytes:
    b = io.BytesIO()
    if version is None:
        np.save(b, a, allow_pickle=False)
    else:
        np.lib.format.write_array(b, a, version=version, allow_pickle=False)
    return b.getvalue()


@pytest.mark.parametrize("k", range(len(ARRAYS)))
@pytest.mark.parametrize("version", [None, (2, 0), (3, 0)])
def test_agrees_with_numpy(k, version):
    data = _npy(ARRAYS[k], version)
    f = io.BytesIO(data)
    got = read_npy_header(f)
    a = np.load(io.BytesIO(data), allow_pickle=False)
    fortran = a.flags.f_contiguous and not a.flags.c_contiguous
    assert got == (a.shape, fortran, a.dtype)
    assert len(data) - f.tell() == a.nbytes  # the data starts where the header ends


def _with_header(text: str) -> bytes:
    h = text.encode("latin1")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x93NUMPY",
        b"\x93NUMPY\x01\x00\x50\x00{'descr'",
        b"PK\x03\x04 not an npy",
        b"\x93NUMPY\x09\x00\x10\x00" + b" " * 16,
        _with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }"),
        _with_header("{'descr': '<f4', 'fortran_order': False, }"),
        _with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'x'), }"),
        _with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }"),
        _with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}"),
        _with_header("{'descr': 'not a dtype', 'fortran_order': False, 'shape': (2,), }"),
        _with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,"),
        _with_header("['descr', '<f4']"),
        _with_header("__import__('os').system('true')"),
        _with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }"),
    ],
)
def test_refuses_what_it_cannot_read(data):
    with pytest.raises(ValueError):
        read_npy_header(io.BytesIO(data))


def test_request_bodies_never_reach_ast(monkeypatch):
    """What the server decodes (inputs, and a worker's outputs) goes through the parser above,
    never through numpy's ast-based one."""

    def refuse(*a, **k):
        raise AssertionError("ast.literal_eval called")

    monkeypatch.setattr(ast, "literal_eval", refuse)
    x = np.arange(6, dtype=np.float32).reshape(1, 6)
    b = io.BytesIO()
    np.savez(b, x=x)
    got = decode_npz(b.getvalue(), {"x": ((None, 6), np.dtype(np.float32))}, 1 << 20)
    np.testing.assert_array_equal(got["x"], x)
    with pytest.raises(ApiError, match="has shape"):
        decode_npz(b.getvalue(), {"x": ((1, 7), np.dtype(np.float32))}, 1 << 20)


def test_many_threads_decode_at_once():
    """Eight threads decoding bodies while another parses Python source: every answer right."""
    rngs = [np.random.default_rng(i) for i in range(8)]
    xs = [r.standard_normal((1, 3, 8, 8)).astype(np.float32) for r in rngs]
    bodies = []
    for x in xs:
        b = io.BytesIO()
        np.savez(b, image=x)
        bodies.append(b.getvalue())
    expected = {"image": (("batch", 3, 8, 8), np.dtype(np.float32))}
    errors: list = []
    stop = threading.Event()

    def parse_source():
        while not stop.is_set():
            ast.parse("[(1, 2), {'a': [3, (4, 5)]}]")

    def decode(k):
        try:
            for _ in range(200):
                got = decode_npz(bodies[k], expected, 1 << 20)["image"]
                if not np.array_equal(got, xs[k]):
                    errors.append(k)
        except Exception as e:  # noqa: BLE001 - collected for the assertion
            errors.append(repr(e))

    bg = threading.Thread(target=parse_source)
    bg.start()
    threads = [threading.Thread(target=decode, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    bg.join()
    assert errors == []
