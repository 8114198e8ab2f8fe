"""Constants computed when a module is loaded instead of stored in its artifact.

A kernel may read a constant in a layout of its own (`KernelInfo.prepack`). Most such layouts
are the same size as the constant (GEMM panels): the artifact stores the packed copy in its
place. Some are larger: Winograd F(2x2, 3x3) reads each 3x3 filter as its 16 transformed
positions, 16/9 of the bytes. Those prepacks are `DerivedPrepack`s: the artifact stores the
original constant and a record of the transform; the library's `relay_prepare` (C runtime,
relay_core/backend/c/relay_derive.c) computes the derived copy into memory once, at load time
(docs/c_abi.md). weights.bin then holds each constant once.

The constant table of a module (`GraphPlan.constants`, `VMPlan.constants`) holds numpy arrays
(stored) and `DerivedConst`s (computed from the slot `source`); `layout` places them, and
`emit_prepare` writes the library's `relay_prepare`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

# The C runtime's routines (relay_derive.c: RELAY_DERIVE_*) and the descriptor format.
WINOGRAD_F23 = 1
ROUTINES = {WINOGRAD_F23: "winograd_f23"}
DESC_VERSION = 1
DESC_PARAMS = 8
PREPARE = "relay_prepare"
_ALIGN = 64


class DerivedPrepack:
    """A prepack the C runtime recomputes at load time (it is not stored).

    fn:      the numpy transform (what the kernel reads); tests check that the runtime
             computes the same bytes.
    routine: the runtime's routine (WINOGRAD_F23, ...); params: its integer parameters, which
             describe the original constant's layout as well (`with_source`).
    shape:   the result's shape (float32).
    """

    def __init__(self, fn: Callable, routine: int, params: tuple, shape: tuple):
        self.fn = fn
        self.routine = routine
        self.params = tuple(int(p) for p in params)
        self.shape = tuple(int(d) for d in shape)

    def __call__(self, a: np.ndarray) -> np.ndarray:
        return self.fn(a)

    def reading(self, fn: Callable, extra: tuple) -> DerivedPrepack:
        """The same derived constant computed from another view of the original: `fn` is the
        numpy transform of the original as stored, `extra` appended to the parameters."""
        return DerivedPrepack(fn, self.routine, self.params + tuple(extra), self.shape)


@dataclass(eq=False)
class DerivedConst:
    """A derived constant slot: `routine(params)` of slot `source` (an int, or a Storage whose
    `index` is the slot once the table is final)."""

    source: object
    routine: int
    params: tuple
    shape: tuple
    dtype: np.dtype = np.dtype(np.float32)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.itemsize

    def source_slot(self) -> int:
        s = self.source
        return s if isinstance(s, int) else s.index


def derived_const(pp: DerivedPrepack, source) -> DerivedConst:
    return DerivedConst(source, pp.routine, pp.params, pp.shape)


@dataclass
class ConstLayout:
    """Where each constant slot is: records (kind, offset, source, routine, params) in slot
    order (kind 0: weights.bin + offset, kind 1: the derived buffer + offset)."""

    records: list
    weights_bytes: int
    derived_bytes: int


def layout(constants: list) -> ConstLayout:
    """Offsets of the stored constants in weights.bin and of the derived ones in the derived
    buffer, each 64-byte aligned, in slot order."""
    records = []
    off = [0, 0]
    for arr in constants:
        kind = 1 if isinstance(arr, DerivedConst) else 0
        o = off[kind] = -(-off[kind] // _ALIGN) * _ALIGN
        off[kind] += int(arr.nbytes)
        if kind:
            records.append((1, o, arr.source_slot(), arr.routine, arr.params))
        else:
            records.append((0, o, 0, 0, ()))
    return ConstLayout(records, off[0], -(-off[1] // _ALIGN) * _ALIGN)


def emit_prepare(llmod: ir.Module, lay: ConstLayout) -> None:
    """`int32_t relay_prepare(const void *weights, void *derived, void **constants, int32_t
    nthreads)`: fills the constant table (one pointer per slot) and computes the derived
    constants (0, or non-zero for a descriptor this runtime does not know)."""
    i8p = ir.IntType(8).as_pointer()
    i32, i64 = ir.IntType(32), ir.IntType(64)
    words = [DESC_VERSION, len(lay.records)]
    for kind, off, src, routine, params in lay.records:
        if len(params) > DESC_PARAMS:
            raise ValueError(f"a derived constant has {len(params)} parameters")
        words += [kind, off, src, routine, *params, *[0] * (DESC_PARAMS - len(params))]
    ty = ir.ArrayType(i64, len(words))
    g = ir.GlobalVariable(llmod, ty, "relay.constants.desc")
    g.initializer = ir.Constant(ty, words)
    g.global_constant = True
    g.linkage = "internal"
    desc_fn = llmod.globals.get("relay_prepare_desc") or ir.Function(
        llmod,
        ir.FunctionType(i32, [i64.as_pointer(), i8p, i8p, i8p.as_pointer(), i32]),
        "relay_prepare_desc",
    )
    fn = ir.Function(llmod, ir.FunctionType(i32, [i8p, i8p, i8p.as_pointer(), i32]), PREPARE)
    for a, nm in zip(fn.args, ["weights", "derived", "constants", "nthreads"]):
        a.name = nm
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    desc = b.gep(g, [ir.Constant(i32, 0), ir.Constant(i32, 0)])
    b.ret(b.call(desc_fn, [desc, *fn.args]))


def manifest_entry(arr, rec) -> dict:
    """A constant's manifest entry (its dtype name filled in by the caller)."""
    kind, off, src, routine, params = rec
    e = {"offset": off, "shape": [int(d) for d in arr.shape]}
    if kind:
        e["derived"] = {"from": src, "routine": ROUTINES[routine], "params": list(params)}
    return e
