"""Event engines: handlers a training engine fires once per iteration.

pytorch-ignite and the home-made engines that copy it register handlers for named events, with a
decorator (``@trainer.on(Events.ITERATION_COMPLETED)``) or a call
(``trainer.add_event_handler(Events.ITERATION_COMPLETED, log_loss)``); the event may be named by a
string (``"iteration_completed"``). A handler registered for a per-iteration event
(``knowledge.frequency.PER_ITERATION_EVENTS``) runs every step, unless a filter thins it out
(``every=``, ``once=``, ``Events.ITERATION_COMPLETED(every=100)``, which is a call, not a name).

A project's own event bus names its events by strings or constants: ``@bus.on("critic_updated")`` (or
``bus.subscribe("critic_updated", fn)``) registers a handler, ``bus.emit("critic_updated", loss=loss)`` runs the
handlers of that name with those arguments. The handlers go in the file's facts under ``EVENT_KEY + name``
(``named_event``, ``named_registration``), and an emit is a call of that key (``emitted_event``), so the run joins
them across files: a handler runs as often as the code that emits its name.
"""
from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

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
    return per_iteration_engine(node) is not None


def per_iteration_engine(node: cst.FunctionDef) -> Optional[cst.BaseExpression]:
    """The engine of ``@engine.on(<per-iteration event>)`` on ``node`` (it calls the handler with itself), or None."""
    for decorator in node.decorators:
        call = decorator.decorator
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                and call.func.attr.value in facts.EVENT_DECORATORS and call.args and _unfiltered(call.args) \
                and per_iteration_event(call.args[0].value):
            return call.func.value
    return None


def registered_handler(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The handler of ``engine.add_event_handler(<per-iteration event>, handler, ...)``."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in facts.EVENT_REGISTRATIONS) or len(call.args) < 2:
        return None
    event, handler = call.args[0], call.args[1]
    if event.keyword is not None or handler.keyword is not None or event.star or handler.star:
        return None
    return handler.value if per_iteration_event(event.value) and _unfiltered(call.args) else None


#: the prefix of a named event's entry in the run's index (a space: never part of a dotted name)
EVENT_KEY = "event "
_EVENT_NAME = re.compile(r"[A-Za-z_][\w.:/-]*\Z")


def _event_name(arg: cst.Arg) -> Optional[str]:
    """``"critic_updated"``, or a constant naming it (``Events.STEP_COMPLETED`` of an ``Enum`` or a class of
    constants), lower-cased so the string and the constant of a ``str`` enum meet; not one of ignite's per-iteration
    events (``per_iteration_event``: they run every step whoever fires them)."""
    if arg.keyword is not None or arg.star or per_iteration_event(arg.value):
        return None
    if isinstance(arg.value, cst.SimpleString):
        value = arg.value.evaluated_value
        return value.lower() if isinstance(value, str) and _EVENT_NAME.match(value) else None
    if isinstance(arg.value, cst.Attribute) and isinstance(arg.value.value, (cst.Name, cst.Attribute)) \
            and arg.value.attr.value.isupper():
        return arg.value.attr.value.lower()
    return None


def named_event(node: cst.FunctionDef) -> List[str]:
    """The event names ``node`` is registered for by a decorator: ``@bus.on("critic_updated")``."""
    out = []
    for decorator in node.decorators:
        call = decorator.decorator
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and len(call.args) == 1 \
                and call.func.attr.value in facts.NAMED_EVENT_DECORATORS:
            name = _event_name(call.args[0])
            if name is not None:
                out.append(name)
    return out


def named_registration(call: cst.Call) -> Optional[Tuple[str, cst.BaseExpression]]:
    """(event name, handler) of ``bus.subscribe("critic_updated", on_critic)``."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in facts.NAMED_EVENT_REGISTRATIONS) \
            or len(call.args) < 2 or call.args[1].keyword is not None or call.args[1].star:
        return None
    name = _event_name(call.args[0])
    return (name, call.args[1].value) if name is not None else None


def emitted_event(call: cst.Call) -> Optional[Tuple[str, List[cst.Arg]]]:
    """(event name, the arguments its handlers get) of ``bus.emit("critic_updated", loss=loss)``."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in facts.NAMED_EVENT_EMITTERS) or not call.args:
        return None
    name = _event_name(call.args[0])
    return (name, list(call.args[1:])) if name is not None else None


def calls_with_itself(method: cst.CSTNode) -> bool:
    """An emit method that hands each handler the emitter (``for fn in self._handlers[event]: fn(self)``): its body
    calls a held function (a plain name) with ``self`` first, as ignite's engines call their handlers."""
    stack: List[cst.CSTNode] = [method]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.args \
                and node.args[0].keyword is None and not node.args[0].star \
                and isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == "self":
            return True
        stack.extend(node.children)
    return False
