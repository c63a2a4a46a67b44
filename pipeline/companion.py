"""``zitadel-beam companion serve|setup|status|import``: the trickle-migration companion (docs/companion.md).

Examples::

    zitadel-beam companion setup --url=https://x.zitadel.cloud --token-file=admin-pat \\
        --endpoint=https://companion.example.com/ --signing-key-file=companion-signing-key
    zitadel-beam companion serve --url=https://x.zitadel.cloud --key-file=user-manager.json \\
        --store=out/legacy-hashes.ndjson --signing-key-file=companion-signing-key --listen=0.0.0.0:8080
    zitadel-beam companion serve --url=https://x.zitadel.cloud --key-file=user-manager.json \
        --store=out/waiting.ndjson --signing-key-file=companion-signing-key \
        --old-system=keycloak --old-system-url=https://sso.example.com/realms/acme \
        --old-system-client-id=zitadel-companion --old-system-secret-file=keycloak-client-secret
    zitadel-beam companion status --store=out/legacy-hashes.ndjson
    zitadel-beam companion import --store=out/store.ndjson \\
        --file=out/legacy-hashes.ndjson --file=out/waiting.ndjson
    python -m pipeline.companion serve ...   # the same, without loading the other commands

The code is the ``companion`` package; this module only reads the flags.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import stat
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pipeline.options import add_credential_arguments, credentials_from_args
from transforms.common.durations import parse_duration
from transforms.common.errors import ConfigError

if TYPE_CHECKING:  # the service's modules load only when serve runs (Starlette)
    from companion.service import OldSystemCheck

__all__ = ["add_arguments", "run"]

DEFAULT_NAME = "zitadel-beam-companion"
KEY_ENV = "ZITADEL_COMPANION_SIGNING_KEY"
OLD_SECRET_ENV = "ZITADEL_COMPANION_OLD_SYSTEM_SECRET"
OLD_SYSTEMS = ("auth0", "keycloak", "cognito", "okta", "okta-oauth", "firebase", "http")
# Shares of the target's timeout (--timeout): the old system's call by default, at most, and the
# point after ZITADEL's call by which it must end (the rest is left to SetPassword).
OLD_SHARE, OLD_MAX_SHARE, OLD_DEADLINE_SHARE = 0.3, 0.5, 0.6


def _add_old_system_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("serve: the old system's sign-in API (docs/companion.md#old-systems)")
    group.add_argument("--old-system", choices=OLD_SYSTEMS, help="check users of form old-system against it")
    group.add_argument("--old-system-url", help="its base URL (https; plain http only to loopback)")
    group.add_argument("--old-system-client-id", help="the client (app client) the companion signs in with")
    group.add_argument(
        "--old-system-secret-file",
        help=f"file (mode 0600) with its client secret, Web API key or signing key (else env {OLD_SECRET_ENV})",
    )
    group.add_argument("--old-system-realm", help="auth0: the connection (password-realm grant)")
    group.add_argument(
        "--old-system-ca-file", help="CA bundle to trust instead of the system's (a private CA)"
    )
    group.add_argument(
        "--old-system-timeout",
        help="bound on its call, a Go duration (default 30%% of --timeout; at most half of it)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("serve", "setup", "status", "import"), help="what to do")
    parser.add_argument(
        "--file",
        dest="files",
        action="append",
        metavar="FILE",
        help="import: a file migrate --legacy-hashes or --old-system-store wrote (mode 0600), added to "
        "--store; give it once per file",
    )
    parser.add_argument(
        "--store",
        help="serve/status: the store (mode 0600) migrate --legacy-hashes or --old-system-store wrote, "
        "or companion import joined; import: the store the files join (created 0600)",
    )
    parser.add_argument(
        "--signing-key-file",
        action="append",
        help="serve: the target's signing key (give twice during a rotation; else env "
        "ZITADEL_COMPANION_SIGNING_KEY); setup: where it is written (0600)",
    )
    parser.add_argument("--url", help="serve/setup: the ZITADEL instance's base URL")
    parser.add_argument(
        "--listen", default="127.0.0.1:8080", help="serve: HOST:PORT (default 127.0.0.1:8080)"
    )
    parser.add_argument(
        "--max-failures",
        type=int,
        default=10,
        help="serve: failed legacy checks per user in 15 minutes before the user is no longer checked",
    )
    parser.add_argument("--endpoint", help="setup: the companion's public URL ZITADEL calls")
    parser.add_argument(
        "--name", default=DEFAULT_NAME, help=f"setup: the target's name (default {DEFAULT_NAME})"
    )
    parser.add_argument(
        "--timeout",
        default="10s",
        help="setup: the target's timeout, a Go duration (default 10s); serve: the same value, which "
        "bounds the old system's call",
    )
    parser.add_argument(
        "--interrupt-on-error",
        action="store_true",
        help="setup: fail the sign-in when the companion fails (default: ZITADEL goes on; docs/companion.md)",
    )
    parser.add_argument("--rotate-key", action="store_true", help="setup: make the existing target a new key")
    _add_old_system_arguments(parser)
    add_credential_arguments(parser)


def _need(args: argparse.Namespace, *names: str) -> None:
    for name in names:
        if not getattr(args, name.replace("-", "_")):
            raise ConfigError(f"companion {args.action} needs --{name}")


def _read_key(path: str, flag: str = "--signing-key-file", what: str = "signing key") -> bytes:
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        with open(path, "rb") as handle:
            key = handle.read(4097).strip()
    except OSError as err:
        raise ConfigError(f"{flag} {path}: cannot be read ({type(err).__name__})") from None
    if mode & 0o077:
        raise ConfigError(f"{flag} {path}: mode {mode:04o} lets others read it: chmod 600 {path}")
    if not key or len(key) > 4096 or b"\n" in key:
        raise ConfigError(f"{flag} {path}: not one {what} (not shown)")
    return key


def _old_system(args: argparse.Namespace, store_needs_it: int) -> OldSystemCheck | None:
    """The old system's check (companion.service.OldSystemCheck) the flags describe, or None."""
    from companion.old_system.settings import Settings, build
    from companion.service import OldSystemCheck

    if not args.old_system:
        if store_needs_it:
            raise ConfigError(
                f"--store: {store_needs_it} users wait for a check against the old system (form old-system): "
                "give --old-system (docs/companion.md#old-systems)"
            )
        return None
    try:
        target = parse_duration(args.timeout)
        bound = parse_duration(args.old_system_timeout) if args.old_system_timeout else OLD_SHARE * target
    except ValueError as err:
        raise ConfigError(f"--timeout/--old-system-timeout: {err}") from None
    if not 0 < bound <= OLD_MAX_SHARE * target:
        raise ConfigError(
            f"--old-system-timeout must be above 0 and at most half of --timeout ({args.timeout}): "
            "the rest is ZITADEL's SetPassword"
        )
    secret = None
    if args.old_system_secret_file:
        secret = _read_key(args.old_system_secret_file, "--old-system-secret-file", "secret").decode()
    elif os.environ.get(OLD_SECRET_ENV, "").strip():
        secret = os.environ[OLD_SECRET_ENV].strip()
    settings = Settings(
        kind=args.old_system, url=args.old_system_url, client_id=args.old_system_client_id, secret=secret,
        realm=args.old_system_realm, timeout=bound, ca_file=args.old_system_ca_file,
    )  # fmt: skip
    try:
        system = build(settings)
    except (ValueError, OSError) as err:  # OSError: an unreadable --old-system-ca-file
        raise ConfigError(
            str(err) if isinstance(err, ValueError) else f"--old-system-ca-file: {type(err).__name__}"
        ) from None
    return OldSystemCheck(system, budget=OLD_DEADLINE_SHARE * target)


