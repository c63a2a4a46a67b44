"""transforms/hashing/forms.py: every rewritten hash verifies with passwap's rules.

Vectors: tests/data/passwap_vectors.json (passwap's own, which pass through unchanged) and
tests/data/hash_forms_vectors.json (Django's, ASP.NET Core's, passwap's and our own, each with its
origin; tests/data/README.md). Verification is tests/standins/passwap_rules.py, written from
passwap's Go sources independently of transforms/.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random

import passwap_rules
import pytest
from repo_files import DATA_DIR

from transforms.common.counters import HASH_FORMS, PASSWORD_HASHES, REFUSED_HASH_FORMS
from transforms.common.errors import ConfigError
from transforms.common.reasons import Reason
from transforms.hashing.forms import (
    MAX_LENGTH,
    VERIFIER,
    HashForm,
    Rewritten,
    detect,
    form_named,
    to_passwap,
)
from transforms.hashing.policy import DEFAULT_LIMITS, HashPolicy, load_policy
from transforms.hashing.summary import forms_needs, hash_manifest, hash_summary
from transforms.hashing.tally import HashTally

DATA = DATA_DIR
VECTORS = json.loads((DATA / "hash_forms_vectors.json").read_text(encoding="utf-8"))
PASSWAP = [
    v
    for v in json.loads((DATA / "passwap_vectors.json").read_text(encoding="utf-8"))["vectors"]
    if v["accept"]
]


def _id(vector: dict) -> str:
    return f"{vector['form']}:{vector['value'][:24]}"


@pytest.mark.parametrize("vector", PASSWAP, ids=lambda v: v["encoded"][:28])
def test_passwap_forms_pass_through_unchanged_and_verify(vector):
    outcome = to_passwap(vector["encoded"])
    assert outcome.encoded == vector["encoded"], outcome.reason
    assert outcome.converted is not None and outcome.converted.verifier == vector["verifier"]
    assert passwap_rules.verify(outcome.encoded, vector["password"]) is True
    assert passwap_rules.verify(outcome.encoded, vector["password"] + "x") is False


@pytest.mark.parametrize("vector", VECTORS["rewritten"], ids=_id)
def test_framework_forms_are_rewritten_into_what_passwap_verifies(vector):
    form = HashForm(vector["form"])
    assert detect(vector["value"]) is form
    outcome = to_passwap(vector["value"])
    assert outcome.reason is None and outcome.encoded is not None and outcome.form is form
    # The known password verifies (the two "incorrect password" cases fail there as in ASP.NET Core too).
    assert passwap_rules.verify(outcome.encoded, vector["password"]) is vector.get("accept", True)
    assert passwap_rules.verify(outcome.encoded, vector["password"] + "x") is False
    # Declaring the form gives the same string; the verifier is the one the form is written for.
    assert to_passwap(vector["value"], form) == outcome
    assert passwap_rules.claim(outcome.encoded) == outcome.converted.verifier
    if form not in (HashForm.DJANGO_MD5, HashForm.LDAP):  # these two write md5plain or a crypt form too
        assert outcome.converted.verifier == VERIFIER[form]


@pytest.mark.parametrize("vector", VECTORS["refused"], ids=_id)
def test_refusals_name_the_form(vector):
    assert detect(vector["value"]) is HashForm(vector["form"])
    outcome = to_passwap(vector["value"])
    assert outcome.encoded is None and outcome.converted is None
    assert outcome.form is HashForm(vector["form"])
    assert outcome.reason is not None and outcome.reason.startswith(vector["reason"])
    assert outcome.code in vars(Reason).values()
    assert vector["value"] not in outcome.reason


def test_firebase_scrypt_is_declared_and_refused_and_never_guessed():
    # firebase/scrypt's README sample hash: 64 bytes of base64, with nothing that names the form.
    value = "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="
    assert detect(value) is None
    outcome = to_passwap(value, HashForm.FIREBASE_SCRYPT)
    assert outcome == Rewritten(
        None,
        HashForm.FIREBASE_SCRYPT,
        "firebase scrypt: ZITADEL cannot verify it; import without password",
        Reason.UNSUPPORTED_HASH,
    )
    assert to_passwap(value).reason == "not a hash form this tool recognises (docs/hash-forms.md lists them)"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


_V3_HEADER = bytes([1]) + (1).to_bytes(4, "big") + (10000).to_bytes(4, "big")

HOSTILE = [
    ("", None, "hash value is empty"),
    ("   ", None, "hash value is empty"),
    (None, None, "hash value is not text"),
    (12345, None, "hash value is not text"),
    ("$2b$10$" + "a" * (MAX_LENGTH + 10), None, f"hash value is longer than {MAX_LENGTH}"),
    ("$2b$10$abc\x00def", None, "hash value holds whitespace or control"),
    ("pbkdf2_sha256$1000$salt with space$abc=", None, "hash value holds whitespace"),
    ("$2b$10$XXOvxC.YB8PDdBjtbh.wa.dajFq58BfXGC7bBwX5h5WGYCz", HashForm.BCRYPT, "bcrypt: expected"),
    (
        "$2x$10$XXOvxC.YB8PDdBjtbh.wa.dajFq58BfXGC7bBwX5h5WGYCzREPpAm",
        HashForm.BCRYPT,
        "bcrypt: $2x$ is not read",
    ),
    ("$2b$99$XXOvxC.YB8PDdBjtbh.wa.dajFq58BfXGC7bBwX5h5WGYCzREPpAm", HashForm.BCRYPT, "bcrypt: cost 99"),
    ("$pbkdf2-sha256$0$c2FsdA$aGFzaA", HashForm.PBKDF2, "pbkdf2: rounds must be"),
    ("$pbkdf2-sha256$4294967296$c2FsdA$aGFzaA", HashForm.PBKDF2, "pbkdf2: rounds must be"),
    ("$pbkdf2-md5$1000$c2FsdA$aGFzaA", HashForm.PBKDF2, "pbkdf2: digest"),
    ("$pbkdf2-sha256$1000$c2F+sdA.$aGFzaA", HashForm.PBKDF2, "pbkdf2: salt or hash"),
    ("$pbkdf2-sha256$i=1000,l=64$c2FsdA$aGFzaA", HashForm.PBKDF2, "pbkdf2: hash is 4 bytes but l= says 64"),
    ("$argon2id$v=19$m=4096,t=3,p=256$c2FsdHNhbHQ$aGFzaGhhc2g", HashForm.ARGON2, "argon2: m and t"),
    ("$argon2id$v=19$m=0,t=3,p=1$c2FsdHNhbHQ$aGFzaGhhc2g", HashForm.ARGON2, "argon2: m and t"),
    ("$argon2id$v=16$m=4096,t=3,p=1$c2FsdHNhbHQ$aGFzaGhhc2g", HashForm.ARGON2, "argon2: only version v=19"),
    ("$argon2id$v=19$m=4096,t=3,p=1,keyid=x$c2FsdA$aGFzaA", HashForm.ARGON2, "argon2: parameters"),
    ("$argon2id$v=19$m=4096,t=3,p=1$c2FsdA$!!!", HashForm.ARGON2, "argon2: salt or hash"),
    ("$argon2id$v=19$m=99999999999999999999,t=3,p=1$c2FsdA$aGFzaA", HashForm.ARGON2, "argon2: m and t"),
    ("$scrypt$ln=0,r=8,p=1$c2FsdA$aGFzaA", HashForm.SCRYPT, "scrypt: ln must be"),
    (
        "$scrypt$ln=99,r=8,p=1$c2FsdA$aGFzaA",
        HashForm.SCRYPT,
        "scrypt: N=99 (Ory Kratos's ln=) is not a power",
    ),
    ("$argon2id$v=19$m=65536,t=3,p=4$abc123", HashForm.ARGON2, "argon2: no hash: the value ends after 4"),
    ("$argon2id$v=19$m=65536,t=3,p=4", HashForm.ARGON2, "argon2: no salt and hash"),
    ("$scrypt$ln=14,r=65536,p=65536$c2FsdA$aGFzaA", HashForm.SCRYPT, "scrypt: ln must be"),
    (
        "$5$rounds=999$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5",
        HashForm.SHA256CRYPT,
        "sha256crypt: rounds=999 is outside",
    ),
    ("$6$rounds=9999999999$s$" + "a" * 86, HashForm.SHA512CRYPT, "sha512crypt: rounds=9999999999 is outside"),
    (
        "$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc",
        HashForm.SHA256CRYPT,
        "sha256crypt: expected",
    ),
    ("$1$kJ4QkJaQkJaQ$3EbD/pJddrq5HW3mpZ4KZ1", HashForm.MD5CRYPT, "md5crypt: not a well-formed md5-crypt"),
    ("$S$ErandomsaOpYrAZqwxGynirQbWYCb3ejW4BwGH81LJcOzbzeVd0", HashForm.DRUPAL7, "drupal7: expected 55"),
    (
        "$S$zrandomsaOpYrAZqwxGynirQbWYCb3ejW4BwGH81LJcOzbzeVd02",
        HashForm.DRUPAL7,
        "drupal7: count character gives 2^63",
    ),
    (
        "pbkdf2_sha256$0$seasalt$8xBlGd3jVgvJ+92hWPxi5ww0uuAuAnKgC45eudxro7c=",
        HashForm.DJANGO_PBKDF2_SHA256,
        "django pbkdf2_sha256: iteration count 0",
    ),
    (
        "pbkdf2_sha256$390000$seasalt$not-base64",
        HashForm.DJANGO_PBKDF2_SHA256,
        "django pbkdf2_sha256: expected",
    ),
    ("pbkdf2_sha256$390000$seasalt", HashForm.DJANGO_PBKDF2_SHA256, "django pbkdf2_sha256: expected"),
    (
        "scrypt$1000$seasalt$8$1$Qj3+9PPy",
        HashForm.DJANGO_SCRYPT,
        "django scrypt: N=1000 is not a power of two",
    ),
    ("scrypt$16384$seasalt$0$1$Qj3+9PPy", HashForm.DJANGO_SCRYPT, "django scrypt: r=0"),
    ("md5$seasalt$3f86d0d3", HashForm.DJANGO_MD5, "django md5: expected"),
    ("bcrypt$$2b$10$short", HashForm.DJANGO_BCRYPT, "django bcrypt: expected $2a$"),
    (
        "argon2$argon2d$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$YC9+jJCrQhs5R6db7LlN8Q",
        HashForm.DJANGO_ARGON2,
        "django argon2: argon2d",
    ),
    (
        "pbkdf2:sha256$salt$abcd",
        HashForm.WERKZEUG_PBKDF2,
        "werkzeug pbkdf2: expected pbkdf2:<digest>:<iterations>",
    ),
    ("pbkdf2:md5:1000$salt$abcd", HashForm.WERKZEUG_PBKDF2, "werkzeug pbkdf2: pbkdf2 digest 'md5'"),
    ("pbkdf2:sha256:1000$salt$abc", HashForm.WERKZEUG_PBKDF2, "werkzeug pbkdf2: expected"),
    ("scrypt:1000:8:1$salt$abcd", HashForm.WERKZEUG_SCRYPT, "werkzeug scrypt: N=1000"),
    (
        "$y$j9T$F5Jx5fExrKuPp53xLKQ..1$X3DX6M94c7o.9agCG9G317fhZg9SqC.5i5rd.RhAtQ7",
        HashForm.YESCRYPT,
        "yescrypt: passwap has no",
    ),
    ("{MD5}AAAA", HashForm.LDAP, "ldap: {MD5} value is not base64 of 16 bytes"),
    ("{CRYPT}ab1Hv2Lg7ltQo", HashForm.LDAP, "ldap: {CRYPT} holds no"),
    (
        _b64(_V3_HEADER + (0xFFFFFFFF).to_bytes(4, "big") + bytes(40)),
        HashForm.ASPNET_IDENTITY_V3,
        "asp.net identity v3: v3 salt",
    ),
    (
        _b64(_V3_HEADER + (16).to_bytes(4, "big") + bytes(20)),
        HashForm.ASPNET_IDENTITY_V3,
        "asp.net identity v3: v3 salt",
    ),
    (_b64(bytes([0]) + bytes(30)), HashForm.ASPNET_IDENTITY_V2, "asp.net identity v2: v2 is 49 bytes"),
]


@pytest.mark.parametrize(("value", "form", "reason"), HOSTILE, ids=lambda x: repr(x)[:30])
def test_hostile_values_are_refused_with_a_reason_never_an_exception(value, form, reason):
    outcome = to_passwap(value)
    assert outcome.encoded is None and outcome.form is form
    assert outcome.reason is not None and outcome.reason.startswith(reason), outcome.reason
    assert outcome.code in vars(Reason).values()


def _first(form: str) -> str:
    return next(v["value"] for v in VECTORS["rewritten"] if v["form"] == form)


def test_declared_forms_check_the_value():
    bcrypt_value = _first("django-bcrypt")[len("bcrypt$") :]
    refused = to_passwap(bcrypt_value, HashForm.ASPNET_IDENTITY_V3)
    assert refused.encoded is None and refused.reason == "asp.net identity v3: not standard base64"
    v3 = _first("aspnet-identity-v3")
    assert to_passwap(v3, HashForm.ASPNET_IDENTITY_V2).reason == (
        "asp.net identity v2: format marker is 0x01, not 0x00"
    )
    prf7 = _b64(
        bytes([1]) + (7).to_bytes(4, "big") + (1000).to_bytes(4, "big") + (16).to_bytes(4, "big") + bytes(48)
    )
    assert detect(prf7) is None  # not taken for ASP.NET when undeclared ...
    outcome = to_passwap(prf7, HashForm.ASPNET_IDENTITY_V3)  # ... and named precisely when declared
    assert (outcome.code, outcome.reason) == (
        Reason.UNSUPPORTED_PBKDF2_DIGEST,
        "asp.net identity v3: v3 prf 7 is not HMACSHA1/256/512 (0/1/2)",
    )
    assert to_passwap("", HashForm.DRUPAL7).reason == "drupal7: hash value is empty"


def test_mangled_values_never_raise_and_what_is_written_passwap_parses():
    """Every vector truncated, cut, padded or with a character swapped (fixed seed): to_passwap
    answers without raising, and every string it writes passwap's parser accepts."""
    rng = random.Random(33)
    seeds = [v["value"] for v in VECTORS["rewritten"] + VECTORS["refused"]] + [v["encoded"] for v in PASSWAP]
    alphabet = "$=+./:,0123456789abcdefABCDEF{}AQ"
    written = 0
    for value in seeds:
        for _ in range(40):
            cut = rng.randrange(len(value) + 1)
            mangled = rng.choice(
                [
                    value[:cut],
                    value[cut:],
                    value[:cut] + rng.choice(alphabet) + value[cut + 1 :],
                    value[:cut] + rng.choice(alphabet) + value[cut:],
                    value + "=" * rng.randrange(1, 4),
                ]
            )
            outcome = to_passwap(mangled)
            assert (outcome.encoded is None) != (outcome.reason is None)
            if outcome.encoded is not None:
                written += 1
                assert passwap_rules.claim(outcome.encoded) == outcome.converted.verifier
    assert written > 100  # the mangling kept a good share parseable, so the second check ran


