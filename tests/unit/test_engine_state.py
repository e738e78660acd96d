"""A home-made event engine keeps what its step function returns on its state (``self.state.output =
self.process_fn(self, batch)``) and calls its handlers with itself (``fn(self)``): a handler reading
``engine.state.output["loss"]`` reads the step's device tensors, in whatever file it is written, whether it was
registered with a call for an ignite-style per-iteration event, or with a decorator for a named one (a named
registration of a handler imported from another file is not followed yet)."""
from __future__ import annotations

from project_lint import lint_files

_ENGINE = """
    import enum
    from collections import defaultdict
    from types import SimpleNamespace

    class Events(enum.Enum):
        ITERATION_COMPLETED = "iteration_completed"
        STEP_COMPLETED = "step_completed"

    class Engine:
        def __init__(self, process_fn):
            self.process_fn = process_fn
            self.state = SimpleNamespace(iteration=0, output=None)
            self._handlers = defaultdict(list)

        def on(self, event):
            def register(fn):
                self._handlers[event].append(fn)
                return fn
            return register

        def add_event_handler(self, event, fn):
            self._handlers[event].append(fn)

        def fire(self, event):
            for fn in self._handlers[event]:
                {dispatch}

        def run(self, loader):
            for batch in loader:
                self.state.iteration += 1
                self.state.output = self.process_fn(self, batch)
                self.fire(Events.{event})
"""

_HANDLERS = """
    import math
    import torch

    def stop_on_nan(engine):
        if not math.isfinite(engine.state.output["loss"]):
            raise RuntimeError("non-finite loss")
"""

_TRAIN = """
    import torch
    from engine import Engine, Events
    from handlers import stop_on_nan

    def build(model, opt):
        def train_step(engine, batch):
            loss = torch.nn.functional.mse_loss(model(batch[0].cuda()), batch[1].cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
            return {{"loss": loss.detach()}}
        trainer = Engine(train_step)
        {registration}
        return trainer

    def main(model, opt, loader):
        build(model.cuda(), opt).run(loader)
"""


def test_a_handler_of_another_file_reads_the_output_the_engine_keeps(tmp_path) -> None:
    found = lint_files(tmp_path, {
        "engine.py": _ENGINE.format(dispatch="fn(self)", event="ITERATION_COMPLETED"),
        "handlers.py": _HANDLERS,
        "train.py": _TRAIN.format(registration="trainer.add_event_handler(Events.ITERATION_COMPLETED, stop_on_nan)"),
    })
    assert ("handlers.py", 6, "SFL105") in found


def test_a_bus_that_hands_its_handlers_nothing_of_itself_says_nothing_of_them(tmp_path) -> None:
    # `fn(event)` hands the handler the event, not the engine: its parameter is not the engine
    found = lint_files(tmp_path, {
        "engine.py": _ENGINE.format(dispatch="fn(event)", event="STEP_COMPLETED"),
        "handlers.py": _HANDLERS,
        "train.py": _TRAIN.format(registration="trainer.add_event_handler(Events.STEP_COMPLETED, stop_on_nan)"),
    })
    assert not [f for f in found if f[0] == "handlers.py"]


def test_a_decorated_handler_of_a_named_event_gets_the_engine(tmp_path) -> None:
    found = lint_files(tmp_path, {
        "engine.py": _ENGINE.format(dispatch="fn(self)", event="STEP_COMPLETED"),
        "handlers.py": "",
        "train.py": '''
            import torch
            from engine import Engine, Events

            def build(model, opt):
                def train_step(engine, batch):
                    loss = torch.nn.functional.mse_loss(model(batch[0].cuda()), batch[1].cuda())
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    return {"loss": loss.detach(), "norm": loss.detach().sqrt()}
                trainer = Engine(train_step)

                @trainer.on(Events.STEP_COMPLETED)
                def guard(engine):
                    if engine.state.output["loss"] > 50:
                        engine.state.iteration = 0
                return trainer
        ''',
    })
    assert ("train.py", 16, "SFL106") in found
