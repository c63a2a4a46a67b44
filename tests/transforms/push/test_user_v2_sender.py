"""What ZITADEL's answers to a create mean (transforms/push/user_v2_sender.py), against the test
server that answers as ZITADEL does: errors in the instance's language (German here), told apart by
gRPC code and ``ErrorDetail`` id; CreateUser with its metadata defect; servers without either create;
a credential that manages some of the orgs."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
import zitadel_user_v2_create as creation
from zitadel_fixtures import PAT, fast_client, hash_pool, make_user, write_manifest
from zitadel_server import ZitadelServer

from transforms.output.manifest import load_manifest
from transforms.push import engine as push_engine
from transforms.push.api_choice import USER_V2
from transforms.zitadel_api.credentials import Credentials
from transforms.zitadel_api.user_v2 import CREATE_USER_PATH, create_user_request, metadata_search_path

ORG, OTHER = "123", "999"
TOKEN = "org-token-Zq81ManagerOfOrg123Only0000000"
ADMIN = Credentials("token", token=PAT)
META = "eyJwbGFuIjoicHJvIn0="  # {"plan":"pro"}


@pytest.fixture(name="v5")
def v5_fixture():
    server = ZitadelServer(tokens={PAT}).start()
    server.admin_api = False
    for org in (ORG, OTHER):
        creation.add_org(server, org)
    creation.add_org_token(server, TOKEN, ORG)
    yield server
    assert server.v2_schema_problems == []
    server.stop()


def _manifest(tmp_path, orgs: dict[str, list[dict]], metadata: bool = True):
    """A one-body manifest whose body holds ``orgs`` (org id → humanUsers entries)."""
    manifest, _ = write_manifest(tmp_path, users=1, bodies=1)
    body = {"dataOrgs": {"orgs": []}, "timeout": "5m0s"}
    for org_id, entries in orgs.items():
        org: dict = {"orgId": org_id, "humanUsers": entries}
        if metadata:
            org["userMetadata"] = [
                {"id": e["userId"], "key": "plan", "value": META} for e in entries if "userId" in e
            ]
        body["dataOrgs"]["orgs"].append(org)
    data = json.dumps(body).encode()
    (tmp_path / "importBody.json").write_bytes(data)
    raw = json.loads(manifest.read_text())
    users = sum(map(len, orgs.values()))
    raw["bodies"][0].update(sha256=hashlib.sha256(data).hexdigest(), users=users, org_ids=sorted(orgs))
    raw["counts"]["users_written"] = users
    manifest.write_text(json.dumps(raw))
    return manifest


def _push(manifest, server, creds=ADMIN, **options):
    client = fast_client(server.url, creds, max_attempts=options.pop("max_attempts", 6))
    return push_engine.push_manifest(
        load_manifest(str(manifest)), server.url, creds, progress=False, client=client, api=USER_V2, **options
    )


def _failures(report) -> dict[str, dict]:
    return {f["userId"]: f for b in report.bodies for f in b.failed}


def test_a_rerun_and_a_lost_answer_are_present_by_code_and_detail_not_by_text(v5, tmp_path):
    entries = [make_user(f"u{i}", None) for i in range(6)]
    manifest = _manifest(tmp_path, {ORG: entries})
    v5.faults.inject("504_after", path=CREATE_USER_PATH)  # the first create lands, its answer is lost
    first = _push(manifest, v5, verify=True)
    assert first.ok and first.created == 5 and first.present == 1, first.table()
    assert sum(b.present_after_lost_answer for b in first.bodies) == 1
    assert first.verify is not None and first.verify.ok
    again = _push(manifest, v5, results_dir=str(tmp_path / "again"))  # a fresh ledger: every create refused
    assert again.ok and again.created == 0 and again.present == 6
    assert v5.added_event_counts() == {e["userId"]: 1 for e in entries}
    refused = [
        m for p, m in v5.refusals if p == CREATE_USER_PATH
    ]  # the re-run's six: the lost one was read back
    assert len(refused) == 6 and all(m == "Benutzer existiert bereits (COMMAND-7yiox1isql)" for m in refused)


def test_a_name_held_by_another_user_is_never_present(v5, tmp_path):
    admin = fast_client(v5.url, ADMIN)
    holder = make_user("holder", None)
    holder["user"]["userName"] = "taken@example.com"
    admin.request("POST", CREATE_USER_PATH, create_user_request(ORG, holder))
    same_name = make_user("newcomer", None)
    same_name["user"]["userName"] = "taken@example.com"
    no_id_same = {"user": holder["user"]}  # no userId: same name and same e-mail → this is that user
    no_id_other = {
        "user": {**holder["user"], "email": {"email": "else@example.com", "isEmailVerified": True}}
    }
    manifest = _manifest(tmp_path, {ORG: [same_name]}, metadata=False)
    report = _push(manifest, v5)
    (failure,) = _failures(report).values()
    assert (
        failure["reason"] == "duplicate-username" and "held by user holder in org 123" in failure["message"]
    )
    for entry, status in ((no_id_same, "present"), (no_id_other, "failed")):
        folder = tmp_path / status
        folder.mkdir()
        report = _push(_manifest(folder, {ORG: [entry]}, metadata=False), v5, results_dir=str(folder / "r"))
        assert (report.present, report.failed) == ((1, 0) if status == "present" else (0, 1))
    assert set(v5.user_ids(ORG)) == {"holder"}


def test_an_idp_link_held_by_another_user_is_named(v5, tmp_path):
    admin = fast_client(v5.url, ADMIN)
    link = {"configId": "google", "externalUserId": "g-1"}
    first = make_user("first", None)
    first["user"]["idps"] = [{**link, "displayName": "first"}]
    admin.request("POST", CREATE_USER_PATH, create_user_request(OTHER, first))
    second = make_user("second", None)
    second["user"]["idps"] = [link]  # no display name: the external id is its user name on v2
    third = make_user("third", None)
    third["user"]["idps"] = [{"configId": "github", "externalUserId": "gh-3"}]
    report = _push(_manifest(tmp_path, {ORG: [second, third]}, metadata=False), v5)
    assert report.created == 1 and _failures(report)["second"]["reason"] == "idp-link-taken"
    held = creation.stored_user(v5, "third")["user"]["idps"]
    assert held == [{"configId": "github", "externalUserId": "gh-3", "displayName": "gh-3"}]


def test_one_403_is_one_org_and_403_in_every_org_stops(v5, tmp_path):
    mine = [make_user(f"m{i}", None) for i in range(3)]
    theirs = [make_user(f"t{i}", None) for i in range(4)]
    manifest = _manifest(tmp_path, {OTHER: theirs, ORG: mine})
    report = _push(manifest, v5, creds=Credentials("token", token=TOKEN), concurrency=1)
    assert report.fatal is None and report.created == 3 and report.failed == 4
    reasons = {f["userId"]: (f["reason"], f["orgId"]) for f in _failures(report).values()}
    assert reasons == {e["userId"]: ("permission-denied", OTHER) for e in theirs}
    message = _failures(report)["t3"]["message"]
    assert "org 999 (permission user.write)" in message and "Keine Berechtigung (AUTHZ-HKJD33)" in message
    assert sum(1 for p, _ in v5.refusals if p == CREATE_USER_PATH) == 1  # the org's other users not sent
    assert v5.user_ids(ORG) == {e["userId"] for e in mine}
    only_theirs = _manifest(tmp_path / "theirs", {OTHER: [make_user("t9", None)]})
    stopped = _push(only_theirs, v5, creds=Credentials("token", token=TOKEN))
    assert stopped.fatal and "permission denied in every org (999)" in stopped.fatal
    # An org whose creates the server answered otherwise (here: an id held in another org) was not
    # refused: one denied org besides it does not stop the push.
    fast_client(v5.url, ADMIN).request(
        "POST", CREATE_USER_PATH, create_user_request(OTHER, make_user("x1", None))
    )
    mixed = _manifest(tmp_path / "mixed", {OTHER: [make_user("t8", None)], ORG: [make_user("x1", None)]})
    report = _push(mixed, v5, creds=Credentials("token", token=TOKEN), results_dir=str(tmp_path / "m"))
    assert report.fatal is None and {f["reason"] for f in _failures(report).values()} == {
        "permission-denied", "in-another-org"}  # fmt: skip


def test_without_add_human_user_create_user_lands_the_metadata_once(v5, tmp_path):
    v5.add_human_user = False  # past AddHumanUser's deprecation; CreateUser drops metadata (#11826)
    entries = [make_user(f"c{i}", None) for i in range(5)]
    manifest = _manifest(tmp_path, {ORG: entries})
    v5.faults.inject("504_after", path="/v2/users/c1/metadata")  # a set whose answer was lost
    report = _push(manifest, v5, verify=True)
    assert report.ok and report.created == 5, report.table()
    client = fast_client(v5.url, ADMIN)
    for entry in entries:
        held = client.request("POST", metadata_search_path(entry["userId"]), {})
        assert held == {"metadata": [{"key": "plan", "value": META}]}
    sets = [e for e in v5.state.events if e.event_type == "user.metadata.set"]
    assert sorted(e.aggregate_id for e in sets) == sorted(e["userId"] for e in entries)  # once each


def test_without_create_user_add_human_user_carries_everything(v5, tmp_path):
    v5.create_user = False  # a server before CreateUser's REST route
    entries = [make_user(f"a{i}", None) for i in range(4)]
    report = _push(_manifest(tmp_path, {ORG: entries}), v5)
    assert report.ok and report.created == 4
    assert sum(1 for p, _ in v5.refusals if p == CREATE_USER_PATH) == 1  # learned once
    assert {k for (uid, k) in v5.state.metadata if uid.startswith("a")} == {"plan"}


def test_an_exhausted_quota_stops_with_its_reason(v5, tmp_path):
    v5.quota_exhausted = True
    report = _push(_manifest(tmp_path, {ORG: [make_user("q1", None)]}), v5)
    assert report.fatal and "quota is used up until its period ends" in report.fatal
    assert "QUOTA-vjAy8" in report.fatal and len(v5.refusals) == 1  # not retried


def test_verify_halves_its_page_on_a_server_configured_lower(v5, tmp_path):
    v5.max_query_limit = 100
    manifest, ids = write_manifest(tmp_path, users=130, bodies=1)
    report = _push(manifest, v5, verify=True)
    assert report.ok and report.verify is not None and report.verify.ok
    assert v5.user_ids(ORG) == set(ids)


def _argon2id_204() -> str:
    """A valid argon2id hash with a 64-byte salt and key: 204 characters (passwap's PHC form)."""
    salt = bytes(range(64))
    key = hashlib.sha512(b"not a real key").digest()
    raw = lambda b: base64.b64encode(b).decode().rstrip("=")  # noqa: E731 - RawStd, as passwap reads it
    return f"$argon2id$v=19$m=65536,t=3,p=4${raw(salt)}${raw(key)}"


def test_what_the_import_takes_v2_takes_or_says_why_before_sending(tmp_path):
    """A hash over 200 characters is dead-lettered on the v2 path (and imported by the admin path);
    a forced password change with a hash is carried on v2 and counted on the import path."""
    hashed = _argon2id_204()
    assert len(hashed) == 204
    long_hash = make_user("long", hashed)
    forced = make_user("forced", hash_pool(1)[0])
    forced["user"]["passwordChangeRequired"] = True
    manifest = _manifest(tmp_path, {ORG: [long_hash, forced]}, metadata=False)
    with ZitadelServer(tokens={PAT}, hash_verifiers=("argon2",)) as server:
        server.admin_api = False
        creation.add_org(server, ORG)
        report = _push(manifest, server)
        assert report.created == 1 and _failures(report)["long"]["reason"] == "hash-too-long-for-user-v2"
        assert "at most 200" in _failures(report)["long"]["message"] and hashed not in report.table()
        assert [p for p, _ in server.refusals] == [] and "long" not in server.user_ids(ORG)
        assert creation.stored_user(server, "forced")["user"]["passwordChangeRequired"] is True
        assert "passwordChangeRequired: " not in report.table()
    with ZitadelServer(tokens={PAT}, hash_verifiers=("argon2",)) as server:
        report = push_engine.push_manifest(
            load_manifest(str(manifest)), server.url, ADMIN, progress=False, results_dir=str(tmp_path / "i")
        )
        assert report.ok and report.created == 2  # the import takes the long hash
        assert "passwordChangeRequired" not in creation.stored_user(server, "forced")["user"]
        assert "passwordChangeRequired: 1 user(s) with a password hash keep their password unforced" in (
            report.table()
        )


def test_verify_names_the_fields_an_older_server_dropped(v5, tmp_path):
    """An older server's gateway discards ``totpSecret`` (and the create answers 200): verify reads
    back what was sent and names it, instead of passing."""
    v5.dropped_fields = {"totpSecret"}
    with_otp = make_user("otp", None)
    with_otp["user"].update(
        otpCode="JBSWY3DPEHPK3PXP", phone={"phone": "+41791234567", "isPhoneVerified": True}
    )
    with_otp["user"]["idps"] = [{"configId": "google", "externalUserId": "g-7", "displayName": "g"}]
    plain = make_user("plain", None)
    report = _push(_manifest(tmp_path, {ORG: [with_otp, plain]}), v5, verify=True)
    assert report.created == 2 and report.verify is not None and not report.verify.ok
    assert report.verify.dropped == {"otp": ["totpSecret"]} and report.verify.missing == []
    assert (
        "verify: 1 user(s) lack what was sent (the server dropped it): otp (totpSecret)"
        in report.verify.table()
    )
    lines = [json.loads(raw) for raw in open(report.verify.missing_file, encoding="utf-8")]
    assert lines == [{"userId": "otp", "reason": "field-dropped", "fields": ["totpSecret"]}]
    v5.dropped_fields = set()  # a current server keeps it: the same fields, read back, pass
    second = make_user("otp2", None)
    second["user"].update(otpCode="JBSWY3DPEHPK3PXP", phone={"phone": "+41791234568"})
    again = _push(
        _manifest(tmp_path / "b", {ORG: [second]}), v5, verify=True, results_dir=str(tmp_path / "r")
    )
    assert again.ok and again.verify is not None and again.verify.dropped == {}


def test_the_targets_hash_limits_are_checked_before_sending(v5, tmp_path):
    """With the target's limits known (``--zitadel-config``), a hash out of them is dead-lettered
    before the create: the import would refuse it at creation, some user service versions only at
    sign-in. Keycloak 24+'s argon2id default (m=7168 KiB) is below ZITADEL's MinMemory (8192)."""
    from transforms.hashing.policy import HashPolicy

    raw = lambda b: base64.b64encode(b).decode().rstrip("=")  # noqa: E731 - RawStd, as passwap reads it
    low = f"$argon2id$v=19$m=7168,t=5,p=1${raw(bytes(16))}${raw(bytes(range(32)))}"
    entries = [make_user("kc", low), make_user("ok", None)]
    policy = HashPolicy(verifiers=frozenset({"bcrypt", "argon2"}))
    report = _push(_manifest(tmp_path, {ORG: entries}, metadata=False), v5, hash_policy=policy)
    failure = _failures(report)["kc"]
    assert report.created == 1 and failure["reason"] == "hash-parameter-out-of-limits"
    assert "Argon2.MinMemory" in failure["message"] or "MinMemory" in failure["message"]
    assert v5.user_ids(ORG) == {"ok"} and v5.refusals == []  # never sent
