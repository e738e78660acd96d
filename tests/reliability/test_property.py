"""Property tests: whatever the source, ``lint_text`` never raises and never yields SFL001.

Sources come from hypothesmith (random programs from Python's grammar, and from libcst's node
types) and from mutations of our own fixtures: statements shuffled within a block, bodies
wrapped in ``if True:`` / ``for _ in range(1):`` / ``with ctx:`` / ``def``, names renamed.
Generated code that is not valid Python is fine: it must come back as SFL000, not as a crash.
"""
import ast
import glob
import keyword
import os
import textwrap

import hypothesmith
import libcst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncfree_lint.config import Config
from syncfree_lint.engine import lint_text

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = sorted(
    glob.glob(os.path.join(ROOT, "fixtures", "rules", "*.py"))
    + glob.glob(os.path.join(ROOT, "fixtures", "loops", "*.py"))
)

SETTINGS = dict(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
COUNTS = {}


def _lint_ok(text, name="generated.py", config=None):
    diagnostics = lint_text(name, text, config or Config())
    internal = [d.format() for d in diagnostics if d.code == "SFL001"]
    assert not internal, "\n".join(internal) + "\n--- source ---\n" + text
    return diagnostics


def _count(key):
    COUNTS[key] = COUNTS.get(key, 0) + 1


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    print("\n[property] examples run: " + ", ".join(f"{k}={v}" for k, v in sorted(COUNTS.items())))


# ---- hypothesmith ------------------------------------------------------------------------
STEP_HEADER = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"


@settings(max_examples=60, **SETTINGS)
@given(hypothesmith.from_grammar())
def test_grammar_programs_never_crash(source):
    _count("from_grammar")
    _lint_ok(source)
    # The pre-filter skips files without tensor evidence: force the full analysis too.
    _lint_ok(STEP_HEADER + source)


@settings(max_examples=60, **SETTINGS)
@given(hypothesmith.from_grammar())
def test_grammar_programs_inside_a_step_never_crash(source):
    _count("from_grammar_in_step")
    body = textwrap.indent(source, "    ") if source.strip() else "    pass\n"
    text = STEP_HEADER + "def training_step(self, batch, batch_idx):\n" + body + "\n"
    text += "for batch in loader:\n    loss = model(batch).sum()\n    loss.backward()\n    training_step(None, batch, 0)\n"
    _lint_ok(text)


@settings(max_examples=40, **SETTINGS)
@given(hypothesmith.from_node(libcst.Module))
def test_libcst_node_programs_never_crash(source):
    _count("from_node")
    _lint_ok(STEP_HEADER + source)


# ---- mutations of the fixtures -----------------------------------------------------------
def _parsable_fixtures():
    out = []
    for path in FIXTURES:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        out.append((os.path.basename(path), text))
    return out


PARSABLE = _parsable_fixtures()


def _blocks(tree):
    """Every statement list in the tree (bodies, orelse, finalbody, handlers' bodies)."""
    out = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                out.append(value)
    return out


def _wrap(kind, body):
    if kind == "if":
        return ast.If(test=ast.Constant(True), body=body, orelse=[])
    if kind == "for":
        return ast.For(
            target=ast.Name("_", ast.Store()),
            iter=ast.Call(ast.Name("range", ast.Load()), [ast.Constant(1)], []),
            body=body, orelse=[], type_comment=None,
        )
    if kind == "while":
        return ast.While(test=ast.Constant(True), body=body + [ast.Break()], orelse=[])
    if kind == "with":
        item = ast.withitem(ast.Call(ast.Name("ctx", ast.Load()), [], []), None)
        return ast.With(items=[item], body=body, type_comment=None)
    return ast.Try(body=body, handlers=[ast.ExceptHandler(None, None, [ast.Pass()])], orelse=[], finalbody=[])


_identifier = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).filter(lambda s: not keyword.iskeyword(s))

mutation = st.one_of(
    st.tuples(st.just("shuffle"), st.integers(0, 10_000), st.randoms(use_true_random=False)),
    st.tuples(st.just("wrap"), st.integers(0, 10_000), st.sampled_from(["if", "for", "while", "with", "try"])),
    st.tuples(st.just("rename"), st.integers(0, 10_000), _identifier),
)


def _mutate(tree, op):
    kind, index, arg = op
    if kind == "rename":
        names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})
        if not names:
            return
        old = names[index % len(names)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == old:
                node.id = arg
            elif isinstance(node, ast.arg) and node.arg == old:
                node.arg = arg
        return
    blocks = _blocks(tree)
    block = blocks[index % len(blocks)]
    if kind == "shuffle":
        arg.shuffle(block)
    else:
        block[:] = [_wrap(arg, list(block))]


@settings(max_examples=100, **SETTINGS)
@given(st.sampled_from(PARSABLE), st.lists(mutation, min_size=1, max_size=8))
def test_mutated_fixtures_never_crash(fixture, ops):
    _count("fixture_mutations")
    name, text = fixture
    tree = ast.parse(text)
    for op in ops:
        _mutate(tree, op)
    ast.fix_missing_locations(tree)
    source = ast.unparse(tree)
    _lint_ok(source, name)
    _lint_ok(source, name, Config(select=("ALL",), report_guarded=True))


@settings(max_examples=30, **SETTINGS)
@given(st.sampled_from(PARSABLE), st.integers(1, 60), st.sampled_from(["if", "for", "while", "with", "try"]))
def test_deeply_wrapped_fixtures_never_crash(fixture, depth, kind):
    _count("deep_wraps")
    name, text = fixture
    tree = ast.parse(text)
    for _ in range(depth):
        tree.body = [_wrap(kind, tree.body)]
    ast.fix_missing_locations(tree)
    _lint_ok(ast.unparse(tree), name)


@pytest.mark.parametrize("name,text", PARSABLE, ids=[n for n, _ in PARSABLE])
def test_fixture_prefixes_never_crash(name, text):
    """Every prefix of a fixture (cut at each line): mostly unfinished, invalid code."""
    lines = text.splitlines(keepends=True)
    for cut in range(len(lines) + 1):
        _lint_ok("".join(lines[:cut]), name)
    _count("fixture_prefixes")
