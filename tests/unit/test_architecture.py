"""The shape of the linter's code: no import cycles between modules (type-only imports aside),
no module over 500 lines, rules and fixes that see the walk only as ``SemanticModel``, and imports
that follow the package directions (entry points -> engine -> rules/fixes -> analysis ->
knowledge/diagnostic/edits)."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parents[2] / "syncfree_lint"
MAX_LINES = 500
# A ratchet: modules known to be too long, each with the work that splits it. The list only shrinks.
KNOWN_LONG: Dict[str, str] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def top_level_imports(path: Path) -> Set[str]:
    """Modules of this package imported when ``path`` is imported (not under TYPE_CHECKING, not
    inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: Set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            continue
        for inner in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ():
            if isinstance(inner, ast.ImportFrom) and inner.module and inner.module.startswith("syncfree_lint"):
                found.add(inner.module)
                found.update(f"{inner.module}.{alias.name}" for alias in inner.names)
            elif isinstance(inner, ast.Import):
                found.update(alias.name for alias in inner.names if alias.name.startswith("syncfree_lint"))
    return found


def graph() -> Dict[str, Set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in top_level_imports(path) if m in modules and m != name} for name, path in modules.items()}


def test_no_import_cycles() -> None:
    edges = graph()
    cycles: List[List[str]] = []
    state: Dict[str, int] = {}

    def visit(node: str, stack: List[str]) -> None:
        state[node] = 1
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target):] + [target] if target in stack else [node, target])
            elif target not in state:
                visit(target, stack + [target])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_checker_sees_imports() -> None:
    edges = graph()
    assert "syncfree_lint.analysis.filefacts" in edges["syncfree_lint.analysis.summarize"]
    assert "syncfree_lint.analysis.module" not in edges["syncfree_lint.analysis.summarize"]  # type-only


def test_no_module_over_500_lines() -> None:
    long = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    new = {path: n for path, n in long.items() if path not in KNOWN_LONG}
    assert not new, f"modules over {MAX_LINES} lines: {new}"
    fixed = set(KNOWN_LONG) - set(long)
    assert not fixed, f"no longer over {MAX_LINES} lines, take them off KNOWN_LONG: {sorted(fixed)}"