def test_report_says_which_verifiers_and_limits_the_rewritten_hashes_need(tmp_path):
    outcomes = [to_passwap(v["value"]) for v in VECTORS["rewritten"] + VECTORS["refused"]]
    fields = forms_needs(outcomes)
    assert fields["password_hash_forms"]["aspnet-identity-v3"] == 8
    assert fields["refused_hash_forms"]["django-bcrypt-sha256"] == 1
    assert sum(fields["password_hashes"].values()) == len(VECTORS["rewritten"])
    # passwap's vectors run 12 rounds, ASP.NET Core's 50 and 250, Django's argon2 8 KiB: below the defaults.
    assert fields["password_hash_params"]["pbkdf2"]["rounds"] == [12, 390000]
    assert fields["password_hash_params"]["argon2"]["memory"] == [8, 102400]
    assert "MinRounds: 12" in fields["zitadel_config"] and "MinMemory: 8" in fields["zitadel_config"]
    written = [o.encoded for o in outcomes if o.encoded]
    default = HashPolicy()
    refused_by_default = [
        e for e in written if passwap_rules.server_refusal(e, default.verifiers, DEFAULT_LIMITS)
    ]
    # Out of the box only bcrypt (cost 10 - 16) imports: Django's bcrypt does, nothing else.
    assert [e for e in written if e not in refused_by_default] == [
        e for e in written if e.startswith("$2b$10$")
    ]
    # The block the report prints, saved as the target's config, admits every rewritten hash.
    config = tmp_path / "zitadel.yaml"
    config.write_text(fields["zitadel_config"], encoding="utf-8")
    policy = load_policy(str(config))
    assert [
        e for e in written if passwap_rules.server_refusal(e, policy.verifiers, dict(policy.limits))
    ] == []
    lines = hash_summary(fields).splitlines()
    assert "aspnet-identity-v2 2," in next(
        line for line in lines if line.startswith("password hashes rewritten from: ")
    )
    assert "django-bcrypt-sha256 1," in next(
        line for line in lines if line.startswith("password hashes refused, by form: ")
    )


