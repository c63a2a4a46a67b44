"""ReadAuth0Users (join, dedup, dead letters) in TestPipeline, and wired to UsersToBodies as the launcher wires them."""

from __future__ import annotations

import json
from pathlib import Path

import apache_beam as beam
import orjson
from apache_beam.testing.util import assert_that, equal_to
from beam_fixtures import h, pipeline

from transforms.common.records import decode_rows
from transforms.files.spill import load_blob
from transforms.mapping.ids import auth0_user_id
from transforms.mapping.validate import Reason, ValidationOptions
from transforms.output.bodies import BodySpec, UsersToBodies
from transforms.sources import json_units
from transforms.sources.auth0.options import Auth0Options
from transforms.sources.auth0.read import ReadAuth0Users


def write_ndjson(path: Path, records) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def read_users(tmp_path: Path, profiles, passwords, options=None, partitions=3):
    """Build ReadAuth0Users on temp files; returns (pipeline, users, dead) where
    users = (userId, hash or None) and dead = (source, reason, record key)."""
    options = options or Auth0Options()
    profile_files = json_units.match_inputs([str(write_ndjson(tmp_path / "users.json", profiles))], 0)
    password_files = json_units.match_inputs([str(write_ndjson(tmp_path / "passwords.json", passwords))], 1)
    p = pipeline()
    out = p | "Read" >> reader(tmp_path, profile_files, password_files, options, partitions)
    users = out.rows | "Users" >> beam.FlatMap(
        lambda kv: [
            (e.get("userId"), e["user"].get("hashedPassword", {}).get("value")) for e in entries(kv[1])
        ]
    )
    dead = out.dead | "Dead" >> beam.Map(_dead_key)
    return p, users, dead


def entries(value: bytes | str) -> list[dict]:
    """The humanUsers entries of a rows blob or its spill file (``EncodedRow``: field 4 is the entry's JSON)."""
    return [orjson.loads(row[4]) for row in decode_rows(load_blob(value))]


def reader(tmp_path: Path, profile_files, password_files, options=None, partitions=3):
    spill = tmp_path / "spill"
    spill.mkdir(exist_ok=True)
    return ReadAuth0Users(profile_files, password_files, options or Auth0Options(), partitions, str(spill))


def _dead_key(element):
    sortkey, line = element
    letter = orjson.loads(line)
    record = letter["record"]
    key = (record.get("user_id") or record.get("email") or "") if isinstance(record, dict) else record
    return letter["source"], letter["reason"], key


PROFILES = [
    {"user_id": "auth0|a1", "email": "ann@example.com"},
    {"user_id": "auth0|b2", "email": "Bob@Example.com"},
    {"user_id": "auth0|c3", "email": "cid@example.com"},
    {"user_id": "google-oauth2|9", "email": "cid@example.com", "username": "cid-google"},  # social twin
    {"user_id": "auth0|d4", "email": "dup@example.com", "username": "dup1"},
    {"user_id": "auth0|d5", "email": "dup@example.com", "username": "dup2"},
    {"user_id": "auth0|e6", "email": "blocked@example.com", "blocked": True},
    {"user_id": "auth0|f7", "email": "nopw@example.com"},
    {"email": "noid@example.com"},  # Auth0's bulk-import shape: the id is derived from the e-mail
    {"username": "nobody"},  # neither id nor e-mail
    {"user_id": "auth0|g8"},
    "not json",
    {"user_id": "auth0|h9", "email": "badhash@example.com"},
]
PASSWORDS = [
    # newest by password_set_date wins whatever the input order
    {
        "_id": {"$oid": "a1"},
        "email": "ann@example.com",
        "passwordHash": h(1),
        "password_set_date": {"$date": "2023-05-01T00:00:00.000Z"},
    },
    {
        "_id": {"$oid": "a1"},
        "email": "ann@example.com",
        "passwordHash": h(2),
        "password_set_date": {"$date": "2021-05-01T00:00:00.000Z"},
    },
    {
        "_id": {"$oid": "a1"},
        "email": "ANN@example.com ",
        "passwordHash": h(3),
        "last_password_reset": {"$date": "2022-05-01T00:00:00.000Z"},
    },
    {"_id": "auth0|b2", "email": " bob@example.COM", "passwordHash": h(4)},  # joined case-insensitively
    {"_id": {"$oid": "zz"}, "email": "cid@example.com", "passwordHash": h(5)},  # the one database user
    {"_id": {"$oid": "zz"}, "email": "dup@example.com", "passwordHash": h(6)},  # ambiguous
    {"_id": {"$oid": "e6"}, "email": "blocked@example.com", "passwordHash": h(7)},
    {"_id": {"$oid": "x0"}, "email": "orphan@example.com", "passwordHash": h(8)},
    {"_id": {"$oid": "h9"}, "email": "badhash@example.com", "passwordHash": "$2b$10$tooshort"},
    {"_id": {"$oid": "y0"}, "email": "nohash@example.com"},
    {"_id": {"$oid": "y1"}, "passwordHash": h(9)},
]


