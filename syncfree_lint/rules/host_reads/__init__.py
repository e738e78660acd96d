"""SFL1xx: device-to-host reads inside a step. One module per rule, each imported here."""
from syncfree_lint.rules.base import load_family

load_family(__name__, __path__)
