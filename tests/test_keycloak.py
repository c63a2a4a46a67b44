"""The Keycloak source: mapping, input planning, the streaming reader and the CLI end to end.

Reference files are read from ``tests/data`` (the zitadel-tools conformance pair and the
real-world exports; origins in ``tests/data/README.md``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import apache_beam as beam
import orjson
import pytest
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

from pipeline.cli import main
from transforms.common.ids import keycloak_user_id
from transforms.common.records import decode_rows
from transforms.files.spill import load_blob
from transforms.mapping.validate import Reason
from transforms.sources.keycloak.keycloak_mapping import (
    IMPORT_WITHOUT_PASSWORD,
    KeycloakOptions,
    MappedUser,
    Rejection,
    attribute_metadata,
    map_user,
    other_credential_types,
)
from transforms.sources.keycloak.keycloak_read import FILE_SOURCE, SOURCE, ReadKeycloakUsers
from transforms.sources.keycloak.keycloak_realm_files import RealmInputError, RealmSource, plan_realm_sources

DATA = Path(__file__).resolve().parent / "data"
REFERENCE = DATA / "zitadel-tools" / "keycloak"
REALWORLD = DATA / "realworld" / "keycloak"


def _need(path: Path) -> Path:
    assert path.exists(), f"{path} is missing from tests/data"
    return path


def _pbkdf2_credential(password: str, iterations: int = 1000) -> dict:
    salt = hashlib.sha256(password.encode()).digest()[:16]  # deterministic for stable fixtures
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations, 32)
    return {
        "type": "password",
        "secretData": json.dumps(
            {"value": base64.b64encode(digest).decode(), "salt": base64.b64encode(salt).decode()}
        ),
        "credentialData": json.dumps({"hashIterations": iterations, "algorithm": "pbkdf2-sha256"}),
    }


def _user(n: int, **extra) -> dict:
    user = {
        "id": f"id-{n}",
        "username": f"user{n}",
        "enabled": True,
        "emailVerified": True,
        "firstName": f"First{n}",
        "lastName": f"Last{n}",
        "email": f"user{n}@example.com",
        "credentials": [_pbkdf2_credential(f"pw{n}")],
    }
    user.update(extra)
    return user


def _write(path: Path, doc) -> Path:
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return path


def _split_export(directory: Path, realm: str, users_per_file: list[int]) -> list[dict]:
    """What `kc.sh export --users different_files` writes: a realm file + users files."""
    directory.mkdir(parents=True, exist_ok=True)
    _write(
        directory / f"{realm}-realm.json",
        {"realm": realm, "enabled": True, "roles": {"realm": []}, "clients": []},
    )
    users, n = [], 0
    for file_no, count in enumerate(users_per_file):
        chunk = [_user(n + i) for i in range(count)]
        n += count
        users += chunk
        _write(directory / f"{realm}-users-{file_no}.json", {"realm": realm, "users": chunk})
    return users


# --------------------------------------------------------------------------- mapping


def test_map_user_reference_shape():
    mapped = map_user(_user(1), KeycloakOptions())
    assert isinstance(mapped, MappedUser)
    assert mapped.password == "pbkdf2-sha256"
    user = mapped.entry["user"]
    assert mapped.entry["userId"] == "id-1"
    assert user["userName"] == "user1"
    assert user["profile"] == {"firstName": "First1", "lastName": "Last1"}
    assert user["email"] == {"email": "user1@example.com", "isEmailVerified": True}
    assert user["hashedPassword"]["value"].startswith("$pbkdf2-sha256$1000$")


def test_map_user_name_fallbacks_and_unverified_email():
    mapped = map_user(_user(2, firstName="", lastName=None, emailVerified=False), KeycloakOptions())
    assert mapped.entry["user"]["profile"] == {"firstName": "user2", "lastName": "user2"}
    assert mapped.entry["user"]["email"] == {"email": "user2@example.com"}  # protojson omits false


def test_map_user_phone_and_language_from_attributes():
    user = _user(
        3, attributes={"phoneNumber": ["+41791234567"], "phoneNumberVerified": ["true"], "locale": ["de-CH"]}
    )
    mapped = map_user(user, KeycloakOptions())
    assert mapped.entry["user"]["phone"] == {"phone": "+41791234567", "isPhoneVerified": True}
    assert mapped.entry["user"]["profile"]["preferredLanguage"] == "de"
    bad_phone = map_user(_user(4, attributes={"phone_number": ["079 123 45 67"]}), KeycloakOptions())
    assert "phone" not in bad_phone.entry["user"] and bad_phone.notes == ["phone-dropped"]


def test_attribute_metadata_single_and_multi_valued():
    entries, dropped = attribute_metadata(
        {
            "dept": ["sales"],
            "groups": ["a", "b"],
            "empty": [],
            "blank": [""],  # an empty value: ZITADEL refuses it (value at least 1 byte)
            "bare": "",
            "x" * 201: ["v"],
        }
    )
    decoded = {e["key"]: base64.b64decode(e["value"]) for e in entries}
    assert decoded == {"dept": b"sales", "groups": b'["a","b"]'}
    assert dropped == 1
    with_flag = map_user(_user(5, attributes={"dept": ["sales"]}), KeycloakOptions(metadata=True))
    assert [e["key"] for e in with_flag.metadata] == ["dept"]
    assert map_user(_user(5, attributes={"dept": ["sales"]}), KeycloakOptions()).metadata == []


@pytest.mark.parametrize(
    "extra,options,reason",
    [
        ({"enabled": False}, KeycloakOptions(), Reason.DISABLED),
        ({"enabled": None}, KeycloakOptions(), Reason.DISABLED),
        ({"serviceAccountClientId": "client", "email": None}, KeycloakOptions(), Reason.SERVICE_ACCOUNT),
        (
            {"serviceAccountClientId": "client"},
            KeycloakOptions(include_disabled=True),
            Reason.SERVICE_ACCOUNT,
        ),
        ({"email": ""}, KeycloakOptions(), Reason.MISSING_EMAIL),
        ({"email": "not-an-address"}, KeycloakOptions(), Reason.INVALID_EMAIL),
        ({"username": ""}, KeycloakOptions(), Reason.INVALID_USERNAME),
        (
            {"credentials": [{"type": "password", "secretData": "{broken", "credentialData": "{}"}]},
            KeycloakOptions(),
            Reason.UNSUPPORTED_HASH,
        ),
        (
            {
                "credentials": [
                    {
                        "type": "password",
                        "secretData": '{"value":"x","salt":"y"}',
                        "credentialData": '{"hashIterations":1,"algorithm":"sha512-custom"}',
                    }
                ]
            },
            KeycloakOptions(),
            Reason.UNSUPPORTED_HASH,
        ),
        (
            {"credentials": [{"type": "password", "value": "plaintext"}]},
            KeycloakOptions(),
            Reason.PLAINTEXT_PASSWORD,
        ),
    ],
)
def test_map_user_rejections(extra, options, reason):
    result = map_user(_user(6, **extra), options)
    assert isinstance(result, Rejection)
    assert result.reason == reason and result.detail


def test_map_user_include_disabled_and_not_an_object():
    assert isinstance(map_user(_user(7, enabled=False), KeycloakOptions(include_disabled=True)), MappedUser)
    assert map_user(["not", "a", "user"], KeycloakOptions()).reason == Reason.NOT_AN_OBJECT


def test_map_user_unsupported_hash_can_import_without_password():
    user = _user(8, credentials=[{"type": "password", "secretData": "{broken", "credentialData": "{}"}])
    mapped = map_user(user, KeycloakOptions(on_unsupported_hash=IMPORT_WITHOUT_PASSWORD))
    assert isinstance(mapped, MappedUser)
    assert "hashedPassword" not in mapped.entry["user"] and mapped.password is None
    assert mapped.dropped_hash.reason == Reason.UNSUPPORTED_HASH


def test_map_user_federated_imports_without_password():
    mapped = map_user(_user(9, federationLink="ldap-provider-id"), KeycloakOptions())
    assert mapped.federated and mapped.password is None
    assert "hashedPassword" not in mapped.entry["user"]


def test_first_password_credential_wins_and_others_are_counted():
    otp = {"type": "otp", "secretData": "{}", "credentialData": "{}"}
    second = _pbkdf2_credential("other", 2000)
    user = _user(10, credentials=[otp, _pbkdf2_credential("pw10"), second, {"type": "webauthn"}])
    mapped = map_user(user, KeycloakOptions())
    assert mapped.entry["user"]["hashedPassword"]["value"].startswith("$pbkdf2-sha256$1000$")
    # OTP devices are converted or counted by cause (tests/test_otp.py), not as "other".
    assert other_credential_types(user["credentials"]) == ["webauthn"]
    assert mapped.otp_not_carried == ["no-secret"] and "otpCode" not in mapped.entry["user"]


def test_user_without_id_gets_an_id_derived_from_realm_and_username():
    user = _user(11)
    del user["id"]
    mapped = map_user(user, KeycloakOptions(), "acme")
    # Stable across runs and case-insensitive, like Keycloak's usernames (README "User ids").
    assert mapped.entry["userId"] == keycloak_user_id("acme", "USER11")
    assert mapped.entry["userId"] != map_user(user, KeycloakOptions(), "other").entry["userId"]
    assert mapped.derived_id and "derived-id" in mapped.notes


@pytest.mark.parametrize(
    "template, extra, want",
    [
        # (--email-fallback, user fields, e-mail written or dead-letter reason)
        (None, {}, Reason.MISSING_EMAIL),
        ("{username}@users.example.com", {}, "user5@users.example.com"),
        ("{id}@ids.example.com", {}, "id-5@ids.example.com"),
        ("{username}@users.example.com", {"username": "ann lee"}, Reason.INVALID_EMAIL_FALLBACK),
        ("{username}@users.example.com", {"emailVerified": True}, "user5@users.example.com"),
    ],
)
def test_email_fallback(template, extra, want):
    user = _user(5, **extra)
    del user["email"]
    mapped = map_user(user, KeycloakOptions(email_fallback=template), "acme")
    if want.startswith(("missing", "invalid")):
        assert isinstance(mapped, Rejection) and mapped.reason == want
        assert "--email-fallback" in mapped.detail  # names the flag (and the template when set)
        return
    # Always unverified: nobody confirmed a made-up address.
    assert mapped.entry["user"]["email"] == {"email": want}
    assert mapped.email_fallback and "email-fallback" in mapped.notes


# --------------------------------------------------------------------------- planning


def test_plan_split_export_directory_orders_files(tmp_path):
    _split_export(tmp_path / "exp", "acme", [2] * 11)
    sources = plan_realm_sources(str(tmp_path / "exp"))
    names = [os.path.basename(s.path) for s in sources]
    assert names == [f"acme-users-{n}.json" for n in range(11)]  # realm file has no users; 10 after 9
    assert [s.index for s in sources] == list(range(11))


def test_plan_realm_file_alone_finds_its_users_files(tmp_path):
    _split_export(tmp_path, "acme", [1, 1])
    sources = plan_realm_sources(str(tmp_path / "acme-realm.json"))
    assert [os.path.basename(s.path) for s in sources] == ["acme-users-0.json", "acme-users-1.json"]


def test_plan_several_realms_needs_a_name(tmp_path):
    _split_export(tmp_path, "acme", [1])
    _split_export(tmp_path, "master", [1])
    with pytest.raises(RealmInputError, match="several realms.*--realm-name"):
        plan_realm_sources(str(tmp_path))
    assert [os.path.basename(s.path) for s in plan_realm_sources(str(tmp_path), "master")] == [
        "master-users-0.json"
    ]
    with pytest.raises(RealmInputError, match="no realm named 'nope'"):
        plan_realm_sources(str(tmp_path), "nope")


def test_plan_multi_realm_array(tmp_path):
    path = _write(
        tmp_path / "all.json",
        [{"realm": "master", "users": [_user(1)]}, {"realm": "acme", "users": [_user(2), _user(3)]}],
    )
    with pytest.raises(RealmInputError, match="master"):
        plan_realm_sources(str(path))
    assert plan_realm_sources(str(path), "acme") == [RealmSource(0, str(path), 1, "acme")]


@pytest.mark.parametrize(
    "content,message",
    [
        (b'{"realm": "a", "enabled": true, "clients": []}', 'no "users" array'),
        (b'{"realm": "a", "users": null}', 'no "users" array'),
        (b'{"realm": "a", "roles": {"realm": [', "not valid JSON"),
        (b"", "empty"),
        (b'"just a string"', "not a Keycloak realm export"),
    ],
)
def test_plan_rejects_unusable_documents(tmp_path, content, message):
    path = tmp_path / "realm.json"
    path.write_bytes(content)
    with pytest.raises(RealmInputError, match=message):
        plan_realm_sources(str(path))


def test_plan_missing_file(tmp_path):
    with pytest.raises(RealmInputError, match="no such file"):
        plan_realm_sources(str(tmp_path / "missing.json"))


# --------------------------------------------------------------------------- the reader


def _sortkeys(rows):
    return rows | "SortKeys" >> beam.FlatMap(lambda kv: [(r[0], r[1]) for r in decode_rows(load_blob(kv[1]))])


def _dead_reasons(dead):
    return dead | "Reasons" >> beam.Map(
        lambda d: (d[0], orjson.loads(d[1])["reason"], orjson.loads(d[1])["source"])
    )


def test_reader_split_export_in_parallel_files(tmp_path):
    _split_export(tmp_path, "acme", [5, 3, 4])
    # One disabled user in the last file, to see a dead letter keep its sort key.
    doc = orjson.loads((tmp_path / "acme-users-2.json").read_bytes())
    doc["users"][1]["enabled"] = False
    _write(tmp_path / "acme-users-2.json", doc)
    sources = plan_realm_sources(str(tmp_path))
    expected_rows = [(0, i) for i in range(5)] + [(1, i) for i in range(3)] + [(2, 0), (2, 2), (2, 3)]
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(sources, KeycloakOptions(), partitions=4, chunk_users=2)
        assert_that(_sortkeys(out["rows"]), equal_to(expected_rows), label="rows")
        assert_that(_dead_reasons(out["dead"]), equal_to([((2, 1), Reason.DISABLED, SOURCE)]), label="dead")


def test_reader_spills_blobs_to_tmp_dir(tmp_path):
    _write(tmp_path / "realm.json", {"realm": "r", "users": [_user(i) for i in range(30)]})
    spill = tmp_path / "spill"
    spill.mkdir()
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(
            plan_realm_sources(str(tmp_path / "realm.json")),
            KeycloakOptions(),
            partitions=2,
            tmp_dir=str(spill),
            chunk_users=10,
        )
        paths = out["rows"] | "Paths" >> beam.Map(
            lambda kv: isinstance(kv[1], str) and kv[1].startswith(str(spill))
        )
        assert_that(paths, lambda got: _check(got and all(got)), label="spill paths")
        assert_that(_sortkeys(out["rows"]), equal_to([(0, i) for i in range(30)]), label="rows")


def test_reader_emits_few_large_elements(tmp_path):
    _write(tmp_path / "realm.json", {"realm": "r", "users": [_user(i) for i in range(50)]})
    sources = plan_realm_sources(str(tmp_path / "realm.json"))
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(sources, KeycloakOptions(), partitions=3, chunk_users=20)
        # 50 users in chunks of 20 → at most 3 flushes × 3 partitions elements.
        sizes = out["rows"] | beam.combiners.Count.Globally()
        assert_that(sizes, lambda got: _check(got[0] <= 9), label="few elements")
        assert_that(_sortkeys(out["rows"]), equal_to([(0, i) for i in range(50)]), label="all rows")


def _check(condition: bool) -> None:
    if not condition:
        raise AssertionError("condition failed")


def test_reader_multi_realm_array_reads_the_chosen_realm(tmp_path):
    path = _write(
        tmp_path / "all.json",
        [{"realm": "master", "users": [_user(1)]}, {"realm": "acme", "users": [_user(2), _user(3)]}],
    )
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(plan_realm_sources(str(path), "acme"), KeycloakOptions(), partitions=2)
        ids = out["rows"] | beam.FlatMap(lambda kv: [r[2] for r in decode_rows(kv[1])])
        assert_that(ids, equal_to(["id-2", "id-3"]))


def test_reader_truncated_users_array_dead_letters_the_rest(tmp_path):
    text = orjson.dumps({"realm": "r", "users": [_user(i) for i in range(3)]})
    cut = text.index(b'"id-2"')
    (tmp_path / "realm.json").write_bytes(text[:cut])
    sources = plan_realm_sources(str(tmp_path / "realm.json"))  # the top level is fine
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(sources, KeycloakOptions(), partitions=2)
        assert_that(_sortkeys(out["rows"]), equal_to([(0, 0), (0, 1)]), label="rows")
        assert_that(
            _dead_reasons(out["dead"]),
            equal_to([((0, 2), Reason.UNREADABLE_INPUT, FILE_SOURCE)]),
            label="dead",
        )


def test_reader_bad_credential_json_is_a_dead_letter_not_a_crash(tmp_path):
    users = [
        _user(0),
        _user(1, credentials=[{"type": "password", "secretData": '{"value":', "credentialData": "]"}]),
        "not a user",
    ]
    _write(tmp_path / "realm.json", {"realm": "r", "users": users})
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(
            plan_realm_sources(str(tmp_path / "realm.json")), KeycloakOptions(), partitions=2
        )
        assert_that(_sortkeys(out["rows"]), equal_to([(0, 0)]), label="rows")
        assert_that(
            _dead_reasons(out["dead"]),
            equal_to([((0, 1), Reason.UNSUPPORTED_HASH, SOURCE), ((0, 2), Reason.NOT_AN_OBJECT, SOURCE)]),
            label="dead",
        )


# --------------------------------------------------------------------------- the CLI


def _run_cli(tmp_path: Path, *args: str) -> tuple[int, dict | None]:
    output = tmp_path / "out" / "importBody.json"
    if not any(arg.startswith("--zitadel-config") for arg in args):
        # The target enables pbkdf2 and argon2 (ZITADEL's default is bcrypt only; see test_hash_policy).
        args = (f"--zitadel-config={DATA / 'zitadel-config' / 'verifiers-enabled.yaml'}", *args)
    code = main(["migrate", "keycloak", "--org=123", f"--output={output}", *args])
    manifest_path = tmp_path / "out" / "importBody.manifest.json"
    return code, (json.loads(manifest_path.read_text()) if manifest_path.exists() else None)


def test_conformance_with_zitadel_tools_reference(tmp_path):
    realm = _need(REFERENCE / "realm.json")
    code, manifest = _run_cli(tmp_path, f"--realm={realm}", "--timeout=30m0s")
    assert code == 0
    got = json.loads((tmp_path / "out" / "importBody.json").read_text())
    assert got == json.loads((REFERENCE / "referenceOutput.json").read_text())
    assert manifest["invariant"]["holds"] is True


def test_cli_split_export_end_to_end(tmp_path):
    users = _split_export(tmp_path / "exp", "acme", [4, 4, 3])
    code, manifest = _run_cli(tmp_path, f"--realm={tmp_path / 'exp'}", "--batch-size=5")
    assert code == 0
    assert manifest["counts"]["keycloak.users_read"] == 11
    assert manifest["counts"]["keycloak.with_password.pbkdf2-sha256"] == 11
    assert manifest["invariant"]["holds"] is True
    written = []
    for body in manifest["bodies"]:
        doc = json.loads((tmp_path / "out" / body["path"]).read_text())
        written += [u["userId"] for u in doc["dataOrgs"]["orgs"][0]["humanUsers"]]
    assert written == [u["id"] for u in users]  # input order across files and bodies


@pytest.mark.parametrize(
    "content,message",
    [
        (b'{"realm": "a", "enabled": true}', 'no "users" array'),
        (b'{"realm": "a", "roles": {"realm": [{"name": "x"', "not valid JSON"),
        (b'[{"realm": "a", "users": []}, {"realm": "b", "users": []}]', "--realm-name"),
    ],
)
def test_cli_unusable_realm_is_one_error_line(tmp_path, capsys, content, message):
    (tmp_path / "realm.json").write_bytes(content)
    code, _ = _run_cli(tmp_path, f"--realm={tmp_path / 'realm.json'}")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("zitadel-beam: error: --realm:") and message in err[0]


def test_cli_missing_realm_is_one_error_line(tmp_path, capsys):
    code, _ = _run_cli(tmp_path, f"--realm={tmp_path / 'nope.json'}")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no such file" in err[0]


def test_cli_truncated_users_array_is_a_dead_letter(tmp_path):
    text = orjson.dumps({"realm": "r", "users": [_user(i) for i in range(3)]})
    (tmp_path / "realm.json").write_bytes(text[: text.index(b'"id-2"')])
    code, manifest = _run_cli(tmp_path, f"--realm={tmp_path / 'realm.json'}")
    assert code == 0
    assert manifest["dead_letters_by_reason"] == {FILE_SOURCE: {Reason.UNREADABLE_INPUT: 1}}
    assert manifest["counts"]["users_written"] == 2 and manifest["invariant"]["holds"] is True
    line = json.loads((tmp_path / "out" / "importBody.dead-letter.ndjson").read_text().splitlines()[0])
    assert "JSON syntax error after user 2" in line["detail"]


# Numbers read off each file (tests/test_realworld.py verifies their passwords).
_REALWORLD = {
    "jhipster-split-users-0.json": (2, {}, {"pbkdf2-sha256": 2}),
    "jhipster-split-users-0-legacy-hashedSaltedValue.json": (2, {}, {"pbkdf2-sha256": 2}),
    "lakekeeper-iceberg-realm-argon2.json": (2, {"service-account": 5}, {"argon2id": 2}),
    "strimzi-kafka-authz-realm.json": (
        2,
        {"service-account": 22, "plaintext-password": 1},
        {"pbkdf2-sha256": 2},
    ),
    "renku-renga-realm-legacy-pbkdf2-sha1.json": (1, {"service-account": 2}, {"pbkdf2-sha1": 1}),
}


@pytest.mark.parametrize("name", sorted(_REALWORLD))
def test_realworld_files_convert_without_crashing(tmp_path, name):
    path = _need(REALWORLD / name)
    written, dead, algorithms = _REALWORLD[name]
    code, manifest = _run_cli(tmp_path, f"--realm={path}")
    assert code == 0
    counts = manifest["counts"]
    assert counts["users_written"] == written
    assert manifest["dead_letters_by_reason"].get(SOURCE, {}) == dead
    assert {
        k.split(".", 2)[2]: v for k, v in counts.items() if k.startswith("keycloak.with_password.")
    } == algorithms
    assert manifest["invariant"]["holds"] is True


def test_reader_integer_overflow_ends_the_file_with_a_dead_letter(tmp_path):
    """yajl rejects integers beyond 64 bits as a syntax error: earlier users are kept."""
    good = orjson.dumps(_user(0))
    huge = orjson.dumps(_user(1)).replace(
        b'"enabled":true', b'"enabled":true,"notBefore":123456789012345678901234567890'
    )
    (tmp_path / "realm.json").write_bytes(b'{"realm":"r","users":[' + good + b"," + huge + b"]}")
    with test_pipeline.TestPipeline() as p:
        out = p | ReadKeycloakUsers(
            plan_realm_sources(str(tmp_path / "realm.json")), KeycloakOptions(), partitions=2
        )
        assert_that(_sortkeys(out["rows"]), equal_to([(0, 0)]), label="rows")
        assert_that(
            _dead_reasons(out["dead"]),
            equal_to([((0, 1), Reason.UNREADABLE_INPUT, FILE_SOURCE)]),
            label="dead",
        )


def test_map_user_non_string_id_is_rejected():
    assert map_user(_user(12, id=12), KeycloakOptions()).reason == Reason.INVALID_USER_ID


def test_cli_split_export_from_gcs(tmp_path, gcs_emulator):
    """The same reader on gs:// (FileSystems + the in-process emulator): a split export's files."""
    users = _split_export(tmp_path / "exp", "acme", [3, 2])
    for path in sorted((tmp_path / "exp").iterdir()):
        gcs_emulator.blob(f"exp/{path.name}").upload_from_filename(str(path))
    code, manifest = _run_cli(tmp_path, f"--realm=gs://{gcs_emulator.name}/exp/")
    assert code == 0
    assert manifest["counts"]["users_written"] == len(users)
    assert [os.path.basename(p) for p in manifest["realm_files"]] == [
        "acme-users-0.json",
        "acme-users-1.json",
    ]


