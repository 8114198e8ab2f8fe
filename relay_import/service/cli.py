"""The `serve` and `convert-batch` subcommands' flags (kept here so the main CLI stays small)."""

from __future__ import annotations

import sys
from pathlib import Path

from .config import CODE_FORMATS, Limits, ServiceConfig, parse_size


def add_serve_parser(sub, parents: list):
    s = sub.add_parser(
        "serve",
        parents=parents,
        help="the HTTP service: upload, convert, verify, compile, download, run",
        description="Serve the converter over HTTP (FastAPI on uvicorn; with --ray, on Ray "
        "Serve). Listening off loopback needs --token.",
    )
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument(
        "--model",
        action="append",
        metavar="NAME=PATH",
        help="compile a model at start and serve it under NAME (repeatable)",
    )
    s.add_argument(
        "--store",
        default="",
        metavar="DIR|URL",
        help="content-addressed store: a directory or an fsspec URL (s3://...); "
        "default ~/.cache/relay/store",
    )
    s.add_argument("--token", help="bearer token clients must send (or RELAY_SERVE_TOKEN)")
    s.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    s.add_argument(
        "--allow-format",
        action="append",
        choices=CODE_FORMATS,
        default=[],
        help="accept uploads of this format too (they can carry code)",
    )
    d = Limits()
    g = s.add_argument_group("limits")
    g.add_argument("--max-body", default=d.max_body, type=parse_size, metavar="SIZE")
    g.add_argument(
        "--max-input-bytes",
        default=d.max_input_bytes,
        type=parse_size,
        metavar="SIZE",
        help="decoded inputs of a request, and shape overrides",
    )
    g.add_argument(
        "--max-tensor-bytes",
        default=d.max_tensor_bytes,
        type=parse_size,
        metavar="SIZE",
        help="tensors a model may hold or fold",
    )
    g.add_argument(
        "--max-text-bytes",
        default=d.max_text_bytes,
        type=parse_size,
        metavar="SIZE",
        help="a Relay text answer",
    )
    g.add_argument("--worker-memory", default=d.worker_memory, type=parse_size, metavar="SIZE")
    g.add_argument("--worker-cpu", default=d.worker_cpu, type=float, metavar="SECONDS")
    g.add_argument("--worker-timeout", default=d.worker_timeout, type=float, metavar="SECONDS")
    g.add_argument("--max-inflight", default=d.max_inflight, type=int, metavar="N")
    g.add_argument("--header-timeout", default=d.header_timeout, type=float, metavar="SECONDS")
    g.add_argument("--read-timeout", default=d.read_timeout, type=float, metavar="SECONDS")
    g.add_argument("--shutdown-timeout", default=30.0, type=float, metavar="SECONDS")
    g.add_argument(
        "--isolate-inference", action="store_true", help="run every inference in a worker process"
    )
    r = s.add_argument_group("ray")
    r.add_argument("--ray", action="store_true", help="deploy on Ray Serve")
    r.add_argument(
        "--address", default=None, help="Ray cluster address (default: start a local Ray)"
    )
    r.add_argument(
        "--replicas", type=int, default=1, help="replicas (the minimum when autoscaling)"
    )
    r.add_argument(
        "--max-replicas",
        type=int,
        default=0,
        help="autoscale on queue length up to this many replicas",
    )
    return s


def config_from_args(args) -> ServiceConfig:
    models = {}
    for m in args.model or []:
        name, sep, path = m.partition("=")
        if not sep:
            name, path = Path(m).stem, m
        models[name] = path
    lim = Limits(
        max_body=args.max_body,
        max_input_bytes=args.max_input_bytes,
        max_tensor_bytes=args.max_tensor_bytes,
        max_text_bytes=args.max_text_bytes,
        worker_memory=args.worker_memory,
        worker_cpu=args.worker_cpu,
        worker_timeout=args.worker_timeout,
        max_inflight=args.max_inflight,
        header_timeout=args.header_timeout,
        read_timeout=args.read_timeout,
    )
    return ServiceConfig(
        host=args.host,
        port=args.port,
        store=args.store,
        token=args.token,
        workers=args.workers,
        models=models,
        allow_formats=tuple(args.allow_format),
        limits=lim,
        shutdown_timeout=args.shutdown_timeout,
        isolate_inference=args.isolate_inference,
        quiet=args.quiet,
    )


def serve_main(args) -> int:
    try:
        cfg = config_from_args(args)
        cfg.check_exposure()
    except ValueError as e:
        print(f"relay serve: error: {e}", file=sys.stderr)
        return 2
    for name, path in cfg.models.items():
        if not Path(path).exists():
            print(f"relay serve: error: model {name}: {path}: no such file", file=sys.stderr)
            return 2
    if args.ray:
        from .ray_serve import serve_on_ray

        return serve_on_ray(
            cfg, address=args.address, replicas=args.replicas, max_replicas=args.max_replicas
        )
    from .server import serve

    return serve(cfg)


def add_convert_batch_parser(sub, parents: list):
    s = sub.add_parser(
        "convert-batch",
        parents=parents,
        help="convert, verify and compile many models into a store",
        description='MANIFEST: a JSON list (or {"models": [...]}) of paths or objects '
        '{"path", "name", "shapes": {"x": [1, 3, 8, 8]}, "rtol", "atol", "opt_level"}, or '
        "a text file with one path per line. Paths are relative to the manifest.",
    )
    s.add_argument("manifest")
    s.add_argument("--store", default="", metavar="DIR|URL")
    s.add_argument("--ray", action="store_true", help="run each model as a Ray task")
    s.add_argument("--address", default=None, help="Ray cluster address")
    s.add_argument("--workers", type=int, default=2, help="local worker processes")
    s.add_argument("--worker-memory", default=Limits().worker_memory, type=parse_size)
    s.add_argument("--worker-timeout", default=Limits().worker_timeout, type=float)
    s.add_argument("-o", "--output", help="also write the summary table here")
    return s


def convert_batch_main(args) -> int:
    from .batch import convert_batch

    cfg = ServiceConfig(
        store=args.store,
        workers=args.workers,
        limits=Limits(worker_memory=args.worker_memory, worker_timeout=args.worker_timeout),
        quiet=args.quiet,
    )
    try:
        result = convert_batch(args.manifest, cfg, use_ray=args.ray, address=args.address)
    except (ValueError, OSError) as e:
        print(f"relay convert-batch: error: {e}", file=sys.stderr)
        return 2
    print(result["table"])
    if not args.quiet:
        print(f"results: {cfg.store}/{result['key']}")
    if args.output:
        Path(args.output).write_text(result["table"] + "\n", encoding="utf-8")
    return 0 if result["ok"] else 1
