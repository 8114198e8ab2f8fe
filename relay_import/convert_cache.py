"""The conversion cache: a model file converted once is read back from the relay cache
directory (`relay_core.backend.compiler.cache_dir()`; `RELAY_CACHE_DIR=` empty disables it).

The key is the file's content (a SavedModel directory: every file's path and content), the
load options, the sources of relay_core, converters and relay_import's front door, and the
versions of the frameworks and numpy: any of them changing makes a new entry. An entry is the
converted IRModule in relay_core.ir.serialize's binary form (text plus raw constant bytes),
written to a temporary file and renamed into place, so concurrent processes never read a
partial entry; a damaged entry is removed and the model converted again.

The entries are kept within `$RELAY_CONVERT_CACHE_MB` (default 2048): past it, a store removes
the least recently used entries (a hit counts as a use) until they fill 80% of it, with the
eviction shared with the kernel cache (relay_core.backend.lru). Another process evicting an
entry that is being read makes that read a miss (or, once open, still completes).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import tempfile
import time
from typing import Any

from relay_core import IRModule
from relay_core.backend import lru, stamp

# what a converted module depends on besides the model and the options
_SOURCES = ("relay_core", "converters")
_FRONT = ("api.py", "convert_cache.py")
_DISTS = ("numpy", "ml_dtypes", "onnx", "torch", "tensorflow", "keras", "tf_keras")
_CHUNK = 1 << 22
_SUFFIX = ".relaymod"
DEFAULT_LIMIT_MB = 2048


def limit_bytes() -> int:
    return lru.limit_bytes("RELAY_CONVERT_CACHE_MB", DEFAULT_LIMIT_MB)


def cache_path(source, fw: str, kw: dict) -> str | None:
    """Where the conversion of file `source` with options `kw` is cached, or None when it is
    not cached (no cache directory, not a file, options that are not plain values)."""
    from relay_core.backend.compiler import cache_dir

    cdir = cache_dir()
    if not cdir or not isinstance(source, (str, os.PathLike)):
        return None
    try:
        opts = json.dumps(_plain(kw), sort_keys=True)
    except _NotPlain:
        return None
    try:
        digest, external = content_digest(os.fspath(source), os.path.join(cdir, "convert"))
    except OSError:
        return None
    if external and fw == "onnx":  # names external data files: the file is not the whole model
        return None
    h = hashlib.blake2b(digest_size=20)
    h.update(json.dumps([digest, fw, opts, fingerprint()]).encode())
    return os.path.join(cdir, "convert", h.hexdigest() + _SUFFIX)


# A file changed less than this long before it was looked at may change again without its
# modification or change time moving (timestamps are coarse: a clock tick, up to 2 s on FAT):
# its identity is not remembered, and the next load hashes it again (git's "racy" entries).
RACY_NS = stamp.RACY_NS


def content_digest(path: str, index_dir: str) -> tuple[str, bool]:
    """(hash of the file's or directory's content, whether an ONNX external-data `location`
    may be named in it). Remembered under `index_dir` by the file's identity (path, device,
    inode, size, modification and change times in ns), as git's index does, so a warm load
    does not read the file: a rewritten file has a new identity and is hashed again. An
    identity is only remembered once the file has been still for RACY_NS, so a rewrite within
    the same timestamp tick cannot keep it."""
    now = time.time_ns()
    ident, newest = _identity(path)
    stat_key = hashlib.blake2b(ident.encode(), digest_size=20).hexdigest()
    index = os.path.join(index_dir, "index", stat_key)
    try:
        with open(index, encoding="utf-8") as f:
            rec = json.load(f)
        return str(rec["digest"]), bool(rec["external"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    h = hashlib.blake2b(digest_size=20)
    external = _hash_source(h, path, b"location")
    digest = h.hexdigest()
    if now - newest > RACY_NS:
        stamp.write_atomic(index, json.dumps({"digest": digest, "external": external}).encode())
    return digest, external


def _identity(path: str) -> tuple[str, int]:
    """(the identity of a file or a directory tree, its newest modification or change time)."""
    path = os.path.abspath(path)
    paths = [path]
    if os.path.isdir(path):
        for dirpath, dirs, names in sorted(os.walk(path)):
            dirs.sort()
            paths += [os.path.join(dirpath, n) for n in sorted(names)]
    return stamp.file_identity(paths)


def get(entry: str) -> IRModule | None:
    """The cached module, or None (missing, or damaged: then removed)."""
    from relay_core.ir import serialize

    if not os.path.isfile(entry):
        return None
    try:
        mod = serialize.load(entry)
    except Exception:  # a damaged or foreign entry: convert again
        _remove(entry)
        return None
    lru.touch(entry)  # recently used
    return mod


def put(entry: str, mod: IRModule) -> bool:
    """Store `mod` at `entry` (atomically); False when the module or the directory cannot be
    stored (an attribute the format does not keep, a read-only cache). Then evicts the least
    recently used entries if the cache is over its limit."""
    from relay_core.ir import serialize

    limit = limit_bytes()  # a malformed setting is reported before any work
    d = os.path.dirname(entry)
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".tmp-{os.getpid()}-", dir=d)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            serialize.write(mod, f)
        os.replace(tmp, entry)
    except (serialize.NotSerializable, OSError):
        _remove(tmp)
        return False
    except BaseException:
        _remove(tmp)
        raise
    evict(d, limit)
    return True


def evict(directory: str, limit: int | None = None) -> int:
    """Remove the least recently used entries of the conversion cache directory
    (`<cache dir>/convert`) once they total more than `limit` bytes (default: from
    `$RELAY_CONVERT_CACHE_MB`); returns the bytes removed."""
    return lru.evict(lru.scan(directory, _SUFFIX), limit_bytes() if limit is None else limit)


def _remove(p: str) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass


@functools.cache
def fingerprint() -> str:
    """Hash of the converter and IR sources and the framework versions (read from the
    installed distributions: no framework is imported). Remembered in the cache directory by
    the identities of those sources and of the frameworks' package files (stamp.remembered)."""
    from relay_core.backend.compiler import cache_dir

    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    files = [os.path.join(here, f) for f in _FRONT]
    for pkg in _SOURCES:
        spec = importlib.util.find_spec(pkg)  # located, not imported
        if spec is None or not spec.submodule_search_locations:
            continue
        base = os.path.abspath(list(spec.submodule_search_locations)[0])
        for dirpath, dirs, names in sorted(os.walk(base)):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            files += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".py")]
    ident, newest = stamp.file_identity([*files, *stamp.package_files(_DISTS)])
    return stamp.remembered(
        cache_dir(), "converters", ident, newest, lambda: _fingerprint(root, files)
    )


