"""``migrate cognito`` (transforms/sources/cognito/): the mapping's rules, the CLI on the bundled
samples (examples/cognito/: what AWS CLI 1.45.11 wrote for list-users, and the get-csv-header CSV)
field by field, the other forms the CLI writes (docs/export-formats/samples/cognito-*: ISO 8601
dates, --max-items pages, --no-paginate), the refusals, and two ``--state`` nights pushed to the
stand-in in which a user disabled at Cognito is locked in ZITADEL. Cognito exports no hash: no
test vector applies (docs/cognito.md)."""

from __future__ import annotations

import base64
import gzip
import io
import json
from pathlib import Path

import pytest
from repo_files import ROOT
from zitadel_fixtures import PAT, leaked_secrets
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.common.reasons import Reason
from transforms.sources.cognito.read import CognitoOptions, csv_records, csv_user, flat_user, map_user

SAMPLE = ROOT / "examples" / "cognito" / "list-users.json"
CSV_SAMPLE = ROOT / "examples" / "cognito" / "users.csv"
FORMS = ROOT / "docs" / "export-formats" / "samples"
ORG = "123456789"
ALICE = "0c8e2f4a-6b1d-4a53-9f0e-3d2b7c1a9e01"
BOB = "1d9f3a5b-7c2e-4b64-a01f-4e3c8d2b0f12"
CAROL = "2ea04b6c-8d3f-4c75-b120-5f4d9e3c1a23"
ERIN = "40c26d8e-a051-4e97-9342-71b6a5e3c456"
FRANK = "google_109876543210987654321"
GRACE = "62e48fa0-c273-40b9-b564-93d8c7a5e678"


def sync_sample(tmp_path: Path) -> list[str]:
    """The flags of a run on the bundled sample (tests/pipeline/test_migrate.py syncs with it)."""
    return [f"--users={SAMPLE}"]


def _run(tmp_path: Path, users: Path | str, *args: str, out: str = "out") -> tuple[int, dict | None]:
    output = tmp_path / out / "importBody.json"
    code = main(
        ["migrate", "cognito", f"--org={ORG}", f"--users={users}", f"--output={output}", "--quiet", *args]
    )
    manifest = tmp_path / out / "importBody.manifest.json"
    return code, (json.loads(manifest.read_text()) if manifest.exists() else None)


def _org(tmp_path: Path, manifest: dict, out: str = "out") -> dict:
    return json.loads((tmp_path / out / manifest["bodies"][0]["path"]).read_text())["dataOrgs"]["orgs"][0]


def _users(org: dict) -> dict[str, dict]:
    return {u["userId"]: u["user"] for u in org["humanUsers"]}


def _metadata(org: dict) -> dict[tuple[str, str], str]:
    return {(m["id"], m["key"]): base64.b64decode(m["value"]).decode() for m in org.get("userMetadata", [])}


def _dead(tmp_path: Path, out: str = "out") -> list[dict]:
    path = tmp_path / out / "importBody.dead-letter.ndjson"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _attrs(**values: str) -> list[dict[str, str]]:
    return [{"Name": name.replace("__", ":"), "Value": value} for name, value in values.items()]


# ---------------------------------------------------------------------------- the mapping


def test_verified_flags_are_per_address_and_the_user_name_follows_the_rule():
    user = {
        "Username": "ann",  # a username pool: the name she types
        "Enabled": True,
        "UserStatus": "UNCONFIRMED",
        "Attributes": _attrs(
            email="ann@example.com",
            email_verified="false",
            phone_number="+4930123",
            phone_number_verified="true",
            name="Ann",
        ),
    }
    flat = flat_user(user)
    assert isinstance(flat, dict)
    mapped = map_user(flat, CognitoOptions())
    assert not isinstance(mapped, tuple)
    body = mapped.entry["user"]
    assert body["userName"] == "ann"
    assert body["email"] == {"email": "ann@example.com", "isEmailVerified": False}
    assert body["phone"] == {"phone": "+4930123", "isPhoneVerified": True}
    assert body["profile"] == {"firstName": "Ann", "lastName": "Ann", "displayName": "Ann"}
    # A generated UUID is no one's login: the e-mail, or with --user-name the chosen attribute.
    flat["Username"] = ALICE
    assert map_user(flat, CognitoOptions()).entry["user"]["userName"] == "ann@example.com"
    assert map_user(flat, CognitoOptions(user_name="phone_number")).entry["user"]["userName"] == "+4930123"
    assert map_user(flat, CognitoOptions(user_name="username")).entry["user"]["userName"] == ALICE
    flat["preferred_username"] = "annie"
    assert map_user(flat, CognitoOptions()).entry["user"]["userName"] == "annie"


