"""``zitadel-beam migrate keycloak``: a drop-in for ``zitadel-tools migrate keycloak``.

Examples (local runner)::

    zitadel-beam migrate keycloak --org=123456789 --realm=realm.json --output=out/importBody.json
    # a split export (kc.sh export --dir exports --users different_files), read in parallel:
    zitadel-beam migrate keycloak --org=123456789 --realm=exports/ --realm-name=acme \\
        --output=out/importBody.json --direct_running_mode=multi_processing --direct_num_workers=2
    # on Dataflow:
    zitadel-beam migrate keycloak --org=123456789 --realm='gs://B/exports/acme-*.json' \\
        --output=gs://B/out/importBody.json --runner=DataflowRunner --project=P --region=R \\
        --temp_location=gs://B/tmp --setup_file=./setup.py

Converts every password algorithm Keycloak uses today (pbkdf2 variants, argon2, bcrypt from
the keycloak-bcrypt extension). Argon2 hashes verify only where the ZITADEL instance enables the
argon2 verifier (self-hosted ``SystemDefaults.PasswordHasher.Verifiers``; ZITADEL Cloud disables it).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from pipeline.errors import ConfigError
from pipeline.migrate import run_migration
from pipeline.migrate_options import add_common_arguments, add_role_arguments, common_args, role_settings
from pipeline.options import add_idp_map_argument, parse_idp_map
from pipeline.report import count_prefix, shared_summary_lines
from transforms.files.storage import check_gcs_reachable

__all__ = ["add_arguments", "run", "summary_lines", "invariant"]

_SOURCE = "keycloak-user"  # transforms.sources.keycloak.read.SOURCE; not imported here to keep --help fast


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--realm",
        default="./realm.json",
        help="Keycloak realm export, or a directory/glob of a split export "
        "(<realm>-realm.json + <realm>-users-N.json); local or gs:// (default ./realm.json)",
    )
    parser.add_argument(
        "--realm-name",
        default=None,
        help="which realm to read when the input holds several (multi-realm array or directory)",
    )
    parser.add_argument(
        "--allow-missing-parts",
        action="store_true",
        help="read a split export whose <realm>-users-N.json numbering has a gap "
        "(default: refuse it, naming the missing part)",
    )
    parser.add_argument(
        "--include-disabled",
        action="store_true",
        help="import users disabled in Keycloak (the import API cannot carry the disabled state)",
    )
    parser.add_argument(
        "--allow-plaintext-passwords",
        action="store_true",
        help="import plaintext `value` password credentials as the user's password with "
        "passwordChangeRequired (default: dead-letter them as plaintext-password). "
        "ZITADEL's password complexity policy still applies on the server: a password "
        "it rejects fails that user's import",
    )
    add_idp_map_argument(
        parser, "Keycloak federatedIdentities of identity-provider ALIAS (e.g. google, corp-saml)"
    )
    add_common_arguments(parser)
    add_role_arguments(parser, "keycloak")


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """users read = written + dead-lettered; users converted = written + dropped as duplicates."""
    read = counts.get("keycloak.users_read", 0)
    # With --state, users already in ZITADEL are compared instead of written (docs/sync.md).
    written = counts.get("users_written", 0) + counts.get("sync.rows_not_imported", 0)
    dead = count_prefix(counts, f"dead_letter.{_SOURCE}.")
    converted = count_prefix(counts, "keycloak.with_password.") + counts.get("keycloak.without_password", 0)
    duplicates = count_prefix(counts, f"dead_letter.{_SOURCE}.duplicate-")
    rejected = counts.get("sync.rows_rejected", 0)  # disabled users new to ZITADEL (sync only)
    holds = read == written + dead and converted == written + duplicates + rejected
    text = (
        f"users read {read:,} = written {written:,} + dead-lettered {dead:,}; "
        f"converted {converted:,} = written {written:,} + duplicates {duplicates:,}"
    )
    return holds, text


def summary_lines(counts: Mapping[str, int]) -> list[tuple[str, Any]]:
    written = counts.get("users_written", 0)
    with_pw = counts.get("users_with_password", 0)
    lines: list[tuple[str, Any]] = [
        ("users read", counts.get("keycloak.users_read", 0)),
        ("users written", written),
        ("  with password", with_pw),
        ("  without password", written - with_pw),
        ("converted, by hash algorithm", ""),
    ]
    for name, value in counts.items():
        if name.startswith("keycloak.with_password."):
            lines.append((f"  {name.split('.', 2)[2]}", value))
    lines += [
        ("  no password", counts.get("keycloak.without_password", 0)),
        ("  federated (LDAP/Kerberos, no local hash)", counts.get("keycloak.federated", 0)),
    ]
    for name, value in counts.items():
        if name.startswith("keycloak.password_dropped."):
            lines.append((f"  password dropped ({name.split('.', 2)[2]})", value))
    for name, value in counts.items():
        if name.startswith("keycloak.other_credentials."):
            lines.append((f"other credentials not converted: {name.split('.', 2)[2]}", value))
    # What did not arrive is listed by cause with the other fields not carried (pipeline/report.py).
    lines.append(("users written with OTP (otpCode)", counts.get("users_with_otp", 0)))
    lines.append(
        (
            "users with passwordChangeRequired (UPDATE_PASSWORD)",
            counts.get("keycloak.password_change_required", 0),
        )
    )
    links = {k: v for k, v in counts.items() if k.startswith("keycloak.idp_links.")}
    if links:
        lines.append(("federatedIdentities (users written)", sum(links.values())))
        for outcome, label in (
            ("linked", "linked to IdP"),
            ("unmapped", "no --idp-map, not linked"),
            ("invalid", "no usable userId, not linked"),
        ):
            for name, value in sorted(links.items()):
                if name.startswith(f"keycloak.idp_links.{outcome}."):
                    lines.append((f"  {label}: {name.split('.', 3)[3]}", value))
    return lines + shared_summary_lines(counts, "keycloak")


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    from transforms.common.records import NUM_PARTITIONS
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources.keycloak.read import (
        KeycloakOptions,
        ReadKeycloakUsers,
        RealmInputError,
        plan_realm_sources,
    )

    common = common_args(known_args)
    idp_map = parse_idp_map(known_args.idp_map)
    check_gcs_reachable([known_args.realm])  # planning reads the realm: fail fast, not after ~120 s
    try:
        sources = plan_realm_sources(known_args.realm, known_args.realm_name, known_args.allow_missing_parts)
    except RealmInputError as err:
        raise ConfigError(f"--realm: {err}") from None
    options = KeycloakOptions(
        # With --state, disabled users are read so that those in ZITADEL can be deactivated; the
        # sync step still dead-letters disabled users who are new unless --include-disabled.
        include_disabled=known_args.include_disabled or bool(common.state),
        metadata=common.metadata,
        on_unsupported_hash=common.on_unsupported_hash,
        allow_plaintext_passwords=known_args.allow_plaintext_passwords,
        email_fallback=common.email_fallback,
        validation=ValidationOptions(
            allowed_hash_families=("bcrypt", "argon2", "pbkdf2"), hash_policy=common.hash_policy
        ),
        idp_map=idp_map,
    )

    roles_settings = role_settings(known_args)
    model = None
    if roles_settings is not None:  # roles and groups → project roles and grants (docs/roles.md)
        from transforms.sources.keycloak.read import load_keycloak_roles

        try:
            model = load_keycloak_roles(known_args.realm, known_args.realm_name, roles_settings)
        except ValueError as err:
            raise ConfigError(f"--realm: {err}") from None

    def add_source(pipeline, tmp_dir: str):
        return pipeline | "ReadKeycloak" >> ReadKeycloakUsers(
            sources, options, NUM_PARTITIONS, tmp_dir, roles=model
        )

    return run_migration(
        source_name="keycloak",
        add_source=add_source,
        common=common,
        pipeline_args=pipeline_args,
        input_paths=[known_args.realm],
        summary_lines=summary_lines,
        invariant=invariant,
        extra_manifest={"realm_files": [s.path for s in sources]},
        sync_source={"include_blocked": known_args.include_disabled, "realm": _realm_name(sources)},
        input_names={s.index: s.path for s in sources},
        roles=roles_settings,
        defined_roles=model.defined_entries() if model is not None else None,
    )


def _realm_name(sources) -> str | None:
    """The realm's name when every file is of one realm (derived ids of dead-lettered users)."""
    names = {s.realm for s in sources}
    return names.pop() if len(names) == 1 and "" not in names else None
