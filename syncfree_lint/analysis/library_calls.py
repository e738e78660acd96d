"""What a call of a library function (Python's builtins, numpy, ``torch``) gives, by its qualified name.

``qualified_call_kind`` answers for ``analysis.tensors.TensorInference`` once an import has named the
function (``torch.zeros(n, device=dev)``, ``F.softmax(x)``, ``sum(t)``); ``from_args`` says where a torch
function's result lives from where its tensor arguments live.
"""
from __future__ import annotations

from typing import Optional, Protocol, Sequence

import libcst as cst

from syncfree_lint.analysis.call_args import keyword_value, positional
from syncfree_lint.analysis.imports import ImportMap, dotted
from syncfree_lint.analysis.kinds import (
    ACCELERATOR, DEVICE_TENSORS, HOST_BATCH, HOST_LOADER, HOST_TENSOR, MASK, MODULE, NUMBER, NUMPY, OTHER, TENSOR,
    TENSORS, _HOST_TENSORS,
)
from syncfree_lint.analysis.nodes import sequence_elements
from syncfree_lint.knowledge import torch_api as api
from syncfree_lint.knowledge.torch_api import looks_like_module

class Inference(Protocol):
    """What these answers read of the inference asking them."""

    imports: ImportMap
    factories_on_device: bool

    def kind(self, expr: cst.BaseExpression) -> Optional[str]: ...


def is_cpu_device(expr: cst.BaseExpression, imports: ImportMap) -> bool:
    """True for ``"cpu"``, ``torch.device("cpu")`` and ``"cpu:0"``."""
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value in ("cpu", "cpu:0") if isinstance(expr.evaluated_value, str) else False
    if isinstance(expr, cst.Call) and imports.qualname(expr.func) == "torch.device" and expr.args:
        return is_cpu_device(expr.args[0].value, imports)
    return False