def test_tally_counts_forms_and_spreads_parameters_and_old_manifests_stay_as_they_were():
    tally = HashTally()
    for vector in VECTORS["rewritten"][:3] + VECTORS["refused"][:1]:
        tally.rewritten(to_passwap(vector["value"]))
    tally.rewritten(to_passwap("no hash at all"))
    assert dict(tally.counts) == {
        HASH_FORMS + "django-pbkdf2-sha256": 2,
        HASH_FORMS + "django-pbkdf2-sha1": 1,
        REFUSED_HASH_FORMS + "django-bcrypt-sha256": 1,
        REFUSED_HASH_FORMS + "unrecognised": 1,
    }
    assert tally.ranges == {"pbkdf2.rounds": (390000, 390000)}
    counts = {PASSWORD_HASHES + "pbkdf2": 3, **tally.counts}
    fields = hash_manifest(counts, {"pbkdf2": {"rounds": (390000, 390000)}}, None)
    assert fields["password_hash_forms"] == {"django-pbkdf2-sha1": 1, "django-pbkdf2-sha256": 2}
    assert fields["refused_hash_forms"] == {"django-bcrypt-sha256": 1, "unrecognised": 1}
    plain = hash_manifest({PASSWORD_HASHES + "pbkdf2": 3}, {"pbkdf2": {"rounds": (390000, 390000)}}, None)
    assert set(plain) == {
        "password_hashes",
        "password_hash_params",
        "users_without_password_by_reason",
        "zitadel_config",
    }


