"""Micro-benchmarks of the LLVM kernels against numpy (OpenBLAS), torch and onnxruntime.

    python benchmarks/kernels.py [--threads 2] [--rounds 5] [--reps 10] [--only conv] [--md FILE]
    python benchmarks/kernels.py --only mbv2        # MobileNetV2's convolutions, batch 1 and 8
    python benchmarks/kernels.py --only "mbv2 1x"   # (a further substring selects within them)

Each case runs every implementation in interleaved rounds (untimed calls for >= 50 ms first in
each round, so that the previous runtime's spinning threads have gone to sleep); the figure is
the median over all timed calls. numpy's OpenBLAS and torch get the same thread count. Our
kernels are called through ctypes with prepacked constant weights, as the compiled model calls
them (ctypes adds ~1 us per call).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from relay_core.backend.kernels.gemv import small_m  # noqa: E402
from relay_core.ops import lookup  # noqa: E402
from tools.kernel_jit import KernelModule, tt  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Cases: (name, op, input arrays, constant input indices, attrs, out shape, flops, torch fn,
#         onnx node builder).


def _gemm(m, n, k):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k), np.float32)
    w = rng.standard_normal((n, k), np.float32)
    wt = np.ascontiguousarray(w.T)
    return dict(
        name=f"dense {m}x{n}x{k}",
        group="gemv" if m <= small_m() else "gemm",  # kernels/gemv.py's rows
        op="nn.dense",
        inputs=[x, w],
        const=(1,),
        attrs=None,
        out=(m, n),
        flops=2.0 * m * n * k,
        numpy=lambda out: np.matmul(x, wt, out=out),
        torch=(lambda t, xt, wt_: t.matmul(xt, wt_), [x, wt]),
        onnx=("Gemm", dict(transB=1), [x], [w]),
    )


def _bmm(b, m, n, k, group=None):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((b, m, k), np.float32)
    c = rng.standard_normal((b, n, k), np.float32)
    ct = np.ascontiguousarray(np.swapaxes(c, 1, 2))
    return dict(
        name=f"batch_matmul {b}x{m}x{n}x{k}",
        group=group or ("gemv" if m <= small_m() else "gemm"),
        op="nn.batch_matmul",
        inputs=[a, c],
        const=(),
        attrs=None,
        out=(b, m, n),
        flops=2.0 * b * m * n * k,
        numpy=lambda out: np.matmul(a, np.swapaxes(c, 1, 2), out=out),
        torch=(lambda t, at, ct_: t.matmul(at, ct_.transpose(1, 2)), [a, c]),
        onnx=("MatMul", {}, [a, ct], []),
    )


def _bmm_nn(b, m, n, k, group="gemm"):
    """A batched product with B not transposed (attention probabilities @ values)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((b, m, k), np.float32)
    c = rng.standard_normal((b, k, n), np.float32)
    return dict(
        name=f"matmul {b}x{m}x{n}x{k}",
        group=group,
        op="nn.batch_matmul",
        inputs=[a, c],
        const=(),
        attrs=dict(transpose_b=False),
        out=(b, m, n),
        flops=2.0 * b * m * n * k,
        numpy=lambda out: np.matmul(a, c, out=out),
        torch=(lambda t, at, ct_: t.matmul(at, ct_), [a, c]),
        onnx=("MatMul", {}, [a, c], []),
    )


def transformer_cases():
    """ViT-S/16 and GPT-2 small at batch 8 (group "tfm"): attention products (scores, then
    probabilities @ values) and the dense layers (QKV, projection, MLP)."""
    c = [_bmm(48, 197, 197, 64, "tfm"), _bmm_nn(48, 197, 64, 197, "tfm")]
    c += [_bmm(96, 128, 128, 64, "tfm"), _bmm_nn(96, 128, 64, 128, "tfm")]
    for m, dims in ((1576, (1152, 384, 1536)), (1024, (2304, 768, 3072))):
        qkv, h, f = dims
        for n, k in ((qkv, h), (h, h), (f, h), (h, f)):
            c.append(dict(_gemm(m, n, k), group="tfm"))
    return c


