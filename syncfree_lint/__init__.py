"""syncfree-lint: find and fix host-device syncs in PyTorch training steps."""

__version__ = "0.1.0"
