"""``zitadel-beam migrate kratos``: Ory Kratos identities → ZITADEL import bodies.

The source's declaration: its record kind and file shape, its accounting, its flags,
its plan and its summary rows (the mapping is ``mapping.py``, the reader's part ``read.py``, the counter names the package's
``__init__``). docs/kratos.md.

Example::

    curl -s "$KRATOS_ADMIN_URL/admin/identities?page_size=500&include_credential=password\\
    &include_credential=oidc&include_credential=totp" > identities-1.json
    zitadel-beam migrate kratos --org=123456789 --identities='identities-*.json' \\
        --output=out/importBody.json --idp-map=google=2764

Hashes come only from the admin API with ``include_credential=password``; ``kratos list
identities`` writes no credentials, so its users arrive without passwords (counted).
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from transforms.common import counters
from transforms.common.accounting import link_lines, link_outcomes, users_lines
from transforms.common.counters import by_suffix
from transforms.common.errors import ConfigError
from transforms.sources.declaration import (
    FlagGroup,
    FlagParser,
    Flags,
    IdpLinks,
    Plan,
    SourceDescription,
    SourceSettings,
    SummaryLine,
    file_flag,
)
from transforms.sources.kratos import (
    BLOCKED_WRITTEN,
    COUNTERS,
    IDP_LINKS,
    NO_PASSWORD,
    OTHER_CREDENTIALS,
    PASSWORD_DROPPED,
    TOTP_NOT_CARRIED,
    WITH_PASSWORD,
)
from transforms.sources.source_parts import FileShapes, Shape, SourceKind, user_records

__all__ = ["DESCRIPTION", "KIND", "parse_traits"]

TRAIT_FIELDS = ("email", "phone", "username", "first_name", "last_name", "display_name")
_WHY_NONE = {
    "no-credentials": "no credentials in the export (kratos list identities; no include_credential)",
    "not-exported": "password credential listed without its hash (no include_credential=password)",
    "migration-hook": "password still at the old system (use_password_migration_hook), listed for reset",
    "none": "no password credential (OIDC, code or passkey sign-in)",
}


def _inactive(record_json: bytes) -> bool:
    if b'"inactive"' not in record_json:  # the common case, without parsing
        return False
    record = orjson.loads(record_json)
    return isinstance(record, dict) and record.get("state") == "inactive"


def _ids(record: dict, realm: str | None) -> list[str] | None:
    user_id = record.get("id")
    return [user_id] if isinstance(user_id, str) and user_id.strip() else None


def _identify(keys: Mapping[str, str]) -> tuple[str, str] | None:
    if keys.get("identities") == "start_array" and "next_page_token" in keys:
        return "kratos-identities", 'an "identities" array and "next_page_token" (kratos list identities)'
    if "schema_id" in keys and "traits" in keys:
        return "kratos-identities", 'records with "schema_id" and "traits"'
    return None


KIND = SourceKind(
    name=COUNTERS.name,
    records=user_records(COUNTERS, blocked=_inactive, ids=_ids),
    shapes=FileShapes(
        shapes={"kratos-identities": Shape(what="Ory Kratos identities")},
        readers={"kratos-identities": ("kratos-identities",)},
        identify=_identify,
        rank=25,
    ),
    second_factors={TOTP_NOT_CARRIED: COUNTERS.own("totp.")},
)


def _invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """identities read = written + dead-lettered; mapped = written + dropped as duplicates."""
    return COUNTERS.invariant(counts, noun="identities", refused_label="inactive")


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--identities",
        reads="kratos-identities",
        required=True,
        help="Kratos identities: the admin API's GET /admin/identities pages (JSON arrays; with "
        "include_credential=password for hashes), kratos list identities --format json, or NDJSON: "
        "path or glob, local or gs://, .gz read as it is",
    )
    parser.add_argument(
        "--include-blocked",
        action="store_true",
        help="import identities whose state is inactive (default: dead-letter them as blocked; with "
        "--state they are read so that ZITADEL deactivates them)",
    )
    parser.add_argument(
        "--traits",
        metavar="FIELD=PATH[,...]",
        default="",
        help="where the identity schema keeps each profile field, as dotted trait paths: "
        f"{', '.join(TRAIT_FIELDS)} (default: email, phone or phone_number, username, "
        "name.first or first_name, name.last or last_name, name or display_name: Kratos's presets)",
    )


def parse_traits(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``--traits email=contact.mail,phone=contact.mobile`` → every field's paths, the defaults
    where not named; ConfigError naming the fields otherwise."""
    from transforms.sources.kratos.mapping import DEFAULT_TRAITS

    chosen = dict(DEFAULT_TRAITS)
    for item in filter(None, (part.strip() for part in text.split(","))):
        field, _, path = (side.strip() for side in item.partition("="))
        if field not in chosen or not path or any(not part for part in path.split(".")):
            raise ConfigError(
                f"--traits {item!r}: expected FIELD=PATH with FIELD one of {', '.join(TRAIT_FIELDS)}"
            )
        chosen[field] = (path,)
    return tuple(chosen.items())


