"""SFL109: a tensor handed to a logging sink in a step."""
from syncfree_lint.rules.sinks import logging_sink

__all__ = ["logging_sink"]
