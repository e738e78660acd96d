"""Library calls that wait for the device inside, though nothing at the call site reads a value.

``rules/host_reads/syncing_call.py`` reads these tables; ``tests/unit/test_knowledge.py`` holds a
row for each kind of entry.
"""
from __future__ import annotations

from typing import Dict, Tuple

#: functions (by qualified name) -> why the host waits
SYNCING_FUNCTIONS: Dict[str, str] = {
    "torch.distributed.barrier": "blocks the host until every rank arrives (NCCL waits for the device too)",
    "torch.distributed.monitored_barrier": "blocks the host until every rank arrives",
    "torch.distributed.all_gather_object": "pickles through host memory: the tensors are read back",
    "torch.distributed.gather_object": "pickles through host memory: the tensors are read back",
    "torch.distributed.broadcast_object_list": "pickles through host memory: the tensors are read back",
    "torch.distributed.scatter_object_list": "pickles through host memory: the tensors are read back",
    "torch.distributed.all_reduce_object": "pickles through host memory: the tensors are read back",
}

#: classes (by qualified name) whose instances wait inside some methods: class -> method -> why
SYNCING_METHODS: Dict[str, Dict[str, str]] = {
    cls: {
        "get_scale": "reads the loss scale back from the device (`.item()` inside)",
        "state_dict": "reads the loss scale and growth tracker back from the device",
    }
    for cls in ("torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler",
                "torch.amp.grad_scaler.GradScaler")
}
SYNCING_METHODS.update({
    cls: {"step": "runs the closure and reads the loss and the gradients back (`float()` inside) on every inner "
                  "iteration"}
    for cls in ("torch.optim.LBFGS", "torch.optim.lbfgs.LBFGS")
})

SYNCING_METHODS.update({
    cls: {method: "finds each cluster's rows with `nonzero()` and checks their count on the host (`used_rows != "
                  "batch_size`) on every call; `log_prob`/`predict` do not"
          for method in ("__call__", "forward")}
    for cls in ("torch.nn.AdaptiveLogSoftmaxWithLoss", "torch.nn.modules.adaptive.AdaptiveLogSoftmaxWithLoss")
})

#: classes whose method reads an argument back on the host when it is a device tensor: class -> method -> (the
#: argument's position, why). ``ReduceLROnPlateau.step(metrics)`` compares ``float(metrics)`` with its best.
SYNCING_ARGUMENT_METHODS: Dict[str, Dict[str, Tuple[int, str]]] = {
    cls: {"step": (0, "converts the monitored value with `float()` to compare it with the best so far")}
    for cls in ("torch.optim.lr_scheduler.ReduceLROnPlateau",)
}

#: method names that, whatever the receiver's class is known to be, belong to a loss scaler whose
#: value lives on the device (GradScaler and the scalers that wrap it); the receiver must not be
#: known to be something else
SCALER_ONLY_METHODS: Dict[str, str] = {
    "get_scale": "reads the loss scale back from the device (`.item()` inside)",
}

#: calls that wait inside only with some arguments (``syncing_call`` reads them): ``torch.multinomial`` checks the
#: probabilities on the host when it draws without replacement (the default) or one sample; ``clip_grad_norm_`` with
#: ``error_if_nonfinite=True`` reads the total norm back to test it
MULTINOMIAL_FUNCTIONS = frozenset({"torch.multinomial"})
MULTINOMIAL_WHY = "checks the probabilities on the host (`.item()` inside) when it draws one sample or draws without " \
                  "replacement; sample with `(logits - torch.empty_like(logits).exponential_().log()).argmax(-1)`"
NONFINITE_CHECKED_FUNCTIONS = frozenset({
    "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad_norm",
})
NONFINITE_CHECKED_WHY = "reads the total norm back to raise on inf/NaN (`error_if_nonfinite=True`)"

#: ``torch.distributions`` classes that check their parameters when built with argument validation on (the
#: default, ``Distribution._validate_args = __debug__``): each constraint's answer is read back with
#: ``if not torch._is_all_true(valid): raise``, a host read of a device value. ``Independent``,
#: ``MixtureSameFamily`` and ``TransformedDistribution`` check nothing of their own (their base was built, and
#: checked, by another call); the ``Transformed`` ones below build a checked base inside.
VALIDATING_DISTRIBUTIONS = frozenset({
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
    "Exponential", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy",
    "HalfNormal", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal",
    "LowRankMultivariateNormal", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
    "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "StudentT", "Uniform", "VonMises", "Weibull", "Wishart",
})
VALIDATING_DISTRIBUTION_WHY = "checks its parameters against their constraints and reads the answer back (argument " \
                              "validation is on by default); pass `validate_args=False` or call " \
                              "`torch.distributions.Distribution.set_default_validate_args(False)` once at start-up"
#: the call that turns the check off for the whole program (the rule looks for it in the file's code)
VALIDATION_OFF_SWITCH = "set_default_validate_args(False)"


def validating_distribution(qualname: str) -> bool:
    """``torch.distributions.Normal`` or ``torch.distributions.normal.Normal``: a distribution that checks its
    parameters when built."""
    parts = qualname.split(".")
    return parts[:2] == ["torch", "distributions"] and len(parts) in (3, 4) and parts[-1] in VALIDATING_DISTRIBUTIONS


#: calls that compare or test device tensors and return a Python bool: the host reads the result back.
#: Reported when an argument (or the receiver of the method form) is a device tensor.
READING_FUNCTIONS: Dict[str, str] = {
    "torch.equal": "compares on the device and reads the answer back as a Python bool",
    "torch.allclose": "compares on the device and reads the answer back as a Python bool",
    "torch.is_nonzero": "reads the one element back to test it",
    "torch.testing.assert_close": "compares on the device and reads the mismatches back",
}
#: ``torch.linalg`` functions whose documentation says they synchronize a CUDA device with the CPU (they check the
#: factorization's error code on the host, to raise on a singular or non-definite input); the ``_ex`` forms do not.
#: ``tests/unit/test_knowledge.py`` checks each against the installed torch's docstring.
LINALG_SYNCING = ("cholesky", "cond", "eig", "eigh", "eigvals", "eigvalsh", "inv", "ldl_factor", "lu_factor",
                  "matrix_rank", "pinv", "solve", "svd", "svdvals")
_LINALG_EX = frozenset({"cholesky", "inv", "solve", "lu_factor", "ldl_factor"})
READING_FUNCTIONS.update({
    f"torch.linalg.{name}": "checks its result for errors on the host (torch documents that it synchronizes with "
                            "the CPU)" + (f"; `torch.linalg.{name}_ex` does not" if name in _LINALG_EX else "")
    for name in LINALG_SYNCING
})

READING_METHODS: Dict[str, str] = {
    "equal": "compares on the device and reads the answer back as a Python bool",
    "allclose": "compares on the device and reads the answer back as a Python bool",
    "is_nonzero": "reads the one element back to test it",
}

#: library functions whose output size depends on the data (``rules/shapes/nonzero.py``): on
#: device inputs the host reads the count back to size the result. torchvision's CUDA NMS copies
#: its overlap mask to the host and picks the kept boxes there.
DATA_DEPENDENT_FUNCTIONS = frozenset({
    "torchvision.ops.nms", "torchvision.ops.batched_nms",
    "torchvision.ops.boxes.nms", "torchvision.ops.boxes.batched_nms",
})
