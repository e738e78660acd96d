"""Table-driven tests of the knowledge tables and the facts built on them (device evidence,
guards), each row a small case that could go either way."""
from __future__ import annotations

import ast

import libcst as cst
import pytest

from syncfree_lint.analysis.call_refs import OVERRIDE_KEY
from syncfree_lint.analysis.device import may_use_accelerator, named_accelerators
from syncfree_lint.analysis.imports import ImportMap
from syncfree_lint.analysis.scope import (
    mentions_loader,
)
from syncfree_lint.analysis.guards import (
    is_equality_guard, is_flag_guard, is_host_branch, is_negated_flag, is_opt_in_call,
)
from syncfree_lint.config import Config, ConfigError, config_from_table
from syncfree_lint.knowledge import frequency as facts
from syncfree_lint.analysis.hooks import does_nothing, is_hook_name
from syncfree_lint.knowledge.callables import BUILTIN_BASES, MODULE_METHODS_RETURNING_SELF


@pytest.mark.parametrize("name,expected", [
    ("optimizer", True), ("self.optimizer", True), ("optimizer_g", True), ("d_optim", True),
    ("opt", True), ("scaler", True), ("grad_scaler", True), ("optimizers", True),
    ("lr_scheduler", False), ("scheduler", False), ("option", False), ("model", False), ("ema", False),
])
def test_optimizer_names(name: str, expected: bool) -> None:
    assert facts.is_optimizer_name(name) is expected


@pytest.mark.parametrize("name,expected", [
    ("env", True), ("self.envs", True), ("train_env", True), ("eval_envs", True), ("vec_env", True),
    ("environment", True), ("os.environ", False), ("envelope", False), ("optimizer", False), ("scheduler", False),
])
def test_environment_names(name: str, expected: bool) -> None:
    assert facts.is_environment_name(name) is expected


@pytest.mark.parametrize("name,expected", [
    ("train_loader", True), ("self.val_dataloader", True), ("trainloader", True), ("data_iter", True),
    ("loaders", True), ("dataset", False), ("batches", False), ("load_state", False),
])
def test_loader_names(name: str, expected: bool) -> None:
    assert facts.is_loader_name(name) is expected


@pytest.mark.parametrize("name,expected", [
    ("batch_size", True), ("self.eval_batch_size", True), ("args.bs", True), ("micro_bsz", True), ("bsz", True),
    ("batch_idx", False), ("n_batches", False), ("size", False), ("chunk_size", False), ("hidden_size", False),
])
def test_batch_size_names(name: str, expected: bool) -> None:
    assert facts.is_batch_size_name(name) is expected


@pytest.mark.parametrize("name,words,expected", [
    ("should_log", facts.LOGGING_FLAG_WORDS, True),
    ("args.with_tracking", facts.LOGGING_FLAG_WORDS, True),
    ("log_every", facts.LOGGING_FLAG_WORDS, True),
    ("logits", facts.LOGGING_FLAG_WORDS, False),
    ("catalog", facts.LOGGING_FLAG_WORDS, False),
    ("args.synchronize_step", facts.OPT_IN_FLAG_WORDS, True),
    ("self.cfg.debug", facts.OPT_IN_FLAG_WORDS, True),
    ("debugger_port", facts.OPT_IN_FLAG_WORDS, False),
    ("args.distributed", facts.OPT_IN_FLAG_WORDS + facts.LOGGING_FLAG_WORDS, False),
    ("use_amp", facts.OPT_IN_FLAG_WORDS + facts.LOGGING_FLAG_WORDS, False),
    ("plots", facts.LOGGING_FLAG_WORDS, True),
    ("self.validator.should_validate", facts.LOGGING_FLAG_WORDS, True),
    ("should_checkpoint", facts.LOGGING_FLAG_WORDS, True),
    ("plotly_theme", facts.LOGGING_FLAG_WORDS, False),
    ("invalidate_cache", facts.LOGGING_FLAG_WORDS, False),
])
def test_flag_words_match_whole_name_parts(name: str, words, expected: bool) -> None:
    assert facts.words_match(name, words) is expected


def _expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def _qualname(source: str):
    imports = ImportMap("m", False)
    for statement in cst.parse_module(source).body:
        for small in getattr(statement, "body", ()):
            if isinstance(small, cst.Import):
                imports.add_import(small)
            elif isinstance(small, cst.ImportFrom):
                imports.add_import_from(small)
    return imports.qualname


LOG, OPT = facts.LOGGING_FLAG_WORDS, facts.OPT_IN_FLAG_WORDS


@pytest.mark.parametrize("test,expected", [
    ("args.with_tracking", True), ("self.cfg.debug", True), ("args.synchronize_step", True),
    ("self.should_log()", True), ("is_main and args.verbose", True),
    ("args.distributed", False), ("scaler is not None", False), ("not should_log", False),
])
def test_flag_guards(test: str, expected: bool) -> None:
    assert is_flag_guard(_expr(test), LOG, OPT) is expected


@pytest.mark.parametrize("test,expected", [("not should_log", True), ("not self.is_log_step(step)", True),
                                           ("should_log", False), ("not (a or b)", False)])
def test_negated_flags(test: str, expected: bool) -> None:
    assert is_negated_flag(_expr(test)) is expected


@pytest.mark.parametrize("test,expected", [
    ("torch.onnx.is_in_onnx_export()", True), ("torch.jit.is_scripting()", True),
    ("torch.cuda.is_available()", False), ("is_in_onnx_export()", False),
])
def test_opt_in_calls(test: str, expected: bool) -> None:
    assert is_opt_in_call(_expr(test), _qualname("import torch\n")) is expected


@pytest.mark.parametrize("test,counters,expected", [
    ("batch_idx == 0", {"batch_idx"}, True),
    ("step == warmup_steps", {"step", "warmup_steps"}, True),
    ("step == 0 and is_main", {"step"}, True),
    ("args.model == 'resnet'", set(), False),
    ("step != 0", {"step"}, False),
    ("loss == 0", set(), False),
])
def test_equality_guards(test: str, counters: set, expected: bool) -> None:
    is_counter = lambda e: isinstance(e, cst.Name) and e.value in counters  # noqa: E731
    assert is_equality_guard(_expr(test), is_counter) is expected


@pytest.mark.parametrize("test,expected", [
    ('t.device == torch.device("cpu")', True), ('t.device.type == "cpu"', True),
    ('FLAGS.auc_device == "CPU"', True), ('args.device == "cuda"', False), ("a == b", False),
])
def test_host_branches(test: str, expected: bool) -> None:
    assert is_host_branch(_expr(test)) is expected


