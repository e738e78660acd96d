"""docs/rules.md is generated from the rules' metadata and must match it."""
from pathlib import Path

from syncfree_lint.docs import REGENERATE, anchor, main, render_rules_markdown
from syncfree_lint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "rules.md"


def test_docs_rules_md_is_up_to_date():
    assert PAGE.is_file(), f"docs/rules.md is missing; generate it with `{REGENERATE}` from the repository root"
    assert PAGE.read_text(encoding="utf-8") == render_rules_markdown(), (
        f"docs/rules.md is stale (a rule's code, name, message, doc or fix changed); "
        f"regenerate it with `{REGENERATE}` from the repository root"
    )


def test_page_has_every_rule_in_the_table_and_a_section():
    text = render_rules_markdown()
    for rule in ALL_RULES:
        assert f"| [{rule.code}](#{anchor(rule)}) | `{rule.name}` |" in text
        assert f'<a id="{anchor(rule)}"></a>' in text
        assert f"## {rule.code} ({rule.name})" in text
    assert "| off (opt-in) |" in text  # SFL402
    assert "\n## What it does" not in text  # the rules' headings sit one level below the rule's


def test_output_links_point_at_the_sections():
    try:
        from syncfree_lint.output.formats import rule_url
    except ImportError:  # the output formats land separately
        return
    text = render_rules_markdown()
    for rule in ALL_RULES:
        fragment = rule_url(rule.code).rsplit("#", 1)[1]
        assert f'<a id="{fragment}"></a>' in text


def test_write_and_check(tmp_path, capsys):
    page = tmp_path / "rules.md"
    assert main(["--check", str(page)]) == 1
    assert REGENERATE in capsys.readouterr().err
    assert main(["--write", str(page)]) == 0
    assert main(["--check", str(page)]) == 0
    page.write_text(page.read_text() + "edited\n")
    assert main(["--check", str(page)]) == 1
