"""tests/standins/schema_check_v2.py: ZITADEL's published user service v2 schema, and the sync's calls against it.

The test server checks every v2 request it receives (the autouse fixture in conftest.py fails a
test in which one was refused); these tests pin the checker itself: it accepts what the sync
builds (transforms/sync/state_records.py) and refuses, readably, what ZITADEL refuses.
"""

from __future__ import annotations

import base64
import copy
import json
import urllib.error
import urllib.request

import pytest
from schema_check_v2 import checker
from zitadel_fixtures import PAT, hash_pool
from zitadel_server import ZitadelServer

from pipeline.cli import main
from tests.scenarios.test_sync_nights import ORG, _password, _profile
from transforms.sync.calls import call_path
from transforms.sync.state_records import compare_user, state_record

UID = "auth0|0123456789abcdef"
HASHES = hash_pool(2)


def _meta(**values: object) -> list[dict[str, str]]:
    return [{"key": k, "value": base64.b64encode(json.dumps(v).encode()).decode()} for k, v in values.items()]


DAY1 = {
    "userId": UID,
    "user": {
        "userName": "ann@example.com",
        "profile": {"firstName": "Ann", "lastName": "Lee", "displayName": "Ann Lee"},
        "email": {"email": "ann@example.com", "isEmailVerified": True},
        "phone": {"phone": "+41791234567"},
        "hashedPassword": {"value": HASHES[0]},
        "idps": [{"configId": "2873423", "externalUserId": "g-1", "displayName": "Ann"}],
    },
}


def _day2(**user: object) -> dict:
    entry = copy.deepcopy(DAY1)
    for key, value in user.items():
        if value is None:
            del entry["user"][key]
        else:
            entry["user"][key] = value
    return entry


# Day 1's metadata; day 2 variants: one per kind of change the sync sends.
BASE_META = _meta(gone=1, plan="silver")
CHANGES = {
    "profile": (_day2(profile={"firstName": "Anne", "lastName": "Lee", "nickName": "A"}), BASE_META),
    "username": (_day2(userName="anne@example.com"), BASE_META),
    "email-unverified": (_day2(email={"email": "anne@example.org"}), BASE_META),  # returnCode
    "email-verified": (_day2(email={"email": "anne@example.org", "isEmailVerified": True}), BASE_META),
    "phone-verified": (_day2(phone={"phone": "+41799999999", "isPhoneVerified": True}), BASE_META),
    "phone-removed": (_day2(phone=None), BASE_META),
    "hashed-password": (_day2(hashedPassword={"value": HASHES[1]}, passwordChangeRequired=True), BASE_META),
    "link-added-and-removed": (
        _day2(idps=[{"configId": "2873424", "externalUserId": "ann@corp.example", "displayName": ""}]),
        BASE_META,
    ),
    "metadata": (DAY1, _meta(plan="gold", seats=3)),  # one key gone, one changed, one new
}


def _requests(name: str, blocked: bool = False) -> list[tuple[str, str, dict | None]]:
    """The (method, target, body) the sync sends for a change variant."""
    old = state_record(DAY1, BASE_META, blocked=False, quick="day1")
    entry, metadata = CHANGES[name]
    kind, _, _, calls, _ = compare_user(old, entry, metadata, blocked=blocked, quick="day2")
    assert kind == "changed" and calls, name
    out = []
    for call in calls:
        method, target, raw = call_path(UID, call)
        out.append((method, target, json.loads(raw) if raw is not None else None))
    return out


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_the_sync_calls_meet_the_published_schema_and_name_their_routes(name):
    requests = _requests(name)
    for method, target, body in requests:
        route, problems = checker().check_request(method, target, body)
        assert problems == [], (method, target, body)
        assert route is not None
    # The sync names each call after the method of the rule its path goes to.
    old = state_record(DAY1, BASE_META, blocked=False, quick="day1")
    _, _, _, calls, _ = compare_user(old, *CHANGES[name], blocked=False, quick="day2")
    routed = [checker().route(method, target) for method, target, _ in requests]
    assert [found[0].rpc for found in routed if found] == [call["call"] for call in calls]


def test_what_the_variants_send_is_what_they_are_meant_to_send():
    """The accepted bodies above carry the parts the refusals below break."""
    bodies = {name: [body for _, _, body in _requests(name)] for name in CHANGES}
    assert bodies["email-unverified"][0]["email"] == {"email": "anne@example.org", "returnCode": {}}
    assert bodies["phone-verified"][0]["phone"] == {"phone": "+41799999999", "isVerified": True}
    assert bodies["hashed-password"][0]["password"] == {
        "hashedPassword": {"hash": HASHES[1], "changeRequired": True}
    }
    assert bodies["link-added-and-removed"][1]["idpLink"]["userName"] == "ann@corp.example"
    assert [k["key"] for k in bodies["metadata"][1]["metadata"]] == ["plan", "seats"]
    targets = {name: [target for _, target, _ in _requests(name)] for name in CHANGES}
    assert targets["metadata"][0] == f"/v2/users/{UID.replace('|', '%7C')}/metadata?keys=gone"
    assert targets["link-added-and-removed"][0].endswith("/links/2873423/g-1")


