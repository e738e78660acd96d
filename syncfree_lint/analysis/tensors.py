"""Tensor inference: what kind of value an expression holds, on positive evidence only.

Kinds are short strings. ``TENSOR`` (and ``MASK``/``BATCH``, which are tensors too) may live on
an accelerator; ``HOST_TENSOR`` is a tensor already on the CPU (reading it costs no sync).
``None`` means unknown: rules that need a tensor do not fire on it, rules on methods that only
tensors have (``.item()``) may.
"""
from __future__ import annotations

from typing import AbstractSet, Callable, Optional

import libcst as cst

from syncfree_lint.analysis.imports import ImportMap, dotted
from syncfree_lint.analysis.call_args import keyword_value, positional
from syncfree_lint.analysis.library_calls import is_cpu_device as is_cpu_device, qualified_call_kind
from syncfree_lint.analysis.nodes import subscript_key
from syncfree_lint.analysis.scope import mentions_loader, moves_each_item
from syncfree_lint.knowledge import torch_api as api
from syncfree_lint.knowledge.frequency import is_environment_name, is_module_name
from syncfree_lint.knowledge.library_methods import TENSOR_METHODS
from syncfree_lint.knowledge.torch_api import looks_like_module
from syncfree_lint.analysis.kinds import (  # re-exported: rules and the analysis read them as tensors.X
    ACCELERATOR as ACCELERATOR, BATCH as BATCH, CONTAINERS as CONTAINERS, DEVICE_TENSORS as DEVICE_TENSORS,
    HOST_BATCH as HOST_BATCH, RECORDS as RECORDS,
    HOST_KEYS as HOST_KEYS, HOST_LOADER as HOST_LOADER, HOST_TENSOR as HOST_TENSOR, LOADER as LOADER,
    LOADERS as LOADERS, Lookup as Lookup, element_of as element_of, MASK as MASK, METRIC as METRIC, MODULE as MODULE,
    METRICS_PREFIX as METRICS_PREFIX, is_metric as is_metric, metric_member as metric_member, not_device as not_device,
    MODULE_CLASS as MODULE_CLASS, NOT_DEVICE as NOT_DEVICE, NUMBER as NUMBER, NUMPY as NUMPY, OTHER as OTHER,
    TENSOR as TENSOR, TENSOR_REST as TENSOR_REST, TENSORS as TENSORS, _HOST_TENSORS as _HOST_TENSORS,
    combine as combine, in_place as in_place, incomplete as incomplete, merge as merge,
    tuple_elements as tuple_elements, tuple_kind as tuple_kind,
)


_TENSOR_VALUE_METHODS = {
    **{name: NUMBER for name in api.TENSOR_NUMBER_METHODS},
    **{name: NUMPY for name in api.TENSOR_NUMPY_METHODS},
    **{name: OTHER for name in api.TENSOR_OTHER_METHODS},
}
MODULE_EVIDENCE_METHODS = api.MODULE_EVIDENCE_METHODS


