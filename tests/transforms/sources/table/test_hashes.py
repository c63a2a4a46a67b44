"""The hash column → what ZITADEL verifies, or why not (transforms/sources/table/hashes.py)."""

from __future__ import annotations

import csv
import json
import re

import bcrypt
import pytest
from passwap_rules import claim, verify
from repo_files import DATA_DIR, ROOT

from transforms.common.reasons import Reason
from transforms.hashing.convert import ConvertedHash, HashFailure
from transforms.hashing.forms import HashForm
from transforms.hashing.policy import HashPolicy
from transforms.sources.table.hashes import HASH_FORM_NAMES, convert_hash, hash_form, row_hash

VECTORS = json.loads((DATA_DIR / "hash_forms_vectors.json").read_text())
EVERY_VERIFIER = HashPolicy(
    verifiers=frozenset(
        {"argon2", "bcrypt", "md5", "md5plain", "md5salted", "phpass", "sha2", "scrypt", "pbkdf2", "drupal7"}
    )
)


def test_bcrypt_passes_through_unchanged_and_verifies():
    hashed = bcrypt.hashpw(b"pw-ann", bcrypt.gensalt(10)).decode()
    converted, outcome = convert_hash(hashed, None, HashPolicy())
    assert isinstance(converted, ConvertedHash)
    assert converted.value == hashed and converted.verifier == "bcrypt" == claim(hashed)
    assert outcome is not None and outcome.form == HashForm.BCRYPT
    assert bcrypt.checkpw(b"pw-ann", converted.value.encode())


@pytest.mark.parametrize("vector", VECTORS["rewritten"], ids=lambda v: v["form"])
def test_every_form_is_detected_rewritten_and_verifies_against_its_password(vector):
    converted, outcome = convert_hash(vector["value"], None, None)
    assert isinstance(converted, ConvertedHash), converted
    assert outcome is not None and outcome.form == HashForm(vector["form"])
    assert verify(converted.value, vector["password"]) is vector.get("accept", True)


@pytest.mark.parametrize("vector", VECTORS["refused"], ids=lambda v: v["form"])
def test_refused_forms_name_the_form_and_never_the_hash(vector):
    failure, outcome = convert_hash(vector["value"], None, None)
    assert isinstance(failure, HashFailure)
    assert outcome is not None and outcome.encoded is None
    assert failure.detail.startswith(HashForm(vector["form"]).label)
    assert vector["value"] not in failure.detail


@pytest.mark.parametrize(
    "value, policy, reason",
    [
        ("$2a$04$" + "a" * 53, HashPolicy(), Reason.BCRYPT_COST),
        ("$1$saltsalt$qjXMvbEw8oaL.CzflDugX.", HashPolicy(), Reason.HASH_VERIFIER_DISABLED),
        ("plain text password", None, Reason.INVALID_HASH),
        ("$sha1$x$y", None, Reason.UNSUPPORTED_HASH),
    ],
)
def test_refusals_carry_a_reason_and_never_the_hash(value, policy, reason):
    failure, _ = convert_hash(value, None, policy)
    assert isinstance(failure, HashFailure) and failure.reason == reason
    assert value not in failure.detail


def test_a_target_refusal_keeps_the_rewritten_hash_for_the_report():
    django = next(v for v in VECTORS["rewritten"] if v["form"] == "django-pbkdf2-sha256")
    failure, outcome = convert_hash(django["value"], None, HashPolicy())
    assert isinstance(failure, HashFailure) and failure.reason == Reason.HASH_VERIFIER_DISABLED
    assert failure.refused is not None and failure.refused.verifier == "pbkdf2"
    # Counted as a refused form (refused_hash_forms.django-pbkdf2-sha256), not written.
    assert outcome is not None and outcome.converted is None and str(outcome.form) == "django-pbkdf2-sha256"
    converted, _ = convert_hash(django["value"], None, EVERY_VERIFIER)
    assert isinstance(converted, ConvertedHash)


def test_a_declared_form_checks_the_value():
    v3 = next(v for v in VECTORS["rewritten"] if v["form"] == "aspnet-identity-v3")
    converted, _ = convert_hash(v3["value"], hash_form("aspnet-identity-v3"), None)
    assert isinstance(converted, ConvertedHash) and verify(converted.value, v3["password"])
    failure, _ = convert_hash(v3["value"], hash_form("aspnet-identity-v2"), None)
    assert isinstance(failure, HashFailure) and failure.detail.startswith("asp.net identity v2")


def test_hash_form_names():
    assert hash_form("auto") is None and hash_form(None) is None
    assert "django-pbkdf2-sha256" in HASH_FORM_NAMES
    with pytest.raises(ValueError, match="is not one of auto"):
        hash_form("djangoo")


