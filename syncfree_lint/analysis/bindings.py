"""Bindings: which kind each name holds at each point of the walk (value provenance).

Names are bound in scopes (module, functions, lambdas) as statements finish; ``self.x`` bindings
made anywhere in a class are remembered on the class. Kinds come from ``analysis.tensors``; loop
targets, parameters (``batch``, ``x: torch.Tensor``), metric constructions and calls of local
functions (their return kinds) add what the walk knows.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from syncfree_lint.analysis import tensors
from syncfree_lint.analysis.annotations import tensor_annotation_kind
from syncfree_lint.analysis.call_kinds import CALL_RESULT
from syncfree_lint.analysis.calls import DottedRef, NameRef
from syncfree_lint.analysis.imports import ImportMap, dotted
from syncfree_lint.analysis.dict_items import DICT_DISPLAY, is_dict_display, store_item
from syncfree_lint.analysis.nodes import constant_items, listed_name, subscript_key, walk_code
from syncfree_lint.analysis.call_args import keyword_value
from syncfree_lint.analysis.metric_sites import metric_kind
from syncfree_lint.analysis.instances import InstanceTable, ScopedNames, class_of_elements, paired_elements
from syncfree_lint.analysis.guards import has_modulo
from syncfree_lint.analysis.scope import draws_and_moves, is_next_call
from syncfree_lint.knowledge import torch_api as api

if TYPE_CHECKING:  # pragma: no cover
    from syncfree_lint.analysis.calls import CallRef
    from syncfree_lint.analysis.metric_sites import MetricSite
    from syncfree_lint.analysis.passed_callables import PassedCallables
    from syncfree_lint.analysis.scope import ClassFrame, FunctionFrame, LoopFrame


#: suffix of an environment key recording that a name holds a remainder (``name %``: never a real name)
REMAINDER = " %"
#: suffix of a key recording that a name holds an interval condition (``do_eval = step % k == 0``)
INTERVAL_FLAG = " %?"
#: suffix of a key recording that a name holds 1 (a period that defaults to every step: ``period=1``)
EVERY_STEP = " =1"
#: suffix of a key recording that a parameter is a switch that is off by default (``debug=False``)
OFF_BY_DEFAULT = " off"
#: suffix of a key recording that a name is a list the code appends device tensors to (``history.append(idx)``):
#: a loop over it gives its elements' kind, device tensors or dicts of them (``TENSORS`` alone does not say: a dict gives keys)
LIST_OF_TENSORS = " [t]"


class BindingsMixin:
    """Name -> kind environments for ``ModuleAnalysis`` (which provides the attributes below)."""

    imports: ImportMap
    unknown_reads: Set[Tuple[str, str]]
    function: Optional["FunctionFrame"]
    loops: List["LoopFrame"]
    class_frame: Optional["ClassFrame"]
    classes: Dict[str, "ClassFrame"]
    returns: Dict[str, Optional[str]]
    forward_returns: Set[str]
    imported_returns: Dict[str, str]
    unknown_imports: Set[str]
    module_name: str
    results_of: ScopedNames[str]
    qualname: Callable[[cst.BaseExpression], Optional[str]]
    _envs: List[Dict[str, Optional[str]]]
    _kinds: Dict[int, Optional[str]]
    _stores: Set[int]
    _prefix: List[str]
    _generators: Dict[str, str]
    instances: InstanceTable
    callables: ScopedNames["CallRef"]
    alternatives: ScopedNames[Tuple["CallRef", ...]]
    uses_accelerator: bool
    function_value: Callable[[cst.BaseExpression], Optional["CallRef"]]
    wraps_callable: Callable[[cst.Call], bool]
    _tests_off_option: Callable[[cst.BaseExpression], bool]
    method_by_name: Callable[[cst.BaseExpression], Optional[DottedRef]]
    metric_sites: Dict[str, "MetricSite"]
    all_metric_sites: List["MetricSite"]
    kind: Callable[[cst.BaseExpression], Optional[str]]
    metric: Callable[[cst.BaseExpression], Optional["MetricSite"]]
    resolve_local: Callable[["CallRef"], List[str]]
    alternative_refs: Callable[[cst.BaseExpression], List["CallRef"]]
    _metric_site: Callable[[str, cst.BaseExpression], Optional["MetricSite"]]
    _remember_instance: Callable[[str, cst.BaseExpression], None]
    _instance_call_kind: Callable[[str], Optional[str]]
    _passed_return_kind: Callable[[str], Optional[str]]
    _yielded: Callable[[cst.BaseExpression], Optional[str]]
    _lambda_result: Callable[[cst.Lambda], Optional[str]]
    _loop_callables: Callable[[cst.BaseExpression, cst.BaseExpression], None]
    _remember_attribute_class: Callable[[str, cst.BaseExpression], None]
    passed_callables: "PassedCallables"
    _instance_attribute: Callable[[str], Optional[str]]
    _applied: Callable[[Optional[cst.BaseExpression], str], List["CallRef"]]
    _objects_kind: Callable[[cst.BaseExpression], Optional[str]]
    yields: Dict[str, Set[Optional[str]]]
    _rules: Callable[[cst.CSTNode], None]
    _children: Callable[[cst.CSTNode], None]

    def lookup(self, name: str) -> Optional[str]:
        for env in reversed(self._envs):
            if name in env:
                kind = env[name]
                if kind is None and self.function is not None:
                    self.unknown_reads.add((self.function.qualname, name))  # a seed could tell (``arguments``)
                return kind
        if name.startswith("self.") and self.class_frame is not None:
            owner = self._attribute_owner(self.class_frame, name)
            if owner is not None:
                return owner.attrs[name]
        return self._instance_attribute(name) if "." in name else None

    def _attribute_owner(self, frame: "ClassFrame", name: str, depth: int = 0) -> Optional["ClassFrame"]:
        """The class of this file, ``frame``'s or a local base's, that says what ``self.<name>`` holds."""
        if name in frame.attrs:
            return frame
        for base in frame.bases if depth < 8 else ():
            found = self._attribute_owner(self.classes[base], name, depth + 1) if base in self.classes else None
            if found is not None:
                return found
        return None

    def _bind(self, name: str, kind: Optional[str]) -> None:
        if self._kinds:
            self._kinds.clear()
        env = self._envs[-1]
        env[name] = kind
        env.pop(name + REMAINDER, None)
        env.pop(name + INTERVAL_FLAG, None)
        env.pop(name + EVERY_STEP, None)
        env.pop(name + OFF_BY_DEFAULT, None)
        env.pop(name + tensors.HOST_KEYS, None)
        env.pop(name + CALL_RESULT, None)
        env.pop(name + LIST_OF_TENSORS, None)
        env.pop(name + DICT_DISPLAY, None)
        if name.startswith("self.") and self.class_frame is not None:
            self.class_frame.attrs.pop(name + EVERY_STEP, None)
        if name.startswith("self.") and self.class_frame is not None and self.function is not None:
            previous = self.class_frame.attrs.get(name)
            if kind is not None or previous is None:
                self.class_frame.attrs[name] = kind

    def _evidence(self, expr: cst.BaseExpression, kind: str) -> None:
        """Learn a name's kind from how it is used (``loss.backward()`` -> tensor)."""
        name = dotted(expr)
        if name is not None and self.lookup(name) is None and not self.imports.imported(name.split(".")[0]):
            self._bind(name, kind)

    def _bind_target(self, target: cst.BaseExpression, kind: Optional[str]) -> None:
        if isinstance(target, (cst.Name, cst.Attribute)):
            name = dotted(target)
            if name is not None:
                self._bind(name, kind)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = tensors.tuple_elements(kind)  # a function's returned tuple, element by element
            if elements is not None and len(elements) == len(target.elements) \
                    and not any(isinstance(element, cst.StarredElement) for element in target.elements):
                for element, element_kind in zip(target.elements, elements):
                    self._bind_target(element.value, element_kind)
                return
            # the parts of a batch are where the batch is (`x, y, idx = next(host_batches)`)
            element_kind = tensors.TENSOR if kind == tensors.TENSORS else tensors.TENSORS if kind == tensors.RECORDS \
                else kind if kind in tensors.DEVICE_TENSORS or kind in (tensors.NUMPY, tensors.HOST_BATCH, tensors.HOST_TENSOR) else None
            for element in target.elements:  # `x, (h, w) = self.embed(x)`: a nested pattern unpacks a structure, not a tensor
                nested = isinstance(element.value, (cst.Tuple, cst.List)) and element_kind in (tensors.TENSOR, tensors.MASK)
                self._bind_target(element.value, None if nested else element_kind)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, None)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):  # `logs["loss"] = loss`
            store_item(target.value.value, subscript_key(target), kind, self.lookup, self._bind, self._envs[-1].__setitem__)

    def _assign(self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression) -> None:
        if len(targets) == 1 and isinstance(targets[0], cst.Attribute) and self.function is not None:
            self.passed_callables.keep(self.function, dotted(targets[0]) or "", value)  # `self.callbacks = callbacks`
        if len(targets) == 1 and isinstance(targets[0], cst.Name):
            self._remember_instance(targets[0].value, value)
        for target, part in paired_elements(targets, value):  # `meter, rng = Meter(), Rng()`
            name = dotted(target)
            if isinstance(target, cst.Name):
                self._remember_instance(target.value, part)
            elif name is not None and name.startswith("self."):
                self._remember_attribute_class(name, part)
                if self.function is not None:  # `self.model, self.decoder = model, decoder`
                    self.passed_callables.keep(self.function, name, part)
        if len(targets) == 1:
            target_name = dotted(targets[0])
            if target_name is not None and target_name.startswith("self."):
                self._remember_attribute_class(target_name, value)
            if target_name is not None:
                site = self._metric_site(target_name, value)
                if site is not None:
                    self.metric_sites[target_name] = site
                    self.all_metric_sites.append(site)
                    self.all_metric_sites.extend(site.members)
                    self._bind(target_name, metric_kind(site) or tensors.METRIC)
                    return
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and len(targets) == 1:
            name = dotted(targets[0])
            local = self.resolve_local(NameRef(value.func.value, ".".join(self._prefix)))
            if name is not None and local:
                self._generators[name] = local[0]  # next(name) runs the function's body
        if len(targets) == 1 and isinstance(targets[0], cst.Name) and isinstance(value, cst.BinaryOperation) \
                and isinstance(value.operator, cst.Modulo) and not isinstance(
                    value.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            self._bind(targets[0].value, self.kind(value))
            # `rem = step % log_freq`: `if rem == 0:` is an interval
            self._envs[-1][targets[0].value + REMAINDER] = tensors.NUMBER
            return
        if len(targets) == 1 and isinstance(targets[0], cst.Name) \
                and isinstance(value, (cst.Comparison, cst.BooleanOperation)) and has_modulo(value):
            self._bind(targets[0].value, self.kind(value))
            # `do_eval = step % k == 0`: `if do_eval:` / `if do_eval or last:` is an interval too
            self._envs[-1][targets[0].value + INTERVAL_FLAG] = tensors.OTHER
            return
        if len(targets) == 1 and self._holds_one(value):
            name = dotted(targets[0])
            if name is not None:
                self._bind(name, tensors.NUMBER)
                self.mark_every_step(name)
                return
        moved_by_loop = self._drawn_and_moved(value)
        for target in targets:
            if moved_by_loop:  # `feats, lens, labels = next(stream)` in a loop that moves what it needs itself
                self._bind_batch(target, tensors.HOST_BATCH)
                continue
            if isinstance(target, (cst.Tuple, cst.List)):
                kinds = self._elementwise(value, len(target.elements))
                if kinds is not None:
                    for element, kind in zip(target.elements, kinds):
                        self._bind_target(element.value, kind)
                    continue
                if self.kind(value) == tensors.TENSORS:  # `xb, eb = self._tensors(x, e)` of a list of moved arrays
                    self._bind_batch(target, tensors.TENSOR)
                    continue
            self._bind_target(target, self.kind(value))
        if len(targets) == 1 and isinstance(targets[0], cst.Name) and isinstance(value, cst.Lambda):
            self._envs[-1][targets[0].value + CALL_RESULT] = self._lambda_result(value)
        name = targets[0].value if len(targets) == 1 and isinstance(targets[0], cst.Name) else None
        listed = self._objects_kind(value) if name is not None else None
        if name is not None and listed is not None:  # `callbacks = [Progress(every=25)]`: a loop calls it
            self._bind(name, listed)
        host_keys = [key for key, item in constant_items(value) if self.kind(item) not in tensors.DEVICE_TENSORS]
        if host_keys and len(targets) == 1 and isinstance(targets[0], cst.Name):
            self._envs[-1][targets[0].value + tensors.HOST_KEYS] = "\0".join(host_keys)
        if len(targets) == 1 and isinstance(targets[0], cst.Name) and is_dict_display(value):
            self._envs[-1][targets[0].value + DICT_DISPLAY] = tensors.OTHER  # items stored later tell what it holds
        if len(targets) == 1 and isinstance(targets[0], cst.Name) and isinstance(value, cst.IfExp) \
                and isinstance(value.orelse, cst.Name) and value.orelse.value == "None" and self._tests_off_option(value.test):
            self._envs[-1][targets[0].value + OFF_BY_DEFAULT] = tensors.OTHER  # `x = X() if args.opt else None`

    def _drawn_and_moved(self, value: cst.BaseExpression) -> bool:
        """``next(batches)`` of a loader in a loop whose body moves the drawn items to the device itself: until
        moved they are on the host, as the items of a loader loop that moves them (``HOST_BATCH``)."""
        if not (is_next_call(value) and self.loops and self.kind(value) in (tensors.BATCH, None)):
            return False
        body = getattr(self.loops[-1].node, "body", None)
        return isinstance(body, cst.IndentedBlock) and draws_and_moves(body.body)

    def element_kind(self, comp: cst.BaseExpression) -> Optional[str]:
        """The kind of a comprehension's element with its loop names bound from what they iterate:
        a rule at ``max(g.abs().max() for g in grads)`` asks before the walk has bound ``g``."""
        if not isinstance(comp, (cst.GeneratorExp, cst.ListComp, cst.SetComp)):
            return None
        self._envs.append({})
        self._kinds.clear()
        try:
            for_in: Optional[cst.CompFor] = comp.for_in
            while for_in is not None:
                iterated = for_in.iter
                if not (isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Attribute)
                        and self._module_tensors(iterated.func, for_in.target)):  # `for p in model.parameters()`
                    self._bind_target(for_in.target, tensors.TENSOR if self.kind(iterated) in tensors.DEVICE_TENSORS else None)
                for_in = for_in.inner_for_in
            return self.kind(comp.elt)
        finally:
            self._envs.pop()
            self._kinds.clear()

    def _holds_one(self, value: cst.BaseExpression) -> bool:
        """``1``, or a name that holds 1 here (a parameter defaulting to 1)."""
        if isinstance(value, cst.Integer):
            return value.value == "1"
        name = dotted(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
        return name is not None and self.lookup(name + EVERY_STEP) is not None

    def mark_every_step(self, name: str) -> None:
        """``name`` holds 1: as a modulo's period, it makes an interval guard run every step."""
        if name.startswith("self.") and self.class_frame is not None:
            self.class_frame.attrs[name + EVERY_STEP] = tensors.NUMBER
        else:
            self._envs[-1][name + EVERY_STEP] = tensors.NUMBER

    def _elementwise(self, value: cst.BaseExpression, count: int) -> Optional[List[Optional[str]]]:
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == count:
            return [self.kind(el.value) for el in value.elements]
        if isinstance(value, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in value.slice):
            value = value.value  # `b, n = x.shape[:2]`: part of the shape
        if isinstance(value, cst.Attribute) and value.attr.value == "shape":
            return [tensors.NUMBER] * count  # `b, n, _ = x.shape`: Python ints
        element = self.element_kind(value) if isinstance(value, (cst.GeneratorExp, cst.ListComp)) else None
        if element in tensors.DEVICE_TENSORS:
            return [element] * count  # `src, tgt = (batch[k].to(dev) for k in ("src", "tgt"))`
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value in ("prepare", "setup") and len(value.args) == count:
                # a prepared loader yields batches already on the device
                return [tensors.LOADER if self.kind(arg.value) == tensors.HOST_LOADER else self.kind(arg.value)
                        for arg in value.args]
        return None

    def _module_tensors(self, func: cst.Attribute, target: cst.BaseExpression) -> bool:
        """``for p in model.parameters()``: ``p`` is a tensor; ``for name, p in
        model.named_parameters()``: ``name`` a string, ``p`` a tensor. True when it bound them."""
        owner_kind = self.kind(func.value)
        if owner_kind not in (None, tensors.MODULE):
            return False
        method = func.attr.value
        if method in api.MODULE_TENSOR_ITERATORS:
            self._bind_target(target, tensors.TENSOR)
            return True
        if method in api.MODULE_NAMED_TENSOR_ITERATORS and isinstance(target, cst.Tuple) and len(target.elements) == 2:
            self._bind_target(target.elements[0].value, tensors.OTHER)
            self._bind_target(target.elements[1].value, tensors.TENSOR)
            return True
        return False

    def _bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression, over_loader: bool,
                          item_kind: str = tensors.BATCH) -> None:
        """Kinds of a loop's names: ``enumerate`` and ``range`` give host ints, a mapping's keys
        are host values (``for k, v in batch.items()``), a loader gives batches (``item_kind``:
        host tensors when the loop moves them to a device itself); a list of instances of one
        class (``for hook in hooks:``) gives instances of it; a local generator what it yields."""
        yielded = self._yielded(iterable)
        if yielded is not None:
            self._bind_target(target, yielded)
            return
        if isinstance(iterable, (cst.Name, cst.Attribute)) and isinstance(target, cst.Name) and self.function is not None:
            self.passed_callables.loop_over(self.function, target.value, dotted(iterable) or "")
        self._loop_callables(target, iterable)
        listed = listed_name(iterable)
        appended = self.lookup(listed + LIST_OF_TENSORS) if listed is not None else None
        if appended is not None:  # `for h in reversed(history[:n])` of appended device tensors (or dicts of them)
            self._bind_target(target, appended)
            return
        items = class_of_elements(self.kind(iterable))
        if items is not None and isinstance(target, cst.Name):
            self._bind_target(target, None)
            self.instances.bind(".".join(self._prefix), target.value, items)
            return
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            called = iterable.func.value
            if called == "enumerate" and iterable.args and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                self._bind_target(target.elements[0].value, tensors.NUMBER)
                self._bind_loop_target(target.elements[1].value, iterable.args[0].value, over_loader, item_kind)
                return
            if called == "range":
                self._bind_target(target, tensors.NUMBER)
                return
            if called == "zip" and isinstance(target, cst.Tuple) and len(target.elements) == len(iterable.args) \
                    and not over_loader and all(arg.star == "" and arg.keyword is None for arg in iterable.args):
                for element, arg in zip(target.elements, iterable.args):  # `for res, tgt in zip(results, targets)`
                    self._bind_loop_target(element.value, arg.value, False)
                return
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) \
                and self._module_tensors(iterable.func, target):
            return
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) \
                and iterable.func.attr.value in ("items", "keys") and not iterable.args:
            mapping = self.kind(iterable.func.value)
            if iterable.func.attr.value == "keys":
                self._bind_target(target, tensors.OTHER)
            elif isinstance(target, cst.Tuple) and len(target.elements) == 2:
                self._bind_target(target.elements[0].value, tensors.OTHER)
                value = target.elements[1].value
                if mapping in (tensors.BATCH, tensors.HOST_BATCH):
                    self._bind_batch(value, mapping)  # a host batch's values are host tensors too
                elif tensors.is_metric(mapping):
                    self._bind_target(value, tensors.element_of(mapping))  # `for name, metric in metrics.items()`
                else:
                    on_device = mapping in tensors.DEVICE_TENSORS or mapping == tensors.TENSORS
                    self._bind_target(value, tensors.TENSOR if on_device else None)
            else:
                self._bind_target(target, None)
            return
        if over_loader and isinstance(target, cst.Tuple) and len(target.elements) == 2 \
                and isinstance(target.elements[0].value, cst.Name) and isinstance(target.elements[1].value, (cst.Tuple, cst.List)):
            # `for i, (x, y) in data_iter` of `data_iter = enumerate(loader)`: a counter and a batch
            self._bind_target(target.elements[0].value, tensors.NUMBER)
            self._bind_batch(target.elements[1].value, item_kind)
            return
        if over_loader:
            self._bind_batch(target, item_kind)
            return
        kind = self.kind(iterable) if not isinstance(iterable, (cst.Tuple, cst.List)) else tensors.tuple_kind(
            [self.kind(e.value) for e in iterable.elements if isinstance(e, cst.Element)])  # `for t in (x, *rest)`
        if kind in (tensors.BATCH, tensors.HOST_BATCH):
            self._bind_batch(target, kind)  # the items of a batch: where the batch is
        elif kind == tensors.TENSORS and isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) \
                and iterable.func.attr.value == "values":
            self._bind_target(target, tensors.TENSOR)
        elif kind in (tensors.HOST_TENSOR, tensors.NUMPY):
            self._bind_target(target, kind)  # rows of a host tensor or an array stay on the host
        elif kind == tensors.TENSORS and isinstance(target, (cst.Tuple, cst.List)):
            self._bind_batch(target, tensors.TENSOR)  # `for boxes, labels in targets`: parts of device items
        else:
            self._bind_target(target, tensors.element_of(kind) if isinstance(target, cst.Name) or kind in tensors.DEVICE_TENSORS
                              else None)

    def _bind_batch(self, target: cst.BaseExpression, kind: str) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_batch(element.value, kind)
        elif isinstance(target, (cst.Name, cst.Attribute)):
            self._bind_target(target, kind)

    def _annotated_kind(self, annotation: Optional[cst.Annotation]) -> Optional[str]:
        """``x: torch.Tensor`` / ``Optional[torch.Tensor]``: the author says it is a tensor (``annotations``)."""
        return tensor_annotation_kind(annotation.annotation, self.qualname) if annotation is not None else None

    def _mark_store(self, target: cst.CSTNode) -> None:
        if isinstance(target, (cst.Subscript, cst.Name, cst.Attribute)):
            self._stores.add(id(target))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._mark_store(element.value)

    def _learn_from_call(self, node: cst.Call, func: cst.BaseExpression, qual: Optional[str]) -> None:
        if isinstance(func, cst.Name) and func.value == "exec" and self.function is None:
            # `exec(open("configurator.py").read())` may override any global: their values are not facts
            for env in self._envs:
                for key in [k for k in env if k.endswith(EVERY_STEP)]:
                    del env[key]
        if isinstance(func, cst.Attribute):
            attr = func.attr.value
            if attr in ("to", "cuda"):
                site = self.metric(func.value)
                if site is not None:
                    site.moved = True
                    for member in site.members:
                        member.moved = True
            if attr == "backward" and not node.args:
                self._evidence(func.value, tensors.TENSOR)
            elif attr == "backward" and node.args:
                self._evidence(node.args[0].value, tensors.TENSOR)  # accelerator.backward(loss)
            elif attr in tensors.MODULE_EVIDENCE_METHODS and attr != "zero_grad":
                self._evidence(func.value, tensors.MODULE)
            if attr == "register_buffer":
                self._learn_buffer(func.value, node)
            elif attr == "append" and len(node.args) == 1 and isinstance(func.value, cst.Name) \
                    and self.kind(node.args[0].value) in tensors.DEVICE_TENSORS | {tensors.TENSORS} \
                    and self.lookup(func.value.value) in (None, tensors.OTHER):
                element = tensors.TENSOR if self.kind(node.args[0].value) in tensors.DEVICE_TENSORS else tensors.TENSORS
                self._bind(func.value.value, tensors.TENSORS)  # `res.append(acc.mul_(100))`, `micro.append({k: v.cuda() ...})`
                self._envs[-1][func.value.value + LIST_OF_TENSORS] = element
        if qual is not None and qual.startswith("torch.distributed.") and node.args:
            if qual.rsplit(".", 1)[-1] in ("all_reduce", "reduce", "broadcast", "all_gather_into_tensor"):
                self._evidence(node.args[0].value, tensors.TENSOR)

    def _learn_buffer(self, owner: cst.BaseExpression, node: cst.Call) -> None:
        """``self.register_buffer("n", torch.tensor(0))`` in an ``nn.Module`` of a file that uses an
        accelerator: ``self.n`` moves with the module (``.to(device)``), a tensor on the device."""
        frame = self.class_frame
        if not (isinstance(owner, cst.Name) and owner.value == "self" and frame is not None and frame.is_module
                and self.uses_accelerator and node.args and isinstance(node.args[0].value, cst.SimpleString)):
            return
        name = node.args[0].value.evaluated_value
        placed = len(node.args) > 1 and self._placed_by_optional_device(node.args[1].value)
        if isinstance(name, str) and name.isidentifier() and frame.attrs.get(f"self.{name}") is None:
            # `torch.tensor(0, device=device)` of `device=None`: on the CPU unless a caller says otherwise
            frame.attrs[f"self.{name}"] = tensors.HOST_TENSOR if placed else tensors.TENSOR

    def _placed_by_optional_device(self, value: cst.BaseExpression) -> bool:
        """A tensor built with ``device=`` a parameter of this function that defaults to None, in a function that moves
        its other contents to that device itself: its owner places it (an averaged copy of a model kept where it is
        built), on the CPU by default."""
        device = keyword_value(value, "device") if isinstance(value, cst.Call) else None
        node = self.function.node if self.function is not None else None
        if not isinstance(device, cst.Name) or not isinstance(node, cst.FunctionDef):
            return False
        optional = any(p.name.value == device.value and isinstance(p.default, cst.Name) and p.default.value == "None"
                       for p in (*node.params.params, *node.params.kwonly_params))
        # and the class places its contents itself (`self.module = self.module.to(device)`); a layer that only
        # passes `device=` on (factory keywords, as `nn.Linear` takes) moves with its model
        return optional and any(
            isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "to" and n.args
            and isinstance(n.args[0].value, cst.Name) and n.args[0].value.value == device.value
            for n in walk_code(node.body))
