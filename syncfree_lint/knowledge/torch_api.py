"""PyTorch API facts for value kinds: which calls return tensors, numbers or other objects.

``analysis.tensors`` reads these tables; each has rows in ``tests/unit/test_knowledge.py``.
"""
from __future__ import annotations

import functools
from typing import Dict

# torch functions that return Python values or non-tensor objects
TORCH_NON_TENSOR_PREFIXES = (
    "torch.cuda.", "torch.distributed.", "torch.backends.", "torch.optim.", "torch.utils.",
    "torch.jit.", "torch.profiler.", "torch.amp.", "torch.testing.", "torch.hub.", "torch.onnx.",
    "torch.multiprocessing.", "torch.mps.", "torch.xpu.", "torch.accelerator.", "torch.compiler.",
    "torch._dynamo.", "torch.library.", "torch.overrides.", "torch.fx.", "torch.export.",
    "torch.serialization.", "torch.random.", "torch.backends.",
)
#: classes of ``torch.nn`` that are tensors, not modules (they live where their module is moved)
TORCH_NN_TENSOR_CLASSES = frozenset({
    "torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer", "torch.nn.parameter.Buffer",
    "torch.nn.UninitializedParameter", "torch.nn.parameter.UninitializedParameter",
})
#: torch functions that return tensors where their first argument lives, though their module is not
#: one of tensor functions (``torch.autograd.grad(loss, params)``: a gradient per parameter, a tuple
#: read like the tuples of ``torch.split``)
TORCH_TENSOR_RESULTS = frozenset({"torch.autograd.grad"})
#: modules of collectives that return their result as a tensor where the input lives (functional collectives:
#: ``funcol.all_reduce(x, "sum", group)``, ``funcol.wait_tensor(x)``), unlike ``torch.distributed.all_reduce``
TORCH_TENSOR_RESULT_PREFIXES = ("torch.distributed._functional_collectives.", "torch.distributed.nn.functional.")
TORCH_NON_TENSOR = frozenset({
    "torch.device", "torch.dtype", "torch.Size", "torch.is_tensor", "torch.is_storage",
    "torch.is_floating_point", "torch.is_complex", "torch.numel", "torch.get_default_dtype",
    "torch.set_default_dtype", "torch.manual_seed", "torch.seed", "torch.initial_seed",
    "torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.set_grad_enabled",
    "torch.is_grad_enabled", "torch.autocast", "torch.load", "torch.save", "torch.Generator",
    "torch.finfo", "torch.iinfo", "torch.get_num_threads", "torch.set_num_threads",
    "torch.set_float32_matmul_precision", "torch.use_deterministic_algorithms",
    "torch.set_printoptions", "torch.get_rng_state", "torch.set_rng_state",
    "torch.autograd.backward", "torch.autograd.set_detect_anomaly", "torch.autograd.profiler",
    "torch.set_default_device", "torch.is_inference_mode_enabled", "torch.is_autocast_enabled",
    "torch.allclose", "torch.equal", "torch.is_nonzero", "torch.are_deterministic_algorithms_enabled",
})
TORCH_NUMBER = frozenset({
    "torch.numel", "torch.distributed.get_rank", "torch.distributed.get_world_size",
    "torch.cuda.device_count", "torch.cuda.current_device", "torch.cuda.max_memory_allocated",
    "torch.cuda.memory_allocated", "torch.cuda.max_memory_reserved", "torch.cuda.memory_reserved",
    "torch.get_num_threads",
})
# factories: host tensors unless a device is given
TORCH_FACTORIES = frozenset({
    "tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "logspace",
    "rand", "randn", "randint", "randperm", "eye", "from_numpy", "Tensor", "FloatTensor",
    "LongTensor", "IntTensor", "BoolTensor", "DoubleTensor", "HalfTensor", "ByteTensor",
    "empty_strided", "normal", "bernoulli", "scalar_tensor",
})
MASK_FUNCTIONS = frozenset({
    "isnan", "isinf", "isfinite", "isneginf", "isposinf", "isreal", "logical_and", "logical_or",
    "logical_not", "logical_xor", "eq", "ne", "gt", "lt", "ge", "le", "greater", "less",
    "greater_equal", "less_equal", "not_equal", "isin", "isclose", "signbit", "bool",
    "bitwise_not", "any", "all",  # reductions to booleans: `(x.abs() < 1).all(dim=1)` is a mask of rows
})
#: tensor methods that change only a tensor's layout (its shape, strides, order or storage), not its values nor
#: its dtype (given integer sizes or dims): a boolean mask stays one (``valid.view(-1)``, ``keep.flatten()``)
LAYOUT_METHODS = frozenset({
    "view", "reshape", "flatten", "ravel", "squeeze", "unsqueeze", "permute", "transpose", "t",
    "contiguous", "expand", "expand_as", "view_as", "reshape_as", "clone", "detach", "flip", "roll", "repeat",
    "movedim", "swapaxes", "swapdims", "unflatten", "cuda",
})
#: tensor methods returning Python values (not tensors), by what they return
TENSOR_NUMBER_METHODS = frozenset({
    "item", "dim", "ndimension", "numel", "nelement", "element_size", "data_ptr", "get_device",
    "storage_offset", "__len__",
})
TENSOR_NUMPY_METHODS = frozenset({"numpy"})
TENSOR_OTHER_METHODS = frozenset({
    "tolist", "size", "is_contiguous", "stride", "is_floating_point", "is_complex", "type", "register_hook",
    "backward", "untyped_storage", "is_pinned", "is_shared", "equal", "allclose",
})
TENSOR_NON_TENSOR_ATTRS = frozenset({
    "shape", "dtype", "device", "is_cuda", "ndim", "requires_grad", "is_leaf", "layout",
    "names", "itemsize", "nbytes", "grad_fn", "is_sparse", "is_quantized", "is_meta",
})
# ``.values``/``.indices`` of max/min/topk/sort results
TENSOR_TENSOR_ATTRS = frozenset({"grad", "data", "T", "mT", "H", "mH", "real", "imag", "values", "indices"})
#: fields of what a model or a loss module returns as a named tuple or an output object, tensors on the model's
#: device (``nn.AdaptiveLogSoftmaxWithLoss``'s ``.output``/``.loss``, a transformer output's ``.loss``/``.logits``)
OUTPUT_TENSOR_ATTRS = frozenset({"loss", "logits", "output", "last_hidden_state", "pooler_output", "log_probs",
                                 "logprobs", "scores", "pred_logits", "pred_boxes"})