# --------------------------------------------------------------------------- brokered users, fields


from transforms.sources.keycloak.keycloak_mapping import fields_not_carried, idp_links, unknown_fields  # noqa: E402 - imported where the tests that use it start


@pytest.mark.parametrize(
    "identities, links, outcomes",
    [
        (
            [{"identityProvider": "google", "userId": "g-1", "userName": "ann@gmail.com"}],
            [{"configId": "77", "externalUserId": "g-1", "displayName": "ann@gmail.com"}],
            [("linked", "google")],
        ),
        (
            [{"identityProvider": "google", "userId": " g-2 "}],
            [{"configId": "77", "externalUserId": "g-2", "displayName": "ann@example.com"}],
            [("linked", "google")],
        ),
        ([{"identityProvider": "Corp SAML", "userId": "x"}], [], [("unmapped", "corp_saml")]),
        (
            [{"identityProvider": "google", "userId": ""}, "junk"],
            [],
            [("invalid", "google"), ("invalid", "unknown")],
        ),
        (None, [], []),
    ],
)
def test_idp_links_table(identities, links, outcomes):
    user = {"email": "ann@example.com", "username": "ann", "federatedIdentities": identities}
    assert idp_links(user, {"google": "77"}) == (links, outcomes)


@pytest.mark.parametrize(
    "user, metadata, not_carried, unknown",
    [
        (
            {
                "id": "1",
                "requiredActions": ["UPDATE_PASSWORD"],
                "realmRoles": ["r"],
                "groups": [],
                "notBefore": 0,
            },
            False,
            ["realmRoles"],  # required actions are counted by name (tests/test_otp.py)
            [],
        ),
        (
            {"attributes": {"a": ["1"]}, "clientRoles": {"app": ["x"]}, "federationLink": "ldap-1"},
            False,
            ["attributes", "clientRoles", "federationLink"],
            [],
        ),
        ({"attributes": {"a": ["1"]}}, True, [], []),
        (
            {"totp": False, "access": {"manage": True}, "favouriteColour": "blue", "my key!": 1},
            False,
            [],
            ["favouriteColour", "my_key_"],
        ),
    ],
)
def test_fields_not_carried_table(user, metadata, not_carried, unknown):
    assert sorted(fields_not_carried(user, metadata)) == not_carried
    assert sorted(unknown_fields(user)) == unknown


