"""The Auth0 join (transforms/sources/auth0/join.py): the spliced bytes, and one partition joined."""

from __future__ import annotations

import pickle

import orjson
import pytest
from apache_beam import pvalue

from transforms.common.records import decode_rows
from transforms.files.spill import load_blob, write_spill
from transforms.sources.auth0.items import Kind
from transforms.sources.auth0.join import _JoinPartitionFn, with_otp, with_password
from transforms.sources.auth0.mapping import map_profile
from transforms.sources.auth0.options import Auth0Options

HASH = "$2b$10$" + "a" * 53

PROFILE = {"user_id": "auth0|1", "email": "ann@example.com", "name": "Ann Lee", "email_verified": True}


@pytest.mark.parametrize("verified", [True, False])
def test_with_password_gives_the_bytes_of_encoding_the_entry_with_the_hash(verified):
    without = orjson.dumps(map_profile(PROFILE, None, verified))
    assert with_password(without, HASH) == orjson.dumps(map_profile(PROFILE, HASH, verified))


def test_with_otp_appends_the_secret_as_the_last_user_field():
    entry = orjson.dumps(map_profile(PROFILE, None, False))
    joined = orjson.loads(with_otp(with_password(entry, HASH), "JBSWY3DPEHPK3PXP"))
    assert list(joined["user"])[-2:] == ["hashedPassword", "otpCode"]
    assert joined["user"]["otpCode"] == "JBSWY3DPEHPK3PXP"


def _profile_item(file_index, position, email, user_id):
    entry = orjson.dumps(map_profile({"user_id": user_id, "email": email}, None, False))
    raw = orjson.dumps({"user_id": user_id, "email": email})
    return (file_index, position, email, user_id, email, None, entry, b"", ((), b""), raw, ())


def _password_item(file_index, position, email, oid, date, password_hash):
    raw = orjson.dumps({"_id": oid, "email": email, "passwordHash": password_hash})
    return (file_index, position, email, oid, date, password_hash, raw, Kind.PASSWORDS, None)


def test_one_partition_newest_password_wins_and_orphans_are_dead_letters(tmp_path):
    profiles = [_profile_item(0, 0, "ann@example.com", "auth0|1")]
    passwords = [
        _password_item(1, 0, "ann@example.com", "1", "2021", "$2b$10$" + "b" * 53),
        _password_item(1, 9, "ann@example.com", "1", "2023", HASH),
        _password_item(1, 5, "nobody@example.com", "9", "", HASH),
    ]
    blobs = [
        (int(kind), write_spill(str(tmp_path), f"{kind}.pkl", pickle.dumps(items)))
        for kind, items in ((Kind.PROFILES, profiles), (Kind.PASSWORDS, passwords))
    ]
    join = _JoinPartitionFn(Auth0Options(), str(tmp_path))
    join.setup()
    out = list(join.process((3, blobs)))
    letters = [orjson.loads(o.value[1]) for o in out if isinstance(o, pvalue.TaggedOutput)]
    assert [(letter["source"], letter["reason"]) for letter in letters] == [
        ("auth0-password", "orphan-password"),
        ("auth0-password", "password-superseded"),
    ]
    ((part, spilled),) = [o for o in out if not isinstance(o, pvalue.TaggedOutput)]
    ((file_index, position, user_id, _, entry_json, _, password, source, _, companions, grants, _, _),) = (
        decode_rows(load_blob(spilled))
    )
    assert (part, file_index, position, user_id, password, source, grants) == (
        3,
        0,
        0,
        "auth0|1",
        "bcrypt",
        "auth0-profile",
        (),
    )
    assert orjson.loads(entry_json)["user"]["hashedPassword"] == {"value": HASH}
    assert orjson.loads(companions)[0][:2] == [[1, 9], "auth0-password"]
