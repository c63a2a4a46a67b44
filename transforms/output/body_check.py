"""Validate import bodies written by other tools or by hand, with the migrate pipelines' rules.

``zitadel-beam push`` sends bodies it did not write: zitadel-tools' (``data_orgs`` in snake_case,
``hashedPassword.algorithm``, users without ``userId``), hand-edited ones, exports converted
elsewhere. One invalid user makes the server reject the whole request (docs/zitadel-import-api.md#validation), so every
human user is checked with :func:`transforms.mapping.validate.validate_user` (same rules, same reason
codes as ``migrate``) before the body is sent; invalid users are taken out and reported, never sent.

The two ways in have their own limits (``LIMITS``): the user service v2 refuses a password hash
over 200 characters (``HashedPassword.hash``, which the admin import takes) and an IdP link
without a user name (which ``user_v2.add_human_request`` fills with the external id, as the sync
does); ``target=USER_V2_TARGET`` applies them, and ``v2_validation`` adds the target's hash limits
(a hash whose parameters the target refuses is refused by the import at creation, but accepted by
some versions of the user service and refused only at sign-in).

Each human user is rewritten in the form the migrate pipelines write: lowerCamel field names
(protojson accepts both, but the rules are written for one), no ``hashedPassword.algorithm``
(the server reads the algorithm from the hash string; newer servers do not know the field), and
the same field fixes as ``migrate`` (a phone without ``+`` or a too-long language tag dropped).

Example::

    >>> body = {"data_orgs": {"orgs": [{"orgId": "1", "humanUsers": [{"user": {"user_name": "a"}}]}]},
    ...         "timeout": "10m"}
    >>> checked = check_body(body)
    >>> [f["reason"] for f in checked.rejected]
    ['invalid-first-name']
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from transforms.common.reasons import Reason
from transforms.hashing.policy import HashPolicy
from transforms.mapping.validate import ValidationOptions, validate_user

__all__ = ["CheckedBody", "check_body", "camel_keys", "PUSH_VALIDATION", "LIMITS", "v2_validation"]
__all__ += ["IMPORT_TARGET", "USER_V2_TARGET"]

# Push cannot know the source, so every hash family the server verifies is accepted; the bcrypt
# cost range is the instance's (flags of push), by default anything bcrypt itself allows.
PUSH_VALIDATION = ValidationOptions(4, 31, ("bcrypt", "argon2", "pbkdf2", "other"))

IMPORT_TARGET, USER_V2_TARGET = "admin-import", "user-v2"
# What each way in takes beyond the shared rules (transforms/mapping/validate.py): the longest
# password hash (None: no limit). The user service's from ZITADEL's published schema
# (zitadel.user.v2.HashedPassword.hash, max_len 200); the import's ImportHumanUserRequest has none.
LIMITS: dict[str, dict[str, int | None]] = {
    IMPORT_TARGET: {"hash": None},
    USER_V2_TARGET: {"hash": 200},
}

_DATA_KEYS = ("dataOrgs", "data_orgs", "dataOrgsv1", "data_orgsv1")
_USER_KEYS = ("humanUsers", "human_users")
_META_KEYS = ("userMetadata", "user_metadata")
_SNAKE = re.compile(r"_([a-z0-9])")


@dataclasses.dataclass
class CheckedBody:
    """``body`` with invalid users removed (and fixed users rewritten); ``changed`` tells whether
    it differs from the input (then it must be re-encoded instead of sent byte for byte)."""

    body: dict
    rejected: list[dict]
    notes: dict[str, int]
    changed: bool


def camel_keys(value: object) -> Any:
    """``user_name`` → ``userName`` at every level (protojson's JSON names)."""
    if isinstance(value, dict):
        return {_SNAKE.sub(lambda m: m.group(1).upper(), k): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel_keys(v) for v in value]
    return value


def _first_key(mapping: dict, keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if k in mapping), None)


