"""The Auth0 reader's settings: the mapping choices ``migrate auth0`` takes from its flags.

Shared by every step of the reader (``parse``, ``join``) and built once by the
launcher (``command.py``); all fields are picklable, no clients.

Example::

    Auth0Options(email_verified=True, idp_map=(("google-oauth2", "2873423"),))
"""

from __future__ import annotations

import dataclasses

from transforms.hashing.policy import OnUnsupportedHash
from transforms.mapping.validate import ValidationOptions

__all__ = ["Auth0Options"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Auth0Options:
    """Mapping choices from the command line.

    ``idp_map``: ``(provider, ZITADEL IdP id)`` pairs from ``--idp-map``.
    """

    email_verified: bool = False
    include_blocked: bool = False
    metadata: bool = False
    validation: ValidationOptions = ValidationOptions()
    idp_map: tuple[tuple[str, str], ...] = ()
    # --on-unsupported-hash (transforms/hashing/policy.py): "import-without-password" imports the
    # user without its password and dead-letters the hash record with the reason.
    on_unsupported_hash: OnUnsupportedHash = OnUnsupportedHash.DEAD_LETTER
    # --email-fallback TEMPLATE ({username}, {id}): the address of profiles without one (unverified).
    email_fallback: str | None = None
    # Roles (docs/roles.md): --project-id, and --roles-from's dotted path into each profile.
    roles_project: str | None = None
    roles_from: str | None = None

    @property
    def drop_bad_hashes(self) -> bool:
        return self.on_unsupported_hash == OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD
