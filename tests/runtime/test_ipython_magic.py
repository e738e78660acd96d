"""``%load_ext syncfree`` and ``%%sync_trace`` in a real IPython ``InteractiveShell``: a training
cell's per-step ``.item()`` is reported at its line in the cell, a clean cell reports nothing."""

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("IPython", reason="the %%sync_trace magic is tested in a real IPython shell (pip install ipython)")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

SETUP = """\
import torch
def log_value(t):
    return t.detach().sum().item()
"""

TRAIN = """\
%%sync_trace --device stand-in --out traced {options}
torch.manual_seed(0)
model = torch.nn.Linear(4, 1).to("cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0.0
for step in range({steps}):
    x = torch.randn(8, 4, device="cuda")
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    total += loss.item()
    {extra}
finished = True
"""

CLEAN = """\
%%sync_trace --device stand-in --out traced
model = torch.nn.Linear(4, 1).to("cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for step in range(5):
    loss = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.detach())
"""


@pytest.fixture
def shell():
    ip = InteractiveShell.instance()
    assert ip.run_cell("%load_ext syncfree").success
    assert ip.run_cell(SETUP, store_history=True).success
    for name in ("traced", "finished"):
        ip.user_ns.pop(name, None)
    return ip


def cell_line(cell: str, text: str) -> int:
    """The line of ``text`` in the cell, as the notebook numbers it (the ``%%`` line is line 1)."""
    lines = cell.splitlines()
    found = [i for i, line in enumerate(lines, start=1) if line.strip() == text]
    assert len(found) == 1, text
    return found[0]


def run(shell, cell, capsys):
    capsys.readouterr()
    result = shell.run_cell(cell, store_history=True)
    return result, capsys.readouterr().out


def test_a_per_step_item_is_reported_at_its_cell_line(shell, capsys):
    cell = TRAIN.format(options="", steps=6, extra="pass")
    result, out = run(shell, cell, capsys)
    assert result.success, result.error_in_exec
    item = cell_line(cell, "total += loss.item()")
    traced = shell.user_ns["traced"]
    assert traced.mode == "stand-in" and traced.steps == 5  # six steps: the first ends the set-up
    assert [(s.file.startswith("<sync_trace cell"), s.line, s.kind, s.per_step) for s in traced.sites] == [
        (True, item, "item", 1.0)
    ]
    rows = [line for line in out.splitlines() if line.startswith("cell:")]
    assert len(rows) == 1 and rows[0].startswith(f"cell:{item} ") and "total += loss.item()" in rows[0]
    assert rows[0].split()[-2] == "1.00"
    assert "5 optimizer steps counted (ran to the end)" in out and "total: 1.00 host syncs per step" in out
    assert shell.user_ns["finished"] is True  # the cell ran in the notebook's namespace


def test_a_helper_from_another_cell_is_shown_at_that_cell(shell, capsys):
    cell = TRAIN.format(options="", steps=4, extra="log_value(loss)")
    result, out = run(shell, cell, capsys)
    assert result.success, result.error_in_exec
    helper = [line for line in out.splitlines() if "return t.detach().sum().item()" in line]
    assert len(helper) == 1 and helper[0].startswith("In[") and ":3 " in helper[0], out
    assert helper[0].split()[-2] == "1.00"
    assert "total: 2.00 host syncs per step" in out


def test_a_clean_cell_reports_no_sync(shell, capsys):
    result, out = run(shell, CLEAN, capsys)
    assert result.success, result.error_in_exec
    assert shell.user_ns["traced"].sites == () and shell.user_ns["traced"].steps == 4
    assert "no host sync in the counted steps" in out and "note:" not in out
    assert len(shell.user_ns["losses"]) == 5


def test_steps_stops_the_cell(shell, capsys):
    cell = TRAIN.format(options="--steps 3", steps=50, extra="pass")
    result, out = run(shell, cell, capsys)
    assert result.success, result.error_in_exec
    assert "3 optimizer steps counted (stopped after --steps)" in out
    assert shell.user_ns["step"] == 3 and "finished" not in shell.user_ns  # stopped in its 4th step


