"""``migrate <source> --old-system-store=PATH``: the users written without a usable password, for the
companion to check against the old system while it still runs (docs/companion.md#old-systems).

Off by default. With the flag, once the bodies have their final names, every user they hold
without a password (no ``hashedPassword``, no ``password``) and without an identity provider to
sign in with, and every user on the reset list (``<stem>.passwordless.ndjson``: a hash ZITADEL
cannot verify, imported without it), goes to ``PATH`` (local or ``gs://``; a local file is mode
0600) as one companion store line of form ``old-system``::

    {"id": "<ZITADEL user id>", "form": "old-system", "login_names": ["ann", "ann@example.com"]}

``login_names``: the body's ``userName`` (what the old system knows the user by: Auth0's username,
else e-mail; Keycloak's username; Firebase's e-mail; Okta's login; a table's mapped login), then
its e-mail unless ``--email-fallback`` made it up; the companion sends the first to the old system
and finds a ``CreateSession`` by any. Nothing else: no hash, no profile. Users kept in the
Firebase ``--legacy-hashes`` store are not written again. The users written leave the reset list;
the manifest lists the file as ``old_system_store`` (path, count, sha256) and the summary says
how many went there. The file is never replaced (a companion may be serving it), and the users
must go in through the user service (``--api=user-v2``): the admin import makes a user without
password *initial*, whose password ZITADEL refuses to set (docs/companion.md#users-must-be-active).

Example::

    zitadel-beam migrate okta --org=1 --users=okta-users.csv --output=out/importBody.json \\
        --old-system-store=out/waiting.ndjson --push-url=https://x.zitadel.cloud --api=user-v2 ...
    zitadel-beam companion serve --store=out/waiting.ndjson --old-system=okta ...
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, BinaryIO

from transforms.common.errors import ConfigError

if TYPE_CHECKING:
    from transforms.output.manifest import ListedFile
    from transforms.sources.declaration import FlagParser

__all__ = [
    "FLAG",
    "FORM",
    "KeepWaiting",
    "add_argument",
    "waiting_keeper",
    "reset_list",
    "without",
    "exists",
]

FLAG = "--old-system-store"
FORM = "old-system"  # companion/service.py OLD_SYSTEM_FORM: checked against the old system

# (reset list, final body paths, the --legacy-hashes store or None) → (the reset list without the
# users written, the store written)
KeepWaiting = Callable[["ListedFile", Sequence[str], "ListedFile | None"], tuple["ListedFile", "ListedFile"]]


def add_argument(parser: FlagParser) -> None:
    parser.add_argument(
        FLAG,
        metavar="PATH",
        help="write the users written without a usable password (mode 0600) for zitadel-beam companion "
        "serve --old-system, which checks them against the old system at their first sign-in; they "
        "leave the reset list; push with --api=user-v2 (docs/companion.md#old-systems)",
    )


def exists(path: str) -> bool:
    if path.startswith("gs://"):
        from apache_beam.io.filesystems import FileSystems

        return bool(FileSystems.exists(path))
    import os

    return os.path.lexists(path)


def waiting_keeper(
    path: str | None,
    *,
    inputs: Sequence[str],
    outputs: Sequence[str],
    push_api: str | None,
    email_fallback: str | None,
    legacy_hashes: str | None = None,
) -> KeepWaiting | None:
    """What the run calls once the bodies have their final names; None without the flag. The
    flag is checked here, before the pipeline runs (ConfigError, one line)."""
    if not path:
        return None
    if push_api is not None and push_api != "user-v2":
        # ZITADEL's canUpdatePassword refuses a user in state initial, which is what the admin
        # import makes of a user without password: the companion could never set one.
        raise ConfigError(
            f"{FLAG}: the admin import creates these users (no password) in state initial, and ZITADEL "
            "refuses to set an initial user's password; push with --api=user-v2 "
            "(docs/companion.md#users-must-be-active)"
        )
    if path in inputs or path in outputs:
        raise ConfigError(f"{FLAG} {path!r} is an input or another output of this run")
    if path == legacy_hashes:
        raise ConfigError(f"{FLAG} and --legacy-hashes name the same file; give each its own")
    if exists(path):
        raise ConfigError(
            f"{FLAG} {path!r} exists: a store is never replaced (a companion may be serving it); "
            "choose another path"
        )

    def keep(
        passwordless: ListedFile, bodies: Sequence[str], legacy: ListedFile | None
    ) -> tuple[ListedFile, ListedFile]:
        from transforms.output.manifest import ListedFile

        if exists(path):  # written meanwhile by someone else: still never replaced
            raise ConfigError(f"{FLAG} {path!r} appeared during the run; it is not replaced")
        listed = reset_list(passwordless)
        on_list = {str(entry.get("id")) for _, entry in listed}
        skip = _ids(legacy.path) if legacy is not None and legacy.count else set()
        written, digest = _write(path, _waiting(bodies, on_list, skip, email_fallback))
        return without(passwordless, listed, written), ListedFile(path, len(written), digest)

    return keep


def _ids(path: str) -> set[str]:
    """The user ids of a store file (the ``--legacy-hashes`` store this run wrote)."""
    import orjson
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(path) as handle:
        return {str(orjson.loads(line)["id"]) for line in handle if line.strip()}


def _users(bodies: Sequence[str]) -> Iterator[dict]:
    """The human users of the bodies, in order."""
    import orjson
    from apache_beam.io.filesystems import FileSystems

    from transforms.output.body_parts import orgs_of, users_of

    for body_path in bodies:
        with FileSystems.open(body_path) as handle:
            body = orjson.loads(handle.read())
        for org in orgs_of(body):
            yield from (user for user in users_of(org) if isinstance(user, dict))


def _waiting(
    bodies: Sequence[str], on_list: set[str], skip: set[str], email_fallback: str | None
) -> Iterator[dict[str, object]]:
    """The store line of every user written without a usable password (see the module docstring)."""
    from transforms.mapping.ids import fallback_email

    for entry in _users(bodies):
        user = entry.get("user")
        user_id = entry.get("userId")
        if not isinstance(user, dict) or not isinstance(user_id, str) or not user_id or user_id in skip:
            continue
        if "hashedPassword" in user or "password" in user:
            continue
        if user.get("idps") and user_id not in on_list:
            continue  # signs in through its identity provider; no password to wait for
        user_name = user.get("userName")
        email = (user.get("email") or {}).get("email") if isinstance(user.get("email"), dict) else None
        if (
            email
            and email_fallback
            and email
            in (
                fallback_email(email_fallback, user_name, user_id),
                fallback_email(email_fallback, user_id, user_id),
            )
        ):
            email = None  # made up by --email-fallback: the old system does not know it
        names = [name for name in (user_name, email) if isinstance(name, str) and name]
        if not names:
            continue
        yield {"id": user_id, "form": FORM, "login_names": list(dict.fromkeys(names))}


def _write(path: str, records: Iterator[Mapping[str, object]]) -> tuple[set[str], str]:
    """The store lines, each user once; (ids written, sha256)."""
    import orjson

    from transforms.files.storage import open_private

    written: set[str] = set()
    digest = hashlib.sha256()
    with open_private(path, fsync=True) as out:
        lines: list[bytes] = []
        for record in records:
            user_id = str(record["id"])
            if user_id in written:
                continue
            lines.append(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
            written.add(user_id)
            if len(lines) == 4096:  # a write per line cost a quarter of the writer's time
                _flush(out, digest, lines)
        _flush(out, digest, lines)
    return written, digest.hexdigest()


def _flush(out: BinaryIO, digest: hashlib._Hash, lines: list[bytes]) -> None:
    chunk = b"".join(lines)
    out.write(chunk)
    digest.update(chunk)
    lines.clear()


def reset_list(passwordless: ListedFile) -> list[tuple[bytes, dict]]:
    """The reset list's lines, each with its JSON."""
    if not passwordless.count:
        return []
    import orjson
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(passwordless.path) as handle:
        return [(line, orjson.loads(line)) for line in handle if line.strip()]


def without(passwordless: ListedFile, listed: list[tuple[bytes, dict]], gone: set[str]) -> ListedFile:
    """The reset list without the users in ``gone`` (no file when none is left, as
    finalize_passwordless leaves it)."""
    from transforms.output.manifest import ListedFile

    rest = [line for line, entry in listed if str(entry.get("id")) not in gone]
    if len(rest) == len(listed):
        return passwordless
    if not rest:
        from apache_beam.io.filesystems import FileSystems

        FileSystems.delete([passwordless.path])
        return ListedFile(passwordless.path, 0, None)
    from transforms.files.storage import open_private

    digest = hashlib.sha256()
    with open_private(passwordless.path, fsync=True) as out:
        for line in rest:
            out.write(line)
            digest.update(line)
    return ListedFile(passwordless.path, len(rest), digest.hexdigest())
