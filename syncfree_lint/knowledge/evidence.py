"""The words the analysis starts from: a file without any of them shows no tensor and no step.

The engine's text pre-filter parses a file only when it holds one of these words, one of the
words a rule declares (``Rule.evidence``) or a configured step-function name. Each word here is
evidence the analysis itself uses: the torch import, step markers, data loaders and the training
frameworks whose objects it knows (Lightning, accelerate, Fabric).
"""
from __future__ import annotations

ANALYSIS_WORDS = (
    "torch",  # imports of torch, torchmetrics, torchvision: tensors and metrics
    "backward", ".step(", "zero_grad",  # step markers
    "loader", "data_iter", "dataiter",  # data loaders and their iterators: batches
    "lightning", "accelerat", "fabric",  # frameworks whose modules, accelerators and trackers are known
    "def on_", "def before_", "def after_",  # hooks a trainer may run per step (``knowledge.callables``), torch or not
)
