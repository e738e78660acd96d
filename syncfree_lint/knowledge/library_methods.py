"""Method names of the library objects a training script holds (tensors, modules, optimizers,
containers, loggers, trackers).

A call on a receiver whose class the code does not say (``client.local_train(...)``, a parameter
or a loop variable) is resolved by the method's name when exactly one class of the project defines
it (``analysis.calls.by_method_name``). A name listed here is never resolved that way: the receiver
is as likely a library object (``opt.step()``, ``x.view(...)``, ``writer.add_scalar(...)``) as an
instance of the project's class. The tables were read off the classes of torch 2.13 and Python
3.11; ``tests/unit/test_knowledge.py`` checks them against the classes.
"""
from __future__ import annotations

from syncfree_lint.knowledge.sinks import DISPLAY_METHODS, TRACKER_METHODS, WRITER_METHODS

_TENSOR_METHODS = frozenset({
    "abs", "abs_", "absolute", "absolute_", "acos", "acos_", "acosh", "acosh_", "add", "add_", "addbmm", "addbmm_",
    "addcdiv", "addcdiv_", "addcmul", "addcmul_", "addmm", "addmm_", "addmv", "addmv_", "addr", "addr_", "adjoint",
    "all", "allclose", "amax", "amin", "aminmax", "angle", "any", "apply_", "arccos", "arccos_", "arccosh",
    "arccosh_", "arcsin", "arcsin_", "arcsinh", "arcsinh_", "arctan", "arctan2", "arctan2_", "arctan_", "arctanh",
    "arctanh_", "argmax", "argmin", "argsort", "argwhere", "as_strided", "as_strided_", "as_strided_scatter",
    "as_subclass", "asin", "asin_", "asinh", "asinh_", "atan", "atan2", "atan2_", "atan_", "atanh", "atanh_",
    "backward", "baddbmm", "baddbmm_", "bernoulli", "bernoulli_", "bfloat16", "bincount", "bitwise_and",
    "bitwise_and_", "bitwise_left_shift", "bitwise_left_shift_", "bitwise_not", "bitwise_not_", "bitwise_or",
    "bitwise_or_", "bitwise_right_shift", "bitwise_right_shift_", "bitwise_xor", "bitwise_xor_", "bmm", "bool",
    "broadcast_to", "byte", "cauchy_", "ccol_indices", "cdouble", "ceil", "ceil_", "cfloat", "chalf", "char",
    "cholesky", "cholesky_inverse", "cholesky_solve", "chunk", "clamp", "clamp_", "clamp_max", "clamp_max_",
    "clamp_min", "clamp_min_", "clip", "clip_", "clone", "coalesce", "col_indices", "conj", "conj_physical",
    "conj_physical_", "const_data_ptr", "contiguous", "copy_", "copysign", "copysign_", "corrcoef", "cos", "cos_",
    "cosh", "cosh_", "count_nonzero", "cov", "cpu", "cross", "crow_indices", "cuda", "cummax", "cummin", "cumprod",
    "cumprod_", "cumsum", "cumsum_", "data_ptr", "deg2rad", "deg2rad_", "dense_dim", "dequantize", "det", "detach",
    "detach_", "diag", "diag_embed", "diagflat", "diagonal", "diagonal_scatter", "diff", "digamma", "digamma_",
    "dim", "dim_order", "dist", "div", "div_", "divide", "divide_", "dot", "double", "dsplit", "eig",
    "element_size", "eq", "eq_", "equal", "erf", "erf_", "erfc", "erfc_", "erfinv", "erfinv_", "exp", "exp2",
    "exp2_", "exp_", "expand", "expand_as", "expm1", "expm1_", "exponential_", "fill_", "fill_diagonal_", "fix",
    "fix_", "flatten", "flip", "fliplr", "flipud", "float", "float_power", "float_power_", "floor", "floor_",
    "floor_divide", "floor_divide_", "fmax", "fmin", "fmod", "fmod_", "frac", "frac_", "frexp", "gather", "gcd",
    "gcd_", "ge", "ge_", "geometric_", "geqrf", "ger", "get_device", "greater", "greater_", "greater_equal",
    "greater_equal_", "gt", "gt_", "half", "hardshrink", "hash_tensor", "heaviside", "heaviside_", "histc",
    "histogram", "hsplit", "hypot", "hypot_", "i0", "i0_", "igamma", "igamma_", "igammac", "igammac_", "index",
    "index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_", "index_put", "index_put_",
    "index_reduce", "index_reduce_", "index_select", "indices", "inner", "int", "int_repr", "inverse", "ipu",
    "is_coalesced", "is_complex", "is_conj", "is_contiguous", "is_distributed", "is_floating_point", "is_inference",
    "is_neg", "is_nonzero", "is_pinned", "is_same_size", "is_set_to", "is_shared", "is_signed", "isclose",
    "isfinite", "isinf", "isnan", "isneginf", "isposinf", "isreal", "istft", "item", "kron", "kthvalue", "lcm",
    "lcm_", "ldexp", "ldexp_", "le", "le_", "lerp", "lerp_", "less", "less_", "less_equal", "less_equal_", "lgamma",
    "lgamma_", "log", "log10", "log10_", "log1p", "log1p_", "log2", "log2_", "log_", "log_normal_", "log_softmax",
    "logaddexp", "logaddexp2", "logcumsumexp", "logdet", "logical_and", "logical_and_", "logical_not",
    "logical_not_", "logical_or", "logical_or_", "logical_xor", "logical_xor_", "logit", "logit_", "logsumexp",
    "long", "lstsq", "lt", "lt_", "lu", "lu_solve", "map2_", "map_", "masked_fill", "masked_fill_",
    "masked_scatter", "masked_scatter_", "masked_select", "matmul", "matrix_exp", "matrix_power", "max", "maximum",
    "mean", "median", "min", "minimum", "mm", "mode", "module_load", "moveaxis", "movedim", "msort", "mtia", "mul",
    "mul_", "multinomial", "multiply", "multiply_", "mv", "mvlgamma", "mvlgamma_", "nan_to_num", "nan_to_num_",
    "nanmean", "nanmedian", "nanquantile", "nansum", "narrow", "narrow_copy", "ndimension", "ne", "ne_", "neg",
    "neg_", "negative", "negative_", "nelement", "new", "new_empty", "new_empty_strided", "new_full", "new_ones",
    "new_tensor", "new_zeros", "nextafter", "nextafter_", "nonzero", "nonzero_static", "norm", "normal_",
    "not_equal", "not_equal_", "numel", "numpy", "orgqr", "ormqr", "outer", "permute", "pin_memory", "pinverse",
    "polygamma", "polygamma_", "positive", "pow", "pow_", "prelu", "prod", "put", "put_", "q_per_channel_axis",
    "q_per_channel_scales", "q_per_channel_zero_points", "q_scale", "q_zero_point", "qr", "qscheme", "quantile",
    "rad2deg", "rad2deg_", "random_", "ravel", "reciprocal", "reciprocal_", "record_stream", "register_hook",
    "register_post_accumulate_grad_hook", "reinforce", "relu", "relu_", "remainder", "remainder_", "renorm",
    "renorm_", "repeat", "repeat_interleave", "requires_grad_", "reshape", "reshape_as", "resize", "resize_",
    "resize_as", "resize_as_", "resize_as_sparse_", "resolve_conj", "resolve_neg", "retain_grad", "roll", "rot90",
    "round", "round_", "row_indices", "rsqrt", "rsqrt_", "scatter", "scatter_", "scatter_add", "scatter_add_",
    "scatter_reduce", "scatter_reduce_", "select", "select_scatter", "set_", "sgn", "sgn_", "share_memory_",
    "short", "sigmoid", "sigmoid_", "sign", "sign_", "signbit", "sin", "sin_", "sinc", "sinc_", "sinh", "sinh_",
    "size", "slice_inverse", "slice_scatter", "slogdet", "smm", "softmax", "solve", "sort", "sparse_dim",
    "sparse_mask", "sparse_resize_", "sparse_resize_and_clear_", "split", "split_with_sizes", "sqrt", "sqrt_",
    "square", "square_", "squeeze", "squeeze_", "sspaddmm", "std", "stft", "storage", "storage_offset",
    "storage_type", "stride", "sub", "sub_", "subtract", "subtract_", "sum", "sum_to_size", "svd", "swapaxes",
    "swapaxes_", "swapdims", "swapdims_", "symeig", "t", "t_", "take", "take_along_dim", "tan", "tan_", "tanh",
    "tanh_", "tensor_split", "tile", "to", "to_dense", "to_mkldnn", "to_padded_tensor", "to_sparse",
    "to_sparse_bsc", "to_sparse_bsr", "to_sparse_coo", "to_sparse_csc", "to_sparse_csr", "tolist", "topk", "trace",
    "transpose", "transpose_", "triangular_solve", "tril", "tril_", "triu", "triu_", "true_divide", "true_divide_",
    "trunc", "trunc_", "type", "type_as", "unbind", "unflatten", "unfold", "uniform_", "unique",
    "unique_consecutive", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "unsqueeze", "unsqueeze_",
    "untyped_storage", "values", "var", "vdot", "view", "view_as", "vsplit", "where", "xlogy", "xlogy_", "xpu",
    "zero_"
})

