"""The flags every ``migrate`` command shares, checked into one keyword-only ``CommonArgs``.

For each source's ``migrate <name>`` (``pipeline/source_command.py``; a source of one document
takes the output flags only): where the bodies go and how big they are, which password hashes the
target accepts (docs/password-hashes.md), scheduled syncs and their removal limit (docs/sync.md),
pushing straight from the pipeline, and the role flags (docs/roles.md). A source gets the groups
of flags it declares (``FlagGroup``), no others.

Example::

    add_common_arguments(parser, frozenset({FlagGroup.HASHES, FlagGroup.LAYOUT}))
    known_args, pipeline_args = parser.parse_known_args(argv)
    common = common_args(known_args)     # ConfigError (one line) on a bad flag
    settings = role_settings(known_args)  # None without --project-id
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from transforms.common.durations import normalise_duration
from transforms.common.errors import ConfigError
from transforms.hashing.policy import ON_UNSUPPORTED_HASH, OnUnsupportedHash
from transforms.sources.declaration import FlagGroup
from transforms.sync.change_records import ON_REMOVED, OnRemoved

if TYPE_CHECKING:  # imported where used: the launcher starts without them
    from pipeline.push_entry import PushSettings
    from transforms.hashing.policy import HashPolicy
    from transforms.mapping.roles import RoleSettings
    from transforms.zitadel_api.client import Credentials

__all__ = [
    "MAX_BATCH_SIZE",
    "batch_size_type",
    "add_output_arguments",
    "add_break_lock_argument",
    "add_hash_arguments",
    "hash_policy_from_args",
    "add_sync_arguments",
    "removal_limit",
    "add_common_arguments",
    "CommonArgs",
    "common_args",
    "add_role_arguments",
    "role_settings",
]


def add_output_arguments(
    parser: argparse.ArgumentParser,
    *,
    batch_help: str = "at most this many users per body (default 5000, about what fits in 5 minutes)",
    dead_letter_help: str = "NDJSON file for rejected records (default <stem>.dead-letter.ndjson)",
    multiline_help: str | None = "pretty-print the bodies (input layout is detected)",
) -> None:
    """The flags of every command that writes import bodies: where, how big, how strict
    (``--multiline`` unless ``multiline_help`` is None)."""
    parser.add_argument(
        "--output",
        default="./importBody.json",
        help="import body path (local or gs://); several bodies are written as "
        "<stem>-00001-of-0000N<ext> beside it (default ./importBody.json)",
    )
    parser.add_argument(
        "--timeout",
        default="5m0s",
        help="timeout written into each body, a Go duration (default 5m0s, the hosted limit)",
    )
    if multiline_help is not None:
        parser.add_argument("--multiline", action="store_true", help=multiline_help)
    parser.add_argument("--batch-size", type=batch_size_type, default=5000, help=batch_help)
    parser.add_argument("--dead-letter", default=None, help=dead_letter_help)
    parser.add_argument("--strict", action="store_true", help="exit 1 if anything was dead-lettered")
    add_break_lock_argument(parser)


MAX_BATCH_SIZE = 5000  # users per body: what the hosted endpoint imports within its 5-minute timeout


def batch_size_type(text: str) -> int:
    """``--batch-size``: an integer in 1...MAX_BATCH_SIZE (argparse turns the error into one line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (1...{MAX_BATCH_SIZE})") from None
    if not 1 <= value <= MAX_BATCH_SIZE:
        raise argparse.ArgumentTypeError(
            f"{text} is outside 1...{MAX_BATCH_SIZE} (users per body; the hosted import endpoint "
            f"takes about {MAX_BATCH_SIZE} within its 5-minute timeout, docs/zitadel-import-api.md)"
        )
    return value


def add_break_lock_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--break-lock",
        action="store_true",
        help="remove another run's lock on this output (only when that run is certainly gone)",
    )


