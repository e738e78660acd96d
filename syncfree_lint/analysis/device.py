"""Device evidence: may this file's training code run on an accelerator?

Evidence is read from code, never from comments or docstrings:

- accelerator: a device string (``"cuda"``, ``"mps:0"``), an option that enables one
  (``--cuda``, ``--accel``), ``.cuda()``, ``torch.cuda``, ``torch.accelerator``, or an import of a
  library that places work on accelerators (accelerate, lightning, deepspeed);
- CPU: the CPU named as a device (``device = "cpu"``, ``torch.device("cpu")``, ``default="cpu"``).

A file with CPU evidence and no accelerator evidence is CPU-only. A file with neither is CPU-only
when it is a self-contained script: it runs when executed (a module-level loop or a ``__main__``
block), builds its own model (``nn.Linear(...)``, a local ``nn.Module`` class) and never moves
anything (no ``.to(...)``, no ``device``), since PyTorch keeps tensors on the CPU unless told
otherwise. Any other file may run on an accelerator: library code
(``train_one_epoch(model, loader, optimizer)``) is handed its model and data by a caller that
chooses the device.
"""
from __future__ import annotations

import ast
import re
from typing import FrozenSet, Optional, Set

from syncfree_lint.knowledge import frequency as facts


# Code shapes that are accelerator evidence on their own, searched in the text with comments
# removed (most files end here; the others get the full walk below).
_CLEAR_EVIDENCE = re.compile(
    r"""\.cuda\(|\btorch\.(cuda|accelerator|mps|xpu)\b|['"](cuda|mps|xla|xpu|npu|hpu)(:\d+)?['"]"""
    r"|^\s*(from|import)\s+(accelerate|lightning|pytorch_lightning|lightning_fabric|deepspeed)\b",
    re.MULTILINE,
)
_COMMENT = re.compile(r"^[^'\"\n]*?(#.*)$|^\s*#.*$", re.MULTILINE)


def is_test_module(path: str) -> bool:
    """``tests/...``, ``test_*.py``, ``*_test.py``, ``conftest.py``: code that tests training, not a run of it."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (name.startswith(facts.TEST_MODULE_PREFIX) or name.endswith(facts.TEST_MODULE_SUFFIX)
            or name in facts.TEST_MODULE_NAMES or any(part in facts.TEST_FOLDERS for part in parts[:-1]))


def may_use_accelerator(source: str, tree: Optional[ast.AST]) -> bool:
    """False for a CPU-only file (see the module docstring)."""
    if tree is None:
        return True
    code = _COMMENT.sub(_drop_comment, source) if "#" in source else source
    if _CLEAR_EVIDENCE.search(code):
        return True
    if "cpu" not in code.lower() and not _is_script(tree):
        return True  # library code that never names the CPU: the walk below could only say True
    says_cpu = moves = builds_model = False
    module_classes: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _names_accelerator(node.value.lower()):
                return True
        elif isinstance(node, ast.Attribute):
            if node.attr in facts.ACCELERATOR_ATTRIBUTES:
                return True  # x.cuda(), torch.cuda.synchronize(), torch.accelerator
            if node.attr in ("to", "device"):
                moves = True
        elif isinstance(node, (ast.Name, ast.arg)):
            if (node.id if isinstance(node, ast.Name) else node.arg) == "device":
                moves = True
        elif isinstance(node, ast.keyword) and node.arg == "device":
            moves = True
        elif isinstance(node, ast.Import):
            if any(_accelerator_module(alias.name) for alias in node.names):
                return True
        elif isinstance(node, ast.ImportFrom) and node.module and _accelerator_module(node.module):
            return True
        elif isinstance(node, ast.ClassDef):
            if any(_base_name(base).endswith("Module") for base in node.bases):
                module_classes.add(node.name)
        elif isinstance(node, ast.Call):
            name = _base_name(node.func)
            if name.startswith(("nn.", "torch.nn.")) or name in module_classes:
                builds_model = True
        if not says_cpu and _chooses_cpu(node):
            says_cpu = True
    if says_cpu:
        return False
    return moves or not builds_model or not _is_script(tree)


def named_accelerators(tree: ast.AST) -> FrozenSet[str]:
    """The accelerator families this code names (``"cuda"``, ``"mps"``, ...), from device strings,
    options (``--cuda``), attributes (``x.cuda()``, ``torch.mps``) and imports; ``"any"`` for an
    API or library that picks one at run time (``torch.accelerator``, accelerate, lightning)."""
    named: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.lower()
            if text.startswith("-"):
                words = text.lstrip("-").replace("-", "_").split("_")
                named.update(w for w in words if w in facts.ACCELERATOR_DEVICES)
                if any(w in facts.ACCELERATOR_OPTION_WORDS and w not in facts.ACCELERATOR_DEVICES for w in words):
                    named.add("any")
            elif text.split(":", 1)[0] in facts.ACCELERATOR_DEVICES:
                named.add(text.split(":", 1)[0])
        elif isinstance(node, ast.Attribute) and node.attr in facts.ACCELERATOR_ATTRIBUTES:
            named.add(node.attr if node.attr in facts.ACCELERATOR_DEVICES else "any")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if any(module == cuda or module.startswith(cuda + ".") for cuda in facts.CUDA_ONLY_MODULES):
                    named.add("cuda")
                elif _accelerator_module(module):
                    named.add("any")
    return frozenset(named)


def _is_script(tree: ast.AST) -> bool:
    """A script runs when executed (a loop at module level, or ``if __name__ == "__main__":``);
    a module of definitions is library code, whatever it builds."""
    for statement in getattr(tree, "body", ()):
        if isinstance(statement, (ast.For, ast.While, ast.AsyncFor)):
            return True
        if isinstance(statement, ast.If) and "__main__" in ast.dump(statement.test):
            return True
    return False


def _drop_comment(match: "re.Match[str]") -> str:
    """A line without its comment (lines with quotes before ``#`` are kept whole: the ``#`` may
    be inside a string)."""
    whole = match.group(0)
    comment = match.group(1)
    return whole[: len(whole) - len(comment)] if comment is not None else ""


def _is_cpu(node: Optional[ast.AST]) -> bool:
    """``"cpu"``, ``"cpu:0"`` or ``torch.device("cpu")``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.lower() in ("cpu", "cpu:0")
    if isinstance(node, ast.Call) and _base_name(node.func).endswith("device") and node.args:
        return _is_cpu(node.args[0])
    return False


