"""One body's ``DataOrg`` from its segment files: the last step of ``migrate zitadel``.

The planner (``plan.py``) wrote every item as an NDJSON line ``[field, item]`` (a singular field
as ``["=name", value]``) into segment files grouped by body; rendering a body only reads its
segments and groups them by field, in proto field order (``command.py`` does it
in parallel with Beam, one element per body).

Example::

    org = render_data_org("1", b'{"name":"A"}', [read_spill(p) for p in segment_paths])
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["FIELD_ORDER", "render_data_org"]

# v1 DataOrg fields in proto field order (zitadel/v1.proto): bodies are written in this order.
FIELD_ORDER = (
    "orgId",
    "org",
    "iamPolicy",
    "labelPolicy",
    "lockoutPolicy",
    "loginPolicy",
    "passwordComplexityPolicy",
    "privacyPolicy",
    "projects",
    "projectRoles",
    "apiApps",
    "oidcApps",
    "humanUsers",
    "machineUsers",
    "triggerActions",
    "actions",
    "projectGrants",
    "userGrants",
    "orgMembers",
    "projectMembers",
    "projectGrantMembers",
    "userMetadata",
    "loginTexts",
    "initMessages",
    "passwordResetMessages",
    "verifyEmailMessages",
    "verifyPhoneMessages",
    "domainClaimedMessages",
    "passwordlessRegistrationMessages",
    "oidcIdps",
    "jwtIdps",
    "secondFactors",
    "multiFactors",
    "idps",
    "userLinks",
    "domains",
    "appKeys",
    "machineKeys",
    "domainPolicy",
)
_FIELD_RANK = {name: i for i, name in enumerate(FIELD_ORDER)}


def render_data_org(org_id: str, org_json: bytes, segments: list[bytes]) -> dict:
    """One DataOrg from a body's segment contents: fields in proto order, items in document order.

    >>> render_data_org("1", b'{"name":"A"}', [b'["humanUsers",{"userId":"u"}]\\n["=loginPolicy",{}]\\n'])
    {'orgId': '1', 'org': {'name': 'A'}, 'loginPolicy': {}, 'humanUsers': [{'userId': 'u'}]}
    """
    merged: dict[str, Any] = {}
    for blob in segments:
        for raw in blob.splitlines():
            if not raw:
                continue
            field, value = orjson.loads(raw)
            if field.startswith("="):
                merged[field[1:]] = value
            else:
                merged.setdefault(field, []).append(value)
    org: dict[str, Any] = {"orgId": org_id}
    if org_json:
        org["org"] = orjson.loads(org_json)
    for name in sorted(merged, key=lambda n: (_FIELD_RANK.get(n, len(FIELD_ORDER)), n)):
        org[name] = merged[name]
    return org
