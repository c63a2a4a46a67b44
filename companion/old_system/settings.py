"""Which old system ``companion serve`` checks against, from its flags (docs/companion.md#old-systems).

``Settings`` holds what the flags give; ``build`` checks it (one readable line per mistake, never
a secret) and returns the system's check. What each kind needs:

| kind | url | client id | secret (file or env) | realm |
|---|---|---|---|---|
| ``auth0`` | ``https://TENANT.auth0.com`` | required | client secret (confidential client) | connection: password-realm grant |
| ``keycloak`` | ``https://HOST/realms/REALM`` | required | client secret (confidential client) | - |
| ``cognito`` | ``https://cognito-idp.REGION.amazonaws.com`` | app client id | app client secret, if it has one | - |
| ``okta`` | ``https://ORG.okta.com`` | - | - | - |
| ``okta-oauth`` | ``https://ORG.okta.com/oauth2/default`` | required | client secret, if confidential | - |
| ``firebase`` | default ``https://identitytoolkit.googleapis.com`` | - | Web API key (required) | - |
| ``http`` | the application's endpoint | - | signing key (required) | - |

Example::

    check = build(Settings(kind="keycloak", url="https://sso.example.com/realms/acme", client_id="companion", timeout=3.0))
"""

from __future__ import annotations

import dataclasses

from companion.old_system.answer import OldSystem
from companion.old_system.application import Application
from companion.old_system.auth0 import Auth0
from companion.old_system.cognito import Cognito
from companion.old_system.firebase import DEFAULT_URL, Firebase
from companion.old_system.keycloak import Keycloak
from companion.old_system.okta import Okta, OktaOAuth
from companion.old_system.transport import Poster, check_url

__all__ = ["KINDS", "Settings", "build"]

KINDS = ("auth0", "keycloak", "cognito", "okta", "okta-oauth", "firebase", "http")
_NEEDS_CLIENT = ("auth0", "keycloak", "cognito", "okta-oauth")
_NEEDS_SECRET = {"firebase": "the project's Web API key", "http": "the signing key the application checks"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    kind: str
    url: str | None = None
    client_id: str | None = None
    secret: str | None = dataclasses.field(default=None, repr=False)
    realm: str | None = None
    timeout: float = 3.0
    ca_file: str | None = None


def _check(settings: Settings) -> str:
    """The URL to use; ValueError naming the first missing or wrong setting."""
    if settings.kind not in KINDS:
        raise ValueError(f"--old-system {settings.kind!r}: one of {', '.join(KINDS)}")
    url = settings.url or (DEFAULT_URL if settings.kind == "firebase" else None)
    if not url:
        raise ValueError(f"--old-system {settings.kind} needs --old-system-url")
    try:
        check_url(url)
    except ValueError as err:
        raise ValueError(f"--old-system-url {err}") from None
    if settings.kind in _NEEDS_CLIENT and not settings.client_id:
        raise ValueError(f"--old-system {settings.kind} needs --old-system-client-id")
    if settings.kind in _NEEDS_SECRET and not settings.secret:
        raise ValueError(
            f"--old-system {settings.kind} needs --old-system-secret-file (or env "
            f"ZITADEL_COMPANION_OLD_SYSTEM_SECRET): {_NEEDS_SECRET[settings.kind]}"
        )
    if settings.realm and settings.kind != "auth0":
        raise ValueError("--old-system-realm is Auth0's connection; the other systems take no realm")
    return url


def build(settings: Settings) -> OldSystem:
    """The check ``settings`` describe; ValueError (one line, no secret) when they are incomplete."""
    url = _check(settings)
    poster = Poster(settings.timeout, settings.ca_file)
    client, secret = settings.client_id or "", settings.secret
    kind = settings.kind
    if kind == "auth0":
        return Auth0(poster, url=url, client_id=client, secret=secret, realm=settings.realm)
    if kind == "keycloak":
        return Keycloak(poster, url=url, client_id=client, secret=secret)
    if kind == "cognito":
        return Cognito(poster, url=url, client_id=client, secret=secret)
    if kind == "okta":
        return Okta(poster, url=url)
    if kind == "okta-oauth":
        return OktaOAuth(poster, url=url, client_id=client, secret=secret)
    if kind == "firebase":
        return Firebase(poster, api_key=secret or "", url=url)
    return Application(poster, url=url, key=(secret or "").encode())
