"""What an answer of ``POST /admin/v1/import`` says about each user of the request that got it.

The import answers ``{success: {orgs: [{orgId, humanUserIds}]}, errors: [{type, id, message}]}``
(docs/zitadel-import-api.md). ``interpret`` folds it into a body's ``BodyResult``: created,
present (``Errors.User.AlreadyExisting``: a retry after a lost answer, or a re-run), or failed
with a reason (ids only, never hashes). ``check_present_owners`` moves a present user that exists
in another org to failed. Used by ``send_body.py``::

    counts = interpret(answer, part, result, client.tokens.secrets())
    counts.created, counts.present, counts.failed
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
from typing import Any, NamedTuple

from transforms.output.body_parts import body_user_ids, metadata_of, orgs_of
from transforms.push.grant_calls import ROLE_KINDS, grant_owners
from transforms.push.ledger import BodyResult
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import AdminClient

__all__ = ["Counts", "Json", "interpret", "check_present_owners", "fail_all", "IN_ANOTHER_ORG"]

_LOGGER = logging.getLogger(__name__)

ALREADY_EXISTING_USER = "Errors.User.AlreadyExisting"
ALREADY_EXISTING_ORG = "Errors.Org.AlreadyExisting"
IN_ANOTHER_ORG = "in-another-org"
OWNER_LOOKUPS = 4  # org lookups of present users at once (hosted limit: 50 requests/s per IP)

# An import request or answer, as parsed JSON (the import API's own shapes: docs/zitadel-import-api.md).
Json = dict[str, Any]


class Counts(NamedTuple):
    """Users of one request, by outcome."""

    created: int
    present: int
    failed: int


class _Errors(NamedTuple):
    """The answer's errors, sorted: users reported present, and failures keyed by user."""

    present: set[str]
    failed: dict[str, dict]


def _reason_for(message: str) -> str:
    if "Errors.User.AlreadyExists" in message:
        return "duplicate-username"
    if "Errors.Org" in message:
        return "org-error"
    return "rejected"


def _entry(uid: str, org_id: str, reason: str, kind: str, message: str, ident: str | None = None) -> dict:
    """One failure record; the key order is the ledger's (``id`` only for a non-user resource)."""
    entry = {"userId": uid, "orgId": org_id, "reason": reason, "type": kind}
    if ident is not None:
        entry["id"] = ident
    entry["message"] = message
    return entry


def _other_org(uid: str, org_id: str, owner: str, how: str) -> dict:
    return _entry(uid, org_id, IN_ANOTHER_ORG, "human_user", f"{how} org {owner}, not in org {org_id}")


def _sort_errors(answer: Json, part: Json, result: BodyResult, secrets: tuple[str, ...]) -> _Errors:
    """Each error of the answer: present, an org present, ignored as present, or a failure."""
    org_of = {uid: org for org, uid in body_user_ids(part)}
    meta_owner = {
        f"{m.get('id')}_{m.get('key')}": str(m.get("id")) for org in orgs_of(part) for m in metadata_of(org)
    }
    grant_owner = grant_owners(part)  # user grants: docs/roles.md
    present: set[str] = set()
    failed: dict[str, dict] = {}
    for error in answer.get("errors") or []:
        kind, ident = str(error.get("type", "")), str(error.get("id", ""))
        message = api_errors.scrub(str(error.get("message", "")), secrets)
        if kind == "org" and ALREADY_EXISTING_ORG in message:
            if ident not in result.orgs_present:
                result.orgs_present.append(ident)
        elif kind == "human_user" and ALREADY_EXISTING_USER in message:
            present.add(ident)
        elif kind == "human_user":
            failed[ident] = _entry(ident, org_of.get(ident, ""), _reason_for(message), kind, message)
        elif kind == "user_metadata" and ident in meta_owner:
            uid = meta_owner[ident]
            failed.setdefault(
                uid, _entry(uid, org_of.get(uid, ""), "metadata-rejected", kind, message, ident)
            )
        elif kind in ROLE_KINDS and ("AlreadyExists" in message or "AlreadyExisting" in message):
            continue  # a project, role or grant a previous run created: present (docs/roles.md)
        elif kind == "user_grant" and ident in grant_owner:
            uid = grant_owner[ident]
            failed.setdefault(uid, _entry(uid, org_of.get(uid, ""), "grant-rejected", kind, message, ident))
        elif "AlreadyExisting" in message:
            continue  # another resource of an export document that a previous run created
        else:
            failed[f"{kind}:{ident}"] = _entry("", "", "rejected", kind, message, ident)
    return _Errors(present, failed)