def _conv(n, c, h, o, k, s, p, g=1, w_=None, group="conv"):
    rng = np.random.default_rng(0)
    w_ = w_ or h
    x = rng.standard_normal((n, c, h, w_), np.float32)
    w = rng.standard_normal((o, c // g, k, k), np.float32) * 0.1
    oh, ow = (h + 2 * p - k) // s + 1, (w_ + 2 * p - k) // s + 1
    kind = "depthwise" if g > 1 and g == c else "conv"
    return dict(
        name=f"{kind} {n}x{c}x{h}x{w_} -> {o} k{k} s{s}",
        group=group,
        op="nn.conv2d",
        inputs=[x, w],
        const=(1,),
        attrs=dict(strides=(s, s), padding=(p, p), groups=g),
        out=(n, o, oh, ow),
        flops=2.0 * n * o * oh * ow * (c // g) * k * k,
        numpy=None,
        torch=(
            lambda t, xt, wt: t.nn.functional.conv2d(xt, wt, stride=s, padding=p, groups=g),
            [x, w],
        ),
        onnx=("Conv", dict(strides=[s, s], pads=[p] * 4, group=g), [x], [w]),
    )


def _maxpool(n, c, h, k, s, p):
    x = np.random.default_rng(0).standard_normal((n, c, h, h), np.float32)
    oh = (h + 2 * p - k) // s + 1
    return dict(
        name=f"max_pool {n}x{c}x{h}x{h} k{k} s{s}",
        group="pool",
        op="nn.max_pool2d",
        inputs=[x],
        const=(),
        attrs=dict(pool_size=(k, k), strides=(s, s), padding=(p, p)),
        out=(n, c, oh, oh),
        flops=float(n * c * oh * oh * k * k),
        numpy=None,
        torch=(lambda t, xt: t.nn.functional.max_pool2d(xt, k, s, p), [x]),
        onnx=("MaxPool", dict(kernel_shape=[k, k], strides=[s, s], pads=[p] * 4), [x], []),
    )


def _gap(n, c, h):
    x = np.random.default_rng(0).standard_normal((n, c, h, h), np.float32)
    return dict(
        name=f"global_avg_pool {n}x{c}x{h}x{h}",
        group="pool",
        op="nn.global_avg_pool2d",
        inputs=[x],
        const=(),
        attrs=None,
        out=(n, c, 1, 1),
        flops=float(x.size),
        numpy=None,
        torch=(lambda t, xt: t.nn.functional.adaptive_avg_pool2d(xt, 1), [x]),
        onnx=("GlobalAveragePool", {}, [x], []),
    )


def _softmax(shape):
    x = np.random.default_rng(0).standard_normal(shape, np.float32)
    return dict(
        name=f"softmax {'x'.join(map(str, shape))}",
        group="softmax",
        op="nn.softmax",
        inputs=[x],
        const=(),
        attrs={"axis": -1},
        out=shape,
        flops=5.0 * x.size,
        numpy=None,
        torch=(lambda t, xt: t.softmax(xt, -1), [x]),
        onnx=("Softmax", {"axis": -1}, [x], []),
    )


def cases():
    return [
        _gemm(1024, 1024, 1024),
        _gemm(256, 256, 256),
        _gemm(1, 4096, 1024),
        _gemm(1, 1024, 256),  # an LSTM cell at batch 1 (hidden 256)
        _gemm(4, 1024, 256),
        _gemm(512, 1024, 256),  # an LSTM's input projection, 64 steps at batch 8 (gemv row blocks)
        _gemm(128, 768, 768),
        _gemm(128, 3072, 768),
        _bmm(12, 128, 128, 64),
        _bmm(12, 1, 128, 64),  # one query against 128 keys
        _conv(1, 64, 56, 64, 3, 1, 1),
        _conv(1, 128, 28, 128, 3, 1, 1),
        _conv(1, 256, 14, 256, 3, 1, 1),
        _conv(1, 512, 7, 512, 3, 1, 1),
        _conv(1, 64, 56, 256, 1, 1, 0),
        _conv(1, 256, 56, 64, 1, 1, 0),
        _conv(1, 3, 224, 64, 7, 2, 3),
        _conv(1, 128, 56, 128, 3, 2, 1),
        _conv(1, 32, 112, 32, 3, 1, 1, g=32),
        _conv(1, 144, 56, 144, 3, 2, 1, g=144),
        _maxpool(1, 64, 112, 3, 2, 1),
        _gap(1, 2048, 7),
        _softmax((12, 128, 128)),
    ]


def mobilenet_v2_cases(n=1):
    """MobileNetV2's distinct convolutions (group "mbv2"): stem, depthwise 3x3, pointwise 1x1."""
    c = [_conv(n, 3, 224, 32, 3, 2, 1, group="mbv2")]
    for ch, h, s in [
        (32, 112, 1),
        (96, 112, 2),
        (144, 56, 1),
        (144, 56, 2),
        (192, 28, 1),
        (192, 28, 2),
        (384, 14, 1),
        (576, 14, 1),
        (576, 14, 2),
        (960, 7, 1),
    ]:
        c.append(_conv(n, ch, h, ch, 3, s, 1, g=ch, group="mbv2"))
    for ci, co, h in [
        (32, 16, 112),
        (16, 96, 112),
        (96, 24, 56),
        (24, 144, 56),
        (144, 24, 56),
        (144, 32, 28),
        (32, 192, 28),
        (192, 32, 28),
        (192, 64, 14),
        (64, 384, 14),
        (384, 64, 14),
        (384, 96, 14),
        (96, 576, 14),
        (576, 96, 14),
        (576, 160, 7),
        (160, 960, 7),
        (960, 160, 7),
        (960, 320, 7),
        (320, 1280, 7),
    ]:
        c.append(_conv(n, ci, h, co, 1, 1, 0, group="mbv2"))
    return c


# ---------------------------------------------------------------------------------------------


def _onnx_session(spec, threads):
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    op, attrs, feeds, inits = spec["onnx"]
    names = [f"x{i}" for i in range(len(feeds))]
    inames = [f"w{i}" for i in range(len(inits))]
    inputs = [
        helper.make_tensor_value_info(nm, TensorProto.FLOAT, a.shape) for nm, a in zip(names, feeds)
    ]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node(op, names + inames, ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "bench",
        inputs,
        [out],
        [numpy_helper.from_array(a, nm) for nm, a in zip(inames, inits)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    # as in benchmarks/run.py: its spinning workers would steal the cores ours run on next
    # (measured: our 0.36 ms convolution took 0.43-0.82 ms after onnxruntime's runs)
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    feed = dict(zip(names, feeds))
    return lambda: sess.run(None, feed)


def _aligned(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `a` starting on a 64-byte boundary."""
    raw = np.empty(a.nbytes + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    out = raw[off : off + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def _openblas_threads(n: int) -> None:
    """Set the thread count of the OpenBLAS numpy bundles (its symbol, found by name)."""
    import ctypes
    import glob

    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in glob.glob(os.path.join(libs, "libscipy_openblas*.so*")):
        lib = ctypes.CDLL(path)
        for sym in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_"):
            if hasattr(lib, sym):
                getattr(lib, sym)(ctypes.c_int(n))
                return


def _time(fn, reps, warm=2, warm_s=0.05):
    """Per-call times; the warm-up runs >= warm calls and >= warm_s seconds, so that threads
    another runtime left spinning have gone to sleep (onnxruntime spins for ~20 ms)."""
    t0 = time.perf_counter()
    k = 0
    while k < warm or time.perf_counter() - t0 < warm_s:
        fn()
        k += 1
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def run(threads=2, rounds=5, reps=10, only=None, check=True):
    import torch

    torch.set_num_threads(threads)
    _openblas_threads(threads)
    pool = cases()
    if only and only.startswith("mbv2"):  # "mbv2" (batch 1 and 8), "mbv2 1x", "mbv2 8x"
        pool = mobilenet_v2_cases(1) + mobilenet_v2_cases(8)
        only = only[4:].strip()
    elif only and only.startswith("tfm"):  # "tfm", "tfm batch_matmul", "tfm dense", ...
        pool = transformer_cases()
        only = only[3:].strip()
    sel = [c for c in pool if not only or only in c["group"] or only in c["name"]]
    km = KernelModule()
    built = []
    for c in sel:
        in_types = [tt(a.shape) for a in c["inputs"]]
        k = km.add(lookup(c["op"]).kernel, in_types, [tt(c["out"])], c["attrs"], None, c["const"])
        built.append(k)
    t0 = time.perf_counter()
    km.compile()
    compile_s = time.perf_counter() - t0
    rows = []
    for c, k in zip(sel, built):
        # 64-byte aligned, as a compiled model's constants and workspace are: a prepacked
        # weight panel 16 bytes off a cache line cost the GEMM engine a quarter of its
        # throughput on AVX-512 (every zmm load split), which no model sees
        ins = [_aligned(k.prepare(i, a)) for i, a in enumerate(c["inputs"])]
        out = _aligned(np.empty(c["out"], np.float32))
        ptrs = [a.ctypes.data for a in ins] + [out.ctypes.data]
        fn = k.fn

        def ours(fn=fn, ptrs=ptrs):
            fn(*ptrs, threads)

        impls = {"ours": ours}
        if c["numpy"] is not None:
            nout = np.empty(c["out"], np.float32)
            impls["numpy"] = lambda f=c["numpy"], o=nout: f(o)
        tfn, tarrays = c["torch"]
        tins = [torch.from_numpy(a) for a in tarrays]
        impls["torch"] = lambda tfn=tfn, tins=tins: tfn(torch, *tins)
        sess = _onnx_session(c, threads)
        if sess is not None:
            impls["onnxruntime"] = sess
        if check:
            ours()
            with torch.no_grad():
                want = impls["torch"]().numpy()
            err = float(np.abs(out - want).max() / max(1.0, np.abs(want).max()))
            assert err < 1e-3, (c["name"], err)
        times = {name: [] for name in impls}
        with torch.no_grad():
            for _ in range(rounds):
                for name, f in impls.items():
                    times[name] += _time(f, reps)
        med = {name: statistics.median(v) * 1e3 for name, v in times.items()}
        rows.append((c, med))
        line = "  ".join(f"{n} {m:.3f} ms ({c['flops'] / m / 1e6:.1f} GF)" for n, m in med.items())
        print(f"{c['name']:<40} {line}", flush=True)
    return rows, compile_s


def markdown(rows, threads, compile_s) -> str:
    names = ["ours", "numpy", "torch", "onnxruntime"]
    lines = [
        f"Kernels vs references, {threads} threads, median ms (GFLOP/s for GEMM/conv); "
        f"compile of all kernels in one module: {compile_s:.2f} s",
        "",
        "| case | " + " | ".join(names) + " | ours / best other |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    for c, med in rows:
        cells = []
        for n in names:
            if n not in med:
                cells.append("")
                continue
            gf = (
                f" ({c['flops'] / med[n] / 1e6:.0f})"
                if c["group"] in ("gemm", "conv", "tfm")
                else ""
            )
            cells.append(f"{med[n]:.3f}{gf}")
        best = min(v for k, v in med.items() if k != "ours")
        lines.append(f"| {c['name']} | " + " | ".join(cells) + f" | {med['ours'] / best:.2f} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--only", default=None, help="substring of a case group or name")
    ap.add_argument("--md", default=None, help="write a markdown table to this file")
    a = ap.parse_args(argv)
    rows, compile_s = run(a.threads, a.rounds, a.reps, a.only)
    md = markdown(rows, a.threads, compile_s)
    print()
    print(md)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md + "\n")


if __name__ == "__main__":
    main()
