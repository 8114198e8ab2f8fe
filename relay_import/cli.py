"""The `relay` command. Subcommands call the relay_import API and hold no logic of their own.

relay inspect MODEL                       inputs/outputs, op histogram, unsupported ops
relay convert MODEL -o out.relay          the typed Relay program as text
relay compile MODEL -o ARTIFACT           a deployable artifact (shared library + weights)
relay run MODEL|ARTIFACT --inputs in.npz -o out.npz    (or --fill random --print-time)
relay verify MODEL [--rtol --atol --per-layer --html report.html]   exit 0 only on parity
relay bench MODEL                         ours vs the source runtime, interleaved
relay serve [--port 8000] [--ray]         the HTTP service over the same functions
relay convert-batch MANIFEST [--ray]      convert, verify and compile many models into a store
relay demo                                the main job end to end on a bundled example

Each subcommand takes only the flags that apply to it (argparse refuses the others). Progress
goes to stderr, one line per stage (`--quiet` silences it); results go to stdout. Every error
is one line, `relay CMD: error: what (hint)`, and exit status 1 (2 for usage errors); a closed
pipe (`relay inspect m.onnx | head -1`) ends quietly. RELAY_DEBUG=1 shows tracebacks.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# -- argument types -----------------------------------------------------------------------------


def _opt_level(v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        n = -1
    if not 0 <= n <= 3:
        raise argparse.ArgumentTypeError(f"must be 0, 1, 2 or 3, got {v!r}")
    return n


def _seconds(v: str) -> float:
    try:
        t = float(v)
    except ValueError:
        t = 0.0
    if not t > 0 or t == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {v!r}")
    return t


def _positive(v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {v!r}")
    return n


def _shape(v: str) -> tuple[str, tuple[int, ...]]:
    name, _, dims = v.rpartition("=")
    if not name or not dims:
        raise argparse.ArgumentTypeError(f"wants NAME=D0,D1,..., got {v!r}")
    try:
        return name, tuple(int(d) for d in dims.split(",") if d.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{v!r}: dimensions must be integers") from None


def _tolerance(v: str) -> tuple[str, float]:
    """`1e-4` (every output) or `NAME=1e-3` (one output)."""
    name, _, num = v.rpartition("=")
    try:
        val = float(num)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants VALUE or NAME=VALUE, got {v!r}") from None
    if val < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {v!r}")
    return name or "*", val


class _VersionAction(argparse.Action):
    """`relay --version`: ours and the libraries', on one unwrapped line."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version())
        parser.exit()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, with where to look
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# -- shared helpers -----------------------------------------------------------------------------


def _shapes(args) -> dict | None:
    pairs = getattr(args, "input_shape", None)
    return dict(pairs) if pairs else None


def _convert_kw(args) -> dict:
    shapes = _shapes(args)
    return {"shapes": shapes} if shapes else {}


def _load(args):
    from . import api

    return api.load(args.model, **_convert_kw(args))


def _dump(name: str, mod) -> None:
    print(f"// ---- after {name} ----", file=sys.stderr)
    print(str(mod), file=sys.stderr)  # large constants elided


def _pass_context(args):
    if not getattr(args, "dump_ir", False):
        return None
    from relay_core.passes import PassContext

    return PassContext(opt_level=args.opt_level, dump_ir=_dump)


def _compile(args, mod):
    from . import api

    ctx = _pass_context(args)
    return api.compile(mod, opt_level=args.opt_level, **({"pass_context": ctx} if ctx else {}))


def _say(args, text: str) -> None:
    if not args.quiet:
        print(text)


# -- subcommands --------------------------------------------------------------------------------


def cmd_inspect(args) -> int:
    from .inspect import inspect_model

    report = inspect_model(args.model, **_convert_kw(args))
    if args.dump_ir and report.module is not None:
        _dump("conversion", report.module)
    print(report.summary())
    return 0 if report.ok else 1


def cmd_convert(args) -> int:
    mod = _load(args)
    if args.dump_ir:
        _dump("conversion", mod)
    if args.opt_level is not None:
        from relay_core.passes import PassContext, optimize

        ctx = PassContext(opt_level=args.opt_level, dump_ir=_dump if args.dump_ir else None)
        mod = optimize(mod, args.opt_level, ctx)
    text = mod.astext(show_meta_data=not args.no_meta)
    if args.output in (None, "-"):
        sys.stdout.write(text + "\n")
    else:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        _say(args, f"wrote {args.output}")
    return 0


def cmd_compile(args) -> int:
    import time

    t0 = time.perf_counter()
    mod = _load(args)
    t1 = time.perf_counter()
    lib = _compile(args, mod)
    t2 = time.perf_counter()
    path = lib.export(args.output)
    _say(args, f"wrote {path}")
    if args.timings:
        report = lib.timings
        report.stages.insert(0, ("convert", t1 - t0, ""))
        report.add("export", time.perf_counter() - t2)
        report.total = time.perf_counter() - t0
        print(report.table())
    return 0


