"""``--hash-config FILE``: Firebase's password hash parameters, recorded without their secrets.

The Firebase console (Authentication > Users > ⋮ > Password hash parameters) shows the
project's ``hash_config`` block::

    hash_config {
      algorithm: SCRYPT,
      base64_signer_key: <...>,
      base64_salt_separator: <...>,
      rounds: 8,
      mem_cost: 14,
    }

ZITADEL cannot verify Firebase's modified scrypt with or without these parameters, so they do
not change any body: the run records them in its report so that the operator knows which
parameters the hashes left behind were made with. The signer key and the salt separator are
secrets: only whether they were given is recorded, never their values (not in a body, a log
line, an error or the manifest). The same keys as a JSON object are read too.

Example::

    read_hash_config("hash_config.txt")
    # {'algorithm': 'SCRYPT', 'rounds': 8, 'mem_cost': 14, 'signer_key_given': True,
    #  'salt_separator_given': True}
"""

from __future__ import annotations

import re

import orjson

__all__ = ["HashConfigError", "parse_hash_config", "read_hash_config", "read_hash_config_values"]

_PAIR = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*?)\s*,?\s*$")
_SECRETS = {"base64_signer_key": "signer_key_given", "base64_salt_separator": "salt_separator_given"}
_NUMBERS = ("rounds", "mem_cost")
_MAX_BYTES = 64 * 1024


class HashConfigError(ValueError):
    """The file is not a ``hash_config`` block; one line that names no secret value."""


def _pairs(text: str) -> dict[str, str]:
    """The ``key: value`` pairs of the block (or of a JSON object), values as text."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            parsed = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            raise HashConfigError("not valid JSON and not a hash_config block") from None
        if not isinstance(parsed, dict):
            raise HashConfigError("not a JSON object")
        block = parsed.get("hash_config", parsed)
        if not isinstance(block, dict):
            raise HashConfigError('"hash_config" is not an object')
        return {str(k): str(v) if not isinstance(v, str) else v for k, v in block.items()}
    pairs: dict[str, str] = {}
    for line in text.splitlines():
        match = _PAIR.match(line)
        if match:
            pairs[match.group(1)] = match.group(2).strip().strip('"')
    return pairs


def parse_hash_config(text: str) -> dict[str, object]:
    """The recorded form of a ``hash_config`` block: algorithm, rounds, mem_cost and whether
    each secret was given; HashConfigError (one line, no secret value) when it cannot be read."""
    pairs = _pairs(text)
    algorithm = pairs.get("algorithm", "").strip()
    if not algorithm:
        raise HashConfigError('no "algorithm" (expected the hash_config block the Firebase console shows)')
    if not re.fullmatch(r"[A-Z0-9_]{1,40}", algorithm):
        raise HashConfigError('"algorithm" is not a Firebase algorithm name (SCRYPT, BCRYPT, ...)')
    recorded: dict[str, object] = {"algorithm": algorithm}
    for key in _NUMBERS:
        if key in pairs:
            value = pairs[key].strip()
            if not value.isdigit() or len(value) > 6:
                raise HashConfigError(f'"{key}" is not a small whole number')
            recorded[key] = int(value)
    for key, name in _SECRETS.items():
        recorded[name] = bool(pairs.get(key, "").strip())
    return recorded


def read_hash_config(path: str) -> dict[str, object]:
    """:func:`parse_hash_config` of a file (local or gs://)."""
    return parse_hash_config(_read_text(path))


def read_hash_config_values(path: str) -> dict[str, str]:
    """The block's keys and values as text, secrets included: only for ``--legacy-hashes``, which
    keeps them in its 0600 store for the companion (docs/companion.md#store); checked as
    :func:`read_hash_config` checks them first."""
    text = _read_text(path)
    parse_hash_config(text)
    return _pairs(text)


def _read_text(path: str) -> str:
    from apache_beam.io.filesystems import FileSystems

    try:
        with FileSystems.open(path) as handle:
            data = handle.read(_MAX_BYTES + 1)
    except Exception as err:  # Beam wraps every backend error in BeamIOError
        raise HashConfigError(f"cannot be read ({type(err).__name__})") from None
    if len(data) > _MAX_BYTES:
        raise HashConfigError("larger than 64 KiB: not a hash_config block")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise HashConfigError("not UTF-8 text") from None
