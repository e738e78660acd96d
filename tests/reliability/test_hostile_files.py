"""Hostile input files: each gives a clear SFL000 (or lints normally) and the run goes on.

Every case is linted in one run beside a good file; the good file must still get its finding.
Cases that could kill the process (native stack overflows in libcst) run the CLI in a
subprocess and assert a return code of 0 or 1, never a signal (negative) nor 2.
"""
import ast
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from syncfree_lint import engine
from syncfree_lint.config import Config

GOOD = textwrap.dedent(
    """\
    import torch
    model = torch.nn.Linear(2, 2).cuda()
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        print(loss.item())
    """
)
GOOD_FINDING = ("good.py", 6, "SFL101")


def _codes(result):
    return [(os.path.basename(d.path), d.line, d.code) for d in result.diagnostics]


def _run_dir(folder):
    return engine.run([str(folder)], Config())


def _assert_good_still_found(result):
    assert GOOD_FINDING in _codes(result), _codes(result)
    assert not [d for d in result.diagnostics if d.code == "SFL001"], _codes(result)


def _good_as(newline="\n", bom=False, indent="    "):
    text = GOOD.replace("    ", indent).replace("\n", newline)
    data = text.encode()
    return (b"\xef\xbb\xbf" + data) if bom else data


# ---- unreadable bytes: SFL000 at a position, the run goes on ------------------------------
UNREADABLE = {
    "syntax_error.py": (b"import torch\nx = (\n", "never closed"),
    "syntax_error2.py": (b"import torch\ndef f(:\n    pass\n", "syntax error"),
    "nul_byte.py": (b"import torch\nx = 1\x00\n", "NUL"),
    "undecodable.py": (b"import torch\nx = '\xff\xfe'\n", "decode"),
    "bad_cookie.py": (b"# -*- coding: no-such-codec -*-\nimport torch\n", "encoding"),
    "wrong_cookie.py": (b"# coding: ascii\nimport torch\nx = '\xc3\xa9'\n", "decode"),
    "bom_vs_cookie.py": (b"\xef\xbb\xbf# coding: latin-1\nimport torch\n", "BOM"),
    "bad_dedent.py": (b"import torch\nif x:\n        a = 1\n    b = 2\n", "syntax error"),
    "tab_space_mix.py": (b"import torch\nif x:\n\ta = 1\n        b = 2\n", "syntax error"),
}


@pytest.mark.parametrize("name", sorted(UNREADABLE))
def test_unreadable_file_is_sfl000_and_run_goes_on(tmp_path, name):
    data, words = UNREADABLE[name]
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / name).write_bytes(data)
    result = _run_dir(tmp_path)
    _assert_good_still_found(result)
    mine = [d for d in result.diagnostics if os.path.basename(d.path) == name]
    assert [d.code for d in mine] == ["SFL000"], _codes(result)
    assert words.lower() in mine[0].message.lower(), mine[0].message
    assert mine[0].line >= 1 and mine[0].col >= 1


# ---- valid files in odd shapes: linted normally, the finding on the right line ------------
VALID = {
    "crlf.py": _good_as("\r\n"),
    "cr_only.py": _good_as("\r"),
    "mixed_newlines.py": GOOD.replace("\n", "\r\n", 2).replace("loss.backward()\n", "loss.backward()\r").encode(),
    "bom.py": _good_as(bom=True),
    "bom_crlf.py": _good_as("\r\n", bom=True),
    "tabs.py": _good_as(indent="\t"),
    "latin1_cookie.py": b"# -*- coding: latin-1 -*-\n" + GOOD.replace("print(loss.item())", "print('\xe9', loss.item())").encode("latin-1"),
    "no_final_newline.py": GOOD.rstrip("\n").encode(),
    "form_feed.py": GOOD.replace("import torch\n", "import torch\n\x0c\n").encode(),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_odd_but_valid_file_is_linted(tmp_path, name):
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / name).write_bytes(VALID[name])
    result = _run_dir(tmp_path)
    _assert_good_still_found(result)
    mine = [(d.line, d.code) for d in result.diagnostics if os.path.basename(d.path) == name]
    # The cookie / form-feed variants have one extra line before the loop.
    line = 7 if name in ("latin1_cookie.py", "form_feed.py") else 6
    assert mine == [(line, "SFL101")], (name, mine)


def test_empty_and_blank_files_are_clean(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "only_bom.py").write_bytes(b"\xef\xbb\xbf")
    (tmp_path / "blank.py").write_bytes(b"\n\n\r\n   \n")
    (tmp_path / "torch_only.py").write_bytes(b"import torch")
    result = _run_dir(tmp_path)
    assert _codes(result) == [GOOD_FINDING]
    assert result.files == 5