def test_cli_brokered_users_and_fields_not_carried(tmp_path, capsys):
    realm = tmp_path / "realm.json"
    password = {
        "type": "password",
        "secretData": json.dumps(
            {"value": base64.b64encode(b"\0" * 32).decode(), "salt": base64.b64encode(b"s" * 16).decode()}
        ),
        "credentialData": json.dumps({"hashIterations": 27500, "algorithm": "pbkdf2-sha256"}),
    }
    users = [
        {
            "id": "1",
            "username": "ann",
            "email": "ann@example.com",
            "enabled": True,
            "federatedIdentities": [
                {"identityProvider": "google", "userId": "g-1", "userName": "ann@gmail.com"}
            ],
            "requiredActions": ["VERIFY_EMAIL"],
            "groups": ["/staff"],
        },
        {
            "id": "2",
            "username": "bob",
            "email": "bob@example.com",
            "enabled": True,
            "federatedIdentities": [{"identityProvider": "corp", "userId": "c-2"}],
            "credentials": [{"type": "otp", "secretData": "{}"}],
            "shoeSize": 44,
        },
        {
            "id": "3",
            "username": "cid",
            "email": "cid@example.com",
            "enabled": True,
            "credentials": [password],
            "realmRoles": ["admin"],
        },
    ]
    realm.write_text(json.dumps({"realm": "acme", "users": users}))
    code, manifest = _run_cli(tmp_path, f"--realm={realm}", "--idp-map=google=301")
    assert code == 0
    written = json.loads((tmp_path / "out" / "importBody.json").read_text())["dataOrgs"]["orgs"][0][
        "humanUsers"
    ]
    by_id = {u["userId"]: u["user"] for u in written}
    assert by_id["1"]["idps"] == [
        {"configId": "301", "externalUserId": "g-1", "displayName": "ann@gmail.com"}
    ]
    assert "idps" not in by_id["2"] and "hashedPassword" in by_id["3"]
    assert manifest["counts"]["keycloak.idp_links.linked.google"] == 1
    assert manifest["counts"]["keycloak.idp_links.unmapped.corp"] == 1
    assert manifest["cannot_sign_in_yet"] == 1  # bob: unmapped alias, no password
    assert manifest["fields_not_carried"] == {"keycloak.groups": 1, "keycloak.realmRoles": 1}
    assert manifest["second_factors_not_carried"] == {"keycloak.otp.no-secret": 1}
    assert manifest["required_actions_not_carried"] == {"keycloak.VERIFY_EMAIL": 1}
    assert manifest["unknown_fields"] == {"keycloak.shoeSize": 1}
    out = capsys.readouterr().out
    for text in (
        "no --idp-map, not linked: corp",
        "cannot sign in yet (no password, no IdP link)",
        "map their IdP alias with --idp-map, or send password-reset mails",
        "keycloak.VERIFY_EMAIL",
    ):
        assert text in out


def test_cli_idp_map_config_error(tmp_path, capsys):
    realm = tmp_path / "realm.json"
    realm.write_text(json.dumps({"realm": "acme", "users": []}))
    code, _ = _run_cli(tmp_path, f"--realm={realm}", "--idp-map=google")
    assert code == 2
    assert "expected ALIAS=IDP_ID" in capsys.readouterr().err
