"""``zitadel-beam migrate aspnet``: ASP.NET Identity's ``AspNetUsers`` table (CSV) → ZITADEL import bodies.

Example::

    zitadel-beam migrate aspnet --org=123456789 --users=AspNetUsers.csv \\
        --logins=AspNetUserLogins.csv --tokens=AspNetUserTokens.csv --claims=AspNetUserClaims.csv \\
        --idp-map=Google=281234567890 --zitadel-config=zitadel.yaml --output=out/importBody.json

ASP.NET Identity is a library writing tables in the application's database: the export is a query
result saved as CSV (psql ``\\copy``, SSMS, ...), read by header name in both layouts (ASP.NET Core
Identity, ASP.NET Identity 2). Its ``PasswordHash`` (Identity v2/v3 PBKDF2) is rewritten into the
form ZITADEL verifies; the side tables add IdP links, the authenticator key (TOTP) and names.
The counter names, the record kind and the file shapes are the package's ``__init__``
(docs/aspnet.md).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence

from transforms.common import counters
from transforms.common.accounting import link_lines, link_outcomes, users_lines
from transforms.common.counters import by_suffix
from transforms.common.errors import ConfigError
from transforms.sources import aspnet as asp
from transforms.sources.aspnet import KIND, WHAT, key, table_of
from transforms.sources.csv_rows import detect_delimiter
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

__all__ = ["DESCRIPTION", "add_arguments", "plan", "summary_lines"]

_SIDE_HELP = "(CSV with a header, as the database tool saved it): path or glob, local or gs://"


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--users",
        reads="aspnet-users",
        required=True,
        help="the AspNetUsers table as CSV (or tab-separated) with a header, ASP.NET Core Identity (NormalizedUserName, "
        "LockoutEnd, ...) or Identity 2 (LockoutEndDateUtc) columns, read by name; NULL as an empty "
        "cell or the text NULL (psql \\copy, SSMS, bcp with a header line): path or glob, local or "
        "gs://. PhoneNumber is free text: it is carried as E.164 when it starts with + or 00; a "
        "number without a country code cannot be guessed and is dropped, counted. PasswordHash "
        "(Identity v2/v3, PBKDF2) imports where the target verifies pbkdf2: give its --zitadel-config "
        "(docs/aspnet.md)",
    )
    file_flag(
        parser,
        "--logins",
        reads="aspnet-logins",
        help=f"AspNetUserLogins → IdP links (--idp-map) {_SIDE_HELP}",
    )
    file_flag(
        parser,
        "--tokens",
        reads="aspnet-tokens",
        help="AspNetUserTokens: the authenticator key ([AspNetUserStore] AuthenticatorKey) becomes "
        f"the user's TOTP secret when TwoFactorEnabled {_SIDE_HELP}",
    )
    file_flag(
        parser,
        "--claims",
        reads="aspnet-claims",
        help="AspNetUserClaims: given_name/family_name/name (or their schemas.xmlsoap.org URIs) "
        f"become names, the other claims metadata with --metadata {_SIDE_HELP}",
    )
    parser.add_argument(
        "--include-blocked",
        action="store_true",
        help="import users locked out at the source (LockoutEnabled and LockoutEnd in the future; "
        "default: dead-letter them as blocked; with --state they are read so that ZITADEL "
        "deactivates them)",
    )


def _files(pattern: str, flag: str, tables: Sequence[str], delimiters: dict[str, str]) -> list:
    """The files ``pattern`` matches, each checked to be one of ``tables`` by its header (its
    delimiter noted in ``delimiters``)."""
    from transforms.sources import json_units
    from transforms.sources.input_shape import read_head

    try:
        files = json_units.match_inputs([pattern], 0, flag)
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    for file in files:
        head, complete = read_head(file.path)
        found = table_of(head)
        delimiters[file.path] = detect_delimiter(head.split(b"\n", 1)[0].decode("utf-8-sig", "replace"))
        if found not in tables:
            wanted = " or ".join(WHAT[table] for table in tables)
            seen = (
                f"it looks like {WHAT[found]}" if found else "no header names its columns (bcp writes none)"
            )
            raise ConfigError(f"{flag} {file.path}: not {wanted}: {seen}")
        if found in ("core", "identity2"):
            _check_addresses(file.path, head if complete else head.rsplit(b"\n", 1)[0], delimiters[file.path])
    return files


def _check_addresses(path: str, head: bytes, delimiter: str) -> None:
    """Fail fast on a table whose e-mails are ciphertext (``ProtectPersonalData``): none of the
    first rows' Email cells holds an ``@``."""
    lines = head.decode("utf-8-sig", "replace").splitlines()[:50]  # cut at a line
    rows = list(csv.reader(lines, delimiter=delimiter))
    if len(rows) < 2:
        return
    column = [key(cell) for cell in rows[0]].index("email")
    emails = [row[column] for row in rows[1:] if len(row) > column and row[column] not in ("", "NULL")]
    if emails and not any("@" in email for email in emails):
        raise ConfigError(
            f"--users {path}: the Email column holds no address in its first rows: personal data "
            "protected by the application (StoreOptions.ProtectPersonalData) must be exported decrypted"
        )


