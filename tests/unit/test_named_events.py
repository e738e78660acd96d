"""A project's own event bus by string names: a handler registered for ``"critic_updated"`` (``@bus.on(...)`` or
``bus.subscribe(..., fn)``) runs where code emits that name (``bus.emit("critic_updated", loss=...)``), in any file,
with the arguments the emit passes; a name nobody emits in a step, or another name, runs nothing per step."""
from __future__ import annotations

import pytest

from project_lint import lint_files

_BUS = """
    from collections import defaultdict

    class EventBus:
        def __init__(self):
            self._handlers = defaultdict(list)

        def on(self, event):
            def register(fn):
                self._handlers[event].append(fn)
                return fn
            return register

        def subscribe(self, event, fn):
            self._handlers[event].append(fn)

        def emit(self, event, **payload):
            for fn in self._handlers[event]:
                fn(**payload)
"""

_AGENT = """
    import torch

    class Agent:
        def __init__(self, model, opt, bus):
            self.model, self.opt, self.bus = model, opt, bus

        def update(self, x, y):
            loss = (self.model(x) - y).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.bus.emit({emitted!r}, loss=loss.detach())
"""

_MAIN = """
    import torch
    from agent import Agent
    from bus import EventBus

    def wire(bus, history):
        {registration}

    def main(model, opt, loader):
        bus, history = EventBus(), []
        wire(bus, history)
        agent = Agent(model.cuda(), opt, bus)
        for x, y in loader:
            agent.update(x.cuda(), y.cuda())
"""

_DECORATED = """@bus.on("loss_ready")
        def record(loss):
            history.append(float(loss))"""
_SUBSCRIBED = """def record(loss):
            history.append(float(loss))
        bus.subscribe("loss_ready", record)"""


@pytest.mark.parametrize("registration", [_DECORATED, _SUBSCRIBED])
@pytest.mark.parametrize("emitted,reported", [("loss_ready", True), ("loss_logged", False)])
def test_a_handler_runs_where_its_event_is_emitted(tmp_path, registration: str, emitted: str, reported: bool) -> None:
    found = lint_files(tmp_path, {"bus.py": _BUS, "agent.py": _AGENT.format(emitted=emitted),
                                  "train.py": _MAIN.format(registration=registration)})
    assert found == ([("train.py", 9 if registration is _DECORATED else 8, "SFL105")] if reported else [])


@pytest.mark.parametrize("call,expected", [
    ('bus.emit("critic_updated", loss=l)', ("critic_updated", 1)), ('self.fire("step/end", out)', ("step/end", 1)),
    ('bus.emit(name, loss=l)', None), ('log.info("critic_updated %s", l)', None), ('bus.emit("two words")', None),
    ('engine.fire_event("iteration_completed")', None),  # an ignite event: `analysis.events.per_iteration_event`
    # a constant naming the event (`Events.STEP_DONE` of a `str` enum) meets its string, lower-cased
    ("self.fire(Events.STEP_DONE)", ("step_done", 0)), ('bus.emit("Step_Done")', ("step_done", 0)),
    ("self.fire(Events.ITERATION_COMPLETED)", None), ("self.fire(events.step_done)", None),
])
def test_emitted_event_names(call: str, expected) -> None:
    import libcst as cst

    from syncfree_lint.analysis.events import emitted_event
    found = emitted_event(cst.parse_expression(call))  # type: ignore[arg-type]
    assert (found[0], len(found[1])) == expected if expected is not None else found is None


@pytest.mark.parametrize("source,expected", [
    ('@bus.on("critic_updated")\ndef f(): pass\n', ["critic_updated"]),
    ('@bus.subscribe("a")\n@bus.subscribe("b")\ndef f(): pass\n', ["a", "b"]),
    ('@bus.on(Events.ITERATION_COMPLETED)\ndef f(): pass\n', []), ('@app.route("/x")\ndef f(): pass\n', []),
    ('@engine.on(Events.STEP_DONE)\ndef f(): pass\n', ["step_done"]),
    ('@engine.on(Events.STEP_DONE, every=10)\ndef f(): pass\n', []),  # thinned out: not as often as the emit
])
def test_named_event_decorators(source: str, expected) -> None:
    import libcst as cst

    from syncfree_lint.analysis.events import named_event
    node = cst.parse_module(source).body[0]
    assert isinstance(node, cst.FunctionDef)
    assert named_event(node) == expected


def test_a_handler_registered_with_arguments_is_not_called_with_itself(tmp_path) -> None:
    """``engine.add_event_handler("epoch_done", evaluate, model, loader)`` hands ``evaluate`` to the engine, not to
    ``evaluate``'s own ``model`` parameter: the code after its evaluation loop runs once per epoch."""
    engine = """
        class Engine:
            def __init__(self):
                self.handlers = {}

            def add_event_handler(self, event, fn, *args):
                self.handlers.setdefault(event, []).append(lambda: fn(self, *args))
    """
    handlers = """
        import torch

        def evaluate(engine, model, loader, epoch):
            correct = 0
            with torch.no_grad():
                for x, y in loader:
                    correct += (model(x.cuda()).argmax(1) == y.cuda()).sum()
            print(f"epoch {epoch}: {correct}")
    """
    main = """
        from engine import Engine
        from handlers import evaluate

        def main(model, loader, epoch):
            trainer = Engine()
            trainer.add_event_handler("epoch_done", evaluate, model, loader, epoch)
    """
    found = lint_files(tmp_path, {"engine.py": engine, "handlers.py": handlers, "main.py": main})
    assert ("handlers.py", 9, "SFL107") not in found
