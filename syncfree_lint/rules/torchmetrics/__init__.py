"""SFL3xx: torchmetrics updates, computes and Lightning logging inside a step. One module per rule, each imported here."""
from syncfree_lint.rules.base import load_family

load_family(__name__, __path__)
