"""The editor integration: ``syncfree-lint server``, a Language Server over stdio.

``session`` holds what the server knows and decides (linting a buffer in its project, the code
actions for a finding), as plain data without any LSP library; ``serve`` wires it to pygls.
"""
