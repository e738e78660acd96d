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
