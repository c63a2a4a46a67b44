"""``zitadel-beam migrate clerk``: Clerk's user exports (dashboard CSV, JSON) → ZITADEL import bodies.

Example::

    zitadel-beam migrate clerk --org=123456789 --users=clerk-users.csv --output=out/importBody.json \\
        --zitadel-config=zitadel.yaml

Each user's ``password_hasher`` decides how its ``password_digest`` is read (docs/clerk.md#password-hashes):
bcrypt, argon2i/argon2id, pbkdf2_sha256, pbkdf2_sha256_django, pbkdf2_sha1, md5 and phpass arrive
as hashes ZITADEL verifies; the other hashers take the ``--on-unsupported-hash`` path.
This module is the source's declaration: its kind, flags, plan and summary rows; the package's
``__init__`` holds the counter names its modules share.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping

import orjson

from transforms.common.accounting import link_lines, link_outcomes, users_lines
from transforms.common.counters import by_suffix
from transforms.common.errors import ConfigError
from transforms.sources import clerk as ck
from transforms.sources.clerk import COUNTERS, CSV_MARKS, JSON_MARKS, OTP_NOT_CARRIED, blocked
from transforms.sources.declaration import (
    FlagGroup,
    FlagParser,
    Flags,
    FlexPart,
    IdpLinks,
    Plan,
    SourceDescription,
    SourceSettings,
    SummaryLine,
    file_flag,
)
from transforms.sources.source_parts import FileShapes, Shape, SourceKind, TextShape, user_records

__all__ = ["DESCRIPTION", "KIND", "clerk_csv"]


def _blocked(record_json: bytes) -> bool:
    if b'"banned"' not in record_json and b'"locked"' not in record_json:  # most users, unparsed
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and blocked(record)


def _ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = record.get("id")
    return [user_id.strip()] if isinstance(user_id, str) and user_id.strip() else None


def _identify(keys: Mapping[str, str]) -> tuple[str, str] | None:
    if "clerkMigrate" in keys:
        return "clerk-users", 'a "clerkMigrate" envelope (clerk migrate export)'
    for key in JSON_MARKS:
        if key in keys:
            return "clerk-users", f'records with "{key}"'
    if "email_addresses" in keys and "id" in keys:
        return "clerk-users", 'records with "id" and "email_addresses"'
    return None


def clerk_csv(head: bytes) -> bool:
    """Whether ``head`` starts with a Clerk Dashboard export's header: ``id`` and a Clerk column."""
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace")
    names = {cell.strip() for cell in next(csv.reader([first]), [])}
    return "id" in names and bool(names & CSV_MARKS)


KIND = SourceKind(
    name=COUNTERS.name,
    records=user_records(COUNTERS, blocked=_blocked, ids=_ids),
    shapes=FileShapes(
        shapes={"clerk-users": Shape(what="a Clerk user export")},
        readers={"clerk-users": ("clerk-users",)},
        identify=_identify,
        rank=40,  # narrow marks: before Auth0's broad profile keys
        text=(TextShape(what="a Clerk Dashboard user export (CSV)", shape="clerk-users", matches=clerk_csv),),
    ),
    second_factors={OTP_NOT_CARRIED: "clerk.otp."},
)


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--users",
        reads="clerk-users",
        required=True,
        help="Clerk's user export: the Dashboard CSV (Settings, User exports) or a JSON export (an "
        "array, NDJSON, or clerk migrate export's envelope): path or glob, local or gs://",
    )
    parser.add_argument(
        "--include-blocked",
        action="store_true",
        help="import users banned or locked at Clerk (default: dead-letter them as blocked; with "
        "--state they are read so that ZITADEL deactivates them)",
    )
    parser.add_argument(
        "--trust-email",
        action="store_true",
        help="import as verified an e-mail address whose verification the export does not say (a JSON "
        "export without verified_email_addresses; default: unverified). The CSV says it per address",
    )
    parser.add_argument(
        "--trust-phone",
        action="store_true",
        help="the same for phone numbers (a JSON export without verified_phone_numbers)",
    )