@pytest.mark.parametrize("iterable,expected", [
    ("train_loader", True), ("enumerate(self.val_loader)", True), ("range(len(data_loader))", True),
    ("tqdm(loader, desc='x')", True), ("range(10)", False), ("dataset", False), ("batch.items()", False),
])
def test_loader_iterables(iterable: str, expected: bool) -> None:
    assert mentions_loader(_expr(iterable)) is expected


@pytest.mark.parametrize("source,expected", [
    # library code that never names a device: the caller chooses one
    ("def train(model, loader, opt):\n    for x in loader:\n        model(x).backward()\n", True),
    # a word in a comment or docstring is not evidence
    ('"""Runs on cuda."""\nimport torch\nm = torch.nn.Linear(2, 2)\nfor _ in range(2):\n    print(m(torch.ones(2)))\n', False),
    ("import torch\nm = torch.nn.Linear(2, 2)  # cuda later\nfor _ in range(2):\n    m(torch.ones(2))\n", False),
    # explicit CPU evidence
    ('import torch\ndevice = torch.device("cpu")\nm = torch.nn.Linear(2, 2).to(device)\n', False),
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--device', default='cpu')\n", False),
    # accelerator evidence wins over CPU evidence
    ('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n', True),
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--cuda', action='store_true')\n", True),
    ("import torch\nd = torch.accelerator.current_accelerator()\n", True),
    ("from accelerate import Accelerator\n", True),
    # self-contained but moves things to a device chosen elsewhere
    ("import torch\ndef f(device):\n    return torch.nn.Linear(2, 2).to(device)\n", True),
])
def test_device_evidence(source: str, expected: bool) -> None:
    assert may_use_accelerator(source, ast.parse(source)) is expected


@pytest.mark.parametrize("source,expected", [
    ('import torch\nx = torch.ones(2).to("cuda:0")\n', {"cuda"}),
    ("import torch\nfrom apex.optimizers import FusedAdam\nx = torch.ones(2).cuda()\n", {"cuda"}),  # apex is CUDA only
    ("import torch.cuda.amp\n", {"cuda"}),
    ("import deepspeed\nx = 1\n", {"any"}),  # deepspeed picks an accelerator at run time
    ("from accelerate import Accelerator\n", {"any"}),
    ('import torch\nd = "mps" if torch.backends.mps.is_available() else "cuda"\n', {"cuda", "mps"}),
])
def test_named_accelerators(source: str, expected: set) -> None:
    assert set(named_accelerators(ast.parse(source))) == expected
    assert set(facts.CUDA_ONLY_MODULES) <= set(facts.ACCELERATOR_MODULES)


def test_flag_words_are_config_keys() -> None:
    config = config_from_table({"logging-guards": ["Emit"], "opt-in-flags": ["_probe"]}, "pyproject.toml", ".", ["SFL101"])
    assert "emit" in config.all_logging_words and "probe" in config.all_opt_in_words
    assert set(facts.LOGGING_FLAG_WORDS) <= set(config.all_logging_words)
    assert Config().all_opt_in_words == facts.OPT_IN_FLAG_WORDS
    with pytest.raises(ConfigError):
        config_from_table({"opt-in-flags": "debug"}, "pyproject.toml", ".", ["SFL101"])


def test_configured_flag_words_guard_a_step(tmp_path) -> None:
    from syncfree_lint import engine

    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "def train(model, loader, optimizer, args):\n"
        "    for x in loader:\n"
        "        loss = model(x.cuda())\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        if args.emit_stats:\n"
        "            print(loss.item())\n"
    )
    plain = engine.run([str(script)], Config())
    configured = engine.run([str(script)], Config(logging_guards=("emit",)))
    assert [d.line for d in plain.diagnostics] == [8]
    assert configured.diagnostics == []


@pytest.mark.parametrize("source,expected", [
    # moving a value to the host, or loading onto it, is not a choice of device
    ("import torch\nsd = torch.load('w.pt', map_location='cpu')\nm = torch.nn.Linear(2, 2)\nm.load_state_dict(sd)\n"
     "def f(m, x):\n    return m(x).to('cpu')\n", True),
    ("import torch\ndef main(device='cpu'):\n    return torch.nn.Linear(2, 2).to(device)\n", False),
    ("import torch\nclass C:\n    def __init__(self):\n        self.device = 'cpu'\n", False),
])
def test_cpu_evidence_is_a_choice_of_device(source: str, expected: bool) -> None:
    assert may_use_accelerator(source, ast.parse(source)) is expected


# ---------------------------------------------------------------- torch API tables, through inference
from syncfree_lint.analysis import tensors as T  # noqa: E402
from syncfree_lint.analysis.module import ModuleAnalysis  # noqa: E402
from syncfree_lint.knowledge import torch_api as api  # noqa: E402


def kind_of(expression: str) -> object:
    """The kind bound to ``v = <expression>`` after ``x`` is made a device tensor."""
    source = f'import torch\nimport numpy\nx = torch.randn(3, device="cuda")\nv = {expression}\n'
    walk = ModuleAnalysis("t.py", source, cst.parse_module(source), [], frozenset())
    walk.run()
    return walk.module_env.get("v")


@pytest.mark.parametrize("qualname", sorted(api.TORCH_NUMBER))
def test_torch_number_functions(qualname: str) -> None:
    assert kind_of(f"{qualname}()") == T.NUMBER


@pytest.mark.parametrize("name", sorted(api.TORCH_FACTORIES))
def test_factories_are_host_unless_given_a_device(name: str) -> None:
    assert kind_of(f"torch.{name}(3)") in (T.HOST_TENSOR, T.MASK)
    assert kind_of(f'torch.{name}(3, device="cuda")') in (T.TENSOR, T.MASK)


@pytest.mark.parametrize("expression, kind", [
    ("torch.ones(3).type_as(x)", T.TENSOR),  # takes the device of its argument
    ("torch.ones(3).type_as(torch.zeros(2))", T.HOST_TENSOR),
    ("torch.ones(3).type_as(unknown)", None),
    ('torch.ones(3).type("torch.cuda.LongTensor")', T.TENSOR),
    ('torch.ones(3).type("torch.LongTensor")', T.HOST_TENSOR),
])
def test_host_tensors_retyped(expression: str, kind: object) -> None:
    assert kind_of(expression) == kind


@pytest.mark.parametrize("expression, kind", [
    ('["<pad>"] + ["a", "b"]', T.OTHER),  # a Python sequence, indexable only by Python ints
    ("[0] * 3", T.OTHER),
    ('"ab" + "c"', T.OTHER),
    ("[0] + x", T.TENSOR),  # a list and a tensor: the tensor's arithmetic
    ("[0] - [1]", None),
])
def test_python_sequences_joined(expression: str, kind: object) -> None:
    assert kind_of(expression) == kind


