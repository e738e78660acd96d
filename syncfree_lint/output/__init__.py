"""Formatters: plain functions of one list of diagnostics."""
