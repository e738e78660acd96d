"""Handlers of an event engine: registered for a per-iteration event, by decorator or by a call, in
ignite's spelling or a home-made engine's string, they run every step; registered for another event
or thinned out by a filter, they do not."""
from __future__ import annotations

from project_lint import lint_files

_ENGINE = """
    from collections import defaultdict

    class Engine:
        def __init__(self, process_fn):
            self.process_fn = process_fn
            self.handlers = defaultdict(list)

        def on(self, event, every=1):
            def decorator(fn):
                self.handlers[event].append((fn, every))
                return fn
            return decorator

        def add_event_handler(self, event, fn, *args):
            self.handlers[event].append((lambda engine: fn(engine, *args), 1))

        def fire(self, event):
            for fn, every in self.handlers[event]:
                fn(self)

        def run(self, loader):
            for batch in loader:
                self.output = self.process_fn(self, batch)
                self.fire("iteration_completed")
            self.fire("epoch_completed")
"""

_HANDLERS = """
    import torch
    from engine import Engine

    def process(engine, batch):
        return batch

    def report(engine, scale):
        print(torch.ones(2, device="cuda").sum().item() * scale)

    def attach(engine):
        @engine.on("{event}"{extra})
        def check(engine):
            if torch.isnan(torch.ones(2, device="cuda")).any():
                raise FloatingPointError("nan")

        engine.add_event_handler("{event}", report, 2.0{extra})

    def main(loader):
        trainer = Engine(process)
        attach(trainer)
        trainer.run(loader)
"""


def _lint(tmp_path, event: str, extra: str = ""):
    return lint_files(tmp_path, {"engine.py": _ENGINE, "handlers.py": _HANDLERS.format(event=event, extra=extra)})


def test_handlers_of_a_per_iteration_event_named_by_a_string_run_every_step(tmp_path) -> None:
    assert _lint(tmp_path, "iteration_completed") == [("handlers.py", 9, "SFL101"), ("handlers.py", 14, "SFL106")]


def test_handlers_of_an_epoch_event_do_not(tmp_path) -> None:
    assert _lint(tmp_path, "epoch_completed") == []


def test_a_filter_thins_a_handler_out(tmp_path) -> None:
    assert _lint(tmp_path, "iteration_completed", ", every=10") == []


def test_ignite_spelling_registered_by_a_call(tmp_path) -> None:
    source = """
        import torch
        from ignite.engine import Engine, Events

        def log_loss(engine):
            print(engine.state.output, torch.ones(2, device="cuda").sum().item())

        def log_epoch(engine):
            print(torch.ones(2, device="cuda").sum().item())

        def main(loader, step):
            trainer = Engine(step)
            trainer.add_event_handler(Events.ITERATION_COMPLETED, log_loss)
            trainer.add_event_handler(Events.EPOCH_COMPLETED, log_epoch)
            trainer.add_event_handler(Events.ITERATION_COMPLETED(every=50), log_epoch)
            trainer.run(loader)
    """
    assert lint_files(tmp_path, {"train.py": source}) == [("train.py", 6, "SFL101")]