def plan(flags: Flags, settings: SourceSettings) -> Plan:
    """Match the files and look at each head (CSV header or JSON records); the reader's options."""
    from transforms.common.records import NUM_PARTITIONS
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources import json_units
    from transforms.sources.clerk.mapping import ClerkOptions
    from transforms.sources.clerk.read import ClerkFile
    from transforms.sources.input_shape import identify, read_head, wrong_shape

    try:
        matched = json_units.match_inputs([flags.users], 0, "--users")
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    files = []
    for file in matched:
        head = read_head(file.path)[0].lstrip(b"\xef\xbb\xbf \t\r\n")
        if head[:1] in (b"[", b"{"):
            problem = wrong_shape(head, "clerk-users")
            found = identify(head)
            if problem is not None or found is None:
                raise ConfigError(f"--users {file.path}: {problem or 'not a Clerk user export'}")
            layout = json_units.ARRAY if "clerkMigrate" in found[1] else json_units.sniff_layout(file.path)
            items = "users.item" if "clerkMigrate" in found[1] else "item"
            files.append(ClerkFile(file.index, file.path, layout, items))
        elif clerk_csv(head):
            files.append(ClerkFile(file.index, file.path, "csv"))
        else:
            raise ConfigError(
                f"--users {file.path}: not a Clerk user export (a CSV whose header names id and "
                "password_digest or primary_email_address, or Clerk's JSON export)"
            )
    options = ClerkOptions(
        include_blocked=settings.read_blocked,
        trust_email=flags.trust_email,
        trust_phone=flags.trust_phone,
        metadata=settings.metadata,
        on_unsupported_hash=settings.on_unsupported_hash,
        email_fallback=settings.email_fallback,
        validation=ValidationOptions(
            allowed_hash_families=("bcrypt", "argon2", "pbkdf2", "other"), hash_policy=settings.hash_policy
        ),
        idp_map=settings.idp_map,
    )

    def read(pipeline, tmp_dir: str):
        from transforms.sources.clerk.read import ReadClerkUsers

        return pipeline | "ReadClerk" >> ReadClerkUsers(files, options, NUM_PARTITIONS, tmp_dir)

    return Plan(read=read, input_paths=[flags.users], input_names={f.index: f.path for f in files})


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows of Clerk's own counters (the shared run adds the shared ones)."""
    lines: list[SummaryLine] = [("users read", counts.get(COUNTERS.users_read, 0)), *users_lines(counts)]
    lines += [(f"  from {kind} files", value) for kind, value in by_suffix(counts, ck.FILES)]
    lines += [(f"  password_hasher {name}", value) for name, value in by_suffix(counts, ck.HASHERS)]
    lines.append(("users without a password in the export", counts.get(ck.NO_PASSWORD, 0)))
    lines.append(("awscognito marker (no hash), without password", counts.get(ck.AWSCOGNITO, 0)))
    for reason, value in by_suffix(counts, ck.PASSWORD_DROPPED):
        lines.append((f"password not importable, reset needed ({reason})", value))
    lines.append(("blocked users written (--include-blocked, --state)", counts.get(ck.BLOCKED_WRITTEN, 0)))
    lines.append(("no primary e-mail named, first address taken", counts.get(ck.PRIMARY_CHOSEN, 0)))
    lines.append(("users with more e-mail addresses, others not carried", counts.get(ck.OTHER_EMAILS, 0)))
    lines.append(("users with more phone numbers, others not carried", counts.get(ck.OTHER_PHONES, 0)))
    lines += [
        (f"TOTP secret not carried ({cause})", value)
        for cause, value in by_suffix(counts, ck.OTP_NOT_CARRIED)
    ]
    links = {k: v for k, v in counts.items() if k.startswith(ck.IDP_LINKS)}
    if links:
        lines.append(("external_accounts entries (users mapped)", sum(links.values())))
        lines += link_lines(counts, ck.IDP_LINKS, link_outcomes("no provider_user_id, not linked"))
    return lines


DESCRIPTION = SourceDescription(
    kind=KIND,
    help="Clerk user export (Dashboard CSV or JSON) → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=COUNTERS.invariant,
    groups=frozenset({FlagGroup.HASHES, FlagGroup.LAYOUT}),
    idp_links=IdpLinks(
        what="external_accounts entries of provider ALIAS (e.g. oauth_google, oauth_github)",
        counters=ck.IDP_LINKS,
    ),
    flex=FlexPart(
        labels={
            "users": "Clerk user export",
            "include_blocked": "Include banned or locked users",
            "trust_email": "Trust e-mail addresses of unknown verification",
            "trust_phone": "Trust phone numbers of unknown verification",
        }
    ),
)
