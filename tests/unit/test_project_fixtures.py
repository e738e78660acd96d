"""Project fixtures: the same findings whether a project is linted whole or file by file.

Each folder of `fixtures/projects/` is its own project (it holds a `pyproject.toml`). Its
`# expect:` markers must hold when the folder is linted in one run, and when each file is linted
alone with the project read for context, as flake8, pre-commit and editors hand files over. Without
the project (`project=False`), a helper reached only from another file's step is not reported,
which shows the context is what finds it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest
from test_fixtures import compare, expectations

from syncfree_lint import engine
from syncfree_lint.config import Config

PROJECTS = Path(__file__).resolve().parents[2] / "fixtures" / "projects"
PROJECT_DIRS = sorted(p for p in PROJECTS.iterdir() if p.is_dir())
FILES = [(project, path) for project in PROJECT_DIRS for path in sorted(project.rglob("*.py"))]


def found_in(result: engine.RunResult) -> Dict[Path, Set[Tuple[int, str]]]:
    found: Dict[Path, Set[Tuple[int, str]]] = {}
    for diagnostic in result.diagnostics:
        found.setdefault(Path(diagnostic.path).resolve(), set()).add((diagnostic.line, diagnostic.code))
    return found


@pytest.fixture(scope="module")
def whole_runs() -> Dict[Path, Dict[Path, Set[Tuple[int, str]]]]:
    return {project: found_in(engine.run([str(project)], Config())) for project in PROJECT_DIRS}


def test_there_are_projects_with_positives_and_negatives() -> None:
    assert len(PROJECT_DIRS) >= 2
    expected = [expectations(path) for _, path in FILES]
    assert sum(len(pos) for pos, _ in expected) >= 5
    assert sum(len(neg) for _, neg in expected) >= 15


@pytest.mark.parametrize("project,path", FILES, ids=lambda v: v.name if isinstance(v, Path) else str(v))
def test_whole_project(project: Path, path: Path, whole_runs) -> None:
    problems = compare(path, whole_runs[project].get(path.resolve(), set()))
    assert not problems, f"{path.name} (project linted whole) disagrees with its markers:\n" + "\n".join(problems)


@pytest.mark.parametrize("project,path", FILES, ids=lambda v: v.name if isinstance(v, Path) else str(v))
def test_file_alone_with_its_project(project: Path, path: Path) -> None:
    result = engine.run([str(path)], Config(), project=True)
    problems = compare(path, found_in(result).get(path.resolve(), set()))
    assert not problems, f"{path.name} (linted alone) disagrees with its markers:\n" + "\n".join(problems)


def test_without_the_project_a_helper_reached_from_another_file_is_not_seen() -> None:
    helper = PROJECTS / "library_style" / "helpers" / "reporting.py"
    expected, _ = expectations(helper)
    assert expected, "the helper fixture must expect a finding"
    alone = found_in(engine.run([str(helper)], Config(), project=False)).get(helper.resolve(), set())
    assert alone == set()


def test_reach_names_the_step_loop_and_the_call(whole_runs) -> None:
    helper = PROJECTS / "library_style" / "helpers" / "reporting.py"
    result = engine.run([str(helper)], Config(), project=True)
    [diagnostic] = [d for d in result.diagnostics if d.code == "SFL101"]
    whats = [what for _, what in diagnostic.reach]
    wheres: List[str] = [where for where, _ in diagnostic.reach]
    assert whats == ["step loop (iterates a data loader)", "reduce_for_logging()"]
    assert wheres[0].endswith("engine_loop.py:12") and wheres[1].endswith("engine_loop.py:19")
