"""Facts that decide how often code runs: step markers, loaders, guards, opt-in flags.

Everything here is matched against names (identifiers, attribute names), never against free text
or comments. ``words_match`` is the one matcher: a word matches a whole ``_``-separated part of a
name (``log`` matches ``should_log`` and ``log_every`` but not ``logits``).
"""
from __future__ import annotations

from typing import Dict, Iterable, Optional, Tuple

#: methods whose call in a loop body makes the loop a step loop (the optimizer's ``step`` is
#: recognised by its receiver, see OPTIMIZER_WORDS)
STEP_MARKER_METHODS = frozenset({"backward", "zero_grad"})
#: functions that are step markers by their qualified name
STEP_MARKER_FUNCTIONS = frozenset({"torch.autograd.backward"})
#: parts of a receiver name that make ``<receiver>.step()`` an optimizer step
OPTIMIZER_WORDS = ("optim", "optimizer", "optimizers", "opt", "scaler", "optimiser")
#: parts of a name that make an iterable a data loader
LOADER_WORDS = ("loader", "dataloader", "data_iter", "dataiter", "loaders")

#: parts of a flag's name that say the branch only logs (``if args.with_tracking:``)
LOGGING_FLAG_WORDS = (
    "track", "tracking", "report", "log", "logging", "verbose", "wandb", "tensorboard", "print",
    # periodic work that a run does between steps, not in every one: plotting, evaluating, checkpointing
    # (``if plots:``, ``if self.validator.should_validate(step):``, ``if should_checkpoint:``)
    "plot", "plots", "plotting", "visualize", "visualise", "validate", "validation", "checkpoint", "checkpointing",
    "ckpt",
    # the one step that ends an epoch (``if trainer.is_last_batch:``, ``if end_of_epoch:``)
    "last_batch", "last_step", "last_iter", "last_iteration", "epoch_end", "end_of_epoch",
)
#: parts of a flag's name that say the branch is off unless asked for (``if args.synchronize_step:``)
OPT_IN_FLAG_WORDS = (
    "debug", "synchronize", "profile", "profiling", "profiler", "benchmark", "anomaly", "trace",
    "tracing", "timing", "sanity", "dry",
)
#: calls that are false in a normal eager training run
OPT_IN_CALLS = frozenset({
    "torch.onnx.is_in_onnx_export", "torch.jit.is_tracing", "torch.jit.is_scripting",
    "torch._C._get_tracing_state", "torch.compiler.is_exporting",
})

#: pytest collects functions named like this and runs each once: stepping the optimizer in one
#: does not make it a per-step function
TEST_FUNCTION_PREFIX = "test"

#: host draws of a uniform number in [0, 1): ``if random.random() < 0.001:`` runs its body on a sampled few steps
HOST_UNIFORM_DRAWS = frozenset({"random.random", "numpy.random.rand", "numpy.random.random",
                                "numpy.random.random_sample", "numpy.random.uniform"})
#: the largest probability a sampled branch may have to count as rare (a logging guard)
RARE_SAMPLE_PROBABILITY = 0.1

_LIGHTNING_BATCH_HOOKS = frozenset({"on_train_batch_start", "on_train_batch_end", "on_validation_batch_start",
                                    "on_validation_batch_end", "on_test_batch_end", "on_before_backward",
                                    "on_after_backward", "on_before_optimizer_step", "on_before_zero_grad"})
#: methods a training framework calls once per batch, by the name of the base class they override
FRAMEWORK_BATCH_HOOKS = {
    # mmengine
    "BaseMetric": frozenset({"process"}),
    "Hook": frozenset({"before_train_iter", "after_train_iter", "before_val_iter", "after_val_iter",
                       "before_test_iter", "after_test_iter"}),
    # Lightning: a callback's hooks, and the same hooks overridden on the LightningModule itself
    "Callback": _LIGHTNING_BATCH_HOOKS,
    "LightningModule": _LIGHTNING_BATCH_HOOKS,
    # Hugging Face transformers
    "TrainerCallback": frozenset({"on_step_begin", "on_step_end", "on_substep_end"}),
    "Trainer": frozenset({"training_step", "compute_loss", "prediction_step"}),
}

#: pytorch-ignite's events that fire once per iteration (``@trainer.on(Events.ITERATION_COMPLETED)``):
#: a handler registered for one runs every step, unless a filter thins it out (``every=``, ``once=``,
#: ``Events.ITERATION_COMPLETED(every=100)``)
PER_ITERATION_EVENTS = frozenset({"ITERATION_STARTED", "ITERATION_COMPLETED", "GET_BATCH_STARTED",
                                  "GET_BATCH_COMPLETED"})
