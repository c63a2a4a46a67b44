"""``zitadel-beam migrate cognito``: AWS Cognito user pool exports → ZITADEL import bodies.

Example::

    aws cognito-idp list-users --user-pool-id us-east-1_ExAmPlE12 > users.json
    zitadel-beam migrate cognito --org=123456789 --users=users.json --output=out/importBody.json

``--users`` takes the answer of ``aws cognito-idp list-users`` (one object, or the pages
``--max-items``/``--starting-token`` write, as a glob) or the CSV under ``get-csv-header``'s
header (``\\,`` escapes a comma). Cognito exports no password and no hash: every user arrives
without a password (the companion can check it against Cognito, docs/companion.md#old-systems).
The description below is what the registry reads, with its record kind and file shapes;
``read.py`` holds the reader and the mapping, the package's ``__init__`` the names both use.
docs/cognito.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import orjson

from transforms.common.accounting import link_lines, link_outcomes, users_lines
from transforms.common.counters import by_suffix
from transforms.common.errors import ConfigError
from transforms.sources import cognito
from transforms.sources.cognito import BLOCKED_STATUS, COUNTERS, CSV, JSON, CognitoFile
from transforms.sources.declaration import (
    FlagParser,
    Flags,
    IdpLinks,
    Plan,
    SourceDescription,
    SourceSettings,
    SummaryLine,
    file_flag,
)
from transforms.sources.source_parts import FileShapes, Shape, SourceKind, TextShape, user_records

__all__ = ["DESCRIPTION", "KIND", "cognito_csv"]

_TAIL_BYTES = 4096
# A top-level key of a list-users answer, never inside a string (there its quotes are escaped).
_TOKEN = re.compile(rb'"(PaginationToken|NextToken)"\s*:')


def _blocked(record_json: bytes) -> bool:
    record = orjson.loads(record_json)
    return isinstance(record, dict) and (
        record.get("Enabled") is False or str(record.get("UserStatus", "")).upper() in BLOCKED_STATUS
    )


def _ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = record.get("Username", record.get("cognito:username"))
    return [user_id] if isinstance(user_id, str) and user_id.strip() else None


def _identify(keys: Mapping[str, str]) -> tuple[str, str] | None:
    if keys.get("Users") == "start_array":
        return "cognito-users", 'a top-level "Users" array (aws cognito-idp list-users)'
    if keys.get("CSVHeader") == "start_array":
        return "cognito-csv-header", 'a top-level "CSVHeader"'
    return None


def cognito_csv(head: bytes) -> bool:
    """Whether ``head`` starts with a header of get-csv-header's columns (``cognito:username``)."""
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace")
    return "cognito:username" in {cell.strip() for cell in first.split(",")}


KIND = SourceKind(
    name=COUNTERS.name,
    records=user_records(COUNTERS, blocked=_blocked, ids=_ids),
    shapes=FileShapes(
        shapes={
            "cognito-users": Shape(what="an AWS Cognito user export (list-users JSON or its CSV)"),
            "cognito-csv-header": Shape(
                what="the answer of aws cognito-idp get-csv-header (a header, no users)",
                takes="no command reads it: migrate cognito --users reads the CSV written under it",
            ),
        },
        readers={"cognito-users": ("cognito-users",)},
        identify=_identify,
        rank=40,
        text=(TextShape(what="an AWS Cognito user CSV", shape="cognito-users", matches=cognito_csv),),
    ),
)


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--users",
        reads="cognito-users",
        required=True,
        help="the answer of 'aws cognito-idp list-users' (JSON; the pages of --max-items as a glob), "
        "or a CSV under 'get-csv-header''s header: path or glob, local or gs://",
    )
    parser.add_argument(
        "--include-blocked",
        action="store_true",
        help="import users disabled at Cognito (Enabled: false; or ARCHIVED, COMPROMISED) (default: "
        "dead-letter them as blocked; with --state they are read so that ZITADEL deactivates them)",
    )
    parser.add_argument(
        "--user-name",
        choices=("auto", "username", "preferred_username", "email", "phone_number"),
        default="auto",
        help="what becomes the ZITADEL user name (default auto: preferred_username, else Username "
        "unless it is a generated UUID or a federated <provider>_<id>, else email, else phone_number; "
        "a chosen attribute a user lacks falls back to auto)",
    )


