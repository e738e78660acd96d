"""Property tests for fixes: whatever the source, applying every fix (safe and unsafe)

- keeps a file that compiled compiling,
- is idempotent: fixing the fixed text again changes nothing,
- never makes a rule crash (no SFL001 on the fixed text).

Sources: our fixtures (``fixtures/rules/*.py`` but not ``*.fixed.py``, ``fixtures/loops/*.py``),
mutations of them (the mutation helpers of test_property.py: statements shuffled in a block,
bodies wrapped in ``if True:`` / ``for`` / ``while`` / ``with`` / ``try``, names renamed), and
hypothesmith programs placed inside a step loop that has fixable accumulator patterns around.
"""
import ast
import glob
import importlib.util
import os
import re
import textwrap
import warnings

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncfree_lint.config import Config
from syncfree_lint.engine import lint_text
from syncfree_lint.fixes.apply import fix_text

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _load_property_helpers():
    """test_property.py's mutation helpers, loaded under a private name (its tests not re-collected)."""
    spec = importlib.util.spec_from_file_location("_sfl_property_helpers", os.path.join(HERE, "test_property.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_helpers = _load_property_helpers()
_mutate, _wrap, mutation = _helpers._mutate, _helpers._wrap, _helpers.mutation

FIXTURES = sorted(
    p for p in glob.glob(os.path.join(ROOT, "fixtures", "rules", "*.py")) + glob.glob(os.path.join(ROOT, "fixtures", "loops", "*.py"))
    if not p.endswith(".fixed.py")
)


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


SOURCES = [(os.path.basename(p), _read(p)) for p in FIXTURES]


def _parses(text):
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


PARSABLE = [(name, text) for name, text in SOURCES if _parses(text)]

SETTINGS = dict(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
COUNTS = {}
CONFIG = Config()


def _count(key, n=1):
    COUNTS[key] = COUNTS.get(key, 0) + n


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    print("\n[fix property] " + ", ".join(f"{k}={v}" for k, v in sorted(COUNTS.items())))


def _lint(path, text):
    return lint_text(path, text, CONFIG)


def _compile_error(text, name):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings of generated code
            compile(text, name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    except (RecursionError, MemoryError):
        return "too deep"
    return None


def _diff(a, b):
    import difflib

    return "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "input", "fixed"))


# Known bugs (each has a deterministic xfail repro at the end of this file). A failing example
# that shows one of these shapes is counted, not failed, so the properties keep hunting new bugs.
_NESTED_TM_IMPORT = re.compile(r"^[ \t]+(import torchmetrics|from torchmetrics)", re.M)
_TOP_SYNCFREE_IMPORT = re.compile(r"^(?:import syncfree|from syncfree import)", re.M)
_BAD_FLOAT_WRAP = re.compile(r"\wfloat\(\w+\)|float\(\w+\)\w|float\(\w+\)=(?!=)")


def _multiline_item_call(text):
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "item"
        and n.end_lineno != n.lineno
        for n in ast.walk(tree)
    )


def known_bug(text, fixed):
    """Name of the known bug whose shape this (input, fixed output) pair shows, or None."""
    if _NESTED_TM_IMPORT.search(text) and len(_TOP_SYNCFREE_IMPORT.findall(fixed)) > len(_TOP_SYNCFREE_IMPORT.findall(text)):
        return "nested_torchmetrics_import"  # `import syncfree` inserted at column 0 inside a block
    if _multiline_item_call(text):
        return "multiline_item_receiver"  # `.detach()` replacement lands at the statement start
    if _BAD_FLOAT_WRAP.search(fixed) and not _BAD_FLOAT_WRAP.search(text):
        return "float_wrap_by_text_search"  # `avg_psnr` -> `avg_float(psnr)`, `f(n=n)` -> `f(float(n)=n)`
    return None


def check_fix_properties(name, text, kind):
    """Fix everything; assert compiles-if-it-compiled, idempotence, no SFL001."""
    _count(kind)
    result = fix_text(name, text, _lint, lambda d: True)
    _count(kind + ".fixes", len(result.applied))
    if result.changed:
        _count(kind + ".changed")
    _check(name, text, result)  # the bugs known_bug() names are fixed: any failure is new


def _check(name, text, result):
    if _compile_error(text, name) is None:
        problem = _compile_error(result.fixed, name)
        assert problem is None, f"fixed text no longer compiles ({problem}):\n{_diff(text, result.fixed)}"
    again = fix_text(name, result.fixed, _lint, lambda d: True)
    assert not again.changed, (
        f"second fix changed the text again ({[d.code for d in again.applied]}):\n"
        f"--- first fix ---\n{_diff(text, result.fixed)}\n--- second fix ---\n{_diff(result.fixed, again.fixed)}"
    )
    internal = [d.format() for d in _lint(name, result.fixed) if d.code == "SFL001"]
    assert not internal, "\n".join(internal) + "\n" + _diff(text, result.fixed)


# ---- the fixtures themselves ---------------------------------------------------------------
@pytest.mark.parametrize("name,text", SOURCES, ids=[n for n, _ in SOURCES])
def test_fixture_fix_properties(name, text):
    check_fix_properties(name, text, "fixtures")


# ---- mutated fixtures ------------------------------------------------------------------------
@settings(max_examples=120, **SETTINGS)
@given(st.sampled_from(PARSABLE), st.lists(mutation, min_size=1, max_size=6))
def test_mutated_fixture_fix_properties(fixture, ops):
    name, text = fixture
    tree = ast.parse(text)
    for op in ops:
        _mutate(tree, op)
    ast.fix_missing_locations(tree)
    check_fix_properties(name, ast.unparse(tree), "mutations")


# ---- hypothesmith programs inside a step with fixable patterns around them -------------------
STEP = """\
import torch
from torchmetrics import MeanMetric
device = "cuda"
model = torch.nn.Linear(2, 2).to(device)
mean_loss = MeanMetric()
running = 0.0
for step, batch in enumerate(loader):
    loss = criterion(model(batch.to(device)))
    loss.backward()
    running += loss.item()
    mean_loss.update(loss)
{body}
    if step % 100 == 0:
        print(running / (step + 1))
"""


@settings(max_examples=60, **SETTINGS)
@given(hypothesmith.from_grammar())
def test_grammar_programs_in_a_step_fix_properties(source):
    body = textwrap.indent(source, "    ") if source.strip() else "    pass\n"
    check_fix_properties("generated.py", STEP.format(body=body.rstrip("\n")), "from_grammar_in_step")


@settings(max_examples=40, **SETTINGS)
@given(hypothesmith.from_grammar())
def test_grammar_programs_after_a_step_fix_properties(source):
    check_fix_properties("generated.py", STEP.format(body="    pass") + source, "from_grammar_after_step")


# ---- known bugs: minimal repros (strict xfail: they start passing when the bug is fixed) -------
LOOP = "import torch\nfor step, x in enumerate(loader):\n    loss = criterion(model(x.cuda()))\n"
BUG_REPROS = {
    # SFL101 unsafe fix: reads of the name are located by text search in the statement
    # (analysis/positions.py), so the first substring match is rewritten. (The proof of
    # fixes/host_read_proof.py needs a criterion's result and reads under a guard or after the loop.)
    "accumulator_read_inside_longer_name": (
        LOOP + "    psnr = loss.item()\n    if step % 10 == 0:\n        print(avg_psnr, psnr)\n", True,
        "print(avg_psnr, float(psnr))",
    ),
    "accumulator_read_after_keyword_of_same_name": (
        LOOP + "    n = loss.item()\n    if step % 10 == 0:\n        pbar.set_postfix(n=n)\n", True,
        "pbar.set_postfix(n=float(n))",
    ),
    "accumulator_name_inside_fstring_text": (
        "import torch\ntotal_loss = 0.0\n" + LOOP[len("import torch\n"):] + "    total_loss += loss.item()\n"
        "print(f\"total_loss={total_loss}\")\n", True,
        "print(f\"total_loss={float(total_loss)}\")",
    ),
    # SFL101 unsafe fix: a receiver split over lines is not found; the edit lands at the statement start.
    "item_call_split_over_lines": (LOOP + "    norm = (loss\n            .item())\n", True, ".detach())"),
    # SFL301 SAFE fix: `import syncfree` goes at column 0 after an import that sits in a block.
    "torchmetrics_import_in_try": (
        "import torch\ntry:\n    import torchmetrics\nexcept ImportError:\n    torchmetrics = None\n"
        "m = torchmetrics.MeanMetric()\nfor x in loader:\n    m.update(model(x.cuda()))\n", False, None,
    ),
    "torchmetrics_import_in_if": (
        "if True:\n    import torch\n    import torchmetrics\n    m = torchmetrics.MeanMetric()\n"
        "    for x in loader:\n        m.update(model(x.cuda()))\n", False, None,
    ),
}


@pytest.mark.parametrize("case", sorted(BUG_REPROS))
def test_known_fix_bug_repros(case):
    text, unsafe, expected_line = BUG_REPROS[case]
    result = fix_text("repro.py", text, _lint, lambda d: unsafe or d.fix.applicability == "safe")
    assert result.applied, "the repro no longer gets a fix at all"
    assert _compile_error(result.fixed, "repro.py") is None, _diff(text, result.fixed)
    if expected_line is not None:
        assert expected_line in result.fixed, _diff(text, result.fixed)