def plan(flags: Flags, settings: SourceSettings) -> Plan:
    """Check the flags, match the files and look at each one's head; the reader's options."""
    from transforms.common.records import NUM_PARTITIONS
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources import json_units
    from transforms.sources.input_shape import identify, read_head, wrong_shape
    from transforms.sources.kratos.mapping import KratosOptions
    from transforms.sources.kratos.read import KratosFile, file_layout

    traits = parse_traits(flags.traits)
    try:
        matched = json_units.match_inputs([flags.identities], 0, "--identities")
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    files = []
    for file in matched:
        head, _ = read_head(file.path)
        problem = wrong_shape(head, "kratos-identities")
        if problem is not None:
            raise ConfigError(f"--identities {file.path}: {problem}")
        if head.strip() and identify(head) is None:
            raise ConfigError(
                f"--identities {file.path}: not Ory Kratos identities (objects with schema_id and traits, "
                'or kratos list identities\'s {"identities": [...]}; its default --format is a table: '
                "add --format json)"
            )
        files.append(KratosFile(file.index, file.path, file_layout(file.path, head)))
    options = KratosOptions(
        include_blocked=settings.read_blocked,
        metadata=settings.metadata,
        email_fallback=settings.email_fallback,
        on_unsupported_hash=settings.on_unsupported_hash,
        validation=ValidationOptions(
            allowed_hash_families=("bcrypt", "argon2", "pbkdf2", "other"), hash_policy=settings.hash_policy
        ),
        idp_map=settings.idp_map,
        traits=traits,
    )

    def read(pipeline, tmp_dir: str):
        from transforms.sources.kratos.read import ReadKratosIdentities

        return pipeline | "ReadKratos" >> ReadKratosIdentities(files, options, NUM_PARTITIONS, tmp_dir)

    return Plan(
        read=read,
        input_paths=[flags.identities],
        input_names={f.index: f.path for f in files},
        manifest={"kratos_files": [{"path": f.path, "layout": f.layout} for f in files]},
    )


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows of Kratos's own counters (the shared run adds the shared ones)."""
    lines: list[SummaryLine] = [("identities read", counts.get(COUNTERS.users_read, 0)), *users_lines(counts)]
    lines.append(("passwords converted, by form (users mapped)", ""))
    lines += [(f"  {form}", value) for form, value in by_suffix(counts, WITH_PASSWORD)]
    lines += [(f"  password not imported ({reason})", n) for reason, n in by_suffix(counts, PASSWORD_DROPPED)]
    lines += [(f"  {_WHY_NONE.get(why, why)}", n) for why, n in by_suffix(counts, NO_PASSWORD)]
    lines.append(("inactive identities written (--include-blocked, --state)", counts.get(BLOCKED_WRITTEN, 0)))
    lines.append(("users written with TOTP (otpCode)", counts.get(counters.USERS_WITH_OTP, 0)))
    lines += [(f"credentials not carried: {kind}", n) for kind, n in by_suffix(counts, OTHER_CREDENTIALS)]
    links = {k: v for k, v in counts.items() if k.startswith(IDP_LINKS)}
    if links:
        lines.append(("oidc/saml identifiers (users mapped)", sum(links.values())))
        lines += link_lines(
            counts,
            IDP_LINKS,
            link_outcomes("no subject"),
        )
    return lines


DESCRIPTION = SourceDescription(
    kind=KIND,
    help="Ory Kratos identities (admin API JSON, kratos list identities, NDJSON) → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=_invariant,
    groups=frozenset({FlagGroup.HASHES}),
    idp_links=IdpLinks(
        what="credentials.oidc/saml identifiers <ALIAS>:<subject> (the provider id of Kratos's config)",
        counters=IDP_LINKS,
    ),
    # Not offered by the Flex Template yet: its tests take every template source to have the hash
    # and layout flags (docs/adding-a-source.md, open points); --multiline is this reader's own.
    flex=None,
)