@pytest.mark.parametrize("name", sorted(api.MASK_FUNCTIONS - {"bool"}))
def test_mask_functions_on_a_device_tensor(name: str) -> None:
    assert kind_of(f"torch.{name}(x, x)") == T.MASK


@pytest.mark.parametrize("method", sorted(api.TENSOR_NUMBER_METHODS - {"__len__"}))
def test_tensor_methods_that_return_numbers(method: str) -> None:
    assert kind_of(f"x.{method}()") == T.NUMBER


@pytest.mark.parametrize("attr", sorted(api.TENSOR_NON_TENSOR_ATTRS))
def test_tensor_attributes_that_are_not_tensors(attr: str) -> None:
    assert kind_of(f"x.{attr}") == T.OTHER


@pytest.mark.parametrize("qualname", sorted(api.MODULE_WRAPPERS - {"torch.compile"}))
def test_module_wrappers(qualname: str) -> None:
    assert kind_of(f"{qualname}(x)") == T.MODULE


@pytest.mark.parametrize("qualname", sorted(api.LOADER_CLASSES))
def test_loader_classes(qualname: str) -> None:
    assert kind_of(f"{qualname}([])") == T.HOST_LOADER  # a DataLoader built here yields host tensors


@pytest.mark.parametrize("expression,expected", [
    ("x.cpu()", T.HOST_TENSOR), ('x.to("cpu")', T.HOST_TENSOR), ("x.numpy()", T.NUMPY),
    ("numpy.ones(3)", T.NUMPY), ("len(x)", T.NUMBER), ("x.sum() / 2", T.TENSOR), ("x > 0", T.MASK),
])
def test_transitions(expression: str, expected: str) -> None:
    assert kind_of(expression) == expected


@pytest.mark.parametrize("source,expected", [
    # a module of definitions builds layers but is library code: its caller chooses the device
    ("import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = nn.Linear(2, 2)\n", True),
    # the same with a script entry point is a CPU-only script
    ("import torch.nn as nn\nnet = nn.Linear(2, 2)\nfor _ in range(3):\n    net.zero_grad()\n", False),
    ("import torch.nn as nn\ndef main():\n    net = nn.Linear(2, 2)\nif __name__ == '__main__':\n    main()\n", False),
])
def test_self_contained_cpu_only_for_scripts(source: str, expected: bool) -> None:
    assert may_use_accelerator(source, ast.parse(source)) is expected


@pytest.mark.parametrize("base,method", [(base, method) for base, methods in sorted(facts.FRAMEWORK_BATCH_HOOKS.items())
                                         for method in sorted(methods)])
def test_framework_batch_hooks_are_steps(tmp_path, base: str, method: str) -> None:
    from syncfree_lint import engine

    script = tmp_path / "hooks.py"
    script.write_text(
        "import torch\n"
        f"from framework import {base}\n"
        f"class Mine({base}):\n"
        f"    def {method}(self, *args, **kwargs):\n"
        "        return torch.ones(3, device='cuda').sum().item()\n"
        f"class Other:\n"
        f"    def {method}(self, *args, **kwargs):\n"
        "        return torch.ones(3, device='cuda').sum().item()\n"
    )
    lines = [d.line for d in engine.run([str(script)], Config()).diagnostics]
    assert 5 in lines, "the framework's hook runs once per batch"
    if method not in Config().all_step_functions:
        assert 8 not in lines, "the same name on an unrelated class is not a hook"


@pytest.mark.parametrize("expression,expected", [
    ("sum(x)", T.TENSOR), ("max(x)", T.TENSOR), ("sum([1, 2])", None),
    ("unknown.to(device)", T.TENSOR), ("unknown.to(self.device)", T.TENSOR), ("unknown.to(dev)", None), ('unknown.to("cuda:0")', T.TENSOR),
    ("unknown.cuda()", T.TENSOR), ("unknown.to(torch.float16)", None), ('unknown.to("cpu")', T.HOST_TENSOR),
    # a tuple display holds its elements' kinds: its parts are known by position
    ("(unknown.cuda(), 3)[0]", T.TENSOR), ("(unknown.cuda(), 3)[1]", T.NUMBER), ("(1, 2)", T.OTHER),
])
def test_builtins_over_elements_and_moves_of_unknown_values(expression: str, expected: object) -> None:
    assert kind_of(expression) == expected


# ---------------------------------------------------------------- dtypes: float or count
def _number_kind(expression: str) -> str:
    from syncfree_lint.analysis.number_kind import is_count, is_float
    from syncfree_lint.analysis.scope_index import ScopeIndex

    module = cst.parse_module(f"import torch\nimport torch.nn.functional as F\nvalue = {expression}\n")
    imports = ImportMap("", False)
    for statement in module.body[:2]:
        imports.add_import(statement.body[0])  # type: ignore[attr-defined]
    expr = module.body[-1].body[0].value  # type: ignore[attr-defined]
    index = ScopeIndex(module)
    if is_float(expr, index, imports.qualname, set()):
        return "float"
    return "int" if is_count(expr, imports.qualname) else "unknown"


FUNCTIONS = """\
import torch
from timm.utils import accuracy


def top1(out, y):
    return (out.argmax(1) == y).float().mean()


def fast_adapt(out, y, criterion):
    err = criterion(out, y)
    return err, top1(out, y)


def raw(out):
    return out


def shadowed(out):
    return out.float()


shadowed = raw


def reduce_tensor(tensor, n):
    rt = tensor.clone()
    torch.distributed.all_reduce(rt)
    rt /= n
    return rt


def halves(out):
    if out is None:
        return
    return out.float() / 2


def step(out, y, criterion):
    a = top1(out, y)
    e, b = fast_adapt(out, y, criterion)
    c, d = accuracy(out, y, topk=(1, 5))
    r = raw(out)
    h = halves(out)
    n, m = raw(out), raw(out)
    s = reduce_tensor(criterion(out, y).data, 2)
    t = reduce_tensor(out.argmax(1), 2)
    w = shadowed(out)
"""