def add_hash_arguments(parser: argparse.ArgumentParser) -> None:
    """What the target ZITADEL accepts as password hashes, and what to do with the rest."""
    group = parser.add_argument_group("password hashes (docs/password-hashes.md)")
    group.add_argument(
        "--zitadel-config",
        metavar="FILE",
        default=None,
        help="the target ZITADEL's config YAML: SystemDefaults.PasswordHasher.Verifiers and "
        ".Limits decide which hashes import (default: ZITADEL's defaults, bcrypt only); "
        "ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER_* variables apply on top",
    )
    group.add_argument(
        "--on-unsupported-hash",
        choices=ON_UNSUPPORTED_HASH,
        default=OnUnsupportedHash.DEAD_LETTER.value,
        help="a user whose hash the target cannot verify (unsupported algorithm, verifier not "
        "enabled, parameter out of limits): dead-letter them, or import them without a password and "
        "list them in <stem>.passwordless.ndjson for reset mails (default for this command: %(default)s)",
    )
    group.add_argument(
        "--bcrypt-min-cost",
        type=int,
        default=None,
        help="lowest bcrypt cost the server accepts; overrides Limits.Bcrypt.MinCost (default 10)",
    )
    group.add_argument(
        "--bcrypt-max-cost",
        type=int,
        default=None,
        help="highest bcrypt cost the server accepts; overrides Limits.Bcrypt.MaxCost (default 16)",
    )


def hash_policy_from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> HashPolicy:
    """--zitadel-config + environment + --bcrypt-*-cost → the HashPolicy; ConfigError on problems."""
    import os

    from transforms.hashing.policy import load_policy

    # A source without FlagGroup.HASHES has none of these flags: ZITADEL's defaults.
    policy = load_policy(getattr(args, "zitadel_config", None), os.environ if environ is None else environ)
    overrides = {}
    if getattr(args, "bcrypt_min_cost", None) is not None:
        overrides["Bcrypt_MinCost"] = args.bcrypt_min_cost
    if getattr(args, "bcrypt_max_cost", None) is not None:
        overrides["Bcrypt_MaxCost"] = args.bcrypt_max_cost
    policy = policy.with_limits(**overrides) if overrides else policy
    if not 4 <= policy.limit("Bcrypt.MinCost") <= policy.limit("Bcrypt.MaxCost") <= 31:
        raise ConfigError("--bcrypt-min-cost/--bcrypt-max-cost must satisfy 4 <= min <= max <= 31")
    return policy


def add_sync_arguments(parser: argparse.ArgumentParser) -> None:
    """Scheduled runs: compare with the state of the previous runs (docs/sync.md)."""
    group = parser.add_argument_group("scheduled sync (docs/sync.md)")
    group.add_argument(
        "--state",
        metavar="PATH",
        default=None,
        help="sync state folder (local or gs://): users already in ZITADEL are compared with what "
        "the state says the target holds; new users go to bodies, changed, blocked and removed "
        "users to <stem>.changes-*.ndjson, unchanged users nowhere. push commits the state",
    )
    group.add_argument(
        "--on-removed",
        choices=ON_REMOVED,
        default=OnRemoved.REPORT.value,
        help="users in the state but gone from the export: list them (default), deactivate or "
        "delete them in ZITADEL",
    )
    group.add_argument(
        "--max-removals",
        metavar="N|P%",
        default="5%",
        help="refuse a run that would deactivate or delete more users gone from the export than "
        "this (a count, or a percentage of the users in the state; default 5%%): a truncated or "
        "wrong export",
    )
    group.add_argument(
        "--max-blocks",
        metavar="N|P%",
        default="5%",
        help="refuse a run that would deactivate or lock more users blocked at the source than this "
        "(a count, or a percentage of the users in the state; default 5%%): a wrong mapping of "
        "the blocked flag",
    )


def removal_limit(text: str, users_in_state: int, flag: str = "--max-removals") -> int:
    """``--max-removals`` (or ``--max-blocks``): ``N`` or ``P%`` of the users in the state (rounded up)."""
    value = (text or "").strip()
    try:
        if value.endswith("%"):
            percent = float(value[:-1])
            if not 0 <= percent <= 100:
                raise ValueError
            # Rounded up: 5% of a 4-user state still allows one (a 0 limit would refuse any block).
            return math.ceil(users_in_state * percent / 100)
        count = int(value)
        if count < 0:
            raise ValueError
        return count
    except ValueError:
        raise ConfigError(f"{flag} {text!r}: give a count (e.g. 50) or a percentage (e.g. 5%)") from None


_ALL_GROUPS = frozenset(FlagGroup)


