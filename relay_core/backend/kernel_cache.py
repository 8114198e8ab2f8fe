"""The per-kernel object cache: one object file per compilation unit, shared by all models.

A unit's key hashes its own LLVM IR text (complete: split.py copies every internal helper into
it and names internals canonically), the optimisation level, the target (CPU, features, LLVM
version) and the compiler's fingerprint, so a ResNet block that repeats compiles once and a second
model with the same layers reuses them. Entries live in `<cache dir>/kernels/` and are used
least-recently-first evicted past a size limit: `$RELAY_KERNEL_CACHE_MB` (default 512). Several
processes may build at once: entries are written to a temporary file and renamed into place, a
read that loses the race to an eviction is a miss, and eviction ignores files already gone.
`RELAY_CACHE_DIR=` (empty) disables it, as it does the model cache.
"""

from __future__ import annotations

import hashlib
import os
import threading

DEFAULT_LIMIT_MB = 512


def limit_bytes() -> int:
    raw = os.environ.get("RELAY_KERNEL_CACHE_MB", "")
    try:
        mb = float(raw) if raw.strip() else DEFAULT_LIMIT_MB
    except ValueError:
        from ..errors import RelayError

        raise RelayError(f"RELAY_KERNEL_CACHE_MB={raw!r}: expected a size in megabytes") from None
    return int(mb * 1024 * 1024)


class KernelCache:
    def __init__(self, root: str, salt: str, limit: int | None = None):
        self.dir = os.path.join(root, "kernels")
        self.salt = salt  # target key, compiler fingerprint
        self.limit = limit_bytes() if limit is None else limit
        self.written = 0

    def key(self, text: str, level: int) -> str:
        h = hashlib.blake2b(digest_size=20)
        h.update(f"{self.salt}\0{level}\0".encode())
        h.update(text.encode())
        return h.hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.dir, key[:2], key + ".o")

    def get(self, key: str) -> bytes | None:
        p = self._path(key)
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError:
            return None
        try:
            os.utime(p)  # last use, for eviction
        except OSError:
            pass
        return data or None

    def put(self, key: str, obj: bytes) -> None:
        p = self._path(key)
        try:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            tmp = f"{p}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "wb") as f:
                f.write(obj)
            os.replace(tmp, p)
            self.written += len(obj)
        except OSError:  # a full or read-only disk only costs the next build time
            pass

    def entries(self) -> list[tuple[float, int, str]]:
        """(last use, size, path) of every entry."""
        out = []
        try:
            subs = os.listdir(self.dir)
        except OSError:
            return out
        for sub in subs:
            try:
                it = os.scandir(os.path.join(self.dir, sub))
            except OSError:
                continue
            with it:
                for e in it:
                    if not e.name.endswith(".o"):
                        continue
                    try:
                        st = e.stat()
                    except OSError:  # evicted by another process meanwhile
                        continue
                    out.append((st.st_mtime, st.st_size, e.path))
        return out

    def evict(self) -> int:
        """Remove the least recently used entries until the cache is within 80% of its limit
        (once over it); returns the bytes removed."""
        ents = self.entries()
        total = sum(s for _, s, _ in ents)
        if total <= self.limit:
            return 0
        target = int(self.limit * 0.8)
        removed = 0
        for _, size, path in sorted(ents):
            if total - removed <= target:
                break
            try:
                os.unlink(path)
                removed += size
            except OSError:
                pass
        return removed
