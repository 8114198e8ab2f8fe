"""Least-recently-used eviction for the on-disk caches (kernel objects, conversions, compiled
models).

An entry is one file (`scan`) or one directory (`scan_dirs`: a compiled model's lib.so, weights
and manifest); its modification time is its last use (`touch` on a hit), so no index file is
kept that concurrent processes could corrupt. Several processes may scan and evict at once: an
entry that vanishes meanwhile (removed by another process) is skipped, and entries are written
elsewhere by their caches as a temporary file or directory renamed into place, which never
carries the entry suffix or name the scan looks for. A directory is evicted by renaming it out
of the way first (atomic), then deleting it, so no process ever finds half of one.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable

Entry = tuple[float, int, str]  # (last use, size, path)


def limit_bytes(var: str, default_mb: float) -> int:
    """The size limit in bytes from environment variable `var` (megabytes, fractions allowed;
    `default_mb` when unset or empty)."""
    raw = os.environ.get(var, "")
    try:
        mb = float(raw) if raw.strip() else float(default_mb)
    except ValueError:
        mb = -1.0
    if not mb >= 0:  # also NaN
        from ..errors import RelayError

        raise RelayError(f"{var}={raw!r}: expected a size in megabytes (a number >= 0)")
    return int(mb * 1024 * 1024)


def touch(path: str) -> None:
    """Mark `path` as used now (an entry evicted meanwhile is ignored)."""
    try:
        os.utime(path)
    except OSError:
        pass


def scan(root: str, suffix: str, nested: bool = False) -> list[Entry]:
    """(last use, size, path) of the files named `*suffix` directly in `root`, or (`nested`)
    in its immediate subdirectories."""
    dirs = [root]
    if nested:
        try:
            dirs = [os.path.join(root, d) for d in os.listdir(root)]
        except OSError:
            return []
    out = []
    for d in dirs:
        try:
            it = os.scandir(d)
        except OSError:  # not a directory, or removed meanwhile
            continue
        with it:
            for e in it:
                if not e.name.endswith(suffix):
                    continue
                try:
                    if not e.is_file(follow_symlinks=False):
                        continue
                    st = e.stat(follow_symlinks=False)
                except OSError:  # evicted by another process meanwhile
                    continue
                out.append((st.st_mtime, st.st_size, e.path))
    return out


def scan_dirs(root: str, is_entry: Callable[[str], bool]) -> list[Entry]:
    """(last use, size, path) of the directories directly in `root` whose name `is_entry`
    accepts; the size is the total of the files directly in each."""
    try:
        it = os.scandir(root)
    except OSError:
        return []
    out = []
    with it:
        for e in it:
            if not is_entry(e.name):
                continue
            try:
                if not e.is_dir(follow_symlinks=False):
                    continue
                mtime = e.stat(follow_symlinks=False).st_mtime
                size = 0
                with os.scandir(e.path) as files:
                    for f in files:
                        try:
                            if f.is_file(follow_symlinks=False):
                                size += f.stat(follow_symlinks=False).st_size
                        except OSError:
                            pass
            except OSError:  # evicted by another process meanwhile
                continue
            out.append((mtime, size, e.path))
    return out


def _remove(path: str) -> None:
    """Remove a file, or a directory: renamed aside first (raises FileNotFoundError when it is
    already gone), so it leaves its cache atomically."""
    if not os.path.isdir(path) or os.path.islink(path):
        os.unlink(path)
        return
    parent, name = os.path.split(path)
    aside = os.path.join(parent, f".evicted-{name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    os.rename(path, aside)
    shutil.rmtree(aside, ignore_errors=True)


def evict(entries: list[Entry], limit: int, keep: float = 0.8, spare: tuple[str, ...] = ()) -> int:
    """Once `entries` total more than `limit` bytes, remove the least recently used ones until
    they total at most `keep * limit`; returns the bytes removed (entries another process
    removed first do not count). Entries in `spare` (e.g. the one just stored) count towards
    the total but are never removed."""
    total = sum(s for _, s, _ in entries)
    if total <= limit:
        return 0
    target = int(limit * keep)
    spared = {os.path.abspath(p) for p in spare}
    removed = gone = 0
    for _, size, path in sorted(entries):
        if total - removed - gone <= target:
            break
        if os.path.abspath(path) in spared:
            continue
        try:
            _remove(path)
            removed += size
        except FileNotFoundError:  # evicted by another process: no longer in the total
            gone += size
        except OSError:
            pass
    return removed