MODULE_METHODS_KEEP = frozenset({
    "to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16", "requires_grad_",
    "apply", "type", "share_memory",
})
#: methods that iterate a model's (or a state mapping's) own tensors, not batches of data:
#: a loop over them that moves each item is not a loop over a loader
OWN_TENSOR_ITERATORS = frozenset({
    "parameters", "buffers", "named_parameters", "named_buffers", "values", "items", "state_dict",
    "children", "modules", "named_modules",
})
#: a module's own tensors, one per iteration (``for p in model.parameters()``); the named forms
#: give ``(name, tensor)`` pairs: on the device wherever the model is
MODULE_TENSOR_ITERATORS = frozenset({"parameters", "buffers"})
MODULE_NAMED_TENSOR_ITERATORS = frozenset({"named_parameters", "named_buffers"})
#: methods whose presence on a name proves it is an nn.Module
MODULE_EVIDENCE_METHODS = frozenset({
    "parameters", "named_parameters", "named_modules", "modules", "train", "eval",
    "state_dict", "load_state_dict", "named_children", "children", "buffers", "named_buffers",
    "register_forward_hook", "register_buffer", "zero_grad",
})
NUMBER_CALLS = frozenset({
    "len", "float", "int", "round", "ord", "hash", "id", "time.time", "time.perf_counter",
    "time.monotonic", "time.process_time", "time.time_ns", "time.perf_counter_ns",
})
OTHER_CALLS = frozenset({
    "str", "repr", "format", "list", "dict", "tuple", "set", "frozenset", "sorted", "range",
    "open", "print", "isinstance", "type", "bool", "enumerate", "zip", "map", "filter",
    "getattr", "vars", "dir", "super", "object", "iter", "bytes",
})
#: libraries whose model constructors and factories return an ``nn.Module`` (``VisionTransformer(...)``,
#: ``resnet50(weights=...)``, ``timm.create_model(...)``); names that return something else are listed
MODEL_LIBRARY_PREFIXES = ("torchvision.models.",)
MODEL_FACTORIES = frozenset({"timm.create_model", "timm.models.create_model"})
MODEL_LIBRARY_NON_MODULES = frozenset({"get_weight", "get_model_weights", "list_models", "get_model_builder"})

MODULE_WRAPPERS = frozenset({
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel", "torch.compile", "torch.jit.script",
    "torch.distributed.fsdp.FullyShardedDataParallel", "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
    "torch.jit.trace", "torch.nn.utils.parametrize",
})
LOADER_CLASSES = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
ACCELERATOR_CLASSES = ("accelerate.Accelerator", "lightning.fabric.Fabric", "lightning.Fabric", "lightning_fabric.Fabric")


# Names that hold models in practice (``model``, ``self.net``, ``text_encoder``, ``ema_model``):
# weak evidence, used only when nothing is known about the name.
MODULE_WORDS = ("model", "net", "module", "encoder", "decoder", "backbone", "head", "vae", "unet",
                "transformer", "controlnet", "ema", "pipe", "pipeline", "teacher", "student",
                "discriminator", "generator", "critic", "actor")


#: name prefixes of counts (``n_critic``: critic updates per generator step)
COUNT_PREFIXES = ("n_", "num_", "nb_", "number_of_")


