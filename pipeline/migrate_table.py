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

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pipeline.migrate import run_migration
from pipeline.migrate_options import add_common_arguments, add_role_arguments, common_args, role_settings
from pipeline.report import SummaryLine, shared_summary_lines, users_lines
from pipeline.source_description import FlexPart, SourceDescription
from transforms.common.counters import by_suffix
from transforms.common.errors import ConfigError
from transforms.files.storage import check_gcs_reachable
from transforms.sources.table import accounting as ta
from transforms.sources.table.source import KIND

if TYPE_CHECKING:  # imported in run() only: --help stays fast
    from transforms.hashing.forms import HashForm
    from transforms.sources.table.read import TableFile
    from transforms.sources.table.spec import TableSpec

__all__ = ["DESCRIPTION", "add_arguments", "run", "summary_lines"]

_CSV_NAMES = (".csv", ".tsv", ".csv.gz", ".tsv.gz")
_JSON_NAMES = (".json", ".ndjson", ".jsonl", ".json.gz", ".ndjson.gz", ".jsonl.gz")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        required=True,
        help="the table: CSV, NDJSON or a JSON array; a path or a glob, plain or .gz, local or gs://",
    )
    parser.add_argument(
        "--mapping",
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
        "--delimiter",
        default=None,
        help="CSV cell delimiter (default ',', a tab for .tsv files)",
    )
    parser.add_argument(
        "--hash-form",
        metavar="FORM",
        default=None,
        help="the form of every password hash, e.g. django-pbkdf2-sha256, aspnet-identity-v3 "
        "(default auto: each value's form is detected; docs/hash-forms.md lists the forms)",
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
    add_common_arguments(parser)
    add_role_arguments(parser, "table")


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    lines: list[SummaryLine] = [
        ("records read", counts.get(ta.RECORDS_READ, 0)),
        *users_lines(counts),
        ("converted, by hash", ""),
    ]
    for suffix, value in by_suffix(counts, ta.WITH_PASSWORD):
        lines.append((f"  {suffix}", value))
    lines.append(("  no password", counts.get(ta.WITHOUT_PASSWORD, 0)))
    for suffix, value in by_suffix(counts, ta.PASSWORD_DROPPED):
        lines.append((f"  password dropped ({suffix})", value))
    if counts.get(ta.UNREADABLE_FILES):
        lines.append(("files not read to the end", counts[ta.UNREADABLE_FILES]))
    return lines + shared_summary_lines(counts, ta.PREFIX, idp_map=False)  # no --idp-map here


def _load_spec(known_args: argparse.Namespace) -> TableSpec:
    from transforms.files.storage import read_bytes
    from transforms.sources.table.spec import SpecError, load_spec

    text = None
    if known_args.mapping:
        try:
            text = read_bytes(known_args.mapping)
        except OSError as err:
            raise ConfigError(f"--mapping {known_args.mapping}: cannot be read ({err})") from None
    try:
        spec = load_spec(text, known_args.map)
    except SpecError as err:
        raise ConfigError(str(err)) from None
    if known_args.metadata and not spec.metadata:
        raise ConfigError(
            "--metadata: name the columns to carry: --map metadata=COLUMN,COLUMN (docs/table.md)"
        )
    return spec


def _is_csv(path: str, wanted: str) -> bool:
    if wanted != "auto":
        return wanted == "csv"
    name = path.lower()
    if name.endswith(_CSV_NAMES):
        return True
    if name.endswith(_JSON_NAMES):
        return False
    from transforms.sources.input_shape import read_head

    head, _ = read_head(path)
    return head.lstrip()[:1] not in (b"{", b"[")


def _match_files(known_args: argparse.Namespace, spec: TableSpec) -> list[TableFile]:
    """The ``--input`` files, each given a first look: a CSV header that lacks a mapped column
    is refused naming the column (and the one meant); a JSON file must hold JSON records."""
    from transforms.sources import json_units
    from transforms.sources.input_stream import InputReadError
    from transforms.sources.table.read import TableFile

    try:
        matched = json_units.match_inputs([known_args.input], 0, "--input")
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    files = []
    for file in matched:
        try:
            csv = _is_csv(file.path, known_args.format)
        except (OSError, InputReadError) as err:
            raise ConfigError(f"--input {file.path}: cannot be read ({err})") from None
        if not csv:
            json_units.check_readable(file.path, "--input")
            files.append(TableFile(file.index, file.path, file.size, False))
            continue
        delimiter = known_args.delimiter or ("\t" if ".tsv" in file.path.lower() else ",")
        _check_header(file.path, spec, delimiter)
        files.append(TableFile(file.index, file.path, file.size, True, delimiter))
    return files


def _check_header(path: str, spec: TableSpec, delimiter: str) -> None:
    from transforms.sources.input_stream import InputReadError, open_input
    from transforms.sources.table.csv_rows import read_csv
    from transforms.sources.table.spec import did_you_mean, for_columns

    if len(delimiter) != 1:
        raise ConfigError(f"--delimiter {delimiter!r}: give one character")
    try:
        with open_input(path) as stream:
            header, _ = read_csv(stream, delimiter)
    except (OSError, InputReadError) as err:
        raise ConfigError(f"--input {path}: cannot be read ({err})") from None
    if not header:
        raise ConfigError(f"--input {path}: the CSV file has no header row")
    _, missing = for_columns(spec, header)
    if missing:
        first = missing[0].split(".")[0]
        raise ConfigError(
            f"--input {path}: the header has no column {missing[0]!r}{did_you_mean(first, header)}; "
            f"its columns: {', '.join(header[:20])}"
        )


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    from transforms.common.records import NUM_PARTITIONS
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources.table.mapping import TableOptions

    common = common_args(known_args)
    roles = role_settings(known_args)
    spec = _load_spec(known_args)
    if roles is not None and "roles" not in spec.fields:
        raise ConfigError("--project-id: name the roles column: --map roles=COLUMN (docs/table.md)")
    check_gcs_reachable([known_args.input] + ([known_args.mapping] if known_args.mapping else []))
    files = _match_files(known_args, spec)
    options = TableOptions(
        spec=spec,
        # With --state, blocked users are read so that those in ZITADEL can be deactivated; the
        # sync step still dead-letters blocked users who are new unless --include-blocked.
        include_blocked=known_args.include_blocked or bool(common.state),
        email_verified=known_args.email_verified,
        on_unsupported_hash=common.on_unsupported_hash,
        email_fallback=common.email_fallback,
        validation=ValidationOptions(
            allowed_hash_families=("bcrypt", "argon2", "pbkdf2", "other"), hash_policy=common.hash_policy
        ),
        hash_form=_hash_form(known_args.hash_form or spec.hash_form),
    )
    project = roles.project_id if roles is not None else None

    def add_source(pipeline, tmp_dir: str):
        from transforms.sources.table.read import ReadTableUsers  # Beam: imported once the flags are checked

        return pipeline | "ReadTable" >> ReadTableUsers(files, options, NUM_PARTITIONS, tmp_dir, project)

    return run_migration(
        source_name="table",
        add_source=add_source,
        common=common,
        pipeline_args=pipeline_args,
        input_paths=[known_args.input],
        summary_lines=summary_lines,
        invariant=ta.invariant,
        extra_manifest={"input_files": [f.path for f in files], "formats": sorted({_kind(f) for f in files})},
        sync_source={"include_blocked": known_args.include_blocked, "realm": None},
        input_names={f.index: f.path for f in files},
        roles=roles,
        defined_roles=[] if roles is not None else None,
    )


def _hash_form(name: str | None) -> HashForm | None:
    """``--hash-form`` (or the mapping's ``hash_form``) → the form; a misspelling names the one meant."""
    from transforms.sources.table.hashes import HASH_FORM_NAMES, hash_form
    from transforms.sources.table.spec import did_you_mean

    try:
        return hash_form(name)
    except ValueError:
        raise ConfigError(
            f"--hash-form {name!r}: not a hash form{did_you_mean(name or '', HASH_FORM_NAMES)}; "
            f"the forms: {', '.join(HASH_FORM_NAMES)}"
        ) from None


def _kind(file: TableFile) -> str:
    return "csv" if file.csv else "json"


# The one description of this source (pipeline/sources.py registers it; the command line, the
# Flex Template, --state, the first look at input files and the report are built from it).
DESCRIPTION = SourceDescription(
    name="table",
    help="any table of users (CSV, NDJSON, JSON) → import bodies",
    add_arguments=add_arguments,
    run=run,
    summary_lines=summary_lines,
    invariant=ta.invariant,
    kind=KIND,
    flex=FlexPart(),
    files={"input": "--input", "mapping": "--mapping"},
    worker_files=("input",),  # the launcher reads the mapping and hands the workers its spec
)
