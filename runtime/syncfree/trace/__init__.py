"""``python -m syncfree.trace``: run an unmodified training script and count its host syncs per
source line per optimizer step, on CUDA or (without one) on the guard's CPU stand-in; ``--lint``
joins the count with syncfree-lint's findings.  See ``cli`` for the options."""

from .cli import main

__all__ = ["main"]
