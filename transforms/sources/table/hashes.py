"""The hash column of a table → the string ZITADEL verifies, or why not: pure, no Beam.

Each value is rewritten by ``transforms/hashing/forms.to_passwap``: its form detected per
value (or the one declared with ``--hash-form`` / the mapping's ``hash_form``), then written in
the form passwap parses (Django's ``pbkdf2_sha256$...`` as ``$pbkdf2-sha256$...``, ASP.NET Core
Identity's base64 as ``$pbkdf2-sha...``, bcrypt as it is, ...; docs/hash-forms.md), or refused with
a reason that names the form. A written hash is then checked against the target's verifiers and
limits (``--zitadel-config``, ``transforms/hashing/policy.py``). A refusal is a
:class:`HashFailure`; the caller applies ``--on-unsupported-hash``. No detail holds the hash.

Example::

    converted, outcome = convert_hash("pbkdf2_sha256$600000$salt$hash=", None, HashPolicy())
    # HashFailure(reason='hash-verifier-disabled', ...): ZITADEL's default enables bcrypt only
"""

from __future__ import annotations

import base64
import binascii

from transforms.common.reasons import Reason
from transforms.hashing.convert import ConvertedHash, HashFailure, parse_hash
from transforms.hashing.forms import HashForm, Rewritten, to_passwap
from transforms.hashing.framework_hashes import ab64
from transforms.hashing.policy import HashPolicy

__all__ = [
    "convert_hash",
    "hash_form",
    "row_hash",
    "HASH_FORM_NAMES",
    "FRAMEWORKS",
    "HASHERS",
    "WRITABLE_FORM_NAMES",
]

# --hash-form values: "auto" (the default) detects each value's form.
HASH_FORM_NAMES = ("auto", *(form.value for form in HashForm))
# Frameworks named as --hash-form: the form their users table holds (None: several, each value's
# detected). Laravel's Hash::make, Rails' has_secure_password and Devise write bcrypt ($2y$/$2a$);
# WordPress before 6.8 phpass ($P$; 6.8's $wp$ is refused with its reason, see convert_hash);
# phpBB 3.0 phpass ($H$); Drupal 7 its $S$ sha512 form.
FRAMEWORKS: dict[str, HashForm | None] = {
    "laravel": HashForm.BCRYPT,
    "rails": HashForm.BCRYPT,
    "devise": HashForm.BCRYPT,
    "wordpress": HashForm.PHPASS,
    "phpbb": HashForm.PHPASS,
    "drupal": HashForm.DRUPAL7,
    "django": None,
    "symfony": None,
    "joomla": None,
    "aspnet": None,
    "werkzeug": None,
    "flask": None,
    "supabase": HashForm.BCRYPT,
}
# The forms a value can be written in: a suggestion never names one that refuses every value.
WRITABLE_FORM_NAMES = tuple(
    form.value
    for form in HashForm
    if not (to_passwap("x", form).code or "").startswith(Reason.UNSUPPORTED_HASH)
)


# A per-row hasher name (the mapping's ``password_hasher`` column: Clerk's) → the form its digests
# are written in. Clerk's own pbkdf2 layouts are rewritten first (:func:`_clerk_pbkdf2`). Names
# and layouts: docs/export-formats/clerk.md §4.
HASHERS: dict[str, HashForm] = {
    "bcrypt": HashForm.BCRYPT,
    "argon2i": HashForm.ARGON2,
    "argon2id": HashForm.ARGON2,
    "argon2": HashForm.ARGON2,
    "pbkdf2_sha256": HashForm.PBKDF2,  # Clerk's: salt and hash base64 (rewritten)
    "pbkdf2_sha1": HashForm.PBKDF2,  # Clerk's: hash hex, salt hex or text (rewritten)
    "pbkdf2_sha256_django": HashForm.DJANGO_PBKDF2_SHA256,
    "bcrypt_sha256_django": HashForm.DJANGO_BCRYPT_SHA256,  # refused with its reason
    "md5": HashForm.MD5_PLAIN,
    "phpass": HashForm.PHPASS,
    "scrypt_firebase": HashForm.FIREBASE_SCRYPT,  # refused with its reason (the companion's form)
}