@pytest.mark.parametrize(
    "created",
    [1700000000.123, "2023-11-14T22:13:20.123000+00:00", "2023-11-14T23:13:20.123000+01:00"],
)
def test_both_clis_dates_are_one_utc_text(created):
    """CLI v1: epoch seconds; v2: ISO 8601 at the offset of the machine that ran it (Berlin here)."""
    flat = flat_user(
        {"Username": "u", "UserCreateDate": created, "Attributes": _attrs(email="a@example.com")}
    )
    assert isinstance(flat, dict)
    mapped = map_user(flat, CognitoOptions(metadata=True))
    value = base64.b64decode(mapped.metadata[0]["value"]).decode()
    assert (mapped.metadata[0]["key"], value) == ("UserCreateDate", "2023-11-14T22:13:20.123Z")


@pytest.mark.parametrize(
    ("user", "reason"),
    [
        ("not an object", Reason.NOT_AN_OBJECT),
        ({"Username": "u", "Attributes": {"email": "a@b.co"}}, Reason.INVALID_FIELD_TYPE),
        ({"Username": "u", "Attributes": [{"Name": "email", "Value": 3}]}, Reason.INVALID_FIELD_TYPE),
        ({"Attributes": _attrs(email="a@example.com")}, Reason.MISSING_USER_ID),
        ({"Username": "u", "Attributes": _attrs(name="No Mail")}, Reason.MISSING_EMAIL),
        ({"Username": "u", "Enabled": False, "Attributes": _attrs(email="a@example.com")}, Reason.BLOCKED),
        (
            {"Username": "u", "UserStatus": "COMPROMISED", "Attributes": _attrs(email="a@example.com")},
            Reason.BLOCKED,
        ),
    ],
)
def test_a_user_that_cannot_be_written_says_why(user, reason):
    flat = flat_user(user)
    refused = map_user(flat, CognitoOptions()) if isinstance(flat, dict) else flat
    assert refused.reason == reason


def test_the_csv_is_cognitos_own_escaping_not_rfc_4180():
    text = "cognito:username,email,email_verified,custom:department,cognito:mfa_enabled\n\nu1,a@example.com,TRUE,Finance\\, EMEA,FALSE\nu2,b@example.com\n"
    records = list(csv_records(io.BytesIO(text.encode())))  # type: ignore[arg-type]
    assert records[0].value == {
        "cognito:username": "u1",
        "email": "a@example.com",
        "email_verified": "TRUE",
        "custom:department": "Finance, EMEA",
        "cognito:mfa_enabled": "FALSE",
    }
    assert records[1].problem == (Reason.MALFORMED_CSV, "row 2: 2 cells, the header names 5")
    flat = csv_user(records[0].value)
    assert flat == {
        "Username": "u1",
        "email": "a@example.com",
        "email_verified": "TRUE",
        "custom:department": "Finance, EMEA",
    }
    assert map_user(flat, CognitoOptions()).entry["user"]["email"]["isEmailVerified"] is True


def test_identities_become_links_for_mapped_providers_only():
    identities = json.dumps(
        [
            {
                "userId": "1098",
                "providerName": "Google",
                "providerType": "Google",
                "issuer": None,
                "primary": True,
            },
            {"userId": "ab-1", "providerName": "AcmeSAML", "providerType": "SAML", "issuer": "urn:acme"},
        ]
    )
    flat = flat_user(
        {
            "Username": "Google_1098",
            "UserStatus": "EXTERNAL_PROVIDER",
            "Attributes": _attrs(email="f@example.com", identities=identities),
        }
    )
    assert isinstance(flat, dict)
    mapped = map_user(flat, CognitoOptions(idp_map=(("Google", "2764"),)))
    assert mapped.entry["user"]["idps"] == [
        {"configId": "2764", "externalUserId": "1098", "displayName": "f@example.com"}
    ]
    assert mapped.entry["user"]["userName"] == "f@example.com"  # Google_1098 is no one's login
    assert mapped.link_outcomes == [("linked", "Google"), ("unmapped", "AcmeSAML")]
    flat["identities"] = "[not json"
    assert map_user(flat, CognitoOptions()).link_outcomes == [("invalid", "unknown")]


# ---------------------------------------------------------------------------- the CLI


