"""``migrate firebase --legacy-hashes=PATH``: keep the hashes ZITADEL cannot verify for the companion.

Off by default. With the flag, after the pipeline has written the bodies, the users written without
a password because their hash cannot be imported (the run's passwordless list, reason
``unsupported-hash``) are looked up again in the export, and each one's id, form, hash and the
project's hash parameters (``--hash-config``, secrets included) go to ``PATH`` (local or ``gs://``;
a local file is mode 0600) in the companion's store format (docs/companion.md#store). Those users
leave the reset list (``<stem>.passwordless.ndjson``): they will sign in with their old password
through ``zitadel-beam companion``. A user whose export record has no salt stays on the list.

The store is never replaced: a companion may be serving it and its ``.removed`` list. The manifest
lists it as ``legacy_hashes`` (path, count, sha256), the summary names it. The users must go in
through the user service (``--api=user-v2``): the admin import makes a user without password
*initial*, and ZITADEL refuses to set an initial user's password (docs/companion.md).

Example::

    zitadel-beam migrate firebase --org=1 --users=users.json --hash-config=hash_config.txt \\
        --legacy-hashes=out/legacy-hashes.ndjson --output=out/importBody.json
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from transforms.common.errors import ConfigError
from transforms.output.manifest import ListedFile
from transforms.output.waiting import exists, reset_list, without
from transforms.sources.declaration import FlagParser, KeepLegacy

if TYPE_CHECKING:
    from transforms.sources.firebase.files import FirebaseFile

__all__ = ["KeepLegacy", "add_argument", "firebase_keeper"]

UNSUPPORTED = "unsupported-hash"


def add_argument(parser: FlagParser) -> None:
    parser.add_argument(
        "--legacy-hashes",
        metavar="PATH",
        help="keep the Firebase scrypt hashes (with --hash-config's parameters) in a 0600 store for "
        "zitadel-beam companion; those users leave the reset list (docs/companion.md)",
    )


def _firebase_params(values: Mapping[str, str]) -> dict[str, object]:
    if values.get("algorithm", "").strip() != "SCRYPT":
        raise ConfigError(
            "--legacy-hashes: --hash-config's algorithm is not SCRYPT; the companion checks SCRYPT"
        )
    params: dict[str, object] = {}
    for key, name in (("base64_signer_key", "signer_key"), ("base64_salt_separator", "salt_separator")):
        if not values.get(key, "").strip():
            raise ConfigError(
                f"--legacy-hashes: --hash-config has no {key}; the companion cannot check without it"
            )
        params[name] = values[key].strip()
    for key in ("rounds", "mem_cost"):
        if not values.get(key, "").strip().isdigit():
            raise ConfigError(f"--legacy-hashes: --hash-config has no {key}")
        params[key] = int(values[key])
    return params


def _users(files: Sequence[FirebaseFile]) -> Iterator[Mapping[str, object]]:
    """The export's users again, as the reader reads them; a damaged file ends its own part (the
    pipeline has already dead-lettered what follows the damage)."""
    import csv

    import ijson

    from transforms.sources.firebase.files import iter_csv_users, iter_json_users
    from transforms.sources.input_stream import DepthGuard, InputReadError, open_input

    for source in files:
        with open_input(source.path) as handle:
            users = iter_json_users(DepthGuard(handle)) if source.format == "json" else iter_csv_users(handle)
            try:
                for user in users:
                    if isinstance(user, Mapping):
                        yield user
            except (InputReadError, ijson.JSONError, csv.Error, ValueError):
                continue


def firebase_keeper(
    path: str | None,
    files: Sequence[FirebaseFile],
    hash_config: str | None,
    inputs: Sequence[str],
    push_api: str | None,
) -> KeepLegacy | None:
    """What ``run_migration`` calls when the run is finished; None without ``--legacy-hashes``.
    The flags are checked here, before the pipeline runs (ConfigError, one line, no value).
    ``push_api``: the ``--api`` of ``--push-url`` (None without it): the path is chosen by one
    probe before the pipeline runs, so only ``user-v2`` is certain to create active users."""
    if not path:
        return None
    if push_api is not None and push_api != "user-v2":
        # ZITADEL's canUpdatePassword refuses a user in state initial, which is what the admin
        # import makes of a user without password: the companion could never set one.
        raise ConfigError(
            "--legacy-hashes: the admin import creates these users (no password) in state initial, and "
            "ZITADEL refuses to set an initial user's password; push with --api=user-v2 "
            "(docs/companion.md#users-must-be-active)"
        )
    if not hash_config:
        raise ConfigError("--legacy-hashes needs --hash-config (the project's scrypt parameters)")
    if path in inputs or path == hash_config:
        raise ConfigError(f"--legacy-hashes {path!r} is an input of this run")
    if exists(path):
        raise ConfigError(
            f"--legacy-hashes {path!r} exists: a store is never replaced (a companion may be serving it); "
            "choose another path"
        )
    from transforms.sources.firebase.hash_config import HashConfigError, read_hash_config_values

    try:
        params = _firebase_params(read_hash_config_values(hash_config))
    except HashConfigError as err:
        raise ConfigError(f"--hash-config {hash_config}: {err}") from None

    def keep(passwordless: ListedFile) -> tuple[ListedFile, ListedFile]:
        # The outputs are already final: the store is one more, the list is rewritten.
        if exists(path):  # written meanwhile by someone else: still never replaced
            raise ConfigError(f"--legacy-hashes {path!r} appeared during the run; it is not replaced")
        listed = reset_list(passwordless)
        wanted = {str(entry["id"]): entry for _, entry in listed if entry.get("reason") == UNSUPPORTED}
        kept, digest = _write_store(path, files if wanted else [], wanted, params)
        return without(passwordless, listed, kept), ListedFile(path, len(kept), digest)

    return keep


def _write_store(
    path: str, files: Sequence[FirebaseFile], wanted: Mapping[str, dict], params: Mapping[str, object]
) -> tuple[set[str], str]:
    """One store line per wanted user the export holds a hash and a salt for; (ids, sha256)."""
    import orjson

    from transforms.files.storage import open_private

    kept: set[str] = set()
    digest = hashlib.sha256()
    with open_private(path, fsync=True) as out:
        for user in _users(files):
            user_id, hash_value, salt = user.get("localId"), user.get("passwordHash"), user.get("salt")
            if not isinstance(user_id, str) or user_id not in wanted or user_id in kept:
                continue
            if not isinstance(hash_value, str) or not isinstance(salt, str) or not hash_value or not salt:
                continue  # no salt: cannot be checked, the user stays on the reset list
            names = [n for n in (wanted[user_id].get("email"), user.get("email")) if isinstance(n, str) and n]
            record = {
                "id": user_id,
                "form": "firebase-scrypt",
                "hash": hash_value,
                "params": {"salt": salt, **params},
                "login_names": sorted(set(names)),
            }
            line = orjson.dumps(record) + b"\n"
            out.write(line)
            digest.update(line)
            kept.add(user_id)
    return kept, digest.hexdigest()
