"""The shape of the runtime's code: dependencies between ``syncfree`` modules go one way.

Every import counts, also those inside functions (a lazy import still makes two modules depend on
each other); only imports under ``if TYPE_CHECKING:`` are left out.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parents[2] / "runtime" / "syncfree"


def module_name(path: Path) -> str:
    parts = ["syncfree", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: Set[str]) -> Set[str]:
    """The syncfree modules ``path`` imports anywhere in its code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test)
                 for n in ast.walk(node)}
    found: Set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "syncfree":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "syncfree")
    return found


def graph() -> Dict[str, Set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in imports_of(path, set(paths)) if m in paths and m != name} for name, path in paths.items()}


def cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    found: List[List[str]] = []
    state: Dict[str, int] = {}

    def visit(node: str, stack: List[str]) -> None:
        state[node] = 1
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target, stack + [target])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    return found


def test_no_import_cycles_among_runtime_modules() -> None:
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_checker_finds_a_lazy_import_cycle(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from syncfree.b import x\n")
    b.write_text("def f():\n    from syncfree import a\n")
    modules = {"syncfree.a", "syncfree.b"}
    edges = {"syncfree.a": imports_of(a, modules), "syncfree.b": imports_of(b, modules)}
    assert cycles(edges) == [["syncfree.a", "syncfree.b", "syncfree.a"]]


def test_layers_go_one_way() -> None:
    """state <- distributed <- agreement <- lifecycle <- metric <- collection; host and checkpoint know
    no metric."""
    edges = graph()
    assert edges["syncfree.state"] == set()
    assert edges["syncfree.host"] == set()
    assert edges["syncfree.checkpoint"] <= {"syncfree.state"}
    assert edges["syncfree.distributed"] <= {"syncfree.state"}
    assert edges["syncfree.agreement"] <= {"syncfree.distributed"}
    assert edges["syncfree.lifecycle"] <= {"syncfree.state", "syncfree.distributed", "syncfree.agreement"}
    assert "syncfree.collection" not in edges["syncfree.metric"]
    assert "syncfree" not in set().union(*(e for name, e in edges.items() if name != "syncfree"))


def test_no_private_field_reaching_across_modules() -> None:
    """Other modules use a metric's public interface (``state``, ``process_group``), not its privates."""
    banned = ("._synced", "_verified_layouts", "._reductions", "._metrics", "._default_group")
    offenders = []
    for path in PACKAGE.glob("*.py"):
        if path.stem in ("metric", "collection", "lifecycle", "guard", "pytest_plugin"):
            continue  # the owners of those fields (guard and its plugin have nothing of them)
        text = path.read_text(encoding="utf-8")
        offenders += [f"{path.name}: {b}" for b in banned if b in text]
    assert not offenders, offenders
