"""The role flags of ``migrate keycloak`` and ``migrate auth0`` (docs/roles.md): ``--project-id``,
``--create-project``, Keycloak's ``--client-project`` and ``--include-builtin-roles``, Auth0's
``--roles-from`` and ``--roles-file``."""

from __future__ import annotations

import argparse
import re

from pipeline.errors import ConfigError

__all__ = ["add_role_arguments", "role_settings"]

_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")


def add_role_arguments(parser: argparse.ArgumentParser, source: str) -> None:
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
    if source == "keycloak":
        group.add_argument(
            "--client-project",
            metavar="CLIENT=PROJECT_ID",
            action="append",
            default=[],
            help="repeatable: the client roles of Keycloak client CLIENT go to that existing "
            "project with their own names as keys (other clients' roles go to --project-id as "
            "CLIENT:ROLE)",
        )
        group.add_argument(
            "--include-builtin-roles",
            action="store_true",
            help="also carry Keycloak's built-in roles (offline_access, uma_authorization, "
            "default-roles-<realm>, the roles of account, realm-management, broker, ... clients)",
        )


def role_settings(args: argparse.Namespace):
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
