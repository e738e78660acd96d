"""What the linter knows about PyTorch training code, as data: names, words and API facts.

Analysis modules read these tables; rules never keep name lists of their own. Lists a user may
need to extend are config keys (see ``syncfree_lint.config``); each table has a table-driven
test in ``tests/unit/test_knowledge.py``.
"""