@pytest.mark.parametrize("name, expected", [
    ("a", True), ("e", True), ("b", True), ("c", True), ("d", True),  # local functions, timm's accuracy
    ("r", False),  # returns its parameter: its dtype is the caller's
    ("h", False),  # one `return` gives None
    ("n", False),  # a tuple built here, not a call's result
    ("s", True),   # reduce_tensor keeps its argument's dtype: a loss's `.data`
    ("t", False),  # ... and here its argument is an index tensor
    ("w", False),  # the module binds `shadowed` again: the call may run something else
])
def test_float_through_functions_of_the_file(name, expected):
    from syncfree_lint.analysis.number_kind import is_float
    from syncfree_lint.analysis.scope_index import FileContext, ScopeIndex

    module = cst.parse_module(FUNCTIONS)
    imports = ImportMap("", False)
    imports.add_import(module.body[0].body[0])  # type: ignore[attr-defined]
    imports.add_import_from(module.body[1].body[0])  # type: ignore[attr-defined]
    step = module.body[-1]
    index = ScopeIndex(step, FileContext(module))
    assert is_float(cst.Name(name), index, imports.qualname, set()) is expected


@pytest.mark.parametrize("expression, expected", [
    ("criterion(out, y)", "float"),
    ("F.cross_entropy(out, y)", "float"),
    ("loss.mean()", "float"),
    ("loss_scale(x)", "unknown"),           # NOT_LOSS_WORDS
    ("(pred == y).sum()", "int"),
    ("pred.eq(y).sum()", "int"),
    ("torch.sum(pred == y)", "int"),
    ("torch.count_nonzero(mask)", "int"),
    ("(pred == y).float().sum()", "float"),
    ("(pred == y).sum(dtype=torch.float32)", "unknown"),
    ("x.long()", "int"),
    ("x.to(torch.int64)", "int"),
    ("model(x).sum()", "unknown"),
    ("out.argmax()", "unknown"),
    ("(a > 0) & (b > 0)", "unknown"),       # a bool tensor, not yet summed
    (("((a > 0) & (b > 0)).sum()"), "int"),
])
def test_number_kinds(expression: str, expected: str) -> None:
    assert _number_kind(expression) == expected


def test_int64_tables_match_torch() -> None:
    """The casts and dtypes called int64 are exactly those torch makes int64; a sum of integers is int64."""
    torch = pytest.importorskip("torch")
    from syncfree_lint.knowledge import dtypes

    for method in dtypes.INT_CASTS:
        assert (getattr(torch.ones(2), method)().dtype == torch.int64) == (method in dtypes.INT64_CASTS), method
    for name in dtypes.INT_DTYPES:
        assert (getattr(torch, name.split(".")[1]) == torch.int64) == (name in dtypes.INT64_DTYPES), name
    assert torch.ones(2, dtype=torch.int32).sum().dtype == torch.int64
    assert (torch.ones(2) > 0).sum().dtype == torch.int64


@pytest.mark.parametrize("expression, wide", [
    ("(pred == y).sum()", True),
    ("torch.count_nonzero(mask)", True),
    ("lengths.sum().long()", True),
    ("x.to(torch.int64)", True),
    ("lengths.int().sum()", True),          # a sum of int32 is int64
    ("lengths.sum().int()", False),         # int32: wraps past 2**31 when accumulated
    ("x.to(torch.int32)", False),
    ("(pred == y).sum().short()", False),
])
def test_count_width(expression: str, wide: bool) -> None:
    from syncfree_lint.analysis.number_kind import count_is_int64

    module = cst.parse_module(f"import torch\nvalue = {expression}\n")
    imports = ImportMap("", False)
    imports.add_import(module.body[0].body[0])  # type: ignore[attr-defined]
    expr = module.body[-1].body[0].value  # type: ignore[attr-defined]
    assert count_is_int64(expr, imports.qualname) is wide


def test_keeping_methods_store_the_object_itself() -> None:
    """Each method named as keeping a value stores that very object (no copy, no read)."""
    import collections
    import queue

    from syncfree_lint.knowledge.containers import KEEPING_METHODS

    value = object()
    holders = {"append": [], "insert": [], "appendleft": collections.deque(), "put": queue.Queue(),
               "put_nowait": queue.Queue(), "add": set()}
    assert set(holders) == KEEPING_METHODS
    for method, holder in holders.items():
        args = (0, value) if method == "insert" else (value,)
        getattr(holder, method)(*args)
        stored = holder.get() if isinstance(holder, queue.Queue) else next(iter(holder))
        assert stored is value, method


def test_factory_tables_name_torch_functions() -> None:
    """SFL403's fix tables: each name is a torch function; the exact ones are exact on the host."""
    torch = pytest.importorskip("torch")
    from syncfree_lint.knowledge import dtypes

    for name in (dtypes.EXACT_FACTORIES | dtypes.INTEGER_RANGE_FACTORIES | dtypes.HOST_DATA_CONSTRUCTORS
                 | dtypes.RANDOM_FACTORIES):
        assert callable(getattr(torch, name)), name
    assert not (dtypes.EXACT_FACTORIES | dtypes.INTEGER_RANGE_FACTORIES) & (dtypes.HOST_DATA_CONSTRUCTORS | dtypes.RANDOM_FACTORIES)
    for name in dtypes.EXACT_FACTORIES:
        for dtype in (torch.float16, torch.bfloat16, torch.int8, torch.bool):
            assert torch.equal(getattr(torch, name)(3).to(dtype), getattr(torch, name)(3, dtype=dtype)), (name, dtype)


# ---------------------------------------------------------------- metric API the switch keeps
@pytest.mark.parametrize("name", sorted(__import__("syncfree_lint.knowledge.metric_api", fromlist=["x"]).SHARED_METRIC_API))
def test_shared_metric_api_exists_in_both_packages(name: str) -> None:
    torchmetrics = pytest.importorskip("torchmetrics")
    syncfree = pytest.importorskip("syncfree")
    reference = torchmetrics.Accuracy(task="multiclass", num_classes=3)
    ours = syncfree.Accuracy(task="multiclass", num_classes=3)
    assert hasattr(reference, name) and hasattr(ours, name)


def test_torchmetrics_internals_are_not_shared() -> None:
    from syncfree_lint.knowledge.metric_api import SHARED_METRIC_API

    assert not {"tp", "fp", "metric_state", "update_count", "plot", "merge_state", "sync_context"} & SHARED_METRIC_API


# --------------------------------------------------------------------------- APIs that sync inside
def _syncing(source: str):
    import textwrap

    from syncfree_lint import engine
    return {d.line for d in engine.lint_text("t.py", textwrap.dedent(source), Config()) if d.code == "SFL111"}


