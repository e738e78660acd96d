"""Keras-style callbacks: a ``CallbackList`` that forwards any hook to its callbacks through ``__getattr__``
(``cbs.on_batch_end(b, logs)``) runs each project callback's ``on_batch_end`` with those arguments, where the base
class declares the hooks with one-line bodies (``def on_batch_end(self, batch, logs): pass``)."""
from __future__ import annotations

import pytest

from project_lint import lint_files

_CALLBACKS = """
    import torch

    class Callback:
        def on_batch_end(self, batch, logs): pass
        def on_epoch_end(self, epoch, logs): pass

    class CallbackList:
        def __init__(self, callbacks):
            self.callbacks = list(callbacks)

        {dispatch}

    class History(Callback):
        def __init__(self):
            self.losses = []

        def on_batch_end(self, batch, logs):
            self.losses.append(logs["loss"].item())
"""

_GETATTR = """def __getattr__(self, hook):
            def dispatch(*args):
                for cb in self.callbacks:
                    getattr(cb, hook)(*args)
            return dispatch"""

_FIT = """
    import torch
    from callbacks import CallbackList, History

    def fit(net, opt, loader, callbacks):
        cbs = CallbackList(callbacks)
        for b, (x, y) in enumerate(loader):
            loss = torch.nn.functional.mse_loss(net(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
            cbs.on_batch_end(b, {"loss": loss.detach()})

    def main(net, opt, loader):
        fit(net.cuda(), opt, loader, [History()])
"""


@pytest.mark.parametrize("dispatch, expected", [(_GETATTR, True), ("def close(self): pass", False)])
def test_a_dispatcher_forwards_hooks_to_the_project_callbacks(tmp_path, dispatch, expected) -> None:
    found = lint_files(tmp_path, {"callbacks.py": _CALLBACKS.format(dispatch=dispatch), "fit.py": _FIT})
    assert (("callbacks.py", 23, "SFL101") in found) is expected
