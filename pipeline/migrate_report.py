"""The end of a migrate run: the summary it prints, its exit status, and the push after it.

For ``pipeline/migrate.py``: once the manifest is written, ``report_and_push`` prints the summary
table (the source's rows, roles, sync, the totals), the hash lines, the accounting and where the
files went; then recounts the written bodies, reports input files that were cut short, pushes
with ``--push-url`` (transforms/push/engine.py) and returns the exit status:

    0 done · 1 dead letters with --strict, a cut input without --allow-partial, a failed push,
      or every user read was dead-lettered (nothing to import, nothing pushed)
    3 the accounting or the recount disagrees (a bug)

When the target's configuration refused some users' hashes, the summary says so first, with the
one config block that admits them all (transforms/hashing/summary.py ``refused_lead``).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pipeline import signals
from pipeline.layout import OutputLayout
from pipeline.preflight import check_written
from pipeline.report import SummaryLine, summary_table
from transforms.common import counters

if TYPE_CHECKING:
    from pipeline.migrate_options import CommonArgs
    from pipeline.push_entry import Target
    from transforms.mapping.roles import RoleSettings
    from transforms.output.manifest import ListedFile
    from transforms.sync.change_files import SyncSection

__all__ = ["FinishedRun", "report_and_push", "partial_input_lines"]

# A source's summary rows: counts → (label, value) rows (pipeline/report.py summary_table).
SummaryLines = Callable[[Mapping[str, int]], list[SummaryLine]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class FinishedRun:
    """What a finished migrate run reports (and pushes)."""

    source_name: str
    common: CommonArgs
    layout: OutputLayout
    counts: dict[str, int]
    hash_fields: dict[str, Any]
    holds: bool
    invariant_text: str
    bodies: list[dict[str, Any]]
    dead_count: int
    elapsed: float
    passwordless_path: str
    passwordless_count: int
    sync: SyncSection | None
    roles: RoleSettings | None  # with --project-id
    legacy_hashes: ListedFile | None = None  # with --legacy-hashes (Firebase's legacy_hashes)
    old_system_store: ListedFile | None = None  # with --old-system-store (transforms/output/waiting.py)


def partial_input_lines(counts: Mapping[str, int], names: Mapping[int, str]) -> list[str]:
    """One line per input file the readers found cut short or damaged (docs/inputs.md)."""
    lines = []
    for name, value in sorted(counts.items()):
        if name.startswith(counters.INPUTS_PARTIAL):
            index = int(name.rsplit(".", 1)[1])
            path = names.get(index, f"input file #{index}")
            lines.append(
                f"{path} was cut short or is damaged: {value} records were read before it "
                "(an unreadable-input dead letter; --allow-partial accepts this)"
            )
    return lines


def report_and_push(
    done: FinishedRun,
    summary_lines: SummaryLines,
    input_names: Mapping[int, str],
    target: Target | None = None,
) -> int:
    """Print the summary, check the written bodies, push with ``--push-url`` (on ``target``, the
    client the run's probe opened); the exit status."""
    _print_summary(done, summary_lines)
    common, layout = done.common, done.layout
    if not done.holds or check_written(layout.manifest):
        return 3
    partial = partial_input_lines(done.counts, input_names)
    if partial:
        for line in partial:
            print(f"zitadel-beam: {line}", file=sys.stderr)
        if not common.allow_partial:
            return 1
    if _nothing_written(done):
        print(
            f"zitadel-beam: no user was written: every user read was dead-lettered "
            f"({done.dead_count:,} dead letters in {layout.dead_letter})",
            file=sys.stderr,
        )
        return 1
    if common.push_url and not _push(common, layout, target):
        return 1
    if common.strict and done.dead_count:
        print(f"zitadel-beam: --strict: {done.dead_count} record(s) dead-lettered", file=sys.stderr)
        return 1
    return 0


def _nothing_written(done: FinishedRun) -> bool:
    """Every user read ended a dead letter: no user written, none compared with a sync's state.

    The accounting held (users read = written + dead-lettered), so dead letters and no user
    written mean that every user read was refused."""
    written = done.counts.get(counters.USERS_WRITTEN, 0) + done.counts.get(counters.SYNC_ROWS_NOT_IMPORTED, 0)
    return done.dead_count > 0 and written == 0


def _print_summary(done: FinishedRun, summary_lines: SummaryLines) -> None:
    from transforms.hashing.policy import OnUnsupportedHash
    from transforms.hashing.summary import hash_summary, refused_lead

    layout, counts, bodies = done.layout, done.counts, done.bodies
    lead = refused_lead(
        done.hash_fields, done.common.on_unsupported_hash == OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD
    )
    if lead:  # first: the one thing to fix before the users can import (it used to hide in the dead letters)
        print(lead + "\n")
    lines = summary_lines(counts)
    if done.roles is not None or counts.get(counters.ROLES_USERS_HOLDING):
        from transforms.output.grants import summary_lines as role_lines

        lines += role_lines(counts, done.roles)
    if done.sync is not None:
        from transforms.sync.change_files import sync_summary_lines

        lines += sync_summary_lines(counts)
    lines += [
        ("", ""),
        ("bodies written", len(bodies)),
        ("dead letters written", done.dead_count),
        ("seconds", f"{done.elapsed:.1f}"),
    ]
    print(summary_table(f"zitadel-beam migrate {done.source_name}: summary", lines))
    if hash_summary(done.hash_fields):
        print(hash_summary(done.hash_fields))
    print(f"accounting: {done.invariant_text} [{'ok' if done.holds else 'BROKEN'}]")
    print(f"manifest: {layout.manifest}")
    if bodies:
        print(f"bodies: {bodies[0]['path']}" + (f" ... {bodies[-1]['path']}" if len(bodies) > 1 else ""))
    if done.dead_count:
        print(f"dead letters: {layout.dead_letter}")
    for change in done.sync["changes"] if done.sync is not None else []:
        print(f"changes: {change['path']} ({change['users']} users, {change['calls']} calls)")
    if done.legacy_hashes is not None:
        print(
            f"kept for sign-in verification: {done.legacy_hashes.count} "
            f"(zitadel-beam companion; mode 0600; push with --api=user-v2): {done.legacy_hashes.path}"
        )
    if done.old_system_store is not None:
        print(
            f"waiting for the old system's check, no reset mail: {done.old_system_store.count} "
            f"(zitadel-beam companion serve --old-system; mode 0600; push with --api=user-v2): "
            f"{done.old_system_store.path}"
        )
    if done.passwordless_count:
        print(
            f"imported without password ({done.passwordless_count}, for password-reset mails): "
            f"{done.passwordless_path}"
        )
    sys.stdout.flush()


def _push(common: CommonArgs, layout: OutputLayout, target: Target | None) -> bool:
    """Push the manifest's bodies (``--push-url``) through push's own entry (same settings,
    lock, table and closing line as ``zitadel-beam push``); False when the push did not finish."""
    from pipeline.push_entry import run_push, show

    assert common.push_url is not None and common.push_credentials is not None  # common_args: both or neither
    assert common.push is not None
    signals.set_resume_hint(
        f"the bodies and {layout.manifest} are written and bodies the ledger records as done are "
        f"kept; resume with zitadel-beam push --manifest={layout.manifest}"
    )
    report = run_push(
        layout.manifest,
        common.push_url,
        common.push_credentials,
        common.push,
        label="migrate --push-url",
        target=target,
        state_locked=bool(common.state),  # migrate --state holds it throughout
    )
    return show(report) == 0
