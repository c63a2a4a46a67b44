"""The invariant every reader of one-record-per-user exports keeps, worded once.

Keycloak, Firebase and tables of users read records that are each one user: every record read is
written (or, with ``--state``, compared with the state) or dead-lettered, and every record that
passed mapping is written, compared, dropped as a duplicate or (sync only) refused as blocked or
disabled while new to ZITADEL. A source's ``accounting.invariant`` names its own counters and
words and calls :func:`reader_invariant`; its summary rows put :func:`users_lines` (the
accounting's ``written`` and ``compared``) after its records read.

Example::

    holds, text = reader_invariant(counts, read=counts.get("keycloak.users_read", 0), noun="users",
                                   source="keycloak-user", passed=3, passed_label="converted",
                                   refused_label="disabled")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from transforms.common import counters

__all__ = ["reader_invariant", "users_lines"]


def reader_invariant(
    counts: Mapping[str, int],
    *,
    read: int,
    noun: str,
    source: str,
    passed: int,
    passed_label: str,
    refused_label: str,
) -> tuple[bool, str]:
    """``<noun> read = written + dead-lettered; <passed_label> = written + duplicates`` (with the
    state's compared rows and, in a sync, the ``<refused_label>`` users new to ZITADEL)."""
    # With --state, users already in ZITADEL are compared instead of written (docs/sync.md).
    written = counts.get(counters.USERS_WRITTEN, 0)
    compared = counts.get(counters.SYNC_ROWS_NOT_IMPORTED, 0)
    dead = counters.count_prefix(counts, counters.dead_letter(source))
    duplicates = counters.count_prefix(counts, counters.dead_letter(source, "duplicate-"))
    rejected = counts.get(counters.SYNC_ROWS_REJECTED, 0)  # blocked or disabled users new to ZITADEL
    holds = read == written + compared + dead and passed == written + compared + duplicates + rejected
    also = f" + compared with the state {compared:,}" if compared else ""
    text = (
        f"{noun} read {read:,} = written {written:,}{also} + dead-lettered {dead:,}; "
        f"{passed_label} {passed:,} = written {written:,}{also} + duplicates {duplicates:,}"
        + (f" + {refused_label}, not in ZITADEL yet {rejected:,}" if rejected else "")
    )
    return holds, text


def users_lines(counts: Mapping[str, int]) -> list[tuple[str, int | str]]:
    """Users written to import bodies and, with ``--state``, users compared with the state
    instead (already in ZITADEL), each with and without a password: the accounting line's
    ``written`` and ``compared with the state`` (docs/sync.md)."""
    written = counts.get(counters.USERS_WRITTEN, 0)
    with_pw = counts.get(counters.USERS_WITH_PASSWORD, 0)
    lines: list[tuple[str, int | str]] = [
        ("users written", written),
        ("  with password", with_pw),
        ("  without password", written - with_pw),
    ]
    compared = counts.get(counters.SYNC_ROWS_NOT_IMPORTED, 0)
    if compared:
        compared_pw = counts.get(counters.SYNC_COMPARED_WITH_PASSWORD, 0)
        lines += [
            ("users compared with the state (in ZITADEL)", compared),
            ("  with password", compared_pw),
            ("  without password", compared - compared_pw),
        ]
    return lines


def link_outcomes(invalid: str, *own: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    """The ``(outcome, label)`` pairs of :func:`link_lines` every source counts: linked, the
    source's ``own`` outcomes, not mapped by ``--idp-map``, and ``invalid`` (its words for an
    entry without a usable id at the IdP)."""
    return (("linked", "linked to IdP"), *own, ("unmapped", "no --idp-map, not linked"), ("invalid", invalid))


def link_lines(
    counts: Mapping[str, int], prefix: str, outcomes: Sequence[tuple[str, str]]
) -> list[tuple[str, int | str]]:
    """The summary rows of a source's IdP-link counters (``<prefix><outcome>.<provider>``): for
    each ``(outcome, label)`` in order, one row ``"  <label>: <provider>"`` per provider, providers
    sorted. Auth0's identities, Keycloak's federatedIdentities and Firebase's providerUserInfo
    entries are counted this way (docs/fields-not-carried.md).

    Example::

        link_lines({"kc.idp.linked.google": 2}, "kc.idp.", [("linked", "linked to IdP")])
        # [("  linked to IdP: google", 2)]
    """
    links = dict(sorted((name, value) for name, value in counts.items() if name.startswith(prefix)))
    return [
        (f"  {label}: {provider}", value)
        for outcome, label in outcomes
        for provider, value in counters.by_suffix(links, f"{prefix}{outcome}.")
    ]
