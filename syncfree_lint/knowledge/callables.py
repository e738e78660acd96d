"""Calls that return a callable running their first argument: ``step = torch.compile(train_step)``
makes ``step(batch)`` run ``train_step``. ``analysis.calls`` reads this table;
``tests/unit/test_knowledge.py`` has rows for it."""
from __future__ import annotations

CALLABLE_WRAPPERS = frozenset({
    "torch.compile", "functools.partial", "torch.jit.script", "torch.func.functionalize", "torch.func.grad",
    "torch.func.vmap", "torch.vmap", "torch.cuda.make_graphed_callables", "torch.autograd.graph.save_on_cpu",
    "functools.wraps", "functools.lru_cache", "functools.cache",
})
