"""``zitadel-beam migrate auth0``: a drop-in for ``zitadel-tools migrate auth0``.

Example (local runner, bundled sample)::

    zitadel-beam migrate auth0 --org=123456789 --users=examples/auth0/users.json \\
        --passwords=examples/auth0/passwords.json --output=out/importBody.json

Every file may be NDJSON, a JSON array or a multi-line stream of objects, gzip-compressed or
not, and globs (``--users='export/users-*.json.gz'``); paths may be local or gs://.

Profiles in Auth0's bulk-import schema carry their own ``custom_password_hash``; they need no
password file::

    zitadel-beam migrate auth0 --org=123456789 --users=bulk-import.json --passwords=none \
        --mfa=mfa-export.ndjson --idp-map=google-oauth2=2873423 --idp-map=github=2873424
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from transforms.common import counters
from transforms.common.accounting import link_lines, link_outcomes, users_lines
from transforms.common.errors import ConfigError
from transforms.files.storage import check_gcs_reachable
from transforms.sources.auth0 import items as a0
from transforms.sources.auth0.accounting import invariant
from transforms.sources.auth0.source import KIND
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

if TYPE_CHECKING:
    from transforms.sources import json_units
    from transforms.sources.auth0.options import Auth0Options

__all__ = ["DESCRIPTION", "add_arguments", "plan", "summary_lines", "RESERVED_ALIASES"]

# --idp-map aliases that are not IdPs in Auth0, with the reason shown.
RESERVED_ALIASES = {"auth0": "'auth0' identities are Auth0's own database (the password), not an IdP"}

_LOGGER = logging.getLogger(__name__)


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--users",
        reads="auth0-users",
        default="./users.json",
        help="Auth0 profile export (Management API or bulk-import schema): path or glob, "
        "local or gs:// (default ./users.json)",
    )
    file_flag(
        parser,
        "--passwords",
        reads="auth0-passwords",
        default=None,
        help="Auth0 password-hash export: path or glob. Default: ./passwords.json when that "
        "file exists (zitadel-tools' default), else none. 'none' reads no password file "
        "(e.g. bulk-import profiles carrying custom_password_hash)",
    )
    file_flag(
        parser,
        "--mfa",
        reads="auth0-mfa",
        default=None,
        help="Auth0 MFA export (NDJSON or array; path or glob): OTP secrets become the users' "
        "otpCode (authenticator apps keep working); recovery codes cannot be imported and "
        "are counted",
    )
    parser.add_argument(
        "--email-verified",
        action="store_true",
        help="mark every e-mail verified (otherwise the source's email_verified is kept)",
    )
    parser.add_argument(
        "--include-blocked",
        action="store_true",
        help="import users blocked in Auth0 (the import API cannot carry the blocked state)",
    )
    roles = parser.add_argument_group("roles and grants (docs/roles.md)")
    roles.add_argument(
        "--roles-from",
        metavar="PATH",
        default=None,
        help="dotted path into each profile holding a list of role names, e.g. app_metadata.roles "
        "or app_metadata.authorization.roles (needs --project-id)",
    )
    file_flag(
        roles,
        "--roles-file",
        metavar="FILE",
        default=None,
        help='NDJSON (or array; path or glob) of {"user_id": ..., "roles": [name or {"name": ...}]}, '
        "joined on user_id; with --roles-from a user's roles are the union (needs --project-id)",
    )


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows of Auth0's own counters (the shared run adds the shared ones)."""
    lines: list[SummaryLine] = [
        ("profiles read", counts.get(a0.READ_COUNTERS[a0.Kind.PROFILES], 0)),
        ("password records read", counts.get(a0.READ_COUNTERS[a0.Kind.PASSWORDS], 0)),
    ]
    custom_hashes = counts.get(a0.READ_COUNTERS[a0.Kind.CUSTOM_HASHES], 0)
    if custom_hashes:
        lines.append(("custom_password_hash read (bulk-import profiles)", custom_hashes))
        for name, value in sorted(counts.items()):
            if name.startswith(a0.EMBEDDED_UNUSED_PREFIX):
                label = name.rsplit(".", 1)[1]
                lines.append((f"  not used, in the profile's line: {label}", value))
    lines += [
        *users_lines(counts),
        ("password conflicts (older record dropped)", counts.get(a0.PASSWORD_CONFLICTS, 0)),
    ]
    mfa_read = counts.get(a0.READ_COUNTERS[a0.Kind.MFA], 0)
    if mfa_read:
        lines.append(("MFA records read", mfa_read))
        lines.append(("  users written with OTP (otpCode)", counts.get(counters.USERS_WITH_OTP, 0)))
        for name, value in sorted(counts.items()):
            if name.startswith(a0.MFA_NOT_IMPORTABLE):
                lines.append((f"  not importable: {name.removeprefix(a0.MFA_NOT_IMPORTABLE)}", value))
    if any(k.startswith(a0.MFA_FACTORS) for k in counts):
        # The factors not carried are listed by cause at the end (pipeline/report.py).
        lines.append(("mfa_factors totp secrets read (bulk-import)", counts.get(a0.MFA_FACTORS_TOTP, 0)))
        if not mfa_read:
            lines.append(("  users written with OTP (otpCode)", counts.get(counters.USERS_WITH_OTP, 0)))
    identities = {k: v for k, v in counts.items() if k.startswith(a0.IDENTITIES)}
    if identities:
        lines.append(("identities (valid profiles)", sum(identities.values())))
        lines.append(("  auth0 database (the password)", counts.get(a0.IDENTITIES_DATABASE, 0)))
        lines += link_lines(
            counts,
            a0.IDENTITIES,
            link_outcomes("no usable user_id, not linked"),
        )
    return lines