def test_declared_form_names():
    assert form_named("Django-PBKDF2-SHA256") is HashForm.DJANGO_PBKDF2_SHA256
    assert form_named(" asp.net identity v3 ") is HashForm.ASPNET_IDENTITY_V3
    with pytest.raises(ConfigError, match="unknown hash form 'sha1': one of bcrypt, argon2, "):
        form_named("sha1")


def test_scrypt_under_passwaps_7_prefix_is_rewritten_and_libxcrypts_own_7_refused():
    # passwap's scrypt also claims "$7$" (scrypt.Prefix_Linux) in its own layout: written as $scrypt$.
    vector = next(v for v in PASSWAP if v["verifier"] == "scrypt")["encoded"]
    as_seven = "$7$" + vector[len("$scrypt$") :]
    assert passwap_rules.verify(as_seven, "password") is True  # the stand-in claims it as passwap does
    outcome = to_passwap(as_seven)
    assert (outcome.form, outcome.encoded) == (HashForm.SCRYPT, vector)
    # libxcrypt's $7$ (N, r, p and salt in crypt base64): not passwap's layout. Shape only, never verified.
    libxcrypt = "$7$C6..../....SodiumChloride$kBGj9fHznVYFQMEn/qDCfrDevf9YDtcDdKvEqHJLV8D"
    assert to_passwap(libxcrypt).reason == (
        "scrypt: libxcrypt's $7$ layout is not the $scrypt$ln=..,r=..,p=.. passwap reads"
    )


