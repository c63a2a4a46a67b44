"""``migrate table`` end to end (transforms/sources/table/command.py): the CLI on the samples and on hostile tables.

The samples are examples/table/ (written by examples/table/generate.py, password ``pw-<name>``).
Bodies are checked against ZITADEL's published schema by tests/conftest.py; pushes go to the
stand-in over HTTP (tests/standins/zitadel_server.py).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import bcrypt
import orjson
import passwap_rules
import pytest
from repo_files import DATA_DIR, ROOT
from zitadel_fixtures import PAT
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.common.reasons import Reason

EXAMPLES = ROOT / "examples" / "table"
SUPABASE = EXAMPLES / "supabase_auth_users.csv"
DJANGO = EXAMPLES / "django_auth_user.json"
ORG = "123456789"
# A target that enables every verifier (ZITADEL's default is bcrypt only).
ALL_VERIFIERS = DATA_DIR / "zitadel-config" / "verifiers-enabled.yaml"


def sync_sample(tmp_path: Path) -> list[str]:
    """The flags of a run on the bundled sample (tests/pipeline/test_migrate.py syncs with it)."""
    return [f"--input={SUPABASE}", f"--mapping={EXAMPLES / 'supabase.mapping.json'}"]


def _run(tmp_path: Path, *args: str) -> tuple[int, dict | None]:
    out = tmp_path / "out"
    code = main(["migrate", "table", f"--org={ORG}", f"--output={out / 'importBody.json'}", *args])
    manifest = out / "importBody.manifest.json"
    return code, (json.loads(manifest.read_text()) if manifest.exists() else None)


def _users(tmp_path: Path) -> dict[str, dict]:
    users = {}
    for body in sorted((tmp_path / "out").glob("importBody*.json")):
        if body.name.endswith(".manifest.json"):
            continue
        for org in json.loads(body.read_text())["dataOrgs"]["orgs"]:
            for entry in org.get("humanUsers", []):
                users[entry["userId"]] = entry["user"]
    return users


def _dead(tmp_path: Path) -> list[dict]:
    path = tmp_path / "out" / "importBody.dead-letter.ndjson"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def _accounted(manifest: dict) -> None:
    counts = manifest["counts"]
    assert manifest["invariant"]["holds"], manifest["invariant"]
    dead = sum(v for k, v in counts.items() if k.startswith("dead_letter.table-user."))
    assert counts["table.records_read"] == counts.get("users_written", 0) + dead


def test_supabase_csv_sample_converts_and_every_hash_verifies(tmp_path, capsys):
    code, manifest = _run(tmp_path, f"--input={SUPABASE}", f"--mapping={EXAMPLES / 'supabase.mapping.json'}")
    assert code == 0 and manifest is not None
    _accounted(manifest)
    users = _users(tmp_path)
    assert len(users) == 5
    by_name = {u["email"]["email"].lower().split("@")[0]: u for u in users.values()}
    for name, user in by_name.items():
        assert bcrypt.checkpw(f"pw-{name}".encode(), user["hashedPassword"]["value"].encode())
    assert by_name["ann"]["profile"]["displayName"] == "Ann Lee"
    assert by_name["ann"]["email"] == {"email": "ann@example.com", "isEmailVerified": True}
    assert by_name["cleo"]["email"] == {"email": "Cleo@Example.com"}  # not confirmed
    assert by_name["dan"]["profile"]["displayName"] == "Dan Newline"  # a quoted newline, cleaned
    assert "phone" not in by_name["dan"]  # Supabase keeps phones without '+': dropped, counted
    assert by_name["fay"]["profile"]["firstName"] == "fay@example.com"  # no name: the userName
    assert [(d["reason"], d["record"]["record"]["email"]) for d in _dead(tmp_path)] == [
        (Reason.BLOCKED, "eve@example.com")
    ]
    assert manifest["counts"]["table.metadata_entries"] == 10
    # Columns the mapping leaves out, per user written who had a value.
    assert manifest["fields_not_carried"] == {"table.aud": 5, "table.instance_id": 5, "table.role": 5}
    assert manifest["formats"] == ["csv"]
    summary = capsys.readouterr().out
    assert "records read 6 = written 5 + dead-lettered 1" in summary


def test_django_json_array_reads_nested_paths_and_its_hashes_verify(tmp_path):
    code, manifest = _run(
        tmp_path,
        f"--input={DJANGO}",
        f"--mapping={EXAMPLES / 'django.mapping.json'}",
        f"--zitadel-config={ALL_VERIFIERS}",
    )
    assert code == 0 and manifest is not None
    _accounted(manifest)
    users = _users(tmp_path)
    assert sorted(users) == ["1", "2", "3"]
    assert users["1"]["userName"] == "gus" and users["1"]["profile"]["lastName"] == "Grant"
    assert users["2"]["profile"] == {"firstName": "Hal", "lastName": "hal"}
    for user in users.values():  # Django's pbkdf2_sha256$ rewritten as passwap's $pbkdf2-sha256$
        assert passwap_rules.verify(user["hashedPassword"]["value"], f"pw-{user['userName']}")
    assert manifest["counts"]["hash_forms.django-pbkdf2-sha256"] == 3
    assert [d["reason"] for d in _dead(tmp_path)] == [Reason.BLOCKED]  # jon: is_active false


def test_django_hashes_under_zitadels_default_config_are_refused_naming_the_config(tmp_path, capsys):
    code, manifest = _run(tmp_path, f"--input={DJANGO}", f"--mapping={EXAMPLES / 'django.mapping.json'}")
    assert code == 1 and manifest is not None  # every user read was dead-lettered
    _accounted(manifest)
    assert (
        sorted(d["reason"] for d in _dead(tmp_path)) == [Reason.BLOCKED] + [Reason.HASH_VERIFIER_DISABLED] * 3
    )
    assert "- pbkdf2" in capsys.readouterr().out  # the config block that admits them


def test_a_table_of_every_hash_form_accounts_for_every_user(tmp_path):
    """One row per vector of tests/data/hash_forms_vectors.json: the rewritten ones verify against
    their passwords, the refused ones are imported without password and listed with the reason."""
    vectors = json.loads((DATA_DIR / "hash_forms_vectors.json").read_text())
    rows = [(f"ok{n}", v) for n, v in enumerate(vectors["rewritten"])]
    rows += [(f"no{n}", v) for n, v in enumerate(vectors["refused"])]
    table = tmp_path / "hashes.ndjson"
    table.write_bytes(
        b"\n".join(orjson.dumps({"id": i, "email": f"{i}@example.com", "hash": v["value"]}) for i, v in rows)
    )
    code, manifest = _run(
        tmp_path,
        f"--input={table}",
        "--map=id=id",
        "--map=email=email",
        "--map=password_hash=hash",
        f"--zitadel-config={ALL_VERIFIERS}",
        "--on-unsupported-hash=import-without-password",
    )
    assert code == 0 and manifest is not None
    _accounted(manifest)
    users = _users(tmp_path)
    assert len(users) == len(rows)
    listed = {
        line["id"]: line["reason"]
        for line in map(
            orjson.loads, (tmp_path / "out" / "importBody.passwordless.ndjson").read_bytes().splitlines()
        )
    }
    for user_id, vector in rows:
        hashed = users[user_id].get("hashedPassword")
        if hashed is not None:
            assert passwap_rules.verify(hashed["value"], vector["password"]) is vector.get("accept", True), (
                vector
            )
        else:  # refused by its form, or by the target's limits: listed for a reset mail
            assert user_id in listed, vector
    assert all(listed[i] for i, _ in rows if i.startswith("no"))


def _ndjson_rows(start: int, count: int) -> list[dict]:
    hashed = bcrypt.hashpw(b"pw-n", bcrypt.gensalt(10)).decode()
    return [
        {"uid": f"u{n}", "profile": {"mail": f"u{n}@example.com", "first": f"F{n}"}, "pw": hashed}
        for n in range(start, start + count)
    ]


def test_ndjson_gz_glob_and_a_json_array_together(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    rows = _ndjson_rows(0, 4)
    (folder / "users-1.ndjson.gz").write_bytes(gzip.compress(b"\n".join(orjson.dumps(r) for r in rows[:2])))
    (folder / "users-2.json").write_bytes(orjson.dumps(rows[2:]))
    code, manifest = _run(
        tmp_path,
        f"--input={folder}/users-*",
        "--map=id=uid",
        "--map=email=profile.mail",
        "--map=first_name=profile.first",
        "--map=password_hash=pw",
    )
    assert code == 0 and manifest is not None
    _accounted(manifest)
    users = _users(tmp_path)
    assert sorted(users) == ["u0", "u1", "u2", "u3"]
    assert users["u3"]["profile"]["firstName"] == "F3"
    assert bcrypt.checkpw(b"pw-n", users["u0"]["hashedPassword"]["value"].encode())


def test_input_and_mapping_on_cloud_storage(tmp_path, gcs_emulator):
    gcs_emulator.blob("t/users.csv.gz").upload_from_string(gzip.compress(SUPABASE.read_bytes()))
    gcs_emulator.blob("t/mapping.json").upload_from_filename(str(EXAMPLES / "supabase.mapping.json"))
    bucket = f"gs://{gcs_emulator.name}/t"
    code, manifest = _run(tmp_path, f"--input={bucket}/users.csv.gz", f"--mapping={bucket}/mapping.json")
    assert code == 0 and manifest is not None
    _accounted(manifest)
    assert len(_users(tmp_path)) == 5


HOSTILE = (
    "ID,Email,Verified,Meta,Roles,Hash\n"
    '1,ok@example.com,true,"{""plan"": ""a""}",admin,\n'
    ",noid@example.com,true,,,\n"  # missing id
    "3,path@example.com,true,[1],,\n"  # the JSON column is a list: bad path
    "4,type@example.com,maybe,,,\n"  # not a yes/no
    "1,dupe@example.com,true,,,\n"  # the id of row 1 again
    "6,cells@example.com,true,,,,extra\n"  # one cell too many
    "7,brokenjson@example.com,true,{oops,,\n"  # the JSON column does not parse
    "8,hash@example.com,true,,,$not$a$hash\n"  # no verifier parses it
    '9,"quoted\nnewline@example.com",true,,,\n'  # an e-mail with a newline: refused
)


def test_hostile_rows_are_dead_lettered_with_reasons_and_counted(tmp_path, capsys):
    table = tmp_path / "hostile.csv"
    table.write_bytes(HOSTILE.encode() + b"10,\xff@example.com,true,,,\n11,last@example.com,1,,,\n")
    code, manifest = _run(
        tmp_path,
        f"--input={table}",
        "--map=id=id",  # header case differs
        "--map=email=email",
        "--map=email_verified=verified",
        "--map=metadata=meta.plan",
        "--map=roles=roles",
        "--map=password_hash=hash",
    )
    assert code == 0 and manifest is not None
    _accounted(manifest)
    assert sorted(_users(tmp_path)) == ["1", "11"]
    reasons = sorted((d["reason"], d["record"]["id"]) for d in _dead(tmp_path))
    assert reasons == sorted(
        [
            (Reason.MISSING_USER_ID, None),
            (Reason.BAD_PATH, "3"),
            (Reason.INVALID_FIELD_TYPE, "4"),
            (Reason.DUPLICATE_USER_ID, "1"),
            (Reason.MALFORMED_CSV, None),
            (Reason.MALFORMED_JSON, "7"),
            (Reason.UNSUPPORTED_HASH, "8"),
            (Reason.CONTROL_CHARACTERS, "9"),
            (Reason.MALFORMED_CSV, None),
        ]
    )
    counts = manifest["counts"]
    assert counts["table.records_read"] == 11
    assert manifest["dead_letter"]["count"] == 9 == len(_dead(tmp_path))
    assert "records read 11 = written 2 + dead-lettered 9" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--map=id=id", "--map=emial=email"], "unknown field 'emial' (did you mean 'email'?)"),
        (["--map=id=id", "--map=email=mail"], "the header has no column 'mail' (did you mean 'email'?)"),
        (["--map=id=id", "--map=email=email", "--metadata"], "--metadata: name the columns"),
        (["--map=id=id", "--map=email=email", "--project-id=2873423"], "name the roles column"),
        (["--map=email=email"], "names no 'id'"),
        (["--map=id=id", "--map=email=email", "--hash-form=djangoo"], "did you mean 'django'?"),
        # A suggestion never names a form that refuses every value (wordpress-bcrypt).
        (["--map=id=id", "--map=email=email", "--hash-form=wordpres"], "did you mean 'wordpress'?"),
    ],
)
def test_configuration_errors_are_one_line(tmp_path, capsys, args, message):
    code, _ = _run(tmp_path, f"--input={SUPABASE}", *args)
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_push_and_verify_against_the_stand_in_with_roles(tmp_path):
    token = tmp_path / "token"
    token.write_text(PAT)
    with ZitadelServer(tokens={PAT}) as server:
        code, manifest = _run(
            tmp_path,
            f"--input={SUPABASE}",
            f"--mapping={EXAMPLES / 'supabase.mapping.json'}",
            "--project-id=2873423",
            "--create-project=App",
            f"--push-url={server.url}",
            f"--token-file={token}",
            "--push-verify",
        )
        assert code == 0 and manifest is not None
        assert len(server.user_ids(ORG)) == 5
        with server.state.lock:
            grants = {
                user_id: sorted(server.state.grant_keys[grant_id])
                for (org, user_id, project, _), grant_id in server.state.user_grants.items()
                if org == ORG and project == "2873423"
            }
    assert grants == {
        "5b6c1f0e-0000-4000-8000-000000000001": ["admin"],
        "5b6c1f0e-0000-4000-8000-000000000003": ["editor", "viewer"],
        "5b6c1f0e-0000-4000-8000-000000000006": ["viewer"],
    }


def _night_csv(path: Path, users: list[tuple[int, str, str]]) -> Path:
    """(n, last name, blocked) rows; every password is pw-<n>, hashed once per n."""
    lines = ["id,email,last,pw,banned"]
    for n, last, banned in users:
        lines.append(f"t{n},user{n}@example.com,{last},{_night_hash(n)},{banned}")
    path.write_text("\n".join(lines) + "\n")
    return path


_HASHES: dict[int, str] = {}


def _night_hash(n: int) -> str:
    if n not in _HASHES:
        _HASHES[n] = bcrypt.hashpw(f"pw-{n}".encode(), bcrypt.gensalt(10)).decode()
    return _HASHES[n]


def test_state_nights_follow_changed_blocked_and_removed_users(tmp_path, capsys):
    token = tmp_path / "token"
    token.write_text(PAT)

    def night(n: int, users: list[tuple[int, str, str]], *extra: str) -> int:
        table = _night_csv(tmp_path / f"users-{n}.csv", users)
        code, _ = _run(
            tmp_path,
            f"--input={table}",
            "--map=id=id",
            "--map=email=email",
            "--map=last_name=last",
            "--map=password_hash=pw",
            "--map=blocked=present(banned)",
            f"--state={tmp_path / 'state'}",
            f"--push-url={server.url}",
            f"--token-file={token}",
            "--max-removals=50%",
            "--max-blocks=50%",
            *extra,
        )
        return code

    with ZitadelServer(tokens={PAT}) as server:
        day1 = [(n, f"Last{n}", "") for n in range(1, 6)]
        assert night(1, day1) == 0
        assert server.user_ids(ORG) == {f"t{n}" for n in range(1, 6)}
        day2 = [
            (1, "Changed", ""),
            (2, "Last2", "2099-01-01"),
            (4, "Last4", ""),
            (5, "Last5", ""),
            (6, "Last6", ""),
        ]
        assert night(2, day2, "--on-removed=deactivate") == 0
        with server.state.lock:
            users = {uid: u for uid, (_, u) in server.state.users.items()}
            states = dict(server.state.user_states)
        assert users["t1"]["profile"]["lastName"] == "Changed"
        # Users who never signed in are "initial": ZITADEL locks those instead (docs/sync.md).
        assert states["t2"] == "locked" and states["t3"] == "locked"
        assert "t6" in users and states.get("t4") not in ("inactive", "locked")
        calls = len(server.v2.calls)
        capsys.readouterr()
        assert night(3, day2, "--on-removed=deactivate") == 0  # nothing changed: nothing sent
        assert len(server.v2.calls) == calls


def test_the_hint_for_users_who_cannot_sign_in_names_no_flag_table_lacks(tmp_path, capsys):
    """`migrate table` has no --idp-map: a user without a password gets only the reset-mail hint."""
    table = tmp_path / "users.csv"
    table.write_text("id,email\nu1,u1@example.com\nu2,u2@example.com\n")
    code, manifest = _run(tmp_path, f"--input={table}", "--map=id=id", "--map=email=email")
    assert code == 0 and manifest is not None
    assert manifest["cannot_sign_in_yet"] == 2
    summary = capsys.readouterr().out
    assert "cannot sign in yet (no password, no IdP link)" in summary
    assert "  send them password-reset mails" in summary and "--idp-map" not in summary
