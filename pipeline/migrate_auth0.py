"""``zitadel-beam migrate auth0``: a drop-in for ``zitadel-tools migrate auth0``.

Example (local runner, bundled sample)::

    zitadel-beam migrate auth0 --org=123456789 --users=examples/auth0/users.json \\
        --passwords=examples/auth0/passwords.json --output=out/importBody.json

Both files may be NDJSON, a JSON array or a multi-line stream of objects, gzip-compressed or
not, and globs (``--users='export/users-*.json.gz'``); paths may be local or gs://.
"""
from __future__ import annotations

import argparse
from typing import Any, Mapping

from pipeline.errors import ConfigError
from pipeline.migrate import add_common_arguments, check_gcs_reachable, common_args, run_migration

__all__ = ["add_arguments", "run", "summary_lines", "invariant"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--users", default="./users.json",
                        help="Auth0 profile export: path or glob, local or gs:// (default ./users.json)")
    parser.add_argument("--passwords", default="./passwords.json",
                        help="Auth0 password-hash export: path or glob (default ./passwords.json)")
    parser.add_argument("--email-verified", action="store_true",
                        help="mark every e-mail verified (otherwise the source's email_verified is kept)")
    parser.add_argument("--include-blocked", action="store_true",
                        help="import users blocked in Auth0 (the import API cannot carry the blocked state)")
    add_common_arguments(parser)


def _count(counts: Mapping[str, int], prefix: str) -> int:
    return sum(v for k, v in counts.items() if k.startswith(prefix))


def invariant(counts: Mapping[str, int]) -> tuple[bool, str]:
    """profiles read = users written + profiles dead-lettered, and the same for password records."""
    profiles = counts.get("auth0.profiles_read", 0)
    written = counts.get("users_written", 0)
    dead_profiles = _count(counts, "dead_letter.auth0-profile.")
    passwords = counts.get("auth0.passwords_read", 0)
    with_pw = counts.get("users_with_password", 0)
    dead_pw = _count(counts, "dead_letter.auth0-password.")
    holds = profiles == written + dead_profiles and passwords == with_pw + dead_pw
    text = (f"profiles {profiles:,} = written {written:,} + dead-lettered {dead_profiles:,}; "
            f"password records {passwords:,} = used {with_pw:,} + dead-lettered {dead_pw:,}")
    return holds, text


def summary_lines(counts: Mapping[str, int]) -> list[tuple[str, Any]]:
    written = counts.get("users_written", 0)
    with_pw = counts.get("users_with_password", 0)
    lines: list[tuple[str, Any]] = [
        ("profiles read", counts.get("auth0.profiles_read", 0)),
        ("password records read", counts.get("auth0.passwords_read", 0)),
        ("users written", written),
        ("  with password", with_pw),
        ("  without password", written - with_pw),
        ("password conflicts (older record dropped)", counts.get("auth0.password_conflicts", 0)),
        ("phones dropped (not +..., or > 50 chars)", counts.get("notes.phone-dropped", 0)),
        ("languages dropped (no valid base language)", counts.get("notes.language-dropped", 0)),
    ]
    if counts.get("metadata_written") or counts.get("auth0.metadata_dropped"):
        lines.append(("metadata entries written", counts.get("metadata_written", 0)))
        lines.append(("metadata entries dropped (limits)", counts.get("auth0.metadata_dropped", 0)))
    dead = {k: v for k, v in counts.items() if k.startswith("dead_letter.")}
    lines.append(("dead-lettered", sum(dead.values())))
    for name, value in dead.items():
        _, source, reason = name.split(".", 2)
        lines.append((f"  {reason} ({source})", value))
    return lines


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    from transforms import fileio
    from transforms.auth0 import Auth0Options, ReadAuth0Users
    from transforms.records import NUM_PARTITIONS
    from transforms.validate import ValidationOptions

    common = common_args(known_args)
    patterns = {"--users": known_args.users, "--passwords": known_args.passwords}
    # Before matching: a gs:// match with Cloud Storage unreachable retries for ~120 s.
    check_gcs_reachable(list(patterns.values()) + [common.output] + ([common.dead_letter] if common.dead_letter else []))
    try:
        profiles = fileio.match_inputs([known_args.users], 0, "--users")
        passwords = fileio.match_inputs([known_args.passwords], len(profiles), "--passwords")
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    options = Auth0Options(
        email_verified=known_args.email_verified,
        include_blocked=known_args.include_blocked,
        metadata=common.metadata,
        validation=ValidationOptions(common.bcrypt_min_cost, common.bcrypt_max_cost, ("bcrypt",)),
    )

    def add_source(pipeline, tmp_dir: str):
        return pipeline | "ReadAuth0" >> ReadAuth0Users(profiles, passwords, options, NUM_PARTITIONS, tmp_dir)

    return run_migration(
        source_name="auth0",
        add_source=add_source,
        common=common,
        pipeline_args=pipeline_args,
        input_paths=list(patterns.values()),
        summary_lines=summary_lines,
        invariant=invariant,
    )
