"""The `relay` command. Subcommands call the relay_import API and hold no logic of their own."""

from __future__ import annotations

import argparse
import sys


def _cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(quiet=args.quiet)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="relay",
        description="Convert ONNX / PyTorch / TensorFlow models to Relay, verify and deploy them.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    d = sub.add_parser("demo", help="run the main job end to end on a bundled example")
    d.add_argument("--quiet", action="store_true")
    d.set_defaults(func=_cmd_demo)
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
    except Exception as e:  # user-facing: one clear line, no traceback
        from relay_core.errors import RelayError

        if isinstance(e, RelayError):
            print(f"relay {args.command}: error: {e}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
