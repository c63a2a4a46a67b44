"""``zitadel-beam migrate firebase``: Firebase Authentication users → ZITADEL import bodies.

The source's command: its flags, its plan (the files it reads, the reader's options) and its
summary rows; the registry finds its ``DESCRIPTION`` and the shared run (``pipeline/``) does the rest.

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

from collections.abc import Mapping
from typing import TYPE_CHECKING

from transforms.common.accounting import link_lines, link_outcomes, users_lines
from transforms.common.counters import by_suffix
from transforms.common.errors import ConfigError
from transforms.common.reasons import Reason
from transforms.files.storage import check_gcs_reachable
from transforms.hashing.policy import OnUnsupportedHash
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
from transforms.sources.firebase import accounting as fb
from transforms.sources.firebase import legacy_hashes
from transforms.sources.firebase.source import KIND

if TYPE_CHECKING:
    from transforms.sources.firebase.files import FirebaseFile

__all__ = ["DESCRIPTION", "add_arguments", "plan", "summary_lines"]

# The summary's name of each reason a password was not imported.
_DROPPED = {
    Reason.UNSUPPORTED_HASH: "Firebase scrypt hash not importable, reset needed (unsupported-hash)",
    Reason.PLAINTEXT_PASSWORD: "emulator clear-text password not imported (plaintext-password)",
}


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--users",
        reads="firebase-users",
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
    file_flag(
        parser,
        "--hash-config",
        workers=False,
        metavar="FILE",
        default=None,
        help="the project's hash_config block (Firebase console, Users, password hash parameters): "
        "its algorithm, rounds and mem_cost are recorded in the summary and manifest, the keys "
        "only as given or not (ZITADEL cannot verify Firebase's scrypt either way: users with a "
        "hash come without a password and are listed, this command's --on-unsupported-hash "
        "default being import-without-password)",
    )
    parser.add_argument(
        "--allow-plaintext-passwords",
        action="store_true",
        help="a Firebase Auth Emulator export (passwordHash fakeHash:...:password=...) holds each "
        "password in clear text: import it as the user's password with passwordChangeRequired, for test "
        "tenants (default: the user comes without a password, listed for a reset, or is dead-lettered "
        "as plaintext-password with --on-unsupported-hash=dead-letter)",
    )
    legacy_hashes.add_argument(parser)


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows of Firebase's own counters (the shared run adds the shared ones)."""
    lines: list[SummaryLine] = [
        ("users read", counts.get(fb.USERS_READ, 0)),
        *users_lines(counts),
    ]
    for suffix, value in by_suffix(counts, fb.FILES):
        lines.append((f"  from {suffix} files", value))
    lines.append(("users without a password in the export", counts.get(fb.NO_PASSWORD, 0)))
    for suffix, value in by_suffix(counts, fb.PASSWORD_DROPPED):
        lines.append((_DROPPED.get(suffix, f"password not importable, reset needed ({suffix})"), value))
    if counts.get(fb.PLAINTEXT_IMPORTED):
        lines.append(
            ("emulator passwords imported as plaintext (change required)", counts[fb.PLAINTEXT_IMPORTED])
        )
    lines.append(("disabled users written (--include-disabled, --state)", counts.get(fb.DISABLED_WRITTEN, 0)))
    mfa = by_suffix(counts, fb.MFA)
    if mfa:
        lines.append(("second factors (mfaInfo), not carried", sum(v for _, v in mfa)))
        lines += [(f"  {kind}", value) for kind, value in mfa]
    links = {k: v for k, v in counts.items() if k.startswith(fb.IDP_LINKS)}
    if links:
        lines.append(("providerUserInfo entries (users mapped)", sum(links.values())))
        lines += link_lines(
            counts,
            fb.IDP_LINKS,
            link_outcomes("no usable rawId, not linked", ("firebase", "Firebase's own sign-in")),
        )
    return lines


def _hash_config_lines(recorded: Mapping[str, object]) -> list[SummaryLine]:
    """The summary's rows for ``--hash-config`` (never a key's value)."""
    keys = [name for name in ("signer_key", "salt_separator") if recorded.get(f"{name}_given")]
    return [
        ("--hash-config algorithm", str(recorded.get("algorithm"))),
        ("  rounds", str(recorded.get("rounds", "-"))),
        ("  mem_cost", str(recorded.get("mem_cost", "-"))),
        ("  keys given (values not recorded)", ", ".join(keys) or "none"),
    ]


