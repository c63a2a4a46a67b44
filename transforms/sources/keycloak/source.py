"""Keycloak as the tool below the command line sees it: its record kinds, its files, its counters.

The command's half is ``command.py`` (``DESCRIPTION``, which the registry finds). Example::

    KIND.records["keycloak-user"].blocked(b'{"id":"k1","enabled":false}')  # True (disabled)
    KIND.records["keycloak-user"].ids({"username": "ann"}, "acme")  # [keycloak_user_id("acme", "ann")]
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from transforms.common.reasons import Reason
from transforms.mapping.ids import keycloak_user_id
from transforms.sources.declaration import source_name
from transforms.sources.keycloak import accounting as kc
from transforms.sources.source_parts import UNREADABLE_FILE, FileShapes, Shape, SourceKind, UserRecordKind

__all__ = ["KIND"]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _disabled(record_json: bytes) -> bool:
    if b'"enabled":true' in record_json:  # the common case, without parsing
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("enabled") is not True


def _ids(record: dict, realm: str | None) -> list[str] | None:
    ids = []
    if _text(record.get("id")) is not None:
        ids.append(record["id"])
    name = _text(record.get("username"))
    if name is not None and realm:  # derived ids of users without id need the realm
        ids.append(keycloak_user_id(realm, name))
    return ids or None


def _identify(keys: Mapping[str, str]) -> tuple[str, str] | None:
    if keys.get("realm") == "string":
        return "keycloak-realm", 'a "realm" key'
    return None


KIND = SourceKind(
    name=source_name(__name__),  # the package's name
    records={
        kc.SOURCE: UserRecordKind(
            blocked=_disabled, ids=_ids, reason=Reason.DISABLED, flag="--include-disabled"
        ),
        kc.FILE_SOURCE: UNREADABLE_FILE,
    },
    shapes=FileShapes(
        shapes={"keycloak-realm": Shape(what="a Keycloak realm export")},
        readers={"keycloak-realm": ("keycloak-realm",)},
        identify=_identify,
        rank=20,
    ),
    second_factors={kc.OTP_NOT_CARRIED: "keycloak.otp."},
    required_actions={kc.REQUIRED_ACTIONS_NOT_CARRIED: "keycloak."},
)