def add_common_arguments(parser: argparse.ArgumentParser, groups: frozenset[FlagGroup] = _ALL_GROUPS) -> None:
    """The flags every user migrate command shares (zitadel-tools' plus ours): of the optional
    groups only those in ``groups`` (roles are :func:`add_role_arguments`). ``--state`` is every
    source's: one that cannot sync refuses it naming those that can."""
    parser.add_argument("--org", required=True, help="id of the ZITADEL organization the users go to")
    if FlagGroup.LAYOUT in groups:
        add_output_arguments(parser)
    else:
        add_output_arguments(parser, multiline_help=None)
    parser.add_argument("--metadata", action="store_true", help="carry source metadata into userMetadata")
    parser.add_argument(
        "--email-fallback",
        metavar="TEMPLATE",
        default=None,
        help="address for users without e-mail, e.g. '{username}@users.example.com' "
        "(placeholders {username}, {id}); always imported unverified (default: "
        "such users are dead letters)",
    )
    if FlagGroup.HASHES in groups:
        add_hash_arguments(parser)
    add_sync_arguments(parser)
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="a compressed input that ends early or is damaged: keep what was read and exit 0 "
        "(default: the records before the damage are written, but the run exits 1)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no live progress line on stderr (shown only on a terminal)"
    )
    push = parser.add_argument_group("push straight from the pipeline (see `zitadel-beam push`)")
    push.add_argument("--push-url", help="ZITADEL base URL: push the bodies when they are written")
    from pipeline.options import add_credential_arguments
    from pipeline.push import add_api_argument
    from pipeline.push_entry import add_pace_arguments

    add_pace_arguments(push, prefix="push-")  # push's own flags and defaults (pipeline/push_entry.py)
    push.add_argument(
        "--push-verify", action="store_true", help="verify through events search after the push"
    )
    add_api_argument(push)
    add_credential_arguments(parser)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CommonArgs:
    """The shared flags of a migrate run, checked (``common_args``); built by keyword only."""

    org_id: str
    output: str
    timeout: str  # a Go duration, normalised (transforms/common/durations.py)
    multiline: bool
    batch_size: int
    dead_letter: str | None
    strict: bool
    metadata: bool
    bcrypt_min_cost: int
    bcrypt_max_cost: int
    push_url: str | None = None
    push: PushSettings | None = None  # given whenever push_url is: push's settings (pipeline/push_entry.py)
    push_credentials: Credentials | None = None  # given whenever push_url is
    hash_policy: HashPolicy | None = None
    on_unsupported_hash: OnUnsupportedHash = OnUnsupportedHash.DEAD_LETTER
    email_fallback: str | None = None  # --email-fallback TEMPLATE (transforms/mapping/ids.py)
    state: str | None = None  # --state PATH (docs/sync.md)
    on_removed: OnRemoved = OnRemoved.REPORT
    max_removals: str = "5%"
    max_blocks: str = "5%"
    break_lock: bool = False
    allow_partial: bool = False  # --allow-partial: a cut input file does not fail the run
    quiet: bool = False  # --quiet: no live line (pipeline/migrate_progress.py)


def common_args(args: argparse.Namespace) -> CommonArgs:
    """Check the shared flags; every problem is one ConfigError line."""
    org = (args.org or "").strip()
    if not org or not re.fullmatch(r"[A-Za-z0-9_-]{1,200}", org):
        raise ConfigError(f"--org {args.org!r} is not an organization id (digits, e.g. --org=123456789)")
    try:
        timeout = normalise_duration(args.timeout)
    except ValueError as err:
        raise ConfigError(f"--timeout: {err}") from None
    policy = hash_policy_from_args(args)
    fallback = getattr(args, "email_fallback", None)
    if fallback is not None:
        from transforms.mapping.ids import check_template

        problem = check_template(fallback)
        if problem is not None:
            raise ConfigError(problem)
    if not args.output or args.output.endswith("/"):
        raise ConfigError(f"--output {args.output!r} must name a file")
    if getattr(args, "state", None) is not None:
        removal_limit(args.max_removals, 0)  # the syntax, now; the limit needs the state's size
        removal_limit(args.max_blocks, 0, "--max-blocks")
    return CommonArgs(
        org_id=org,
        output=args.output,
        timeout=timeout,
        multiline=bool(getattr(args, "multiline", False)),
        batch_size=args.batch_size,
        dead_letter=args.dead_letter,
        strict=args.strict,
        metadata=args.metadata,
        bcrypt_min_cost=policy.limit("Bcrypt.MinCost"),
        bcrypt_max_cost=policy.limit("Bcrypt.MaxCost"),
        push_url=args.push_url,
        push=_push_settings(args, policy),
        push_credentials=_push_credentials(args),
        hash_policy=policy,
        on_unsupported_hash=OnUnsupportedHash(
            getattr(args, "on_unsupported_hash", OnUnsupportedHash.DEAD_LETTER.value)
        ),
        email_fallback=fallback,
        state=getattr(args, "state", None),
        on_removed=OnRemoved(getattr(args, "on_removed", OnRemoved.REPORT)),
        max_removals=getattr(args, "max_removals", "5%"),
        max_blocks=getattr(args, "max_blocks", "5%"),
        break_lock=bool(getattr(args, "break_lock", False)),
        allow_partial=getattr(args, "allow_partial", False),
        quiet=bool(getattr(args, "quiet", False)),
    )


