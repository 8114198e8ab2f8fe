"""Batch-split kernels of shape-generic builds: with a run-time batch, a hand-written kernel is
built for one batch element and, on small planes and for dense layers, for blocks of images
(lower.BLOCK_IMAGES); the group's loop IR calls whole blocks first, then the one-element kernel
for the rest. All of them read each constant in one prepacked layout (the module stores it
once): `BatchBlocks` (a part of the Scheduler) makes them agree.
"""

from __future__ import annotations

from numbers import Number
from types import FunctionType
from typing import TYPE_CHECKING

from ..te import expr as E
from . import tir as T
from .kernels.common import prefer_variant

if TYPE_CHECKING:
    from .schedule import ExternOp


# From this many elements on, a batch-split product with a run-time-shaped kernel
# (kernels/gemm_dynamic) runs that kernel once over the whole batch: blocks of 8 stream the
# weights once per block. Dense layers, ours / onnxruntime at 2 threads, interleaved (Zen 3,
# 2026-12-06): 150 x 12544 x 1024 (a detector's box head) 1.63 in blocks, 1.14 whole; 64 x 2048
# x 1000 1.29 / 1.00; 64 x 25088 x 4096 1.45 / 0.98; at 1-8 rows blocks and the whole-batch
# kernel were within noise of each other, except one row of a 1024 x 1024 layer (0.17 ms in the
# one-row kernel, 0.38 ms whole).
WHOLE_BATCH = 16


class BatchBlocks:
    """The Scheduler's block-kernel methods (it provides `llctx` and `_forget`)."""

    def _emit_blocks(self, op, epilogue_of) -> None:
        """Define the block kernels of a batch-split op after its per-element kernel, each with
        the epilogue `epilogue_of(images)` returns as (ok, epilogue); drop a block when not ok,
        when the kernel refuses it, or when it would read a constant in another layout than the
        per-element kernel (the module stores each constant once). The per-element kernel first
        takes the largest block's own algorithm where it can (`_adopt_block_variant`); a block
        whose choice still reads another layout is emitted again with the per-element kernel's
        variant (`prefer_variant`): a 7x7 Winograd convolution's transposed form (16 tiles of
        one image take the transposed product, 128 of a block the other)."""
        probe = self._adopt_block_variant(op, epilogue_of)
        pp1 = (op.info.prepack or {}) if op.info is not None else {}
        variant = op.info.variant if op.info is not None else None
        kept = []
        for k, name, emit in op.blocks:
            if probe is not None:  # the first (largest) block, emitted as the probe
                pname, pinfo = probe
                probe = None
                if _same_prepack(pp1, pinfo):
                    self.llctx.externs.add(pname)
                    kept.append((k, pname, emit))
                    continue
                self._forget(pname)
            ok, epilogue = epilogue_of(k)
            if ok:
                name = self._emit_block(k, name, emit, epilogue, pp1, variant)
                if name is not None:
                    kept.append((k, name, emit))
        op.blocks = kept

    def _emit_whole(self, op, epilogue) -> None:
        """Define the whole-batch kernel of a batch-split op (`ExternOp.whole`) with
        `epilogue` (False: none could be built, so the kernel is dropped), or drop it when it
        would read a constant in another layout than the per-element kernel."""
        if op.whole is None:
            return
        name, emit = op.whole[:2]
        info = None
        if epilogue is not False:
            try:
                info = emit(self.llctx.llmod, name, epilogue)
            except NotImplementedError:
                info = None
        pp1 = (op.info.prepack or {}) if op.info is not None else {}
        if info is None or not _same_prepack(pp1, info):
            self._forget(name)
            op.whole = None
            return
        self.llctx.externs.add(name)

    def _adopt_block_variant(self, op, epilogue_of) -> tuple | None:
        """Re-emit the per-element kernel of a batch-split op with the algorithm its largest
        block kernel takes on its own, where that reads the weights in another layout: the
        blocks, which do most of the work at batch 8 and more, then keep their own choice. One
        image's rules pick for batch 1 alone: Winograd refuses few positions against large
        weights (MIN_POSITIONS: 512 channels on 7x7), 1x1 convolutions on wide channels take
        conv_strips; the blocks then ran that. Shape-generic builds, interleaved (AMD EPYC Zen
        3): against the same build without this, RegNetY-400MF 0.97 / 0.95 of the time (b8 /
        b1), ResNet-50 0.98 / 0.99, MobileNetV2 unchanged; ResNet-18 with Winograd in the
        one-image kernel and the blocks against conv_strips in both (the rule lifted; on AVX2
        it no longer applies) 0.88 at batch 8 (140.7 -> 124.4 ms; its static build 119.4).

        Returns (name, info) of the largest block kernel (op.blocks[0]), emitted here as the
        probe, for `_emit_blocks` to keep when its layouts agree (else it is dropped there);
        None when there was no probe."""
        if not op.blocks or op.info is None or op.info.variant is None:
            return None
        k, bname, emit = op.blocks[0]
        ok, epilogue = epilogue_of(k)
        probe = f"{bname}p"
        try:
            info = emit(self.llctx.llmod, probe, epilogue) if ok else None
        except NotImplementedError:
            info = None
        if info is None:
            self._forget(probe)
            return None
        kept = (probe, info)
        if info.variant is None or info.variant[0] == op.info.variant[0]:
            return kept  # the same algorithm (another form: _emit_block's fallback)
        ok, epilogue = epilogue_of(1)
        if not ok:
            return kept
        name = f"{op.name}w"
        try:
            with prefer_variant(info.variant):
                new = op.emit(self.llctx.llmod, name, epilogue)
        except NotImplementedError:
            new = None
        if new is None or new.variant != info.variant:
            self._forget(name)
            return kept
        self._forget(op.name)
        self.llctx.externs.discard(op.name)
        self.llctx.externs.add(name)
        op.name, op.info = name, new
        return kept

    def _emit_block(self, k, name, emit, epilogue, pp1, variant) -> str | None:
        """One block kernel (see _emit_blocks): the name it was defined under, or None."""
        for prefer in (None, variant) if variant is not None else (None,):
            if prefer is not None:  # a new name: LLVM modules do not reuse a removed one's
                name = f"{name}v"
            try:
                with prefer_variant(prefer):
                    info = emit(self.llctx.llmod, name, epilogue)
            except NotImplementedError:
                info = None
            if info is not None and _same_prepack(pp1, info):
                self.llctx.externs.add(name)
                return name
            self._forget(name)
        return None


