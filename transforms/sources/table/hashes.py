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

from transforms.common.reasons import Reason
from transforms.hashing.convert import ConvertedHash, HashFailure, parse_hash
from transforms.hashing.forms import HashForm, Rewritten, to_passwap
from transforms.hashing.hashers import HASHERS, by_hasher
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


def row_hash(value: str, hasher: str) -> tuple[str, HashForm | None] | HashFailure:
    """A digest and the hasher its row names → the value to convert and its form (the hashers of
    ``transforms/hashing/hashers.py``); a hasher without a form ZITADEL verifies is refused naming
    it. An empty hasher: bcrypt (Clerk's default), any hash form or framework name of
    ``--hash-form`` is taken too."""
    name = hasher.strip().lower()
    if name == "":
        return value, HashForm.BCRYPT
    read = by_hasher(value, name)
    if read is not None:
        return read
    try:
        return value, hash_form(name)  # a form's own name, or a framework's (None: detected per value)
    except ValueError:
        return HashFailure(
            Reason.UNSUPPORTED_HASH,
            f"password_hasher {hasher.strip()[:40]!r}: no form ZITADEL verifies "
            f"(the hashers read are {', '.join(HASHERS)}; docs/table.md#hashes)",
        )


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