def _listen(text: str) -> socket.socket:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"--listen {text!r}: expected HOST:PORT")
    try:
        sock = socket.create_server((host.strip("[]"), int(port)))
    except OSError as err:
        raise ConfigError(f"--listen {text}: cannot listen ({err.strerror})") from None
    return sock


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from companion.service import OLD_SYSTEM_FORM, Attempts, create_app
    from companion.signature import SignatureCheck
    from companion.store import Store, StoreError
    from companion.zitadel import ZitadelCalls, client_for

    _need(args, "store", "url")
    keys = [_read_key(path) for path in args.signing_key_file or []]
    if not keys:  # a platform's secret as an environment variable (Cloud Run --set-secrets)
        key = os.environ.get(KEY_ENV, "").strip().encode()
        if not key or b"\n" in key or len(key) > 4096:
            raise ConfigError(f"companion serve needs --signing-key-file (or env {KEY_ENV})")
        keys = [key]
    try:
        store = Store.open(args.store)
    except (StoreError, OSError) as err:
        raise ConfigError(f"--store: {err}") from None
    old_system = _old_system(args, store.count(OLD_SYSTEM_FORM))
    try:
        # With an old system in the check, ZITADEL's calls get a shorter bound each, so that the
        # whole check stays inside the target's timeout (docs/companion.md#old-systems).
        timeout = min(5.0, max(1.0, 0.15 * parse_duration(args.timeout))) if old_system else 5.0
        client = client_for(args.url, credentials_from_args(args), timeout=timeout)
    except ValueError as err:
        raise ConfigError(f"--url: {err}") from None
    app = create_app(
        store, SignatureCheck(*keys), ZitadelCalls(client), attempts=Attempts(args.max_failures),
        old_system=old_system,
    )  # fmt: skip
    sock = _listen(args.listen)
    host, port = sock.getsockname()[:2]
    logging.getLogger("companion").setLevel(logging.INFO)
    print(
        f"companion: {len(store)} users waiting; listening on http://{host}:{port}/",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(app, log_config=None, access_log=False, server_header=False, date_header=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def _setup(args: argparse.Namespace) -> int:
    from companion.setup_calls import SetupError, set_up
    from companion.zitadel import ZitadelCalls, client_for

    _need(args, "url", "endpoint", "signing-key-file")
    if len(args.signing_key_file) != 1:
        raise ConfigError("companion setup writes one --signing-key-file")
    try:
        client = client_for(args.url, credentials_from_args(args), timeout=30.0)
    except ValueError as err:
        raise ConfigError(f"--url: {err}") from None
    try:
        lines = set_up(
            ZitadelCalls(client),
            name=args.name,
            endpoint=args.endpoint,
            timeout=args.timeout,
            interrupt_on_error=args.interrupt_on_error,
            rotate_key=args.rotate_key,
            key_path=args.signing_key_file[0],
        )
    except SetupError as err:
        raise ConfigError(str(err)) from None
    for line in lines:
        print(line)
    return 0


def _status(args: argparse.Namespace) -> int:
    from companion.store import Store, StoreError

    _need(args, "store")
    try:
        status = Store.open(args.store).status()
    except (StoreError, OSError) as err:
        raise ConfigError(f"--store: {err}") from None
    print(f"waiting for their first sign-in: {status.waiting}")
    if status.old_system:
        print(f"  of which checked against the old system: {status.old_system}")
    print(f"migrated (password set in ZITADEL): {status.migrated}")
    if status.per_day:
        print("per day (UTC): moved, still waiting at the day's end, checks the old system did not answer")
    for day, count in status.per_day.items():
        print(
            f"  {day}: {count} moved, {status.waiting_after[day]} waiting, {status.unanswered[day]} unanswered"
        )
    return 0


def _import(args: argparse.Namespace) -> int:
    from companion.store import Store, StoreError, import_files

    _need(args, "store")
    if not args.files:
        raise ConfigError("companion import needs --file (a file to add to the store)")
    try:
        done = import_files(args.store, args.files)
        waiting = len(Store.open(args.store))
    except (StoreError, OSError) as err:
        raise ConfigError(f"companion import: {err}") from None
    for item in done:
        print(f"{item.path}: {item.added} users added, {item.already} already in the store")
    print(f"waiting for their first sign-in: {waiting} (restart a running companion serve to check them)")
    return 0


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    del pipeline_args
    if known_args.files and known_args.action != "import":
        raise ConfigError(f"companion {known_args.action} takes no --file (companion import does)")
    actions = {"serve": _serve, "setup": _setup, "status": _status, "import": _import}
    return actions[known_args.action](known_args)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pipeline.companion serve|setup|status``: this command alone. The same flags and
    one-line errors as ``zitadel-beam companion``, without loading the migration commands (and
    Apache Beam with them): a service starts in about a second; what the container runs."""
    from pipeline.cli import _Parser, unknown_flags

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = _Parser(prog="zitadel-beam companion", description=__doc__.splitlines()[0])
    add_arguments(parser)
    try:
        known_args, rest = parser.parse_known_args(argv)
        if rest:
            raise ConfigError(
                unknown_flags(rest, [f for f in parser._option_string_actions if f.startswith("--")])
            )
        return run(known_args, [])
    except ConfigError as err:
        print(f"zitadel-beam: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
