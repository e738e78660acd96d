"""SFL2xx: operations whose output shape depends on the data."""
from syncfree_lint.rules.shapes import dynamic_shape, mask_indexing, nonzero

__all__ = ["dynamic_shape", "mask_indexing", "nonzero"]
