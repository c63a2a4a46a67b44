"""Emulator runs without the ~20 s credential wait.

With ``STORAGE_EMULATOR_HOST`` set (``gcp-storage-emulator``, fake GCS servers) and no
credentials configured, Beam's GCS client first retries Google's default-credential look-up with
backoff (about 20 s in every process: the launcher and each worker) before it goes anonymous,
and google-auth may probe the GCE metadata address. An emulator accepts any token, so for such
runs the launcher points ``GOOGLE_APPLICATION_CREDENTIALS`` at a throw-away authorized-user file
whose token never expires (worker processes inherit the environment). Nothing changes when
credentials are configured or when no emulator is named: production runs are untouched.
"""

from __future__ import annotations

import json
import os
import tempfile

__all__ = ["prepare_emulator_credentials", "EmulatorCredentials"]

_DUMMY = {
    "type": "authorized_user",
    "client_id": "emulator.apps.googleusercontent.com",
    "client_secret": "emulator",
    "refresh_token": "emulator",
    "token": "emulator-token",
    "expiry": "2999-01-01T00:00:00Z",
}


class EmulatorCredentials:
    """What ``prepare_emulator_credentials`` changed; ``restore()`` undoes it (file and variables)."""

    def __init__(self, environ, path: str, added: list[str]):
        self._environ, self.path, self._added = environ, path, added

    def restore(self) -> None:
        for name in self._added:
            self._environ.pop(name, None)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def prepare_emulator_credentials(environ=os.environ) -> EmulatorCredentials | None:
    """Set up dummy credentials for an emulator run; None when there is nothing to do."""
    if not environ.get("STORAGE_EMULATOR_HOST") or environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
        return None
    handle, path = tempfile.mkstemp(prefix="zitadel-beam-emulator-", suffix=".json")
    with os.fdopen(handle, "w") as out:
        json.dump(_DUMMY, out)
    wanted = {
        "GOOGLE_APPLICATION_CREDENTIALS": path,
        "GOOGLE_CLOUD_PROJECT": "emulator",
        "NO_GCE_CHECK": "true",
    }
    added = [name for name in wanted if name not in environ]
    for name in added:
        environ[name] = wanted[name]
    return EmulatorCredentials(environ, path, added)