def test_the_sample_converts_field_by_field_with_every_user_accounted(tmp_path):
    code, manifest = _run(tmp_path, SAMPLE, "--metadata")
    assert code == 0 and manifest is not None
    assert manifest["invariant"]["holds"] is True
    assert manifest["invariant"]["text"].startswith("users read 7 = written 6 + dead-lettered 1")
    org = _org(tmp_path, manifest)
    users = _users(org)
    assert [(d["reason"], d["record"]["Username"]) for d in _dead(tmp_path)] == [(Reason.BLOCKED, ERIN)]
    assert users[ALICE] == {
        "userName": "alicem",  # preferred_username
        "profile": {"firstName": "Alice", "lastName": "Martin", "preferredLanguage": "en"},  # en-US
        "email": {"email": "alice.martin@example.com", "isEmailVerified": True},
        "phone": {"phone": "+14155550101", "isPhoneVerified": True},
    }
    # UNCONFIRMED, only a full name: cut at its last space; e-mail unverified as the export says.
    assert users[BOB]["profile"] == {"firstName": "Bob", "lastName": "Nguyen", "displayName": "Bob Nguyen"}
    assert users[BOB]["email"] == {"email": "bob.unconfirmed@example.com", "isEmailVerified": False}
    assert users[GRACE]["phone"] == {"phone": "+442079460958", "isPhoneVerified": False}
    assert users[FRANK]["userName"] == "frank.federated@gmail.com" and "idps" not in users[FRANK]
    assert not [
        u for u in users.values() if {"password", "hashedPassword", "passwordChangeRequired"} & u.keys()
    ]
    assert _metadata(org) == {
        (ALICE, "custom:department"): "Finance, EMEA",
        (ALICE, "custom:employee_id"): "E-1001",
        (ALICE, "UserCreateDate"): "2023-11-14T22:13:20.123Z",
        (BOB, "UserCreateDate"): "2023-11-16T02:00:00.000Z",
        (CAROL, "UserCreateDate"): "2023-11-17T05:46:40.500Z",
        ("3fb15c7d-9e40-4d86-8231-60a5f4d2b345", "UserCreateDate"): "2023-11-18T09:33:20.000Z",
        (FRANK, "UserCreateDate"): "2023-11-20T17:06:40.000Z",
        (FRANK, "sub"): "51d37e9f-b162-4fa8-a453-82c7b6f4d567",  # its Username is not its sub
        (GRACE, "UserCreateDate"): "2023-11-21T20:53:20.000Z",
    }
    counts = manifest["counts"]
    assert counts["cognito.users_read"] == 7 and counts["users_written"] == 6
    assert counts["cognito.password_change_not_marked"] == 2  # FORCE_CHANGE_PASSWORD, RESET_REQUIRED
    assert counts["cognito.status.UNCONFIRMED"] == 1 and counts["cognito.status.CONFIRMED"] == 2
    assert counts["cannot_sign_in.cognito"] == 6
    assert counts["cognito.idp_links.unmapped.Google"] == 1
    assert counts["not_carried.cognito.MFAOptions"] == 1  # Grace's SMS second factor
    assert counts["not_carried.cognito.UserLastModifiedDate"] == 6
    assert not [name for name in counts if name.startswith("unknown_field.cognito")]


def test_every_form_the_cli_writes_gives_the_same_users(tmp_path):
    """CLI v1 (epoch seconds), v2 (ISO 8601), the --max-items pages: the same bodies; the CSV of
    the same pool (no state, no identities): the same users but the disabled and the federated."""
    _, default = _run(tmp_path, SAMPLE, "--metadata", out="v1")
    _, iso = _run(tmp_path, FORMS / "cognito-list-users-iso8601.json", "--metadata", out="v2")
    code, pages = _run(tmp_path, FORMS / "cognito-list-users-page*.json", "--metadata", out="pages")
    assert code == 0 and default and iso and pages
    assert _org(tmp_path, iso, "v2") == _org(tmp_path, default, "v1") == _org(tmp_path, pages, "pages")
    assert pages["counts"]["cognito.files.json"] == 3
    code, table = _run(tmp_path, CSV_SAMPLE, out="csv")
    assert code == 0 and table is not None and table["invariant"]["holds"] is True
    from_csv, from_json = _users(_org(tmp_path, table, "csv")), _users(_org(tmp_path, default, "v1"))
    assert set(from_csv) == set(from_json) - {FRANK} | {ERIN}  # the CSV says nothing of Enabled
    assert all(from_csv[user_id] == from_json[user_id] for user_id in set(from_json) - {FRANK})
    assert table["counts"]["not_carried.cognito.cognito:mfa_enabled"] == 1  # Grace's TRUE
    assert table["counts"]["unknown_field.cognito.custom_department"] == 1  # without --metadata


def test_pages_written_into_one_gz_file_are_read_and_a_gz_page_is_still_refused(tmp_path, capsys):
    pages = b"".join((FORMS / f"cognito-list-users-page{n}.json").read_bytes() for n in (1, 2, 3))
    joined = tmp_path / "pages.json.gz"
    joined.write_bytes(gzip.compress(pages))  # cat page*.json | gzip
    code, manifest = _run(tmp_path, joined, "--metadata", out="gz")
    _, default = _run(tmp_path, SAMPLE, "--metadata", out="v1")
    assert code == 0 and manifest and default
    assert _org(tmp_path, manifest, "gz") == _org(tmp_path, default, "v1")
    one_page = tmp_path / "page.json.gz"
    one_page.write_bytes(gzip.compress((FORMS / "cognito-list-users-no-paginate.json").read_bytes()))
    assert _run(tmp_path, one_page, out="one")[0] == 2
    assert "PaginationToken" in capsys.readouterr().err


