"""README's Neovim snippets in a real ``nvim --headless``: each starts the real ``syncfree-lint
server`` on a Python buffer, and the server's diagnostics arrive in ``vim.diagnostic``.

Skipped where ``nvim`` is not installed (CI has none); each snippet runs on the versions it is for
(the 0.10 one needs ``vim.lsp.start`` and ``vim.fs.root``, the older one runs from 0.7)."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
NVIM = shutil.which("nvim")
COMMAND = 'cmd = { "syncfree-lint", "server" }'

TRAIN = textwrap.dedent(
    """\
    import torch

    model = torch.nn.Linear(8, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


    def train(loader):
        total = 0.0
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total += loss.item()
        return total
    """
)
ITEM_LINE = TRAIN.splitlines().index("        total += loss.item()")  # 0-based, as vim.diagnostic counts

# After the file is loaded: wait for the server's diagnostics, write them as JSON, quit.
WAIT = """\
local ok = vim.wait(90000, function() return #vim.diagnostic.get(0) > 0 end, 100)
local found = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
  table.insert(found, { lnum = d.lnum, code = code, message = d.message })
end
local clients = {}
for _, c in pairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
  table.insert(clients, { name = c.name, root = c.config.root_dir })
end
local out = io.open(vim.env.SYNCFREE_NVIM_OUT, "w")
out:write(vim.fn.json_encode({ waited = ok, diagnostics = found, clients = clients }))
out:close()
vim.cmd("qa!")
"""


def nvim_version():
    if NVIM is None:
        return None
    first = subprocess.run([NVIM, "--version"], capture_output=True, text=True, timeout=60).stdout.splitlines()[0]
    m = re.search(r"v(\d+)\.(\d+)\.(\d+)", first)
    assert m, first
    return tuple(int(g) for g in m.groups())


VERSION = nvim_version()
SHOWN = ".".join(map(str, VERSION)) if VERSION else "none"


def snippet(title: str) -> str:
    """The README's lua block that starts with the comment ``-- title``."""
    blocks = [textwrap.dedent(b) for b in re.findall(r"```lua\n(.*?)```", README, flags=re.S)]
    found = [b for b in blocks if b.startswith(f"-- {title}\n")]
    assert len(found) == 1, (title, blocks)
    return found[0]


def run_snippet(tmp_path: Path, lua: str) -> dict:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    (project / "src" / "train.py").write_text(TRAIN, encoding="utf-8")
    assert COMMAND in lua  # the server is this checkout's, run by this Python
    server = ", ".join(json.dumps(a) for a in (sys.executable, "-m", "syncfree_lint", "server"))
    (tmp_path / "init.lua").write_text(lua.replace(COMMAND, f"cmd = {{ {server} }}"), encoding="utf-8")
    (tmp_path / "wait.lua").write_text(WAIT, encoding="utf-8")
    out = tmp_path / "diagnostics.json"
    python_path = os.pathsep.join([str(ROOT), str(ROOT / "runtime"), os.environ.get("PYTHONPATH", "")])
    env = dict(
        os.environ, PYTHONPATH=python_path, SYNCFREE_NVIM_OUT=str(out), HOME=str(tmp_path),
        XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    cmd = [NVIM, "--headless", "-n", "-i", "NONE", "-u", str(tmp_path / "init.lua"),
           "src/train.py", "-c", f"luafile {tmp_path / 'wait.lua'}"]
    done = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=180)
    assert out.exists(), (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    data = json.loads(out.read_text(encoding="utf-8"))
    data["project"] = str(project)
    return data


def check(data: dict) -> None:
    assert data["waited"] is True, data
    assert data["clients"] == [{"name": "syncfree-lint", "root": data["project"]}]
    items = [d for d in data["diagnostics"] if d["lnum"] == ITEM_LINE]
    assert [d["code"] for d in items] == ["SFL101"], data["diagnostics"]
    assert ".item()" in items[0]["message"]


needs_nvim = pytest.mark.skipif(NVIM is None, reason="nvim is not installed (apt-get install neovim)")


@needs_nvim
@pytest.mark.skipif(VERSION is not None and VERSION < (0, 10, 0),
                    reason=f"the 0.10 snippet needs Neovim 0.10 (vim.lsp.start, vim.fs.root); this is {SHOWN}")
def test_the_neovim_0_10_snippet_gets_diagnostics(tmp_path):
    check(run_snippet(tmp_path, snippet("Neovim 0.10 or later")))


@needs_nvim
@pytest.mark.skipif(VERSION is not None and VERSION < (0, 7, 0),
                    reason=f"the older snippet needs Neovim 0.7 (nvim_create_autocmd); this is {SHOWN}")
def test_the_older_neovim_snippet_gets_diagnostics(tmp_path):
    check(run_snippet(tmp_path, snippet("Neovim 0.7 to 0.9")))
