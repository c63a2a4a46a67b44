"""``zitadel-beam migrate okta``: Okta's user export (CSV) → ZITADEL import bodies.

Example::

    zitadel-beam migrate okta --org=123456789 --users=okta-users.csv --output=out/importBody.json

Okta never exports a password or a hash: every user arrives without a password (listed as
unable to sign in until it sets one or is linked to an IdP). docs/okta.md.
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms.common.accounting import users_lines
from transforms.common.counters import by_suffix
from transforms.sources.declaration import (
    FlagParser,
    Flags,
    Plan,
    SourceDescription,
    SourceSettings,
    SummaryLine,
    file_flag,
)
from transforms.sources.okta import accounting as okta
from transforms.sources.okta.source import KIND, okta_csv

__all__ = ["DESCRIPTION"]


def add_arguments(parser: FlagParser) -> None:
    file_flag(
        parser,
        "--users",
        reads="okta-users",
        required=True,
        help="Okta's user export, CSV with a header (id, status, login, email, firstName, lastName, "
        "...; the report's labels 'Okta username', 'Primary email' too): path or glob, local or gs://",
    )
    parser.add_argument(
        "--include-blocked",
        action="store_true",
        help="import users SUSPENDED, LOCKED_OUT or DEPROVISIONED at Okta (default: dead-letter them "
        "as blocked; with --state they are read so that ZITADEL deactivates them)",
    )
    parser.add_argument(
        "--trust-email",
        action="store_true",
        help="import e-mail addresses as verified (Okta's export says nothing of verification; "
        "default: unverified)",
    )
    parser.add_argument(
        "--trust-phone", action="store_true", help="import phone numbers as verified (default: unverified)"
    )


def plan(flags: Flags, settings: SourceSettings) -> Plan:
    """Match the files and look at each header; the reader's options."""
    from transforms.common.records import NUM_PARTITIONS
    from transforms.mapping.validate import ValidationOptions
    from transforms.sources.input_plan import LookedFile, plan_inputs
    from transforms.sources.okta.mapping import OktaOptions

    def okta_header(looked: LookedFile) -> str | None:
        if okta_csv(looked.head):
            return None
        return (
            "not an Okta user export (a CSV whose header names a login column, 'login' or 'Okta "
            "username', and an e-mail column, 'email' or 'Primary email')"
        )

    files = plan_inputs(flags.users, flag="--users", reader="okta-users", check=okta_header)
    options = OktaOptions(
        include_blocked=settings.read_blocked,
        trust_email=flags.trust_email,
        trust_phone=flags.trust_phone,
        metadata=settings.metadata,
        email_fallback=settings.email_fallback,
        validation=ValidationOptions(hash_policy=settings.hash_policy),
    )

    def read(pipeline, tmp_dir: str):
        from transforms.sources.okta.read import ReadOktaUsers

        return pipeline | "ReadOkta" >> ReadOktaUsers(files, options, NUM_PARTITIONS, tmp_dir)

    return Plan(read=read, input_paths=[flags.users], input_names={f.index: f.path for f in files})


def summary_lines(counts: Mapping[str, int]) -> list[SummaryLine]:
    """The summary's rows of Okta's own counters (the shared run adds the shared ones)."""
    lines: list[SummaryLine] = [("users read", counts.get(okta.USERS_READ, 0)), *users_lines(counts)]
    lines += [(f"  Okta status {status}", value) for status, value in by_suffix(counts, okta.STATUS)]
    lines.append(("must change password at Okta, no password to mark", counts.get(okta.CHANGE_NOT_MARKED, 0)))
    lines.append(("blocked users written (--include-blocked, --state)", counts.get(okta.BLOCKED_WRITTEN, 0)))
    return lines


DESCRIPTION = SourceDescription(
    kind=KIND,
    help="Okta user export (CSV) → import bodies",
    add_arguments=add_arguments,
    plan=plan,
    summary_lines=summary_lines,
    invariant=okta.invariant,
    # Not offered by the Flex Template: its tests take every template source to have the hash and
    # layout flags, which a source without hashes does not declare (docs/okta.md).
    flex=None,
)
