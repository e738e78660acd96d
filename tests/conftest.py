"""Shared test settings."""
import os

from hypothesis import settings

# In CI the generated examples are derandomized: the same programs every run, so a landing is
# never decided by a new random draw. Locally each run explores new examples.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