def _refuse_for_artifact(args) -> None:
    given = [
        flag
        for flag, on in (
            ("--opt-level", args.opt_level_given),
            ("--dump-ir", args.dump_ir),
            ("--input-shape", bool(args.input_shape)),
        )
        if on
    ]
    if given:
        from relay_core.errors import InputError

        raise InputError(
            f"{' and '.join(given)} apply when MODEL is compiled here, but {args.model} is "
            "already compiled; recompile it with relay compile"
        )


def cmd_run(args) -> int:
    import time

    import numpy as np

    from . import api
    from .io import fill_inputs, read_inputs, write_outputs

    if api.detect_framework(args.model) == "compiled":
        _refuse_for_artifact(args)
        lib = api.load_compiled(args.model)
    else:
        lib = _compile(args, _load(args))
    feed = read_inputs(args.input, args.inputs, lib.input_names)
    if args.fill:
        for name, shape in fill_inputs(lib, feed, args.fill, args.seed).items():
            if not args.quiet:
                print(f"filled {name}: {args.fill} {list(shape)}", file=sys.stderr)
    lib.max_iterations, lib.timeout = args.max_iterations, args.timeout
    t0 = time.perf_counter()
    outs = lib(**feed)
    first = time.perf_counter() - t0
    times = []
    for _ in range(args.repeat if args.print_time else 0):
        t0 = time.perf_counter()
        lib(**feed)
        times.append(time.perf_counter() - t0)
    if args.output:
        write_outputs(args.output, lib.output_names, outs)
        _say(args, f"wrote {args.output}")
    else:
        for name, v in zip(lib.output_names, outs):
            v = np.asarray(v)
            print(f"{name}: {v.dtype}{list(v.shape)}")
            print(np.array2string(v, threshold=50, precision=5))
    if args.print_time:
        print(f"first call: {first * 1e3:.3f} ms")
        if times:
            t = np.asarray(times) * 1e3
            print(
                f"then {len(t)} runs (ms): mean {t.mean():.3f}  median {np.median(t):.3f}  ", end=""
            )
            print(f"min {t.min():.3f}  max {t.max():.3f}  std {t.std():.3f}")
    return 0


def cmd_verify(args) -> int:
    from .io import read_inputs
    from .verifier import verify

    inputs = read_inputs(args.input, args.inputs, None) if (args.input or args.inputs) else None
    report = verify(
        args.model,
        inputs=inputs,
        rtol=dict(args.rtol) if args.rtol else 1e-4,
        atol=dict(args.atol) if args.atol else 1e-5,
        seed=args.seed,
        shapes=_shapes(args),
        html=args.html,
        opt_level=args.opt_level,
        per_layer=args.per_layer,
        save_results=args.save_results,
        load_results=args.load_results,
        pass_context=_pass_context(args),
        max_iterations=args.max_iterations,
        timeout=args.timeout,
    )
    if not args.quiet or not report.ok:
        print(report.summary())
    if args.save_results and not args.quiet:
        print(f"saved the reference results to {args.save_results}")
    return 0 if report.ok else 1


def cmd_bench(args) -> int:
    from .bench import bench

    r = bench(
        args.model,
        runs=args.runs,
        threads=args.threads,
        shapes=_shapes(args),
        opt_level=args.opt_level,
        warmup=args.warmup,
        pass_context=_pass_context(args),
        spin=args.spin,
        max_iterations=args.max_iterations,
        timeout=args.timeout,
        profile=args.profile,
    )
    print(r.summary())
    return 0


def cmd_serve(args) -> int:
    from .service.cli import serve_main

    return serve_main(args)


def cmd_convert_batch(args) -> int:
    from .service.cli import convert_batch_main

    return convert_batch_main(args)


def cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(quiet=args.quiet, out_dir=args.output_dir)


# -- the parser ---------------------------------------------------------------------------------


