"""The hash column → what ZITADEL verifies, or why not (transforms/sources/table/hashes.py)."""

from __future__ import annotations

import json

import bcrypt
import pytest
from passwap_rules import claim, verify
from repo_files import DATA_DIR

from transforms.common.reasons import Reason
from transforms.hashing.convert import ConvertedHash, HashFailure
from transforms.hashing.forms import HashForm
from transforms.hashing.policy import HashPolicy
from transforms.sources.table.hashes import HASH_FORM_NAMES, convert_hash, hash_form

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
