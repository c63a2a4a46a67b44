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

No password hash or secret is stored: digests only (BLAKE2b, 64 bits per group).

A **change record** (one NDJSON line of ``<stem>.changes-*.ndjson``) is one user's calls::

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
from typing import Any

import orjson

__all__ = [
    "GROUPS",
    "UPDATE_GROUPS",
    "ACTIVE",
    "INACTIVE",
    "LOCKED",
    "quick_digest",
    "state_record",
    "changed_groups",
    "plan_changes",
    "call_path",
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

# Which state fields a confirmed call makes true (merge_confirmed).
CALL_GROUPS: dict[str, tuple[str, ...]] = {
    "UpdateHumanUser": UPDATE_GROUPS,
    "RemovePhone": ("phone",),
    "AddIDPLink": ("idps",),
    "RemoveIDPLink": ("idps",),
    "SetUserMetadata": ("metadata",),
    "DeleteUserMetadata": ("metadata",),
    "SetUserGrant": ("grants",),
    "RemoveUserGrant": ("grants",),
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


# ``((project id, (sorted role keys)), ...)`` sorted by project: a user's grants (transforms/mapping/roles.py).
Grants = tuple[tuple[str, tuple[str, ...]], ...]


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
) -> dict[str, Any]:
    """The state record of a mapped user entry (its ``humanUsers`` item), its metadata items and
    its grants (``a``: project and role keys, so a project gone at the source can be removed)."""
    values = _group_values(entry, metadata, grants)
    user = entry.get("user") or {}
    record: dict[str, Any] = {
        "id": str(entry.get("userId") or ""),
        "n": user.get("userName"),
        "q": quick,
        "f": {group: _digest(values[group]) for group in GROUPS},
        "b": INACTIVE if blocked else ACTIVE,
    }
    if values["idps"]:
        record["l"] = [[config, external] for config, external, _ in values["idps"]]
    if values["metadata"]:
        record["m"] = {key: _digest(value) for key, value in values["metadata"]}
    if values["grants"]:
        record["a"] = values["grants"]
    return record


def changed_groups(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The field groups whose digests differ (all of them against a record without digests)."""
    before, after = old.get("f") or {}, new.get("f") or {}
    # A record written before grants were compared has no "grants" digest: it held none.
    return [group for group in GROUPS if before.get(group, _ABSENT.get(group)) != after.get(group)]


def _profile_body(profile: Mapping[str, Any]) -> dict[str, Any]:
    """The v2 profile (``givenName``/``familyName``, docs/sync.md): optional fields removed at the
    source are sent empty, so the target does not keep a value the source dropped."""
    given = str(profile.get("firstName") or "")
    family = str(profile.get("lastName") or "")
    body: dict[str, Any] = {"givenName": given, "familyName": family}
    body["nickName"] = str(profile.get("nickName") or "")
    body["displayName"] = str(profile.get("displayName") or f"{given} {family}".strip())
    body["preferredLanguage"] = str(profile.get("preferredLanguage") or "")
    return body


def plan_changes(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    entry: Mapping[str, Any],
    metadata: Sequence[Mapping[str, Any]],
) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """``(changed groups, calls, notes)`` that bring the target from ``old`` to ``new``.

    Notes name what cannot be carried to an existing user (``otp-not-applied``: the user service
    has no call that sets a TOTP secret; ``password-removed-not-applied``: no call removes one;
    ``password-too-long-not-applied``: the call takes a hash or password of at most 200
    characters, where the import takes any, docs/sync.md#schema-check).
    E-mail and phone changes never make ZITADEL send a code: a verified address says
    ``isVerified``, an unverified one asks for ``returnCode`` (docs/sync.md#no-mail).
    """
    user = entry.get("user") or {}
    groups = changed_groups(old or {}, new) if old is not None else []
    calls: list[dict[str, Any]] = []
    notes: list[str] = []
    update: dict[str, Any] = {}
    if "username" in groups:
        update["username"] = user.get("userName")
    if "profile" in groups:
        update["profile"] = _profile_body(user.get("profile") or {})
    if "email" in groups:
        email = user.get("email") or {}
        update["email"] = {"email": email.get("email")}
        if email.get("isEmailVerified"):
            update["email"]["isVerified"] = True
        else:
            update["email"]["returnCode"] = {}
    remove_phone = False
    if "phone" in groups:
        phone = user.get("phone") or {}
        if phone.get("phone"):
            update["phone"] = {"phone": phone["phone"]}
            if phone.get("isPhoneVerified"):
                update["phone"]["isVerified"] = True
            else:
                update["phone"]["returnCode"] = {}
        else:
            remove_phone = True
    if "password" in groups:
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
    if update:
        calls.append({"call": "UpdateHumanUser", "body": update})
    if remove_phone:
        calls.append({"call": "RemovePhone"})
    if "idps" in groups:
        before = {(a, b) for a, b in (old or {}).get("l") or []}
        links = {
            (str(i.get("configId", "")), str(i.get("externalUserId", ""))): str(i.get("displayName", ""))
            for i in user.get("idps") or []
        }
        for config, external in sorted(before - set(links)):
            calls.append({"call": "RemoveIDPLink", "idpId": config, "linkedUserId": external})
        for (config, external), name in sorted(links.items()):
            if (config, external) not in before:
                link = {"idpId": config, "userId": external, "userName": name or external}
                calls.append({"call": "AddIDPLink", "body": {"idpLink": link}})
    if "metadata" in groups:
        before_meta: Mapping[str, str] = (old or {}).get("m") or {}
        after_meta: Mapping[str, str] = new.get("m") or {}
        gone = sorted(set(before_meta) - set(after_meta))
        if gone:
            calls.append({"call": "DeleteUserMetadata", "keys": gone})
        changed = [
            {"key": str(m["key"]), "value": str(m.get("value", ""))}
            for m in sorted(metadata, key=lambda m: str(m.get("key", "")))
            if before_meta.get(str(m["key"])) != after_meta.get(str(m["key"]))
        ]
        if changed:
            calls.append({"call": "SetUserMetadata", "body": {"metadata": changed}})
    if "otp" in groups and old is not None:
        notes.append("otp-not-applied")
    if "grants" in groups:
        before_grants = {project: list(keys) for project, keys in (old or {}).get("a") or []}
        after_grants = {project: list(keys) for project, keys in new.get("a") or []}
        for project in sorted(set(before_grants) - set(after_grants)):
            calls.append({"call": "RemoveUserGrant", "projectId": project})
        for project, keys in sorted(after_grants.items()):
            if before_grants.get(project) != keys:
                calls.append({"call": "SetUserGrant", "projectId": project, "roleKeys": keys})
    return groups, calls, notes


def block_calls(old_blocked: str, new_blocked: bool) -> list[dict[str, Any]]:
    """Deactivate a user blocked at the source; reactivate (or unlock) one unblocked again."""
    if new_blocked and old_blocked == ACTIVE:
        return [{"call": "DeactivateUser"}]
    if not new_blocked and old_blocked == INACTIVE:
        return [{"call": "ReactivateUser"}]
    if not new_blocked and old_blocked == LOCKED:
        return [{"call": "UnlockUser"}]
    return []


def same_as_state(old: Mapping[str, Any], quick: str, blocked: bool) -> bool:
    """The fast path: the mapped bytes and the blocked state are what the target holds (and the
    user was not deactivated for being gone), so nothing needs parsing or sending."""
    return (
        old.get("q") == quick and old.get("b", ACTIVE) == (INACTIVE if blocked else ACTIVE) and "g" not in old
    )


def compare_user(
    old: Mapping[str, Any] | None,
    entry: Mapping[str, Any],
    metadata: Sequence[Mapping[str, Any]],
    *,
    blocked: bool,
    quick: str,
    grants: Grants = (),
) -> tuple[str, dict[str, Any], list[str], list[dict[str, Any]], list[str]]:
    """Sort one user read today against its state record.

    Returns ``(kind, state record, changed groups, calls, notes)`` where kind is ``new``,
    ``unchanged`` or ``changed`` (a change of the blocked flag is a change). What cannot be
    carried to the target (an OTP secret, a removed password) keeps its old digest in the record,
    so every run names it again rather than pretending the target holds it.
    """
    record = state_record(entry, metadata, blocked=blocked, quick=quick, grants=grants)
    if old is None:
        return "new", record, [], [], []
    if same_as_state(old, quick, blocked):
        return "unchanged", record, [], [], []
    groups, calls, notes = plan_changes(old, record, entry, metadata)
    kept = {
        "otp-not-applied": "otp",
        "password-removed-not-applied": "password",
        "password-too-long-not-applied": "password",
    }
    for note in notes:
        group = kept[note]
        record["f"][group] = (old.get("f") or {}).get(group)
        record["q"] = ""  # not the target's bytes: compare in full next time too
    block = block_calls(str(old.get("b", ACTIVE)), blocked)
    if not block:
        # Still blocked (deactivated or locked) or still active: the target's state stays.
        record["b"] = old.get("b", ACTIVE)
    calls += block
    if not calls and not notes:
        return "unchanged", record, [], [], []
    return "changed", record, groups, calls, notes


def call_path(user_id: str, call: Mapping[str, Any]) -> tuple[str, str, bytes | None]:
    """``(method, path, body)`` of a change call in ZITADEL's user service v2 REST mapping."""
    from urllib.parse import quote, urlencode

    uid = quote(user_id, safe="")
    name = call["call"]
    if name == "UpdateHumanUser":
        return "PUT", f"/v2/users/human/{uid}", orjson.dumps(call["body"])
    if name in ("DeactivateUser", "ReactivateUser", "LockUser", "UnlockUser"):
        verb = name[: -len("User")].lower()
        return "POST", f"/v2/users/{uid}/{verb}", b"{}"
    if name == "DeleteUser":
        return "DELETE", f"/v2/users/{uid}", None
    if name == "RemovePhone":
        return "DELETE", f"/v2/users/{uid}/phone", None
    if name == "AddIDPLink":
        return "POST", f"/v2/users/{uid}/links", orjson.dumps(call["body"])
    if name == "RemoveIDPLink":
        idp, linked = quote(call["idpId"], safe=""), quote(call["linkedUserId"], safe="")
        return "DELETE", f"/v2/users/{uid}/links/{idp}/{linked}", None
    if name == "SetUserMetadata":
        return "POST", f"/v2/users/{uid}/metadata", orjson.dumps(call["body"])
    if name == "DeleteUserMetadata":
        query = urlencode([("keys", key) for key in call["keys"]])
        return "DELETE", f"/v2/users/{uid}/metadata?{query}", None
    raise ValueError(f"unknown change call {name!r}")


def merge_confirmed(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    confirmed: Sequence[str],
    complete: bool,
    planned: Sequence[str] = (),
) -> dict[str, Any] | None:
    """The state record after some of a user's calls were confirmed.

    All confirmed (``complete``) → ``new``. Otherwise a group takes its new digest only when every
    planned call of that group (``planned``: the change's call names) was confirmed (a link
    removed but its replacement not added is not the new links), and the rest keeps the old ones,
    so the next run sends exactly what did not arrive. ``None`` means: drop the user from the
    state (a confirmed ``DeleteUser``).
    """
    if "DeleteUser" in confirmed:
        return None
    if old is None or complete:
        merged = dict(new)
        if "LockUser" in confirmed:  # an initial user was locked instead of deactivated
            merged["b"] = LOCKED
        return merged
    merged = dict(old)
    if "ReactivateUser" in confirmed or "UnlockUser" in confirmed:
        merged.pop("g", None)
    done = collections.Counter(confirmed)
    wanted = collections.Counter(planned or confirmed)
    groups = {
        group
        for group in {g for call in confirmed for g in CALL_GROUPS.get(call, ())}
        if all(done[call] >= wanted[call] for call in wanted if group in CALL_GROUPS.get(call, ()))
    }
    fingerprints = dict(old.get("f") or {})
    for group in groups:
        fingerprints[group] = (new.get("f") or {}).get(group)
    merged["f"] = fingerprints
    if "username" in groups:
        merged["n"] = new.get("n")
    if "idps" in groups:
        merged["l"] = new.get("l") or []
    if "metadata" in groups:
        merged["m"] = new.get("m") or {}
    if "grants" in groups:
        merged["a"] = new.get("a") or []
    for call, blocked in (
        ("DeactivateUser", INACTIVE),
        ("LockUser", LOCKED),
        ("ReactivateUser", ACTIVE),
        ("UnlockUser", ACTIVE),
    ):
        if call in confirmed:
            merged["b"] = blocked
    if "g" in new:
        merged["g"] = new["g"]
    # The quick digest is only true when every group is.
    merged["q"] = new.get("q") if merged["f"] == new.get("f") else ""
    return merged