@pytest.mark.parametrize("call,expected", [
    ("dist.barrier()", True), ("dist.all_gather_object(out, stats)", True),
    ("dist.broadcast_object_list(objs)", True), ("dist.all_reduce(t)", False), ("dist.get_rank()", False),
    ("scaler.get_scale()", True), ("scaler.state_dict()", True), ("scaler.update()", False),
    ("other.get_scale()", True), ("other.state_dict()", False), ("np_scaler.get_scale()", False),
    ("torch.equal(model(x), y)", True), ("torch.allclose(model(x), y)", True), ("model(x).equal(y)", True),
    ("torch.is_nonzero(model(x).sum())", True), ("torch.testing.assert_close(model(x), y)", True),
    ("torch.equal(torch.ones(2), torch.zeros(2))", False), ("torch.ones(2).allclose(torch.zeros(2))", False),
    ("np.allclose(stats, objs)", False), ("torch.equal(t, t)", False),
    ("lbfgs.step(lambda: model(x).mean())", True), ("optimizer.step(lambda: model(x).mean())", False),
    ("torch.multinomial(model(x).softmax(-1), 1)", True), ("model(x).softmax(-1).multinomial(1)", True),
    ("torch.multinomial(model(x).softmax(-1), 4)", True), ("torch.multinomial(model(x), 1, replacement=True)", True),
    ("torch.multinomial(model(x).softmax(-1), 4, replacement=True)", False),
    ("torch.multinomial(torch.ones(4), 1)", False), ("np.random.multinomial(4, stats)", False),
    ("torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)", True),
    ("torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)", False),
    ("torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=False)", False),
    ("torch.distributions.Normal(model(x), 1.0)", True), ("torch.distributions.normal.Normal(model(x), 1.0)", True),
    ("torch.distributions.Categorical(logits=model(x))", True),
    ("torch.distributions.Categorical(logits=model(x), validate_args=False)", False),
    ("torch.distributions.Normal(0.0, 1.0)", False), ("torch.distributions.Independent(stats, 1)", False),
    ("plateau.step(model(x).mean().detach())", True), ("plateau.step(0.5)", False), ("plateau.step()", False),
    ("adaptive(model(x), y.cuda())", True), ("adaptive.log_prob(model(x))", False),
])
def test_syncing_api_table(call: str, expected: bool) -> None:
    from syncfree_lint.knowledge.syncing_api import (
        MULTINOMIAL_FUNCTIONS, NONFINITE_CHECKED_FUNCTIONS, READING_FUNCTIONS, READING_METHODS, SCALER_ONLY_METHODS,
        SYNCING_FUNCTIONS, SYNCING_METHODS,
    )
    assert "torch.distributed.barrier" in SYNCING_FUNCTIONS and "get_scale" in SCALER_ONLY_METHODS
    assert "torch.equal" in READING_FUNCTIONS and "allclose" in READING_METHODS
    assert set(SYNCING_METHODS["torch.amp.GradScaler"]) == {"get_scale", "state_dict"}
    assert "torch.multinomial" in MULTINOMIAL_FUNCTIONS and "torch.nn.utils.clip_grad_norm_" in NONFINITE_CHECKED_FUNCTIONS
    source = f"""
        import numpy as np
        import torch
        import torch.distributed as dist
        def train(model, loader, optimizer, other, out, stats, objs, t):
            scaler = torch.amp.GradScaler("cuda")
            np_scaler = np.float32(2.0)
            lbfgs = torch.optim.LBFGS(model.parameters())
            plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
            adaptive = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 100, [10, 50]).cuda()
            for x, y in loader:
                scaler.scale(model(x).mean()).backward()
                scaler.step(optimizer)
                {call}
    """
    assert bool(_syncing(source)) is expected


@pytest.mark.parametrize("test,expected", [
    ("model(x.cuda()).loss > 3", True), ("model(x.cuda()).logits.max() > 3", True),
    ("model(x.cuda()).n_tokens > 3", False), ("model(x.cuda()).shape[0] > 3", False),
])
def test_fields_of_a_model_output_are_tensors(test: str, expected: bool) -> None:
    from syncfree_lint import engine
    source = f"""
import torch
def train(model, loader, optimizer):
    for x, y in loader:
        if {test}:
            continue
        model(x.cuda()).loss.backward()
        optimizer.step()
"""
    found = {d.code for d in engine.lint_text("t.py", source, Config())}
    assert ("SFL106" in found) is expected


@pytest.mark.parametrize("name,expected", [
    ("model", True), ("policy_net", True), ("self.encoder", True), ("ddp_model", True), ("target_net", True),
    ("d_model", False), ("model_fn", False), ("model_name", False), ("num_model", False), ("modeling", False),
    ("network_dir", False), ("netloc", False),
    ("build_model", False), ("load_model", False), ("get_policy_net", False), ("create_encoder", False),
    ("teacher_model", True),
])
def test_module_names(name: str, expected: bool) -> None:
    assert facts.is_module_name(name) is expected


@pytest.mark.parametrize("expr,expected", [
    ("abs(p - 0.5) < 0.05", True), ("round(p) > 1", True), ("abs(n - 1) < 2", False),
])
def test_builtins_that_keep_a_tensor(expr: str, expected: bool) -> None:
    import textwrap

    from syncfree_lint import engine
    source = textwrap.dedent(f"""
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                p = model(x.cuda()).mean()
                n = len(y)
                if {expr}:
                    print("edge")
                p.backward()
                optimizer.step()
    """)
    found = {d.code for d in engine.lint_text("t.py", source, Config())}
    assert ("SFL106" in found) is expected


def _edges_of(source: str):
    from syncfree_lint import engine
    from syncfree_lint.config import Config

    config = Config()
    facts = engine.lint_source("pkg/train.py", source, config, config.enabled_codes(engine.DEFAULTS))
    return [edge.target for edge in facts.edges if edge.imported and not edge.target.startswith(OVERRIDE_KEY)]


@pytest.mark.parametrize("base", sorted(BUILTIN_BASES))
def test_methods_of_builtin_bases_are_never_looked_up_in_the_run(base: str) -> None:
    body = f"class Table({base}):\n    def fit(self, loader):\n        for batch in loader:\n            self.record(batch)\n"
    assert _edges_of(body) == []
    imported = "from pkg.base import Recorder\n" + body.replace(f"({base})", "(Recorder)")
    assert _edges_of(imported) == ["pkg.base.Recorder.record"]  # a project base: the run resolves it


@pytest.mark.parametrize("name,expected", [
    ("trainer.is_last_batch", True), ("end_of_epoch", True), ("self.last_step", True),
    ("last_loss", False), ("batch_size", False),
])
def test_flags_of_the_step_that_ends_an_epoch_guard_like_logging_flags(name: str, expected: bool) -> None:
    assert facts.words_match(name, facts.LOGGING_FLAG_WORDS) is expected