def qualified_call_kind(inference: Inference, qual: str, node: cst.Call) -> Optional[str]:
    if qual in api.BUILTINS_KEEPING_TENSORS:  # abs(t - 0.5), round(t): still a tensor
        first = positional(node, 0)
        if first is not None and inference.kind(first) in DEVICE_TENSORS:
            return TENSOR
    if qual in api.BUILTINS_OVER_ELEMENTS:  # sum(t), max(t): a 0-d tensor where t lives
        first = positional(node, 0)
        if first is not None and inference.kind(first) in DEVICE_TENSORS:
            return TENSOR
        # `sum(p.pow(2).sum() for p in params)`, `sum(losses.values())`: device tensors added up
        if qual == "sum" and first is not None and (inference.kind(first) == TENSORS or (
                isinstance(first, (cst.GeneratorExp, cst.ListComp)) and inference.kind(first.elt) in DEVICE_TENSORS)):
            return TENSOR
    first = positional(node, 0)
    if qual in ("tuple", "list") and isinstance(first, (cst.GeneratorExp, cst.ListComp)) \
            and inference.kind(first.elt) in DEVICE_TENSORS:
        return TENSORS  # `tuple(t[:, -n:] for t in (seqs, *aligned))`: device tensors
    if qual in api.NUMBER_CALLS or qual.startswith("math."):
        return NUMBER
    if qual == "dict" and any(inference.kind(arg.value) in (DEVICE_TENSORS if arg.keyword else {TENSORS}) for arg in node.args):
        return TENSORS  # `dict(loss=loss.detach(), acc=acc)`, `dict(losses)`
    zipped = positional(node, 0) if qual == "dict" else None
    if isinstance(zipped, cst.Call) and isinstance(zipped.func, cst.Name) and zipped.func.value == "zip" \
            and len(zipped.args) == 2 and inference.kind(zipped.args[1].value) in DEVICE_TENSORS | {TENSORS}:
        return TENSORS  # `dict(zip(names, torch.stack(losses)))`: names to device tensors
    if qual in api.OTHER_CALLS:
        return OTHER
    if qual.startswith("numpy.") or qual == "numpy":
        return NUMPY
    if qual.startswith("random."):
        return NUMBER
    if qual in api.MODULE_WRAPPERS:
        first = positional(node, 0)
        if qual == "torch.compile" and first is not None:  # of a function (`torch.compile(step_fn)`): no module
            return inference.kind(first) or (MODULE if looks_like_module(dotted(first) or "") else None)
        return MODULE
    if qual in api.LOADER_CLASSES:
        return HOST_LOADER
    if qual.startswith(api.ACCELERATOR_CLASSES):
        return ACCELERATOR
    if qual in api.MODEL_FACTORIES or (qual.startswith(api.MODEL_LIBRARY_PREFIXES) and not qual.endswith("_Weights")
                                       and qual.rsplit(".", 1)[-1] not in api.MODEL_LIBRARY_NON_MODULES):
        return MODULE
    if not qual.startswith("torch."):
        return None
    if qual in api.TORCH_TENSOR_RESULTS or qual.startswith(api.TORCH_TENSOR_RESULT_PREFIXES):
        first = positional(node, 0)
        return TENSOR if first is not None and inference.kind(first) in DEVICE_TENSORS else None
    if api.is_private_torch(qual):
        return None  # `torch._inductor...is_wait_tensor(node)`, `torch.autograd._profiler_enabled()`: no promise
    if qual in api.TORCH_NUMBER:
        return NUMBER
    if qual in api.TORCH_NON_TENSOR or qual.startswith(api.TORCH_NON_TENSOR_PREFIXES):
        if qual.startswith("torch.utils.data.") and qual.endswith("DataLoader"):
            return HOST_LOADER
        if qual in ("torch.nn.utils.clip_grad_norm_",):
            return TENSOR
        return OTHER
    last = qual.rsplit(".", 1)[-1]
    if qual.startswith("torch.nn.functional."):
        return from_args(inference, node, TENSOR)
    if qual.startswith("torch.nn.utils."):
        return TENSOR if last.startswith("clip_grad") else OTHER
    if qual.startswith("torch.nn.init."):
        return TENSOR
    if qual.startswith("torch.nn."):
        return TENSOR if qual in api.TORCH_NN_TENSOR_CLASSES else MODULE if last[:1].isupper() else None
    if last in api.TORCH_FACTORIES:
        dtype = keyword_value(node, "dtype")
        if dtype is not None and (dotted(dtype) or "").endswith(".bool"):
            return MASK  # a boolean mask, wherever it lives, makes indexing data-dependent
        device = keyword_value(node, "device")
        if device is not None and not is_cpu_device(device, inference.imports):
            return TENSOR
        if last in ("as_tensor",):
            data = positional(node, 0)
            if data is not None and inference.kind(data) in DEVICE_TENSORS:
                return TENSOR
        if inference.factories_on_device and device is None and last != "from_numpy":
            return TENSOR
        return HOST_TENSOR
    if last.endswith("_like"):
        first = positional(node, 0)
        device = keyword_value(node, "device")
        if device is not None:
            return HOST_TENSOR if is_cpu_device(device, inference.imports) else TENSOR
        return inference.kind(first) if first is not None else TENSOR
    if last in api.MASK_FUNCTIONS:
        return MASK if from_args(inference, node, TENSOR) != HOST_TENSOR else HOST_TENSOR
    if last == "where":
        branch = positional(node, 1)
        if branch is not None and inference.kind(branch) == MASK:
            return MASK
    first = positional(node, 0)
    if first is not None and inference.kind(first) == NUMBER:
        return None  # `torch.clamp(n, max=k)` of a Python number raises: it runs where `n` is a tensor after all
    return from_args(inference, node, TENSOR)

def from_args(inference: Inference, node: cst.Call, default: str) -> str:
    """A torch function's result lives where its tensor arguments live. A sequence literal or a
    comprehension (``torch.stack([data[i] for i in ix])``) lives where its elements do; host rows
    drawn from data prepared before make a host batch (:func:`_assembled`), as does any function of
    a host batch (``torch.stack(images)`` of a loader's tuple)."""
    saw_host = saw_batch = False
    for arg in node.args:
        elements = sequence_elements(arg.value)
        if elements is not None:
            kinds = [inference.kind(element) for element in elements]
            if any(kind in DEVICE_TENSORS for kind in kinds):
                return TENSOR
            if not kinds or not all(kind in _HOST_TENSORS for kind in kinds):
                continue  # unknown elements: say nothing
            if _assembled(arg.value, elements, kinds):
                return HOST_BATCH
            saw_host = True
            continue
        kind = inference.kind(arg.value)
        if kind in DEVICE_TENSORS:
            return TENSOR
        if kind == HOST_BATCH:
            saw_batch = True
        if kind in _HOST_TENSORS or kind == NUMPY:
            saw_host = True
    return HOST_BATCH if saw_batch else HOST_TENSOR if saw_host else default


def _assembled(sequence: cst.BaseExpression, elements: Sequence[cst.BaseExpression], kinds: Sequence[Optional[str]]) -> bool:
    """Host tensors that form a batch: items made per index by a comprehension
    (``[torch.from_numpy(data[i:i + n]) for i in ix]``), or rows (subscripts) and batches listed."""
    if isinstance(sequence, (cst.ListComp, cst.GeneratorExp)):
        return True
    return all(kind == HOST_BATCH or isinstance(element, cst.Subscript) for kind, element in zip(kinds, elements))
