"""Every rule carries its own examples, and they are tests (as Fixit's VALID/INVALID are): each
INVALID snippet is reported with the rule's code and each VALID one is not, linted through the real
engine; the `## Example` block of the rule's documentation is reported and its `## Use instead`
block is not. The text pre-filter is built from the rules' own words, so an INVALID snippet always
reaches the rule."""
from __future__ import annotations

import re
import textwrap
from typing import List, Optional, Type

import pytest

from syncfree_lint import engine, prefilter
from syncfree_lint.cli import list_rules
from syncfree_lint.config import Config
from syncfree_lint.knowledge.evidence import ANALYSIS_WORDS
from syncfree_lint.knowledge.syncing_api import DATA_DEPENDENT_FUNCTIONS
from syncfree_lint.rules import ALL_RULES, DEFAULTS
from syncfree_lint.rules.base import REGISTRY, Rule

# Doc blocks are fragments: they get the imports a reader would have (nothing that is evidence of a
# step or a device tensor by itself).
DOC_PREAMBLE = """\
import time
import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torchmetrics import MeanMetric
from torchmetrics.classification import MulticlassAccuracy
"""
_BLOCK = re.compile(r"^## (?P<section>[^\n]+)\n(?P<body>.*?)(?=^## |\Z)", re.S | re.M)
_PYTHON = re.compile(r"```python\n(?P<code>.*?)```", re.S)
NO_CODE = {"SFL001"}  # the tool's own error: nothing a user writes triggers it


def codes(rule: Type[Rule], text: str) -> List[str]:
    """The codes the engine reports for ``text`` with only ``rule`` selected (SFL000 always runs)."""
    config = Config(select=(rule.code,))
    return [d.code for d in engine.lint_text("example.py", text, config, fixes=False)]


def doc_block(rule: Type[Rule], section: str) -> Optional[str]:
    """The first python block of one section of the rule's documentation."""
    for match in _BLOCK.finditer(rule.doc):
        if match.group("section").strip() == section:
            code = _PYTHON.search(match.group("body"))
            return textwrap.dedent(code.group("code")) if code else None
    return None


def examples(kind: str):
    return [
        pytest.param(rule, textwrap.dedent(text), id=f"{rule.code}-{kind}-{index}")
        for rule in ALL_RULES for index, text in enumerate(getattr(rule, kind))
    ]


@pytest.mark.parametrize("rule, text", examples("invalid"))
def test_invalid_example_is_reported(rule, text):
    assert rule.code in codes(rule, text), f"{rule.code} does not report its INVALID example:\n{text}"


@pytest.mark.parametrize("rule, text", examples("valid"))
def test_valid_example_is_not_reported(rule, text):
    found = codes(rule, text)
    assert rule.code not in found, f"{rule.code} reports its VALID example:\n{text}"
    assert "SFL000" not in found, f"the VALID example of {rule.code} does not parse:\n{text}"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_every_rule_has_examples_of_both_kinds(rule):
    if rule.code in NO_CODE:
        return
    assert rule.invalid, f"{rule.code} has no INVALID example"
    assert rule.valid, f"{rule.code} has no VALID example"


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.code not in NO_CODE], ids=lambda rule: rule.code)
def test_doc_example_is_reported_and_use_instead_is_not(rule):
    example = doc_block(rule, "Example")
    assert example is not None, f"{rule.code}'s doc has no python block under ## Example"
    assert rule.code in codes(rule, DOC_PREAMBLE + example), f"{rule.code} does not report its doc's Example:\n{example}"
    fixed = doc_block(rule, "Use instead")
    if fixed is not None:  # some rules say what to do in words
        found = codes(rule, DOC_PREAMBLE + fixed)
        assert rule.code not in found and "SFL000" not in found, f"{rule.code} reports its doc's Use instead:\n{fixed}"


