"""transforms/hashing/framework_hashes.py: Django, ASP.NET Core Identity and Werkzeug layouts.

The vectors and their verification against passwap's rules are in tests/transforms/hashing/test_forms.py; here,
the exact strings written and the refusals of each layout, field by field.
"""

from __future__ import annotations

import base64
import hashlib

import passwap_rules
import pytest

from transforms.common.reasons import Reason
from transforms.hashing.framework_hashes import (
    Refusal,
    ab64,
    aspnet_identity,
    django_md5,
    django_pbkdf2,
    django_scrypt,
    md5_colon_salt,
    portable,
    sha_crypt,
    std_b64,
    werkzeug,
)


def test_django_pbkdf2_carries_the_salt_text_as_bytes_and_the_key_in_the_adapted_alphabet():
    # Django's test_low_level_pbkdf2_sha1 vector: the key holds '+', which the './' alphabet spells '.'.
    assert django_pbkdf2("pbkdf2_sha1$390000$seasalt2$aDapRanzW8aHTz97v2TcfHzWD+I=", "pbkdf2") == (
        "$pbkdf2$390000$c2Vhc2FsdDI$aDapRanzW8aHTz97v2TcfHzWD.I"
    )
    # passwap reads a field without '+' in that alphabet: the bytes come back unchanged.
    assert ab64(bytes(range(256))).count("+") == 0
    assert passwap_rules._pbkdf2_field(ab64(bytes(range(256)))) == bytes(range(256))


def test_aspnet_v2_is_sha1_1000_rounds_with_the_salt_and_subkey_split_at_16_bytes():
    salt, subkey = bytes(range(16)), hashlib.pbkdf2_hmac("sha1", b"pw", bytes(range(16)), 1000, 32)
    value = base64.b64encode(b"\x00" + salt + subkey).decode()
    assert aspnet_identity(value, 0x00) == f"$pbkdf2$1000${ab64(salt)}${ab64(subkey)}"
    assert passwap_rules.verify(aspnet_identity(value, 0x00), "pw") is True


@pytest.mark.parametrize(
    ("prf", "ident", "digest"),
    [(0, "pbkdf2", "sha1"), (1, "pbkdf2-sha256", "sha256"), (2, "pbkdf2-sha512", "sha512")],
)
def test_aspnet_v3_reads_prf_iterations_and_salt_length_big_endian(prf, ident, digest):
    salt = bytes(range(100, 124))  # 24 bytes: the header's salt length decides where the subkey starts
    subkey = hashlib.pbkdf2_hmac(digest, "pässword".encode(), salt, 1234, 40)
    header = bytes([1]) + prf.to_bytes(4, "big") + (1234).to_bytes(4, "big") + (24).to_bytes(4, "big")
    encoded = aspnet_identity(base64.b64encode(header + salt + subkey).decode(), 0x01)
    assert encoded == f"${ident}$1234${ab64(salt)}${ab64(subkey)}"
    assert passwap_rules.verify(encoded, "pässword") is True


def test_aspnet_refusals():
    assert aspnet_identity("not base64!", 0x01) == Refusal(Reason.INVALID_HASH, "not standard base64")
    short = base64.b64encode(bytes([1, 0, 0])).decode()
    assert aspnet_identity(short, 0x01) == Refusal(
        Reason.INVALID_HASH, "v3 header is 13 bytes, the value has 3"
    )
    zero_rounds = bytes([1]) + (1).to_bytes(4, "big") + bytes(4) + (16).to_bytes(4, "big") + bytes(32)
    assert aspnet_identity(base64.b64encode(zero_rounds).decode(), 0x01) == Refusal(
        Reason.INVALID_HASH, "iteration count 0 is outside 1 - 4294967295"
    )


def test_django_scrypt_stores_log2_n_and_unpadded_base64():
    key = hashlib.scrypt(b"pw", salt=b"seasalt", n=1024, r=8, p=2, dklen=64)
    value = f"scrypt$1024$seasalt$8$2${base64.b64encode(key).decode()}"
    encoded = django_scrypt(value)
    assert encoded == f"$scrypt$ln=10,r=8,p=2$c2Vhc2FsdA${base64.b64encode(key).decode().rstrip('=')}"
    assert passwap_rules.verify(encoded, "pw") is True


def test_django_md5_salt_must_be_passwaps_literal_text():
    assert django_md5("md5$sea salt$3f86d0d3d465b7b458c231bf3555c0e3") == Refusal(
        Reason.UNSUPPORTED_SALT, "the salt holds whitespace, which passwap's md5salted cannot read"
    )
    assert django_md5("md5$$88A434C88CCA4E900F7874CD98123F43") == "88a434c88cca4e900f7874cd98123f43"


def test_werkzeug_needs_the_iteration_count_and_a_digest_passwap_has():
    key = hashlib.pbkdf2_hmac("sha384", b"pw", b"abc", 1000).hex()
    assert werkzeug(f"pbkdf2:sha384:1000$abc${key}", "pbkdf2") == (
        f"$pbkdf2-sha384$1000${ab64(b'abc')}${ab64(bytes.fromhex(key))}"
    )
    assert werkzeug(f"pbkdf2:sha384$abc${key}", "pbkdf2").detail == "expected pbkdf2:<digest>:<iterations>"
    assert werkzeug(f"pbkdf2:sha384:1000$abc${key}", "scrypt").detail == (
        "expected scrypt:<parameters>$<salt>$<hex key>"
    )


@pytest.mark.parametrize("text", ["", "=", "a", "ab=c", "abcde", "ab$c", "a" * 5 + "==="])
def test_std_b64_refuses_what_is_not_base64(text):
    assert std_b64(text) is None


def test_crypt_style_forms_pass_as_is_within_their_own_ranges():
    sha256 = "$5$rounds=1000$roundstoolow$yfvwcWrQ8l/K0DAWyuPMDNHpIVlTQebY9l/gL972bIC"  # passwap sha2_test.go
    assert sha_crypt("5")(sha256) == sha256
    assert sha_crypt("6")(sha256).detail.startswith("expected $6$")
    assert passwap_rules.verify(sha256, "the minimum number is still observed") is True
    drupal = "$S$DrandomsaOpYrAZqwxGynirQbWYCb3ejW4BwGH81LJcOzbzeVd02"  # count 'D' = 2^15, Drupal 7's default
    assert portable("S", 55)(drupal) == drupal
    assert portable("PH", 34)(drupal).detail == "expected 34 characters in the crypt alphabet"
    assert portable("S", 55)("$S$/" + drupal[4:]).detail == "count character gives 2^1, outside 2^7 - 2^30"


def test_md5_with_a_colon_salt_needs_a_salt_passwap_can_read():
    assert md5_colon_salt("5f4dcc3b5aa765d61d8327deb882cf99:a$b", salt_first=True) == Refusal(
        Reason.UNSUPPORTED_SALT, "the salt holds '$', which passwap's md5salted cannot read"
    )
    assert md5_colon_salt("5f4dcc3b5aa765d61d8327deb882cf99", salt_first=True).detail == (
        "expected <32 hex digits>:<salt>"
    )
