"""One Ory Kratos identity → a ZITADEL ``humanUsers`` entry, or the reason it is none: the pure mapping.

An identity is an element of the admin API's ``GET /admin/identities`` page (a JSON array; with
``include_credential=password`` its hashes), of ``kratos list identities --format json`` (an
object ``{"identities": [...]}``, no credentials), of ``kratos get identity`` (one object) or of an
NDJSON file made from them. docs/kratos.md lists the fields and where the facts come from.

- ``id`` is the user id; ``state: inactive`` refuses the user (``blocked``) unless
  ``include_blocked`` (``--include-blocked``, or ``--state``, which deactivates it in ZITADEL).
- Traits are the identity schema's: e-mail, phone, user name and names are read at the paths of
  :data:`DEFAULT_TRAITS` (Kratos's presets and quickstart schemas) or those ``--traits`` names.
  Each address is verified when its own ``verifiable_addresses`` entry says ``verified: true``.
- ``credentials.password.config.hashed_password`` in every form Kratos verifies: rewritten by
  :func:`passwap_form` into a form ``transforms/hashing`` converts, then into passwap's.
- ``credentials.oidc``/``saml`` → IdP links (``--idp-map``); ``credentials.totp`` → ``otpCode``
  when its ``totp_url`` is SHA1, 6 digits, 30 s; other credential types are counted.
- With ``--metadata``: ``external_id``, ``metadata_public`` (``public.<key>``), ``metadata_admin``
  (``admin.<key>``) and the traits no field takes (``traits.<key>``) become metadata.

Example::

    mapped = map_identity({"id": "u1", "traits": {"email": "ann@example.com"}}, KratosOptions())
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import orjson

from transforms.common.reasons import Reason
from transforms.hashing import framework_hashes as fw
from transforms.hashing.convert import ConvertedHash, HashFailure
from transforms.hashing.forms import Rewritten, to_passwap
from transforms.hashing.policy import OnUnsupportedHash
from transforms.mapping.idp_links import LinkFields, idp_links
from transforms.mapping.ids import EmailChoice, email_or_fallback
from transforms.mapping.otp import cause_name
from transforms.mapping.validate import (
    MAX_METADATA_KEY,
    MAX_METADATA_VALUE,
    ValidationOptions,
    normalise_otp,
    otp_problem,
    validate_user,
)

__all__ = [
    "KratosOptions",
    "MappedUser",
    "Refusal",
    "map_identity",
    "passwap_form",
    "shown",
    "KNOWN",
    "METADATA_FIELDS",
    "NOT_CARRIED",
    "DEFAULT_TRAITS",
]

# The profile fields ``--traits`` maps, and the trait paths read when it does not: Kratos's
# presets (preset://email, username, sms, basic) and quickstart schemas (docs/kratos.md).
DEFAULT_TRAITS: dict[str, tuple[str, ...]] = {
    "email": ("email",),
    "phone": ("phone", "phone_number"),
    "username": ("username",),
    "first_name": ("name.first", "first_name"),
    "last_name": ("name.last", "last_name"),
    "display_name": ("name", "display_name"),
}
KNOWN = frozenset({"id", "credentials", "traits", "verifiable_addresses", "state"})
METADATA_FIELDS = frozenset({"external_id", "metadata_public", "metadata_admin"})
NOT_CARRIED = frozenset(
    "schema_id schema_url state_changed_at recovery_addresses organization_id created_at updated_at".split()
)
LINK_TYPES = ("oidc", "saml")
_LINKS = LinkFields("links", "provider", "subject", display=lambda user, entry, ext: str(user["shown"]))
# Kratos's crypt forms under their own names (hash/hash_comparator.go) → the crypt prefixes.
_CRYPT = (("$md5-crypt$", "$1$"), ("$sha256-crypt$", "$5$"), ("$sha512-crypt$", "$6$"))
_SALTED_SHA = re.compile(r"^\$sha(?:1|256|512)\$")
_MD5_FORMATS = {"{SALT}{PASSWORD}": "prefix", "{PASSWORD}{SALT}": "suffix"}


@dataclasses.dataclass(frozen=True)
class KratosOptions:
    include_blocked: bool = False  # --include-blocked or --state
    metadata: bool = False  # --metadata
    email_fallback: str | None = None
    on_unsupported_hash: OnUnsupportedHash = OnUnsupportedHash.DEAD_LETTER
    validation: ValidationOptions = ValidationOptions(
        allowed_hash_families=("bcrypt", "argon2", "pbkdf2", "other")
    )
    idp_map: tuple[tuple[str, str], ...] = ()
    traits: tuple[tuple[str, tuple[str, ...]], ...] = tuple(DEFAULT_TRAITS.items())  # --traits


class Refusal(NamedTuple):
    reason: str
    detail: str
    form: Rewritten | None = None  # the hash's form outcome, counted for a refused hash
    refused: ConvertedHash | None = None  # a hash the target's configuration does not admit


@dataclasses.dataclass
class MappedUser:
    entry: dict[str, object]
    metadata: list[dict[str, str]]
    metadata_dropped: int
    notes: list[str]
    verifier: str  # the verifier of the hash written, "" for none
    form: Rewritten | None  # the hash's form outcome (HashTally)
    dropped: HashFailure | None  # the hash not imported (--on-unsupported-hash=import-without-password)
    why_none: str | None  # why no password: no-credentials, not-exported, migration-hook, none
    links: list[tuple[str, str]]  # (outcome, provider) per oidc/saml entry
    totp_not_carried: list[str]  # causes
    other_credentials: list[str]  # credential types not carried
    unmapped_traits: tuple[str, ...]
    inactive: bool


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


@functools.lru_cache(maxsize=256)
def _parts(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


def _at(traits: Mapping[str, object], paths: Sequence[str]) -> tuple[str, str]:
    """The first of ``paths`` (dotted) holding text in ``traits``, and its top-level key."""
    for path in paths:
        parts = _parts(path)
        value = traits.get(parts[0])
        for part in parts[1:]:
            value = value.get(part) if type(value) is dict else None
        if type(value) is str and value.strip():
            return value.strip(), parts[0]
    return "", ""


def _address(identity: Mapping[str, object], via: str, value: str) -> tuple[str, bool]:
    """``value`` (else the first address ``via`` email/sms) and whether its own entry is verified."""
    entries = identity.get("verifiable_addresses")
    entries = (
        [e for e in entries if isinstance(e, dict) and e.get("via") == via]
        if isinstance(entries, list)
        else []
    )
    if not value and entries:
        value = _text(min(entries, key=lambda e: e.get("verified") is not True).get("value"))
    wanted = value.casefold()
    verified = any(_text(e.get("value")).casefold() == wanted and e.get("verified") is True for e in entries)
    return value, bool(value) and verified


def _e164(phone: str) -> str:
    """Spaces, dots, dashes and brackets removed; without ``+`` it stays (validation drops it, counted)."""
    digits = phone.translate(str.maketrans("", "", " .-()"))
    return digits if digits.startswith("+") else phone


def map_identity(identity: object, options: KratosOptions) -> MappedUser | Refusal:
    """One identity → a validated entry and what is counted of it, or why not (module docstring)."""
    if not isinstance(identity, dict):
        return Refusal(Reason.NOT_AN_OBJECT, "identity is not a JSON object")
    user_id = identity.get("id")
    if not isinstance(user_id, str) or not user_id.strip() or user_id != user_id.strip():
        return Refusal(Reason.MISSING_USER_ID, "identity has no id (a non-empty string)")
    inactive = identity.get("state") == "inactive"
    if inactive and not options.include_blocked:
        return Refusal(Reason.BLOCKED, "state inactive at Kratos (--include-blocked imports such users)")
    raw_traits = identity.get("traits")
    traits: Mapping[str, object] = raw_traits if isinstance(raw_traits, dict) else {}
    found = {field: _at(traits, paths) for field, paths in options.traits}
    email, email_verified = _address(identity, "email", found["email"][0])
    phone, phone_verified = _address(identity, "sms", found["phone"][0])
    user_name = found["username"][0] or email or phone or user_id
    choice = email_or_fallback(email, options.email_fallback, user_name, user_id)
    if not isinstance(choice, EmailChoice):
        return Refusal(*choice)
    display = found["display_name"][0]
    first_of, _, last_of = display.rpartition(" ")
    profile: dict[str, object] = {
        "firstName": found["first_name"][0] or first_of or last_of or user_name,
        "lastName": found["last_name"][0] or last_of or user_name,
    }
    if display:
        profile["displayName"] = display
    verified = email_verified and not choice.from_fallback
    body: dict[str, object] = {
        "userName": user_name,
        "profile": profile,
        "email": {"email": choice.email, "isEmailVerified": True} if verified else {"email": choice.email},
    }
    if phone:
        body["phone"] = (
            {"phone": _e164(phone), "isPhoneVerified": True} if phone_verified else {"phone": _e164(phone)}
        )
    raw_credentials = identity.get("credentials")
    credentials: Mapping[str, object] = raw_credentials if isinstance(raw_credentials, dict) else {}
    password = _password(raw_credentials, options, body)
    if isinstance(password, Refusal):
        return password
    links, outcomes = idp_links(
        {"links": _link_entries(credentials), "shown": choice.email}, dict(options.idp_map), _LINKS
    )
    if links:
        body["idps"] = links
    secret, totp_causes = _totp(credentials.get("totp"))
    if secret is not None:
        body["otpCode"] = secret
    entry: dict[str, object] = {"userId": user_id, "user": body}
    result = validate_user(entry, options.validation)
    if result.reason is not None:
        return Refusal(result.reason, result.detail, password[1])
    used = {key for _, key in found.values() if key}
    unmapped = tuple(
        sorted(key for key, value in traits.items() if key not in used and value not in (None, "", [], {}))
    )
    metadata, dropped = _metadata(identity, traits, unmapped) if options.metadata else ([], 0)
    others = sorted(cause_name(t) for t in credentials if t not in ("password", "totp", *LINK_TYPES))
    return MappedUser(
        entry, metadata, dropped, list(result.notes), *password,
        links=outcomes, totp_not_carried=totp_causes, other_credentials=others,
        unmapped_traits=unmapped, inactive=inactive,
    )  # fmt: skip


_Password = tuple[str, Rewritten | None, HashFailure | None, str | None]


def _password(credentials: object, options: KratosOptions, body: dict[str, object]) -> _Password | Refusal:
    """``credentials.password`` → ``hashedPassword`` in ``body``: (verifier, form outcome, hash
    dropped, why there is none), or the refusal of its hash (``--on-unsupported-hash``)."""
    if not isinstance(credentials, dict):
        return "", None, None, "no-credentials"  # kratos list identities, or no include_credential
    credential = credentials.get("password")
    if not isinstance(credential, dict):
        return "", None, None, "none"
    config = credential.get("config")
    if not isinstance(config, dict):
        return "", None, None, "not-exported"  # listed without include_credential=password
    hashed = _text(config.get("hashed_password"))
    if not hashed:
        return (
            "",
            None,
            None,
            "migration-hook" if config.get("use_password_migration_hook") is True else "none",
        )
    outcome = _rewritten(hashed)
    failure: HashFailure | None = None
    if outcome.converted is None:
        failure = HashFailure(outcome.code or Reason.INVALID_HASH, outcome.reason or "not a hash")
    elif options.validation.hash_policy is not None:
        failure = options.validation.hash_policy.check(outcome.converted)
        if failure is not None:
            outcome = outcome._replace(encoded=None, converted=None, code=failure.reason)
    if failure is None:
        assert outcome.converted is not None
        body["hashedPassword"] = {"value": outcome.converted.value}
        return outcome.converted.verifier, outcome, None, None
    if options.on_unsupported_hash == OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD:
        return "", outcome, failure, None
    form = outcome if outcome.form is not None else None
    return Refusal(failure.reason, failure.detail, form, failure.refused)


def _rewritten(hashed: str) -> Rewritten:
    """A ``hashed_password`` through :func:`passwap_form`, then ``forms.to_passwap``."""
    form = passwap_form(hashed)
    if isinstance(form, fw.Refusal):
        return Rewritten(
            None,
            None,
            f"kratos {hashed.split('$')[1][:20] if hashed.startswith('$') else 'hash'}: {form.detail}",
            form.code,
        )
    return to_passwap(form)


def passwap_form(value: str) -> str | fw.Refusal:
    """Kratos's own spellings (hash/hash_comparator.go) → a form ``transforms/hashing`` converts:
    ``$md5-crypt$`` / ``$sha256-crypt$`` / ``$sha512-crypt$`` → ``$1$`` / ``$5$`` / ``$6$``;
    ``$scrypt$ln=<N>`` → ``ln=<log2 N>``; ``$md5$<base64>`` → hex; ``$md5$pf=..`` → md5salted;
    salted SHA, HMAC and Firebase scrypt refused. Anything else as it is (bcrypt, argon2, pbkdf2)."""
    if value.startswith("$scrypt$"):
        return fw.scrypt_n_as_ln(value)  # Kratos's ln is N, whatever its size
    for prefix, crypt in _CRYPT:
        if value.startswith(prefix):
            return crypt + value[len(prefix) :]
    if value.startswith("$md5$"):
        return _md5(value.split("$")[2:])
    if _SALTED_SHA.match(value):
        return fw.Refusal(
            Reason.UNSUPPORTED_SALTED_SHA, "salted SHA ($sha1$/$sha256$/$sha512$pf=): no passwap verifier"
        )
    if value.startswith("$hmac-"):
        return fw.Refusal(Reason.UNSUPPORTED_HMAC, "HMAC of the password: no passwap verifier")
    if value.startswith("$firescrypt$"):
        return fw.Refusal(Reason.UNSUPPORTED_HASH, "Firebase's modified scrypt: ZITADEL cannot verify it")
    return value


def _md5(fields: list[str]) -> str | fw.Refusal:
    """``$md5$<base64 md5>`` → 32 hex digits; ``$md5$pf=<format>$<salt>$<hash>`` (each base64) →
    ``$md5salted-prefix|suffix$<salt>$<hash>`` when the format is ``{SALT}{PASSWORD}`` or the reverse."""
    if len(fields) == 1:
        digest = fw.std_b64(fields[0])
        if digest is not None and len(digest) == 16:
            return digest.hex()
    elif len(fields) == 3 and fields[0].startswith("pf="):
        pattern, salt, digest = fw.std_b64(fields[0][3:]), fw.std_b64(fields[1]) or b"", fw.std_b64(fields[2])
        if pattern is not None and digest is not None and len(digest) == 16:
            return _md5_salted(pattern, salt, digest)
    return fw.Refusal(
        Reason.INVALID_HASH, "expected $md5$<base64 md5> or $md5$pf=<format>$<salt>$<hash> (base64)"
    )


def _md5_salted(pattern: bytes, salt: bytes, digest: bytes) -> str | fw.Refusal:
    side = _MD5_FORMATS.get(pattern.decode("utf-8", "replace"))
    if side is None:
        return fw.Refusal(
            Reason.UNSUPPORTED_SALT, "salting format is not {SALT}{PASSWORD} or {PASSWORD}{SALT}"
        )
    if not salt:
        return digest.hex()  # md5 of the password alone
    text = salt.decode("utf-8", "replace")
    if not text.isprintable() or "$" in text or " " in text or "\ufffd" in text:
        return fw.Refusal(Reason.UNSUPPORTED_SALT, "the salt is not text passwap's md5salted can read")
    return f"$md5salted-{side}${text}${base64.b64encode(digest).decode('ascii')}"


def _link_entries(credentials: Mapping[str, object]) -> list[dict[str, object]]:
    """``credentials.oidc``/``saml`` → ``{provider, subject}`` entries: ``config.providers`` when
    exported (include_credential=oidc), else the identifiers ``<provider>:<subject>``."""
    entries: list[dict[str, object]] = []
    for kind in LINK_TYPES:
        credential = credentials.get(kind)
        if not isinstance(credential, dict):
            continue
        config = credential.get("config")
        providers = config.get("providers") if isinstance(config, dict) else None
        if isinstance(providers, list) and providers:
            entries += [
                {"provider": _text(p.get("provider")), "subject": p.get("subject")}
                for p in providers
                if isinstance(p, dict)
            ]  # the subject's type is checked by idp_links
            continue
        identifiers = credential.get("identifiers")
        for identifier in identifiers if isinstance(identifiers, list) else ():
            provider, _, subject = str(identifier).partition(":")  # provider ids hold no ':', subjects may
            entries.append({"provider": provider, "subject": subject})
    return entries


def _totp(credential: object) -> tuple[str | None, list[str]]:
    """``credentials.totp.config.totp_url`` → the base32 secret when ZITADEL checks its codes
    (SHA1, 6 digits, 30 s), else the cause it is not carried."""
    if not isinstance(credential, dict):
        return None, []
    config = credential.get("config")
    url = config.get("totp_url") if isinstance(config, dict) else None
    if not isinstance(url, str):
        return None, ["not-exported"]  # listed without include_credential=totp
    parts = urllib.parse.urlsplit(url.strip())
    query = dict(urllib.parse.parse_qsl(parts.query))
    if parts.scheme != "otpauth" or parts.netloc != "totp":
        return None, [f"type-{cause_name(parts.netloc or parts.scheme)}"]
    for name, default, cause in (
        ("algorithm", "SHA1", "algorithm"),
        ("digits", "6", "digits"),
        ("period", "30", "period"),
    ):
        if query.get(name, default).upper() != default:
            return None, [f"{cause}-{cause_name(query[name])}"]
    secret = normalise_otp(query.get("secret", "")).rstrip("=")
    return (None, ["unreadable-secret"]) if otp_problem(secret) else (secret, [])


def _metadata(
    identity: Mapping[str, object], traits: Mapping[str, object], unmapped: Sequence[str]
) -> tuple[list[dict[str, str]], int]:
    """``external_id``, ``public.<key>``, ``admin.<key>`` and ``traits.<key>`` entries (text as it
    is, other JSON as its JSON; base64), and how many broke ZITADEL's limits (counted)."""
    items: list[tuple[str, object]] = [("external_id", identity.get("external_id"))]
    for field, name in (("metadata_public", "public"), ("metadata_admin", "admin")):
        value = identity.get(field)
        items += (
            [(f"{name}.{k}", v) for k, v in value.items()] if isinstance(value, dict) else [(name, value)]
        )
    items += [(f"traits.{key}", traits[key]) for key in unmapped]
    encoded = [
        (k, v.encode() if isinstance(v, str) else orjson.dumps(v)) for k, v in items if v not in (None, "")
    ]
    kept = [
        (k, v)
        for k, v in encoded
        if len(k) <= MAX_METADATA_KEY and len(v) <= MAX_METADATA_VALUE and k.isprintable()
    ]
    return [{"key": k, "value": base64.b64encode(v).decode("ascii")} for k, v in kept], len(encoded) - len(
        kept
    )


def shown(identity: Mapping[str, object]) -> bytes:
    """The identity's JSON for its row and dead letters, without the OIDC tokens Kratos decrypts
    into ``credentials.oidc.config.providers`` (secrets the import never needs)."""
    credentials = identity.get("credentials")
    oidc = credentials.get("oidc") if isinstance(credentials, dict) else None
    config = oidc.get("config") if isinstance(oidc, dict) else None
    if not isinstance(config, dict) or not isinstance(config.get("providers"), list):
        return orjson.dumps(identity)
    assert isinstance(credentials, dict) and isinstance(oidc, dict)
    providers = [
        {k: v for k, v in p.items() if not str(k).startswith("initial_")} if isinstance(p, dict) else p
        for p in config["providers"]
    ]
    oidc = {**oidc, "config": {**config, "providers": providers}}
    return orjson.dumps({**identity, "credentials": {**credentials, "oidc": oidc}})