@pytest.mark.parametrize("method", sorted(MODULE_METHODS_RETURNING_SELF))
def test_module_methods_returning_self_return_the_module(method: str) -> None:
    torch = pytest.importorskip("torch")
    module = torch.nn.Linear(2, 2)
    args = {"to": ("cpu",), "type": (torch.float32,), "apply": (lambda m: None,), "to_empty": (),
            "cuda": None, "xpu": None}.get(method, ())
    if args is None:  # needs the device it names
        pytest.skip(f"{method}() needs its accelerator")
    if method == "to_empty":
        args = ()
        result = module.to_empty(device="cpu")
    else:
        result = getattr(module, method)(*args)
    assert result is module


@pytest.mark.parametrize("name,expected", [
    ("on_batch_end", True), ("after_backward", True), ("before_train_iter", True),
    ("update", False), ("__on_x__", False), ("step", False),
])
def test_hook_names(name: str, expected: bool) -> None:
    assert is_hook_name(name) is expected


@pytest.mark.parametrize("body,expected", [
    ("pass", True), ("...", True), ('"""Called once per epoch."""', True), ("return", True),
    ("return None", True), ("raise NotImplementedError", True), ('"""doc"""\n    pass', True),
    ("print(x)", False), ("return 1", False), ("raise ValueError()", False),
])
def test_do_nothing_bodies_declare_a_hook(body: str, expected: bool) -> None:
    node = cst.parse_module(f"def on_x(self, x):\n    {body}\n").body[0]
    assert does_nothing(node) is expected


@pytest.mark.parametrize("name", sorted(facts.NO_GRAD_CONTEXTS))
def test_no_grad_contexts_turn_gradients_off(name: str) -> None:
    torch = pytest.importorskip("torch")
    obj = torch
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    with obj():
        assert not torch.is_grad_enabled()


@pytest.mark.parametrize("decorator,expected", [
    ("@trainer.on(Events.ITERATION_COMPLETED)", True),
    ("@engine.on(Events.GET_BATCH_COMPLETED)", True),
    ("@trainer.on(Events.ITERATION_COMPLETED(every=100))", False),
    ("@trainer.on(Events.ITERATION_COMPLETED, every=50)", False),
    ("@trainer.on(Events.ITERATION_COMPLETED, once=1)", False),
    ("@trainer.on(Events.EPOCH_COMPLETED)", False),
    ("@app.route('/step')", False),
    ("@engine.on('iteration_completed')", True),
    ("@engine.on('epoch_completed')", False),
    ("@engine.on('iteration_completed', every=10)", False),
])
def test_event_handlers_fired_every_iteration(decorator: str, expected: bool) -> None:
    from syncfree_lint.analysis.events import per_iteration_handler
    node = cst.parse_module(f"{decorator}\ndef handler(engine):\n    pass\n").body[0]
    assert per_iteration_handler(node) is expected


# --------------------------------------------------------------------------- stop 32: classes from fresh style programs
def _codes(source: str, files=None):
    import textwrap

    from syncfree_lint import engine
    return sorted((d.line, d.code) for d in engine.lint_text("t.py", textwrap.dedent(source), Config()))


def test_a_fitted_scaler_is_an_instance_of_its_class() -> None:
    """`scaler = Scaler().fit(x)`: an estimator's `fit` returns it (knowledge.callables)."""
    from syncfree_lint.knowledge.callables import METHODS_RETURNING_SELF_BY_CONVENTION

    assert "fit" in METHODS_RETURNING_SELF_BY_CONVENTION
    source = """
        import torch
        class Scaler:
            def fit(self, data):
                self.mean = data.mean(0)
                return self
            def inverse(self, x, ids):
                rows = ids.cpu()
                return x * 2
        def evaluate(model, loader, scaler, device):
            with torch.no_grad():
                for x, ids in loader:
                    x, ids = x.to(device), ids.to(device)
                    scaler.inverse(model(x), ids)
        def main(model, loader, data, device):
            scaler = Scaler().fit(data)
            evaluate(model, loader, scaler, device)
    """
    assert (8, "SFL102") in _codes(source)


def test_a_factory_returning_a_closure_hands_over_that_function() -> None:
    source = """
        import torch
        def make_hook(every):
            def hook(loss):
                print(loss.item())
            return hook
        def local_train(model, opt, loader, device, on_step=None):
            for x, y in loader:
                loss = model(x.to(device)).sum()
                loss.backward()
                opt.step()
                on_step(loss.detach())
        def main(model, opt, loader, device):
            hook = make_hook(10)
            local_train(model, opt, loader, device, on_step=hook)
    """
    assert (5, "SFL101") in _codes(source)


@pytest.mark.parametrize("line,expected", [
    ("prox = sum((p - a).pow(2).sum() for p, a in zip(model.parameters(), anchor))", True),
    ("prox = sum(p.pow(2).sum() for p in model.parameters())", True),
    ("prox = sum(v.item() for v in model(x))", False),
    ("prox = sum([1.0, 2.0])", False),
])
def test_builtin_sum_of_device_tensors_is_a_tensor(line: str, expected: bool) -> None:
    source = f"""
        import torch
        def train(model, loader, opt, device):
            anchor = [p.detach().clone() for p in model.parameters()]
            for x, y in loader:
                x = x.to(device)
                {line}
                model(x).sum().backward()
                opt.step()
                if prox > 1:
                    pass
    """
    assert ((10, "SFL106") in _codes(source)) is expected


@pytest.mark.parametrize("call,expected", [
    ("losses.topk(k)", True), ("torch.topk(losses, k)", True), ("losses.narrow(0, 0, k)", True),
    ("losses.view(k, -1)", True), ("losses.repeat(k)", True),
    ("losses.topk(3)", False), ("losses.view(x.shape[0], -1)", False), ("self_expand(losses)", False),
    ("model.expand(losses)", False),
])
def test_tensor_sizes_of_tensor_methods(call: str, expected: bool) -> None:
    from syncfree_lint.knowledge.torch_api import TENSOR_INT_ARGUMENT_METHODS

    assert {"topk", "narrow", "view", "reshape"} <= TENSOR_INT_ARGUMENT_METHODS
    source = f"""
        import torch
        def train(model, loader, opt, device, self_expand):
            for x, y in loader:
                x = x.to(device)
                losses = model(x)
                k = (losses > losses.mean()).sum()
                out = {call}
                out.sum().backward()
                opt.step()
    """
    assert ((8, "SFL112") in _codes(source)) is expected