@pytest.mark.slow  # about 25 s
def test_hundred_thousand_lines(tmp_path):
    body = "".join(f"x{i} = torch.zeros({i % 7})\n" for i in range(100_000))
    (tmp_path / "big.py").write_text("import torch\n" + body + GOOD)
    result = _run_dir(tmp_path)
    assert result.lines == 100_001 + GOOD.count("\n")
    assert _codes(result) == [("big.py", 100_001 + 6, "SFL101")]


# ---- file-system oddities -----------------------------------------------------------------
def test_directory_named_like_a_python_file(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "x.py").mkdir()
    (tmp_path / "x.py" / "inner.py").write_text(GOOD)
    result = _run_dir(tmp_path)
    _assert_good_still_found(result)
    assert ("inner.py", 6, "SFL101") in _codes(result)
    assert not [d for d in result.diagnostics if d.code == "SFL000"]
    # Named explicitly, it is walked like any folder.
    direct = engine.run([str(tmp_path / "x.py"), str(tmp_path / "good.py")], Config())
    assert sorted(_codes(direct)) == sorted([("inner.py", 6, "SFL101"), GOOD_FINDING])


def test_symlink_loop_and_dangling_link(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    os.symlink("loop_b.py", tmp_path / "loop_a.py")
    os.symlink("loop_a.py", tmp_path / "loop_b.py")
    os.symlink(str(tmp_path / "missing" / "nowhere.py"), tmp_path / "dangling.py")
    os.symlink(str(tmp_path), tmp_path / "self_dir")  # a folder link back to the root
    result = _run_dir(tmp_path)
    _assert_good_still_found(result)
    by_name = {os.path.basename(d.path): d for d in result.diagnostics if d.code == "SFL000"}
    assert set(by_name) == {"loop_a.py", "loop_b.py", "dangling.py"}, _codes(result)
    assert "symbolic links" in by_name["loop_a.py"].message
    # The folder link is not followed: the good file is linted once.
    assert _codes(result).count(GOOD_FINDING) == 1


def test_unreadable_file(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    locked = tmp_path / "locked.py"
    locked.write_text(GOOD)
    locked.chmod(0)
    try:
        try:
            with open(locked, "rb"):
                pass
        except PermissionError:
            pass
        else:
            pytest.skip("running as root (or with CAP_DAC_OVERRIDE): chmod 000 does not block reads")
        result = _run_dir(tmp_path)
    finally:
        locked.chmod(stat.S_IRUSR | stat.S_IWUSR)
    _assert_good_still_found(result)
    mine = [d for d in result.diagnostics if os.path.basename(d.path) == "locked.py"]
    assert [d.code for d in mine] == ["SFL000"]
    assert "permission" in mine[0].message.lower()


def test_unreadable_via_failing_read(tmp_path, monkeypatch):
    """Root-proof stand-in for chmod 000: open() raises PermissionError for one file."""
    import builtins

    (tmp_path / "good.py").write_text(GOOD)
    locked = tmp_path / "locked.py"
    locked.write_text(GOOD)
    real_open = builtins.open

    def fake_open(file, *args, **kwargs):
        if os.fspath(file) == str(locked):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    result = _run_dir(tmp_path)
    monkeypatch.undo()
    _assert_good_still_found(result)
    mine = [d for d in result.diagnostics if os.path.basename(d.path) == "locked.py"]
    assert [d.code for d in mine] == ["SFL000"]
    assert "permission denied" in mine[0].message.lower()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_named_like_a_python_file_does_not_hang(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    os.mkfifo(tmp_path / "pipe.py")
    proc = _cli([str(tmp_path)], timeout=10)
    assert proc is not None, "the linter hung on a FIFO"
    assert proc.returncode == 1
    assert "good.py:6:" in proc.stdout


def test_file_vanishes_mid_run(tmp_path, monkeypatch):
    (tmp_path / "a_gone.py").write_text(GOOD)
    (tmp_path / "good.py").write_text(GOOD)
    real_discover = engine.discover

    def discover_then_delete(paths, config):
        found = list(real_discover(paths, config))
        os.remove(tmp_path / "a_gone.py")  # discovered, then gone before it is read
        yield from found

    monkeypatch.setattr(engine, "discover", discover_then_delete)
    result = _run_dir(tmp_path)
    _assert_good_still_found(result)
    mine = [d for d in result.diagnostics if os.path.basename(d.path) == "a_gone.py"]
    assert [d.code for d in mine] == ["SFL000"]
    assert "vanished" in mine[0].message


def test_file_becomes_a_directory_mid_run(tmp_path, monkeypatch):
    (tmp_path / "a_swapped.py").write_text(GOOD)
    (tmp_path / "good.py").write_text(GOOD)
    real_discover = engine.discover

    def discover_then_swap(paths, config):
        found = list(real_discover(paths, config))
        os.remove(tmp_path / "a_swapped.py")
        os.mkdir(tmp_path / "a_swapped.py")
        yield from found

    monkeypatch.setattr(engine, "discover", discover_then_swap)
    result = _run_dir(tmp_path)
    _assert_good_still_found(result)
    mine = [d for d in result.diagnostics if os.path.basename(d.path) == "a_swapped.py"]
    assert [d.code for d in mine] == ["SFL000"]


# ---- deep nesting and long chains: in a subprocess (libcst can overflow the C stack) ------
def _cli(args, timeout=120):
    try:
        return subprocess.run(
            [sys.executable, "-m", "syncfree_lint", *args],
            capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None


def _blocks(depth):
    lines = ["import torch"]
    lines += [" " * i + "if x:" for i in range(depth)]
    lines.append(" " * depth + "pass")
    return "\n".join(lines) + "\n"


DEEP = {
    "parens_1000": "x = " + "(" * 1000 + "1" + ")" * 1000,
    "lists_1000": "x = " + "[" * 1000 + "]" * 1000,
    "calls_1000": "x = " + "f(" * 1000 + ")" * 1000,
    "blocks_1000": None,
    "plus_chain_50k": "x = " + "+".join(["a"] * 50_000),
    "mul_chain_5k": "x = " + "*".join(["a"] * 5_000),
    "pow_chain_5k": "x = " + "**".join(["a"] * 5_000),
    "compare_chain_50k": "x = " + " < ".join(["a"] * 50_000),
    "tuple_50k": "x = " + ",".join(["a"] * 50_000),
    "attribute_chain_50k": "x = a" + ".b" * 50_000,
    "subscript_chain_50k": "x = a" + "[0]" * 50_000,
    "call_chain_50k": "x = a" + "()" * 50_000,
    "unary_minus_50k": "x = " + "-" * 50_000 + "a",
    "not_5k": "x = " + "not " * 5_000 + "a",
    "ifelse_5k": "x = " + " if c else ".join(["a"] * 5_000),
    "lambda_1000": "x = " + "lambda: " * 1000 + "a",
    "and_chain_5k": "x = " + " and ".join(["a"] * 5_000),
    "item_chain_in_step_20k": "for x in loader:\n    loss.backward()\n    y = loss" + ".item()" * 20_000,
}
CRASHERS = {
    "and_chain_50k": "x = " + " and ".join(["a"] * 50_000),
    "or_chain_20k": "x = " + " or ".join(["a"] * 20_000),
}
LIBCST_LIMIT = {
    "implicit_concat_10k": "x = " + " ".join(['"a"'] * 10_000),
}


def _write_deep(tmp_path, name, code):
    text = _blocks(1000) if code is None else "import torch\n" + code + "\n"
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / f"{name}.py").write_text(text)
    return text


def _check_deep(tmp_path, name, text):
    proc = _cli([str(tmp_path)])
    assert proc is not None, "timed out"
    assert proc.returncode in (0, 1), f"return code {proc.returncode} (negative = killed by a signal): {proc.stderr[-1500:]}"
    assert "Traceback" not in proc.stderr
    assert "good.py:6:" in proc.stdout and "SFL101" in proc.stdout, proc.stdout
    assert "SFL001" not in proc.stdout, proc.stdout
    mine = [line for line in proc.stdout.splitlines() if f"{name}.py:" in line]
    if any("SFL000" in line for line in mine):
        try:
            compile(text, name, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
            compiled = True
        except (SyntaxError, RecursionError, MemoryError):
            compiled = False
        assert not compiled or any("nested too deeply" in line or "libcst cannot parse" in line for line in mine), mine
    return mine


SLOW_DEEP = {"ifelse_5k", "mul_chain_5k"}  # 10-20 s each (the analysis hits its recursion limit slowly)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_DEEP else n for n in sorted(DEEP)])
def test_deep_nesting_never_kills_the_process(tmp_path, name):
    text = _write_deep(tmp_path, name, DEEP[name])
    _check_deep(tmp_path, name, text)


@pytest.mark.parametrize("name", sorted(CRASHERS))
def test_long_boolean_chain_does_not_segfault(tmp_path, name):
    text = _write_deep(tmp_path, name, CRASHERS[name])
    _check_deep(tmp_path, name, text)


@pytest.mark.parametrize("name", sorted(LIBCST_LIMIT))
def test_libcst_limit_is_not_called_a_syntax_error(tmp_path, name):
    text = _write_deep(tmp_path, name, LIBCST_LIMIT[name])
    mine = _check_deep(tmp_path, name, text)
    assert not any("syntax error" in line for line in mine), mine
