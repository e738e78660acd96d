"""The unit tests' way to lint a small project written for the test: files into ``tmp_path``, the
whole run over the folder, findings as (file name, line, code)."""
from __future__ import annotations

import textwrap
from typing import Dict, List, Tuple

from syncfree_lint import engine
from syncfree_lint.config import Config


def lint_files(tmp_path, files: Dict[str, str]) -> List[Tuple[str, int, str]]:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = engine.run([str(tmp_path)], Config(), jobs=1)
    return sorted((d.path.rsplit("/", 1)[-1], d.line, d.code) for d in result.diagnostics)
