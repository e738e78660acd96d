"""Calls that return a callable running their first argument: ``step = torch.compile(train_step)``
makes ``step(batch)`` run ``train_step``; and the base classes whose methods are never the
project's (``self.m()`` in a subclass of ``dict`` is not looked up in the run). ``analysis.calls``
reads these tables; ``tests/unit/test_knowledge.py`` has rows for them."""
from __future__ import annotations

CALLABLE_WRAPPERS = frozenset({
    "torch.compile", "functools.partial", "torch.jit.script", "torch.func.functionalize", "torch.func.grad",
    "torch.func.vmap", "torch.vmap", "torch.cuda.make_graphed_callables", "torch.autograd.graph.save_on_cpu",
    "functools.wraps", "functools.lru_cache", "functools.cache",
})

#: builtin bases: a method a class inherits from them runs no code of the project
BUILTIN_BASES = frozenset({
    "object", "Exception", "BaseException", "dict", "list", "tuple", "set", "str", "int", "float", "type",
})

#: ``nn.Module`` methods that return the module itself: ``model = Net().to(device)`` holds a ``Net``
MODULE_METHODS_RETURNING_SELF = frozenset({
    "to", "cuda", "cpu", "xpu", "train", "eval", "half", "float", "double", "bfloat16", "type",
    "requires_grad_", "share_memory", "to_empty", "apply", "zero_grad",
})
