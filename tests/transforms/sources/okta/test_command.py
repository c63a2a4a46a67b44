"""``migrate okta`` end to end (transforms/sources/okta/command.py): the CLI on the bundled sample
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
