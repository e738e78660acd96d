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


def test_a_single_file_run_is_served_whole_until_another_project_file_changes(tmp_path) -> None:
    """A file linted alone depends on the rest of its project: the stored result of the run is
    served while no file of the project changed, and missed as soon as one did."""
    import os

    from syncfree_lint import engine
    from syncfree_lint.config import Config

    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '0'\n")
    (project / "helpers.py").write_text("def show(loss):\n    return loss\n")
    (project / "train.py").write_text(
        "import torch\nfrom helpers import show\n\n"
        "def train(model, loader, optimizer):\n"
        "    for x, y in loader:\n"
        "        loss = model(x.cuda()).mean()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        show(loss)\n")
    cache = Cache(str(tmp_path / "cache"), repr(Config()))

    def lines() -> list:
        result = engine.run([str(project / "helpers.py")], Config(), cache=cache, project=True)
        return [(os.path.basename(d.path), d.line) for d in result.diagnostics]

    assert lines() == [] and lines() == []
    (project / "helpers.py").write_text("def show(loss):\n    return loss.item()\n")
    assert lines() == [("helpers.py", 2)]
    (project / "train.py").write_text((project / "train.py").read_text().replace("        show(loss)\n", ""))
    os.utime(project / "train.py", ns=(1, 1))  # another project file changed: no step calls show() now
    assert lines() == []