def test_framework_names_map_to_their_forms_and_suggestions_skip_forms_that_refuse_all():
    from transforms.hashing.forms import HashForm
    from transforms.sources.table.hashes import WRITABLE_FORM_NAMES, convert_hash, hash_form

    assert hash_form("laravel") is HashForm.BCRYPT and hash_form("Rails") is HashForm.BCRYPT
    assert hash_form("wordpress") is HashForm.PHPASS and hash_form("django") is None  # several: detected
    for refusing in (
        "wordpress-bcrypt",
        "firebase-scrypt",
        "django-bcrypt-sha256",
        "django-sha1",
        "yescrypt",
    ):
        assert refusing not in WRITABLE_FORM_NAMES
    assert "bcrypt" in WRITABLE_FORM_NAMES and "phpass" in WRITABLE_FORM_NAMES
    # WordPress 6.8's $wp$ under --hash-form=wordpress: refused with its own reason, not as bad phpass.
    wp68 = "$wp$2b$10$yguPGghrj1QSlpgzYYQpzuEA3BvxiLHW6nPpuJRXwMO8g.6UOnVCC"
    refused, _ = convert_hash(wp68, hash_form("wordpress"), None)
    assert "WordPress 6.8" in getattr(refused, "detail", "")


# --------------------------------------------------------------------------- per-row hashers

CLERK = ROOT / "docs" / "export-formats" / "samples"


def _clerk_rows() -> list[tuple[str, str, str, str]]:
    """(id, digest, password_hasher, password) of every Clerk sample user with a digest."""
    passwords = dict(
        re.findall(
            r"^\| clerk-[\w.-]+ \| (\S+) \| \S+ \| `([^`]+)` \|$",
            (CLERK / "clerk-passwords.md").read_text(),
            re.M,
        )
    )
    with open(CLERK / "clerk-dashboard-export.csv", encoding="utf-8", newline="") as handle:
        rows = [(r["id"], r["password_digest"], r["password_hasher"]) for r in csv.DictReader(handle)]
    rows += [
        (u["id"], u["password_digest"], u["password_hasher"])
        for u in json.loads((CLERK / "clerk-support-export.json").read_text())
    ]
    return [(i, d, h, passwords[i]) for i, d, h in rows if d]


ROWS = _clerk_rows()
# Hashers no ZITADEL verifier reads: refused, naming the form or the hasher.
REFUSED = {
    "scrypt_firebase": "firebase scrypt",
    "bcrypt_sha256_django": "bcrypt_sha256",
    "sha256": "'sha256'",
}


def test_every_clerk_sample_digest_is_read():
    assert len(ROWS) == 12 and {r[2] for r in ROWS} >= {"pbkdf2_sha256", "pbkdf2_sha1", "argon2i", "phpass"}


@pytest.mark.parametrize(
    "user, digest, hasher, password", [r for r in ROWS if r[2] not in REFUSED], ids=lambda v: v
)
def test_a_clerk_digest_by_its_hasher_verifies_its_password(user, digest, hasher, password):
    declared = row_hash(digest, hasher)
    assert not isinstance(declared, HashFailure), declared
    converted, _ = convert_hash(*declared, EVERY_VERIFIER)
    assert isinstance(converted, ConvertedHash), converted
    assert verify(converted.value, password)
    assert not verify(converted.value, password + "x")


@pytest.mark.parametrize(
    "user, digest, hasher, password", [r for r in ROWS if r[2] in REFUSED], ids=lambda v: v
)
def test_a_clerk_digest_without_a_verifier_is_refused_naming_its_form(user, digest, hasher, password):
    declared = row_hash(digest, hasher)
    if not isinstance(declared, HashFailure):
        declared, _ = convert_hash(*declared, EVERY_VERIFIER)
    assert isinstance(declared, HashFailure)
    assert declared.reason == Reason.UNSUPPORTED_HASH and REFUSED[hasher] in declared.detail
    assert digest not in declared.detail


def test_detection_alone_misreads_clerks_pbkdf2_which_the_hasher_fixes():
    user, digest, hasher, password = next(r for r in ROWS if r[2] == "pbkdf2_sha1")
    detected, _ = convert_hash(digest, None, EVERY_VERIFIER)
    assert not (isinstance(detected, ConvertedHash) and verify(detected.value, password))


@pytest.mark.parametrize(
    "digest, hasher, expected",
    [
        ("$2a$10$" + "a" * 53, "", HashForm.BCRYPT),  # no hasher: Clerk's default, bcrypt
        ("x", "django-pbkdf2-sha256", HashForm.DJANGO_PBKDF2_SHA256),  # a form's own name
        ("x", "Laravel", HashForm.BCRYPT),  # a framework's
        ("x", "django", None),  # detected per value
    ],
)
def test_hasher_names(digest, hasher, expected):
    assert row_hash(digest, hasher) == (digest, expected)


@pytest.mark.parametrize(
    "digest, hasher",
    [
        ("pbkdf2_sha256$100000$not base64!$aGFzaA==", "pbkdf2_sha256"),
        ("pbkdf2_sha1$10000$salt$not-hex", "pbkdf2_sha1"),
        ("pbkdf2_sha256$many$c2FsdA==$aGFzaA==", "pbkdf2_sha256"),
        ("pbkdf2_sha1$10000$salt", "pbkdf2_sha1"),
    ],
)
def test_a_clerk_pbkdf2_not_of_its_layout_is_an_invalid_hash(digest, hasher):
    failure = row_hash(digest, hasher)
    assert isinstance(failure, HashFailure) and failure.reason == Reason.INVALID_HASH
    assert digest not in failure.detail