# ---------------------------------------------------------------------- rules ask the semantic model
def _ctx_uses(tree: ast.AST) -> List[ast.AST]:
    """Every ``ctx.<name>`` and every ``getattr(ctx, ...)``-like reach in a module."""
    found: List[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ctx":
            found.append(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr", "vars") \
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "ctx":
            found.append(node)
    return found


def _rule_and_fix_modules() -> List[Path]:
    return sorted([*(PACKAGE / "rules").rglob("*.py"), *(PACKAGE / "fixes").rglob("*.py")])


def test_rules_and_fixes_ask_only_the_semantic_model() -> None:
    """Rules and fix helpers see the walk as ``analysis.model.SemanticModel``: every ``ctx.<name>``
    they use is a member of the protocol, never one of the walker's internals."""
    from syncfree_lint.analysis.model import SemanticModel

    members = {name for name in vars(SemanticModel) if not name.startswith("_")}
    bad: List[str] = []
    seen: Set[str] = set()
    for path in _rule_and_fix_modules():
        for use in _ctx_uses(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(PACKAGE.parent)}:{use.lineno}"
            if isinstance(use, ast.Attribute):
                seen.add(use.attr)
                if use.attr not in members:
                    bad.append(f"{where}: ctx.{use.attr}")
            else:
                bad.append(f"{where}: {ast.unparse(use)}")
    assert not bad, "rules/fixes reach past SemanticModel (add a question to analysis/model.py instead):\n" + "\n".join(bad)
    assert {"report", "kind", "qualname", "state"} <= seen  # the checker does see the rules' questions


def test_every_ctx_parameter_is_typed_as_the_model() -> None:
    """So that mypy checks rule bodies against the protocol (an untyped ``ctx`` is ``Any``)."""
    untyped: List[str] = []
    for path in _rule_and_fix_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                    annotation = getattr(arg, "annotation", None)
                    if arg.arg == "ctx" and (annotation is None or "SemanticModel" not in ast.unparse(annotation)):
                        untyped.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not untyped, "ctx parameters not typed `SemanticModel`:\n" + "\n".join(untyped)


def test_the_walker_answers_every_question() -> None:
    from syncfree_lint.analysis.model import SemanticModel
    from syncfree_lint.analysis.module import ModuleAnalysis

    members = {name for name in vars(SemanticModel) if not name.startswith("_")}
    missing = sorted(name for name in members if not callable(getattr(ModuleAnalysis, name, None)))
    assert not missing, f"SemanticModel members ModuleAnalysis lacks: {missing}"


# ---------------------------------------------------------------------- package directions
#: entry points -> engine -> rules/fixes -> analysis -> knowledge/diagnostic/edits; a layer imports
#: only its own and lower ranks. Modules not named here (config, cache, output, ...) are not ranked.
RANK: Dict[str, int] = {
    "cli": 4, "lsp": 4, "flake8_plugin": 4, "__main__": 4,
    "engine": 3,
    "rules": 2, "fixes": 2,
    "analysis": 1,
    "knowledge": 0, "diagnostic": 0, "edits": 0,
}
#: the lower layers, closed: what each may import of the package at all
ALLOWED: Dict[str, Set[str]] = {
    "analysis": {"analysis", "knowledge", "diagnostic", "edits"},
    "knowledge": {"knowledge"},
    "diagnostic": set(),
    "edits": set(),
}


def _part(module: str) -> str:
    """The package part a module belongs to: ``syncfree_lint.analysis.module`` -> ``analysis``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def all_imports(path: Path) -> Set[str]:
    """Every module of this package that ``path`` names in an import, anywhere in the file
    (under TYPE_CHECKING and inside functions too: a direction holds for types and lazy imports)."""
    found: Set[str] = set()
    package = module_name(path).split(".") if path.name == "__init__.py" else module_name(path).split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - (node.level - 1)] + ([base] if base else []))
            if base.startswith("syncfree_lint"):
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("syncfree_lint"))
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    return {m for m in found if m in modules}


def direction_violations(imports: Dict[str, Set[str]]) -> List[str]:
    bad = []
    for source, targets in sorted(imports.items()):
        part = _part(source)
        for target in sorted(targets):
            other = _part(target)
            if other == part or not other:
                continue
            if part in ALLOWED and other not in ALLOWED[part]:
                bad.append(f"{source} -> {target} ({part} may import only {sorted(ALLOWED[part]) or 'nothing of the package'})")
            elif part in RANK and other in RANK and RANK[other] > RANK[part]:
                bad.append(f"{source} -> {target} ({part} is below {other})")
    return bad


def test_package_directions() -> None:
    imports = {module_name(path): all_imports(path) for path in PACKAGE.rglob("*.py")}
    bad = direction_violations(imports)
    assert not bad, "imports against the package directions:\n" + "\n".join(bad)


def test_the_direction_check_sees_violations() -> None:
    assert direction_violations({"syncfree_lint.analysis.x": {"syncfree_lint.fixes.plan"}})
    assert direction_violations({"syncfree_lint.analysis.x": {"syncfree_lint.rules.base"}})
    assert direction_violations({"syncfree_lint.knowledge.x": {"syncfree_lint.diagnostic"}})
    assert direction_violations({"syncfree_lint.rules.x": {"syncfree_lint.engine"}})
    assert not direction_violations({"syncfree_lint.rules.x": {"syncfree_lint.analysis.model", "syncfree_lint.fixes.plan"}})
    assert "syncfree_lint.analysis.module" in all_imports(PACKAGE / "analysis" / "summarize.py")  # type-only, still seen