class TensorInference:
    """Answers ``kind(expr)`` for one module, reading bindings through ``lookup``."""

    def __init__(self, imports: ImportMap, lookup: Lookup, call_kind: Callable[[cst.Call], Optional[str]],
                 memo: Optional[Callable[[cst.BaseExpression], Optional[str]]] = None) -> None:
        self.imports = imports
        self.lookup = lookup
        self.call_kind = call_kind  # kinds of calls of local functions and classes
        self.kind = memo or self.infer  # sub-expressions go through the caller's memo
        self.factories_on_device = False  # the file makes an accelerator the default device

    def infer(self, expr: cst.BaseExpression) -> Optional[str]:
        method = _DISPATCH.get(type(expr))
        return method(self, expr) if method is not None else None

    # -- leaves
    def _Name(self, node: cst.Name) -> Optional[str]:
        value = node.value
        if value in ("True", "False"):
            return OTHER
        if value == "None":
            return None
        bound = self.lookup(value)
        if bound is None and looks_like_module(value) and not self.imports.imported(value):
            return MODULE
        return bound

    def _Integer(self, node: cst.BaseExpression) -> str:
        return NUMBER

    _Float = _Imaginary = _Integer

    def _SimpleString(self, node: cst.BaseExpression) -> str:
        return OTHER

    _ConcatenatedString = _FormattedString = _SimpleString
    _List = _Set = _SetComp = _SimpleString

    def _ListComp(self, node: cst.ListComp) -> str:
        """``[x.to(device) for x in batch]``: a list of device tensors (``text, lens = [...]``); ``[(b.to(device),
        l.to(device)) for b, l in zip(boxes, labels)]``: a list of tuples (or dicts) of them (per-image targets)."""
        if isinstance(node.elt, (cst.Tuple, cst.List)) and node.elt.elements and all(
                isinstance(e, cst.Element) and self.kind(e.value) in DEVICE_TENSORS for e in node.elt.elements):
            return TENSORS
        if isinstance(node.elt, (cst.Dict, cst.DictComp)) and self.kind(node.elt) == TENSORS:
            return RECORDS  # `[{k: v.to(device) for k, v in t.items()} for t in targets]`
        if moves_each_item(node) and self.kind(node.for_in.iter) in (BATCH, HOST_BATCH) \
                and self.kind(node.elt) in DEVICE_TENSORS:
            return TENSORS
        return TENSORS if _converts_each_item(node, self.imports) and self.kind(node.elt) in DEVICE_TENSORS else OTHER

    def _Dict(self, node: cst.Dict) -> str:  # a dict holding a device tensor: a container of them
        return TENSORS if any(isinstance(e, cst.DictElement) and self.kind(e.value) in DEVICE_TENSORS
                              for e in node.elements) else OTHER

    def _DictComp(self, node: cst.DictComp) -> str:
        """``{k: v for k, v in losses.items()}`` of device tensors (also before ``v`` is bound)."""
        comp, it, value = node.for_in, node.for_in.iter, node.value
        pair = comp.target.elements if isinstance(comp.target, cst.Tuple) else ()
        if self.kind(value) in DEVICE_TENSORS or (
                isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value == "items"
                and len(pair) == 2 and isinstance(value, cst.Name) and isinstance(pair[1].value, cst.Name)
                and pair[1].value.value == value.value and self.kind(it.func.value) in DEVICE_TENSORS | {TENSORS}):
            return TENSORS
        return OTHER

    def _Tuple(self, node: cst.Tuple) -> Optional[str]:
        """``(dist.to(dev), toks.to(dev))``: its elements' kinds, so ``nbrs[1]`` of it is a device tensor."""
        return tuple_kind([None if isinstance(element, cst.StarredElement) else self.kind(element.value)
                           for element in node.elements]) or OTHER

    def _Attribute(self, node: cst.Attribute) -> Optional[str]:
        text = dotted(node)
        if text is not None:
            bound = self.lookup(text)
            if bound is not None:
                return bound
            if text.startswith("self.") and text.count(".") == 1 and looks_like_module(text):
                return MODULE
        base = self.kind(node.value)
        if text is not None and base in (None, MODULE) and looks_like_module(text) \
                and not self.imports.imported(text.split(".")[0]):
            return MODULE  # `peer.model`, `self.ema.model`, `net.encoder`: named like a model, on an untyped object or a module
        attr = node.attr.value
        if base in DEVICE_TENSORS or base in _HOST_TENSORS:
            if attr in api.TENSOR_NON_TENSOR_ATTRS:
                return OTHER
            if attr in api.TENSOR_TENSOR_ATTRS:
                return TENSOR if base in DEVICE_TENSORS else HOST_TENSOR
            if base in (BATCH, TENSOR) and any(word in attr.lower().split("_") for word in api.MASK_KEY_WORDS):
                return MASK  # `batch.mask` of a batch object moved to the device (no tensor attribute), as `batch["mask"]`
            if base in (BATCH, HOST_BATCH):
                return base
            if base == TENSOR and attr in api.OUTPUT_TENSOR_ATTRS:
                return TENSOR  # `out.loss` of what a module returned (a named tuple or an output object)
            return None
        if base == NUMPY:
            return NUMPY
        return None

    def _Subscript(self, node: cst.Subscript) -> Optional[str]:
        if isinstance(node.value, cst.Attribute) and node.value.attr.value == "shape" and len(node.slice) == 1 \
                and isinstance(node.slice[0].slice, cst.Index):
            return NUMBER  # `x.shape[1]`: a Python int (a tensor only while tracing for export)
        base = self.kind(node.value)
        elements = tuple_elements(base)
        if elements is not None:  # f(x)[0] of a function returning (tensor, int)
            index = node.slice[0].slice if len(node.slice) == 1 else None
            if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
                position = int(index.value.value)
                return elements[position] if position < len(elements) else None
            return None
        if is_metric(base):  # `metrics["acc"]`: a member; a collection's member is a metric
            return metric_member(base) or base
        if base in (MASK, TENSOR):  # rows and slices of a mask are masks (`x[keep[i]]`)
            return base
        if base in (BATCH, TENSORS) and _names_words(node, api.MASK_KEY_WORDS):
            return MASK  # `batch["loss_mask"]` on the device: a boolean mask by its name
        if base == TENSORS and isinstance(node.value, cst.Name) \
                and subscript_key(node) in (self.lookup(node.value.value + HOST_KEYS) or "").split("\0"):
            return None  # `d["lr"]` of `d = {"loss": loss, "lr": lr}`: the host value put there
        if base == TENSORS and _names_words(node, api.COUNTER_KEY_WORDS):
            return NUMBER  # `state["step"]` beside the losses handed to a callback
        if base in CONTAINERS:  # loss_dict["loss"] / tensors[0] / targets[i]; a slice is still a container
            sliced = any(isinstance(element.slice, cst.Slice) for element in node.slice)
            return base if sliced else TENSORS if base == RECORDS else TENSOR
        if base in (BATCH, HOST_BATCH, HOST_TENSOR, NUMPY):
            return base
        return None

    def _UnaryOperation(self, node: cst.UnaryOperation) -> Optional[str]:
        inner = self.kind(node.expression)
        if isinstance(node.operator, cst.Not):
            return OTHER
        if isinstance(node.operator, cst.BitInvert) and inner == MASK:
            return MASK
        if inner in DEVICE_TENSORS:
            return TENSOR
        return inner

    def _BinaryOperation(self, node: cst.BinaryOperation) -> Optional[str]:
        if isinstance(node.operator, cst.Modulo) and isinstance(
            node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
        ):
            return OTHER  # "%s" % x formatting
        left, right = self.kind(node.left), self.kind(node.right)
        if isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)) and MASK in (left, right):
            return MASK
        if isinstance(node.operator, cst.Add) and left == right == OTHER \
                or isinstance(node.operator, cst.Multiply) and {left, right} == {OTHER, NUMBER}:
            return OTHER  # `["<pad>"] + letters`, `[0] * n`: a Python sequence
        return combine(left, right)

    def _Comparison(self, node: cst.Comparison) -> Optional[str]:
        sides = [node.left] + [t.comparator for t in node.comparisons]
        if any(isinstance(side, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)) for side in sides):
            return OTHER  # a tensor never equals a string: ``d["mode"] == "train"`` compares Python values
        kinds = [self.kind(side) for side in sides]
        if any(k in DEVICE_TENSORS for k in kinds):
            if all(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in node.comparisons):
                return OTHER
            return MASK
        # a host tensor compared with host values is a mask on the host (``arange(n)[None] < lengths[:, None]``);
        # with a value of unknown kind too (``torch.rand(shape) < cfg.p``), as in arithmetic (``kinds.combine``)
        if any(k in _HOST_TENSORS for k in kinds):
            return OTHER if all(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn))
                                for t in node.comparisons) else HOST_TENSOR
        return None if any(k is None for k in kinds) else OTHER

    def _BooleanOperation(self, node: cst.BooleanOperation) -> Optional[str]:
        left, right = self.kind(node.left), self.kind(node.right)
        return left if left == right else None

    def _IfExp(self, node: cst.IfExp) -> Optional[str]:
        body, orelse = self.kind(node.body), self.kind(node.orelse)
        if body == orelse:
            return body
        if body in DEVICE_TENSORS or orelse in DEVICE_TENSORS:
            return TENSOR
        return None

    def _Await(self, node: cst.Await) -> Optional[str]:
        return None

    def _NamedExpr(self, node: cst.NamedExpr) -> Optional[str]:
        return self.kind(node.value)

    # -- calls
    def _Call(self, node: cst.Call) -> Optional[str]:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "iter" and node.args and not self.imports.imported("iter"):
            source = self.kind(node.args[0].value)  # `train_iter = iter(train_loader)`: still the loader
            if source in LOADERS:
                return source
            if mentions_loader(node.args[0].value):
                return LOADER
        if isinstance(func, cst.Name) and func.value == "next" and node.args and not self.imports.imported("next"):
            drawn = self.kind(node.args[0].value)  # `batch = next(train_iter)`: a batch of the loader
            if drawn == HOST_LOADER:
                return HOST_BATCH
            if drawn == LOADER or mentions_loader(node.args[0].value):
                return BATCH
        qual = self.imports.qualname(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        if qual is not None:
            known = qualified_call_kind(self, qual, node)
            if known is not None:
                return known
        local = self.call_kind(node)
        if local is not None:
            return local
        if isinstance(func, cst.Attribute):
            if self.kind(func) == MODULE:  # self.model(x), self.encoder(x)
                return TENSOR
            if func.attr.value == "step" and is_environment_name(dotted(func.value) or ""):
                return NUMPY  # `obs, reward, done, info = env.step(action)`: what an environment gives is host data
            if func.attr.value == "from_pretrained":
                owner = (dotted(func.value) or "").lower()
                if not any(word in owner for word in ("tokenizer", "processor", "config", "scheduler", "extractor")):
                    return MODULE
            return self._method_call(node, func)
        if isinstance(func, cst.Name):
            bound = self.lookup(func.value)
            if bound == MODULE or is_metric(bound):
                return TENSOR
            if bound is None and is_module_name(func.value) and node.args:
                return TENSOR  # `logits = model(x)` in a helper handed the model
            if bound == MODULE_CLASS:
                return MODULE
        return None

    def _method_call(self, node: cst.Call, func: cst.Attribute) -> Optional[str]:
        name = func.attr.value
        receiver = self.kind(func.value)
        if receiver in DEVICE_TENSORS or receiver in _HOST_TENSORS:
            if name in ("type_as", "type") and receiver in _HOST_TENSORS and node.args:
                return self._retyped(name, node.args[0].value)  # `x.type()` alone: a string
            if name in _TENSOR_VALUE_METHODS:
                return _TENSOR_VALUE_METHODS[name]
            if name == "cpu":
                return HOST_TENSOR
            if receiver == MASK and name in api.LAYOUT_METHODS and not any(
                    (dotted(arg.value) or "").startswith("torch.") for arg in node.args):
                return MASK  # `valid.view(-1)`: still a mask (not `view(torch.uint8)`, a dtype)
            if name in ("to", "cuda", "pin_memory"):
                return self._moved(node, receiver)
            if name in api.MASK_FUNCTIONS:
                return MASK if receiver not in _HOST_TENSORS else HOST_TENSOR
            if receiver in (BATCH, HOST_BATCH) and name in ("get", "values", "items", "keys"):
                return receiver
            if receiver not in (BATCH, HOST_BATCH) and name not in TENSOR_METHODS and name not in _ITEM_READS:
                return None  # not a tensor after all (`instances.has("scores")`); a dict's item is still an output
            if receiver == HOST_BATCH:
                return HOST_BATCH  # `batch["clip"].squeeze(1)` of a batch still on the host: still the loader's data
            return TENSOR if receiver in DEVICE_TENSORS else HOST_TENSOR
        if receiver == MODULE:
            if name in api.MODULE_METHODS_KEEP:
                return MODULE
            if name in ("forward", "__call__"):
                return TENSOR
            return None
        if receiver == NUMPY:
            return NUMPY
        if receiver == TENSORS:
            if name in ("values", "items", "copy"):
                return TENSORS
            return TENSOR if name in ("get", "pop", "__getitem__") else None
        if is_metric(receiver):
            if receiver is not None and receiver.startswith(METRICS_PREFIX) and name in ("values", "items", "copy"):
                return receiver  # `metrics.items()` of a dict of them: its members, as the dict
            if name in ("to", "cuda", "cpu", "float", "double", "half", "set_dtype"):
                return receiver
            return TENSOR
        if receiver == ACCELERATOR:
            if name in ("gather", "gather_for_metrics", "reduce", "pad_across_processes", "all_gather"):
                return TENSOR
            return None
        if receiver in LOADERS:
            return OTHER
        if receiver is None:  # whatever it was, after these it is on the host
            if name == "cpu":
                return HOST_TENSOR
            if name == "numpy":
                return NUMPY
            if name in ("item", "tolist"):
                return NUMBER if name == "item" else OTHER
            if name == "cuda" or (name == "to" and self._names_accelerator_device(node)):
                return TENSOR  # moved to an accelerator: whatever it was, it is there now
            if name == "to" and node.args and is_cpu_device(node.args[0].value, self.imports):
                return HOST_TENSOR
        return None

    def _retyped(self, name: str, target: cst.BaseExpression) -> Optional[str]:
        """A host tensor after ``.type_as(other)`` (``other``'s device) or ``.type(t)``: on the
        device when ``other`` is a device tensor or ``t`` names a CUDA type; None when not known."""
        if name == "type_as":
            other = self.kind(target)
            return TENSOR if other in DEVICE_TENSORS else HOST_TENSOR if other in _HOST_TENSORS else None
        text = dotted(target) or (target.evaluated_value if isinstance(target, cst.SimpleString) else None)
        if not isinstance(text, str):
            return None
        return TENSOR if "cuda" in text else HOST_TENSOR

    def _names_accelerator_device(self, node: cst.Call) -> bool:
        """``.to(device)``, ``.to(self.device)``, ``.to("cuda")``, ``.to(device=...)``: a device
        that is not the CPU (a dtype, or a name that does not say device, is not evidence)."""
        device = keyword_value(node, "device")
        value = device if device is not None else positional(node, 0)
        if value is None or is_cpu_device(value, self.imports):
            return False
        if isinstance(value, cst.SimpleString):
            return str(value.evaluated_value).split(":")[0] in api.ACCELERATOR_DEVICE_STRINGS
        text = dotted(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
        return text is not None and "device" in text.rsplit(".", 1)[-1].lower()

    def _moved(self, node: cst.Call, receiver: Optional[str]) -> Optional[str]:
        if node.func.attr.value == "cuda":  # type: ignore[attr-defined]
            return TENSOR
        target = positional(node, 0)
        device = keyword_value(node, "device")
        value = device if device is not None else target
        if value is not None and is_cpu_device(value, self.imports):
            return HOST_TENSOR
        if value is None:  # .to(dtype=...) keeps the device
            return TENSOR if receiver in DEVICE_TENSORS else receiver
        if receiver in (BATCH, HOST_BATCH):
            return BATCH  # a batch moved whole (`data = data.to(device)`): its fields are on the device too
        return TENSOR if receiver in DEVICE_TENSORS or value is not None else receiver


_DISPATCH = {
    getattr(cst, name[1:]): method
    for name, method in vars(TensorInference).items()
    if name.startswith("_") and name[1:2].isupper() and hasattr(cst, name[1:])
}


def _converts_each_item(node: cst.ListComp, imports: ImportMap) -> bool:
    """``[torch.from_numpy(a).to(device) for a in arrays]``: each item made a tensor and moved, whatever the items
    were (``*arrays`` handed in)."""
    elt, comp = node.elt, node.for_in
    if not (isinstance(elt, cst.Call) and isinstance(elt.func, cst.Attribute) and elt.func.attr.value in ("to", "cuda")
            and isinstance(comp.target, cst.Name) and comp.inner_for_in is None):
        return False
    made = elt.func.value
    return isinstance(made, cst.Call) and isinstance(made.func, (cst.Name, cst.Attribute)) \
        and (imports.qualname(made.func) or "").startswith("torch.") and bool(made.args) \
        and isinstance(made.args[0].value, cst.Name) and made.args[0].value.value == comp.target.value


def _names_words(node: cst.Subscript, words: AbstractSet[str]) -> bool:
    """``batch["loss_mask"]`` for ``{"mask"}``: a string key holding one of ``words`` as a whole ``_`` word."""
    text = subscript_key(node)
    return text is not None and any(word in text.lower().split("_") for word in words)


#: methods that give device data though ``torch.Tensor`` lacks them: reads of an item of a model's output taken for a
#: tensor (a dict of them: ``outputs[obj].get("mask")``), and a distribution's (``Categorical(logits=x).log_prob(y)``)
_ITEM_READS = frozenset({"get", "pop", "setdefault", "log_prob", "rsample", "sample", "entropy", "cdf", "icdf"})
