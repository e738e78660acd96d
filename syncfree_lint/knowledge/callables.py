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
    "requires_grad_", "share_memory", "to_empty", "apply",
})
#: methods that return their object by convention, not by torch: an estimator's ``fit`` (scikit-learn
#: and the scalers written after it, ``scaler = Scaler().fit(x)``)
METHODS_RETURNING_SELF_BY_CONVENTION = frozenset({"fit"})

#: how the methods of a callback protocol are named across frameworks and home-grown trainers
#: (``on_batch_end``, fastai's ``after_batch``, mmengine's ``before_train_iter``): a call of one on an
#: object of unknown class (``for cb in self.callbacks: cb.on_batch_end(self, out)``) runs every
#: override of it in the project, when a project class declares it with a do-nothing body
HOOK_METHOD_PREFIXES = ("on_", "before_", "after_")

#: ``torch.autograd.Function`` and its aliases: ``Cls.apply(x)`` runs ``Cls.forward(ctx, x)`` now and
#: ``Cls.backward(ctx, grad)`` in the step's backward pass (``analysis.autograd_functions``)
AUTOGRAD_FUNCTION_BASES = frozenset({
    "torch.autograd.Function", "torch.autograd.function.Function", "torch.autograd.function.InplaceFunction",
})
#: the methods ``apply`` runs, each with ``ctx`` first (never passed by the caller)
AUTOGRAD_FUNCTION_METHODS = ("forward", "backward")
