"""What a scheduled sync remembers of a user, and what it sends when the user changed.

A **state record** is what the target is known to hold for one user (docs/sync.md)::

    {"id": "auth0|1", "n": "ann", "q": "9f..", "f": {"username": "1c..", "profile": ..},
     "b": "", "l": [["idp-id", "external-id"]], "m": {"key": "7e.."}}

- ``q``: a quick digest of the mapped entry's bytes and metadata. Equal → unchanged, without
  parsing anything (the common case of a nightly run).
- ``f``: one digest per field group (:data:`GROUPS`) over the *mapped* values, canonically
  encoded (sorted keys, links and metadata sorted), so input order, key order and layout never
  show as a change; it tells which groups changed when ``q`` differs.
- ``b``: how the user is blocked in the target: ``""`` (active), ``"inactive"`` (deactivated) or
  ``"locked"`` (an initial user cannot be deactivated, so it is locked instead).
- ``l``: the IdP links (id pairs) and ``m``: the metadata keys with a digest of each value, so a
  link or key gone at the source can be removed, and only changed keys are set.
- ``g``: present (``1``) when the user is gone from the source and was deactivated for it.
- ``i``: present (``1``) when the target holds the user as *initial*: blocking it plans
  ``LockUser`` (docs/sync.md#initial-users; apply still locks one an older record did not mark).

No password hash or secret is stored: digests only (BLAKE2b, 64 bits per group).

A **change record** (one NDJSON line of ``<stem>.changes-*.ndjson``, its shape and calls in
``transforms/sync/change_records.py``) is one user's calls, planned here (:func:`plan_changes`)::

    {"userId": "auth0|1", "orgId": "123", "userName": "ann", "kind": "changed",
     "fields": ["profile", "password"], "calls": [{"call": "UpdateHumanUser", "body": {..}}],
     "state": {..the state record to commit once the calls are confirmed..}}

Example::

    >>> rec = state_record(entry, metadata_items, blocked=False, quick=quick_digest(b"{}", b""))
    >>> plan = plan_changes(old_rec, rec, entry, metadata_items)  # doctest: +SKIP
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from transforms.common.records import Grants
from transforms.sync.change_records import Call, ChangeCall, ChangeKind, StateRecord

__all__ = [
    "GROUPS",
    "UPDATE_GROUPS",
    "ACTIVE",
    "INACTIVE",
    "LOCKED",
    "ID",
    "NAME",
    "QUICK",
    "FIELDS",
    "BLOCKED",
    "LINKS",
    "METADATA",
    "GONE",
    "GRANTS",
    "INITIAL",
    "StateRecord",
    "Grants",
    "quick_digest",
    "state_record",
    "changed_groups",
    "plan_changes",
    "compare_user",
    "same_as_state",
    "block_calls",
    "merge_confirmed",
    "CALL_GROUPS",
]

GROUPS = ("username", "profile", "email", "phone", "password", "idps", "metadata", "otp", "grants")
# The groups one UpdateHumanUser call carries.
UPDATE_GROUPS = ("username", "profile", "email", "phone", "password")

ACTIVE, INACTIVE, LOCKED = "", "inactive", "locked"
# UpdateHumanUser's password.hashedPassword.hash and password.password: 1-200 characters in
# ZITADEL's published schema (docs/sync.md#schema-check).
MAX_PASSWORD = 200

# The keys of a state record as they are written in the state shards: one letter each, because a
# state holds one record per user (millions) and every shard is read back each night. Code names
# them by these constants; the letters on disk never change (docs/sync.md).
ID: Final = "id"  # the user id
NAME: Final = "n"  # the userName
QUICK: Final = "q"  # quick digest of the mapped bytes ("" : compare in full next time)
FIELDS: Final = "f"  # group -> digest of its mapped values
BLOCKED: Final = "b"  # ACTIVE, INACTIVE or LOCKED in the target
LINKS: Final = "l"  # [[idp id, external user id], ...]
METADATA: Final = "m"  # metadata key -> digest of its value
GONE: Final = "g"  # 1: gone from the source and deactivated for it
GRANTS: Final = "a"  # [[project id, [role keys]], ...]
INITIAL: Final = "i"  # 1: the target holds the user in state initial (cannot be deactivated)


# Which state fields a confirmed call makes true (merge_confirmed).
CALL_GROUPS: dict[str, tuple[str, ...]] = {
    Call.UPDATE_HUMAN_USER: UPDATE_GROUPS,
    Call.REMOVE_PHONE: ("phone",),
    Call.ADD_IDP_LINK: ("idps",),
    Call.REMOVE_IDP_LINK: ("idps",),
    Call.SET_USER_METADATA: ("metadata",),
    Call.DELETE_USER_METADATA: ("metadata",),
    Call.SET_USER_GRANT: ("grants",),
    Call.REMOVE_USER_GRANT: ("grants",),
}


def _digest(value: Any) -> str:
    data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(data, digest_size=8).hexdigest()


# Digests of groups added after a state may have been written, for records that lack them.
_ABSENT = {"grants": _digest([])}


def quick_digest(entry_json: bytes, metadata_json: bytes, blocked: bool = False, grants: Grants = ()) -> str:
    """A digest of the exact bytes of a mapped entry, its metadata and grants (the fast path).

    A user without grants digests exactly as before grants existed, so a state made without
    roles still reads as unchanged."""
    h = hashlib.blake2b(entry_json, digest_size=12)
    h.update(b"\x00")
    h.update(metadata_json)
    h.update(b"\x01" if blocked else b"\x00")
    if grants:
        h.update(orjson.dumps(grants))
    return h.hexdigest()


def _group_values(
    entry: Mapping[str, Any], metadata: Sequence[Mapping[str, Any]], grants: Grants = ()
) -> dict[str, Any]:
    user = entry.get("user") or {}
    email = dict(user.get("email") or {})
    phone = dict(user.get("phone") or {})
    hashed = (user.get("hashedPassword") or {}).get("value")
    password: Any = None
    if hashed:
        password = ["hash", hashed, bool(user.get("passwordChangeRequired"))]
    elif user.get("password"):
        password = ["plain", user["password"], bool(user.get("passwordChangeRequired"))]
    links = sorted(
        [str(i.get("configId", "")), str(i.get("externalUserId", "")), str(i.get("displayName", ""))]
        for i in user.get("idps") or []
    )
    meta = sorted([str(m.get("key", "")), str(m.get("value", ""))] for m in metadata)
    return {
        "username": user.get("userName"),
        "profile": user.get("profile") or {},
        "email": [email.get("email"), bool(email.get("isEmailVerified"))],
        "phone": [phone.get("phone"), bool(phone.get("isPhoneVerified"))] if phone.get("phone") else None,
        "password": password,
        "idps": links,
        "metadata": meta,
        "otp": user.get("otpCode"),
        "grants": sorted([str(project), sorted(str(k) for k in keys)] for project, keys in grants),
    }


def state_record(
    entry: Mapping[str, Any],
    metadata: Sequence[Mapping[str, Any]],
    *,
    blocked: bool,
    quick: str,
    grants: Grants = (),
) -> StateRecord:
    """The state record of a mapped user entry (its ``humanUsers`` item), its metadata items and
    its grants (``GRANTS``: project and role keys, so a project gone at the source can be removed)."""
    values = _group_values(entry, metadata, grants)
    user = entry.get("user") or {}
    record: StateRecord = {
        ID: str(entry.get("userId") or ""),
        NAME: user.get("userName"),
        QUICK: quick,
        FIELDS: {group: _digest(values[group]) for group in GROUPS},
        BLOCKED: INACTIVE if blocked else ACTIVE,
    }
    if values["idps"]:
        record[LINKS] = [[config, external] for config, external, _ in values["idps"]]
    if values["metadata"]:
        record[METADATA] = {key: _digest(value) for key, value in values["metadata"]}
    if values["grants"]:
        record[GRANTS] = values["grants"]
    if not values["idps"] and (not values["email"][1] or values["password"] is None):
        record[INITIAL] = 1  # as the import leaves it (docs/sync.md#initial-users)
    return record


def changed_groups(old: StateRecord, new: StateRecord) -> list[str]:
    """The field groups whose digests differ (all of them against a record without digests)."""
    before, after = old.get(FIELDS) or {}, new.get(FIELDS) or {}
    # A record written before grants were compared has no "grants" digest: it held none.
    return [group for group in GROUPS if before.get(group, _ABSENT.get(group)) != after.get(group)]


def _profile_body(profile: Mapping[str, Any]) -> dict[str, str]:
    """The v2 profile (``givenName``/``familyName``, docs/sync.md): optional fields removed at the
    source are sent empty, so the target does not keep a value the source dropped."""
    given = str(profile.get("firstName") or "")
    family = str(profile.get("lastName") or "")
    body = {"givenName": given, "familyName": family}
    body["nickName"] = str(profile.get("nickName") or "")
    body["displayName"] = str(profile.get("displayName") or f"{given} {family}".strip())
    body["preferredLanguage"] = str(profile.get("preferredLanguage") or "")
    return body


def _contact_updates(groups: Sequence[str], user: Mapping[str, Any], update: dict[str, Any]) -> bool:
    """Adds the e-mail and phone parts of ``UpdateHumanUser`` to ``update``; True when the phone
    was removed at the source (a call of its own)."""
    if "email" in groups:
        email = user.get("email") or {}
        update["email"] = {"email": email.get("email")}
        if email.get("isEmailVerified"):
            update["email"]["isVerified"] = True
        else:
            update["email"]["returnCode"] = {}
    if "phone" not in groups:
        return False
    phone = user.get("phone") or {}
    if not phone.get("phone"):
        return True
    update["phone"] = {"phone": phone["phone"]}
    if phone.get("isPhoneVerified"):
        update["phone"]["isVerified"] = True
    else:
        update["phone"]["returnCode"] = {}
    return False


def _password_update(user: Mapping[str, Any], update: dict[str, Any], notes: list[str]) -> None:
    """The password part of ``UpdateHumanUser``, or the note that says why none is sent."""
    hashed = (user.get("hashedPassword") or {}).get("value")
    change_required = bool(user.get("passwordChangeRequired"))
    if len(str(hashed or user.get("password") or "")) > MAX_PASSWORD:
        notes.append("password-too-long-not-applied")
    elif hashed:
        update["password"] = {"hashedPassword": {"hash": hashed, "changeRequired": change_required}}
    elif user.get("password"):
        update["password"] = {"password": {"password": user["password"], "changeRequired": True}}
    else:
        notes.append("password-removed-not-applied")


def _link_calls(old: StateRecord, user: Mapping[str, Any]) -> list[ChangeCall]:
    """Remove the IdP links gone at the source, add the new ones."""
    calls: list[ChangeCall] = []
    before = {(a, b) for a, b in old.get(LINKS) or []}
    links = {
        (str(i.get("configId", "")), str(i.get("externalUserId", ""))): str(i.get("displayName", ""))
        for i in user.get("idps") or []
    }
    for config, external in sorted(before - set(links)):
        calls.append({"call": Call.REMOVE_IDP_LINK, "idpId": config, "linkedUserId": external})
    for (config, external), name in sorted(links.items()):
        if (config, external) not in before:
            link = {"idpId": config, "userId": external, "userName": name or external}
            calls.append({"call": Call.ADD_IDP_LINK, "body": {"idpLink": link}})
    return calls


def _metadata_calls(
    old: StateRecord, new: StateRecord, metadata: Sequence[Mapping[str, Any]]
) -> list[ChangeCall]:
    """Delete the keys gone at the source, set only the keys whose value changed."""
    calls: list[ChangeCall] = []
    before_meta: Mapping[str, str] = old.get(METADATA) or {}
    after_meta: Mapping[str, str] = new.get(METADATA) or {}
    gone = sorted(set(before_meta) - set(after_meta))
    if gone:
        calls.append({"call": Call.DELETE_USER_METADATA, "keys": gone})
    changed = [
        {"key": str(m["key"]), "value": str(m.get("value", ""))}
        for m in sorted(metadata, key=lambda m: str(m.get("key", "")))
        if before_meta.get(str(m["key"])) != after_meta.get(str(m["key"]))
    ]
    if changed:
        calls.append({"call": Call.SET_USER_METADATA, "body": {"metadata": changed}})
    return calls


def _grant_calls(old: StateRecord, new: StateRecord) -> list[ChangeCall]:
    """Remove the grants of projects gone at the source, set the changed ones."""
    calls: list[ChangeCall] = []
    before_grants = {project: list(keys) for project, keys in old.get(GRANTS) or []}
    after_grants = {project: list(keys) for project, keys in new.get(GRANTS) or []}
    for project in sorted(set(before_grants) - set(after_grants)):
        calls.append({"call": Call.REMOVE_USER_GRANT, "projectId": project})
    for project, keys in sorted(after_grants.items()):
        if before_grants.get(project) != keys:
            calls.append({"call": Call.SET_USER_GRANT, "projectId": project, "roleKeys": keys})
    return calls


def plan_changes(
    old: StateRecord | None,
    new: StateRecord,
    entry: Mapping[str, Any],
    metadata: Sequence[Mapping[str, Any]],
) -> tuple[list[str], list[ChangeCall], list[str]]:
    """``(changed groups, calls, notes)`` that bring the target from ``old`` to ``new``.

    Notes name what cannot be carried to an existing user (``otp-not-applied``: the user service
    has no call that sets a TOTP secret; ``password-removed-not-applied``: no call removes one;
    ``password-too-long-not-applied``: the call takes a hash or password of at most 200
    characters, where the import takes any, docs/sync.md#schema-check).
    E-mail and phone changes never make ZITADEL send a code: a verified address says
    ``isVerified``, an unverified one asks for ``returnCode`` (docs/sync.md#no-mail).
    """
    user = entry.get("user") or {}
    previous: StateRecord = old or {}
    groups = changed_groups(previous, new) if old is not None else []
    calls: list[ChangeCall] = []
    notes: list[str] = []
    update: dict[str, Any] = {}
    if "username" in groups:
        update["username"] = user.get("userName")
    if "profile" in groups:
        update["profile"] = _profile_body(user.get("profile") or {})
    remove_phone = _contact_updates(groups, user, update)
    if "password" in groups:
        _password_update(user, update, notes)
    if update:
        calls.append({"call": Call.UPDATE_HUMAN_USER, "body": update})
    if remove_phone:
        calls.append({"call": Call.REMOVE_PHONE})
    if "idps" in groups:
        calls += _link_calls(previous, user)
    if "metadata" in groups:
        calls += _metadata_calls(previous, new, metadata)
    if "otp" in groups and old is not None:
        notes.append("otp-not-applied")
    if "grants" in groups:
        calls += _grant_calls(previous, new)
    return groups, calls, notes


def block_calls(old_blocked: str, new_blocked: bool, initial: bool = False) -> list[ChangeCall]:
    """Deactivate a user blocked at the source (lock an ``initial`` one: ZITADEL refuses to
    deactivate it); reactivate (or unlock) one unblocked again."""
    if new_blocked and old_blocked == ACTIVE:
        return [{"call": Call.LOCK_USER if initial else Call.DEACTIVATE_USER}]
    if not new_blocked and old_blocked == INACTIVE:
        return [{"call": Call.REACTIVATE_USER}]
    if not new_blocked and old_blocked == LOCKED:
        return [{"call": Call.UNLOCK_USER}]
    return []


def same_as_state(old: StateRecord, quick: str, blocked: bool) -> bool:
    """The fast path: the mapped bytes and the blocked state are what the target holds (and the
    user was not deactivated for being gone), so nothing needs parsing or sending."""
    return (
        old.get(QUICK) == quick
        and old.get(BLOCKED, ACTIVE) == (INACTIVE if blocked else ACTIVE)
        and GONE not in old
    )


# The group whose old digest a note keeps (it was not carried to the target).
_KEPT_BY_NOTE = {
    "otp-not-applied": "otp",
    "password-removed-not-applied": "password",
    "password-too-long-not-applied": "password",
}


def compare_user(
    old: StateRecord | None,
    entry: Mapping[str, Any],
    metadata: Sequence[Mapping[str, Any]],
    *,
    blocked: bool,
    quick: str,
    grants: Grants = (),
) -> tuple[ChangeKind, StateRecord, list[str], list[ChangeCall], list[str]]:
    """Sort one user read today against its state record.

    Returns ``(kind, state record, changed groups, calls, notes)`` where kind is ``new``,
    ``unchanged`` or ``changed`` (a change of the blocked flag is a change). What cannot be
    carried to the target (an OTP secret, a removed password) keeps its old digest in the record,
    so every run names it again rather than pretending the target holds it.
    """
    record = state_record(entry, metadata, blocked=blocked, quick=quick, grants=grants)
    if old is None:
        return ChangeKind.NEW, record, [], [], []
    if same_as_state(old, quick, blocked):
        return ChangeKind.UNCHANGED, record, [], [], []
    groups, calls, notes = plan_changes(old, record, entry, metadata)
    for note in notes:
        group = _KEPT_BY_NOTE[note]
        record[FIELDS][group] = (old.get(FIELDS) or {}).get(group)
        record[QUICK] = ""  # not the target's bytes: compare in full next time too
    block = block_calls(str(old.get(BLOCKED, ACTIVE)), blocked, INITIAL in old)
    if not block:
        # Still blocked (deactivated or locked) or still active: the target's state stays.
        record[BLOCKED] = old.get(BLOCKED, ACTIVE)
    elif block[0]["call"] == Call.LOCK_USER:
        record[BLOCKED] = LOCKED
    calls += block
    if not calls and not notes:
        return ChangeKind.UNCHANGED, record, [], [], []
    return ChangeKind.CHANGED, record, groups, calls, notes


# What a confirmed blocking call leaves the user as in the target.
_BLOCKED_BY_CALL = (
    (Call.DEACTIVATE_USER, INACTIVE),
    (Call.LOCK_USER, LOCKED),
    (Call.REACTIVATE_USER, ACTIVE),
    (Call.UNLOCK_USER, ACTIVE),
)


def _confirmed_groups(confirmed: Sequence[str], planned: Sequence[str]) -> set[str]:
    """The groups all of whose planned calls were confirmed."""
    done = collections.Counter(confirmed)
    wanted = collections.Counter(planned or confirmed)
    return {
        group
        for group in {g for call in confirmed for g in CALL_GROUPS.get(call, ())}
        if all(done[call] >= wanted[call] for call in wanted if group in CALL_GROUPS.get(call, ()))
    }


def merge_confirmed(
    old: StateRecord | None,
    new: StateRecord,
    confirmed: Sequence[str],
    complete: bool,
    planned: Sequence[str] = (),
) -> StateRecord | None:
    """The state record after some of a user's calls were confirmed.

    All confirmed (``complete``) → ``new``. Otherwise a group takes its new digest only when every
    planned call of that group (``planned``: the change's call names) was confirmed (a link
    removed but its replacement not added is not the new links), and the rest keeps the old ones,
    so the next run sends exactly what did not arrive. ``None`` means: drop the user from the
    state (a confirmed ``DeleteUser``).
    """
    if Call.DELETE_USER in confirmed:
        return None
    if old is None or complete:
        merged = new.copy()
        if Call.LOCK_USER in confirmed:  # an initial user was locked instead of deactivated
            merged[BLOCKED] = LOCKED
        return merged
    merged = old.copy()
    if Call.REACTIVATE_USER in confirmed or Call.UNLOCK_USER in confirmed:
        merged.pop(GONE, None)
    groups = _confirmed_groups(confirmed, planned)
    fingerprints = dict(old.get(FIELDS) or {})
    for group in groups:
        fingerprints[group] = (new.get(FIELDS) or {}).get(group)
    merged[FIELDS] = fingerprints
    if "username" in groups:
        merged[NAME] = new.get(NAME)
    if "idps" in groups:
        merged[LINKS] = new.get(LINKS) or []
    if "metadata" in groups:
        merged[METADATA] = new.get(METADATA) or {}
    if "grants" in groups:
        merged[GRANTS] = new.get(GRANTS) or []
    if {"email", "password", "idps"} & groups:  # what makes a user initial (state_record)
        merged.pop(INITIAL, None)
        merged.update({INITIAL: new[INITIAL]} if INITIAL in new else {})
    for call, blocked in _BLOCKED_BY_CALL:
        if call in confirmed:
            merged[BLOCKED] = blocked
    if GONE in new:
        merged[GONE] = new[GONE]
    # The quick digest is only true when every group is.
    merged[QUICK] = new.get(QUICK) if merged[FIELDS] == new.get(FIELDS) else ""
    return merged
