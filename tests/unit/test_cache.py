"""The cache never serves results of code it was not made by."""
from __future__ import annotations

from syncfree_lint import cache as cache_module
from syncfree_lint.cache import Cache, source_hash


def test_source_hash_is_stable_and_reads_the_package() -> None:
    assert source_hash() == source_hash()
    assert len(source_hash()) == 16


def test_a_changed_linter_source_misses(tmp_path, monkeypatch) -> None:
    before = Cache(str(tmp_path), "config")
    key = before.key("train.py", b"x = 1\n")
    before.put(key, ("facts", 1, True))
    assert Cache(str(tmp_path), "config").get(key) == ("facts", 1, True)
    monkeypatch.setattr(cache_module, "_SOURCE_HASH", "0" * 16)  # as if a module of the linter changed
    after = Cache(str(tmp_path), "config")
    assert after.key("train.py", b"x = 1\n") != key
    assert after.get(after.key("train.py", b"x = 1\n")) is None


def test_the_source_hash_reads_every_module_of_the_package(tmp_path, monkeypatch) -> None:
    package = tmp_path / "syncfree_lint"
    (package / "rules").mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = '0.1.0'\n")
    module = package / "rules" / "host_reads.py"
    module.write_text("X = 1\n")
    (package / "notes.txt").write_text("not source\n")
    monkeypatch.setattr(cache_module, "_PACKAGE", str(package))

    def fresh_key() -> str:  # as in a new process: the hash is computed once per process
        monkeypatch.setattr(cache_module, "_SOURCE_HASH", None)
        return Cache(str(tmp_path / "cache"), "config").key("train.py", b"x = 1\n")

    first = fresh_key()
    assert fresh_key() == first
    (package / "notes.txt").write_text("edited\n")  # not a .py file: not hashed
    assert fresh_key() == first
    module.write_text("X = 2\n")  # a module of the linter changed, the version string did not
    changed = fresh_key()
    assert changed != first
    module.write_text("X = 3\n")  # within one process the hash is not recomputed
    assert Cache(str(tmp_path / "cache"), "config").key("train.py", b"x = 1\n") == changed
