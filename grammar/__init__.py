"""Grammar of the literate ISA docs (package data)."""
