"""Values remembered on disk by the identity of what they were computed from, so that a warm
process does not recompute them: the compiler's and the converters' fingerprints (hashes of
their sources and of the versions of the libraries they use) and the host target's key.

A file's identity is its path, device, inode, size and modification and change times in ns
(as git's index keeps them): rewriting a file, or installing another version of a library,
gives it a new identity. Timestamps are coarse (a clock tick; up to 2 s on FAT), so a file
changed less than RACY_NS before it was looked at could change again without its identity
moving: such an identity is not remembered, and the value is computed again next time.

Each kind of value keeps one record (`<cache dir>/memo/<kind>.json`: the identity's hash and
the value), replaced atomically; a record that does not match is simply recomputed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable

RACY_NS = 2_000_000_000


def file_identity(paths: Iterable[str]) -> tuple[str, int]:
    """(the identity of these files, the newest modification or change time among them). A
    missing file is part of the identity as missing."""
    parts = []
    newest = 0
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            parts.append(f"{p}|-")
            continue
        parts.append(f"{p}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}")
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return "\n".join(parts), newest


def package_files(names: Iterable[str], extra: Iterable[str] = ()) -> list[str]:
    """For each top-level package (located, not imported): its `__init__.py` or module file,
    and the files `extra` names relative to its directory ("llvmlite/binding/libllvmlite.so").
    Installing another version writes them anew, so their identity stands for the version."""
    out = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin:
            out.append(f"<no {name}>")
            continue
        out.append(spec.origin)
        base = os.path.dirname(spec.origin)
        out += [os.path.join(base, e.split("/", 1)[1]) for e in extra if e.startswith(name + "/")]
    return out


def remembered(
    cdir: str | None, kind: str, identity: str, newest_ns: int, compute: Callable[[], str]
) -> str:
    """`compute()`, or the value remembered for `identity` under the cache directory `cdir`
    (None: no cache, always computed). `newest_ns`: the newest time in the identity; a recent
    one is not remembered (see the module docstring)."""
    now = time.time_ns()
    if not cdir:
        return compute()
    key = hashlib.blake2b(f"{kind}\n{identity}".encode(), digest_size=20).hexdigest()
    path = os.path.join(cdir, "memo", f"{kind}.json")
    try:
        with open(path, encoding="utf-8") as f:
            rec = json.load(f)
        if rec.get("identity") == key and isinstance(rec.get("value"), str):
            return rec["value"]
    except (OSError, ValueError, AttributeError):
        pass
    value = compute()
    if now - newest_ns > RACY_NS:
        write_atomic(path, json.dumps({"identity": key, "value": value}).encode())
    return value


def write_atomic(path: str, data: bytes) -> None:
    """`data` to `path` through a temporary file and a rename (readers see the old or the new
    file, never a part); a failure leaves nothing behind and is not raised: a record that
    could not be written is computed again next time."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".tmp-{os.getpid()}-", dir=os.path.dirname(path))
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def host_identity() -> tuple[str, int] | None:
    """What determines the host target LLVM detects, read without loading LLVM: the host's
    name and /proc/cpuinfo's CPU description and flags (not its clock speeds), or None where
    there is no /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    keep = {"processor", "vendor_id", "cpu family", "model", "model name", "stepping"}
    keep |= {"microcode", "cpuid level", "flags"}
    cpu = [ln for ln in lines if ln.split(":", 1)[0].strip() in keep]
    return f"{os.uname().nodename}\n" + "\n".join(cpu), 0
