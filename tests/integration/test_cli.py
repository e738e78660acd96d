"""The command line, run as users run it: exit codes, output shape, options."""
import subprocess
import sys
import textwrap

import pytest

from syncfree_lint.cli import main
from syncfree_lint.rules import ALL_RULES

STEP = textwrap.dedent(
    """\
    import torch
    model = torch.nn.Linear(2, 2).cuda()
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        print(loss.item())
        if step % 10 == 0:
            print(loss.item())
    """
)


@pytest.fixture
def train(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(STEP)
    return path


def test_findings_exit_1_and_flake8_shape(train, capsys):
    assert main([str(train)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{train}:6:11: SFL101 " + next(r for r in ALL_RULES if r.code == "SFL101").message]


def test_clean_exit_0_and_exit_zero(tmp_path, train, capsys):
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    assert main([str(clean)]) == 0
    assert main([str(train), "--exit-zero"]) == 0


def test_report_guarded_select_ignore(train, capsys):
    assert main([str(train), "--report-guarded"]) == 1
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert main([str(train), "--ignore", "SFL1"]) == 0
    assert main([str(train), "--select", "SFL2"]) == 0
    assert main([str(train), "--select", "SFL101"]) == 1


def test_usage_errors_exit_2(train, tmp_path, capsys):
    assert main([str(train), "--select", "E501"]) == 2
    assert "unknown rule code" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.py")]) == 2
    (tmp_path / "pyproject.toml").write_text("[tool.syncfree-lint]\nbogus = 1\n")
    assert main([str(train)]) == 2
    assert "unknown key 'bogus'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["--no-such-flag"])
    assert info.value.code == 2


def test_list_rules_explain_statistics(train, capsys):
    assert main(["--list-rules"]) == 0
    listed = capsys.readouterr().out
    assert all(rule.code in listed for rule in ALL_RULES)
    assert main(["--explain", "sfl106"]) == 0
    text = capsys.readouterr().out
    for section in ("What it does", "Why it syncs", "Example", "Use instead", "Fix safety"):
        assert section in text
    assert main(["--explain", "SFL999"]) == 2
    capsys.readouterr()
    assert main([str(train), "--statistics"]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith("1      SFL101")


def test_stdin_filename_and_entry_points(train):
    proc = subprocess.run(
        [sys.executable, "-m", "syncfree_lint", "--stdin-filename", "editor.py", "-"],
        input=STEP.encode(), capture_output=True,
    )
    assert proc.returncode == 1
    assert proc.stdout.decode().startswith("editor.py:6:11: SFL101")
    version = subprocess.run(["syncfree-lint", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("syncfree-lint ")


def test_linter_never_imports_torch(train):
    code = (
        "import sys; from syncfree_lint.cli import main; rc = main([sys.argv[1]]);"
        "assert 'torch' not in sys.modules, 'linter imported torch'; sys.exit(0)"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(train)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


FIXABLE = textwrap.dedent(
    """\
    import torch
    import torchmetrics

    device = "cuda"
    model = torch.nn.Linear(2, 2).to(device)
    criterion = torch.nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    mean = torchmetrics.MeanMetric().to(device)
    total = 0.0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        mean.update(loss)
        total += loss.item()
    print(total)
    """
)


def test_fixable_findings_are_marked_and_summed_up_as_ruff_does(tmp_path, capsys):
    """`[*]` after the code for a fix that would apply; the summary (stderr) counts safe fixes and
    how many more --unsafe-fixes would apply."""
    path = tmp_path / "train.py"
    path.write_text(FIXABLE)
    assert main([str(path), "--no-cache"]) == 1
    captured = capsys.readouterr()
    by_code = {line.split(": ", 1)[1].split()[0]: line for line in captured.out.splitlines()}
    assert ": SFL301 [*] " in by_code["SFL301"] and "[*]" not in by_code["SFL101"]
    assert captured.err == "Found 3 findings. [*] 2 fixable with --fix; 1 more with --unsafe-fixes\n"
    assert main([str(path), "--no-cache", "--unsafe-fixes"]) == 1
    captured = capsys.readouterr()
    assert all(" [*] " in line for line in captured.out.splitlines())
    assert captured.err == "Found 3 findings. [*] 3 fixable with --fix --unsafe-fixes\n"
    assert main([str(path), "--no-cache", "--output-format", "json"]) == 1
    assert capsys.readouterr().err == ""  # machine formats: nothing but the document


def test_diff_says_when_only_unsafe_fixes_exist(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(FIXABLE.replace("import torchmetrics\n", "").replace("mean = torchmetrics.", "# ")
                    .replace("mean.update(loss)", "pass"))
    assert main([str(path), "--no-cache", "--diff"]) == 0  # no safe fix: no diff
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "syncfree-lint: no safe fixes; 1 available with --unsafe-fixes\n" == captured.err
    assert main([str(path), "--no-cache", "--diff", "--unsafe-fixes"]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("---") and "no safe fixes" not in captured.err


SHOWN = textwrap.dedent("""\
    import torch


    def train(model, loader, optimizer, criterion):
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            print(f"loss {loss.item():.4f}")
    """)


def test_display_only_suggestion_is_shown_never_applied(tmp_path, capsys):
    """ruff's display-only level: listed by --show-fixes, in the diff only with --suggestions,
    never written by --fix (not even with --unsafe-fixes), not a fix in SARIF."""
    import json

    path = tmp_path / "shown.py"
    path.write_text(SHOWN)
    base = ["--no-cache", "--no-project", str(path)]
    assert main(["--fix", "--unsafe-fixes", "--suggestions", *base]) == 1
    assert path.read_text() == SHOWN
    capsys.readouterr()
    assert main(["--diff", *base]) == 0
    assert capsys.readouterr().out == ""
    assert main(["--diff", "--suggestions", "--show-fixes", *base]) == 1
    captured = capsys.readouterr()
    assert "+        if step % 100 == 0:\n+            print(f\"loss {loss.item():.4f}\")" in captured.out
    assert "Suggested instead" in captured.err and "every 100 steps" in captured.err
    assert path.read_text() == SHOWN
    main(["--output-format", "json", *base])
    [finding] = json.loads(capsys.readouterr().out)
    assert finding["fix"]["applicability"] == "display"
    main(["--output-format", "sarif", *base])
    [result] = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert "fixes" not in result