@functools.lru_cache(maxsize=1 << 16)  # asked for the same few names all through a walk
def looks_like_module(name: str) -> bool:
    """``model``, ``net``, ``text_encoder``, ``ema_model``, ``self.backbone``: named like a model."""
    last = name.rsplit(".", 1)[-1].lower().rstrip("0123456789_")
    if last.startswith(COUNT_PREFIXES):
        return False  # `args.n_critic`, `num_layers`: how many, not which
    return last in MODULE_WORDS or last.endswith(tuple("_" + word for word in MODULE_WORDS))



#: Python builtins that fold a tensor's elements into a 0-d tensor on the same device
BUILTINS_OVER_ELEMENTS = frozenset({"sum", "max", "min"})
#: Python builtins that return a tensor where the tensor lives (``abs(t)``, ``round(t)``)
BUILTINS_KEEPING_TENSORS = frozenset({"abs", "round", "pow"})
#: device strings of accelerators (``"cuda"``, ``"cuda:1"``, ``"mps"``)
ACCELERATOR_DEVICE_STRINGS = frozenset({"cuda", "mps", "xla", "xpu", "npu", "hpu"})

#: torch factories whose positional arguments are Python numbers (bounds, counts, sizes): a 0-d
#: device tensor there is read on the host (``torch.arange(0, lengths.max(), device=d)``), SFL112
TORCH_NUMBER_ARGUMENT_FACTORIES = frozenset({
    "torch.arange", "torch.linspace", "torch.logspace", "torch.zeros", "torch.ones", "torch.empty",
    "torch.rand", "torch.randn", "torch.eye", "torch.full",
})
#: tensor methods whose arguments after the tensor are ints (a count, a length, sizes): a 0-d device
#: tensor there is read back to convert it (``scores.topk(k)`` with ``k = mask.sum()``); the
#: ``torch.<name>(t, ...)`` forms too, their first argument being the tensor
TENSOR_INT_ARGUMENT_METHODS = frozenset({
    "topk", "kthvalue", "narrow", "view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty",
    "new_full", "chunk", "unflatten", "tile",
})

#: what ``isinstance(x, T)`` says ``x`` is inside its branch (``analysis.narrowing``): numpy arrays
#: and scalars, Python numbers and containers, never a device value. ``torch.Tensor`` is not here: a
#: tensor that passes the test may be on the host, so the test says nothing about a sync.
ISINSTANCE_KINDS: Dict[str, str] = {
    **{f"numpy.{name}": "numpy" for name in ("ndarray", "number", "generic", "floating", "integer", "bool_",
                                             "float32", "float64", "int64", "int32")},
    **{name: "number" for name in ("int", "float", "complex", "numbers.Number", "numbers.Real")},
    **{name: "other" for name in ("str", "bytes", "list", "tuple", "dict", "set")},
}

#: words of a batch key that name a boolean mask (``batch["loss_mask"]``, ``batch["valid_mask"]``; a
#: whole ``_``-separated word, so ``"masked_ids"`` is not one): indexing a tensor with it has a
#: data-dependent shape (``analysis.tensors``)
MASK_KEY_WORDS = frozenset({"mask"})
#: words of a key of a dict of device tensors built in the program that name a training counter
#: (``state["step"]``, ``logs["global_step"]``, ``info["epoch"]``): the loop's Python int put
#: beside the losses, not a tensor (a loader's batch is not such a dict: ``batch["idx"]`` is a tensor)
COUNTER_KEY_WORDS = frozenset({"step", "epoch", "iteration", "iter"})
#: a name of unknown kind starting so is a count, a Python int (``num_classes``, ``n_bins``): written through a
#: boolean mask, it is a scalar fill (``target[ignored] = num_classes``), not a tensor copy
COUNT_NAME_PREFIXES = ("num_", "n_")
#: names of the objects that hold a run's settings (``self.cfg.max_depth``, ``args.clip``): what is read from
#: them is a Python value (a number, a string), never a tensor
SETTINGS_HOLDERS = frozenset({"cfg", "config", "conf", "args", "opts", "hparams", "hp", "hps", "flags", "settings",
                              "options"})


def reads_setting(name: str) -> bool:
    """``self.cfg.max_depth``, ``args.clip_value``, ``config.train.min_depth``: an attribute of a settings holder."""
    parts = name.split(".")
    return len(parts) >= 2 and any(part.lower() in SETTINGS_HOLDERS for part in parts[:-1])


def is_private_torch(qualname: str) -> bool:
    """``torch._inductor.fx_passes.bucketing.is_wait_tensor``, ``torch.autograd._profiler_enabled``: a private
    part of torch, whose results say nothing of their kind (they work on graphs, flags and nodes as often as on
    tensors); ``torch._foreach_*`` are public in all but name and return tensors."""
    parts = qualname.split(".")[1:]
    return any(part.startswith("_") and not part.startswith(("_foreach", "__")) for part in parts)
