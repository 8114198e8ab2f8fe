"""Least-recently-used eviction for the on-disk caches (kernel objects, conversions).

An entry is one file; its modification time is its last use (`touch` on a hit), so no index
file is kept that concurrent processes could corrupt. Several processes may scan and evict
at once: a file that vanishes meanwhile (removed by another process) is skipped, and entries
are written elsewhere by their caches as a temporary file renamed into place, which never
carries the entry suffix the scan looks for.
"""

from __future__ import annotations

import os

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


def evict(entries: list[Entry], limit: int, keep: float = 0.8) -> int:
    """Once `entries` total more than `limit` bytes, remove the least recently used ones until
    they total at most `keep * limit`; returns the bytes removed (files another process
    removed first do not count)."""
    total = sum(s for _, s, _ in entries)
    if total <= limit:
        return 0
    target = int(limit * keep)
    removed = gone = 0
    for _, size, path in sorted(entries):
        if total - removed - gone <= target:
            break
        try:
            os.unlink(path)
            removed += size
        except FileNotFoundError:  # evicted by another process: no longer in the total
            gone += size
        except OSError:
            pass
    return removed