def _normalise_user(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    entry = camel_keys(entry)
    user = entry.get("user")
    if isinstance(user, dict) and isinstance(user.get("hashedPassword"), dict):
        user["hashedPassword"] = {k: v for k, v in user["hashedPassword"].items() if k != "algorithm"}
    return entry


def v2_validation(policy: HashPolicy | None) -> ValidationOptions:
    """The push's rules plus the target's hash verifiers and limits, when known."""
    return PUSH_VALIDATION if policy is None else dataclasses.replace(PUSH_VALIDATION, hash_policy=policy)


def _target_problem(entry: dict, target: str) -> tuple[str, str] | None:
    """What ``target`` refuses of a user the shared rules passed."""
    longest = LIMITS[target]["hash"]
    hashed = ((entry.get("user") or {}).get("hashedPassword") or {}).get("value")
    if longest is not None and isinstance(hashed, str) and len(hashed) > longest:
        return (
            Reason.HASH_TOO_LONG_FOR_USER_V2,
            f"the password hash has {len(hashed)} characters; the user service v2 takes at most {longest} "
            "(HashedPassword.hash): push this user with --api=admin-import, which takes it",
        )
    return None


def check_body(
    body: dict, options: ValidationOptions = PUSH_VALIDATION, target: str = IMPORT_TARGET
) -> CheckedBody:
    """Validate every human user of an ImportDataRequest (``dataOrgs``/``data_orgs``/v1 forms).

    Rejected users go to ``rejected`` as ``{"userId", "orgId", "userName", "reason", "type",
    "message"}`` (no hashes); their ``userMetadata`` items are removed with them.
    """
    data_key = _first_key(body, _DATA_KEYS)
    data = body.get(data_key) if data_key else None
    if not isinstance(data, dict) or not isinstance(data.get("orgs"), list):
        return CheckedBody(body, [], {}, False)
    rejected: list[dict] = []
    notes: dict[str, int] = {}
    orgs = []
    changed = False
    for org in data["orgs"]:
        user_key = _first_key(org, _USER_KEYS) if isinstance(org, dict) else None
        if user_key is None or not isinstance(org.get(user_key), list):
            orgs.append(org)
            continue
        org_id = str(org.get("orgId", org.get("org_id", "")))
        kept: list[Any] = []
        dropped_ids: set[str] = set()
        for original in org[user_key]:
            entry = _normalise_user(original)
            result_reason: str | None
            if not isinstance(entry, dict) or not isinstance(entry.get("user"), dict):
                result_reason, detail = "not-an-object", "humanUsers entry has no user object"
            else:
                result = validate_user(entry, options)
                result_reason, detail = result.reason, result.detail
                for note in result.notes:
                    notes[note] = notes.get(note, 0) + 1
                if result_reason is None:
                    result_reason, detail = _target_problem(entry, target) or (None, "")
            user = entry.get("user") if isinstance(entry, dict) else None
            user_id = str(entry.get("userId") or "") if isinstance(entry, dict) else ""
            if result_reason is not None:
                rejected.append(
                    {
                        "userId": user_id,
                        "orgId": org_id,
                        "userName": str((user or {}).get("userName") or "")[:200],
                        "reason": result_reason,
                        "type": "human_user",
                        "message": detail,
                    }
                )
                dropped_ids.add(user_id)
                changed = True
                continue
            changed = changed or entry != original
            kept.append(entry)
        new_org = {**org, user_key: kept}
        meta_key = _first_key(org, _META_KEYS)
        if meta_key and dropped_ids and isinstance(org.get(meta_key), list):
            new_org[meta_key] = [
                m
                for m in org[meta_key]
                if not (isinstance(m, dict) and str(m.get("id", "")) in dropped_ids - {""})
            ]
        for grant_key in ("userGrants", "user_grants"):  # a dropped user's grants go with it
            if dropped_ids and isinstance(org.get(grant_key), list):
                new_org[grant_key] = [
                    g
                    for g in org[grant_key]
                    if not (isinstance(g, dict) and str(g.get("userId", "")) in dropped_ids - {""})
                ]
        orgs.append(new_org)
    if not changed:
        return CheckedBody(body, [], notes, False)
    out = {k: v for k, v in body.items() if k != data_key}
    out[data_key] = {**data, "orgs": orgs}
    return CheckedBody(out, rejected, notes, True)
