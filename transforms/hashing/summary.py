"""Password hashes in the run's manifest and summary, and push's check of the target's config.

migrate writes ``password_hashes`` (verifier → users), ``password_hash_params`` (verifier →
parameter → [min, max]), ``users_without_password_by_reason`` and ``zitadel_config`` (the
``SystemDefaults.PasswordHasher`` YAML under which every written hash imports). When the target's
configuration refused some users' hashes, also ``refused_hashes``, ``refused_hash_params`` and
``zitadel_config_admitting_all`` (the YAML under which the written and the refused hashes all
import; the summary prints it first). With a ``--zitadel-config`` (or variables) other than
ZITADEL's defaults, ``target_hash_policy`` records the verifiers and limits migrate checked
against. push reads them back and warns before sending when the target's expected config (push's
own, else the recorded one, else ZITADEL's defaults) does not cover them (docs/password-hashes.md).
Hashes rewritten from source forms (transforms/hashing/forms.py) add ``password_hash_forms``
and ``refused_hash_forms`` (form → users); :func:`forms_needs` gives all these fields for a list of
rewritten values without a pipeline (docs/hash-forms.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from transforms.common.counters import (
    HASH_FORMS,
    HASH_PARAM,
    PASSWORD_HASHES,
    REFUSED_HASH_FORMS,
    REFUSED_HASHES,
    WITHOUT_PASSWORD,
)
from transforms.common.errors import ConfigError
from transforms.common.records import NAMESPACE
from transforms.hashing.policy import (
    DEFAULT_LIMITS,
    LIMITS,
    VERIFIERS,
    HashPolicy,
    config_snippet,
    needed_ranges,
)

if TYPE_CHECKING:
    from transforms.hashing.forms import Rewritten

__all__ = [
    "hash_ranges_from_result",
    "hash_manifest",
    "forms_needs",
    "hash_summary",
    "refused_lead",
    "recorded_policy",
    "uncovered_hashes",
    "warn_uncovered",
]

Ranges = Mapping[str, Mapping[str, tuple[int, int]]]  # verifier → param → (min, max)

_LOGGER = logging.getLogger(__name__)


def hash_ranges_from_result(result: Any, prefix: str = HASH_PARAM) -> dict[str, dict[str, tuple[int, int]]]:
    """verifier → param → (min, max) from the ``hash_param.*`` distributions of a finished run
    (``prefix=REFUSED_HASH_PARAM``: of the hashes the target's configuration refused)."""
    from apache_beam.metrics.metric import MetricsFilter

    ranges: dict[str, dict[str, tuple[int, int]]] = {}
    query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    for dist in query["distributions"]:
        name = dist.key.metric.name
        if not name.startswith(prefix):
            continue
        data = dist.committed if dist.committed is not None else dist.attempted
        if data is None or not data.count:
            continue
        verifier, param = name[len(prefix) :].split(".", 1)
        low, high = ranges.get(verifier, {}).get(param, (data.min, data.max))
        ranges.setdefault(verifier, {})[param] = (min(low, data.min), max(high, data.max))
    return ranges


def hash_manifest(
    counts: Mapping[str, int], ranges: Ranges, policy: HashPolicy | None, refused_ranges: Ranges | None = None
) -> dict[str, Any]:
    """The manifest's hash fields (the refused ones and ``target_hash_policy`` only when they say something)."""
    hashes = {
        name[len(PASSWORD_HASHES) :]: n
        for name, n in counts.items()
        if name.startswith(PASSWORD_HASHES) and n
    }
    without = {
        name[len(WITHOUT_PASSWORD) :]: n
        for name, n in counts.items()
        if name.startswith(WITHOUT_PASSWORD) and n
    }
    needed = {verifier: dict(ranges.get(verifier, {})) for verifier in hashes}
    fields: dict[str, Any] = {
        "password_hashes": dict(sorted(hashes.items())),
        "password_hash_params": {
            v: {p: list(r) for p, r in sorted(params.items())} for v, params in sorted(needed.items())
        },
        "users_without_password_by_reason": dict(sorted(without.items())),
        # Against ZITADEL's defaults, so the snippet stands on its own (not relative to --zitadel-config).
        "zitadel_config": config_snippet(needed) if hashes else "",
    }
    refused = {
        name[len(REFUSED_HASHES) :]: n for name, n in counts.items() if name.startswith(REFUSED_HASHES) and n
    }
    if refused:
        wanted = {verifier: dict((refused_ranges or {}).get(verifier, {})) for verifier in refused}
        fields["refused_hashes"] = dict(sorted(refused.items()))
        fields["refused_hash_params"] = {
            v: {p: list(r) for p, r in sorted(params.items())} for v, params in sorted(wanted.items())
        }
        # One block for everything: a re-run with it as --zitadel-config writes these users too.
        fields["zitadel_config_admitting_all"] = config_snippet(_merged(needed, wanted), _narrowest(policy))
    for key, prefix in (("password_hash_forms", HASH_FORMS), ("refused_hash_forms", REFUSED_HASH_FORMS)):
        by_form = {name[len(prefix) :]: n for name, n in counts.items() if name.startswith(prefix) and n}
        if by_form:  # only runs that rewrote source forms: other manifests stay as they were
            fields[key] = dict(sorted(by_form.items()))
    if policy is not None and policy != HashPolicy():
        fields["target_hash_policy"] = {"verifiers": sorted(policy.verifiers), "limits": dict(policy.limits)}
    return fields


def forms_needs(outcomes: Iterable[Rewritten], policy: HashPolicy | None = None) -> dict[str, Any]:
    """The manifest's hash fields for values rewritten by forms.to_passwap, without a pipeline:
    users by verifier and by form, the refused forms, the parameter ranges and the
    ``SystemDefaults.PasswordHasher`` block under which every rewritten hash imports.

    >>> forms_needs([to_passwap("$2b$12$...")])["zitadel_config"]  # doctest: +SKIP
    'SystemDefaults:\n  PasswordHasher:\n    Verifiers:\n      - bcrypt\n'
    """
    counts: dict[str, int] = {}
    written = []
    for outcome in outcomes:
        if outcome.converted is not None:
            written.append(outcome.converted)
            for key in (PASSWORD_HASHES + outcome.converted.verifier, HASH_FORMS + str(outcome.form)):
                counts[key] = counts.get(key, 0) + 1
        else:
            key = REFUSED_HASH_FORMS + (str(outcome.form) if outcome.form else "unrecognised")
            counts[key] = counts.get(key, 0) + 1
    return hash_manifest(counts, needed_ranges(written), policy)


def _narrowest(policy: HashPolicy | None) -> HashPolicy:
    """Each limit as the narrower of ``policy``'s and ZITADEL's default, so that the block states
    every limit the run needs beyond either: it admits the run's hashes saved on its own as
    ``--zitadel-config`` (over the defaults) and added to the target's config (over ``policy``)."""
    limits = dict((policy or HashPolicy()).limits)
    for rows in LIMITS.values():
        for _, group, low_key, high_key in rows:
            low, high = f"{group}.{low_key}", f"{group}.{high_key}"
            limits[low] = max(limits[low], DEFAULT_LIMITS[low])
            limits[high] = min(limits[high], DEFAULT_LIMITS[high])
    return HashPolicy(limits=tuple(limits.items()))


def _merged(*needs: Ranges) -> dict[str, dict[str, tuple[int, int]]]:
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for need in needs:
        for verifier, params in need.items():
            mine = out.setdefault(verifier, {})
            for param, (low, high) in params.items():
                old = mine.get(param, (low, high))
                mine[param] = (min(old[0], low), max(old[1], high))
    return out


def refused_lead(fields: Mapping[str, Any], imported_without_password: bool) -> str:
    """What the summary prints first when the target's configuration refused some users' hashes:
    how many, what became of them, and the one YAML block that admits every hash of the run."""
    refused = fields.get("refused_hashes")
    if not refused:
        return ""
    users = sum(refused.values())
    fate = "imported without a password" if imported_without_password else "dead-lettered"
    lines = [
        f"password hashes refused: {users:,} user(s) were {fate} because the target's password "
        f"hasher configuration does not admit their hashes ("
        + ", ".join(f"{v} {n:,}" for v, n in refused.items())
        + ")",
        "with this block in the target ZITADEL's runtime config, and saved as --zitadel-config for "
        "a re-run, every hash of this run imports:",
    ]
    lines += ["  " + line for line in fields["zitadel_config_admitting_all"].splitlines()]
    return "\n".join(lines)


def recorded_policy(manifest: Mapping[str, Any]) -> HashPolicy | None:
    """The verifiers and limits migrate checked against (``target_hash_policy``), None when the
    manifest has none (migrate ran with ZITADEL's defaults). ConfigError: a field not as migrate writes it."""
    recorded = manifest.get("target_hash_policy")
    if recorded is None:
        return None
    verifiers = recorded.get("verifiers") if isinstance(recorded, dict) else None
    limits = recorded.get("limits") if isinstance(recorded, dict) else None
    if (
        not isinstance(verifiers, list)
        or not set(verifiers) <= set(VERIFIERS)
        or not isinstance(limits, dict)
        or not all(key in DEFAULT_LIMITS and type(value) is int for key, value in limits.items())
    ):
        raise ConfigError(
            "the manifest's target_hash_policy is not as migrate writes it (give push --zitadel-config)"
        )
    return HashPolicy(frozenset(verifiers), tuple({**DEFAULT_LIMITS, **limits}.items()))


def hash_summary(fields: Mapping[str, Any]) -> str:
    """The lines the summary prints after its table."""
    if not fields.get("password_hashes"):
        return ""
    counts = ", ".join(f"{v} {n}" for v, n in fields["password_hashes"].items())
    lines = [f"password hashes by ZITADEL verifier: {counts}"]
    for key, lead in (("password_hash_forms", "rewritten from"), ("refused_hash_forms", "refused, by form")):
        if fields.get(key):
            lines.append(f"password hashes {lead}: " + ", ".join(f"{f} {n}" for f, n in fields[key].items()))
    if fields.get("users_without_password_by_reason"):
        dropped = ", ".join(f"{r} {n}" for r, n in fields["users_without_password_by_reason"].items())
        lines.append(f"users imported without password: {dropped}")
    lines.append("the target ZITADEL needs (runtime config) so that every written hash imports:")
    lines += ["  " + line for line in fields["zitadel_config"].splitlines()]
    return "\n".join(lines)


def uncovered_hashes(manifest: Mapping[str, Any], policy: HashPolicy) -> list[str]:
    """What of a manifest's hashes ``policy`` would refuse, one line each (empty: all covered)."""
    params = manifest.get("password_hash_params") or {}
    needed = {
        verifier: {p: tuple(r) for p, r in (params.get(verifier) or {}).items()}
        for verifier in (manifest.get("password_hashes") or {})
    }
    return policy.covers(needed)


def warn_uncovered(manifest: Mapping[str, Any], policy: HashPolicy | None) -> list[str]:
    """Log a warning per uncovered need before push sends (the server would refuse those users).

    ``policy``: push's own (its ``--zitadel-config``); None: the one migrate recorded in the
    manifest, else ZITADEL's defaults."""
    problems = uncovered_hashes(manifest, policy or recorded_policy(manifest) or HashPolicy())
    for line in problems:
        _LOGGER.warning(
            "the target's password hasher config does not cover this run: %s "
            "(those users would fail with Errors.Hash.NotSupported / Errors.User.Password.Invalid; "
            "see the manifest's zitadel_config)",
            line,
        )
    return problems
