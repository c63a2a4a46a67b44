"""Stable user ids for source users that have none, and the ``--email-fallback`` address.

A derived id is ``<source>-import|<uuid5>``: the UUID (RFC 4122 version 5, SHA-1 based) of a
key built from what identifies the user at the source, in a namespace fixed in this module, so
the same input gives the same id in every run, on every runner and worker (no ``hash()``, no
randomness) and a re-run or a push resume meets the same ids. Real Auth0 ids are
``<provider>|<id>`` with an identity provider name (``auth0``, ``google-oauth2``, ``samlp``...)
and Keycloak ids are UUIDs without ``|``, so a derived id does not collide with a real one
(README "User ids", docs/source-schemas.md). Ids are at most 52 characters (ZITADEL allows 200).

Example::

    >>> auth0_user_id(" Ann@Example.com ") == auth0_user_id("ann@example.com")
    True
    >>> keycloak_user_id("acme", "Bob").startswith("keycloak-import|")
    True
"""

from __future__ import annotations

import string
import uuid
from typing import Any, NamedTuple

from transforms.common.reasons import Reason
from transforms.mapping.validate import control_char_problem, valid_email

__all__ = [
    "NAMESPACE",
    "auth0_user_id",
    "keycloak_user_id",
    "fallback_email",
    "check_template",
    "EmailChoice",
    "email_or_fallback",
]

# Fixed for ever: changing it changes every derived id (and breaks re-runs against a target).
NAMESPACE = uuid.UUID("6b1f8a52-3c0e-5d0a-9f4e-7a6c2e1d9b30")


def _key(value: str) -> str:
    return value.strip().casefold()


def auth0_user_id(email: str) -> str:
    """The id of an Auth0 bulk-import user without ``user_id``: from its trimmed, case-folded e-mail."""
    return "auth0-import|" + str(uuid.uuid5(NAMESPACE, "auth0\n" + _key(email)))


def keycloak_user_id(realm: str, user_name: str) -> str:
    """The id of a Keycloak user without ``id``: usernames are unique per realm (case-insensitive)."""
    return "keycloak-import|" + str(uuid.uuid5(NAMESPACE, "keycloak\n" + realm + "\n" + _key(user_name)))


_FIELDS = {"username", "id"}


def check_template(template: str) -> str | None:
    """A readable problem with an ``--email-fallback`` template, or None."""
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as err:
        return f"--email-fallback {template!r}: {err}"
    unknown = names - _FIELDS
    if unknown:
        return f"--email-fallback {template!r}: unknown placeholder {{{sorted(unknown)[0]}}} (use {{username}}, {{id}})"
    if not names:
        return f"--email-fallback {template!r}: needs {{username}} or {{id}} so that addresses differ"
    return None


def fallback_email(template: str, user_name: Any, user_id: Any) -> str | None:
    """The address ``template`` gives this user, or None when it is not a valid e-mail."""
    values = {
        "username": user_name if isinstance(user_name, str) else "",
        "id": user_id if isinstance(user_id, str) else "",
    }
    if any(control_char_problem(v, k) for k, v in values.items()):
        return None
    address = template.format(**{k: v.strip() for k, v in values.items()})
    return address if valid_email(address) else None


class EmailChoice(NamedTuple):
    """The address a user is written with, and whether ``--email-fallback`` gave it (then unverified)."""

    email: str
    from_fallback: bool


def email_or_fallback(
    email: str, template: str | None, user_name: Any, user_id: Any, where: str = ""
) -> EmailChoice | tuple[str, str]:
    """The user's own e-mail, else the one ``template`` (``--email-fallback``) gives; else the
    dead letter's reason (a ``Reason``) and text (``where`` names the field, for a table). One rule
    for every source::

        >>> email_or_fallback("", "{id}@users.invalid", "ann", "u1")
        EmailChoice(email='u1@users.invalid', from_fallback=True)
    """
    if email:
        return EmailChoice(email, False)
    if template is None:
        return Reason.MISSING_EMAIL, f"no e-mail address{where} (--email-fallback TEMPLATE gives one)"
    address = fallback_email(template, user_name, user_id)
    if not address:
        return (
            Reason.INVALID_EMAIL_FALLBACK,
            f"--email-fallback {template!r} gives no valid e-mail address for this user",
        )
    return EmailChoice(address, True)