@pytest.mark.parametrize("rule, text", examples("invalid"))
def test_invalid_example_passes_the_prefilter_on_declared_words(rule, text):
    """The words that let the file through are the rule's own or the analysis' own, so a rule
    that needs a word nobody declares cannot exist."""
    declared = (*ANALYSIS_WORDS, *rule.evidence)
    assert any(word in text for word in declared), f"{rule.code}: no declared evidence word in its INVALID example"
    assert prefilter.could_hold_finding(text, ())


def test_prefilter_is_the_union_of_the_declared_words():
    declared = set(ANALYSIS_WORDS).union(*(rule.evidence for rule in ALL_RULES))
    assert set(prefilter.EVIDENCE) == declared
    assert not prefilter.could_hold_finding("def main():\n    print('hello')\n", ())


def test_every_message_variant_is_listed_and_explained():
    listed = list_rules()
    for rule in ALL_RULES:
        text = rule.explain()
        for template in rule.messages.values():
            assert template in text, f"{rule.code}: --explain does not show {template!r}"
            assert template.split(";")[0] in listed, f"{rule.code}: --list-rules does not show {template!r}"


def test_a_rule_joins_the_registry_when_defined_and_codes_are_unique():
    assert sorted(REGISTRY) == [rule.code for rule in ALL_RULES]
    with pytest.raises(TypeError, match="SFL101 is taken"):
        type("Twin", (Rule,), {"code": "SFL101", "name": "twin", "messages": {"default": "x"}, "doc": ""})
    with pytest.raises(TypeError, match="no 'default' message"):
        type("Bare", (Rule,), {"code": "SFL999", "name": "bare", "messages": {"other": "x"}, "doc": ""})
    assert "SFL999" not in REGISTRY


def test_unknown_message_key_says_where_to_declare_it():
    rule = REGISTRY["SFL102"]
    assert rule.format_message("kept", call=".to('cpu')").startswith("`.to('cpu')`")
    with pytest.raises(KeyError, match="declare it in the rule's `messages`"):
        rule.format_message("nope")


@pytest.mark.parametrize("line, kept", [
    ("preds.append(out.argmax(-1).cpu())", True),
    ("buffer[step] = out.to('cpu')", True),
    ("scores = out.cpu().numpy()", False),
    ("print(out.cpu())", False),
    ("host = out.cpu()", False),
])
def test_cpu_copy_suggests_non_blocking_only_for_a_kept_copy(line: str, kept: bool) -> None:
    """A non-blocking copy read at once races; only a copy kept for later may be non-blocking."""
    text = textwrap.dedent(f"""\
        import torch

        def evaluate(model, loader, preds, buffer):
            for step, (x, y) in enumerate(loader):
                out = model(x.cuda())
                {line}
        """)
    found = [d for d in engine.lint_text("t.py", text, Config()) if d.code == "SFL102"]
    assert len(found) == 1, found
    assert ("read them only after a later sync" in found[0].message) is kept, found[0].message
    assert ("would race" in found[0].message) is not kept, found[0].message


@pytest.mark.parametrize("rule, text", examples("invalid"))
def test_invalid_example_holds_a_word_the_rule_requires(rule, text):
    """A rule is left out of a file without any of its ``requires`` words, so every file it reports holds one."""
    assert not rule.requires or any(word in text for word in rule.requires), rule.code


def test_a_rule_is_left_out_only_where_none_of_its_required_words_is():
    enabled = Config().enabled_codes(DEFAULTS)
    plain = {rule.code for rule in engine._rule_instances(enabled, "import torch\nx = torch.ones(2)\n")}
    assert "SFL501" not in plain and "SFL110" not in plain and "SFL101" in plain
    assert "SFL501" in {rule.code for rule in engine._rule_instances(enabled, "dist.all_reduce(acc)\n")}
    nonzero = next(rule for rule in ALL_RULES if rule.code == "SFL201")
    assert all(any(word in name.rsplit(".", 1)[-1] for word in nonzero.requires) for name in DATA_DEPENDENT_FUNCTIONS)