def _version() -> str:
    import platform
    from importlib import metadata

    from . import __version__

    deps = []
    for pkg in ("numpy", "llvmlite", "onnx", "onnxruntime", "torch", "tensorflow-cpu"):
        try:
            deps.append(f"{pkg.removesuffix('-cpu')} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            pass
    return f"relay {__version__} (Python {platform.python_version()}; {', '.join(deps)})"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="relay",
        description="Convert ONNX / PyTorch / TensorFlow models to Relay, verify and deploy them.",
    )
    p.add_argument("--version", action=_VersionAction, help="show versions and exit")
    quiet = _Parser(add_help=False)
    quiet.add_argument("--quiet", "-q", action="store_true", help="print results only")
    shape = _Parser(add_help=False)
    shape.add_argument(
        "--input-shape",
        action="append",
        type=_shape,
        metavar="NAME=D0,D1,...",
        help="fix an input's shape (repeatable)",
    )
    dump = _Parser(add_help=False)
    dump.add_argument(
        "--dump-ir", action="store_true", help="print the IR after conversion and each pass"
    )
    build = _Parser(add_help=False)
    build.add_argument(
        "--opt-level", type=_opt_level, default=3, metavar="{0-3}", help="optimisation level"
    )
    limits = _Parser(add_help=False)
    limits.add_argument(
        "--max-iterations",
        type=_positive,
        metavar="N",
        help="stop a model whose loops run more than N iterations (per call)",
    )
    limits.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="stop a model call (ours or the source runtime's) running longer than this",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    p.commands = sub.choices  # the subcommands' parsers, for their own error messages

    def add(name, parents, help_):
        return sub.add_parser(name, parents=parents, help=help_, description=help_)

    s = add("inspect", [shape, dump, quiet], "inputs, outputs, op histogram, unsupported ops")
    s.add_argument("model")
    s.set_defaults(func=cmd_inspect)

    s = add("convert", [shape, dump, quiet], "write the typed Relay program")
    s.add_argument("model")
    s.add_argument("-o", "--output", help="output .relay file (default: stdout)")
    s.add_argument("--no-meta", action="store_true", help="omit constant data (not re-parsable)")
    s.add_argument(
        "--opt-level",
        type=_opt_level,
        default=None,
        metavar="{0-3}",
        help="optimise the program at this level before writing it (default: as converted)",
    )
    s.set_defaults(func=cmd_convert)

    s = add("compile", [shape, build, dump, quiet], "compile to a deployable artifact")
    s.add_argument("model")
    s.add_argument("-o", "--output", required=True, help="artifact directory")
    s.add_argument(
        "--timings",
        action="store_true",
        help="print where the time went: conversion, each pass, lowering, LLVM, linking, "
        "the largest kernels",
    )
    s.set_defaults(func=cmd_compile)

    s = add("run", [shape, build, limits, dump, quiet], "run a model or an artifact on inputs")
    s.add_argument("model", help="a model file or a compiled artifact")
    s.add_argument(
        "--input", action="append", metavar="NAME=FILE.npy", help="one input (repeatable)"
    )
    s.add_argument("--inputs", metavar="IN.npz", help="all inputs by name")
    s.add_argument(
        "--fill",
        choices=("zeros", "ones", "random"),
        help="generate the inputs not given (as tvmc's --fill-mode)",
    )
    s.add_argument("--seed", type=int, default=0, help="seed of --fill random")
    s.add_argument(
        "--print-time", action="store_true", help="time the first call and --repeat more"
    )
    s.add_argument(
        "--repeat", type=_positive, default=10, help="runs timed by --print-time (default 10)"
    )
    s.add_argument("-o", "--output", metavar="OUT.npz", help="write outputs here")
    s.set_defaults(func=cmd_run)

    s = add("verify", [shape, build, limits, dump, quiet], "check parity with the source framework")
    s.add_argument("model", help="a model; with --load-results also a .relay file or artifact")
    s.add_argument(
        "--rtol",
        action="append",
        type=_tolerance,
        metavar="[NAME=]VALUE",
        help="relative tolerance, 1e-4 by default; NAME=VALUE for one output (repeatable)",
    )
    s.add_argument(
        "--atol",
        action="append",
        type=_tolerance,
        metavar="[NAME=]VALUE",
        help="absolute tolerance, 1e-5 by default; NAME=VALUE for one output (repeatable)",
    )
    s.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    s.add_argument(
        "--per-layer", action="store_true", help="compare and list every layer, even at parity"
    )
    s.add_argument("--html", metavar="REPORT.html", help="write an HTML report (plot, graph)")
    s.add_argument("--save-results", metavar="REF.npz", help="keep the source's inputs/outputs")
    s.add_argument("--load-results", metavar="REF.npz", help="compare with stored results instead")
    s.add_argument("--input", action="append", metavar="NAME=FILE.npy")
    s.add_argument("--inputs", metavar="IN.npz")
    s.set_defaults(func=cmd_verify)

    s = add("bench", [shape, build, limits, dump, quiet], "latency vs the source runtime")
    s.add_argument("model")
    s.add_argument("--runs", type=_positive, default=50, help="timed pairs (exactly)")
    s.add_argument("--warmup", type=_positive, default=5, help="warm-up pairs (at least)")
    s.add_argument("--threads", type=_positive, default=2, help="threads for each runtime")
    s.add_argument(
        "--spin",
        action="store_true",
        help="let both runtimes' workers spin between parallel regions (default: the source "
        "runtime's wait passively, ours stop spinning 20 us after a region)",
    )
    s.add_argument(
        "--profile",
        action="store_true",
        help="time every step (fused group; in a shape-generic build, every kernel call) of the "
        "timed calls: share of the total, GFLOP/s where its shapes are static",
    )
    s.set_defaults(func=cmd_bench)

    from .service.cli import add_convert_batch_parser, add_serve_parser

    add_serve_parser(sub, [quiet]).set_defaults(func=cmd_serve)
    add_convert_batch_parser(sub, [quiet]).set_defaults(func=cmd_convert_batch)

    s = add("demo", [quiet], "the main job end to end on a bundled model")
    s.add_argument(
        "-o", "--output-dir", default="build/demo", help="where the demo writes (build/demo)"
    )
    s.set_defaults(func=cmd_demo)
    return p


