"""``zitadel-beam migrate table``: users from any table (CSV, NDJSON, a JSON array) with a mapping.

Examples (local runner)::

    # a Supabase auth.users export (CSV), the mapping as flags:
    zitadel-beam migrate table --org=123456789 --input=auth_users.csv \\
        --map id=id --map email=email --map 'email_verified=present(email_confirmed_at)' \\
        --map password_hash=encrypted_password --map display_name=raw_user_meta_data.full_name \\
        --output=out/importBody.json
    # a Django auth_user export as NDJSON, the mapping in a file (docs/table.md):
    zitadel-beam migrate table --org=123456789 --input='export/auth_user-*.ndjson.gz' \\
        --mapping=examples/table/django.mapping.json --output=out/importBody.json
    # on Dataflow:
    zitadel-beam migrate table --org=123456789 --input='gs://B/users-*.csv' --mapping=gs://B/mapping.json \\
        --output=gs://B/out/importBody.json --runner=DataflowRunner --project=P --region=R \\
        --temp_location=gs://B/tmp --setup_file=./setup.py
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from transforms.common.accounting import users_lines
from transforms.common.counters import by_suffix
from transforms.common.errors import ConfigError
from transforms.files.storage import check_gcs_reachable
from transforms.sources.declaration import (
    FlagGroup,
    FlagParser,
    Flags,
    FlexPart,
    Plan,
    SourceDescription,
    SourceSettings,
    SummaryLine,
    file_flag,
)
from transforms.sources.table import accounting as ta
from transforms.sources.table.source import KIND

if TYPE_CHECKING:  # imported in run() only: --help stays fast
    from transforms.hashing.forms import HashForm
    from transforms.sources.table.read import TableFile
    from transforms.sources.table.spec import TableSpec

__all__ = ["DESCRIPTION", "add_arguments", "plan", "summary_lines"]


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--input",
        required=True,
        help="the table: CSV, NDJSON or a JSON array; a path or a glob, plain or .gz, local or gs://",
    )
    file_flag(
        parser,
        "--mapping",
        workers=False,  # the launcher reads the mapping and hands the workers its spec
        metavar="FILE",
        default=None,
        help="JSON file naming the column or JSON path of each field (docs/table.md)",
    )
    parser.add_argument(
        "--map",
        metavar="FIELD=PATH",
        action="append",
        default=[],
        help="repeatable; one field of the mapping (wins over --mapping), e.g. --map email=mail, "
        "--map 'email_verified=present(email_confirmed_at)', --map metadata=plan,tier",
    )
    parser.add_argument(
        "--format",
        choices=("auto", "csv", "json"),
        default="auto",
        help="csv, or json (NDJSON, a JSON array); auto (default): by the file name, else the first byte",
    )
    parser.add_argument(
        "--where",
        metavar="PATH=VALUE",
        action="append",
        default=[],
        help="repeatable; read only the records whose PATH holds VALUE (all must hold), e.g. --where "
        "model=auth.user for a Django dumpdata file; the others are counted as not selected",
    )
    parser.add_argument(
        "--delimiter",
        default=None,
        help="CSV cell delimiter: one character, or tab, comma, semicolon, pipe (default: read from the "
        "header line, one of , ; tab |)",
    )
    parser.add_argument(
        "--encoding",
        default=None,
        help="the encoding of a CSV file that is not UTF-8, e.g. cp1252 (Excel on Windows), latin-1 "
        "(default: UTF-8, or UTF-16/32 with a byte-order mark)",
    )
    parser.add_argument(
        "--hash-form",
        metavar="FORM",
        default=None,
        help="the form of every password hash, e.g. django-pbkdf2-sha256, aspnet-identity-v3 "
        "(default auto: each value's form is detected; docs/hash-forms.md lists the forms)",
    )
    parser.add_argument(
        "--allow-plaintext-passwords",
        action="store_true",
        help="a password column value that is plainly a password, not a hash (a seed row's "
        "password123), is imported as the user's password with passwordChangeRequired, for test tenants "
        "(default: such users are dead-lettered as plaintext-password)",
    )
    parser.add_argument(
        "--email-verified",
        action="store_true",
        help="mark every e-mail verified (default: the mapped column)",
    )
    parser.add_argument(
        "--include-blocked",
        action="store_true",
        help="import users the mapped 'blocked' column marks (the import API cannot carry the blocked state)",
    )


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows of the table's own counters (the shared run adds the shared ones)."""
    lines: list[SummaryLine] = [
        ("records read", counts.get(ta.RECORDS_READ, 0)),
        *([("  not selected (--where)", counts[ta.NOT_SELECTED])] if counts.get(ta.NOT_SELECTED) else []),
        *users_lines(counts),
        ("converted, by hash", ""),
    ]
    for suffix, value in by_suffix(counts, ta.WITH_PASSWORD):
        lines.append((f"  {suffix}", value))
    # The lines add up to the records converted: a dropped password is not also "no password".
    dropped = by_suffix(counts, ta.PASSWORD_DROPPED)
    lines.append(
        ("  no password in the table", counts.get(ta.WITHOUT_PASSWORD, 0) - sum(v for _, v in dropped))
    )
    for suffix, value in dropped:
        lines.append((f"  password dropped ({suffix})", value))
    if counts.get(ta.UNREADABLE_FILES):
        lines.append(("files not read to the end", counts[ta.UNREADABLE_FILES]))
    return lines


