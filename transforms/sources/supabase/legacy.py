"""``migrate supabase --legacy-hashes=PATH``: keep ``$fbscrypt$`` hashes for the companion.

Supabase keeps the Firebase-scrypt hashes of users it imported from Firebase as
``$fbscrypt$v=1,n=<log2 N>,r=<r>,p=<p>,ss=<salt separator>,sk=<signer key>$<salt>$<hash>``
(docs/supabase.md): every parameter the companion's ``firebase-scrypt`` check needs is in the
value. ZITADEL cannot verify it, so such a user is written without a password
(``--on-unsupported-hash=import-without-password``); with this flag, after the pipeline, each of
them on the reset list (reason ``unsupported-hash``) is read again from ``--users`` and written to
``PATH`` in the companion's store format (docs/companion.md#store; local file mode 0600), and leaves
the reset list. A value with ``p`` other than 1, or without ``ss`` or ``sk``, stays on the list.

As for Firebase's flag: the store is never replaced, and the users must be pushed with
``--api=user-v2`` (the admin import makes a user without password initial, whose password ZITADEL
refuses to set).

Example::

    firebase_scrypt_params("$fbscrypt$v=1,n=14,r=8,p=1,ss=Bw==,sk=...$C0sHCg9ek77hsg==$zKVT...")
    # ("zKVT...", {"salt": "C0sHCg9ek77hsg==", "signer_key": "...", "salt_separator": "Bw==",
    #              "rounds": 8, "mem_cost": 14})
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from transforms.common.errors import ConfigError
from transforms.common.reasons import Reason
from transforms.hashing.policy import OnUnsupportedHash
from transforms.output.waiting import exists, reset_list, without
from transforms.sources.declaration import FlagParser, KeepLegacy
from transforms.sources.supabase import text

if TYPE_CHECKING:
    from transforms.output.manifest import ListedFile
    from transforms.sources.supabase.mapping import SupabaseFile, SupabaseOptions

__all__ = ["add_argument", "keeper", "firebase_scrypt_params"]


def add_argument(parser: FlagParser) -> None:
    parser.add_argument(
        "--legacy-hashes",
        metavar="PATH",
        help="keep the $fbscrypt$ hashes (users Supabase imported from Firebase) in a 0600 store for "
        "zitadel-beam companion; needs --on-unsupported-hash=import-without-password; those users "
        "leave the reset list (docs/companion.md)",
    )


def firebase_scrypt_params(value: str) -> tuple[str, dict[str, object]] | None:
    """A ``$fbscrypt$`` value → (hash, the companion's params), or None when the companion cannot
    check it (not that form, p ≠ 1, no salt separator or signer key)."""
    parts = value.split("$")
    if len(parts) != 5 or parts[0] or parts[1] != "fbscrypt" or not parts[3] or not parts[4]:
        return None
    fields = dict(item.partition("=")[::2] for item in parts[2].split(","))
    n, r = fields.get("n", ""), fields.get("r", "")
    if fields.get("v") != "1" or fields.get("p") != "1" or not (n.isdigit() and r.isdigit()):
        return None
    if not fields.get("ss") or not fields.get("sk"):
        return None
    params: dict[str, object] = {
        "salt": parts[3],
        "signer_key": fields["sk"],
        "salt_separator": fields["ss"],
        "rounds": int(r),
        "mem_cost": int(n),
    }
    return parts[4], params


def keeper(
    path: str | None,
    files: Sequence[SupabaseFile],
    options: SupabaseOptions,
    inputs: Sequence[str],
    push_api: str | None,
) -> KeepLegacy | None:
    """What the shared run calls when the run is finished; None without ``--legacy-hashes``. The
    flags are checked here, before the pipeline runs (ConfigError, one line)."""
    if not path:
        return None
    if options.on_unsupported_hash != OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD:
        raise ConfigError(
            "--legacy-hashes keeps the hashes of users written without a password: add "
            "--on-unsupported-hash=import-without-password"
        )
    if push_api is not None and push_api != "user-v2":
        raise ConfigError(
            "--legacy-hashes: the admin import creates these users (no password) in state initial, and "
            "ZITADEL refuses to set an initial user's password; push with --api=user-v2 "
            "(docs/companion.md#users-must-be-active)"
        )
    if path in inputs:
        raise ConfigError(f"--legacy-hashes {path!r} is an input of this run")
    if exists(path):
        raise ConfigError(
            f"--legacy-hashes {path!r} exists: a store is never replaced (a companion may be serving it); "
            "choose another path"
        )

    def keep(passwordless: ListedFile) -> tuple[ListedFile, ListedFile]:
        from transforms.output.manifest import ListedFile

        if exists(path):
            raise ConfigError(f"--legacy-hashes {path!r} appeared during the run; it is not replaced")
        listed = reset_list(passwordless)
        wanted = {str(entry["id"]) for _, entry in listed if entry.get("reason") == Reason.UNSUPPORTED_HASH}
        kept, digest = _write_store(path, files if wanted else [], wanted, options)
        return without(passwordless, listed, kept), ListedFile(path, len(kept), digest)

    return keep


def _users(files: Sequence[SupabaseFile]) -> Iterator[Mapping[str, object]]:
    """The users files' rows again; a damaged file ends its own part (already dead-lettered)."""
    import csv

    import ijson

    from transforms.sources.file_reader import csv_records
    from transforms.sources.input_stream import DepthGuard, InputReadError, open_input
    from transforms.sources.supabase.read import json_rows

    for file in files:
        with open_input(file.path) as stream:
            try:
                if file.format != "csv":
                    rows: Iterator[object] = json_rows(DepthGuard(stream), file.format)
                else:
                    rows = (record.value for record in csv_records(stream) if record.problem is None)
                yield from (row for row in rows if isinstance(row, Mapping))
            except (InputReadError, ijson.JSONError, csv.Error, ValueError):
                continue


def _write_store(
    path: str, files: Sequence[SupabaseFile], wanted: set[str], options: SupabaseOptions
) -> tuple[set[str], str]:
    """One store line per wanted user whose value the companion can check; (ids, sha256)."""
    import orjson

    from transforms.files.storage import open_private
    from transforms.sources.supabase.mapping import MappedUser, map_user

    kept: set[str] = set()
    digest = hashlib.sha256()
    mapping = dataclasses.replace(options, identities=(), factors=())
    with open_private(path, fsync=True) as out:
        for row in _users(files):
            user_id = text(row, "id")
            found = firebase_scrypt_params(text(row, "encrypted_password")) if user_id in wanted else None
            mapped = map_user(row, mapping) if found is not None and user_id not in kept else None
            if not isinstance(mapped, MappedUser) or found is None:
                continue
            body = mapped.entry["user"]
            assert isinstance(body, dict)
            email = body["email"]
            names = {str(body["userName"]), str(email["email"] if isinstance(email, dict) else "")} - {""}
            record = {"id": user_id, "form": "firebase-scrypt", "hash": found[0], "params": found[1]}
            line = orjson.dumps({**record, "login_names": sorted(names)}) + b"\n"
            out.write(line)
            digest.update(line)
            kept.add(user_id)
    return kept, digest.hexdigest()
