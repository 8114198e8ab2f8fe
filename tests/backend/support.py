"""Helpers that several backend tests share: building a function of the given parameters as a
static module, running a check in several Python threads at once, and running Python snippets
in several processes at once from the repository root."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_function(params, body, nthreads: int = 2):
    """`fn(params) { body }` type-checked and compiled (no model cache)."""
    import relay_core
    from relay_core.ir import Function, IRModule

    mod = relay_core.infer_type(IRModule.from_expr(Function(tuple(params), body)))
    return relay_core.build(mod, num_threads=nthreads, cache=False)


def run_in_threads(fn, n: int) -> None:
    """Call `fn(k)` for k in range(n), each in a thread of its own, all at once; re-raise the
    first failure once every thread has ended.

    >>> run_in_threads(lambda k: None, 4)
    """
    errors: list[BaseException] = []

    def run(k):
        try:
            fn(k)
        except BaseException as e:  # pragma: no cover - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def run_python(argvs: list[list[str]], env: dict | None = None) -> list[str]:
    """Run `python *argv` for each argv, all at once, from the repository root with it on
    PYTHONPATH (so that a snippet can import tests.*); assert that each exits with 0 and return
    their standard outputs.

    >>> run_python([["-c", "print(1)"], ["-c", "print(2)"]])
    ['1\\n', '2\\n']
    """
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    procs = [
        subprocess.Popen(
            [sys.executable, *argv],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        outs.append(out)
    return outs