def test_parts_of_a_host_batch_drawn_with_next_stay_on_the_host() -> None:
    """`x, y, idx = next(batches)` of a DataLoader built here: `idx` is never moved."""
    source = """
        import torch
        from torch.utils.data import DataLoader
        def main(train_set, device, model, opt):
            batches = iter(DataLoader(train_set, batch_size=4))
            for step in range(10):
                x, y, idx = next(batches)
                x, y = x.to(device), y.to(device)
                model(x).sum().backward()
                opt.step()
                ids = idx.numpy()
                seen = y.cpu()
    """
    assert _codes(source) == [(12, "SFL102")]


def test_a_torch_function_of_a_python_number_is_not_a_tensor() -> None:
    """`torch.clamp(n, ...)` of an int raises: that binding runs only where `n` is a tensor."""
    source = """
        import torch
        def train(model, loader, opt, device, pre_nms_topk):
            for x, y in loader:
                logits = model(x.to(device))
                hw = logits.shape[1]
                if isinstance(hw, torch.Tensor):
                    k = torch.clamp(hw, max=pre_nms_topk)
                else:
                    k = min(hw, pre_nms_topk)
                logits.topk(k, dim=1).values.sum().backward()
                opt.step()
    """
    assert not [code for _, code in _codes(source) if code == "SFL112"]
    counted = source.replace("hw = logits.shape[1]", "hw = (logits > 0).sum()")
    assert [code for _, code in _codes(counted) if code == "SFL112"] == ["SFL112"]


@pytest.mark.parametrize("built,expected", [
    ("torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=1, num_heads=1, hidden_dim=8, "
     "mlp_dim=8)", True),
    ("torchvision.models.resnet18(weights=None)", True), ("timm.create_model('resnet18')", True),
    ("torchvision.models.get_weight('ResNet18_Weights.DEFAULT')", False),
])
def test_models_of_model_libraries_are_modules(built: str, expected: bool) -> None:
    from syncfree_lint.knowledge.torch_api import MODEL_FACTORIES, MODEL_LIBRARY_PREFIXES

    assert "timm.create_model" in MODEL_FACTORIES and "torchvision.models." in MODEL_LIBRARY_PREFIXES
    source = f"""
        import timm
        import torch
        import torchvision
        def evaluate(scorer, loader, device):
            with torch.no_grad():
                for x, y in loader:
                    out = scorer(x.to(device))
                    keep = out.amax(1) > 0.5
                    hits = out[keep]
        def main(loader, device):
            built = {built}
            evaluate(built, loader, device)
    """
    assert ((10, "SFL202") in _codes(source)) is expected


def test_the_stop_iteration_handler_runs_once_per_pass() -> None:
    source = """
        import torch
        def validate(model, loader):
            total = sum(model(x).sum() for x, y in loader)
            return total.item()
        def train(model, opt, train_loader, val_loader, device, steps):
            batches = iter(train_loader)
            step = 0
            while step < steps:
                try:
                    x, y = next(batches)
                except StopIteration:
                    print(validate(model, val_loader))
                    batches = iter(train_loader)
                    continue
                model(x.to(device)).sum().backward()
                opt.step()
                step += 1
    """
    assert not _codes(source)
    assert (5, "SFL101") in _codes(source.replace("                    print(validate(model, val_loader))\n", "")
                                   .replace("                step += 1\n", "                step += 1\n                validate(model, val_loader)\n"))


def test_a_masked_store_of_a_shape_number_does_not_sync() -> None:
    """`b, n, _ = xyz.shape; idx[mask] = n` is a `masked_fill_`: no sync; a tensor value syncs."""
    source = """
        import torch
        def train(model, loader, opt, device):
            for xyz, y in loader:
                xyz = xyz.to(device)
                b, n, _ = xyz.shape
                idx = torch.arange(n, device=device).expand(b, n).clone()
                idx[xyz[..., 0] > 0.5] = n
                model(xyz, idx).sum().backward()
                opt.step()
    """
    assert not _codes(source)
    assert (8, "SFL202") in _codes(source.replace("] = n\n", "] = idx[:, :1].expand(b, n)[xyz[..., 0] > 0.5]\n"))


@pytest.mark.parametrize("passed,expected", [("[monitor]", True), ("[Monitor(3.0)]", True), ("(monitor,)", True),
                                             ("[monitor, print]", True), ("[]", False)])
def test_a_list_of_instances_passed_and_looped_over(passed: str, expected: bool) -> None:
    """`train(..., hooks=[monitor])`; `for hook in hooks: hook(step, grad_norm)` runs `Monitor.__call__` (also beside
    a builtin: the run follows each function of this file passed there)."""
    source = f"""
        import torch
        class Monitor:
            def __init__(self, factor):
                self.factor = factor
            def __call__(self, step, grad_norm):
                if grad_norm > self.factor:
                    print("spike at", step)
        def train(model, opt, loader, device, hooks):
            for step, (x, y) in enumerate(loader):
                model(x.to(device)).sum().backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                for hook in hooks:
                    hook(step, grad_norm)
        def main(model, opt, loader, device):
            monitor = Monitor(3.0)
            train(model, opt, loader, device, hooks={passed})
    """
    assert ((7, "SFL106") in _codes(source)) is expected


@pytest.mark.parametrize("test,expected", [("DEBUG and torch.isnan(loss)", False), ("args.verbose and loss > 3", False),
                                           ("torch.isnan(loss) and DEBUG", True), ("ready and loss > 3", True)])
def test_the_right_side_of_a_switch_runs_only_when_it_is_on(test: str, expected: bool) -> None:
    source = f"""
        import torch
        DEBUG = False
        def train(model, loader, opt, device, args, ready):
            for x, y in loader:
                loss = model(x.to(device)).sum()
                if {test}:
                    print("odd loss")
                loss.backward()
                opt.step()
    """
    assert ((7, "SFL106") in _codes(source)) is expected


@pytest.mark.parametrize("guard,cleared,expected", [
    ("if len(self.window) < self.every:\n                    return", True, False),
    ("if len(self.window) < self.every:\n                    return", False, True),
    ("if len(self.window) < 1:\n                    return", True, True),
])
def test_a_windowed_flush_runs_once_per_window(guard: str, cleared: bool, expected: bool) -> None:
    """`if len(window) < every: return` before a flush that empties the window: once per `every` calls."""
    clear = "self.window.clear()" if cleared else "pass"
    source = f"""
        import torch
        class Printer:
            def __init__(self, every):
                self.every, self.window = every, []
            def on_batch_end(self, loss):
                self.window.append(loss.detach())
                {guard}
                print(f"{{torch.stack(self.window).mean():.4f}}")
                {clear}
        def train(model, loader, opt, device, printer: Printer):
            for x, y in loader:
                loss = model(x.to(device)).sum()
                loss.backward()
                opt.step()
                printer.on_batch_end(loss)
    """
    assert any(code == "SFL107" for _, code in _codes(source)) is expected


