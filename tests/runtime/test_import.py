"""`import syncfree` stays cheap: no torch (its pytest plugin loads in every run), never libcst."""

import subprocess
import sys

import syncfree


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_does_not_import_torch():
    result = _run("import syncfree, sys; assert 'torch' not in sys.modules, 'torch imported'")
    assert result.returncode == 0, result.stderr


def test_runtime_never_imports_libcst():
    code = (
        "import sys, syncfree\n"
        "for name in syncfree.__all__: getattr(syncfree, name)\n"
        "import syncfree.distributed, syncfree.checkpoint\n"
        "assert 'torch' in sys.modules\n"
        "assert 'libcst' not in sys.modules, 'libcst imported'\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr


def test_public_names_resolve():
    for name in syncfree.__all__:
        assert getattr(syncfree, name) is not None
    assert set(syncfree.__all__) <= set(dir(syncfree))
    assert "MetricCollection" in syncfree.__all__ and "to_host" in syncfree.__all__


def test_unknown_name():
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        syncfree.Nope  # noqa: B018
