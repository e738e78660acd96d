"""Event engines: handlers a training engine fires once per iteration.

pytorch-ignite and the home-made engines that copy it register handlers for named events, with a
decorator (``@trainer.on(Events.ITERATION_COMPLETED)``) or a call
(``trainer.add_event_handler(Events.ITERATION_COMPLETED, log_loss)``); the event may be named by a
string (``"iteration_completed"``). A handler registered for a per-iteration event
(``knowledge.frequency.PER_ITERATION_EVENTS``) runs every step, unless a filter thins it out
(``every=``, ``once=``, ``Events.ITERATION_COMPLETED(every=100)``, which is a call, not a name).
"""
from __future__ import annotations

from typing import Optional, Sequence

import libcst as cst

from syncfree_lint.knowledge import frequency as facts


def per_iteration_event(event: cst.BaseExpression) -> bool:
    """``Events.ITERATION_COMPLETED`` or ``"iteration_completed"``, unfiltered."""
    if isinstance(event, cst.Attribute):
        return event.attr.value in facts.PER_ITERATION_EVENTS
    if isinstance(event, cst.SimpleString):
        value = event.evaluated_value
        return isinstance(value, str) and value.upper() in facts.PER_ITERATION_EVENTS
    return False


def _unfiltered(args: Sequence[cst.Arg]) -> bool:
    return not any(arg.keyword is not None and arg.keyword.value in facts.EVENT_FILTER_KEYWORDS for arg in args)


def per_iteration_handler(node: cst.FunctionDef) -> bool:
    """A function decorated ``@engine.on(<per-iteration event>)``."""
    for decorator in node.decorators:
        call = decorator.decorator
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                and call.func.attr.value in facts.EVENT_DECORATORS and call.args and _unfiltered(call.args) \
                and per_iteration_event(call.args[0].value):
            return True
    return False


def registered_handler(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The handler of ``engine.add_event_handler(<per-iteration event>, handler, ...)``."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in facts.EVENT_REGISTRATIONS) or len(call.args) < 2:
        return None
    event, handler = call.args[0], call.args[1]
    if event.keyword is not None or handler.keyword is not None or event.star or handler.star:
        return None
    return handler.value if per_iteration_event(event.value) and _unfiltered(call.args) else None
