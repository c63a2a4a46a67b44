"""The Okta source: its kind and the first look at its export (command.py), one row → its entry
(read.py), and ``migrate okta`` end to end: the CLI on the bundled sample
(examples/okta/okta-users.csv, Okta's Users API sample flattened to the import template's
columns), field by field, push and verify against the stand-in, and two ``--state`` nights in
which a user SUSPENDED at Okta is locked in ZITADEL (initial users are locked, not deactivated)."""

from __future__ import annotations

import base64
import csv
import json
from pathlib import Path

import pytest
from repo_files import ROOT
from zitadel_fixtures import PAT, leaked_secrets
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.common.reasons import Reason
from transforms.sources.okta import COUNTERS, column
from transforms.sources.okta.command import KIND, okta_csv, okta_marks
from transforms.sources.okta.read import MappedUser, OktaOptions, Refusal, map_row

SAMPLE = ROOT / "examples" / "okta" / "okta-users.csv"
ORG = "123456789"
BLOCKED_IDS = {"00u1a2b3c4LOCKED0006", "00u1a2b3c4SUSPND0007", "00u1a2b3c4DEPROV0008"}


def sync_sample(tmp_path: Path) -> list[str]:
    """The flags of a run on the bundled sample (tests/pipeline/test_migrate.py syncs with it)."""
    return [f"--users={SAMPLE}"]


def _run(tmp_path: Path, users: Path, *args: str) -> tuple[int, dict | None]:
    output = tmp_path / "out" / "importBody.json"
    code = main(["migrate", "okta", f"--org={ORG}", f"--users={users}", f"--output={output}", *args])
    manifest = tmp_path / "out" / "importBody.manifest.json"
    return code, (json.loads(manifest.read_text()) if manifest.exists() else None)


def _org(tmp_path: Path, manifest: dict) -> dict:
    return json.loads((tmp_path / "out" / manifest["bodies"][0]["path"]).read_text())["dataOrgs"]["orgs"][0]