def _load_spec(known_args: Flags, metadata: bool) -> TableSpec:
    from transforms.files.storage import read_bytes
    from transforms.sources.table.spec import SpecError, load_spec

    text = None
    if known_args.mapping:
        try:
            text = read_bytes(known_args.mapping)
        except OSError as err:
            raise ConfigError(f"--mapping {known_args.mapping}: cannot be read ({err})") from None
    try:
        spec = load_spec(text, known_args.map, known_args.where)
    except SpecError as err:
        raise ConfigError(str(err)) from None
    if metadata and not spec.metadata:
        raise ConfigError(
            "--metadata: name the columns to carry: --map metadata=COLUMN,COLUMN (docs/table.md)"
        )
    return spec


def plan(known_args: Flags, settings: SourceSettings) -> Plan:
    """Check the flags, read the mapping, match and look at the files; the reader's options."""
    from transforms.common.records import NUM_PARTITIONS
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources.table.csv_rows import delimiter_option, encoding_option
    from transforms.sources.table.mapping import TableOptions

    roles = settings.roles
    spec = _load_spec(known_args, settings.metadata)
    if roles is not None and "roles" not in spec.fields:
        raise ConfigError("--project-id: name the roles column: --map roles=COLUMN (docs/table.md)")
    delimiter, encoding = delimiter_option(known_args.delimiter), encoding_option(known_args.encoding)
    check_gcs_reachable([known_args.input] + ([known_args.mapping] if known_args.mapping else []))
    from transforms.sources.table.files import plan_table_files  # after the flags: it imports Beam

    files = plan_table_files(
        known_args.input, spec=spec, fmt=known_args.format, delimiter=delimiter, encoding=encoding
    )
    options = TableOptions(
        spec=spec,
        include_blocked=settings.read_blocked,
        email_verified=known_args.email_verified,
        on_unsupported_hash=settings.on_unsupported_hash,
        email_fallback=settings.email_fallback,
        validation=ValidationOptions(
            allowed_hash_families=("bcrypt", "argon2", "pbkdf2", "other"), hash_policy=settings.hash_policy
        ),
        hash_form=_hash_form(known_args.hash_form or spec.hash_form),
        allow_plaintext_passwords=known_args.allow_plaintext_passwords,
    )
    project = roles.project_id if roles is not None else None

    def read(pipeline, tmp_dir: str):
        from transforms.sources.table.read import ReadTableUsers  # Beam: imported once the flags are checked

        return pipeline | "ReadTable" >> ReadTableUsers(files, options, NUM_PARTITIONS, tmp_dir, project)

    return Plan(
        read=read,
        input_paths=[known_args.input],
        input_names={f.index: f.path for f in files},
        manifest=_extra_manifest(files),
        summary=lambda counts: _file_lines(files, spec, counts),
        defined_roles=[] if roles is not None else None,
    )


