"""What the target ZITADEL accepts: enabled password verifiers and their parameter limits.

A :class:`HashPolicy` is read from the operator's ZITADEL configuration
(``SystemDefaults.PasswordHasher.Verifiers`` / ``.Hasher`` / ``.Limits`` in the YAML file, or the
``ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER_...`` environment form); without one, ZITADEL's defaults
apply: the bcrypt hasher only and the limit table in docs/password-hashes.md.

:meth:`HashPolicy.check` says whether a converted hash (transforms/hashing/convert.py) imports, and if not
why, naming parameter, value, allowed range and the config key to change.
:func:`config_snippet` renders the YAML an operator needs for a run's hashes.

Pure functions, no Beam; the policy is a frozen, picklable dataclass.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from transforms.common import errors
from transforms.common.reasons import Reason
from transforms.hashing.convert import ConvertedHash, HashFailure

__all__ = [
    "VERIFIERS",
    "LIMITS",
    "DEFAULT_LIMITS",
    "HashPolicy",
    "OnUnsupportedHash",
    "ON_UNSUPPORTED_HASH",
    "ConfigError",
    "load_policy",
    "config_snippet",
    "CONFIG_REASONS",
]

# Verifier names ZITADEL's config accepts (internal/crypto/passwap.go).
VERIFIERS = (
    "argon2",
    "bcrypt",
    "md5",
    "md5plain",
    "md5salted",
    "phpass",
    "sha2",
    "scrypt",
    "pbkdf2",
    "drupal7",
)

# verifier → [(param as in ConvertedHash.params, config group, min key, max key)]
LIMITS: dict[str, list[tuple[str, str, str, str]]] = {
    "bcrypt": [("cost", "Bcrypt", "MinCost", "MaxCost")],
    "argon2": [
        ("time", "Argon2", "MinTime", "MaxTime"),
        ("memory", "Argon2", "MinMemory", "MaxMemory"),
        ("threads", "Argon2", "MinThreads", "MaxThreads"),
    ],
    "scrypt": [
        ("ln", "Scrypt", "MinLN", "MaxLN"),
        ("r", "Scrypt", "MinR", "MaxR"),
        ("p", "Scrypt", "MinP", "MaxP"),
    ],
    "pbkdf2": [("rounds", "PBKDF2", "MinRounds", "MaxRounds")],
    "sha2": [
        ("sha256rounds", "Sha2", "MinSha256Rounds", "MaxSha256Rounds"),
        ("sha512rounds", "Sha2", "MinSha512Rounds", "MaxSha512Rounds"),
    ],
    "phpass": [("rounds", "PHPass", "MinRounds", "MaxRounds")],
    "drupal7": [("iterations", "Drupal7", "MinIterations", "MaxIterations")],
}

_KEY_PARTS = {
    (verifier, param): (group, low, high)
    for verifier, rows in LIMITS.items()
    for param, group, low, high in rows
}

# ZITADEL's defaults (cmd/defaults.yaml, passwap v0.12); docs/password-hashes.md has the table.
DEFAULT_LIMITS: dict[str, int] = {
    "Bcrypt.MinCost": 10,
    "Bcrypt.MaxCost": 16,
    "Argon2.MinTime": 1,
    "Argon2.MaxTime": 10,
    "Argon2.MinMemory": 8192,
    "Argon2.MaxMemory": 524288,
    "Argon2.MinThreads": 1,
    "Argon2.MaxThreads": 16,
    "Scrypt.MinLN": 14,
    "Scrypt.MaxLN": 20,
    "Scrypt.MinR": 8,
    "Scrypt.MaxR": 32,
    "Scrypt.MinP": 1,
    "Scrypt.MaxP": 16,
    "PBKDF2.MinRounds": 1000,
    "PBKDF2.MaxRounds": 10_000_000,
    "Sha2.MinSha256Rounds": 1000,
    "Sha2.MaxSha256Rounds": 999_999_999,
    "Sha2.MinSha512Rounds": 1000,
    "Sha2.MaxSha512Rounds": 999_999_999,
    "PHPass.MinRounds": 7,
    "PHPass.MaxRounds": 31,
    "Drupal7.MinIterations": 1000,
    "Drupal7.MaxIterations": 500_000,
}


class OnUnsupportedHash(StrEnum):
    """--on-unsupported-hash, shared by every source: what happens to a user whose hash the target
    would refuse (its values are the flag's spelling)."""

    DEAD_LETTER = "dead-letter"
    IMPORT_WITHOUT_PASSWORD = "import-without-password"


ON_UNSUPPORTED_HASH = tuple(choice.value for choice in OnUnsupportedHash)
# Reasons a user may lose its password for under import-without-password (never: absent hash).
DROPPABLE_REASONS = frozenset(
    {
        Reason.UNSUPPORTED_HASH,
        Reason.INVALID_HASH,
        Reason.BCRYPT_COST,
        Reason.UNSUPPORTED_SALTED_SHA,
        Reason.UNSUPPORTED_HMAC,
        Reason.UNSUPPORTED_MD4,
        Reason.UNSUPPORTED_LDAP,
        Reason.UNSUPPORTED_PBKDF2_DIGEST,
        Reason.UNSUPPORTED_ARGON2_VARIANT,
        Reason.UNSUPPORTED_SCRYPT_COST,
        Reason.UNSUPPORTED_SALT,
        Reason.UNSUPPORTED_PASSWORD_ENCODING,
        Reason.HASH_VERIFIER_DISABLED,
        Reason.HASH_OUT_OF_LIMITS,
    }
)
# Reasons that mean "the target's configuration refuses this hash" (another config admits it).
CONFIG_REASONS = frozenset({Reason.HASH_VERIFIER_DISABLED, Reason.HASH_OUT_OF_LIMITS, Reason.BCRYPT_COST})
_ENV_PREFIX = "ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER_"
# Hasher.Algorithm values → the verifier that parses what that hasher writes.
_HASHER_VERIFIER = {
    "bcrypt": "bcrypt",
    "argon2i": "argon2",
    "argon2id": "argon2",
    "scrypt": "scrypt",
    "pbkdf2": "pbkdf2",
    "sha2": "sha2",
}
_CONFIG_PREFIX = "SystemDefaults.PasswordHasher."


class ConfigError(errors.ConfigError, ValueError):
    """The ZITADEL config cannot be used; one readable line (the CLI exits 2 with it)."""


@dataclasses.dataclass(frozen=True)
class HashPolicy:
    """Enabled verifiers (the hasher's included) and the limits, as ``Group.Key → value``."""

    verifiers: frozenset[str] = frozenset({"bcrypt"})
    limits: tuple[tuple[str, int], ...] = tuple(DEFAULT_LIMITS.items())
    # Derived from ``limits`` in __post_init__; not a constructor argument, not compared.
    _index: dict[tuple[str, str], tuple[int, int]] = dataclasses.field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        # check() runs once per user: (verifier, param) → (min, max) looked up in a dict built once.
        index = dict(self.limits)
        object.__setattr__(
            self,
            "_index",
            {
                key: (index[f"{group}.{low}"], index[f"{group}.{high}"])
                for key, (group, low, high) in _KEY_PARTS.items()
            },
        )

    def limit(self, key: str) -> int:
        return dict(self.limits)[key]

    def with_limits(self, **overrides: int) -> HashPolicy:
        """A copy with some limits replaced (keys like ``Bcrypt.MinCost`` given as ``Bcrypt_MinCost``)."""
        merged = dict(self.limits)
        merged.update({key.replace("_", "."): value for key, value in overrides.items()})
        return dataclasses.replace(self, limits=tuple(merged.items()))

    def check(self, converted: ConvertedHash) -> HashFailure | None:
        """None when the target imports ``converted``; else the reason (detail without the hash)."""
        if converted.verifier not in self.verifiers:
            return HashFailure(
                Reason.HASH_VERIFIER_DISABLED,
                f"{converted.algorithm} needs the ZITADEL verifier {converted.verifier!r}: add it to "
                f"{_CONFIG_PREFIX}Verifiers",
                converted,
            )
        limits = self._index
        for param, value in converted.params:
            low, high = limits[converted.verifier, param]
            if low <= value <= high:
                continue
            group, low_key, high_key = _KEY_PARTS[converted.verifier, param]
            key = low_key if value < low else high_key
            reason = Reason.BCRYPT_COST if converted.verifier == "bcrypt" else Reason.HASH_OUT_OF_LIMITS
            return HashFailure(
                reason,
                f"{converted.verifier} {param} {value} outside {low}..{high}: change "
                f"{_CONFIG_PREFIX}Limits.{group}.{key}",
                converted,
            )
        return None

    def covers(self, needed: Mapping[str, Mapping[str, tuple[int, int]]]) -> list[str]:
        """What of ``needed`` (verifier → param → (min, max) seen) this policy refuses; one line each."""
        problems = []
        limits = dict(self.limits)
        for verifier in sorted(needed):
            if verifier not in self.verifiers:
                problems.append(f"verifier {verifier!r} is not enabled ({_CONFIG_PREFIX}Verifiers)")
            for param, group, low_key, high_key in LIMITS.get(verifier, ()):
                seen = needed[verifier].get(param)
                if seen is None:
                    continue
                low, high = limits[f"{group}.{low_key}"], limits[f"{group}.{high_key}"]
                if seen[0] < low:
                    problems.append(
                        f"{verifier} {param} {seen[0]} < {_CONFIG_PREFIX}Limits.{group}.{low_key} = {low}"
                    )
                if seen[1] > high:
                    problems.append(
                        f"{verifier} {param} {seen[1]} > {_CONFIG_PREFIX}Limits.{group}.{high_key} = {high}"
                    )
        return problems


def _int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        raise ConfigError(f"{where} must be a non-negative integer")
    return int(value)


def _verifier_list(value: object, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # the env form: comma or space separated
        value = [part for part in value.replace(",", " ").split()]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where} must be a list of verifier names")
    unknown = sorted({item.lower() for item in value} - set(VERIFIERS))
    if unknown:
        raise ConfigError(f"{where}: unknown verifier {unknown[0]!r} (known: {', '.join(VERIFIERS)})")
    return [item.lower() for item in value]


def _ci_get(mapping: Mapping[str, object], key: str) -> Any:
    """Viper reads config keys case-insensitively; so do we."""
    for name, value in mapping.items():
        if isinstance(name, str) and name.lower() == key.lower():
            return value
    return None


def _apply(
    verifiers: set[str],
    limits: dict[str, int],
    hasher: object,
    listed: object,
    raw_limits: object,
    where: str,
) -> None:
    if hasher is not None:
        algorithm = _ci_get(hasher, "Algorithm") if isinstance(hasher, Mapping) else hasher
        if isinstance(algorithm, str) and algorithm.strip():
            verifier = _HASHER_VERIFIER.get(algorithm.strip().lower())
            if verifier is None:
                raise ConfigError(f"{where}Hasher.Algorithm {algorithm[:40]!r} is not a hasher ZITADEL knows")
            verifiers.add(verifier)
    verifiers.update(_verifier_list(listed, f"{where}Verifiers"))
    if raw_limits is None:
        return
    if not isinstance(raw_limits, Mapping):
        raise ConfigError(f"{where}Limits must be a mapping")
    for group_key, group in raw_limits.items():
        if not isinstance(group, Mapping):
            raise ConfigError(f"{where}Limits.{group_key} must be a mapping")
        for key, value in group.items():
            full = next((k for k in DEFAULT_LIMITS if k.lower() == f"{group_key}.{key}".lower()), None)
            if full is None:
                raise ConfigError(f"{where}Limits.{group_key}.{key} is not a limit ZITADEL knows")
            number = _int(value, f"{where}Limits.{group_key}.{key}")
            if number:  # 0 means passwap's own default (the table), not "no limit"
                limits[full] = number


def load_policy(path: str | None = None, environ: Mapping[str, str] | None = None) -> HashPolicy:
    """The policy from a ZITADEL config YAML (None: defaults), then ``ZITADEL_SYSTEMDEFAULTS_PASSWORDHASHER_*``
    variables from ``environ`` on top (ZITADEL lets the environment win, so do we)."""
    verifiers: set[str] = {"bcrypt"}
    limits = dict(DEFAULT_LIMITS)
    if path:
        import yaml  # PyYAML: ZITADEL's config is YAML

        try:
            with open(path, encoding="utf-8") as handle:
                document = yaml.safe_load(handle)
        except OSError as err:
            raise ConfigError(f"--zitadel-config {path}: {err.strerror or err}") from None
        except yaml.YAMLError as err:
            raise ConfigError(
                f"--zitadel-config {path}: not YAML ({str(err).splitlines()[0][:120]})"
            ) from None
        hasher_conf = (
            _ci_get(_ci_get(document, "SystemDefaults") or {}, "PasswordHasher")
            if isinstance(document, Mapping)
            else None
        )
        if hasher_conf is not None and not isinstance(hasher_conf, Mapping):
            raise ConfigError(f"--zitadel-config {path}: SystemDefaults.PasswordHasher must be a mapping")
        hasher_conf = hasher_conf or {}
        _apply(
            verifiers,
            limits,
            _ci_get(hasher_conf, "Hasher"),
            _ci_get(hasher_conf, "Verifiers"),
            _ci_get(hasher_conf, "Limits"),
            _CONFIG_PREFIX,
        )
    env = {k[len(_ENV_PREFIX) :]: v for k, v in (environ or {}).items() if k.startswith(_ENV_PREFIX)}
    if env:
        env_limits: dict[str, dict[str, str]] = {}
        for name, value in env.items():
            if name.startswith("LIMITS_"):
                full = next(
                    (k for k in DEFAULT_LIMITS if k.replace(".", "_").upper() == name[len("LIMITS_") :]), None
                )
                if full is None:
                    raise ConfigError(f"{_ENV_PREFIX}{name} is not a limit ZITADEL knows")
                group, key = full.split(".")
                env_limits.setdefault(group, {})[key] = value
        _apply(
            verifiers,
            limits,
            env.get("HASHER_ALGORITHM"),
            env.get("VERIFIERS"),
            env_limits or None,
            _ENV_PREFIX,
        )
    for group, low_key, high_key in {(g, lo, hi) for rows in LIMITS.values() for _, g, lo, hi in rows}:
        if limits[f"{group}.{low_key}"] > limits[f"{group}.{high_key}"]:
            raise ConfigError(f"Limits.{group}.{low_key} is above Limits.{group}.{high_key}")
    return HashPolicy(frozenset(verifiers), tuple(limits.items()))


def config_snippet(
    needed: Mapping[str, Mapping[str, tuple[int, int]]], policy: HashPolicy | None = None
) -> str:
    """The ``SystemDefaults.PasswordHasher`` YAML under which every hash of ``needed`` imports.

    ``needed`` is verifier → parameter → (lowest, highest) seen in the run. Only the verifiers
    the run needs are listed; limits are given where the run needs a wider range than
    ``policy``'s (default: ZITADEL's defaults, which is what the summary uses).
    """
    policy = policy or HashPolicy()
    limits = dict(policy.limits)
    changed: dict[str, dict[str, int]] = {}
    for verifier in sorted(needed):
        for param, group, low_key, high_key in LIMITS.get(verifier, ()):
            seen = needed[verifier].get(param)
            if seen is None:
                continue
            if seen[0] < limits[f"{group}.{low_key}"]:
                changed.setdefault(group, {})[low_key] = seen[0]
            if seen[1] > limits[f"{group}.{high_key}"]:
                changed.setdefault(group, {})[high_key] = seen[1]
    enabled = sorted(needed)
    lines = ["SystemDefaults:", "  PasswordHasher:", "    Verifiers:"]
    lines += [f"      - {name}" for name in enabled] or ["      []"]
    if changed:
        lines.append("    Limits:")
        for group in sorted(changed):
            lines.append(f"      {group}:")
            lines += [f"        {key}: {value}" for key, value in sorted(changed[group].items())]
    return "\n".join(lines) + "\n"


def needed_ranges(hashes: Iterable[ConvertedHash]) -> dict[str, dict[str, tuple[int, int]]]:
    """verifier → param → (min, max) over ``hashes`` (tests and small runs; pipelines use metrics)."""
    result: dict[str, dict[str, tuple[int, int]]] = {}
    for item in hashes:
        params = result.setdefault(item.verifier, {})
        for name, value in item.params:
            low, high = params.get(name, (value, value))
            params[name] = (min(low, value), max(high, value))
    return result
