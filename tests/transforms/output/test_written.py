"""transforms/output/written.py: counts and lists about users written come from the users written.

One user twice in an export (same id, two e-mails, no usable password) used to be counted twice
in ``cannot sign in yet``, ``e-mail from --email-fallback``, the fields not carried and the hash
forms, and listed twice for password-reset mails: each source counted them as it read,
before de-duplication. Here each source runs end to end (the CLI, real files) with such a user,
and every count, list and manifest field says what was written.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import apache_beam as beam
import orjson
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from keycloak_fixtures import DATA, make_user, write_json
from zitadel_fixtures import PAT
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.common.records import NAMESPACE, encoded_row
from transforms.output.written import CountWrittenUsers, WrittenTally

ORG = "123456789"
CANNOT = "cannot sign in yet (no password, no IdP link)"
FALLBACK = "e-mail from --email-fallback (unverified)"


def _row(position: int, tallies: tuple[str, ...] = (), passwordless: bytes = b""):
    return encoded_row(
        file_index=0,
        position=position,
        user_id=f"u{position}",
        name_key=f"u{position}",
        entry_json=b"{}",
        metadata_json=b"",
        password="",
        source="test-user",
        record_json=b"{}",
        companions_json=b"",
        grants=(),
        tallies=tallies,
        passwordless=passwordless,
    )


def test_a_tally_adds_each_kept_users_names_and_lines_once():
    tally = WrittenTally()
    assert tally.take() is None  # nothing kept: nothing to count
    for row in (
        _row(2, ("cannot_sign_in.x", "notes.email-fallback"), b'{"id":"u2"}'),
        _row(1, ("cannot_sign_in.x",)),
        _row(3),
    ):
        tally.add(row)
    counts, lines = tally.take() or ({}, [])
    assert counts == {"cannot_sign_in.x": 2, "notes.email-fallback": 1}
    assert lines == [((0, 2), b'{"id":"u2"}')]
    assert tally.take() is None  # taken: the next partition starts from nothing


def test_count_written_users_sets_counters_and_lists_in_input_order(tmp_path):
    written = [
        ({"cannot_sign_in.x": 2}, [((1, 5), b'{"id":"b"}')]),
        ({"cannot_sign_in.x": 1, "not_carried.x.picture": 1}, [((0, 9), b'{"id":"a"}')]),
    ]
    pipeline = beam.Pipeline(runner=FnApiRunner())
    _ = pipeline | beam.Create(written) | CountWrittenUsers(str(tmp_path))
    result = pipeline.run()
    result.wait_until_finish()
    query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    assert {c.key.metric.name: c.committed for c in query["counters"]} == {
        "cannot_sign_in.x": 3,
        "not_carried.x.picture": 1,
    }
    (listing,) = list(tmp_path.glob("passwordless-*"))
    assert stat.S_IMODE(os.stat(listing).st_mode) == 0o600
    assert listing.read_bytes() == b'{"id":"a"}\n{"id":"b"}\n'


def _migrate(tmp_path: Path, source: str, *args: str) -> tuple[dict, str, list[dict]]:
    """Run ``migrate <source>``: its manifest, its summary and its passwordless list."""
    out = tmp_path / "out"
    code = main(["migrate", source, f"--org={ORG}", f"--output={out / 'importBody.json'}", *args])
    assert code == 0
    manifest = json.loads((out / "importBody.manifest.json").read_text())
    assert manifest["invariant"]["holds"], manifest["invariant"]
    listing = out / "importBody.passwordless.ndjson"
    listed = [orjson.loads(line) for line in listing.read_bytes().splitlines()] if listing.exists() else []
    return manifest, "", listed


def _row_value(summary: str, label: str) -> int:
    """The number a summary row ``label`` prints."""
    (line,) = [line for line in summary.splitlines() if line.startswith(label)]
    return int(line[len(label) :].strip().replace(",", ""))


def _check(manifest: dict, summary: str, written: int, cannot: int, fallback: int) -> None:
    counts = manifest["counts"]
    duplicates = sum(v for k, v in counts.items() if k.startswith("dead_letter.") and "duplicate-" in k)
    assert duplicates >= 1  # the export did hold a user twice
    assert counts["users_written"] == written
    assert manifest["cannot_sign_in_yet"] == cannot == _row_value(summary, CANNOT)
    assert manifest["email_fallback"] == fallback == _row_value(summary, FALLBACK)


def test_auth0_counts_a_duplicated_user_once(tmp_path, capsys):
    users = tmp_path / "users.json"
    profiles = [
        {"user_id": "auth0|1", "email": "ann@example.com", "picture": "a.png"},
        {"user_id": "auth0|1", "email": "ann.other@example.com", "picture": "b.png"},  # the same user
        {"user_id": "auth0|2", "email": "bo@example.com"},
        {"user_id": "auth0|3", "username": "cy", "logins_count": 3},  # no e-mail: --email-fallback
        {"user_id": "auth0|3", "username": "cy.again", "logins_count": 4},  # the same user
    ]
    users.write_bytes(b"\n".join(orjson.dumps(p) for p in profiles))
    manifest, _, listed = _migrate(
        tmp_path, "auth0", f"--users={users}", "--passwords=none", "--email-fallback={id}@users.example"
    )
    summary = capsys.readouterr().out
    _check(manifest, summary, written=3, cannot=3, fallback=1)
    assert manifest["fields_not_carried"] == {"auth0.logins_count": 1, "auth0.picture": 1}
    assert manifest["counts"]["notes.email-fallback"] == 1
    assert manifest["passwordless"]["count"] == 0 and listed == []


def test_keycloak_counts_and_lists_a_duplicated_user_once(tmp_path, capsys):
    broken = [{"type": "password", "secretData": "{broken", "credentialData": "{}"}]
    users = [
        make_user(1, credentials=broken, createdTimestamp=1),
        make_user(1, credentials=broken, createdTimestamp=2, email="ann.other@example.com", username="ann2"),
        make_user(2, credentials=[]),
        {**make_user(3, credentials=[]), "email": None},  # --email-fallback
        {**make_user(3, credentials=[], username="cy2"), "email": None},  # the same user
    ]
    realm = write_json(tmp_path / "realm.json", {"realm": "acme", "users": users})
    manifest, _, listed = _migrate(
        tmp_path,
        "keycloak",
        f"--realm={realm}",
        "--on-unsupported-hash=import-without-password",
        "--email-fallback={id}@users.example",
        f"--zitadel-config={DATA / 'zitadel-config' / 'verifiers-enabled.yaml'}",
    )
    summary = capsys.readouterr().out
    _check(manifest, summary, written=3, cannot=3, fallback=1)
    assert manifest["fields_not_carried"] == {"keycloak.createdTimestamp": 1}
    assert manifest["users_without_password_by_reason"] == {"unsupported-hash": 1}
    assert [(u["id"], u["email"]) for u in listed] == [("id-1", "user1@example.com")]
    assert manifest["passwordless"]["count"] == 1


def test_firebase_lists_a_duplicated_users_address_once(tmp_path, capsys):
    scrypt = {"passwordHash": "EbiH/Y6nXcuWEBOigGgLL7HssRDzEiDv53eDm8R9kTRp6g==", "salt": "YCwKBkzDzFM="}
    users = [
        {"localId": "fb-1", "email": "ann@example.com", "createdAt": "1700000000000", **scrypt},
        {"localId": "fb-1", "email": "ann.other@example.com", "createdAt": "1700000000001", **scrypt},
        {"localId": "fb-2", "email": "bo@example.com"},
        {"localId": "fb-3", "displayName": "Cy"},  # no e-mail: --email-fallback
        {"localId": "fb-3", "displayName": "Cy again"},  # the same user
    ]
    export = tmp_path / "users.json"
    export.write_bytes(orjson.dumps({"users": users}))
    manifest, _, listed = _migrate(
        tmp_path, "firebase", f"--users={export}", "--email-fallback={id}@users.example"
    )
    summary = capsys.readouterr().out
    _check(manifest, summary, written=3, cannot=3, fallback=1)
    assert manifest["fields_not_carried"] == {"firebase.createdAt": 1}
    assert manifest["counts"]["firebase.password_dropped.unsupported-hash"] == 1
    # The reset mail goes to the address written, never to the duplicate's.
    assert [(u["id"], u["email"]) for u in listed] == [("fb-1", "ann@example.com")]
    assert manifest["passwordless"]["count"] == 1


def test_a_table_counts_forms_and_lists_a_duplicated_user_once(tmp_path, capsys):
    vectors = json.loads((DATA / "hash_forms_vectors.json").read_text())
    refused, rewritten = vectors["refused"][0]["value"], vectors["rewritten"][0]["value"]
    records = [
        {"id": "t1", "email": "ann@example.com", "hash": refused, "plan": "pro"},
        {"id": "t1", "email": "ann.other@example.com", "hash": refused, "plan": "free"},  # the same user
        {"id": "t2", "email": "bo@example.com"},
        {"id": "t3", "email": "cy@example.com", "hash": rewritten},
        {"id": "t3", "email": "cy.other@example.com", "hash": rewritten},  # the same user
        {"id": "t4"},  # no e-mail: --email-fallback
        {"id": "t4", "plan": "x"},  # the same user
    ]
    table = tmp_path / "users.ndjson"
    table.write_bytes(b"\n".join(orjson.dumps(r) for r in records))
    manifest, _, listed = _migrate(
        tmp_path,
        "table",
        f"--input={table}",
        "--map=id=id",
        "--map=email=email",
        "--map=password_hash=hash",
        f"--zitadel-config={DATA / 'zitadel-config' / 'verifiers-enabled.yaml'}",
        "--on-unsupported-hash=import-without-password",
        "--email-fallback={id}@users.example",
    )
    summary = capsys.readouterr().out
    _check(manifest, summary, written=4, cannot=3, fallback=1)
    assert manifest["unknown_fields"] == {"table.plan": 1}
    assert manifest["password_hash_forms"] == {"django-pbkdf2-sha256": 1}
    assert manifest["refused_hash_forms"] == {"django-bcrypt-sha256": 1}
    assert [(u["id"], u["email"]) for u in listed] == [("t1", "ann@example.com")]
    assert manifest["passwordless"]["count"] == 1


def test_a_state_night_counts_the_users_compared_as_written_ones(tmp_path, capsys):
    """With --state, users already in ZITADEL are compared instead of written: what their
    source noted about them still counts (and a duplicate still does not)."""
    users = tmp_path / "users.json"
    profiles = [
        {"user_id": "auth0|1", "email": "ann@example.com", "picture": "a.png"},
        {"user_id": "auth0|1", "email": "ann.other@example.com", "picture": "b.png"},  # the same user
        {"user_id": "auth0|2", "email": "bo@example.com"},
    ]
    users.write_bytes(b"\n".join(orjson.dumps(p) for p in profiles))
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    nights = []
    with ZitadelServer(tokens={PAT}) as server:  # the push commits the state the next night reads
        for night in ("first", "second"):
            manifest, _, _ = _migrate(
                tmp_path / night,
                "auth0",
                f"--users={users}",
                "--passwords=none",
                f"--state={tmp_path / 'state'}",
                f"--push-url={server.url}",
                f"--token-file={token_file}",
            )
            nights.append((manifest, capsys.readouterr().out))
    (first, first_summary), (second, second_summary) = nights
    assert first["counts"]["users_written"] == 2 and "sync.rows_not_imported" not in first["counts"]
    assert second["counts"].get("users_written", 0) == 0 and second["counts"]["sync.rows_not_imported"] == 2
    for manifest, summary in nights:
        assert manifest["cannot_sign_in_yet"] == 2 == _row_value(summary, CANNOT)
        assert manifest["fields_not_carried"] == {"auth0.picture": 1}


def test_a_zitadel_export_counts_a_duplicated_users_hash_once(tmp_path, capsys):
    """data_orgsv1 has no 'cannot sign in yet' or passwordless list; its one count about users
    written, the hashes by verifier, already leaves a duplicate out (its planner drops it first)."""
    from zitadel_fixtures import make_export

    export = make_export((3,), ghost_grants=0)
    humans = export["orgs"][0]["humanUsers"]
    twin = json.loads(json.dumps(humans[0]))
    twin["user"]["email"] = {"email": "other@example.com", "isEmailVerified": False}
    humans.append(twin)  # the same user id, another e-mail
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"orgs": export["orgs"]}))
    out = tmp_path / "out"
    assert main(["migrate", "zitadel", f"--export={path}", f"--output={out / 'importBody.json'}"]) == 0
    manifest = json.loads((out / "importBody.manifest.json").read_text())
    assert manifest["counts"]["human_users_written"] == 3
    assert sum(manifest["password_hashes"].values()) == 3
    assert manifest["dead_letters_by_reason"] == {"zitadel-export": {"duplicate-user-id": 1}}