def test_block_unblock_and_delete_calls_meet_the_schema():
    old = state_record(DAY1, [], blocked=False, quick="day1")
    _, blocked_record, _, calls, _ = compare_user(old, DAY1, [], blocked=True, quick="day2")
    calls += compare_user(blocked_record, DAY1, [], blocked=False, quick="day3")[3]
    calls += [{"call": "LockUser"}, {"call": "UnlockUser"}, {"call": "DeleteUser"}]
    assert [c["call"] for c in calls[:2]] == ["DeactivateUser", "ReactivateUser"]
    for call in calls:
        method, target, raw = call_path(UID, call)
        assert checker().check(method, target, json.loads(raw) if raw else None) == [], call
    assert checker().check("GET", f"/v2/users/{UID.replace('|', '%7C')}", None) == []


UPDATE = f"/v2/users/human/{UID.replace('|', '%7C')}"
PROFILE = {"givenName": "Ann", "familyName": "Lee"}


@pytest.mark.parametrize(
    ("method", "target", "body", "problem"),
    [
        (
            "PUT",
            UPDATE,
            {"profile": PROFILE, "nickname": "A"},
            'UpdateHumanUserRequest: does not decode: Message type "zitadel.user.v2.UpdateHumanUserRequest"'
            ' has no field named "nickname"',
        ),
        (
            "PUT",
            UPDATE,
            {"profile": {"familyName": "Lee"}},
            "UpdateHumanUserRequest.profile.givenName: at least 1 characters",
        ),
        (
            "PUT",
            UPDATE,
            {"email": {"email": "ann at example.com", "isVerified": True}},
            "UpdateHumanUserRequest.email.email: not an e-mail address",
        ),
        (
            "PUT",
            UPDATE,
            {"password": {"hashedPassword": {"hash": ""}}},
            "UpdateHumanUserRequest.password.hashedPassword.hash: at least 1 characters",
        ),
        (
            "PUT",
            UPDATE,
            {"email": {"email": "ann@example.com", "isVerified": True, "returnCode": {}}},
            'should not have multiple "verification" oneof fields',
        ),
        (
            "PUT",
            UPDATE,
            {"phone": {"phone": "+41791234567", "isVerified": False}},
            "UpdateHumanUserRequest.phone.isVerified: must be true",
        ),
        (
            "PUT",
            UPDATE,
            {"profile": {**PROFILE, "preferredLanguage": "de-CH-x-zurich"}},
            "UpdateHumanUserRequest.profile.preferredLanguage: at most 10 characters",
        ),
        (
            "PUT",
            "/v2/users/human/" + "x" * 201,
            {"username": "ann"},
            "UpdateHumanUserRequest.userId: at most 200 characters",
        ),
        (
            "POST",
            f"/v2/users/{UID}/metadata",
            {"metadata": [{"key": "plan", "value": ""}]},
            "SetUserMetadataRequest.metadata[0].value: at least 1 bytes",
        ),
        (
            "POST",
            f"/v2/users/{UID}/metadata",
            {"metadata": [{"key": "plan", "value": "not base64!"}]},
            "SetUserMetadataRequest: does not decode",
        ),
        (
            "POST",
            f"/v2/users/{UID}/links",
            {"idpLink": {"idpId": "2873423", "userId": "g-1", "userName": ""}},
            "AddIDPLinkRequest.idpLink.userName: at least 1 characters",
        ),
        (
            "DELETE",
            f"/v2/users/{UID}/metadata?keys=plan&keys=",
            None,
            "DeleteUserMetadataRequest.keys[1]: at least 1 characters",
        ),
        (
            "DELETE",
            f"/v2/users/{UID}/metadata?key=plan",
            None,
            "DeleteUserMetadataRequest: query parameter 'key' is not read by DeleteUserMetadata",
        ),
        (
            "DELETE",
            f"/v2/users/{UID}",
            {"userId": UID},
            "DeleteUserRequest: a body, which DeleteUser does not read",
        ),
        (
            "POST",
            f"/v2/users/{UID}/deactivate?force=true",
            {},
            "DeactivateUserRequest: query parameter 'force' is not read by DeactivateUser",
        ),
        (
            "POST",
            "/v2/users",
            {"queries": [{}]},
            "ListUsersRequest.queries[0].query: one of userNameQuery | firstNameQuery",
        ),
        (
            "PATCH",
            f"/v2/users/{UID}",
            {},
            "no zitadel.user.v2.UserService method answers PATCH /v2/users/",
        ),
    ],
    ids=[
        "unknown-field",
        "profile-without-givenName",
        "email-not-an-email",
        "empty-hash",
        "two-verifications",
        "phone-isVerified-false",
        "language-too-long",
        "user-id-too-long",
        "empty-metadata-value",
        "metadata-not-base64",
        "link-without-name",
        "empty-key",
        "unknown-query",
        "body-on-delete",
        "query-on-body-rule",
        "oneof-required",
        "no-route",
    ],
)
def test_wrong_requests_are_refused_with_a_readable_problem(method, target, body, problem):
    problems = checker().check(method, target, body)
    assert len(problems) == 1 and problem in problems[0], problems


