"""pytest plugin of syncfree (being written)."""