def test_a_cell_without_optimizer_steps_is_one_step(shell, capsys):
    cell = '%%sync_trace --device stand-in --out traced\nx = torch.ones(3, device="cuda")\nprint(x.max().item())\n'
    result, out = run(shell, cell, capsys)
    assert result.success, result.error_in_exec
    assert "no optimizer.step() in the cell: its whole run is counted as one step (ran to the end)" in out
    assert shell.user_ns["traced"].whole_run and "optimizer steps counted" not in out
    assert [(s.line, s.count) for s in shell.user_ns["traced"].sites] == [(3, 1)]


def test_a_failing_cell_reports_its_counts_and_its_error(shell, capsys):
    cell = TRAIN.format(options="", steps=6, extra='if step == 3: raise RuntimeError("stop here")')
    result, out = run(shell, cell, capsys)
    assert "the cell failed; counts cover the steps before the error" in out
    assert "RuntimeError" in out and "stop here" in out
    assert shell.user_ns["traced"].steps == 3 and shell.user_ns["traced"].failed


def test_a_bad_option_is_a_message_and_the_cell_does_not_run(shell, capsys):
    result, out = run(shell, "%%sync_trace --bogus\nran = True\n", capsys)
    assert "unrecognized arguments: --bogus" in out and "usage: %%sync_trace" in out
    assert "ran" not in shell.user_ns
    result, out = run(shell, "%%sync_trace --steps 0\nran = True\n", capsys)
    assert "--steps must be 1 or more" in out and "ran" not in shell.user_ns


def test_the_extension_imports_neither_ipython_nor_the_linter():
    code = (
        "import sys, syncfree, syncfree.ipython_magic\n"
        "assert callable(syncfree.load_ipython_extension)\n"
        "assert not {'IPython', 'libcst', 'syncfree_lint'} & set(sys.modules), sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


LOOP = """\
for step in range(4):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    seen = loss.item()
"""


def test_a_model_set_up_on_the_cpu_in_an_earlier_cell_is_seen_once_moved_in_the_cell(shell, capsys):
    assert shell.run_cell("model = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n").success
    result, out = run(shell, "%%sync_trace --device stand-in --out traced\n" + LOOP, capsys)
    assert result.success and shell.user_ns["traced"].sites == ()
    assert "note: no tensor was placed on the device" in out
    result, out = run(shell, '%%sync_trace --device stand-in --out traced\nmodel.to("cuda")\n' + LOOP, capsys)
    assert result.success and "note:" not in out
    assert [(s.line, s.per_step) for s in shell.user_ns["traced"].sites] == [(8, 1.0)]


def test_sync_stand_in_puts_an_earlier_cells_model_on_the_device(shell, capsys):
    result, out = run(shell, "%sync_stand_in on", capsys)
    try:
        assert "'cuda' runs on the CPU stand-in" in out
        set_up = (
            'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
            "model = torch.nn.Linear(4, 1).to(device)\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        )
        assert shell.run_cell(set_up).success and shell.user_ns["device"] == "cuda"
        loop = LOOP.replace("torch.randn(8, 4)", "torch.randn(8, 4, device=device)").replace(
            "    opt.step()\n", "    opt.step()\n    torch.cuda.synchronize()\n"
        )
        result, out = run(shell, "%%sync_trace --out traced\n" + loop, capsys)
        assert result.success and "note:" not in out, out
        sites = {(s.line, s.kind): s.per_step for s in shell.user_ns["traced"].sites}
        assert sites == {(7, "synchronize"): 1.0, (8, "item"): 1.0}
        result, out = run(shell, "%%sync_trace --device cuda\nx = 1\n", capsys)
        assert "'cuda' is mapped to the stand-in" in out
    finally:
        result, out = run(shell, "%sync_stand_in off", capsys)
    assert "'cuda' is CUDA again" in out
    from syncfree.trace.session_map import SESSION_MAP

    assert not SESSION_MAP.active
    assert torch.cuda.is_available.__module__ == "torch.cuda"  # torch's own function again, not the map's
    result, out = run(shell, "%sync_stand_in off", capsys)
    assert "was off" in out
