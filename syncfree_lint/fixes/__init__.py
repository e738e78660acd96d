"""Fixes: plans attached to findings, turned into text edits, applied until nothing changes."""
