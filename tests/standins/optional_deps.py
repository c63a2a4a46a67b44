"""The stand-ins' optional packages, imported when a request first needs one.

``python tests/standins/zitadel_server.py`` must run after ``./run_local.sh`` alone, which
installs the tool without its test extras (README, "Quick start"): argon2-cffi (argon2 hash
checks), PyJWT (the JWT-profile token grant) and protobuf (the user service v2 schema oracle) are
loaded only by the requests that use them, and a missing one is one clear line, not a traceback.

Example::

    jwt = optional("jwt", "pyjwt", "the JWT-profile token grant")
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingDependency", "optional"]


class MissingDependency(RuntimeError):
    """A package a request needs is not installed; the message says which and how to add it."""


def optional(module: str, package: str, needed_for: str) -> ModuleType:
    """``module``, imported now; MissingDependency naming ``package`` when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(
            f"{needed_for} needs the Python package {package!r}, which is not installed: "
            f"pip install {package!r} (./run_local.sh test installs every test extra)"
        ) from None
