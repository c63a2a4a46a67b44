"""A source's identity-provider entries → ZITADEL ``idps`` links, for the providers in ``--idp-map``.

Auth0's ``identities``, Keycloak's ``federatedIdentities`` and Firebase's ``providerUserInfo`` are
lists of the same thing under other names: a provider, the user's id there, and a few fields to
show. Each reader describes its list with a :class:`LinkFields`; the rules (which entries link,
which are the source's own sign-in, what makes an id unusable) live here once.

Example::

    fields = LinkFields("identities", "provider", "user_id", display=lambda user, entry, ext: ext)
    links, outcomes = idp_links(profile, {"google-oauth2": "2764"}, fields)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

from transforms.mapping.fields import counter_safe

__all__ = ["LinkFields", "idp_links", "provider_name", "MAX_EXTERNAL_ID"]

MAX_EXTERNAL_ID = 200  # ZITADEL's limit on externalUserId and displayName


class LinkFields(NamedTuple):
    """How one source writes an identity-provider entry."""

    entries: str  # the user's key holding the list of entries
    provider: str  # an entry's key naming the provider (the ``--idp-map`` key)
    external_id: str  # an entry's key of the user's id at the provider
    # (user, entry, external id) → the display name
    display: Callable[[Mapping[str, object], Mapping[str, object], str], str]
    own: Mapping[str, str] = {}  # provider → outcome for the source's own sign-in (not an IdP)
    numbers: tuple[type, ...] = ()  # number types an external id may come as (written as an int)


_AS_GIVEN = re.compile(r"[A-Za-z0-9_.-]{1,60}")


def provider_name(provider: str) -> str:
    """A provider as the summary and the manifest name it: as the export spells it, which is what
    ``--idp-map`` takes (``google.com``, not ``google_com``), unless it holds characters a counter
    name cannot (then ``fields.counter_safe``)."""
    return provider if _AS_GIVEN.fullmatch(provider) else counter_safe(provider)


def idp_links(
    user: Mapping[str, object], idp_map: Mapping[str, str], fields: LinkFields
) -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """The links, and one ``(outcome, provider)`` per entry: ``linked``, the source's own outcome
    (``fields.own``), ``unmapped`` (no ``--idp-map`` for the provider) or ``invalid`` (no usable
    external id; ``unknown`` provider for an entry that is not an object)."""
    entries = user.get(fields.entries)
    if not isinstance(entries, list):
        return [], []
    links: list[dict[str, str]] = []
    outcomes: list[tuple[str, str]] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            outcomes.append(("invalid", "unknown"))
            continue
        provider = entry.get(fields.provider)
        provider = provider if isinstance(provider, str) else ""
        name = provider_name(provider)
        own = fields.own.get(provider)
        if own is not None:
            outcomes.append((own, name))
            continue
        config_id = idp_map.get(provider)
        if config_id is None:
            outcomes.append(("unmapped", name))
            continue
        external = entry.get(fields.external_id)
        if (
            isinstance(external, int | float)
            and isinstance(external, fields.numbers)
            and not isinstance(external, bool)
        ):
            external = str(int(external))  # some exports write numeric ids (GitHub's)
        if not isinstance(external, str) or not external.strip() or len(external) > MAX_EXTERNAL_ID:
            outcomes.append(("invalid", name))
            continue
        display = fields.display(user, entry, external)
        links.append(
            {
                "configId": config_id,
                "externalUserId": external.strip(),
                "displayName": display[:MAX_EXTERNAL_ID],
            }
        )
        outcomes.append(("linked", name))
    return links, outcomes