def _created_in(answer: Json) -> dict[str, str]:
    """User id -> the org the answer says it was created in."""
    created_in: dict[str, str] = {}
    for org in (answer.get("success") or {}).get("orgs") or []:
        for u in org.get("humanUserIds") or []:
            created_in.setdefault(str(u), str(org.get("orgId", "")))
    return created_in


def interpret(
    answer: Json, part: Json, result: BodyResult, secrets: tuple[str, ...], after_lost_answer: bool = False
) -> Counts:
    """Fold one import answer into ``result``; returns the counts of this request's users."""
    expected = body_user_ids(part)
    created_in = _created_in(answer)
    # Users sent without userId get an id from the server: take the created ids nobody asked for.
    assigned = sorted(set(created_in) - {uid for _, uid in expected})
    errors = _sort_errors(answer, part, result, secrets)
    failed = errors.failed
    created = present = failures = 0
    for org_id, uid in expected:
        if not uid and assigned:
            uid = assigned.pop(0)
        if uid in failed:
            failures += 1
        elif uid in created_in and created_in[uid] not in (org_id, ""):
            failed[uid] = _other_org(uid, org_id, created_in[uid], "the answer lists it as created in")
            failures += 1
        elif uid in created_in:
            result.created.append(uid)
            created += 1
        elif uid in errors.present:
            result.present.append(uid)
            result.present_after_lost_answer += int(after_lost_answer)
            present += 1
        else:
            message = "the answer neither created nor reported this user"
            failed[uid] = _entry(uid, org_id, "no-result", "human_user", message)
            failures += 1
    # A user can be created and still fail (its metadata was rejected): it is then failed.
    for entry in failed.values():
        if entry["userId"] in result.created:
            result.created.remove(entry["userId"])
            created -= 1
        elif entry["userId"] in result.present:
            result.present.remove(entry["userId"])
            present -= 1
    result.failed.extend(failed.values())
    return Counts(created, present, len(failed))


def _owner_of(client: AdminClient, user_id: str) -> str | None:
    """The resource owner (org) of a user, from the first event of its aggregate; None if unknown."""
    events = client.search_events(aggregate_types=["user"], aggregate_id=user_id, limit=1, asc=True)
    owner = (events[0].get("aggregate") or {}).get("resourceOwner") if events else None
    return str(owner) if owner else None


def check_present_owners(client: AdminClient, result: BodyResult, part: Json, before: int) -> int:
    """Users this request reported AlreadyExisting must exist in the org the body names.

    ZITADEL answers AlreadyExisting for an id that exists in *any* org, so a user of another org
    would otherwise count as present (docs/zitadel-admin-api.md#present-users-and-their-org). One
    events search per such user (``aggregateId``, limit 1), a few at once; they are only the users
    a retry or a re-run sends again. Returns how many moved from present to failed.
    """
    org_of = {uid: org for org, uid in body_user_ids(part)}
    todo = [uid for uid in result.present[before:] if uid and org_of.get(uid)]
    if not todo:
        return 0

    def lookup(uid: str) -> str | None:
        try:
            return _owner_of(client, uid)
        except api_errors.ServerGone:
            raise
        except api_errors.AdminApiError as err:
            _LOGGER.warning("%s: cannot check the org of present user %s: %s", result.name, uid, err.message)
            return None

    with cf.ThreadPoolExecutor(min(OWNER_LOOKUPS, len(todo)), thread_name_prefix="owner") as pool:
        owners = list(pool.map(lookup, todo))
    moved = 0
    for uid, owner in zip(todo, owners, strict=True):
        if owner is not None and owner != org_of[uid]:
            result.present.remove(uid)
            result.failed.append(_other_org(uid, org_of[uid], owner, "it already exists in"))
            moved += 1
    return moved


def fail_all(part: Json, result: BodyResult, reason: str, message: str) -> int:
    """Every user of ``part`` failed with ``reason``; returns how many."""
    users = body_user_ids(part)
    for org_id, uid in users:
        result.failed.append(_entry(uid, org_id, reason, "human_user", message))
    return len(users)