def row_hash(value: str, hasher: str) -> tuple[str, HashForm | None] | HashFailure:
    """A digest and the hasher its row names → the value to convert and its form; a hasher
    without a form ZITADEL verifies is refused naming it. An empty hasher: bcrypt (Clerk's
    default), any hash form or framework name of ``--hash-form`` is taken too."""
    name = hasher.strip().lower()
    if name == "":
        return value, HashForm.BCRYPT
    form = HASHERS.get(name)
    if form is None:
        try:
            form = hash_form(name)  # a form's own name, or a framework's (None: detected per value)
        except ValueError:
            return HashFailure(
                Reason.UNSUPPORTED_HASH,
                f"password_hasher {hasher.strip()[:40]!r}: no form ZITADEL verifies "
                f"(the hashers read are {', '.join(HASHERS)}; docs/table.md#hashes)",
            )
    if name in ("pbkdf2_sha256", "pbkdf2_sha1"):
        rewritten = _clerk_pbkdf2(value, name)
        if rewritten is None:
            return HashFailure(
                Reason.INVALID_HASH, f"password_hasher {name}: not {name}$<iterations>$<salt>$<hash>"
            )
        return rewritten, form
    return value, form


def _clerk_pbkdf2(value: str, name: str) -> str | None:
    """Clerk's ``pbkdf2_sha256$<iter>$<b64 salt>$<b64 hash>`` and ``pbkdf2_sha1$<iter>$<salt hex
    or text>$<hash hex>[$<key length>]`` → passwap's ``$pbkdf2-sha256$`` / ``$pbkdf2$`` layout
    (adapted base64 of the salt and hash bytes); None when the value is not of that layout."""
    fields = value.split("$")
    if len(fields) not in (4, 5) or (len(fields) == 5 and name != "pbkdf2_sha1"):
        return None
    ident, rounds_text, salt_text, hash_text, *_ = fields  # a 5th field: the key length (its hash's)
    if ident != name or not rounds_text.isdigit():
        return None
    rounds = int(rounds_text)
    try:
        if name == "pbkdf2_sha256":
            salt = base64.b64decode(salt_text, validate=True)
            digest = base64.b64decode(hash_text, validate=True)
            ident = "pbkdf2-sha256"
        else:
            try:  # "as a hex-encoded string. If the salt is not a valid hex string, the raw bytes"
                salt = bytes.fromhex(salt_text)
            except ValueError:
                salt = salt_text.encode()
            digest = bytes.fromhex(hash_text)
            ident = "pbkdf2"
    except (ValueError, binascii.Error):
        return None
    if not salt or not digest or rounds < 1:
        return None
    return f"${ident}${rounds}${ab64(salt)}${ab64(digest)}"


def hash_form(name: str | None) -> HashForm | None:
    """``--hash-form`` / ``hash_form`` (a form, or a framework of :data:`FRAMEWORKS`) → the form,
    None for ``auto``; ValueError naming the choices."""
    if name is None or name == "auto":
        return None
    if name.lower() in FRAMEWORKS:
        return FRAMEWORKS[name.lower()]
    try:
        return HashForm(name)
    except ValueError:
        raise ValueError(f"hash form {name!r} is not one of {', '.join(HASH_FORM_NAMES)}") from None


def convert_hash(
    value: str, form: HashForm | None, policy: HashPolicy | None
) -> tuple[ConvertedHash | HashFailure, Rewritten | None]:
    """``value`` (trimmed, not empty) → the written hash or why not, and the form outcome the run
    counts (``HashTally.rewritten``: written or refused by form; a hash the target's
    configuration refused counts as refused by its form, and by its verifier through the failure's
    ``refused``)."""
    outcome: Rewritten | None = None
    if form is HashForm.PHPASS and value.startswith("$wp"):
        form = None  # WordPress 6.8's bcrypt of an HMAC-SHA384: detected, refused with its reason
    parsed = parse_hash(value) if form is None and value.startswith("$2") else None
    if isinstance(parsed, ConvertedHash):
        # bcrypt, passwap's own form: written as it is (the common case, without the detection).
        converted = parsed
        outcome = Rewritten(value, HashForm.BCRYPT, None, None, parsed)
    else:
        outcome = to_passwap(value, form)
        if outcome.converted is None or outcome.encoded is None:
            return HashFailure(outcome.code or Reason.INVALID_HASH, outcome.reason or "not a hash"), outcome
        converted = outcome.converted
    if policy is not None:
        refused = policy.check(converted)
        if refused is not None:
            # Its form counted as refused (refused_hash_forms.<form>), its verifier as refused by
            # the target (refused_hashes.<verifier>, from refused.refused).
            return refused, outcome._replace(encoded=None, converted=None, code=refused.reason)
    return converted, outcome
