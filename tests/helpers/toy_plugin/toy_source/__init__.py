"""A toy source, outside the project's package tree: a plugin (tests/transforms/sources/test_registry.py)."""
