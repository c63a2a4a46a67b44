"""Errors the command line reports as one readable line (exit status 2); defined in transforms/common/errors.py."""

from transforms.common.errors import ConfigError

__all__ = ["ConfigError"]