def _fingerprint(root: str, files: list) -> str:
    from importlib import metadata

    h = hashlib.blake2b(digest_size=16)
    for p in files:
        h.update(os.path.relpath(p, root).encode())
        with open(p, "rb") as f:
            h.update(f.read())
    for dist in _DISTS:
        try:
            v = metadata.version(dist)
        except metadata.PackageNotFoundError:
            v = "-"
        h.update(f"{dist} {v};".encode())
    return h.hexdigest()


def _hash_source(h, path: str, needle: bytes | None = None) -> bool:
    """Hash a file or a directory tree into `h`; whether `needle` occurs in the file."""
    if os.path.isdir(path):
        for dirpath, dirs, names in sorted(os.walk(path)):
            dirs.sort()
            for n in sorted(names):
                p = os.path.join(dirpath, n)
                h.update(os.path.relpath(p, path).encode() + b"\0")
                _hash_file(h, p)
        return False
    return _hash_file(h, path, needle)


def _hash_file(h, path: str, needle: bytes | None = None) -> bool:
    found = False
    tail = b""
    with open(path, "rb") as f:
        h.update(b"%d\0" % os.fstat(f.fileno()).st_size)
        buf = bytearray(_CHUNK)
        view = memoryview(buf)
        while n := f.readinto(buf):
            h.update(view[:n])
            if needle and not found:
                found = needle in tail + bytes(view[: len(needle)]) or buf.find(needle, 0, n) >= 0
                tail = bytes(view[max(0, n - len(needle)) : n])
    return found


class _NotPlain(Exception):
    pass


def _plain(v: Any):
    """The options as JSON values (shapes, names, flags); anything else (a custom converter
    function, a tensor) makes the conversion uncached."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [type(v).__name__, [_plain(x) for x in v]]
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {k: _plain(x) for k, x in v.items()}
    raise _NotPlain
