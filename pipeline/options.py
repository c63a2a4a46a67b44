"""One definition of every flag several commands share: credentials, the GCS import, durations.

Commands add these groups to their parsers and turn the parsed values into typed objects here;
problems are ``ConfigError`` lines (exit 2). Credential flags name files, never secrets.

Example::

    add_credential_arguments(parser)
    credentials = credentials_from_args(parser.parse_args(argv))
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from transforms.common.durations import flag_duration, flag_seconds
from transforms.common.errors import ConfigError
from transforms.zitadel_api.credentials import CredentialError, Credentials, load_credentials

__all__ = [
    "add_credential_arguments",
    "credentials_from_args",
    "add_side_credential_arguments",
    "credentials_for",
    "add_export_selection_arguments",
    "add_idp_map_argument",
    "parse_idp_map",
    "add_gcs_arguments",
    "flag_duration",
    "flag_seconds",
]


def add_credential_arguments(parser: argparse.ArgumentParser) -> None:
    """The credential flags every command that talks to ZITADEL shares (never a plain secret)."""
    group = parser.add_argument_group(
        "credentials (one of; default: env ZITADEL_TOKEN or ZITADEL_KEY_FILE, a key file's path)"
    )
    group.add_argument("--token-file", help="file holding a personal access token or access token")
    group.add_argument("--client-id", help="service user client id (client credentials)")
    group.add_argument("--client-secret-file", help="file holding the client secret for --client-id")
    group.add_argument("--key-file", help="service-account JSON key file (JWT profile)")


def credentials_from_args(args: argparse.Namespace) -> Credentials:
    """The Credentials the flags (or env ZITADEL_TOKEN / ZITADEL_KEY_FILE) name; ConfigError if
    none or several, or a token file that is not one token (never quoted)."""
    try:
        return load_credentials(
            token_file=getattr(args, "token_file", None),
            client_id=getattr(args, "client_id", None),
            client_secret_file=getattr(args, "client_secret_file", None),
            key_file=getattr(args, "key_file", None),
        )
    except CredentialError as err:
        raise ConfigError(str(err)) from None


def add_side_credential_arguments(parser: argparse.ArgumentParser, side: str) -> None:
    """``add_credential_arguments`` for one of two instances (``--source-token-file``, ...)."""
    group = parser.add_argument_group(
        f"{side} credentials (one of; default env ZITADEL_{side.upper()}_TOKEN or "
        f"ZITADEL_{side.upper()}_KEY_FILE)"
    )
    group.add_argument(f"--{side}-token-file", help=f"file with a PAT / access token for the {side}")
    group.add_argument(f"--{side}-key-file", help=f"service-account JSON key file for the {side}")
    group.add_argument(f"--{side}-client-id", help=f"service user client id for the {side}")
    group.add_argument(f"--{side}-client-secret-file", help=f"file with that client's secret ({side})")


def credentials_for(
    args: argparse.Namespace, side: str, environ: Mapping[str, str] | None = None
) -> Credentials:
    """The credentials of one side; the env fallbacks are ZITADEL_SOURCE_TOKEN / ZITADEL_TARGET_TOKEN
    and ZITADEL_SOURCE_KEY_FILE / ZITADEL_TARGET_KEY_FILE."""
    environ = os.environ if environ is None else environ
    try:
        return load_credentials(
            token_file=getattr(args, f"{side}_token_file"),
            client_id=getattr(args, f"{side}_client_id"),
            client_secret_file=getattr(args, f"{side}_client_secret_file"),
            key_file=getattr(args, f"{side}_key_file"),
            environ={
                "ZITADEL_TOKEN": environ.get(f"ZITADEL_{side.upper()}_TOKEN", ""),
                "ZITADEL_KEY_FILE": environ.get(f"ZITADEL_{side.upper()}_KEY_FILE", ""),
            },
        )
    except CredentialError as err:
        text = (
            str(err)
            .replace("--", f"--{side}-")
            .replace("ZITADEL_TOKEN", f"ZITADEL_{side.upper()}_TOKEN")
            .replace("ZITADEL_KEY_FILE", f"ZITADEL_{side.upper()}_KEY_FILE")
        )
        raise ConfigError(f"{side}: {text}") from None


def add_export_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """Which orgs and secrets an export carries (``export`` and ``copy``)."""
    parser.add_argument("--org-ids", help="comma-separated org ids to export (default: every org)")
    parser.add_argument("--excluded-org-ids", help="comma-separated org ids to leave out")
    parser.add_argument("--with-passwords", action="store_true", help="include password hashes")
    parser.add_argument("--with-otp", action="store_true", help="include users' OTP secrets")


def add_gcs_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "import a document from GCS instead (dataOrgsv1Gcs; the server runs it detached)"
    )
    group.add_argument(
        "--gcs-document", help="gs://bucket/path of an export document (instead of --manifest)"
    )
    group.add_argument(
        "--service-account", help="service-account JSON key the *server* reads the bucket with"
    )
    group.add_argument(
        "--timeout", default="30m0s", help="server-side timeout of the detached import (default 30m0s)"
    )
    group.add_argument(
        "--wait",
        default="10m0s",
        help="with --verify: how long to poll events search for the users (default 10m0s)",
    )
    group.add_argument(
        "--poll-interval", type=float, default=10.0, help="seconds between verify polls (default 10)"
    )


def add_idp_map_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--idp-map ALIAS=IDP_ID`` (repeatable), shared by ``migrate auth0``, ``keycloak`` and ``firebase``."""
    parser.add_argument(
        "--idp-map",
        action="append",
        default=[],
        metavar="ALIAS=IDP_ID",
        help=f"link {what} to the ZITADEL IdP with id IDP_ID (repeatable); links of unmapped "
        "aliases are counted per alias in the summary and manifest (docs/fields-not-carried.md#idp-links---idp-map-aliasidp_id-auth0-keycloak-firebase)",
    )


def parse_idp_map(
    values: list[str], reserved: Mapping[str, str] | None = None
) -> tuple[tuple[str, str], ...]:
    """``["google-oauth2=123", ...]`` → ``(("google-oauth2", "123"), ...)``; ConfigError otherwise.

    ``reserved`` names aliases a source cannot map, with the reason shown to the user.
    """
    mapping: dict[str, str] = {}
    for value in values:
        alias, sep, idp_id = value.partition("=")
        alias, idp_id = alias.strip(), idp_id.strip()
        if not sep or not alias or not idp_id or len(idp_id) > 200:
            raise ConfigError(f"--idp-map {value!r}: expected ALIAS=IDP_ID, e.g. google-oauth2=123456789")
        if reserved and alias in reserved:
            raise ConfigError(f"--idp-map: {reserved[alias]}")
        if mapping.get(alias, idp_id) != idp_id:
            raise ConfigError(f"--idp-map: alias {alias!r} is mapped twice")
        mapping[alias] = idp_id
    return tuple(sorted(mapping.items()))
