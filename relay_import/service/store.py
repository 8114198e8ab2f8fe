"""A content-addressed store for models, Relay texts, verify reports and compiled artifacts,
on any fsspec filesystem: a local directory by default, `memory://` for tests, `s3://...` (or
any other fsspec URL) for a store that several instances share.

Keys are hashes of what determines the content: a model's id is the hash of its bytes; a
derived object's key hashes the model id, the options and the build version (compiler sources,
converter sources, target CPU, llvmlite). So a restart loses nothing, two instances on one
store reuse each other's work, and a new compiler never serves an old artifact.

    models/<id>/model.<ext>   models/<id>/info.json
    relay/<key>.txt           reports/<key>/report.json   reports/<key>/report.html
    artifacts/<key>/artifact.tar.gz   artifacts/<key>/meta.json
    names/<name>.json         batches/<key>/results.json  batches/<key>/summary.md
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import uuid


def digest(*parts) -> str:
    """A 128-bit hex key of JSON-able parts."""
    raw = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def content_id(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@functools.cache
def build_version() -> str:
    """What makes a stored result stale: the compiler (its own fingerprint), the converters and
    the verifier (their sources), the target CPU and llvmlite."""
    import converters
    import relay_import
    from relay_core.backend.compiler import compiler_fingerprint
    from relay_core.backend.llvm_target import target_key

    h = hashlib.blake2b(digest_size=8)
    h.update(compiler_fingerprint().encode())
    h.update(target_key().encode())
    files = []
    root = os.path.dirname(converters.__file__)
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        files += [os.path.join(dirpath, f) for f in names if f.endswith(".py")]
    here = os.path.dirname(relay_import.__file__)
    files += [os.path.join(here, f) for f in _RESULT_MODULES]
    for p in sorted(files):
        if os.path.exists(p):
            with open(p, "rb") as fh:
                h.update(os.path.basename(p).encode() + fh.read())
    return h.hexdigest()


# relay_import modules whose code shapes a stored result (conversion, verification, export)
_RESULT_MODULES = (
    "api.py",
    "compare.py",
    "inspect.py",
    "report.py",
    "runners.py",
    "runners_tf.py",
    "runners_torch.py",
    "verifier.py",
    "service/tasks.py",
)


class Store:
    """Byte objects under string keys on an fsspec filesystem; writes are atomic."""

    def __init__(self, url: str):
        import fsspec

        self.url = url
        self.fs, self.root = fsspec.core.url_to_fs(url)
        self.local = "file" in _protocols(self.fs)
        self.shared = "memory" not in _protocols(self.fs)
        self.fs.makedirs(self.root, exist_ok=True)

    def _p(self, key: str) -> str:
        if key.startswith("/") or ".." in key.split("/"):
            raise ValueError(f"bad store key {key!r}")
        return f"{self.root.rstrip('/')}/{key}"

    def exists(self, key: str) -> bool:
        return self.fs.exists(self._p(key))

    def get(self, key: str) -> bytes | None:
        try:
            return self.fs.cat_file(self._p(key))
        except FileNotFoundError:
            return None

    def get_json(self, key: str):
        data = self.get(key)
        return None if data is None else json.loads(data)

    def put(self, key: str, data: bytes) -> None:
        path = self._p(key)
        parent = path.rsplit("/", 1)[0]
        self.fs.makedirs(parent, exist_ok=True)
        if self.local:  # readers never see half a file
            tmp = f"{parent}/.tmp-{uuid.uuid4().hex}"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        else:
            self.fs.pipe_file(path, data)

    def put_json(self, key: str, obj) -> None:
        self.put(key, json.dumps(obj, indent=1, sort_keys=True).encode())

    def put_file(self, key: str, local: str) -> None:
        with open(local, "rb") as f:
            self.put(key, f.read())

    def get_file(self, key: str, local: str) -> bool:
        try:
            self.fs.get_file(self._p(key), local)
            return True
        except FileNotFoundError:
            return False

    def open(self, key: str):
        return self.fs.open(self._p(key), "rb")

    def size(self, key: str) -> int:
        return int(self.fs.size(self._p(key)))

    def list(self, prefix: str) -> list[str]:
        try:
            entries = self.fs.ls(self._p(prefix), detail=False)
        except FileNotFoundError:
            return []
        return sorted(e.rstrip("/").rsplit("/", 1)[-1] for e in entries)


def _protocols(fs) -> tuple:
    p = fs.protocol
    return (p,) if isinstance(p, str) else tuple(p)