def _tail(file: CognitoFile, size: int) -> bytes:
    """The last bytes of a JSON file, where the CLI writes a page's token (a ``.gz`` streamed)."""
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    from transforms.sources.input_stream import open_input

    if CompressionTypes.detect_compression_type(file.path) == CompressionTypes.UNCOMPRESSED:
        with FileSystems.open(file.path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            handle.seek(max(0, size - _TAIL_BYTES))
            return handle.read()
    tail = b""
    with open_input(file.path) as stream:
        while piece := stream.read(1 << 20):
            tail = (tail + piece)[-_TAIL_BYTES:]
    return tail


def _plan_files(pattern: str) -> list[CognitoFile]:
    """Match ``--users`` and tell each file's form from its head; a file of another kind, a
    get-csv-header answer or an incomplete export (``--no-paginate``'s PaginationToken, pages
    without their last) fails here with one line."""
    from transforms.sources import json_units
    from transforms.sources.input_shape import identify, read_head, text_shape, wrong_shape

    try:
        matched = json_units.match_inputs([pattern], 0, "--users")
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    files, tokens = [], []
    for found in matched:
        head = read_head(found.path)[0].lstrip()
        where = f"--users {found.path}"
        if head.startswith((b"{", b"[")):
            if (identify(head) or ("",))[0] != "cognito-users":
                problem = wrong_shape(head, "cognito-users") or "not the answer of aws cognito-idp list-users"
                raise ConfigError(f'{where}: {problem} (list-users writes {{"Users": [...]}})')
            files.append(CognitoFile(found.index, found.path, JSON))
            tail = _tail(files[-1], found.size)
            token = _TOKEN.findall(tail[tail.rfind(b'"Users"') + 1 :])  # of the last answer only
            if b"PaginationToken" in token:
                raise ConfigError(
                    f"{where}: one page of 'list-users --no-paginate' (its PaginationToken says more "
                    "users follow); export without --no-paginate, or give every page"
                )
            tokens.append(bool(token))
        elif cognito_csv(head):
            files.append(CognitoFile(found.index, found.path, CSV))
        else:
            other = text_shape(head)
            raise ConfigError(
                f"{where}: {other or 'not a Cognito export'} (migrate cognito reads the JSON of "
                "aws cognito-idp list-users or a CSV whose header names cognito:username)"
            )
    if tokens and all(tokens):
        raise ConfigError(
            "--users: every page has a NextToken (--max-items): the last page, without one, is "
            "missing; give all the pages (--starting-token NextToken fetches the next)"
        )
    return files


def plan(flags: Flags, settings: SourceSettings) -> Plan:
    """Match the files and look at each; the reader's options."""
    from transforms.common.records import NUM_PARTITIONS
    from transforms.files.storage import check_gcs_reachable
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources.cognito.read import CognitoOptions

    check_gcs_reachable([flags.users])  # planning reads each file's head and tail: fail fast
    files = _plan_files(flags.users)
    options = CognitoOptions(
        include_blocked=settings.read_blocked,
        user_name=flags.user_name,
        metadata=settings.metadata,
        email_fallback=settings.email_fallback,
        idp_map=settings.idp_map,
        validation=ValidationOptions(hash_policy=settings.hash_policy),
    )

    def read(pipeline, tmp_dir: str):
        from transforms.sources.cognito.read import ReadCognitoUsers

        return pipeline | "ReadCognito" >> ReadCognitoUsers(files, options, NUM_PARTITIONS, tmp_dir)

    return Plan(
        read=read,
        input_paths=[flags.users],
        input_names={f.index: f.path for f in files},
        manifest={"cognito_files": [{"path": f.path, "format": f.format} for f in files]},
    )


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows of Cognito's own counters (the shared run adds the shared ones)."""
    lines: list[SummaryLine] = [("users read", counts.get(COUNTERS.users_read, 0)), *users_lines(counts)]
    lines += [(f"  files read: {kind}", value) for kind, value in by_suffix(counts, cognito.FILES)]
    lines += [
        (f"  Cognito UserStatus {status}", value) for status, value in by_suffix(counts, cognito.STATUS)
    ]
    lines.append(
        ("must change password at Cognito, no password to mark", counts.get(cognito.CHANGE_NOT_MARKED, 0))
    )
    lines.append(
        ("disabled users written (--include-blocked, --state)", counts.get(cognito.BLOCKED_WRITTEN, 0))
    )
    links = [value for name, value in counts.items() if name.startswith(cognito.IDP_LINKS)]
    if links:
        lines.append(("identities entries (users mapped)", sum(links)))
        lines += link_lines(counts, cognito.IDP_LINKS, link_outcomes("no usable userId, not linked"))
    return lines


DESCRIPTION = SourceDescription(
    kind=KIND,
    help="AWS Cognito user pool (list-users JSON or its CSV) → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=COUNTERS.invariant,
    idp_links=IdpLinks(
        what="identities entries of providerName ALIAS (the pool's IdP name: Google, Facebook, a SAML name)",
        counters=cognito.IDP_LINKS,
    ),
    # Not offered by the Flex Template: its tests take every template source to have the hash and
    # layout flags, which a source without hashes does not declare (docs/cognito.md).
    flex=None,
)
