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

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from transforms.common import counters
from transforms.common.accounting import link_lines, link_outcomes, users_lines
from transforms.common.counters import by_suffix
from transforms.common.errors import ConfigError
from transforms.files.storage import check_gcs_reachable
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
from transforms.sources.keycloak import accounting as kc
from transforms.sources.keycloak.source import KIND

if TYPE_CHECKING:  # imported in run() only: --help stays fast
    from transforms.sources.keycloak.realm_files import RealmSource

__all__ = ["DESCRIPTION", "add_arguments", "plan", "summary_lines"]


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--realm",
        reads="keycloak-realm",
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
    roles = parser.add_argument_group("roles and grants (docs/roles.md)")
    roles.add_argument(
        "--client-project",
        metavar="CLIENT=PROJECT_ID",
        action="append",
        default=[],
        help="repeatable: the client roles of Keycloak client CLIENT go to that existing "
        "project with their own names as keys (other clients' roles go to --project-id as "
        "CLIENT:ROLE)",
    )
    roles.add_argument(
        "--include-builtin-roles",
        action="store_true",
        help="also carry Keycloak's built-in roles (offline_access, uma_authorization, "
        "default-roles-<realm>, the roles of account, realm-management, broker, ... clients)",
    )


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows of Keycloak's own counters (the shared run adds the shared ones)."""
    lines: list[SummaryLine] = [
        ("users read", counts.get(kc.USERS_READ, 0)),
        *users_lines(counts),
        ("converted, by hash algorithm", ""),
    ]
    for suffix, value in by_suffix(counts, kc.WITH_PASSWORD):
        lines.append((f"  {suffix}", value))
    lines += [
        ("  no password", counts.get(kc.WITHOUT_PASSWORD, 0)),
        ("  federated (LDAP/Kerberos, no local hash)", counts.get(kc.FEDERATED, 0)),
    ]
    for suffix, value in by_suffix(counts, kc.PASSWORD_DROPPED):
        lines.append((f"  password dropped ({suffix})", value))
    for suffix, value in by_suffix(counts, kc.OTHER_CREDENTIALS):
        lines.append((f"other credentials not converted: {suffix}", value))
    # What did not arrive is listed by cause with the other fields not carried (pipeline/report.py).
    lines.append(("users written with OTP (otpCode)", counts.get(counters.USERS_WITH_OTP, 0)))
    lines.append(
        (
            "users with passwordChangeRequired (UPDATE_PASSWORD)",
            counts.get(kc.PASSWORD_CHANGE_REQUIRED, 0),
        )
    )
    links = {k: v for k, v in counts.items() if k.startswith(kc.IDP_LINKS)}
    if links:
        lines.append(("federatedIdentities (users written)", sum(links.values())))
        lines += link_lines(
            counts,
            kc.IDP_LINKS,
            link_outcomes("no usable userId, not linked"),
        )
    return lines


def plan(known_args: Flags, settings: SourceSettings) -> Plan:
    """Check the flags, plan the realm's files (and its roles); the reader's options."""
    from transforms.common.records import NUM_PARTITIONS
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources.keycloak.mapping import KeycloakOptions
    from transforms.sources.keycloak.realm_files import (  # Beam's FileSystems
        RealmInputError,
        plan_realm_sources,
    )

    check_gcs_reachable([known_args.realm])  # planning reads the realm: fail fast, not after ~120 s
    try:
        sources = plan_realm_sources(known_args.realm, known_args.realm_name, known_args.allow_missing_parts)
    except RealmInputError as err:
        raise ConfigError(f"--realm: {err}") from None
    options = KeycloakOptions(
        include_disabled=settings.read_blocked,
        metadata=settings.metadata,
        on_unsupported_hash=settings.on_unsupported_hash,
        allow_plaintext_passwords=known_args.allow_plaintext_passwords,
        email_fallback=settings.email_fallback,
        validation=ValidationOptions(
            allowed_hash_families=("bcrypt", "argon2", "pbkdf2"), hash_policy=settings.hash_policy
        ),
        idp_map=settings.idp_map,
    )
    model = None
    if settings.roles is not None:  # roles and groups → project roles and grants (docs/roles.md)
        from transforms.sources.keycloak.roles import load_keycloak_roles

        try:
            model = load_keycloak_roles(known_args.realm, known_args.realm_name, settings.roles)
        except ValueError as err:
            raise ConfigError(f"--realm: {err}") from None

    def read(pipeline, tmp_dir: str):
        from transforms.sources.keycloak.read import (
            ReadKeycloakUsers,  # Beam: imported once the flags are checked
        )

        return pipeline | "ReadKeycloak" >> ReadKeycloakUsers(
            sources, options, NUM_PARTITIONS, tmp_dir, roles=model
        )

    return Plan(
        read=read,
        input_paths=sorted({s.path for s in sources}),  # the files read (--realm may be a folder)
        input_names={s.index: s.path for s in sources},
        manifest={"realm_files": [s.path for s in sources]},
        realm=_realm_name(sources),
        defined_roles=model.defined_entries() if model is not None else None,
    )


def _realm_name(sources: Sequence[RealmSource]) -> str | None:
    """The realm's name when every file is of one realm (derived ids of dead-lettered users)."""
    names = {s.realm for s in sources}
    return names.pop() if len(names) == 1 and "" not in names else None


# The one description of this source (the registry finds it; the command line, the Flex
# Template, --state, the first look at input files and the report are built from it).
DESCRIPTION = SourceDescription(
    kind=KIND,
    help="Keycloak realm export → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=kc.invariant,
    groups=frozenset({FlagGroup.HASHES, FlagGroup.LAYOUT, FlagGroup.ROLES}),
    idp_links=IdpLinks(
        what="Keycloak federatedIdentities of identity-provider ALIAS (e.g. google, corp-saml)",
        counters=kc.IDP_LINKS,
    ),
    flex=FlexPart(
        left_out=frozenset({"allow_plaintext_passwords", "allow_missing_parts"}),
        labels={
            "realm": "Keycloak realm export",
            "realm_name": "Keycloak realm name",
            "include_disabled": "Include disabled users",
            "client_project": "Keycloak client projects",
            "include_builtin_roles": "Include Keycloak built-in roles",
        },
        patterns={
            "realm_name": "^[^\\s]{1,255}$",
            "client_project": "^[^=,\\s]+=[0-9]+(,[^=,\\s]+=[0-9]+)*$",
        },
    ),
)
