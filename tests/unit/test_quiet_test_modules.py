"""Test modules: no step of their own and nothing per step imports them, so the engine skips them
unless a rule that reports outside steps could fire there."""
import os
import textwrap

from syncfree_lint.config import Config
from syncfree_lint.engine import run
from syncfree_lint.prefilter import is_quiet_test_module

LOOP = textwrap.dedent(
    """\
    import torch

    def test_training_runs(loader):
        model = torch.nn.Linear(2, 2).cuda()
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            assert loss.item() > 0
    """
)

RATIO = textwrap.dedent(
    """\
    import torch.distributed as dist

    def test_mean_accuracy(correct, total):
        acc = correct / total
        dist.all_reduce(acc)
        acc /= dist.get_world_size()
        return acc
    """
)


def _project(tmp_path, files):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(tmp_path)


def test_a_test_module_is_not_parsed_and_a_training_script_of_the_same_text_is(tmp_path):
    root = _project(tmp_path, {"tests/test_train.py": LOOP, "train.py": LOOP.replace("def test_", "def ")})
    result = run([root], Config())
    assert result.files == 2 and result.parsed == 1 and result.skipped_by_filter == 1
    assert [(os.path.basename(d.path), d.code) for d in result.diagnostics] == [("train.py", "SFL101")]


def test_a_test_module_a_rule_outside_steps_can_fire_in_is_still_linted(tmp_path):
    root = _project(tmp_path, {"tests/test_dist.py": RATIO})
    result = run([root], Config())
    assert result.parsed == 1
    assert [d.code for d in result.diagnostics] == ["SFL501"]


def test_judged_inside_the_project_not_by_where_the_project_sits(tmp_path):
    root = _project(tmp_path / "tests" / "checkout", {"train.py": LOOP, "test_io.py": LOOP})
    assert not is_quiet_test_module(os.path.join(root, "train.py"), LOOP)
    assert is_quiet_test_module(os.path.join(root, "test_io.py"), LOOP)
    assert not is_quiet_test_module(os.path.join(root, "test_io.py"), RATIO)