# -- errors -------------------------------------------------------------------------------------

_HINTS = {
    "UnsupportedOpsError": "relay inspect MODEL lists them; the Python API takes converters "
    "for them (custom_convert_map=)",
    "InputError": "give inputs with --input NAME=FILE.npy or --inputs IN.npz; relay inspect "
    "MODEL shows their names and types",
    "ModelLoadError": "relay reads .onnx files, torch.export .pt2 archives, SavedModel "
    "directories, .keras files, .relay text and compiled artifacts",
    "ParseError": "the text must be Relay (as relay convert writes it, with its metadata)",
    "RelayTypeError": "the program does not typecheck; if relay converted it, report it",
    "ResourceLimitError": "the model exceeds a size or time budget",
    "BuildError": "code generation failed; rerun with RELAY_DEBUG=1 and report it",
    "FileNotFoundError": "check the path",
    "PermissionError": "check the file's permissions",
}


def _cli_phrasing(msg: str) -> str:
    """The API's keyword arguments in a message, as the flags that set them."""
    import re

    msg = re.sub(r"shapes=\{'([^']*)': \([^)]*\)\}", r"--input-shape \1=D0,D1,...", msg)
    return msg.replace("shapes= ", "--input-shape ")


def error_line(command: str, e: BaseException) -> str:
    """One line for any error: `relay CMD: error: what (hint)`."""
    from relay_core.errors import RelayError, UnsupportedOpsError

    prefix = f"relay {command}: error:" if command else "relay: error:"
    if isinstance(e, UnsupportedOpsError):
        ops = [" ".join(str(x) for x in op if x not in (None, "")) for op in e.ops]
        shown = "; ".join(ops[:8]) + (f"; and {len(ops) - 8} more" if len(ops) > 8 else "")
        what = f"the {e.framework} model uses {len(ops)} unsupported operator(s): {shown}"
    elif isinstance(e, (RelayError, OSError)):
        what = (str(e).strip().splitlines() or [type(e).__name__])[0]
        if isinstance(e, OSError) and e.filename and str(e.filename) not in what:
            what = f"{e.filename}: {what}"
    else:  # a bug: say so, keep it on one line
        msg = (str(e).strip().splitlines() or [""])[0]
        return (
            f"{prefix} internal error: {type(e).__name__}: {msg} (this is a bug: rerun with "
            "RELAY_DEBUG=1 for the traceback and report it)"
        )
    what = _cli_phrasing(what)
    hint = next((h for k, h in _HINTS.items() if k in {c.__name__ for c in type(e).__mro__}), "")
    if "no such file" in what.lower():
        hint = "check the path"
    return f"{prefix} {what}" + (f" ({hint})" if hint else "")


def _quiet_pipe() -> None:
    """stdout's reader went away: drop what is left, no traceback at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    from .progress import reporting

    parser = build_parser()
    raw = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(raw)
    if extra:  # refused in the subcommand's name: `relay inspect: error: ... --opt-level`
        where = parser.commands.get(args.command) if args.command else None
        (where or parser).error(
            f"unrecognized arguments: {' '.join(extra)}"
            + (f" ({args.command} does not take them)" if where else "")
        )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    args.opt_level_given = any(a == "--opt-level" or a.startswith("--opt-level=") for a in raw)
    for flag in ("quiet", "dump_ir", "input_shape", "opt_level"):
        if not hasattr(args, flag):
            setattr(args, flag, None)
    try:
        with reporting(quiet=bool(args.quiet)):
            code = int(args.func(args) or 0)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        _quiet_pipe()
        return 141  # as a process killed by SIGPIPE
    except KeyboardInterrupt:
        print(f"relay {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        if os.environ.get("RELAY_DEBUG") == "1":
            raise
        print(error_line(args.command, e), file=sys.stderr)
        if argv is None:  # the `relay` process itself, not a caller's
            _abandon_source_runs()
        return 1


def _abandon_source_runs() -> None:
    """A source runtime left running past --timeout cannot be stopped: leave at once, before
    interpreter shutdown meets its thread."""
    import threading

    if any(t.name == "relay-source-run" and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
