"""Container methods that keep a value without reading it.

Read by SFL102 (``rules/host_reads/cpu.py``): a host copy passed to one of these is kept for
later, so a non-blocking copy may be suggested there (read after a later sync), where a copy
read at once must stay blocking. Checked by ``tests/unit/test_knowledge.py``.
"""
from __future__ import annotations

#: ``list.append``/``insert``, ``deque.appendleft``, ``queue.put``, ``set.add``: store the object as it is
KEEPING_METHODS = frozenset({"append", "appendleft", "insert", "put", "put_nowait", "add"})
