"""Shared analysis answered once per file: imports, tensor kinds, step scope, positions."""