_MODULE_METHODS = frozenset({
    "add_module", "apply", "bfloat16", "buffers", "children", "compile", "cpu", "cuda", "double", "eval",
    "extra_repr", "float", "forward", "get_buffer", "get_extra_state", "get_parameter", "get_submodule", "half",
    "ipu", "load_state_dict", "modules", "mtia", "named_buffers", "named_children", "named_modules",
    "named_parameters", "parameters", "register_backward_hook", "register_buffer", "register_forward_hook",
    "register_forward_pre_hook", "register_full_backward_hook", "register_full_backward_pre_hook",
    "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook", "register_module",
    "register_parameter", "register_state_dict_post_hook", "register_state_dict_pre_hook", "requires_grad_",
    "set_extra_state", "set_submodule", "share_memory", "state_dict", "to", "to_empty", "train", "type", "xpu",
    "zero_grad"
})

_OPTIMIZER_METHODS = frozenset({
    "OptimizerPostHook", "OptimizerPreHook", "add_param_group", "get_backoff_factor", "get_growth_factor",
    "get_growth_interval", "get_last_lr", "get_lr", "get_scale", "is_enabled", "load_state_dict",
    "profile_hook_step", "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook",
    "register_state_dict_post_hook", "register_state_dict_pre_hook", "register_step_post_hook",
    "register_step_pre_hook", "scale", "set_backoff_factor", "set_growth_factor", "set_growth_interval",
    "state_dict", "step", "unscale_", "update", "zero_grad"
})

