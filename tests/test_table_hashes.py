"""The hash column → what ZITADEL verifies, or why not (transforms/sources/table/table_hashes.py)."""

from __future__ import annotations

import bcrypt
import pytest
from passwap_rules import claim

from transforms.common.reasons import Reason
from transforms.hashing.convert import ConvertedHash, HashFailure
from transforms.hashing.policy import HashPolicy
from transforms.sources.table.table_hashes import convert_hash


def test_bcrypt_passes_through_unchanged_and_verifies():
    hashed = bcrypt.hashpw(b"pw-ann", bcrypt.gensalt(10)).decode()
    converted = convert_hash(hashed, None, HashPolicy())
    assert isinstance(converted, ConvertedHash)
    assert converted.value == hashed and converted.verifier == "bcrypt" == claim(hashed)
    assert bcrypt.checkpw(b"pw-ann", converted.value.encode())


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
    failure = convert_hash(value, None, policy)
    assert isinstance(failure, HashFailure) and failure.reason == reason
    assert value not in failure.detail


def test_formed_strings_of_other_verifiers_pass_when_the_target_enables_them():
    md5crypt = "$1$saltsalt$qjXMvbEw8oaL.CzflDugX."
    converted = convert_hash(md5crypt, None, HashPolicy(verifiers=frozenset({"bcrypt", "md5"})))
    assert isinstance(converted, ConvertedHash) and converted.verifier == "md5"
