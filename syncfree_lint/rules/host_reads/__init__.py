"""SFL1xx: device-to-host reads inside a step."""
from syncfree_lint.rules.host_reads import (
    cpu, formatting, item, numpy_read, python_scalar, synchronize, tolist, truthiness,
)

__all__ = ["cpu", "formatting", "item", "numpy_read", "python_scalar", "synchronize", "tolist", "truthiness"]
