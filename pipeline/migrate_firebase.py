"""``zitadel-beam migrate firebase``: Firebase Authentication users → ZITADEL import bodies.

Examples (local runner)::

    firebase auth:export users.json --project my-project
    zitadel-beam migrate firebase --org=123456789 --users=users.json --output=out/importBody.json
    # CSV, several files, compressed, on GCS, on Dataflow:
    zitadel-beam migrate firebase --org=123456789 --users='gs://B/exports/users-*.csv.gz' \\
        --output=gs://B/out/importBody.json --runner=DataflowRunner --project=P --region=R \\
        --temp_location=gs://B/tmp --setup_file=./setup.py

Firebase's password hashes (its modified scrypt) cannot be verified by ZITADEL: users who have
one are imported without a password and listed in ``<stem>.passwordless.ndjson`` for reset
mails (``--on-unsupported-hash=dead-letter`` dead-letters them instead). docs/firebase.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pipeline import legacy_hashes
from pipeline.migrate import run_migration
from pipeline.migrate_options import add_common_arguments, common_args
from pipeline.options import add_idp_map_argument, parse_idp_map
from pipeline.report import SummaryLine, shared_summary_lines, users_lines
from pipeline.source_description import FlexPart, SourceDescription
from transforms.common.counters import by_suffix
from transforms.common.errors import ConfigError
from transforms.files.storage import check_gcs_reachable
from transforms.hashing.policy import OnUnsupportedHash
from transforms.sources.firebase import accounting as fb
from transforms.sources.firebase.source import KIND

if TYPE_CHECKING:
    from transforms.sources.firebase.files import FirebaseFile

__all__ = ["DESCRIPTION", "add_arguments", "run", "summary_lines"]

# providerUserInfo providers that are Firebase's own sign-in: not identity providers.
_RESERVED = {
    "password": "'password' is Firebase's own e-mail/password sign-in, not an identity provider",
    "phone": "'phone' is Firebase's own phone sign-in, not an identity provider",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--users",
        default="./users.json",
        help='firebase auth:export output, JSON ({"users": [...]}) or CSV: path or glob, local or '
        "gs://, .gz read as it is (default ./users.json)",
    )
    parser.add_argument(
        "--include-disabled",
        action="store_true",
        help="import users disabled in Firebase (default: dead-letter them as disabled; with "
        "--state they are read so that ZITADEL deactivates them)",
    )
    parser.add_argument(
        "--hash-config",
        metavar="FILE",
        default=None,
        help="the project's hash_config block (Firebase console, Users, password hash parameters): "
        "its algorithm, rounds and mem_cost are recorded in the summary and manifest, the keys "
        "only as given or not (ZITADEL cannot verify Firebase's scrypt either way: users with a "
        "hash come without a password and are listed, this command's --on-unsupported-hash "
        "default being import-without-password)",
    )
    add_idp_map_argument(parser, "providerUserInfo entries of providerId ALIAS (e.g. google.com, apple.com)")
    legacy_hashes.add_argument(parser)
    add_common_arguments(parser)
    # Firebase's hashes can never be verified by ZITADEL: by default such users come without a
    # password and are listed for a reset; --on-unsupported-hash=dead-letter refuses them.
    parser.set_defaults(on_unsupported_hash=OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD.value)


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    lines: list[SummaryLine] = [
        ("users read", counts.get(fb.USERS_READ, 0)),
        *users_lines(counts),
    ]
    for suffix, value in by_suffix(counts, fb.FILES):
        lines.append((f"  from {suffix} files", value))
    lines.append(("users without a password in the export", counts.get(fb.NO_PASSWORD, 0)))
    for suffix, value in by_suffix(counts, fb.PASSWORD_DROPPED):
        lines.append((f"Firebase scrypt hash not importable, reset needed ({suffix})", value))
    lines.append(("disabled users written (--include-disabled, --state)", counts.get(fb.DISABLED_WRITTEN, 0)))
    mfa = by_suffix(counts, fb.MFA)
    if mfa:
        lines.append(("second factors (mfaInfo), not carried", sum(v for _, v in mfa)))
        lines += [(f"  {kind}", value) for kind, value in mfa]
    links = {k: v for k, v in counts.items() if k.startswith(fb.IDP_LINKS)}
    if links:
        lines.append(("providerUserInfo entries (users mapped)", sum(links.values())))
        for outcome, label in (
            ("linked", "linked to IdP"),
            ("firebase", "Firebase's own sign-in"),
            ("unmapped", "no --idp-map, not linked"),
            ("invalid", "no usable rawId, not linked"),
        ):
            for suffix, value in by_suffix(dict(sorted(links.items())), f"{fb.IDP_LINKS}{outcome}."):
                lines.append((f"  {label}: {suffix}", value))
    return lines + shared_summary_lines(counts, fb.PREFIX)


def _hash_config_lines(recorded: Mapping[str, object]) -> list[SummaryLine]:
    """The summary's rows for ``--hash-config`` (never a key's value)."""
    keys = [name for name in ("signer_key", "salt_separator") if recorded.get(f"{name}_given")]
    return [
        ("--hash-config algorithm", str(recorded.get("algorithm"))),
        ("  rounds", str(recorded.get("rounds", "-"))),
        ("  mem_cost", str(recorded.get("mem_cost", "-"))),
        ("  keys given (values not recorded)", ", ".join(keys) or "none"),
    ]


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    from transforms.common.records import NUM_PARTITIONS
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources.firebase.mapping import FirebaseOptions

    common = common_args(known_args)
    idp_map = parse_idp_map(known_args.idp_map, _RESERVED)
    # Beam's FileSystems: imported once the flags are checked.
    from transforms.sources.firebase.files import FirebaseInputError, plan_firebase_files
    from transforms.sources.firebase.hash_config import HashConfigError, read_hash_config

    recorded: dict[str, object] | None = None
    if known_args.hash_config:
        try:
            recorded = read_hash_config(known_args.hash_config)
        except HashConfigError as err:
            raise ConfigError(f"--hash-config {known_args.hash_config}: {err}") from None
    check_gcs_reachable([known_args.users])  # planning reads each file's head: fail fast
    try:
        files = plan_firebase_files([known_args.users])
    except FirebaseInputError as err:
        raise ConfigError(str(err)) from None
    keep_legacy = legacy_hashes.firebase_keeper(
        known_args.legacy_hashes,
        files,
        known_args.hash_config,
        [known_args.users],
        common.push.api if common.push is not None else None,
    )
    options = FirebaseOptions(
        # With --state, disabled users are read so that those in ZITADEL can be deactivated; the
        # sync step still dead-letters disabled users who are new unless --include-disabled.
        include_disabled=known_args.include_disabled or bool(common.state),
        metadata=common.metadata,
        on_unsupported_hash=common.on_unsupported_hash,
        email_fallback=common.email_fallback,
        validation=ValidationOptions(hash_policy=common.hash_policy),
        idp_map=idp_map,
    )

    def add_source(pipeline, tmp_dir: str):
        from transforms.sources.firebase.read import (
            ReadFirebaseUsers,  # Beam: imported once the flags are checked
        )

        return pipeline | "ReadFirebase" >> ReadFirebaseUsers(files, options, NUM_PARTITIONS, tmp_dir)

    def lines(counts: Mapping[str, int]) -> list[SummaryLine]:
        return summary_lines(counts) + (_hash_config_lines(recorded) if recorded is not None else [])

    extra: dict[str, object] = {"firebase_files": [_listed(f) for f in files]}
    if recorded is not None:
        extra["firebase_hash_config"] = recorded
    return run_migration(
        source_name="firebase",
        add_source=add_source,
        common=common,
        pipeline_args=pipeline_args,
        input_paths=[known_args.users],
        summary_lines=lines,
        invariant=fb.invariant,
        extra_manifest=extra,
        sync_source={"include_blocked": known_args.include_disabled, "realm": None},
        input_names={f.index: f.path for f in files},
        keep_legacy=keep_legacy,
    )


def _listed(file: FirebaseFile) -> dict[str, str]:
    return {"path": file.path, "format": file.format}


# The one description of this source (pipeline/sources.py registers it; the command line, the
# Flex Template, --state, the first look at input files and the report are built from it).
DESCRIPTION = SourceDescription(
    name="firebase",
    help="Firebase Auth export (JSON or CSV) → import bodies",
    add_arguments=add_arguments,
    run=run,
    summary_lines=summary_lines,
    invariant=fb.invariant,
    kind=KIND,
    # --legacy-hashes: its users must be pushed with --api=user-v2, which the template does not
    # offer (docs/companion.md#users-must-be-active): a template run keeps the reset list.
    flex=FlexPart(left_out=frozenset({"legacy_hashes"})),
    files={"users": "--users", "hash_config": "--hash-config"},
    worker_files=("users",),
)