def test_a_length_test_before_an_optimizer_step_is_a_schedule() -> None:
    """`if len(micro_losses) < accum: continue` then `optimizer.step()`: what follows is the step."""
    source = """
        import torch
        def train(model, loader, opt, device, accum, writer):
            micro_losses = []
            for step, (x, y) in enumerate(loader):
                loss = model(x.to(device)).sum()
                loss.backward()
                micro_losses.append(loss.detach())
                if len(micro_losses) < accum:
                    continue
                opt.step()
                writer.add_scalar("loss", torch.stack(micro_losses).mean(), step)
                micro_losses.clear()
    """
    assert (12, "SFL109") in _codes(source)


# --------------------------------------------------------------------------- stop 33
@pytest.mark.parametrize("key, kind", [
    ('"loss_mask"', T.MASK),
    ('"mask"', T.MASK),
    ('"attention_mask"', T.MASK),
    ('"masked_ids"', T.TENSOR),
    ('"labels"', T.TENSOR),
    ("key", T.TENSOR),
])
def test_a_batch_key_that_names_a_mask(key: str, kind: object) -> None:
    """`batch["loss_mask"]` of a dict of device tensors is a mask (``api.MASK_KEY_WORDS``)."""
    assert "mask" in api.MASK_KEY_WORDS
    assert kind_of(f'{{"labels": x, "loss_mask": x > 0}}[{key}]') == kind


@pytest.mark.parametrize("expression,kind", [
    ('torch.distributed._functional_collectives.all_reduce(x, "sum", None)', T.TENSOR),
    ("torch.distributed._functional_collectives.wait_tensor(x)", T.TENSOR),
    ("torch.distributed.nn.functional.all_reduce(x)", T.TENSOR),
    ("torch.distributed.all_reduce(x)", T.OTHER),  # in place: the call returns a work handle or None
])
def test_functional_collectives_return_tensors(expression: str, kind: object) -> None:
    assert kind_of(expression) == kind


@pytest.mark.parametrize("qualname,expected", [
    ("torch._inductor.fx_passes.bucketing.is_wait_tensor", True), ("torch.autograd._profiler_enabled", True),
    ("torch._dynamo.is_compiling", True), ("torch._foreach_norm", False), ("torch.nn.functional.relu", False),
    ("torch.where", False),
])
def test_private_torch_functions_promise_no_kind(qualname: str, expected: bool) -> None:
    from syncfree_lint.knowledge.torch_api import is_private_torch

    assert is_private_torch(qualname) is expected
    source = f"""
        import torch
        import {qualname.rsplit(".", 1)[0]}
        def train(model, loader, optimizer):
            for x, y in loader:
                flag = {qualname}(model(x))
                if flag:
                    optimizer.step()
    """
    import textwrap

    from syncfree_lint import engine
    found = [d for d in engine.lint_text("t.py", textwrap.dedent(source), Config()) if d.code == "SFL106"]
    assert bool(found) is (not expected)


def test_validating_distributions_are_torch_distribution_classes() -> None:
    import importlib.util

    from syncfree_lint.knowledge.syncing_api import VALIDATING_DISTRIBUTIONS, validating_distribution
    assert validating_distribution("torch.distributions.Beta")
    assert validating_distribution("torch.distributions.relaxed_bernoulli.RelaxedBernoulli")
    assert not validating_distribution("torch.distributions.TransformedDistribution")
    assert not validating_distribution("my.distributions.Normal")
    if importlib.util.find_spec("torch") is None:
        return
    import torch.distributions as td  # the table names real classes that check something when built
    for name in VALIDATING_DISTRIBUTIONS:
        cls = getattr(td, name)
        assert issubclass(cls, td.Distribution)
        assert cls.arg_constraints or issubclass(cls, td.TransformedDistribution), name


@pytest.mark.parametrize("name", sorted(__import__("syncfree_lint.knowledge.metric_api", fromlist=["x"]).SYNCING_UPDATES))
def test_syncing_metric_updates_sync_and_syncfree_ones_do_not(name: str) -> None:
    """Each class of ``SYNCING_UPDATES`` reads the device in ``update`` (seen by the sync guard on the CPU
    stand-in); ``syncfree`` has the class (SFL309 offers it) and its update does not."""
    torch = pytest.importorskip("torch")
    torchmetrics = pytest.importorskip("torchmetrics")
    import syncfree
    from syncfree.guard import no_host_sync, stand_in

    module = next(m for m in (torchmetrics, torchmetrics.text, torchmetrics.classification, torchmetrics.regression)
                  if hasattr(m, name))
    preds, target = torch.randn(2, 6, 7), torch.randint(0, 7, (2, 6))
    with stand_in() as dev:
        for metric, syncs in [(getattr(module, name)().to(dev), True), (getattr(syncfree, name)().to(dev), False)]:
            inputs = preds.to(dev), target.to(dev)
            with no_host_sync(device=dev) as guard:
                metric.update(*inputs)
            assert bool(guard.events) is syncs, guard.report()


@pytest.mark.parametrize("name", __import__("syncfree_lint.knowledge.syncing_api", fromlist=["x"]).LINALG_SYNCING)
def test_linalg_functions_listed_as_syncing_say_so_in_their_docs(name: str) -> None:
    torch = pytest.importorskip("torch")
    from syncfree_lint.knowledge.syncing_api import READING_FUNCTIONS

    assert "synchronizes that device with the CPU" in (getattr(torch.linalg, name).__doc__ or "")
    assert f"torch.linalg.{name}" in READING_FUNCTIONS
    if f"`torch.linalg.{name}_ex`" in READING_FUNCTIONS[f"torch.linalg.{name}"]:
        assert hasattr(torch.linalg, f"{name}_ex")


@pytest.mark.parametrize("call,expected", [("torch.linalg.cholesky(k)", True), ("torch.linalg.cholesky_ex(k).L", False),
                                           ("torch.linalg.solve(k, y)", True), ("torch.linalg.cholesky(k.cpu())", False)])
def test_a_syncing_linalg_call_on_device_tensors_in_a_step(call: str, expected: bool) -> None:
    source = f"""
import torch
def train(model, loader, optimizer):
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        k = x @ x.T + torch.eye(x.shape[0], device=x.device)
        alpha = {call}
        model(x).sum().backward()
        optimizer.step()
"""
    from syncfree_lint import engine

    found = {(d.line, d.code) for d in engine.lint_text("t.py", source, Config())}
    assert ((7, "SFL111") in found) is expected
