"""``zitadel-beam migrate supabase``: Supabase Auth's ``auth.users`` table → ZITADEL import bodies.

Example::

    psql "$SUPABASE_DB_URL" -c "\\copy (select * from auth.users) to 'auth-users.csv' with (format csv, header)"
    zitadel-beam migrate supabase --org=123456789 --users=auth-users.csv \\
        --identities=auth-identities.csv --idp-map=google=2764 --output=out/importBody.json

bcrypt hashes (Supabase's own) are carried as they are; argon2 ones where the target verifies
argon2; Firebase-scrypt and encrypted ones take the unsupported-hash path. docs/supabase.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from transforms.common.accounting import link_lines, link_outcomes, users_lines
from transforms.common.counters import USERS_WITH_OTP, by_suffix, note
from transforms.common.errors import ConfigError
from transforms.sources import supabase as sb
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
from transforms.sources.supabase import KIND, factors_csv, identities_csv, legacy, users_csv

if TYPE_CHECKING:
    from transforms.sources.supabase.mapping import SupabaseFile

__all__ = ["DESCRIPTION"]

_COPY = "\\copy (select * from auth.{table}) to '{table}.csv' with (format csv, header)"
# What a file must look like, per flag: (shape key, CSV check, what, the table).
_FILES = {
    "--users": ("supabase-users", users_csv, "an auth.users export", "users"),
    "--identities": ("supabase-identities", identities_csv, "an auth.identities export", "identities"),
    "--mfa-factors": ("supabase-mfa-factors", factors_csv, "an auth.mfa_factors export", "mfa_factors"),
}


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--users",
        reads="supabase-users",
        required=True,
        help="the auth.users table: psql's CSV (\\copy ... with (format csv, header)), Studio's "
        "'Download CSV' or 'Copy as JSON': path or glob, local or gs://",
    )
    file_flag(
        parser,
        "--identities",
        reads="supabase-identities",
        help="the auth.identities table (CSV or JSON): OAuth and SSO identities become IdP links "
        "with --idp-map PROVIDER=IDP_ID",
    )
    file_flag(
        parser,
        "--mfa-factors",
        reads="supabase-mfa-factors",
        help="the auth.mfa_factors table (CSV or JSON): a verified TOTP factor's secret becomes the "
        "user's OTP (otpCode)",
    )
    parser.add_argument(
        "--include-blocked",
        action="store_true",
        help="import users banned at Supabase (banned_until in the future; default: dead-letter "
        "them as blocked; with --state they are read so that ZITADEL deactivates them)",
    )
    legacy.add_argument(parser)


def _form(path: str, flag: str) -> str:
    """``csv``, ``json`` (an array of rows) or ``ndjson`` (one row object per line), from the head;
    ConfigError with one line for anything else (a SQL dump named as one)."""
    from transforms.sources.input_shape import read_head, text_shape, wrong_shape

    shape, matches, what, table = _FILES[flag]
    head = read_head(path)[0].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] in (b"[", b"{"):
        problem = wrong_shape(head, shape)
        if problem is not None:
            raise ConfigError(f"{flag} {path}: {problem}")
        return "json" if head[:1] == b"[" else "ndjson"
    if matches(head):
        return "csv"
    start = head[:2000].decode("utf-8", "replace")
    if start.startswith(("--", "SET ", "COPY ", "INSERT ", "CREATE ")) or "COPY auth." in start:
        raise ConfigError(
            f"{flag} {path}: a SQL dump (pg_dump, supabase db dump), not a table export; export the "
            f'table as CSV instead: psql "$SUPABASE_DB_URL" -c "{_COPY.format(table=table)}"'
        )
    other = text_shape(head)
    raise ConfigError(
        f"{flag} {path}: "
        + (other if other else f"not {what} (a CSV whose header names its columns, or JSON)")
    )


def _plan_files(flag: str, pattern: str | None, first_index: int) -> list[SupabaseFile]:
    from transforms.sources import json_units
    from transforms.sources.supabase.mapping import SupabaseFile

    if not pattern:
        return []
    try:
        files = json_units.match_inputs([pattern], first_index, flag)
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    return [SupabaseFile(f.index, f.path, _form(f.path, flag)) for f in files]


def plan(flags: Flags, settings: SourceSettings) -> Plan:
    """Match the three tables' files and look at each head; the reader's options."""
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources.supabase.mapping import SupabaseOptions
    from transforms.sources.supabase.read import read_supabase

    users = _plan_files("--users", flags.users, 0)
    identities = _plan_files("--identities", flags.identities, len(users))
    factors = _plan_files("--mfa-factors", flags.mfa_factors, len(users) + len(identities))
    options = SupabaseOptions(
        include_blocked=settings.read_blocked,
        metadata=settings.metadata,
        on_unsupported_hash=settings.on_unsupported_hash,
        email_fallback=settings.email_fallback,
        idp_map=settings.idp_map,
        validation=ValidationOptions(
            allowed_hash_families=("bcrypt", "argon2"), hash_policy=settings.hash_policy
        ),
        identities=tuple(identities),
        factors=tuple(factors),
    )

    paths = [p for p in (flags.users, flags.identities, flags.mfa_factors) if p]
    keep = legacy.keeper(flags.legacy_hashes, users, options, paths, settings.push_api)
    return Plan(
        read=lambda pipeline, tmp_dir: read_supabase(pipeline, users, options, tmp_dir),
        input_paths=paths,
        input_names={f.index: f.path for f in users},
        manifest={"supabase_files": _listed(users, identities, factors)},
        keep_legacy=keep,
    )


def _listed(*groups: Sequence[SupabaseFile]) -> dict[str, list[dict[str, str]]]:
    names = ("users", "identities", "mfa_factors")
    return {
        name: [{"path": f.path, "form": f.format} for f in files]
        for name, files in zip(names, groups, strict=True)
    }


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows of Supabase's own counters (the shared run adds the shared ones)."""
    lines: list[SummaryLine] = [("users read", counts.get(sb.USERS_READ, 0)), *users_lines(counts)]
    lines.append(("encrypted_password carried, by form (users mapped)", ""))
    lines += [(f"  {form}", value) for form, value in by_suffix(counts, sb.WITH_PASSWORD)]
    lines.append(("  none ('': OAuth, magic link, phone OTP, invited)", counts.get(sb.WITHOUT_PASSWORD, 0)))
    lines += [(f"  password dropped ({why})", value) for why, value in by_suffix(counts, sb.PASSWORD_DROPPED)]
    lines.append(("banned users written (--include-blocked, --state)", counts.get(sb.BANNED_WRITTEN, 0)))
    lines.append(("users written with OTP (otpCode, verified TOTP factor)", counts.get(USERS_WITH_OTP, 0)))
    lines.append(("raw_*_meta_data not a JSON object (read as {})", counts.get(note(sb.INVALID_METADATA), 0)))
    lines.append(("phones stored without '+', written as E.164", counts.get(sb.PHONE_PLUS_ADDED, 0)))
    for table in ("identities", "mfa_factors"):
        read = counts.get(sb.SIDE_ROWS + table, 0)
        if read:
            lines.append((f"auth.{table} rows read", read))
            used = (
                "  OAuth/SSO identities of users written" if table == "identities" else "  of users written"
            )
            lines.append((used, counts.get(sb.SIDE_JOINED + table, 0)))
            lines.append(
                (
                    "  unreadable (no user_id, bad JSON; a cut file's rest)",
                    counts.get(sb.SIDE_UNREADABLE + table, 0),
                )
            )
    if any(key.startswith(sb.IDP_LINKS) for key in counts):
        lines.append(
            ("OAuth/SSO identities (users written)", sum(v for _, v in by_suffix(counts, sb.IDP_LINKS)))
        )
        lines += link_lines(counts, sb.IDP_LINKS, link_outcomes("no usable provider_id, not linked"))
    return lines


DESCRIPTION = SourceDescription(
    kind=KIND,
    help="Supabase auth.users (CSV or Studio JSON, + identities, MFA factors) → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=sb.invariant,
    groups=frozenset({FlagGroup.HASHES}),
    idp_links=IdpLinks(
        what="auth.identities rows of provider ALIAS (e.g. google, github, sso:<uuid>)", counters=sb.IDP_LINKS
    ),
    # Not offered by the Flex Template yet: its tests take every template source to have the
    # layout flags too; the shared metadata.json is regenerated by the lead (docs/supabase.md).
    flex=None,
)
