"""Beam metrics → the run summary (a table on stdout and the ``counts`` of the manifest)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transforms.common import counters
from transforms.common.accounting import users_lines
from transforms.common.counters import count_prefix
from transforms.common.records import NAMESPACE
from transforms.mapping import validate
from transforms.mapping.fields import MAX_UNKNOWN_FIELD_NAMES
from transforms.sources.registry import kinds
from transforms.sources.source_counters import SourceCounters

__all__ = [
    "counters_from_result",
    "summary_table",
    "SummaryLine",
    "users_lines",
    "dead_letter_totals",
    "shared_summary_lines",
    "unmatched_alias_lines",
    "not_carried_fields",
    "MAX_UNKNOWN_FIELD_NAMES",
]

# Distinct unknown field names the manifest lists by name; the rest are summed as `other`.

# One row of a summary table: a label and a count, or a label and a text ("" under a heading).
SummaryLine = tuple[str, int | str]


def counters_from_result(result) -> dict[str, int]:
    """Every counter of our namespace, summed over steps (committed values where the runner has them)."""
    from apache_beam.metrics.metric import MetricsFilter

    totals: dict[str, int] = {}
    query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    for counter in query["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + int(value or 0)
    return dict(sorted(totals.items()))


def dead_letter_totals(counts: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """``{source: {reason: n}}`` from ``dead_letter.<source>.<reason>`` counters."""
    out: dict[str, dict[str, int]] = {}
    for name, value in counts.items():
        if name.startswith(counters.DEAD_LETTER):
            _, source, reason = name.split(".", 2)
            out.setdefault(source, {})[reason] = value
    return out


def summary_table(title: str, lines: list[SummaryLine]) -> str:
    """A two-column table; rows whose label starts with two spaces are indented details."""
    width = max([len(label) for label, _ in lines] + [20])
    out = [title, "-" * (width + 14)]
    for label, value in lines:
        if label == "":
            out.append("")
            continue
        text = f"{value:,}" if isinstance(value, int) else str(value)
        out.append(f"{label:<{width}}  {text:>12}")
    return "\n".join(out)


def unmatched_alias_lines(counts: Mapping[str, int], prefix: str, aliases: list[str]) -> list[SummaryLine]:
    """The ``--idp-map`` aliases no entry of the run named (a misspelt provider links nobody), with
    the providers the export does name; ``prefix`` is the source's ``<source>.idp_links.`` counters'
    (``+ outcome + "." + provider``)."""
    named = {
        key[len(prefix) :].split(".", 1)[1]
        for key in counts
        if key.startswith(prefix) and "." in key[len(prefix) :]
    }
    unmatched = [alias for alias in aliases if alias not in named]
    if not unmatched:
        return []
    seen = ", ".join(sorted(named)) or "none"
    return [(f"--idp-map aliases that matched no entry (providers seen: {seen})", ", ".join(unmatched))]


def shared_summary_lines(counts: Mapping[str, int], source: str, idp_map: bool = True) -> list[SummaryLine]:
    """The rows every migrate summary ends with: dropped fields, metadata, dead letters by reason.

    ``source`` is the counter prefix of the source's own metadata counters (``auth0``, ``keycloak``).
    ``idp_map``: the command has ``--idp-map`` (the hint for users who cannot sign in names it).
    """
    lines: list[SummaryLine] = [
        ("phones dropped (not +..., or > 50 chars)", counts.get(counters.note(validate.PHONE_DROPPED), 0)),
        (
            "languages dropped (no valid base language)",
            counts.get(counters.note(validate.LANGUAGE_DROPPED), 0),
        ),
        (
            "names with control characters removed",
            counts.get(counters.note(validate.CONTROL_CHARS_REMOVED), 0),
        ),
        ("e-mail from --email-fallback (unverified)", counts.get(counters.note(validate.EMAIL_FALLBACK), 0)),
        ("ids derived (source had none)", counts.get(counters.note(validate.DERIVED_ID), 0)),
    ]
    dropped = SourceCounters(source).metadata_dropped  # <source>.metadata_dropped
    if counts.get(counters.METADATA_WRITTEN) or counts.get(dropped):
        lines.append(("metadata entries written", counts.get(counters.METADATA_WRITTEN, 0)))
        lines.append(("metadata entries dropped (limits)", counts.get(dropped, 0)))
    for name, value in sorted(counts.items()):
        if name.startswith(counters.INPUTS_DECODED):  # UTF-16/32 input files (docs/inputs.md)
            lines.append((f"input files decoded from {name.removeprefix(counters.INPUTS_DECODED)}", value))
    lines += not_carried_lines(counts, idp_map)
    lines.append(("dead-lettered", count_prefix(counts, counters.DEAD_LETTER)))
    for name, value in counts.items():
        if name.startswith(counters.DEAD_LETTER):
            _, letter_source, reason = name.split(".", 2)
            lines.append((f"  {reason} ({letter_source})", value))
    return lines


def not_carried_fields(counts: Mapping[str, int]) -> dict[str, Any]:
    """The manifest's account of what written users had and the import does not carry.

    ``fields_not_carried`` ``{"<source>.<field>": users}`` from ``not_carried.`` counters,
    ``unknown_fields`` likewise from ``unknown_field.`` counters (at most
    ``MAX_UNKNOWN_FIELD_NAMES`` names, the rest as ``<source>.other``) and
    ``cannot_sign_in_yet`` (written users with neither a password nor an IdP link),
    ``second_factors_not_carried`` (``{"<source>.<factor>.<cause>": n}``: Keycloak OTP devices,
    Auth0 ``mfa_factors`` and MFA-export records that did not become ``otpCode``) and
    ``required_actions_not_carried`` (``{"keycloak.<action>": users}``).
    See docs/fields-not-carried.md.
    """
    carried = {
        name.split(".", 1)[1]: value
        for name, value in counts.items()
        if name.startswith(counters.NOT_CARRIED)
    }
    unknown_all = sorted(
        (
            (name.split(".", 1)[1], value)
            for name, value in counts.items()
            if name.startswith(counters.UNKNOWN_FIELD)
        ),
        key=lambda item: (-item[1], item[0]),
    )
    unknown: dict[str, int] = {}
    for name, value in unknown_all:
        if len(unknown) >= MAX_UNKNOWN_FIELD_NAMES and name not in unknown:
            name = name.split(".", 1)[0] + ".other"
        unknown[name] = unknown.get(name, 0) + value
    return {
        "fields_not_carried": dict(sorted(carried.items())),
        "unknown_fields": dict(sorted(unknown.items())),
        "cannot_sign_in_yet": count_prefix(counts, counters.CANNOT_SIGN_IN),
        # Counter prefixes of what did not arrive → their names in the manifest, as each
        # source describes them (transforms/sources/<name>/source.py).
        "second_factors_not_carried": _renamed(
            counts, {p: n for k in kinds() for p, n in k.second_factors.items()}
        ),
        "required_actions_not_carried": _renamed(
            counts, {p: n for k in kinds() for p, n in k.required_actions.items()}
        ),
    }


def _renamed(counts: Mapping[str, int], prefixes: Mapping[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, value in counts.items():
        for prefix, new in prefixes.items():
            if name.startswith(prefix):
                out[new + name[len(prefix) :]] = value
    return dict(sorted(out.items()))


def not_carried_lines(counts: Mapping[str, int], idp_map: bool = True) -> list[SummaryLine]:
    """Summary rows for :func:`not_carried_fields`, with what to do about users who cannot sign in
    (``idp_map``: the command has ``--idp-map``, which the hint then names)."""
    fields = not_carried_fields(counts)
    lines: list[SummaryLine] = []
    cannot = fields["cannot_sign_in_yet"]
    lines.append(("cannot sign in yet (no password, no IdP link)", cannot))
    if cannot and idp_map:
        lines.append(("  map their IdP alias with --idp-map, or send password-reset mails", ""))
    elif cannot:
        lines.append(("  send them password-reset mails", ""))
    if fields["fields_not_carried"]:
        lines.append(("fields not carried (users written who had them)", ""))
        lines += [(f"  {name}", value) for name, value in fields["fields_not_carried"].items()]
    if fields["unknown_fields"]:
        lines.append(("unknown fields (users written who had them)", ""))
        lines += [(f"  {name}", value) for name, value in fields["unknown_fields"].items()]
    if fields["second_factors_not_carried"]:
        lines.append(("second factors not carried (re-enrol), by cause", ""))
        lines += [(f"  {name}", value) for name, value in fields["second_factors_not_carried"].items()]
    if fields["required_actions_not_carried"]:
        lines.append(("required actions not carried (users)", ""))
        lines += [(f"  {name}", value) for name, value in fields["required_actions_not_carried"].items()]
    return lines
