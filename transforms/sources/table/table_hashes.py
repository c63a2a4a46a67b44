"""The hash column of a table → the string ZITADEL verifies, or why not: pure, no Beam.

Each value is taken as a hash string one of ZITADEL's verifiers parses (bcrypt ``$2a$``/``$2b$``/
``$2y$``, argon2 PHC, ``$pbkdf2...``, ``$scrypt$``, md5-crypt, sha-crypt, phpass, drupal7,
md5salted, plain md5: ``transforms/hashing/convert.parse_hash``), then checked against the
target's verifiers and limits (``--zitadel-config``, ``transforms/hashing/policy.py``). A hash
the target cannot verify is a :class:`HashFailure` with its reason; the caller applies
``--on-unsupported-hash``. The failure's detail never holds the hash.

Example::

    convert_hash("$2a$10$...", None, HashPolicy())  # ConvertedHash('bcrypt', '$2a$10$...', 'bcrypt', (('cost', 10),))
"""

from __future__ import annotations

from transforms.hashing.convert import ConvertedHash, HashFailure, parse_hash
from transforms.hashing.policy import HashPolicy

__all__ = ["convert_hash", "HASH_FORMS"]

# --hash-form values: "auto" reads each value for what it is.
HASH_FORMS = ("auto",)


def convert_hash(value: str, form: str | None, policy: HashPolicy | None) -> ConvertedHash | HashFailure:
    """``value`` (trimmed, not empty) → the passwap string and its verifier, or the reason why not."""
    parsed = parse_hash(value)
    if isinstance(parsed, HashFailure):
        return parsed
    if policy is not None:
        refused = policy.check(parsed)
        if refused is not None:
            return refused
    return parsed
