"""A hasher's name, as a per-row column names it (Clerk's ``password_hasher``) → the digest in a
form ``forms.to_passwap`` converts, and that form: pure, no Beam.

A digest is read as its hasher says, never by its look: Clerk's ``pbkdf2_sha256`` and
``pbkdf2_sha1`` share Django's prefixes but not its layout (salt and hash base64, or the hash in
hex), so they are rewritten into passwap's ``$pbkdf2-sha256$`` / ``$pbkdf2$`` here. Names and
layouts: docs/export-formats/clerk.md §4. Used by ``migrate clerk`` and by the table mapping's
``password_hasher`` (docs/table.md#per-row-hash-forms).

Example::

    by_hasher("pbkdf2_sha1$10000$73616c74$a1b2...", "pbkdf2_sha1")
    # ('$pbkdf2$10000$c2FsdA$...', HashForm.PBKDF2)
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable

from transforms.common.reasons import Reason
from transforms.hashing.convert import HashFailure, b64decode, positive_int
from transforms.hashing.forms import HashForm
from transforms.hashing.framework_hashes import ab64

__all__ = ["HASHERS", "by_hasher"]

# A hasher's name → the form its digests are written in (after the rewrites below).
HASHERS: dict[str, HashForm] = {
    "bcrypt": HashForm.BCRYPT,
    "argon2i": HashForm.ARGON2,
    "argon2id": HashForm.ARGON2,
    "argon2": HashForm.ARGON2,
    "pbkdf2_sha256": HashForm.PBKDF2,  # Clerk's: salt and hash base64 (rewritten)
    "pbkdf2_sha1": HashForm.PBKDF2,  # Clerk's: hash hex, salt hex or text (rewritten)
    "pbkdf2_sha256_django": HashForm.DJANGO_PBKDF2_SHA256,
    "md5": HashForm.MD5_PLAIN,
    "phpass": HashForm.PHPASS,
    # Refused with their form's reason: ZITADEL has no verifier for them.
    "bcrypt_sha256_django": HashForm.DJANGO_BCRYPT_SHA256,
    "scrypt_firebase": HashForm.FIREBASE_SCRYPT,  # the companion's form
}
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})+$")


def _pbkdf2_sha256(digest: str) -> str | HashFailure:
    """Clerk's ``pbkdf2_sha256$<iter>$<b64 salt>$<b64 hash>`` (both base64, unlike Django's text salt)."""
    fields = digest.split("$")
    ident, rounds_text, salt_text, hash_text = fields if len(fields) == 4 else ("", "", "", "")
    rounds = positive_int(rounds_text) if ident == "pbkdf2_sha256" else None
    salt, key = (b64decode(salt_text), b64decode(hash_text)) if rounds else (None, None)
    if not salt or not key:
        return HashFailure(Reason.INVALID_HASH, "pbkdf2_sha256: expected pbkdf2_sha256$<iter>$<b64>$<b64>")
    return f"$pbkdf2-sha256${rounds}${ab64(salt)}${ab64(key)}"


def _pbkdf2_sha1(digest: str) -> str | HashFailure:
    """Clerk's ``pbkdf2_sha1$<iter>$<salt>$<hex hash>[$<key length>]``: the salt hex-decoded when
    it is hex, else its bytes as they are."""
    fields = digest.split("$")
    ident, rounds_text, salt_text, hash_text, *length = fields if len(fields) in (4, 5) else ("",) * 4
    rounds = positive_int(rounds_text) if ident == "pbkdf2_sha1" else None
    if not rounds or not salt_text or not _HEX.match(hash_text):
        return HashFailure(Reason.INVALID_HASH, "pbkdf2_sha1: expected pbkdf2_sha1$<iter>$<salt>$<hex hash>")
    key = binascii.unhexlify(hash_text)
    if length and positive_int(length[0]) != len(key):
        return HashFailure(Reason.INVALID_HASH, "pbkdf2_sha1: the key length field is not the hash's")
    salt = binascii.unhexlify(salt_text) if _HEX.match(salt_text) else salt_text.encode()
    return f"$pbkdf2${rounds}${ab64(salt)}${ab64(key)}"


_REWRITES: dict[str, Callable[[str], str | HashFailure]] = {
    "pbkdf2_sha256": _pbkdf2_sha256,
    "pbkdf2_sha1": _pbkdf2_sha1,
}


def by_hasher(digest: str, hasher: str) -> tuple[str, HashForm] | HashFailure | None:
    """``digest`` as the hasher named ``hasher`` (case and spaces ignored) wrote it → the value to
    convert and its form; a HashFailure when the digest is not of the hasher's layout; None when
    the name is not a hasher read here (the caller says what else it takes)."""
    name = hasher.strip().lower()
    form = HASHERS.get(name)
    if form is None:
        return None
    rewrite = _REWRITES.get(name)
    if rewrite is None:
        return digest, form
    rewritten = rewrite(digest)
    return rewritten if isinstance(rewritten, HashFailure) else (rewritten, form)
