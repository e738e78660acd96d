"""SFL2xx: operations whose output shape depends on the data. One module per rule, each imported here."""
from syncfree_lint.rules.base import load_family

load_family(__name__, __path__)