def plan(flags: Flags, settings: SourceSettings) -> Plan:
    """Match the files, check each header; the reader's options."""
    import datetime

    from transforms.mapping.validate import ValidationOptions
    from transforms.sources.aspnet.mapping import AspnetOptions
    from transforms.sources.aspnet.read import count_rows, read_aspnet

    delimiters: dict[str, str] = {}
    users = _files(flags.users, "--users", ("core", "identity2"), delimiters)
    side: dict[str, tuple[str, ...]] = {}
    for flag in ("logins", "tokens", "claims"):
        pattern = getattr(flags, flag)
        if pattern:
            side[flag] = tuple(f.path for f in _files(pattern, f"--{flag}", (flag,), delimiters))
    options = AspnetOptions(
        now=datetime.datetime.now(datetime.UTC).timestamp(),
        include_blocked=settings.read_blocked,
        metadata=settings.metadata,
        on_unsupported_hash=settings.on_unsupported_hash,
        email_fallback=settings.email_fallback,
        # Identity writes PBKDF2; an app's own IPasswordHasher may have written any form.
        validation=ValidationOptions(
            allowed_hash_families=("bcrypt", "argon2", "pbkdf2", "other"), hash_policy=settings.hash_policy
        ),
        idp_map=settings.idp_map,
        logins=side.get("logins", ()),
        tokens=side.get("tokens", ()),
        claims=side.get("claims", ()),
        delimiters=tuple(delimiters.items()),
    )

    paths = [flags.users, *(getattr(flags, flag) for flag in side)]
    rows = {flag: count_rows(found, options) for flag, found in side.items()}
    return Plan(
        read=lambda pipeline, tmp_dir: read_aspnet(pipeline, users, options, tmp_dir),
        input_paths=paths,
        input_names={f.index: f.path for f in users},
        manifest={"side_tables": {flag: list(found) for flag, found in side.items()}, "side_rows": rows},
        summary=lambda counts: _side_lines(rows, counts),
    )


_TABLE_NAMES = {"logins": "AspNetUserLogins", "tokens": "AspNetUserTokens", "claims": "AspNetUserClaims"}


def _side_lines(rows: Mapping[str, int], counts: Mapping[str, int]) -> list[SummaryLine]:
    """Each side table's rows: in its files, of the users read, and the rest, not used."""
    lines: list[SummaryLine] = []
    for flag, total in rows.items():
        used = counts.get(asp.SIDE_ROWS + flag, 0)
        lines += [(f"{_TABLE_NAMES[flag]} rows read", total), ("  of users read", used)]
        lines.append(
            ("  not used (no user of that UserId read, or the row did not read)", max(total - used, 0))
        )
    return lines


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows of this source's own counters (the shared run adds the shared ones)."""
    lines: list[SummaryLine] = [("users read", counts.get(asp.USERS_READ, 0))]
    lines += [(f"  table layout {layout}", value) for layout, value in by_suffix(counts, asp.LAYOUT)]
    lines += [*users_lines(counts), ("converted, by hash form", "")]
    lines += [(f"  {form}", value) for form, value in by_suffix(counts, asp.WITH_PASSWORD)]
    lines.append(("  no password (PasswordHash NULL)", counts.get(asp.WITHOUT_PASSWORD, 0)))
    lines += [
        (f"  password dropped ({why})", value) for why, value in by_suffix(counts, asp.PASSWORD_DROPPED)
    ]
    lines.append(("users written with OTP (otpCode)", counts.get(counters.USERS_WITH_OTP, 0)))
    lines += [
        (f"phone not carried ({why})", value) for why, value in by_suffix(counts, asp.PHONE_NOT_CARRIED)
    ]
    lines.append(("locked-out users written (--include-blocked, --state)", counts.get(asp.LOCKED_WRITTEN, 0)))
    lines.append(("AspNetUserClaims rows used (names, metadata)", counts.get(asp.CLAIMS_USED, 0)))
    if any(name.startswith(asp.IDP_LINKS) for name in counts):
        outcomes = link_outcomes("no usable ProviderKey, not linked")
        lines += [("AspNetUserLogins (users written)", ""), *link_lines(counts, asp.IDP_LINKS, outcomes)]
    return lines


DESCRIPTION = SourceDescription(
    kind=KIND,
    help="ASP.NET Identity AspNetUsers table (CSV) → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=asp.COUNTERS.invariant,
    groups=frozenset({FlagGroup.HASHES, FlagGroup.LAYOUT}),
    idp_links=IdpLinks(
        what="AspNetUserLogins of LoginProvider ALIAS (e.g. Google, Microsoft)", counters=asp.IDP_LINKS
    ),
    flex=FlexPart(
        # The template holds names with "token" for secret files the launcher mounts: the TOTP
        # keys of AspNetUserTokens are carried by the command line (docs/aspnet.md).
        left_out=frozenset({"tokens"}),
        labels={
            "users": "AspNetUsers table (CSV)",
            "logins": "AspNetUserLogins table (CSV)",
            "claims": "AspNetUserClaims table (CSV)",
            "include_blocked": "Include blocked users",
        },
    ),
)
