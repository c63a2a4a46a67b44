"""companion/verifiers.py: each legacy form against published or made vectors (tests/data/README.md)."""

from __future__ import annotations

import json

import pytest
from repo_files import DATA_DIR

from companion.verifiers import verify

DATA = DATA_DIR


def _firebase_vector() -> dict:
    config = {}
    for line in (DATA / "firebase" / "scrypt-readme" / "hash_config.txt").read_text().splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            config[key.strip()] = value.strip().rstrip(",")
    fields = (DATA / "firebase" / "scrypt-readme" / "users.csv").read_text().split(",")
    return {
        "id": fields[0],
        "form": "firebase-scrypt",
        "hash": fields[3],
        "params": {
            "salt": fields[4],
            "signer_key": config["base64_signer_key"],
            "salt_separator": config["base64_salt_separator"],
            "rounds": int(config["rounds"]),
            "mem_cost": int(config["mem_cost"]),
        },
    }


def test_firebase_published_vector_matches_only_its_password():
    record = _firebase_vector()
    assert verify(record, "user1password")
    assert not verify(record, "user1password ")
    assert not verify(record, "User1password")


@pytest.mark.parametrize(
    ("change", "value"),
    [
        ("rounds", 7),
        ("mem_cost", 13),
        ("salt_separator", "Bg=="),
        ("signer_key", "AAAA"),
        ("salt", "not base64!"),
        ("rounds", "8"),
        ("mem_cost", 30),  # over the bound: never computed
    ],
)
def test_firebase_wrong_or_unreadable_parameters_do_not_match(change, value):
    record = _firebase_vector()
    record["params"][change] = value
    assert not verify(record, "user1password")


def _refused(form: str) -> dict:
    vectors = json.loads((DATA / "hash_forms_vectors.json").read_text())
    return next(v for v in vectors["refused"] if v["form"] == form)


@pytest.mark.parametrize("form", ["django-bcrypt-sha256", "wordpress-bcrypt"])
def test_refused_bcrypt_forms_verify_with_their_source_algorithm(form):
    vector = _refused(form)  # made for these tests with 'lètmein' (tests/data/README.md)
    record = {"id": "u", "form": form, "hash": vector["value"]}
    assert verify(record, "lètmein")
    assert not verify(record, "letmein")


@pytest.mark.parametrize(
    "record",
    [
        {"form": "md5", "hash": "x"},
        {"form": "django-bcrypt-sha256", "hash": "bcrypt$$2b$10$abc"},
        {"form": "wordpress-bcrypt", "hash": "$2y$10$abc"},
        {"form": "wordpress-bcrypt", "hash": "$wp$not-bcrypt"},
        {"form": "firebase-scrypt"},
        {"form": "firebase-scrypt", "hash": "AAAA", "params": ["not", "an", "object"]},
        {"form": "django-bcrypt-sha256", "hash": 12},
    ],
)
def test_unknown_forms_and_broken_records_answer_false(record):
    assert not verify(record, "lètmein")


def test_empty_and_oversized_passwords_are_not_checked():
    record = _firebase_vector()
    assert not verify(record, "")
    assert not verify(record, "x" * 1025)
