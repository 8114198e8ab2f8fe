"""`relay demo`: the main job end to end on the bundled examples (relay_import.examples_dir()).

1. the language: parse a Relay program with a recursive loop, typecheck, print, evaluate;
2. convert examples/demo_cnn.onnx and print its op summary;
3. compile it to native code;
4. verify parity against onnxruntime (HTML report written);
5. export the deployable artifact, load it back (numpy only), check it gives the same outputs;
6. benchmark against onnxruntime, interleaved in one process.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np


def run_demo(quiet: bool = False, out_dir: str | Path = "build/demo") -> int:
    # Step 6 benchmarks as relay bench does by default (relay_import/bench.py): the source
    # runtime's workers wait passively (libgomp, torch's, reads OMP_WAIT_POLICY once, when it
    # loads), ours keep the pool's default.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    say = (lambda *a: None) if quiet else print
    ok = _language(say)
    ok &= _model(say, Path(out_dir))
    say("\n== demo " + ("succeeded" if ok else "FAILED"))
    return 0 if ok else 1


def _language(say) -> bool:
    import relay_core
    from relay_import import examples_dir

    path = examples_dir() / "mlp_loop.relay"
    mod = relay_core.parse(path.read_text(), source_name=str(path))
    say(f"== 1. the language: {path.name} parsed and typechecked\n")
    say(mod)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4)).astype("float32")
    w1 = rng.standard_normal((8, 4)).astype("float32")
    w2 = rng.standard_normal((4, 8)).astype("float32")
    y, steps = relay_core.evaluate(mod, x, w1, w2)
    expect = x
    for _ in range(int(steps)):
        expect = np.tanh(np.maximum(expect @ w1.T, 0) @ w2.T)
    ok = bool(np.allclose(y, expect, rtol=1e-5, atol=1e-6))
    say(
        f"evaluated {int(steps)} loop steps: {np.array2string(y, precision=4)}; matches numpy: {ok}"
    )
    return ok


def _model(say, out: Path) -> bool:
    import relay_import
    import relay_import as ri
    from relay_import.bench import bench
    from relay_import.inspect import inspect_model

    model = relay_import.examples_dir() / "demo_cnn.onnx"
    out.mkdir(parents=True, exist_ok=True)
    say(f"\n== 2. convert {model.name}")
    t0 = time.perf_counter()
    rep = inspect_model(str(model))
    say(rep.summary())
    say(f"(converted in {time.perf_counter() - t0:.2f} s)")

    say("\n== 3. compile")
    mod = ri.load(str(model))
    t0 = time.perf_counter()
    lib = ri.compile(mod)
    say(
        f"compiled in {time.perf_counter() - t0:.2f} s: inputs {lib.input_names}, "
        f"outputs {lib.output_names}"
    )

    say("\n== 4. verify against onnxruntime")
    html = out / "verify_report.html"
    report = ri.verify(str(model), html=str(html))
    say(report.summary())

    say("\n== 5. export and reload the artifact")
    art = out / "demo_cnn.relaylib"
    lib.export(str(art))
    lib2 = ri.load_compiled(str(art))
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype("float32")
    feed = {lib2.get_inputs()[0].name: x}  # onnxruntime's way of calling works too
    same = all(np.array_equal(a, b) for a, b in zip(lib(x), lib2.run(None, feed)))
    size = sum(f.stat().st_size for f in Path(art).rglob("*") if f.is_file())
    say(f"wrote {art} ({size:,} bytes); reloaded artifact gives identical outputs: {same}")

    say("\n== 6. benchmark against onnxruntime (2 threads each, interleaved)")
    b = bench(str(model), runs=100)
    say(b.summary())
    say(f"\nHTML parity report: {html.resolve()}")
    return bool(report.ok and same)