def plan(flags: Flags, settings: SourceSettings) -> Plan:
    """Check the flags, read ``--hash-config``, match and look at the files; the reader's options."""
    from transforms.common.records import NUM_PARTITIONS
    from transforms.mapping.validate import ValidationOptions

    # Beam's FileSystems: imported once the flags are checked.
    from transforms.sources.firebase.files import FirebaseInputError, plan_firebase_files
    from transforms.sources.firebase.hash_config import HashConfigError, read_hash_config
    from transforms.sources.firebase.mapping import FirebaseOptions

    recorded: dict[str, object] | None = None
    if flags.hash_config:
        try:
            recorded = read_hash_config(flags.hash_config)
        except HashConfigError as err:
            raise ConfigError(f"--hash-config {flags.hash_config}: {err}") from None
    check_gcs_reachable([flags.users])  # planning reads each file's head: fail fast
    try:
        files = plan_firebase_files([flags.users])
    except FirebaseInputError as err:
        raise ConfigError(str(err)) from None
    keep_legacy = legacy_hashes.firebase_keeper(
        flags.legacy_hashes, files, flags.hash_config, [flags.users], settings.push_api
    )
    options = FirebaseOptions(
        include_disabled=settings.read_blocked,
        metadata=settings.metadata,
        on_unsupported_hash=settings.on_unsupported_hash,
        email_fallback=settings.email_fallback,
        validation=ValidationOptions(hash_policy=settings.hash_policy),
        idp_map=settings.idp_map,
        allow_plaintext_passwords=flags.allow_plaintext_passwords,
    )

    def read(pipeline, tmp_dir: str):
        from transforms.sources.firebase.read import (
            ReadFirebaseUsers,  # Beam: imported once the flags are checked
        )

        return pipeline | "ReadFirebase" >> ReadFirebaseUsers(files, options, NUM_PARTITIONS, tmp_dir)

    extra: dict[str, object] = {"firebase_files": [_listed(f) for f in files]}
    if recorded is not None:
        extra["firebase_hash_config"] = recorded
    return Plan(
        read=read,
        input_paths=[flags.users],
        input_names={f.index: f.path for f in files},
        manifest=extra,
        summary=(lambda counts: _hash_config_lines(recorded)) if recorded is not None else None,
        keep_legacy=keep_legacy,
    )


def _listed(file: FirebaseFile) -> dict[str, str]:
    return {"path": file.path, "format": file.format}


# The one description of this source (the registry finds it; the command line, the Flex
# Template, --state, the first look at input files and the report are built from it).
DESCRIPTION = SourceDescription(
    kind=KIND,
    help="Firebase Auth export (JSON or CSV) → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=fb.invariant,
    groups=frozenset({FlagGroup.HASHES, FlagGroup.LAYOUT}),
    idp_links=IdpLinks(
        what="providerUserInfo entries of providerId ALIAS (e.g. google.com, apple.com)",
        counters=fb.IDP_LINKS,
        # providerUserInfo providers that are Firebase's own sign-in: not identity providers.
        reserved={
            "password": "'password' is Firebase's own e-mail/password sign-in, not an identity provider",
            "phone": "'phone' is Firebase's own phone sign-in, not an identity provider",
        },
    ),
    # Firebase's hashes can never be verified by ZITADEL: by default such users come without a
    # password and are listed for a reset; --on-unsupported-hash=dead-letter refuses them.
    defaults={"on_unsupported_hash": OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD.value},
    # --legacy-hashes: its users must be pushed with --api=user-v2, which the template does not
    # offer (docs/companion.md#users-must-be-active): a template run keeps the reset list.
    flex=FlexPart(
        left_out=frozenset({"legacy_hashes", "allow_plaintext_passwords"}),
        labels={
            "users": "Firebase Auth export",
            "include_disabled": "Include disabled users",
            "hash_config": "Firebase hash config",
        },
    ),
)