def _push_settings(args: argparse.Namespace, policy: HashPolicy) -> PushSettings | None:
    """With ``--push-url``: push's settings from the ``--push-*`` flags, checked (no call is made
    here: migrate probes the target once, before its pipeline runs)."""
    if not args.push_url:
        return None
    from pipeline.push_entry import push_settings

    return push_settings(
        args,
        "push-",
        verify=args.push_verify,
        progress=not getattr(args, "quiet", False),
        break_lock=bool(getattr(args, "break_lock", False)),
        hash_policy=policy,
    )


def _push_credentials(args: argparse.Namespace) -> Credentials | None:
    """With ``--push-url``: the credentials (read from their file or the environment; no call)."""
    if not args.push_url:
        return None
    from pipeline.options import credentials_from_args

    return credentials_from_args(args)


# --------------------------------------------------------------------------- role flags

_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")


def add_role_arguments(parser: argparse.ArgumentParser) -> None:
    """``--project-id`` and ``--create-project`` (``FlagGroup.ROLES``); a source adds its own role
    flags to a group of the same title (Auth0's ``--roles-from``, Keycloak's ``--client-project``)."""
    group = parser.add_argument_group("roles and grants (docs/roles.md)")
    group.add_argument(
        "--project-id",
        metavar="ID",
        default=None,
        help="ZITADEL project that receives the roles: an authorizations body (listed first) adds "
        "every role, each user body grants its users their roles (default: roles are counted, "
        "not carried)",
    )
    group.add_argument(
        "--create-project",
        metavar="NAME",
        default=None,
        help="the authorizations body also creates the project (id from --project-id) with this "
        "name; without it, push checks that the project exists before it sends anything",
    )


def role_settings(args: argparse.Namespace) -> RoleSettings | None:
    """The run's ``roles.RoleSettings``, or None without ``--project-id``; ConfigError otherwise."""
    from transforms.mapping.roles import MAX_KEY, RoleSettings

    project = args.project_id
    clients: dict[str, str] = {}
    for value in getattr(args, "client_project", None) or []:
        client, sep, target = value.partition("=")
        client, target = client.strip(), target.strip()
        if not sep or not client or not _ID.fullmatch(target):
            raise ConfigError(f"--client-project {value!r}: expected CLIENT=PROJECT_ID, e.g. my-app=2873423")
        if clients.get(client, target) != target:
            raise ConfigError(f"--client-project: client {client!r} is mapped twice")
        clients[client] = target
    if project is None:
        for flag, given in (
            ("--create-project", args.create_project),
            ("--client-project", clients),
            ("--include-builtin-roles", getattr(args, "include_builtin_roles", False)),
            ("--roles-from", getattr(args, "roles_from", None)),
            ("--roles-file", getattr(args, "roles_file", None)),
        ):
            if given:
                raise ConfigError(f"{flag} needs --project-id (the project that receives the roles)")
        return None
    if not _ID.fullmatch(project):
        raise ConfigError(f"--project-id {project!r} is not a project id (digits, e.g. --project-id=2873423)")
    name = args.create_project
    if name is not None and not 1 <= len(name.strip()) <= MAX_KEY:
        raise ConfigError("--create-project NAME must have 1 to 200 characters")
    return RoleSettings(
        project,
        name.strip() if name is not None else None,
        tuple(sorted(clients.items())),
        bool(getattr(args, "include_builtin_roles", False)),
    )