def _chooses_cpu(node: ast.AST) -> bool:
    """The CPU chosen as *the* device: ``device = "cpu"``, ``torch.device("cpu")``,
    ``def main(device="cpu")``, ``add_argument("--device", default="cpu")``. Moving a value to
    the host (``.to("cpu")``, ``map_location="cpu"``) is not a choice of device."""
    if isinstance(node, ast.Call):
        name = _base_name(node.func)
        if name.endswith("device") and node.args and _is_cpu(node.args[0]):
            return True  # torch.device("cpu")
        if name.endswith("add_argument") and any(
            isinstance(a, ast.Constant) and isinstance(a.value, str) and "device" in a.value for a in node.args
        ):
            return any(k.arg == "default" and _is_cpu(k.value) for k in node.keywords)
        return False
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return _is_cpu(node.value) and any("device" in _base_name(t).rsplit(".", 1)[-1].lower() for t in targets)
    if isinstance(node, ast.arguments):
        params = node.posonlyargs + node.args
        defaults = [None] * (len(params) - len(node.defaults)) + list(node.defaults)
        pairs = list(zip(params, defaults)) + list(zip(node.kwonlyargs, node.kw_defaults))
        return any("device" in param.arg.lower() and _is_cpu(default) for param, default in pairs)
    return False


def _names_accelerator(text: str) -> bool:
    """``"cuda"``, ``"cuda:1"``, ``"--cuda"``, ``"--use-gpu"``; not prose."""
    if text.startswith("-"):
        words = text.lstrip("-").replace("-", "_").split("_")
        return any(word in facts.ACCELERATOR_OPTION_WORDS for word in words)
    return text.split(":", 1)[0] in facts.ACCELERATOR_DEVICES


def _base_name(expr: ast.AST) -> str:
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        parts.append(expr.id)
    return ".".join(reversed(parts))


def _accelerator_module(name: str) -> bool:
    return any(name == module or name.startswith(module + ".") for module in facts.ACCELERATOR_MODULES)


#: ``torch.set_default_device("cuda")``, ``torch.set_default_tensor_type(torch.cuda.FloatTensor)``
#: (or its string form): factories without ``device=`` then build on the accelerator
_DEFAULT_ON_ACCELERATOR = re.compile(
    r"set_default_device\(\s*(?:torch\.device\(\s*)?['\"](?:cuda|mps|xpu|xla|npu|hpu)"
    r"|set_default_tensor_type\(\s*['\"]?torch\.cuda\."
)


def default_device_is_accelerator(source: str) -> bool:
    """The file makes an accelerator the default device (anywhere in its code, comments aside)."""
    if "set_default_" not in source:
        return False
    code = _COMMENT.sub(_drop_comment, source) if "#" in source else source
    return _DEFAULT_ON_ACCELERATOR.search(code) is not None