_BUILTIN_METHODS = frozenset({
    "add", "append", "capitalize", "casefold", "center", "clear", "copy", "count", "difference",
    "difference_update", "discard", "encode", "endswith", "expandtabs", "extend", "find", "format", "format_map",
    "fromkeys", "get", "index", "insert", "intersection", "intersection_update", "isalnum", "isalpha", "isascii",
    "isdecimal", "isdigit", "isdisjoint", "isidentifier", "islower", "isnumeric", "isprintable", "isspace",
    "issubset", "issuperset", "istitle", "isupper", "items", "join", "keys", "ljust", "lower", "lstrip",
    "maketrans", "partition", "pop", "popitem", "remove", "removeprefix", "removesuffix", "replace", "reverse",
    "rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip", "setdefault", "sort", "split", "splitlines",
    "startswith", "strip", "swapcase", "symmetric_difference", "symmetric_difference_update", "title", "translate",
    "union", "update", "upper", "values", "zfill"
})

_LOGGER_METHODS = frozenset({
    "addFilter", "addHandler", "callHandlers", "critical", "debug", "error", "exception", "fatal", "filter",
    "findCaller", "getChild", "getEffectiveLevel", "handle", "hasHandlers", "info", "isEnabledFor", "log",
    "makeRecord", "removeFilter", "removeHandler", "setLevel", "warn", "warning"
})

#: trackers, progress bars, writers and files (``wandb.run.log``, ``tqdm.set_postfix``, ``f.write``)
_OTHER_LIBRARY_METHODS = frozenset({
    "log", "log_dict", "log_image", "log_images", "log_hyperparams", "add_image", "add_images", "add_figure",
    "add_text", "add_graph", "add_embedding", "add_pr_curve", "add_hparams", "write", "flush", "close",
    "update", "refresh", "set_postfix", "set_postfix_str", "set_description", "set_description_str", "tolist",
    "numpy", "mean", "sum", "result", "wait", "get", "put", "join", "start", "run", "send", "recv", "read",
    "readline", "seek", "tell", "open", "exists", "fit", "transform", "predict", "score", "sample", "reset",
    "compute", "forward", "backward", "step", "apply", "call", "save", "load",
})

#: the public methods of ``torch.nn.Module``: a model's own methods other than these (``model.score``,
#: ``net.encode``) run the model
MODULE_METHOD_NAMES = _MODULE_METHODS

#: the methods of ``torch.Tensor``: another name called on a value taken for a tensor says it is something else
#: (``instances.has("scores")`` of a detection output), whose result is not known
TENSOR_METHODS = _TENSOR_METHODS
LIBRARY_METHOD_NAMES = (_TENSOR_METHODS | _MODULE_METHODS | _OPTIMIZER_METHODS | _BUILTIN_METHODS | _LOGGER_METHODS
                        | _OTHER_LIBRARY_METHODS | DISPLAY_METHODS | TRACKER_METHODS | WRITER_METHODS)