#: the decorator method that registers a handler (``engine.on(event)``), and the keywords that filter it
EVENT_DECORATORS = frozenset({"on"})
#: the method that registers a handler by a call (``engine.add_event_handler(event, handler, *args)``)
EVENT_REGISTRATIONS = frozenset({"add_event_handler"})
EVENT_FILTER_KEYWORDS = frozenset({"every", "once", "event_filter", "before", "after"})
#: an event bus of the project's own, by string name (``analysis.events.named_event``): a handler registered for
#: ``"critic_updated"`` with a decorator (``@bus.on("critic_updated")``) or a call (``bus.subscribe(
#: "critic_updated", fn)``) runs where code emits that name (``bus.emit("critic_updated", loss=loss)``), as often
NAMED_EVENT_DECORATORS = frozenset({"on", "subscribe", "listen", "listens_to", "on_event"})
NAMED_EVENT_REGISTRATIONS = frozenset({"add_event_handler", "subscribe", "add_listener", "on", "listen"})
NAMED_EVENT_EMITTERS = frozenset({"emit", "fire", "fire_event", "publish", "trigger", "notify", "dispatch_event",
                                  "call_event", "send_event", "_emit", "_fire", "_trigger"})

#: methods that register a callable torch runs at every forward or backward of a module, or every
#: backward through a tensor (``model.head.register_forward_hook(monitor)``): in a training run,
#: once per step. The global ``torch.nn.modules.module.register_module_forward_hook`` too. Each
#: maps to what the hook is called with, as far as it is known: ``"module"``, ``"tensor"`` (an
#: output or a gradient) or None.
PER_PASS_HOOK_REGISTRATIONS: Dict[str, Tuple[Optional[str], ...]] = {
    "register_forward_hook": ("module", None, "tensor"),
    "register_module_forward_hook": ("module", None, "tensor"),
    "register_forward_pre_hook": ("module", None),
    "register_module_forward_pre_hook": ("module", None),
    "register_full_backward_hook": ("module", None, None),
    "register_module_full_backward_hook": ("module", None, None),
    "register_full_backward_pre_hook": ("module", None),
    "register_backward_hook": ("module", None, None),
    "register_hook": ("tensor",),
}

#: decorators that memoise a function: its body runs once per distinct arguments (a table built for a length and a
#: device), not once per call; ``functools.cached_property`` is left out, it runs once per object, and a step may
#: build one object per batch
MEMOISING_DECORATORS = frozenset({"functools.lru_cache", "functools.cache"})
#: attributes whose read on a memoised function's parameter says the argument is a tensor: hashed by identity, a new
#: tensor each call misses the cache
TENSOR_KEY_ATTRIBUTES = frozenset({"device", "dtype", "shape", "is_cuda"})
#: contexts and decorators that turn gradients off: a loop running a model on its items inside one
#: is an evaluation loop (``analysis.eval_loops``)
NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                              "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode"})

#: base-class name endings that are nn.Modules in practice (FairseqCriterion, BaseModel, ...)
MODULE_BASE_SUFFIXES = ("Module", "LightningModule", "Criterion", "Loss", "Model", "Net", "Network", "Layer", "Head")
#: parameters of a step function that hold the batch
BATCH_PARAMS = ("batch", "sample", "samples", "inputs")
BATCH_PARAM_EXCLUDE = frozenset({
    "batch_idx", "batch_size", "batch_nb", "batch_index", "batch_num", "sample_size", "samples_per_gpu",
})

#: device strings that name an accelerator
ACCELERATOR_DEVICES = ("cuda", "mps", "xla", "xpu", "npu", "hpu", "gpu", "tpu")
#: attributes that reach an accelerator (``x.cuda()``, ``torch.cuda``, ``torch.accelerator``)
ACCELERATOR_ATTRIBUTES = frozenset(ACCELERATOR_DEVICES + ("accelerator", "current_accelerator"))
#: option names that switch an accelerator on (``--cuda``, ``--accel``, ``--use-gpu``)
ACCELERATOR_OPTION_WORDS = frozenset(ACCELERATOR_DEVICES + ("accel", "accelerator", "gpus"))
#: accelerators with native float64 arithmetic (MPS has none; XLA/XPU/HPU/NPU may lack it or emulate it)
FLOAT64_ACCELERATORS = frozenset({"cuda", "gpu"})
#: modules whose import means the run uses an accelerator
ACCELERATOR_MODULES = ("accelerate", "lightning", "pytorch_lightning", "lightning_fabric", "deepspeed", "apex", "torch.cuda")
#: of those, the modules that run on CUDA only (NVIDIA's apex): their import names CUDA, not "an accelerator picked at
#: run time"
CUDA_ONLY_MODULES = ("apex", "torch.cuda")

