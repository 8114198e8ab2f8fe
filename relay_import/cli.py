"""The `relay` command. Subcommands call the relay_import API and hold no logic of their own.

relay inspect MODEL                       inputs/outputs, op histogram, unsupported ops
relay convert MODEL -o out.relay          the typed Relay program as text
relay compile MODEL -o ARTIFACT           a deployable artifact (shared library + weights)
relay run MODEL|ARTIFACT --inputs in.npz -o out.npz
relay verify MODEL [--rtol --atol --html report.html]   exit 0 only on parity
relay bench MODEL                         ours vs the source runtime, interleaved
relay serve [--port 8000]                 an HTTP service over the same functions
relay demo                                the main job end to end on a bundled example
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _shapes(values) -> dict | None:
    if not values:
        return None
    out = {}
    for v in values:
        name, _, dims = v.rpartition("=")
        if not name or not dims:
            raise SystemExit(f"relay: --input-shape wants name=d0,d1,..., got {v!r}")
        try:
            out[name] = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            raise SystemExit(f"relay: --input-shape {v!r}: dimensions must be integers") from None
    return out


def _convert_kw(args) -> dict:
    kw = {}
    shapes = _shapes(getattr(args, "input_shape", None))
    if shapes:
        kw["shapes"] = shapes
    return kw


def _progress(args, what: str):
    from .progress import progress

    return progress(what, quiet=args.quiet)


def _load(args, model=None):
    from . import api

    with _progress(args, f"converting {Path(model or args.model).name}"):
        return api.load(model or args.model, **_convert_kw(args))


def _pass_context(args):
    if not getattr(args, "dump_ir", False):
        return None
    from relay_core.passes import PassContext

    def dump(name, mod):
        print(f"// ---- after {name} ----", file=sys.stderr)
        print(mod.astext(show_meta_data=False), file=sys.stderr)

    return PassContext(opt_level=args.opt_level, dump_ir=dump)


def _compile(args, mod):
    from . import api

    kw = {}
    ctx = _pass_context(args)
    if ctx is not None:
        kw["pass_context"] = ctx
    with _progress(args, "compiling"):
        return api.compile(mod, opt_level=args.opt_level, **kw)


# -- subcommands --------------------------------------------------------------------------------


def cmd_inspect(args) -> int:
    from .inspect import inspect_model

    report = inspect_model(args.model, **_convert_kw(args))
    print(report.summary())
    return 0 if report.ok else 1


def cmd_convert(args) -> int:
    mod = _load(args)
    text = mod.astext(show_meta_data=not args.no_meta)
    if args.output in (None, "-"):
        sys.stdout.write(text + "\n")
    else:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        if not args.quiet:
            print(f"wrote {args.output}")
    return 0


def cmd_compile(args) -> int:
    mod = _load(args)
    lib = _compile(args, mod)
    path = lib.export(args.output)
    if not args.quiet:
        print(f"wrote {path}")
    return 0


def cmd_run(args) -> int:
    import numpy as np

    from . import api
    from .io import read_inputs, write_outputs

    src = Path(args.model)
    if api.detect_framework(str(src)) == "compiled":
        lib = api.load_compiled(src)
    else:
        lib = _compile(args, _load(args))
    feed = read_inputs(args.input, args.inputs, lib.input_names)
    outs = lib(**feed)
    if args.output:
        write_outputs(args.output, lib.output_names, outs)
        if not args.quiet:
            print(f"wrote {args.output}")
    else:
        for name, v in zip(lib.output_names, outs):
            print(f"{name}: {v.dtype}{list(v.shape)}")
            print(np.array2string(np.asarray(v), threshold=50, precision=5))
    return 0


def cmd_verify(args) -> int:
    from .io import read_inputs
    from .verifier import verify

    inputs = read_inputs(args.input, args.inputs, None) if (args.input or args.inputs) else None
    with _progress(args, "verifying"):
        report = verify(
            args.model,
            inputs=inputs,
            rtol=args.rtol,
            atol=args.atol,
            seed=args.seed,
            shapes=_shapes(args.input_shape),
            html=args.html,
            opt_level=args.opt_level,
        )
    if not args.quiet or not report.ok:
        print(report.summary())
    return 0 if report.ok else 1


def cmd_bench(args) -> int:
    from .bench import bench

    with _progress(args, "benchmarking"):
        r = bench(
            args.model,
            runs=args.runs,
            threads=args.threads,
            shapes=_shapes(args.input_shape),
            opt_level=args.opt_level,
        )
    print(r.summary())
    return 0


def cmd_serve(args) -> int:
    from .service import serve

    models = {}
    for m in args.model or []:
        name, _, path = m.partition("=")
        if not path:
            name, path = Path(m).stem, m
        models[name] = path
    serve(host=args.host, port=args.port, models=models, quiet=args.quiet)
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(quiet=args.quiet)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="relay",
        description="Convert ONNX / PyTorch / TensorFlow models to Relay, verify and deploy them.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--input-shape",
        action="append",
        metavar="NAME=D0,D1,...",
        help="fix an input's shape (repeatable)",
    )
    common.add_argument("--opt-level", type=int, default=3, help="optimisation level (0-3)")
    common.add_argument("--dump-ir", action="store_true", help="print the IR after each pass")
    common.add_argument("--quiet", "-q", action="store_true", help="print only results")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser(
        "inspect", parents=[common], help="inputs, outputs, op histogram, unsupported ops"
    )
    s.add_argument("model")
    s.set_defaults(func=cmd_inspect)

    s = sub.add_parser("convert", parents=[common], help="write the typed Relay program")
    s.add_argument("model")
    s.add_argument("-o", "--output", help="output .relay file (default: stdout)")
    s.add_argument("--no-meta", action="store_true", help="omit constant data (not re-parsable)")
    s.set_defaults(func=cmd_convert)

    s = sub.add_parser("compile", parents=[common], help="compile to a deployable artifact")
    s.add_argument("model")
    s.add_argument("-o", "--output", required=True, help="artifact directory")
    s.set_defaults(func=cmd_compile)

    s = sub.add_parser("run", parents=[common], help="run a model or an artifact on inputs")
    s.add_argument("model", help="a model file or a compiled artifact")
    s.add_argument(
        "--input", action="append", metavar="NAME=FILE.npy", help="one input (repeatable)"
    )
    s.add_argument("--inputs", metavar="IN.npz", help="all inputs by name")
    s.add_argument("-o", "--output", metavar="OUT.npz", help="write outputs here")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("verify", parents=[common], help="check parity with the source framework")
    s.add_argument("model")
    s.add_argument("--rtol", type=float, default=1e-4)
    s.add_argument("--atol", type=float, default=1e-5)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--html", metavar="REPORT.html", help="write an HTML report")
    s.add_argument("--input", action="append", metavar="NAME=FILE.npy")
    s.add_argument("--inputs", metavar="IN.npz")
    s.set_defaults(func=cmd_verify)

    s = sub.add_parser("bench", parents=[common], help="latency vs the source runtime")
    s.add_argument("model")
    s.add_argument("--runs", type=int, default=50)
    s.add_argument("--threads", type=int, default=2)
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("serve", parents=[common], help="HTTP service: convert / verify / run")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--model", action="append", metavar="NAME=PATH", help="preload a model to run")
    s.set_defaults(func=cmd_serve)

    s = sub.add_parser("demo", parents=[common], help="the main job end to end on a bundled model")
    s.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # user-facing: one clear message, no traceback
        from relay_core.errors import RelayError

        if isinstance(e, (RelayError, FileNotFoundError, PermissionError)):
            print(f"relay {args.command}: error: {e}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
