"""The IPython extension: ``%load_ext syncfree`` registers the ``%%sync_trace`` cell magic.

``%%sync_trace [--steps N] [--warmup K] [--device cuda|stand-in] [--timing] [--out NAME]`` runs
the cell in the notebook's namespace under the tracer (``syncfree.trace``) and prints its host
syncs per source line per optimizer step, lines numbered within the cell as the notebook numbers
them, the ``%%sync_trace`` line being line 1 (``cell:5``).  Steps are
what ``python -m syncfree.trace`` counts: torch's global optimizer step hook ends each one; what
runs before the cell's first ``optimizer.step()`` is set-up; ``--steps N`` stops the cell after N
counted steps.  A cell that never calls ``optimizer.step()`` counts its whole run as one step.
Syncs in functions defined by other cells are shown at their cell (``In[3]:7``).  ``--out NAME``
also stores the :class:`~syncfree.trace.report.TraceResult` as ``NAME`` in the namespace.

``%sync_stand_in on`` (``off``) maps ``"cuda"`` to the CPU stand-in for every following cell, as
the tracer does for a script: a model set up in an earlier cell is then on the device when a later
cell is traced (``trace/session_map.py``).

IPython is imported by nobody here: the shell object is handed in by ``%load_ext``.
"""

from __future__ import annotations

import argparse
import itertools
import linecache
import shlex
from typing import Any, Callable

from .trace.report import display_path, render
from .trace.session import DEVICES, TraceSession
from .trace.session_map import SESSION_MAP
from .trace.steps import StopTrace

_RUNS = itertools.count(1)


class UsageError(Exception):
    """A bad ``%%sync_trace`` line (shown as a message, not a traceback)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # no sys.exit inside a notebook
        raise UsageError(f"%%sync_trace: {message}\n{self.format_usage()}")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="%%sync_trace", description="Trace the cell's host syncs per line per optimizer step.")
    p.add_argument("--steps", type=int, default=None, help="stop the cell after N counted steps")
    p.add_argument("--warmup", type=int, default=0, help="do not count the first K optimizer steps")
    p.add_argument("--device", choices=DEVICES, default=None,
                   help="cuda, or stand-in ('cuda' runs on the CPU stand-in); default: cuda when available")
    p.add_argument("--timing", action="store_true", help="measure the host time blocked per site (CUDA)")
    p.add_argument("--out", metavar="NAME", help="store the result as NAME in the namespace")
    return p


def _cell_source(shell: Any, cell: str) -> str:
    """The cell as Python: IPython's own syntax (``%magic``, ``!cmd``) turned into calls."""
    transform = getattr(shell, "transform_cell", None)
    return transform(cell) if transform is not None else cell


def _namer(shell: Any, cell_file: str) -> Callable[[str], str]:
    """A site's file as the report shows it: ``cell`` for this one, ``In[N]`` for other cells."""
    compiler = getattr(shell, "compile", None)
    formatter = getattr(compiler, "format_code_name", None)

    def name(file: str) -> str:
        if file == cell_file:
            return "cell"
        if formatter is not None:
            try:
                found = formatter(file)
            except Exception:
                found = None
            if found:
                return str(found[1])
        return display_path(file)

    return name


def sync_trace(shell: Any, line: str, cell: str) -> Any:
    """Run ``cell`` traced; print the report.  Returns nothing (the report is the output)."""
    try:
        args = parser().parse_args(shlex.split(line))
        session = TraceSession(
            steps=args.steps, warmup=args.warmup, timing=args.timing, device=args.device, subject="cell"
        )
    except (UsageError, ValueError) as exc:
        print(f"error: {exc}" if isinstance(exc, ValueError) else exc)
        return None
    source = _cell_source(shell, cell)
    cell_file = f"<sync_trace cell {next(_RUNS)}>"
    shown = cell if len(cell.splitlines()) == len(source.splitlines()) else source
    # line 1 is the ``%%sync_trace`` line, as the notebook numbers the cell's lines (and the linter)
    lines = [f"%%sync_trace {line}".rstrip() + "\n", *shown.splitlines(keepends=True)]
    linecache.cache[cell_file] = (sum(map(len, lines)), None, lines, cell_file)
    code = compile("\n" + source, cell_file, "exec")
    error: BaseException | None = None
    with session:
        try:
            exec(code, shell.user_ns)
        except StopTrace:
            pass
        except Exception as exc:  # the cell failed: report what was counted, then the error
            error = exc
    result = session.result(failed=error is not None, whole_run_is_a_step=True)
    if args.out:
        shell.user_ns[args.out] = result
    print(render(result, subject="cell", name=_namer(shell, cell_file)), end="")
    if error is not None:
        show = getattr(shell, "showtraceback", None)
        if show is None:
            raise error
        tb = error.__traceback__
        show(exc_tuple=(type(error), error, tb.tb_next if tb is not None else None))  # from the cell's frame
    return None


def sync_stand_in(line: str) -> None:
    """``%sync_stand_in [on|off]``: map ``"cuda"`` to the stand-in for the following cells, or stop."""
    word = line.strip() or "on"
    if word == "on":
        changed = SESSION_MAP.on()
        print("'cuda' runs on the CPU stand-in in the following cells" + ("" if changed else " (it already did)"))
    elif word == "off":
        changed = SESSION_MAP.off()
        print("'cuda' is CUDA again" if changed else "%sync_stand_in was off")
    else:
        print(f"%sync_stand_in: say on or off, not {word!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext syncfree``: register ``%%sync_trace`` and ``%sync_stand_in``."""

    def magic(line: str, cell: str) -> Any:
        return sync_trace(ipython, line, cell)

    magic.__doc__ = __doc__
    ipython.register_magic_function(magic, magic_kind="cell", magic_name="sync_trace")
    ipython.register_magic_function(sync_stand_in, magic_kind="line", magic_name="sync_stand_in")
