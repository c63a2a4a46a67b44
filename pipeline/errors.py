"""Errors the command line reports as one readable line (exit status 2); defined in transforms/errors.py."""

from transforms.errors import ConfigError

__all__ = ["ConfigError"]