def test_idp_map_links_and_include_blocked_imports_the_disabled(tmp_path):
    code, manifest = _run(tmp_path, SAMPLE, "--idp-map", "Google=2764", "--include-blocked")
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
    users = _users(_org(tmp_path, manifest))
    assert users[FRANK]["idps"] == [
        {
            "configId": "2764",
            "externalUserId": "109876543210987654321",
            "displayName": "frank.federated@gmail.com",
        }
    ]
    assert ERIN in users and _dead(tmp_path) == []
    counts = manifest["counts"]
    assert counts["cognito.blocked_written"] == 1 and counts["cannot_sign_in.cognito"] == 6
    assert (
        counts["not_carried.cognito.UserCreateDate"] == 7
        and counts["unknown_field.cognito.custom_department"] == 1
    )


def test_bad_records_are_dead_letters_with_reasons(tmp_path):
    users = tmp_path / "users.json"
    users.write_text(
        json.dumps(
            {
                "Users": [
                    {"Username": "ok", "Attributes": _attrs(email="ok@example.com")},
                    {"Username": "bad", "Attributes": [{"Name": "email"}]},
                    "text",
                    {"Attributes": _attrs(email="noid@example.com")},
                    {
                        "Username": "odd",
                        "UserStatus": "NEW_STATE",
                        "Attributes": _attrs(email="odd@example.com"),
                    },
                ]
            }
        )
    )
    code, manifest = _run(tmp_path, users)
    assert manifest is not None and manifest["invariant"]["holds"] is True
    assert sorted(d["reason"] for d in _dead(tmp_path)) == sorted(
        [Reason.INVALID_FIELD_TYPE, Reason.NOT_AN_OBJECT, Reason.MISSING_USER_ID]
    )
    assert set(_users(_org(tmp_path, manifest))) == {"ok", "odd"}
    assert manifest["counts"]["cognito.status.other"] == 1  # a value Cognito does not document


@pytest.mark.parametrize(
    ("path", "says"),
    [
        (FORMS / "cognito-list-users-no-paginate.json", "one page of 'list-users --no-paginate'"),
        (FORMS / "cognito-list-users-page1.json", "the last page, without one, is missing"),
        (FORMS / "cognito-get-csv-header.json", "get-csv-header (a header, no users)"),
        (ROOT / "examples" / "okta" / "okta-users.csv", "migrate okta --users reads it"),
    ],
)
def test_an_incomplete_or_other_file_is_one_line(tmp_path, capsys, path, says):
    code, _ = _run(tmp_path, path)
    assert code == 2
    assert says in capsys.readouterr().err


def test_the_other_readers_refuse_cognito_files_naming_migrate_cognito(tmp_path, capsys):
    out = tmp_path / "out" / "importBody.json"
    for sample in (SAMPLE, CSV_SAMPLE):
        assert main(["migrate", "auth0", "--org=1", f"--users={sample}", f"--output={out}"]) == 2
        assert "migrate cognito --users reads it" in capsys.readouterr().err


def _night_file(path: Path, disabled: set[str]) -> Path:
    export = json.loads(SAMPLE.read_text())
    for user in export["Users"]:
        if user["Username"] in disabled:
            user["Enabled"] = False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(export, indent=4))
    return path


def test_push_verify_and_state_nights_lock_a_user_disabled_at_cognito(tmp_path, monkeypatch, capsys):
    token = tmp_path / "token"
    token.write_text(PAT)
    state = tmp_path / "state"
    with ZitadelServer(tokens={PAT}) as server:

        def night(users: Path) -> int:
            return _run(
                tmp_path, users, f"--state={state}", f"--push-url={server.url}", f"--token-file={token}"
            )[0]

        assert night(SAMPLE) == 0
        assert server.user_ids(ORG) == {
            ALICE,
            BOB,
            CAROL,
            "3fb15c7d-9e40-4d86-8231-60a5f4d2b345",
            FRANK,
            GRACE,
        }
        monkeypatch.setenv("ZITADEL_TOKEN", PAT)
        manifest = tmp_path / "out" / "importBody.manifest.json"
        assert main(["verify", "--url", server.url, "--manifest", str(manifest)]) == 0
        assert night(_night_file(tmp_path / "day2" / "list-users.json", {ALICE})) == 0
        # Without a password ZITADEL holds the user initial: a disabled initial user is locked
        # rather than deactivated (docs/sync.md); the others are untouched.
        assert server.state.user_states[ALICE] == "locked"
        assert server.state.user_states[BOB] in ("active", "initial")
    out, err = capsys.readouterr()
    assert leaked_secrets(out + err) == []
