"""Conformance report: pass counts per ONNX op over the node cases, and the data folders.

python -m tools.onnx_report               # node cases, per op
python -m tools.onnx_report --folders     # also simple, pytorch-*, light
python -m tools.onnx_report --failures    # list each failing case and why
python -m tools.onnx_report -k resize     # only cases whose name contains 'resize'
python -m tools.onnx_report --compiled    # compiled by relay_core.build instead
python -m tools.onnx_report --markdown docs/onnx_conformance.md   # also write the table
"""

from __future__ import annotations

import argparse
import collections
import datetime
import multiprocessing
import signal
import sys
import time
import warnings

from tools.onnx_conformance import folder_cases, light_cases, node_cases, run_case

TIMEOUT = 120  # seconds per case


def _alarm(signum, frame):
    raise TimeoutError(f"case took longer than {TIMEOUT} s")


def _run_one(args):
    group, name = args
    case = _CASES[group][name]
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT)
    t0 = time.perf_counter()
    try:
        run_case(case, compiled=_COMPILED)
        status, msg = "pass", ""
    except BaseException as e:  # noqa: BLE001 - a report records every kind of failure
        if isinstance(e, KeyboardInterrupt):
            raise
        status = "fail"
        msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
    finally:
        signal.alarm(0)
    return group, name, status, msg, time.perf_counter() - t0


_CASES: dict[str, dict] = {}
_COMPILED = False


def run_all(groups: list[str], pattern: str = "", jobs: int = 2) -> list[tuple]:
    """(group, name, status, message, seconds) for every selected case."""
    loaders = {
        "node": node_cases,
        "simple": lambda: folder_cases("simple"),
        "pytorch-converted": lambda: folder_cases("pytorch-converted"),
        "pytorch-operator": lambda: folder_cases("pytorch-operator"),
        "light": light_cases,
    }
    work = []
    for g in groups:
        _CASES[g] = loaders[g]()
        work += [(g, n) for n in _CASES[g] if pattern in n]
    if jobs <= 1:
        return [_run_one(w) for w in work]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, maxtasksperchild=200) as pool:
        return list(pool.imap_unordered(_run_one, work, chunksize=4))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--folders", action="store_true", help="also the data folders and light models")
    p.add_argument("--only-folders", action="store_true")
    p.add_argument("--failures", action="store_true", help="list failing cases")
    p.add_argument("-k", default="", help="only cases whose name contains this")
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--slowest", type=int, default=0, help="show the N slowest cases")
    p.add_argument("--compiled", action="store_true", help="compile each case (relay_core.build)")
    p.add_argument("--markdown", metavar="PATH", help="write the per-op table as markdown")
    p.add_argument(
        "--write-expected",
        metavar="PATH",
        help="write the failing cases as an expected-failures file",
    )
    args = p.parse_args(argv)
    global _COMPILED
    _COMPILED = args.compiled
    groups = [] if args.only_folders else ["node"]
    if args.folders or args.only_folders:
        groups += ["simple", "pytorch-converted", "pytorch-operator", "light"]
    results = run_all(groups, args.k, args.jobs)
    by_op: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    totals: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for g, name, status, _, _ in results:
        op = _CASES[g][name].op if g == "node" else g
        by_op[op][0] += status == "pass"
        by_op[op][1] += 1
        totals[g][0] += status == "pass"
        totals[g][1] += 1
    if "node" in groups:
        print(f"{'op':32} pass / total")
        for op in sorted(by_op):
            if op in totals:
                continue
            ok, n = by_op[op]
            mark = "" if ok == n else "  <"
            print(f"{op:32} {ok:4} / {n:<4}{mark}")
    if args.failures:
        print("\nfailures:")
        for g, name, status, msg, _ in sorted(results):
            if status != "pass":
                print(f"{g}/{name}: {msg}")
    if args.slowest:
        print("\nslowest:")
        for g, name, _, _, t in sorted(results, key=lambda r: -r[4])[: args.slowest]:
            print(f"{t:8.2f} s  {g}/{name}")
    if args.write_expected:
        _write_expected(args.write_expected, results)
    if args.markdown:
        _write_markdown(args.markdown, results, by_op, totals, args.compiled)
    print("\ntotals:")
    for g, (ok, n) in totals.items():
        print(f"  {g:20} {ok:5} / {n:<5} ({100.0 * ok / max(n, 1):.1f}%)")
    return 0


def _write_markdown(path: str, results, by_op, totals, compiled: bool) -> None:
    mode = "compiled (relay_core.build)" if compiled else "the reference interpreter"
    lines = [
        f"# ONNX conformance cases, run with {mode}",
        "",
        f"Measured {datetime.date.today()} by `python -m tools.onnx_report "
        f"{'--compiled ' if compiled else ''}--folders --markdown ...` against the outputs "
        "stored with onnx's cases.",
        "",
        "| set | pass | total | % |",
        "|---|---:|---:|---:|",
    ]
    for g, (ok, n) in totals.items():
        lines.append(f"| {g} | {ok} | {n} | {100.0 * ok / max(n, 1):.1f} |")
    lines += [
        "",
        "## Node cases per operator",
        "",
        "| operator | pass | total |",
        "|---|---:|---:|",
    ]
    for op in sorted(by_op):
        if op not in totals:
            ok, n = by_op[op]
            lines.append(f"| {op} | {ok} | {n} |")
    lines += ["", "## Failing cases", ""]
    for g, name, status, msg, _ in sorted(results):
        if status != "pass":
            key = name if g == "node" else f"{g}/{name}"
            lines.append(f"- `{key}`: {msg.replace('|', '/')}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _write_expected(path: str, results) -> None:
    """One line per failing case: its key and a reason (the error's first line)."""
    lines = [
        "# ONNX conformance cases that fail: name, then why. Regenerate with",
        "# python -m tools.onnx_report --folders --write-expected <this file>",
        "# (then edit the reasons). The test run fails on unlisted failures and on",
        "# listed cases that pass.",
    ]
    for g, name, status, msg, _ in sorted(results):
        if status != "pass":
            key = name if g == "node" else f"{g}/{name}"
            lines.append(f"{key}  {msg}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
