"""LLVM IR text -> object code, in this process or in a worker process.

This file imports only llvmlite and the standard library: run as a script
(`python llvm_worker.py`) it is a compile worker that starts in ~0.15 s, where importing
relay_core would take ~2 s. llvmlite serialises every call into LLVM behind one process-wide
lock, so threads cannot optimise two modules at once; processes can (see llvm_target.compile_units).

Protocol on stdin / stdout: each message is a 4-byte little-endian length and a pickle.
Request `(text, triple, cpu, features, level)`, reply `("ok", object, opt_s, emit_s)` or
`("err", message)`. The worker exits at end of input (its parent went away).
"""

from __future__ import annotations

import functools
import pickle
import struct
import sys
import time

import llvmlite.binding as llvm


@functools.cache
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    # O3 unrolls loops up to 300 instructions (O2: 150), boosted up to 4x where it expects
    # folding: nested loops with constant trip counts (an NHWC elementwise kernel: 14 x 704
    # floats) were fully unrolled into ~70 KB of code taking 0.5 s each to optimise and emit.
    # O2's threshold: DenseNet121 (Keras, 191 kernels) 54 -> 23 s of LLVM CPU time, run time
    # unchanged within noise on DenseNet121, ResNet-50, MobileNetV2, EfficientNet-B0, BERT.
    # A process-wide LLVM option (set once per process; it changes only O3 unrolling).
    llvm.set_option("", "-unroll-threshold-aggressive=150")


@functools.cache
def target_machine(triple: str, cpu: str, features: str, opt: int):
    _init()
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(
        cpu=cpu, features=features, opt=opt, reloc="pic", codemodel="default"
    )


class IRError(Exception):
    """The IR text does not parse or verify."""


def compile_text(
    text: str, triple: str, cpu: str, features: str, level: int
) -> tuple[bytes, float, float]:
    """Parse, verify, optimise at `level` (0: none; 1, 2, 3: the new pass manager's O1..O3,
    vectorisers from 2 up) and emit; returns (object, optimise and emit CPU seconds of this
    thread: LLVM runs in it).
    Each module gets its own LLVM context, so nothing accumulates in the global one."""
    _init()
    tm = target_machine(triple, cpu, features, 3 if level >= 2 else 0)
    ctx = llvm.create_context()
    try:
        mod = llvm.parse_assembly(text, context=ctx)
        mod.verify()
    except RuntimeError as e:
        raise IRError(str(e)) from None
    mod.triple = triple
    mod.data_layout = str(tm.target_data)
    t0 = time.thread_time()
    if level >= 1:
        pto = llvm.create_pipeline_tuning_options(speed_level=min(level, 3))
        pto.loop_vectorization = level >= 2
        pto.slp_vectorization = level >= 2
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    t1 = time.thread_time()
    obj = tm.emit_object(mod)
    t2 = time.thread_time()
    del mod
    return obj, t1 - t0, t2 - t1


def _read(f, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def recv(f):
    (n,) = struct.unpack("<I", _read(f, 4))
    return pickle.loads(_read(f, n))


def send(f, msg) -> None:
    data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<I", len(data)) + data)
    f.flush()


def main() -> None:
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    _init()
    while True:
        try:
            req = recv(inp)
        except EOFError:
            return
        try:
            obj, t_opt, t_emit = compile_text(*req)
            send(out, ("ok", obj, t_opt, t_emit))
        except Exception as e:  # reported to the parent, which raises BuildError
            send(out, ("err", f"{type(e).__name__}: {e}"))


if __name__ == "__main__":
    main()