def _hash_form(name: str | None) -> HashForm | None:
    """``--hash-form`` (or the mapping's ``hash_form``) → the form; a misspelling names the one meant
    (never a form that refuses every value)."""
    from transforms.sources.table.hashes import FRAMEWORKS, WRITABLE_FORM_NAMES, hash_form
    from transforms.sources.table.spec import did_you_mean

    try:
        return hash_form(name)
    except ValueError:
        raise ConfigError(
            f"--hash-form {name!r}: not a hash form"
            f"{did_you_mean(name or '', [*WRITABLE_FORM_NAMES, *FRAMEWORKS])}; the forms: "
            f"auto, {', '.join(WRITABLE_FORM_NAMES)}; frameworks: {', '.join(FRAMEWORKS)} (docs/hash-forms.md)"
        ) from None


def _kind(file: TableFile) -> str:
    return "csv" if file.csv else "json"


def _extra_manifest(files: list[TableFile]) -> dict[str, object]:
    """The manifest's names of the input files, their formats, CSV delimiters and wrappers."""
    from transforms.sources.table.files import delimiters

    extra: dict[str, object] = {
        "input_files": [f.path for f in files],
        "formats": sorted({_kind(f) for f in files}),
    }
    if any(f.csv for f in files):
        extra["csv_delimiters"] = delimiters(files)
    wrapped = {f.path: f.items.removesuffix(".item") for f in files if f.items}
    if wrapped:
        extra["wrappers"] = wrapped
    return extra


def _file_lines(files: list[TableFile], spec: TableSpec, counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows about how the files were read and what each mapped path held."""
    from transforms.sources.table.files import delimiters

    lines: list[SummaryLine] = []
    if any(f.csv for f in files):
        lines.append(("CSV delimiter", ", ".join(delimiters(files))))
    for file in files:
        if file.items:
            lines.append((f"records of the top-level {file.items.removesuffix('.item')!r} array", file.path))
    lines.append(("mapped fields (records that held a value)", ""))
    for field, path in spec.fields.items():
        shown = f"present({path.text})" if path.present else f"not({path.text})" if path.negate else path.text
        lines.append((f"  {field} ({shown})", counts.get(ta.MAPPED + field, 0)))
    return lines


# The one description of this source (the registry finds it; the command line, the Flex
# Template, --state, the first look at input files and the report are built from it).
DESCRIPTION = SourceDescription(
    kind=KIND,
    help="any table of users (CSV, NDJSON, JSON) → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=ta.invariant,
    groups=frozenset({FlagGroup.HASHES, FlagGroup.LAYOUT, FlagGroup.ROLES}),
    flex=FlexPart(
        left_out=frozenset({"allow_plaintext_passwords"}),
        labels={
            "input": "Table of users",
            "mapping": "Table mapping file",
            "map": "Table mapping fields",
            "format": "Table format",
            "where": "Records to read",
            "delimiter": "CSV delimiter",
            "encoding": "CSV encoding",
            "hash_form": "Password hash form",
            "email_verified": "Mark e-mails verified",
            "include_blocked": "Include blocked users",
        },
        patterns={
            "map": "^[a-z_]+=[^;]+(;[a-z_]+=[^;]+)*$",
            "where": "^[^;=]+=[^;]*(;[^;=]+=[^;]*)*$",
            "delimiter": "^([^\\n]|tab|comma|semicolon|pipe|space)$",
            "encoding": "^[A-Za-z0-9][-_A-Za-z0-9]{0,39}$",
            "hash_form": "^[a-z0-9][-a-z0-9]{0,79}$",
        },
        # One field's path may hold commas (metadata=plan,tier): its values are split at ";".
        separators={"map": ";", "where": ";"},
    ),
)