def test_every_declared_form_with_every_value_answers_and_writes_only_what_passwap_parses():
    values = [v["value"] for v in VECTORS["rewritten"] + VECTORS["refused"] + VECTORS["declared"]]
    values += [v["encoded"] for v in PASSWAP]
    written = 0
    for form in HashForm:
        for value in values:
            outcome = to_passwap(value, form)
            assert outcome.form is form and (outcome.encoded is None) != (outcome.reason is None)
            if outcome.encoded is None:
                assert outcome.reason.startswith(form.label + ": ")
            else:
                written += 1
                assert passwap_rules.claim(outcome.encoded) == outcome.converted.verifier
    assert written >= len(VECTORS["rewritten"]) + len(PASSWAP)
    assert to_passwap("$2b$10$x", "bcrypt").reason == "unknown hash form 'bcrypt'"  # a str, not a HashForm


@pytest.mark.parametrize("vector", VECTORS["declared"], ids=_id)
def test_forms_that_only_a_declaration_names_are_rewritten_when_declared(vector):
    # "<hex>:<salt>" does not say whether the salt went before or after the password: never guessed.
    assert detect(vector["value"]) is None
    outcome = to_passwap(vector["value"], HashForm(vector["form"]))
    assert outcome.encoded is not None and outcome.converted.verifier == "md5salted"
    assert passwap_rules.verify(outcome.encoded, vector["password"]) is True
    assert passwap_rules.verify(outcome.encoded, vector["password"] + "x") is False
    other = HashForm.OSCOMMERCE_MD5 if vector["form"] == "joomla-md5" else HashForm.JOOMLA_MD5
    assert passwap_rules.verify(to_passwap(vector["value"], other).encoded, vector["password"]) is False


