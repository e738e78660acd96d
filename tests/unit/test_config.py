"""Configuration: selection by prefix, pyproject discovery, clear errors."""
import pytest

from syncfree_lint.config import Config, ConfigError, config_from_table, load_config
from syncfree_lint.rules import DEFAULTS

KNOWN = list(DEFAULTS)


def test_default_selection_leaves_opt_in_rules_off():
    enabled = Config().enabled_codes(DEFAULTS)
    assert "SFL101" in enabled and "SFL501" in enabled
    assert "SFL402" not in enabled


def test_prefix_select_ignore_and_specificity():
    assert Config(select=("SFL1",)).enabled_codes(DEFAULTS) == {c for c in DEFAULTS if c.startswith("SFL1")}
    enabled = Config(select=("ALL",), ignore=("SFL1",), extend_select=("SFL101",)).enabled_codes(DEFAULTS)
    assert "SFL101" in enabled and "SFL102" not in enabled and "SFL402" in enabled
    assert "SFL201" not in Config(ignore=("SFL2",)).enabled_codes(DEFAULTS)


def test_unknown_key_and_bad_values_are_errors():
    with pytest.raises(ConfigError, match="unknown key 'selct'"):
        config_from_table({"selct": ["SFL1"]}, "pyproject.toml", ".", KNOWN)
    with pytest.raises(ConfigError, match="must be a list"):
        config_from_table({"select": "SFL1"}, "pyproject.toml", ".", KNOWN)
    with pytest.raises(ConfigError, match="unknown rule code"):
        config_from_table({"ignore": ["E501"]}, "pyproject.toml", ".", KNOWN)
    with pytest.raises(ConfigError, match="true or false"):
        config_from_table({"report-guarded": "yes"}, "pyproject.toml", ".", KNOWN)


def test_pyproject_found_walking_up(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.syncfree-lint]\nignore = ["SFL107"]\nstep-functions = ["my_step"]\n'
        'per-file-ignores = {"tests/*" = ["SFL1"]}\nexclude = ["legacy"]\n'
    )
    sub = tmp_path / "pkg" / "deep"
    sub.mkdir(parents=True)
    config = load_config(None, [str(sub)], KNOWN)
    assert config.ignore == ("SFL107",)
    assert "my_step" in config.all_step_functions
    assert config.ignored_for(str(tmp_path / "tests" / "test_x.py")) == ("SFL1",)
    assert config.is_excluded(str(tmp_path / "legacy"))
    assert config.is_excluded(str(tmp_path / ".venv"))
    assert not config.is_excluded(str(tmp_path / "pkg"))


def test_pyproject_without_section_is_skipped(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert load_config(None, [str(tmp_path)], KNOWN).ignore == ()