def implied_files(known_args: Flags) -> dict[str, list[str]]:
    """Without ``--passwords``, ./passwords.json when it exists (zitadel-tools' default): an input
    the run must not write (pipeline/preflight.py)."""
    if getattr(known_args, "passwords", None) is None and os.path.exists("./passwords.json"):
        return {"--passwords": ["./passwords.json"]}
    return {}


def _password_pattern(value: str | None) -> str | None:
    """``--passwords``: None → ./passwords.json if present (zitadel-tools' default), 'none' → no file."""
    if value is None:
        return "./passwords.json" if os.path.exists("./passwords.json") else None
    if value.strip().lower() in ("", "none"):
        return None
    return value


def _match_files(known_args: Flags, password_pattern: str | None) -> tuple[list[json_units.InputFile], ...]:
    """The files of ``--users``, ``--passwords``, ``--mfa`` and ``--roles-file``, numbered in that
    order (the sort key's file index), each given a first look."""
    from transforms.sources import json_units

    try:
        profiles = json_units.match_inputs([known_args.users], 0, "--users")
        passwords = (
            json_units.match_inputs([password_pattern], len(profiles), "--passwords")
            if password_pattern
            else []
        )
        mfa = (
            json_units.match_inputs([known_args.mfa], len(profiles) + len(passwords), "--mfa")
            if known_args.mfa
            else []
        )
        role_files = (
            json_units.match_inputs(
                [known_args.roles_file], len(profiles) + len(passwords) + len(mfa), "--roles-file"
            )
            if known_args.roles_file
            else []
        )
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    # A first look at every file (its head only): one that holds not one JSON value is a
    # mistake (a wrong file, HTML, binary data) and stops here, and so does one whose first
    # records are another export's (a realm, a password export as --users). An empty password
    # or MFA file is read as no records; an empty users file is refused (docs/inputs.md).
    for flag, files, expected in (
        ("--users", profiles, "auth0-users"),
        ("--passwords", passwords, "auth0-passwords"),
        ("--mfa", mfa, "auth0-mfa"),
    ):
        for file in files:
            json_units.check_readable(file.path, flag, allow_empty=flag != "--users", expected=expected)
    return profiles, passwords, mfa, role_files


def _auth0_options(known_args: Flags, settings: SourceSettings) -> Auth0Options:
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources.auth0.options import Auth0Options

    return Auth0Options(
        email_verified=known_args.email_verified,
        include_blocked=settings.read_blocked,
        metadata=settings.metadata,
        validation=ValidationOptions(
            allowed_hash_families=("bcrypt", "argon2", "pbkdf2", "other"), hash_policy=settings.hash_policy
        ),
        on_unsupported_hash=settings.on_unsupported_hash,
        idp_map=settings.idp_map,
        email_fallback=settings.email_fallback,
        roles_project=settings.roles.project_id if settings.roles is not None else None,
        roles_from=known_args.roles_from,
    )


def plan(known_args: Flags, settings: SourceSettings) -> Plan:
    """Check the flags, match and look at the files; the reader's options."""
    from transforms.common.records import NUM_PARTITIONS

    password_pattern = _password_pattern(known_args.passwords)
    patterns = {
        "--users": known_args.users,
        "--passwords": password_pattern,
        "--mfa": known_args.mfa,
        "--roles-file": known_args.roles_file,
    }
    patterns = {flag: value for flag, value in patterns.items() if value}
    # Before matching: a gs:// match with Cloud Storage unreachable retries for ~120 s.
    check_gcs_reachable(list(patterns.values()) + list(settings.outputs))
    profiles, passwords, mfa, role_files = _match_files(known_args, password_pattern)
    if known_args.passwords is None and password_pattern is None:
        _LOGGER.warning(
            "no --passwords and no ./passwords.json: no password file: only bulk-import profiles' custom_password_hash can give users a "
            "password (--passwords=PATH to add one)"
        )
    options = _auth0_options(known_args, settings)
    if settings.roles is not None and not known_args.roles_from and not known_args.roles_file:
        raise ConfigError(
            "--project-id: say where Auth0 keeps the roles: --roles-from=app_metadata.roles and/or "
            "--roles-file=FILE (docs/roles.md)"
        )

    def read(pipeline, tmp_dir: str):
        from transforms.sources.auth0.read import ReadAuth0Users  # Beam: imported once the flags are checked

        return pipeline | "ReadAuth0" >> ReadAuth0Users(
            profiles, passwords, options, NUM_PARTITIONS, tmp_dir, mfa, role_files
        )

    return Plan(
        read=read,
        input_paths=list(patterns.values()),
        input_names={f.index: f.path for f in profiles + passwords + mfa},
        defined_roles=[],
    )


# The one description of this source (the registry finds it; the command line, the Flex
# Template, --state, the first look at input files and the report are built from it).
DESCRIPTION = SourceDescription(
    kind=KIND,
    help="Auth0 users + password export → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=invariant,
    groups=frozenset({FlagGroup.HASHES, FlagGroup.LAYOUT, FlagGroup.ROLES}),
    idp_links=IdpLinks(
        what="Auth0 identities of PROVIDER (e.g. google-oauth2, github, samlp)",
        counters=a0.IDENTITIES,
        reserved=RESERVED_ALIASES,
    ),
    flex=FlexPart(
        labels={
            "users": "Auth0 profile export",
            "passwords": "Auth0 password-hash export",
            "mfa": "Auth0 MFA export",
            "roles_file": "Auth0 roles file",
            "roles_from": "Auth0 roles path",
            "email_verified": "Mark e-mails verified",
            "include_blocked": "Include blocked users",
        },
        patterns={"roles_from": "^[A-Za-z0-9_]+(\\.[A-Za-z0-9_]+)*$"},
    ),
    implied_files=implied_files,
)