# Ory Kratos's own test vectors (hash/hasher_test.go TestCompare, github.com/ory/kratos, Apache-2.0,
# © Ory Corp), password "test" each; what Kratos means by them: docs/hash-forms.md.
KRATOS_SCRYPT = "$scrypt$ln=16384,r=8,p=1$2npRo7P03Mt8keSoMbyD/tKFWyUzjiQf2svUaNDSrhA=$MiCzNcIplSMqSBrm4HckjYqYhaVPPjTARTzwB1cVNYE="
KRATOS_PBKDF2_SHA3 = {
    "sha3_224": "$pbkdf2-sha224$i=100000,l=32$A2nzbFd+wwzPSb+TqkF5Pw$9M4GM2yOYw/fZvsvQbF/0Ec8JO2u9O1MYRTfrDimX6o",
    "sha3_384": "$pbkdf2-sha384$i=100000,l=32$xDInuz7Y/DPzZUnCaQXJmg$7ICaEa6jEqxbbCBbv4YzrBf39KYNAtc3Bj0QWKeB3Ck",
}


def test_scrypt_whose_ln_holds_n_as_kratos_writes_it_is_written_as_log2_and_verifies():
    outcome = to_passwap(KRATOS_SCRYPT)
    assert outcome.form is HashForm.SCRYPT and outcome.encoded is not None, outcome.reason
    assert outcome.encoded == (
        "$scrypt$ln=14,r=8,p=1$2npRo7P03Mt8keSoMbyD/tKFWyUzjiQf2svUaNDSrhA$MiCzNcIplSMqSBrm4HckjYqYhaVPPjTARTzwB1cVNYE"
    )
    assert dict(outcome.converted.params) == {"ln": 14, "r": 8, "p": 1}
    assert passwap_rules.verify(outcome.encoded, "test") is True
    assert passwap_rules.verify(outcome.encoded, "tesu") is False
    # N that is no power of two (Kratos refuses it too): invalid, never guessed.
    refused = to_passwap(KRATOS_SCRYPT.replace("ln=16384", "ln=16385"))
    assert refused.code == Reason.INVALID_HASH and "N=16385" in refused.reason


@pytest.mark.parametrize("sha3", sorted(KRATOS_PBKDF2_SHA3))
def test_kratos_pbkdf2_sha224_and_sha384_are_sha3_and_refused_not_rewritten_as_sha2(sha3):
    value = KRATOS_PBKDF2_SHA3[sha3]
    _, ident, _, salt, key = value.split("$")
    raw_salt, raw_key = (base64.b64decode(x + "=" * (-len(x) % 4)) for x in (salt, key))
    # The vectors are SHA-3 (what Kratos's getPseudorandomFunctionForPbkdf2 uses), not SHA-2 ...
    assert hashlib.pbkdf2_hmac(sha3, b"test", raw_salt, 100000, 32) == raw_key
    assert hashlib.pbkdf2_hmac(ident[7:], b"test", raw_salt, 100000, 32) != raw_key
    # ... and passwap's pbkdf2-sha224/384 are SHA-2 (pbkdf2/pbkdf2.go hashFuncForIdentifier): refused.
    outcome = to_passwap(value)
    assert outcome.encoded is None and outcome.code == Reason.UNSUPPORTED_PBKDF2_DIGEST
    assert outcome.reason.startswith(f"pbkdf2: {ident[7:]} in the i=,l= layout is SHA3-")
    # passwap's own layout of the same digests stays SHA-2 and passes.
    assert to_passwap(f"$pbkdf2-{ident[7:]}$100000${salt}${key}").encoded is not None


def test_a_truncated_argon2_is_invalid_naming_what_it_lacks():
    outcome = to_passwap("$argon2id$v=19$m=65536,t=3,p=4$abc123")
    assert outcome.code == Reason.INVALID_HASH
    assert outcome.reason == (
        "argon2: no hash: the value ends after 4 of the 5 fields of $argon2id$v=19$m=..,t=..,p=..$<salt>$<hash>"
    )
    # Without v= it is argon2 1.0 as early libraries wrote it: still named so.
    assert to_passwap("$argon2i$m=65536,t=3,p=4$c2FsdA$aGFzaA").code == Reason.UNSUPPORTED_ARGON2_VARIANT