def _same_prepack(pp1: dict, info) -> bool:
    """Whether a block kernel reads every constant in the per-element kernel's layout."""
    ppk = info.prepack or {}
    return pp1.keys() == ppk.keys() and all(same_transform(pp1[i], ppk[i]) for i in pp1)


def _batch_slice(buf: T.Buffer, n) -> T.Offset:
    """Element n of a buffer's leading (batch) axis."""
    per = 1
    for d in buf.shape[1:]:
        per = per * d
    return T.Offset(buf, n * per)


def _batch_calls(op: ExternOp, ins: list, outs: list, extra: list) -> T.Stmt:
    """The calls of a batch-split kernel: whole blocks of each block kernel in turn (largest
    first), then the per-element kernel for the rest."""

    def call(name, n):
        ins_n = [_batch_slice(b, n) if k == 0 else b for k, b in enumerate(ins)]
        outs_n = [_batch_slice(b, n) for b in outs]
        ext_n = [_batch_slice(b, n) if _has_run_time_batch(b) else b for b in extra]
        return T.CallKernel(name, ins_n + outs_n + ext_n + list(op.scalar_args), None)

    start = 0
    stmts = []
    for k, name, _ in op.blocks:
        count = (op.batch - start) // k
        blk = T.index_var(f"block{k}")
        stmts.append(T.For(blk, count, call(name, start + blk * k)))
        start = start + count * k
    n = T.index_var("batch")
    stmts.append(T.For(n, op.batch, call(op.name, n), begin=start))
    split = stmts[0] if len(stmts) == 1 else T.seq(*stmts)
    if op.whole is None:
        return split
    whole = T.CallKernel(op.whole[0], ins + outs + extra + list(op.whole[2]), None)
    return T.IfThenElse(E.ge(E.index(op.batch), E.index(WHOLE_BATCH)), whole, split)


def same_transform(a, b) -> bool:
    """Whether two prepack transforms certainly compute the same array: the same object,
    DerivedPrepacks with the same routine and parameters, or functions with the same code whose
    captured values (and defaults) are equal (closures of the same kernel generator built with
    the same layout parameters). False when unsure."""
    from .derived import DerivedPrepack

    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if isinstance(x, DerivedPrepack) and isinstance(y, DerivedPrepack):
            # the runtime derives it from these alone (the numpy fn mirrors them)
            if (x.routine, x.params, x.shape) != (y.routine, y.params, y.shape):
                return False
        elif isinstance(x, FunctionType) and isinstance(y, FunctionType):
            if x.__code__ is not y.__code__ or x.__globals__ is not y.__globals__:
                return False
            cx, cy = x.__closure__ or (), y.__closure__ or ()
            stack.append((x.__defaults__ or (), y.__defaults__ or ()))
            stack.extend((p.cell_contents, q.cell_contents) for p, q in zip(cx, cy))
        elif isinstance(x, tuple) and isinstance(y, tuple):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, (Number, str, type(None))) and type(x) is type(y):
            if x != y:  # numpy scalars too (numbers.Number)
                return False
        else:
            return False
    return True


def _has_run_time_batch(buf: T.Buffer) -> bool:
    return bool(buf.shape) and not isinstance(buf.shape[0], int)
