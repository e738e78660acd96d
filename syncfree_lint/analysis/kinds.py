"""The vocabulary of value kinds: what an expression may hold, as ``analysis.tensors`` infers it.

Kinds are short strings. ``TENSOR`` (and ``MASK``/``BATCH``, which are tensors too) may live on
an accelerator; ``HOST_TENSOR`` is a tensor already on the CPU (reading it costs no sync);
``TENSORS`` a container of device tensors, ``RECORDS`` a sequence of dicts of them; a returned tuple holding a device tensor has a kind of
its elements' kinds (``tuple_kind``). ``None`` means unknown. ``merge``, ``in_place`` and
``combine`` say what a name holds after two branches, an in-place operation, or arithmetic.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence

TENSOR = "tensor"
MASK = "mask"  # boolean tensor
BATCH = "batch"  # drawn from a data loader (still on the host until moved)
HOST_TENSOR = "host_tensor"
HOST_BATCH = "host_batch"  # drawn from a loader by a loop that moves it to the device itself
MODULE = "module"
MODULE_CLASS = "module_class"
NUMBER = "number"
NUMPY = "numpy"
LOADER = "loader"
TENSORS = "tensors"  # a container of device tensors (``loss_dict: Dict[str, Tensor]``): its elements are tensors,
#                     its truth value and length are not device reads
RECORDS = "records"  # a sequence of dicts of device tensors (``targets = [{"boxes": b, "labels": l}, ...]``):
#                     each element is ``TENSORS``; its truth value and length are not device reads
HOST_LOADER = "host_loader"  # a DataLoader built here: it yields host tensors until they are moved
ACCELERATOR = "accelerator"
METRIC = "metric"  # a torchmetrics object (or a dict/collection of them) whose construction is not known here
#: a torchmetrics object whose construction is known: ``"metric:MulticlassAccuracy/v"`` (the class, then ``v`` when it
#: validates its inputs and ``n`` when it checks them for NaN); a collection lists its members, ``|``-separated
METRIC_PREFIX = "metric:"
#: a dict or list of torchmetrics objects whose constructions are known (``"metrics:MeanMetric/n"``)
METRICS_PREFIX = "metrics:"
OTHER = "other"
#: suffix of an environment key holding the constant keys (joined by NUL) of a dict display whose
#: values there are not known device tensors (``d = {"loss": loss, "lr": lr}``: ``d["lr"]`` is not one)
HOST_KEYS = " []"

DEVICE_TENSORS = frozenset({TENSOR, MASK, BATCH})
#: a call's positional ``*tensors`` (a sequence of device tensors) in recorded argument kinds: the parameters from
#: there on are device tensors (``analysis.arguments``)
TENSOR_REST = "*tensor"
_HOST_TENSORS = frozenset({HOST_TENSOR, HOST_BATCH})
#: kinds on which a host read is certainly not a device sync
NOT_DEVICE = frozenset({HOST_TENSOR, HOST_BATCH, MODULE, MODULE_CLASS, NUMBER, NUMPY, LOADER, HOST_LOADER, ACCELERATOR,
                        METRIC, OTHER})
LOADERS = frozenset({LOADER, HOST_LOADER})
#: containers whose contents are device tensors (a whole one handed to a sink or saved is copied to the host)
CONTAINERS = frozenset({TENSORS, RECORDS})

Lookup = Callable[[str], Optional[str]]


def is_metric(kind: Optional[str]) -> bool:
    """A torchmetrics object, or a dict or collection of them, built here or elsewhere."""
    return kind is not None and (kind == METRIC or kind.startswith((METRIC_PREFIX, METRICS_PREFIX)))


def not_device(kind: Optional[str]) -> bool:
    """A host read of a value of ``kind`` is certainly not a device sync."""
    return kind in NOT_DEVICE or is_metric(kind)


def metric_member(kind: Optional[str]) -> Optional[str]:
    """What an element of a dict or list of metrics holds (``metrics["acc"]``, ``for m in metrics.values()``): one
    of its members; a metric of unknown construction when the members differ (which one is not known here)."""
    if kind is None or not kind.startswith(METRICS_PREFIX):
        return METRIC if kind == METRIC else None
    specs = {spec.rpartition("=")[2] for spec in kind[len(METRICS_PREFIX):].split("|")}  # keys aside
    return METRIC_PREFIX + specs.pop() if len(specs) == 1 else METRIC


def tuple_kind(kinds: Sequence[Optional[str]]) -> Optional[str]:
    """The kind of a returned tuple holding a device tensor: its elements' kinds, so
    ``windows, pad_hw = partition(x)`` makes ``windows`` a tensor and leaves ``pad_hw`` alone
    (``"(tensor,other)"``; ``?`` for an unknown element; a tuple inside keeps its own parts:
    ``"((tensor,tensor),number)"``). None when no element is, or holds, a device tensor."""
    if not any(kind in DEVICE_TENSORS or (kind is not None and kind.startswith("(")) for kind in kinds):
        return None
    return "(" + ",".join(kind or "?" for kind in kinds) + ")"


def tuple_elements(kind: Optional[str]) -> Optional[List[Optional[str]]]:
    """The element kinds of a ``tuple_kind``; None for any other kind."""
    if kind is None or not kind.startswith("("):
        return None
    parts: List[Optional[str]] = []
    depth, start = 0, 1
    for position, char in enumerate(kind[1:-1], start=1):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(kind[start:position])
            start = position + 1
    parts.append(kind[start:-1])
    return [None if part == "?" else part for part in parts]


def incomplete(kind: Optional[str]) -> bool:
    """A tuple kind with an unknown part (``"(tensor,?,?)"``): a later round may say more, so a reader keeps asking."""
    elements = tuple_elements(kind)
    return elements is not None and any(element is None or incomplete(element) for element in elements)


def element_of(kind: Optional[str]) -> Optional[str]:
    """What a loop over a value of ``kind`` gives each time: rows of a device tensor are device tensors, each
    record of ``RECORDS`` a dict of them, each part of a tuple of device tensors (``for t in (seqs, *aligned)``)
    a device tensor, and each element of a module a module (``for head in self.heads``: an ``nn.ModuleList``)."""
    if kind in DEVICE_TENSORS:
        return TENSOR
    if kind == RECORDS:
        return TENSORS
    if kind == MODULE:
        return MODULE
    if kind is not None and kind.startswith(METRICS_PREFIX):  # each member in turn: the loop updates them all
        return METRIC_PREFIX + kind[len(METRICS_PREFIX):]
    elements = tuple_elements(kind)
    if elements and all(element in DEVICE_TENSORS for element in elements if element is not None):
        return TENSOR
    return None


def merge(left: Optional[str], right: Optional[str]) -> Optional[str]:
    """The kind of a name after two branches bound it to ``left`` and ``right``."""
    if left == right:
        return left
    if left is None:
        return right
    if right is None:
        return left
    if left in DEVICE_TENSORS and right in DEVICE_TENSORS:
        return TENSOR
    if HOST_BATCH in (left, right) and (left in DEVICE_TENSORS or right in DEVICE_TENSORS):
        # `if cuda: targets = targets.to(device)`: a loader's batch that one branch moves is on the
        # device in the runs that have one (the other branch is the run without an accelerator)
        return left if left in DEVICE_TENSORS else right
    return None


def in_place(target: Optional[str], value: Optional[str]) -> Optional[str]:
    """The kind of ``target`` after ``target <op>= value``: a tensor changed in place keeps its
    device (``count = torch.tensor(0); count += (labels != -100).sum()`` stays on the host, as
    PyTorch refuses a device operand there), anything else is rebound to ``target <op> value``."""
    if target in _HOST_TENSORS:
        return target
    return combine(target, value)


def combine(left: Optional[str], right: Optional[str]) -> Optional[str]:
    """The kind of ``left <op> right``."""
    if left in DEVICE_TENSORS or right in DEVICE_TENSORS:
        return TENSOR
    if left in _HOST_TENSORS or right in _HOST_TENSORS:
        return HOST_TENSOR
    if left == NUMPY or right == NUMPY:
        return NUMPY
    if left == NUMBER and right == NUMBER:
        return NUMBER
    return None

