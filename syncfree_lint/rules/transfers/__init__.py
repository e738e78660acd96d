"""SFL4xx: host-to-device copies inside a step."""
from syncfree_lint.rules.transfers import blocking_batch, tensor_from_data

__all__ = ["blocking_batch", "tensor_from_data"]