#: names of a process's rank: ``if rank == 0:`` runs on one process every step, it is no "once" test
RANK_WORDS = ("rank", "process_index", "local_process_index")


def name_parts(name: str) -> tuple:
    """``self.args.should_log`` -> (``self``, ``args``, ``should``, ``log``), lower case."""
    parts: list = []
    for dotted in name.lower().split("."):
        parts.extend(p for p in dotted.split("_") if p)
    return tuple(parts)


def words_match(name: str, words: Iterable[str]) -> bool:
    """True when a word is a whole ``_``-separated part of the name's last component, or a
    run of parts (``data_iter`` matches ``train_data_iter``)."""
    last = name.rsplit(".", 1)[-1].lower()
    parts = [p for p in last.split("_") if p]
    joined = "_" + "_".join(parts) + "_"
    return any(("_" + word + "_") in joined for word in words)


def is_optimizer_name(name: str) -> bool:
    """``optimizer``, ``self.opt``, ``optimizer_g``, ``scaler``, ``d_optim``."""
    return words_match(name, OPTIMIZER_WORDS) or name.rsplit(".", 1)[-1].lower().startswith("optim")


#: names of a reinforcement-learning environment: ``env.step(action)`` in a loop acts once per
#: iteration, so the loop runs once per environment step (a rollout), training or evaluating
ENVIRONMENT_WORDS = ("env", "envs", "environment", "environments", "venv", "vec_env", "vecenv")


def is_environment_name(name: str) -> bool:
    """``env``, ``self.envs``, ``train_env``, ``eval_envs``, ``vec_env``; not ``environ`` or ``envelope``."""
    return words_match(name, ENVIRONMENT_WORDS)


def is_loader_name(name: str) -> bool:
    """``train_loader``, ``self.val_dataloader``, ``data_iter``; a substring match, as loaders
    are named ``trainloader`` or ``dataloader_train`` just as often."""
    last = name.rsplit(".", 1)[-1].lower()
    return any(word in last for word in LOADER_WORDS)

#: names of a batch size: ``x.split(batch_size)`` cuts data into the batches a loop runs on
BATCH_SIZE_NAMES = frozenset({"bs", "batch_size", "batchsize", "bsz", "mb_size", "minibatch_size", "chunk_batch"})


def is_batch_size_name(name: str) -> bool:
    """``batch_size``, ``self.eval_batch_size``, ``args.bs``, ``micro_bsz``; not ``batch_idx`` or ``n_batches``."""
    last = name.rsplit(".", 1)[-1].lower()
    if last in BATCH_SIZE_NAMES:
        return True
    parts = [p for p in last.split("_") if p]
    return len(parts) > 1 and (parts[-1] in ("bs", "bsz") or parts[-2:] == ["batch", "size"])


#: names that hold a network: calling one (``model(x)``, ``self.net(x)``) gives a tensor even where
#: nothing else says what the name holds (a parameter of a helper)
MODULE_WORDS = ("model", "net", "network", "encoder", "decoder", "backbone", "policy", "actor", "critic",
                "generator", "discriminator", "classifier", "ddp_model", "unet", "transformer")


#: first words of a function that makes or fetches a network (``build_model(cfg)``, ``load_model(path)``):
#: calling it gives the network, not a tensor
FACTORY_VERBS = frozenset({"build", "create", "make", "get", "load", "init", "setup", "prepare", "construct",
                           "instantiate", "new", "wrap"})


def is_module_name(name: str) -> bool:
    """``model``, ``net``, ``policy_net``: the last name part is a network word; not a width
    (``d_model``, ``n_net``) nor a name, path or factory of one (``model_fn``, ``model_name``,
    ``build_model``)."""
    last = name.rsplit(".", 1)[-1].lower()
    parts = [p for p in last.split("_") if p]
    if not parts or parts[-1] in ("fn", "cls", "class", "name", "names", "type", "path", "dir", "cfg", "config",
                                  "kwargs", "args", "id", "ids", "size", "dim"):
        return False
    if len(parts) > 1 and parts[0] in FACTORY_VERBS:
        return False
    if last.startswith(("d_", "n_", "num_")):
        return False
    return parts[-1] in MODULE_WORDS or last in MODULE_WORDS


#: calls that end the process: a branch that ends in one (or in ``raise``) runs at most once per run
PROCESS_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort"})

#: test modules (pytest's discovery conventions): a test exercises training code, it is not a run
#: of it, so a test module has no steps of its own (its own `for batch in loader:` is not hot)
TEST_MODULE_PREFIX = "test_"
TEST_MODULE_SUFFIX = "_test.py"
TEST_MODULE_NAMES = frozenset({"conftest.py"})
TEST_FOLDERS = frozenset({"tests"})
