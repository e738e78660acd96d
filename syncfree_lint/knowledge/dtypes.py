"""What the fixes know about tensor dtypes: which calls give a float, an integer count, or may alias.

Read by ``analysis/number_kind.py`` (is this value a float or a count?) and by the SFL101 fix's
proof. Each table is checked by ``tests/unit/test_knowledge.py``.
"""
from __future__ import annotations

#: tensor methods / torch functions whose result is floating whatever the input's dtype (or that
#: raise on integer input): ``.mean()`` of an integer tensor is an error, ``.sqrt()`` promotes
FLOAT_RESULT = frozenset({"mean", "nanmean", "norm", "std", "var", "sqrt", "rsqrt", "exp", "log", "log2", "log10",
                          "log1p", "sigmoid", "softmax", "log_softmax", "tanh", "float", "double", "half",
                          "bfloat16", "div", "true_divide", "reciprocal"})
#: methods that keep the receiver's dtype
SAME_DTYPE = frozenset({"sum", "nansum", "abs", "neg", "detach", "clone", "cpu", "cuda", "contiguous", "squeeze",
                        "unsqueeze", "view", "reshape", "flatten", "mul", "add", "sub", "max", "min", "amax", "amin"})
#: of those, the ones that may return the receiver itself or a view of it
MAY_ALIAS = frozenset({"detach", "float", "double", "half", "bfloat16", "long", "int", "short", "cpu", "cuda",
                       "contiguous", "squeeze", "unsqueeze", "view", "reshape", "flatten", "to"})
#: library functions that return a list or tuple of floating tensors (``acc1, acc5 = accuracy(out, y,
#: topk=(1, 5))``: timm's top-k accuracy, in percent)
FLOAT_SEQUENCE_RESULT = frozenset({"timm.utils.accuracy", "timm.utils.metrics.accuracy"})
F_LOSSES = frozenset({"cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
                      "kl_div", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "ctc_loss"})
FLOAT_DTYPES = frozenset({"torch." + n for n in ("float", "float32", "float64", "double", "half", "float16", "bfloat16")})
#: comparisons and predicates: their result is a bool tensor, whose ``.sum()`` is an int64 count
BOOL_RESULT = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "isclose", "logical_and",
                         "logical_or", "logical_not", "logical_xor", "bool"})
#: reductions that count: ``.sum()`` of a bool tensor and ``count_nonzero`` give int64
COUNTING = frozenset({"sum", "count_nonzero"})
#: casts to an integer dtype
INT_CASTS = frozenset({"long", "int", "short"})
INT_DTYPES = frozenset({"torch." + n for n in ("long", "int64", "int", "int32", "int16", "short")})
#: of the integer casts and dtypes, those as wide as a Python int's exact range on the device (int64):
#: a narrower device accumulator wraps where the Python int it replaces never does
INT64_CASTS = frozenset({"long"})
INT64_DTYPES = frozenset({"torch.long", "torch.int64"})
#: words in a callee's name that say it computes a loss (``criterion(out, y)``, ``self.loss_fn(...)``),
#: and words that say it does not (``loss_scale``, ``loss_weights``)
LOSS_WORDS = frozenset({"loss", "criterion", "crit", "losses"})
NOT_LOSS_WORDS = frozenset({"scaler", "scale", "scaling", "weight", "weights", "count", "idx", "index", "num", "steps"})
#: ``.backward()`` (also ``accelerator.backward(loss)``): autograd needs a floating tensor, so a
#: name backpropagated in a scope holds a float there
BACKWARD = "backward"
#: methods that wrap a loss before ``.backward()`` and keep it floating (``scaler.scale(loss).backward()``)
SCALE_FOR_BACKWARD = frozenset({"scale"})
#: torch factories whose values are exact in every dtype and on every device (a move or a cast after
#: them gives the same tensor as building it there): SFL403's fix builds them on the device
EXACT_FACTORIES = frozenset({"zeros", "ones", "eye"})
#: factories exact on every device when their arguments are integers (``arange(n)``), but not after a cast
INTEGER_RANGE_FACTORIES = frozenset({"arange"})
#: factory keywords SFL403's fix keeps as they are (others, ``out=``, ``requires_grad=``, ``pin_memory=``,
#: ``layout=``, decline: the tensor built on the device would differ)
KEPT_FACTORY_KEYWORDS = frozenset({"dtype"})
#: torch constructors that copy host data (a list, an array): built with ``device=`` they still copy it
HOST_DATA_CONSTRUCTORS = frozenset({"tensor", "as_tensor", "from_numpy", "Tensor", "FloatTensor", "DoubleTensor",
                                    "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "ByteTensor", "BoolTensor"})
#: torch factories whose values come from a random generator: the device's generator draws others
RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
                              "normal", "bernoulli", "multinomial", "poisson"})
