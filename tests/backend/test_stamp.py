"""relay_core.backend.stamp: a value remembered by the identity of the files it comes from is
served while they are unchanged, computed again once one changes, and never remembered for
files changed too recently to be told apart from a later change."""

from __future__ import annotations

import os

from relay_core.backend import compiler, stamp


def test_remembered_until_a_file_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(stamp, "RACY_NS", -(10**12))  # every identity counts as settled
    src = tmp_path / "src.py"
    src.write_text("a = 1\n")
    calls = []

    def value():
        calls.append(1)
        return src.read_text()

    def get():
        ident, newest = stamp.file_identity([str(src)])
        return stamp.remembered(str(tmp_path / "c"), "test", ident, newest, value)

    assert get() == "a = 1\n" and get() == "a = 1\n"
    assert len(calls) == 1
    before = os.stat(src).st_mtime_ns
    src.write_text("a = 2\n")  # same size, new content, a later time (as a later edit has)
    os.utime(src, ns=(before + 10**9, before + 10**9))
    assert get() == "a = 2\n"
    assert len(calls) == 2


def test_a_recent_change_is_not_remembered(tmp_path):
    src = tmp_path / "src.py"
    src.write_text("a = 1\n")
    calls = []
    ident, newest = stamp.file_identity([str(src)])
    cdir = str(tmp_path / "c")
    for _ in range(2):
        stamp.remembered(cdir, "test", ident, newest, lambda: calls.append(1) or "v")
    assert len(calls) == 2
    assert not (tmp_path / "c" / "memo" / "test.json").exists()


def test_missing_files_and_no_cache_dir(tmp_path):
    ident, _ = stamp.file_identity([str(tmp_path / "nope")])
    assert "nope|-" in ident
    assert stamp.package_files(["surely_not_a_package_name"]) == ["<no surely_not_a_package_name>"]
    assert stamp.remembered(None, "test", ident, 0, lambda: "x") == "x"


def test_compile_cache_key_parts_match_the_direct_computation(tmp_path, monkeypatch):
    """The remembered target key and compiler fingerprint equal what they stand for."""
    from relay_core.backend.llvm_target import target_key

    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setattr(stamp, "RACY_NS", -(10**12))
    assert compiler.host_target_key() == target_key()
    assert compiler.host_target_key() == target_key()  # from the record now
    if stamp.host_identity() is not None:
        assert (tmp_path / "c" / "memo" / "target.json").exists()
    compiler.compiler_fingerprint.cache_clear()
    first = compiler.compiler_fingerprint()
    compiler.compiler_fingerprint.cache_clear()
    assert compiler.compiler_fingerprint() == first
    root = os.path.dirname(os.path.dirname(compiler.__file__))
    files = []
    for dirpath, dirs, names in sorted(os.walk(root)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [
            os.path.join(dirpath, f) for f in sorted(names) if f.endswith((".py", ".c", ".h"))
        ]
    assert compiler._compiler_fingerprint(root, files) == first
    compiler.compiler_fingerprint.cache_clear()
