"""A change whose outcome is unknown is read back before it is sent again (docs/sync.md#unknown-outcomes).

A write that timed out, lost its connection or met a gateway's 502/504 may have reached ZITADEL
anyway: sending it again writes the same password hash a second time, which is one more
``user.human.password.changed`` event (one that can notify the user). Before such an
``UpdateHumanUser`` is sent again (the same night's retry, or the next night's run, which learns
of it from the state's ``UNKNOWN_OUTCOMES.json``) the user is read back (``GET /v2/users/{id}``)
and only what did not land is sent:

- the password landed when the user's ``passwordChanged`` is at or after the time the first
  unanswered write was sent (minus ``CLOCK_SLACK`` for the two clocks);
- username, profile, e-mail and phone landed when the user holds the values the body sets;
- every other call (``call_left``) landed when its effect is there: the user's state for
  ``DeactivateUser``, ``LockUser``, ``ReactivateUser`` and ``UnlockUser``, the user gone for
  ``DeleteUser``, no phone for ``RemovePhone``, the link for ``AddIDPLink`` / ``RemoveIDPLink``
  (``ListIDPLinks``), the keys and values for ``SetUserMetadata`` / ``DeleteUserMetadata``
  (``ListUserMetadata``). Grants look their grant up before every attempt (calls.py).

Example::

    >>> answer = {"user": {"username": "ann", "human": {"passwordChanged": "2026-11-26T06:00:05Z"}}}
    >>> sent_at = parse_time("2026-11-26T06:00:00Z")
    >>> not_landed({"username": "ann", "password": {"hashedPassword": {"hash": "..."}}}, answer, sent_at)
    {}
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import Any

from transforms.sync.change_records import Call, ChangeCall

__all__ = ["CLOCK_SLACK", "SETTLE", "Json", "Held", "parse_time", "not_landed", "call_left"]

Json = dict[str, Any]  # a JSON object: a request body, a part of it, an answer

# Seconds the client's clock may run ahead of ZITADEL's and a landed password still count as
# landed. A password changed by someone else this shortly before the call also counts as ours.
CLOCK_SLACK = 30.0

# Seconds after it was sent that a write whose night gave up on it may still land: ZITADEL drops a
# request's work when its connection closes, but a proxy in between may keep the request to ZITADEL
# open until its own upstream timeout (nginx's proxy_read_timeout is 60 s by default). The next
# run reads such a user back no sooner than this after the write was sent, and after every other
# user (docs/sync.md#late-landing).
SETTLE = 60.0

_FRACTION = re.compile(r"\.(\d{1,6})\d*")


def parse_time(text: str) -> float | None:
    """An RFC 3339 timestamp as ZITADEL's JSON mapping writes it (nanoseconds) → Unix seconds.

    >>> parse_time("1970-01-01T00:00:01.123456789Z")
    1.123456
    """
    try:
        cleaned = _FRACTION.sub(lambda m: "." + m.group(1).ljust(6, "0"), text.strip()).replace("Z", "+00:00")
        moment = dt.datetime.fromisoformat(cleaned)
    except (ValueError, AttributeError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()


def _same_profile(wanted: Json, held: Json) -> bool:
    return all((held.get(key) or None) == (value or None) for key, value in wanted.items())


def _same_contact(wanted: Json, held: Json, field: str) -> bool:
    if held.get(field) != wanted.get(field):
        return False
    # Set verified, held unverified (or the other way): not what the body sets.
    return "isVerified" not in wanted or bool(held.get("isVerified")) == bool(wanted["isVerified"])


def not_landed(body: Json, answer: Json, since: float) -> Json:
    """The part of an ``UpdateHumanUserRequest`` body the target does not hold (``answer``: the
    user as ``GET /v2/users/{id}`` returns it); ``since``: when the first write whose outcome is
    unknown was sent. ``{}``: everything landed, nothing to send."""
    user = answer.get("user") or {}
    human = user.get("human") or {}
    left: Json = {}
    for key, value in body.items():
        if key == "username":
            landed = user.get("username") == value
        elif key == "profile":
            landed = _same_profile(value or {}, human.get("profile") or {})
        elif key == "email":
            landed = _same_contact(value or {}, human.get("email") or {}, "email")
        elif key == "phone":
            landed = _same_contact(value or {}, human.get("phone") or {}, "phone")
        elif key == "password":
            changed = parse_time(str(human.get("passwordChanged") or ""))
            landed = changed is not None and changed >= since - CLOCK_SLACK
        else:
            landed = False  # a field this check does not know: send it
        if not landed:
            left[key] = value
    return left


@dataclasses.dataclass
class Held:
    """What the target holds of one user, as far as it was read back.

    ``user``: ``GET /v2/users/{id}``'s ``user`` (None: the user does not exist); ``metadata``:
    key → base64 value (``ListUserMetadata``); ``links``: (IdP id, external user id) pairs
    (``ListIDPLinks``); None where not read (or the server has no such call).
    """

    user: Json | None
    metadata: dict[str, str] | None = None
    links: set[tuple[str, str]] | None = None

    @property
    def state(self) -> str | None:
        return None if self.user is None else self.user.get("state")


# The state after each state call; a user in either state holds the call's effect.
_STATE_AFTER: dict[str, tuple[str, ...]] = {
    Call.DEACTIVATE_USER: ("USER_STATE_INACTIVE",),
    Call.LOCK_USER: ("USER_STATE_LOCKED",),
    Call.REACTIVATE_USER: ("USER_STATE_ACTIVE", "USER_STATE_INITIAL"),
    Call.UNLOCK_USER: ("USER_STATE_ACTIVE", "USER_STATE_INITIAL"),
}
NEEDS_METADATA = (Call.SET_USER_METADATA, Call.DELETE_USER_METADATA)
NEEDS_LINKS = (Call.ADD_IDP_LINK, Call.REMOVE_IDP_LINK)


def call_left(call: ChangeCall, held: Held, since: float) -> ChangeCall | None:
    """The part of ``call`` the target does not hold (None: its effect is there, nothing to send);
    ``since`` as for ``not_landed``. A call whose effect cannot be told from ``held`` is left whole.

    >>> call_left({"call": "LockUser"}, Held({"state": "USER_STATE_LOCKED"}), 0.0) is None
    True
    >>> call_left({"call": "DeleteUserMetadata", "keys": ["a", "b"]}, Held({}, metadata={"b": "eA=="}), 0.0)
    {'call': 'DeleteUserMetadata', 'keys': ['b']}
    """
    name = call["call"]
    if name == Call.DELETE_USER:
        return None if held.user is None else call
    if held.user is None:
        return call  # gone: the call is refused, and says so
    if name == Call.UPDATE_HUMAN_USER:
        body = not_landed(dict(call.get("body") or {}), {"user": held.user}, since)
        return {**call, "body": body} if body else None
    if name in _STATE_AFTER:
        return None if held.state in _STATE_AFTER[name] else call
    if name == Call.REMOVE_PHONE:
        phone = (held.user.get("human") or {}).get("phone") or {}
        return call if phone.get("phone") else None
    if name in NEEDS_LINKS and held.links is not None:
        if name == Call.ADD_IDP_LINK:
            link = (call.get("body") or {}).get("idpLink") or {}
            there = (str(link.get("idpId")), str(link.get("userId"))) in held.links
            return None if there else call
        there = (str(call.get("idpId")), str(call.get("linkedUserId"))) in held.links
        return call if there else None
    if name == Call.SET_USER_METADATA and held.metadata is not None:
        wanted = (call.get("body") or {}).get("metadata") or []
        left = [m for m in wanted if held.metadata.get(str(m.get("key"))) != m.get("value")]
        return {**call, "body": {**(call.get("body") or {}), "metadata": left}} if left else None
    if name == Call.DELETE_USER_METADATA and held.metadata is not None:
        keys = [k for k in call.get("keys") or [] if k in held.metadata]
        return {**call, "keys": keys} if keys else None
    return call