def _dead(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "out" / "importBody.dead-letter.ndjson"
    letters = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return {d["record"]["id"]: d["reason"] for d in letters}


def test_the_sample_converts_field_by_field_with_every_user_accounted(tmp_path, capsys):
    code, manifest = _run(tmp_path, SAMPLE, "--metadata")
    assert code == 0 and manifest is not None
    assert manifest["invariant"]["holds"] is True
    assert manifest["invariant"]["text"].startswith("users read 8 = written 5 + dead-lettered 3")
    org = _org(tmp_path, manifest)
    users = {u["userId"]: u["user"] for u in org["humanUsers"]}
    assert _dead(tmp_path) == dict.fromkeys(BLOCKED_IDS, Reason.BLOCKED)
    ada = users["00u1a2b3c4ACTIVE0001"]
    assert ada["userName"] == "ada.lovelace@example.com"
    assert ada["profile"] == {
        "firstName": "Ada",
        "lastName": "Lovelace",
        "displayName": "Ada Lovelace",
        "preferredLanguage": "en",
    }
    assert ada["email"] == {"email": "ada.lovelace@example.com", "isEmailVerified": False}
    # "+1 415 555 0101" without its spaces
    assert ada["phone"] == {"phone": "+14155550101", "isPhoneVerified": False}
    assert "hashedPassword" not in ada and "password" not in ada
    edsger = users["00u1a2b3c4PWEXPD0005"]
    assert "phone" not in edsger  # "0612345678": no country code, dropped and counted
    metadata = {
        (m["id"], m["key"]): base64.b64decode(m["value"]).decode() for m in org.get("userMetadata", [])
    }
    assert metadata == {
        ("00u1a2b3c4ACTIVE0001", "secondEmail"): "ada@personal.example",
        ("00u1a2b3c4ACTIVE0001", "employeeNumber"): "1001",
        ("00u1a2b3c4ACTIVE0001", "costCenter"): "R&D",
        ("00u1a2b3c4ACTIVE0001", "department"): "Engineering",
    }
    counts = manifest["counts"]
    assert counts["okta.users_read"] == 8 and counts["users_written"] == 5
    assert counts["okta.password_change_not_marked"] == 2  # RECOVERY, PASSWORD_EXPIRED
    assert counts["okta.status.STAGED"] == 1 and counts["okta.status.ACTIVE"] == 1
    assert counts["cannot_sign_in.okta"] == 5
    assert counts["notes.phone-dropped"] == 1
    assert not [name for name in counts if name.startswith(("unknown_field.okta", "not_carried.okta"))]
    out = capsys.readouterr().out
    assert "must change password at Okta, no password to mark" in out


def test_trust_flags_and_include_blocked(tmp_path):
    code, manifest = _run(tmp_path, SAMPLE, "--trust-email", "--trust-phone", "--include-blocked")
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
    users = {u["userId"]: u["user"] for u in _org(tmp_path, manifest)["humanUsers"]}
    assert len(users) == 8 and _dead(tmp_path) == {}
    ada = users["00u1a2b3c4ACTIVE0001"]
    assert ada["email"]["isEmailVerified"] is True and ada["phone"]["isPhoneVerified"] is True
    assert manifest["counts"]["okta.blocked_written"] == 3
    # Without --metadata, Okta's profile fields ZITADEL has no field for are counted, by name.
    assert manifest["counts"]["not_carried.okta.department"] == 1


def test_report_labels_and_custom_attributes_are_read_by_name(tmp_path):
    users = tmp_path / "report.csv"
    users.write_text(
        "\ufeffUser ID,Okta user status,Okta username,Primary email,User fullname,githubHandle\n"
        "00uX1,ACTIVE,ann,ann@example.com,Ann Lee,annlee\n"
        "00uX2,SUSPENDED,bo,bo@example.com,Bo,\n"
        ",ACTIVE,cy,cy@example.com,Cy Sun,\n"
    )
    code, manifest = _run(tmp_path, users, "--metadata")
    assert code == 1 or code == 0
    assert manifest is not None and manifest["invariant"]["holds"] is True
    org = _org(tmp_path, manifest)
    (ann,) = org["humanUsers"]
    assert ann["userId"] == "00uX1" and ann["user"]["userName"] == "ann"
    assert ann["user"]["profile"]["firstName"] == "Ann" and ann["user"]["profile"]["lastName"] == "Lee"
    assert base64.b64decode(org["userMetadata"][0]["value"]) == b"annlee"
    dead = [json.loads(line) for line in (tmp_path / "out" / "importBody.dead-letter.ndjson").open()]
    assert sorted(d["reason"] for d in dead) == [Reason.BLOCKED, Reason.MISSING_USER_ID]


@pytest.mark.parametrize(
    "content",
    [
        '[{"user_id": "auth0|1", "email": "a@example.com"}]',
        # Okta's Password Health report (its documented header): no e-mail column, not a user export.
        "User,Login,Status,Activation date,Authentication Source,Last Login,Last Password Change\n"
        "Ada Lovelace,ada@example.com,ACTIVE,,OKTA,,\n",
    ],
)
def test_a_file_that_is_not_an_okta_export_is_one_line(tmp_path, capsys, content):
    other = tmp_path / "users.csv"
    other.write_text(content)
    code, _ = _run(tmp_path, other)
    assert code == 2
    assert "not an Okta user export" in capsys.readouterr().err


def test_the_other_readers_refuse_the_okta_csv_naming_migrate_okta(tmp_path, capsys):
    out = tmp_path / "out" / "importBody.json"
    assert main(["migrate", "auth0", "--org=1", f"--users={SAMPLE}", f"--output={out}"]) == 2
    assert "migrate okta --users reads it" in capsys.readouterr().err


def _night_file(path: Path, suspended: set[str]) -> Path:
    rows = list(csv.DictReader(SAMPLE.open()))
    for row in rows:
        if row["id"] in suspended:
            row["status"] = "SUSPENDED"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_push_verify_and_state_nights_lock_a_user_suspended_at_okta(tmp_path, monkeypatch, capsys):
    token = tmp_path / "token"
    token.write_text(PAT)
    state = tmp_path / "state"
    ada = "00u1a2b3c4ACTIVE0001"
    with ZitadelServer(tokens={PAT}) as server:

        def night(users: Path) -> int:
            return _run(
                tmp_path, users, f"--state={state}", f"--push-url={server.url}", f"--token-file={token}"
            )[0]

        assert night(SAMPLE) == 0
        assert server.user_ids(ORG) == {
            "00u1a2b3c4ACTIVE0001",
            "00u1a2b3c4STAGED0002",
            "00u1a2b3c4PROVIS0003",
            "00u1a2b3c4RECOVR0004",
            "00u1a2b3c4PWEXPD0005",
        }
        monkeypatch.setenv("ZITADEL_TOKEN", PAT)
        manifest = tmp_path / "out" / "importBody.manifest.json"
        assert main(["verify", "--url", server.url, "--manifest", str(manifest)]) == 0
        assert server.state.user_states[ada] in ("active", "initial")
        assert night(_night_file(tmp_path / "day2" / "okta-users.csv", {ada})) == 0
        # An Okta user arrives without a password, so ZITADEL holds it initial: a blocked initial
        # user is locked rather than deactivated (docs/sync.md).
        assert server.state.user_states[ada] == "locked"
        assert server.state.user_states["00u1a2b3c4STAGED0002"] in ("active", "initial")
    out, err = capsys.readouterr()
    assert leaked_secrets(out + err) == []


# ------------------------------------------------------------------ one row → its entry (read.py)

ROW = {"id": "00u1", "status": "ACTIVE", "login": "ann", "email": "ann@example.com"}


def _user(row: dict, **options) -> dict:
    mapped = map_row(row, OktaOptions(**options))
    assert isinstance(mapped, MappedUser), mapped
    return mapped.entry["user"]  # type: ignore[return-value]


def test_names_fall_back_to_the_display_name_then_the_login():
    assert _user({**ROW, "displayName": "Ann Marie Lee"})["profile"] == {
        "firstName": "Ann Marie",
        "lastName": "Lee",
        "displayName": "Ann Marie Lee",
    }
    assert _user(ROW)["profile"] == {"firstName": "ann", "lastName": "ann"}
    assert (
        _user({**ROW, "firstName": "A", "lastName": "L", "displayName": "X Y"})["profile"]["lastName"] == "L"
    )


def test_language_prefers_preferred_language_then_locale():
    assert _user({**ROW, "locale": "de_CH"})["profile"]["preferredLanguage"] == "de"
    assert (
        _user({**ROW, "preferredLanguage": "fr-FR", "locale": "de_CH"})["profile"]["preferredLanguage"]
        == "fr"
    )


def test_phone_mobile_before_primary_spaces_removed():
    assert _user({**ROW, "mobilePhone": "+41 (79) 000-00.01", "primaryPhone": "+1"})["phone"] == {
        "phone": "+41790000001",
        "isPhoneVerified": False,
    }
    assert _user({**ROW, "primaryPhone": "+33 1 23"})["phone"]["phone"] == "+33123"
    mapped = map_row({**ROW, "mobilePhone": "0612345678"}, OktaOptions())
    assert isinstance(mapped, MappedUser) and "phone" not in mapped.entry["user"]  # type: ignore[operator]
    assert mapped.notes == ["phone-dropped"]


@pytest.mark.parametrize("status", ["SUSPENDED", "LOCKED_OUT", "DEPROVISIONED", "suspended"])
def test_blocked_statuses_are_refused_unless_read(status):
    refused = map_row({**ROW, "status": status}, OktaOptions())
    assert isinstance(refused, Refusal) and refused.reason == Reason.BLOCKED
    read = map_row({**ROW, "status": status}, OktaOptions(include_blocked=True))
    assert isinstance(read, MappedUser) and read.status == status.upper()


def test_a_row_without_id_login_or_email_is_refused_with_its_reason():
    assert map_row({**ROW, "id": ""}, OktaOptions()).reason == Reason.MISSING_USER_ID  # type: ignore[union-attr]
    assert map_row({"id": "00u1"}, OktaOptions()).reason == Reason.INVALID_USERNAME  # type: ignore[union-attr]
    no_mail = {"id": "00u1", "login": "ann"}
    assert map_row(no_mail, OktaOptions()).reason == Reason.MISSING_EMAIL  # type: ignore[union-attr]
    fallback = _user(no_mail, email_fallback="{id}@users.invalid", trust_email=True)
    assert fallback["email"] == {"email": "00u1@users.invalid", "isEmailVerified": False}


def test_the_login_is_the_user_name_and_the_email_stands_in_when_it_is_missing():
    assert _user(ROW)["userName"] == "ann"
    assert _user({**ROW, "login": ""})["userName"] == "ann@example.com"


def test_metadata_holds_the_cells_zitadel_has_no_field_for():
    mapped = map_row(
        {**ROW, "department": "R&D", "githubHandle": " ann ", "title": ""}, OktaOptions(metadata=True)
    )
    assert isinstance(mapped, MappedUser)
    assert {m["key"]: base64.b64decode(m["value"]) for m in mapped.metadata} == {
        "department": b"R&D",
        "githubHandle": b"ann",
    }
    assert map_row({**ROW, "department": "R&D"}, OktaOptions()).metadata == []  # type: ignore[union-attr]


def test_metadata_over_zitadel_limits_is_dropped_and_counted():
    mapped = map_row({**ROW, "k" * 201: "x", "big": "v" * 500_001, "ok": "y"}, OktaOptions(metadata=True))
    assert isinstance(mapped, MappedUser)
    assert [m["key"] for m in mapped.metadata] == ["ok"] and mapped.metadata_dropped == 2


# ------------------------------------------------------------------ its kind and its header (command.py)


def test_blocked_reads_the_status_of_a_record():
    blocked = KIND.records[COUNTERS.source].blocked
    assert blocked(b'{"id":"00u1","status":"SUSPENDED"}') and blocked(b'{"status":"deprovisioned"}')
    assert not blocked(b'{"id":"00u1","status":"PASSWORD_EXPIRED"}') and not blocked(b"{}")
    assert KIND.records[COUNTERS.source].ids({"id": "00u1"}, None) == ["00u1"]
    assert KIND.records[COUNTERS.source].ids({"id": " "}, None) is None


def test_an_okta_header_is_told_by_its_login_and_email_columns():
    assert okta_csv(b"id,status,login,email,firstName\n00u1,...")
    assert okta_csv(b"\xef\xbb\xbfOkta username,Primary email,User fullname\r\n")
    assert not okta_csv(b"user_id,email,name\n")
    assert not okta_csv(b'[{"login": "a", "email": "b"}]')


def test_columns_are_read_by_name_without_regard_to_case():
    assert column(" Okta User Status ") == "status" and column("githubHandle") == "githubHandle"


def test_other_readers_take_only_a_header_that_is_surely_oktas_for_okta():
    assert okta_marks(SAMPLE.read_bytes())
    assert okta_marks(b"\xef\xbb\xbfUser ID,Okta username,Primary email\n")
    # A table of users with login and e-mail columns is read by okta_csv, but not marked as Okta's.
    assert okta_csv(b"id,login,email,status\n") and not okta_marks(b"id,login,email,status\n")