def test_a_user_id_with_a_slash_cannot_be_routed():
    """The REST gateway decodes the whole path before it splits it (docs/sync.md#schema-check)."""
    assert checker().route("GET", "/v2/users/a%2Fb") is None
    assert checker().route("GET", "/v2/users/a%40b")[1] == {"user_id": "a@b"}


def test_the_server_answers_a_refused_request_400_and_records_it():
    with ZitadelServer(tokens={PAT}) as server:
        request = urllib.request.Request(
            server.url + UPDATE,
            data=json.dumps({"profile": {"familyName": "Lee"}}).encode(),
            method="PUT",
            headers={"Authorization": f"Bearer {PAT}", "Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        answer = json.loads(refused.value.read())
        assert refused.value.code == 400 and answer["code"] == 3
        assert answer["message"] == "invalid UpdateHumanUserRequest.profile.givenName: at least 1 characters"
        assert server.v2_schema_problems == [
            f"PUT {UPDATE}: UpdateHumanUserRequest.profile.givenName: at least 1 characters"
        ]
        assert server.v2.calls == [] and server.state.events == []
        server.v2_schema_problems.clear()  # refused on purpose: not a finding of this test


def test_a_sync_run_sends_only_requests_the_schema_accepts(tmp_path, capsys):
    """The CLI end to end: day 1 imports, day 2 changes most groups; the server refused nothing."""
    token_file = tmp_path / "token"
    token_file.write_text(PAT)
    hashes = hash_pool(4)
    day1 = [
        _profile(1, user_metadata={"plan": "silver", "team": "a"}),
        _profile(2, phone_number="+41791234567", phone_verified=True),
        _profile(3),
        _profile(4),
    ]
    day2 = [
        _profile(1, given_name="Renamed", name="Renamed Family1", user_metadata={"plan": "gold"}),
        _profile(2, email="new2@example.com", email_verified=False),  # phone removed, e-mail unverified
        _profile(3, phone_number="+41790000003", phone_verified=True, blocked=True),
        _profile(4),
    ]
    with ZitadelServer(tokens={PAT}) as server:
        for n, profiles in enumerate((day1, day2)):
            users, pws = tmp_path / f"users-{n}.json", tmp_path / f"passwords-{n}.json"
            users.write_text("".join(json.dumps(p) + "\n" for p in profiles))
            passwords = [_password(i + 1, hashes[i]) for i in range(4)]
            if n:
                passwords[3] = _password(4, hashes[0])  # user 4's password changed
            pws.write_text("".join(json.dumps(p) + "\n" for p in passwords))
            rc = main(
                [
                    "migrate",
                    "auth0",
                    f"--org={ORG}",
                    f"--users={users}",
                    f"--passwords={pws}",
                    f"--output={tmp_path / 'out' / 'importBody.json'}",
                    f"--state={tmp_path / 'state'}",
                    "--metadata",
                    f"--push-url={server.url}",
                    f"--token-file={token_file}",
                ]
            )
            assert rc == 0, capsys.readouterr().out
        sent = {checker().route(method, path)[0].rpc for method, path, _ in server.v2_requests}
        assert {"UpdateHumanUser", "RemovePhone", "SetUserMetadata", "DeleteUserMetadata"} <= sent
        assert "DeactivateUser" in sent or "LockUser" in sent
        assert server.v2_schema_problems == []
        assert not [status for path, status in server.requests if path.startswith("/v2/") and status >= 400]


def test_a_hash_longer_than_the_call_takes_is_named_not_sent():
    """The import takes a hash of any length, UpdateHumanUser one of at most 200 characters: the
    rest of the user's changes still go, the password is noted and stays due."""
    long_hash = "$pbkdf2-sha512$27500$" + "s" * 100 + "$" + "h" * 86
    assert len(long_hash) > 200 and checker().check(
        "PUT", UPDATE, {"password": {"hashedPassword": {"hash": long_hash}}}
    ) == ["UpdateHumanUserRequest.password.hashedPassword.hash: at most 200 characters"]
    old = state_record(DAY1, BASE_META, blocked=False, quick="day1")
    entry = _day2(hashedPassword={"value": long_hash}, profile={"firstName": "Anne", "lastName": "Lee"})
    kind, record, groups, calls, notes = compare_user(old, entry, BASE_META, blocked=False, quick="day2")
    assert kind == "changed" and notes == ["password-too-long-not-applied"]
    assert [c["call"] for c in calls] == ["UpdateHumanUser"] and "password" not in calls[0]["body"]
    method, target, raw = call_path(UID, calls[0])
    assert checker().check(method, target, json.loads(raw)) == []
    assert record["f"]["password"] == old["f"]["password"]  # still due: named again next run