def test_read_auth0_users_join_and_dead_letters(tmp_path):
    p, users, dead = read_users(tmp_path, PROFILES, PASSWORDS)
    with p:
        assert_that(
            users,
            equal_to(
                [
                    ("auth0|a1", h(1)),
                    ("auth0|b2", h(4)),
                    ("auth0|c3", h(5)),
                    ("google-oauth2|9", None),
                    ("auth0|d4", None),
                    ("auth0|d5", None),
                    ("auth0|f7", None),
                    (auth0_user_id("noid@example.com"), None),
                ]
            ),
            label="JoinedUsers",
        )
        assert_that(
            dead,
            equal_to(
                [
                    ("auth0-password", Reason.PASSWORD_SUPERSEDED, "ann@example.com"),
                    ("auth0-password", Reason.PASSWORD_SUPERSEDED, "ANN@example.com "),
                    ("auth0-password", Reason.AMBIGUOUS_PASSWORD, "dup@example.com"),
                    ("auth0-profile", Reason.BLOCKED, "auth0|e6"),
                    ("auth0-password", Reason.PROFILE_REJECTED, "blocked@example.com"),
                    ("auth0-password", Reason.ORPHAN_PASSWORD, "orphan@example.com"),
                    ("auth0-profile", Reason.MISSING_USER_ID, ""),
                    ("auth0-profile", Reason.MISSING_EMAIL, "auth0|g8"),
                    ("auth0-profile", Reason.MALFORMED_JSON, "not json"),
                    ("auth0-profile", Reason.INVALID_HASH, "auth0|h9"),
                    ("auth0-password", Reason.PROFILE_REJECTED, "badhash@example.com"),
                    ("auth0-password", Reason.MISSING_PASSWORD_HASH, "nohash@example.com"),
                    ("auth0-password", Reason.MISSING_EMAIL, ""),
                ]
            ),
            label="DeadLetters",
        )


def test_read_auth0_users_options(tmp_path):
    profiles = [
        {"user_id": "auth0|1", "email": "blocked@example.com", "blocked": True, "email_verified": False},
        {"user_id": "auth0|2", "email": "low@example.com"},
    ]
    passwords = [{"_id": {"$oid": "2"}, "email": "low@example.com", "passwordHash": h(1, cost=4)}]
    options = Auth0Options(email_verified=True, include_blocked=True, validation=ValidationOptions(4, 16))
    p, users, dead = read_users(tmp_path, profiles, passwords, options, partitions=1)
    with p:
        assert_that(users, equal_to([("auth0|1", None), ("auth0|2", h(1, cost=4))]), label="Users")
        assert_that(dead, equal_to([]), label="NoDeadLetters")


def test_read_auth0_users_default_cost_bounds(tmp_path):
    passwords = [{"_id": {"$oid": "2"}, "email": "low@example.com", "passwordHash": h(1, cost=4)}]
    p, users, dead = read_users(tmp_path, [{"user_id": "auth0|2", "email": "low@example.com"}], passwords)
    with p:
        assert_that(users, equal_to([]), label="NoUsers")
        assert_that(
            dead,
            equal_to(
                [
                    ("auth0-profile", Reason.BCRYPT_COST, "auth0|2"),
                    ("auth0-password", Reason.PROFILE_REJECTED, "low@example.com"),
                ]
            ),
            label="DeadLetters",
        )


def test_read_auth0_users_gives_few_large_elements(tmp_path):
    profiles = [{"user_id": f"auth0|{i}", "email": f"u{i}@example.com"} for i in range(50)]
    profile_files = json_units.match_inputs([str(write_ndjson(tmp_path / "users.json", profiles))], 0)
    with pipeline() as p:
        out = p | reader(tmp_path, profile_files, [], Auth0Options(), 4)
        sizes = out.rows | beam.Map(lambda kv: len(entries(kv[1])))
        assert_that(sizes | beam.CombineGlobally(sum), equal_to([50]), label="AllUsers")
        assert_that(sizes | beam.combiners.Count.Globally(), equal_to([4]), label="OneElementPerPartition")


def _body_summary(path: str):
    data = json.loads(Path(path).read_bytes())
    org = data["dataOrgs"]["orgs"][0]
    return org["orgId"], data["timeout"], tuple(u["userId"] for u in org["humanUsers"])


def test_read_then_bodies(tmp_path):
    """The two transforms wired as the launcher wires them; a body holds users in input order."""
    profiles = [{"user_id": f"auth0|{i}", "email": f"u{i}@example.com"} for i in range(9)]
    profiles.append({"user_id": "auth0|3", "email": "again@example.com"})
    passwords = [
        {"_id": {"$oid": str(i)}, "email": f"U{i}@example.com", "passwordHash": h(i)} for i in range(9)
    ]
    profile_files = json_units.match_inputs([str(write_ndjson(tmp_path / "u.json", profiles))], 0)
    password_files = json_units.match_inputs([str(write_ndjson(tmp_path / "p.json", passwords))], 1)
    body_dir = tmp_path / "bodies"
    body_dir.mkdir()
    with pipeline() as p:
        source = p | reader(tmp_path, profile_files, password_files, Auth0Options(), 4)
        out = source.rows | UsersToBodies(BodySpec("7", "5m0s", 100), str(body_dir))
        bodies = out.bodies | beam.Map(lambda path: _body_summary(path)[2])
        dead = (source.dead, out.dead) | beam.Flatten() | beam.Map(_dead_key)
        assert_that(bodies, equal_to([tuple(f"auth0|{i}" for i in range(9))]), label="OneBodyInInputOrder")
        assert_that(dead, equal_to([("auth0-profile", Reason.DUPLICATE_USER_ID, "auth0|3")]), label="Dead")
