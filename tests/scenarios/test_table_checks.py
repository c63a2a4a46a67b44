"""``migrate table`` on files other projects wrote, tried as a new user would: a small mistake in the
mapping or the flags is refused with one line before anything is written, never a run that exits 0
with people changed or dropped.

The files are Django's own auth test fixtures and files derived from them, and Firebase Auth
Emulator exports (tests/data/tables/, origins and licences in tests/data/README.md). Every run is
the real command (``pipeline.cli.main``); the numbers are counted by hand from the files:
``django-auth-tests-authtestdata.json`` holds 6 users (pk "1".."6"), one inactive (pk 2), one with
an empty password (pk 4); ``django-auth-tests-regular.json`` holds one ``auth.group`` and one
``auth.user``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from repo_files import DATA_DIR

from pipeline.cli import main
from transforms.common.reasons import Reason

TABLES = DATA_DIR / "tables"
DJANGO = TABLES / "django"
AUTHTESTDATA = DJANGO / "django-auth-tests-authtestdata.json"
REGULAR = DJANGO / "django-auth-tests-regular.json"
ENABLED_CONFIG = DATA_DIR / "zitadel-config" / "verifiers-enabled.yaml"
# The mapping of a Django fixture (docs/table.md): ids are the fixture's pk.
DJANGO_MAP = [
    "--map=id=pk",
    "--map=username=fields.username",
    "--map=email=fields.email",
    "--map=password_hash=fields.password",
    "--map=blocked=not(fields.is_active)",
]


def _run(tmp_path: Path, *args: str) -> tuple[int, dict | None]:
    out = tmp_path / "out"
    code = main(["migrate", "table", "--org=1", f"--output={out / 'importBody.json'}", *args])
    manifest = out / "importBody.manifest.json"
    return code, (json.loads(manifest.read_text()) if manifest.exists() else None)


def _refused(tmp_path: Path, capsys, *args: str) -> str:
    """Run, expect a configuration error (exit 2, one line, nothing written); the line."""
    code, manifest = _run(tmp_path, *args)
    err = capsys.readouterr().err.strip()
    assert code == 2 and manifest is None, err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert len(err.splitlines()) == 1, err
    return err


def _users(tmp_path: Path, manifest: dict) -> dict[str, dict]:
    out = tmp_path / "out"
    return {
        entry["userId"]: entry["user"]
        for body in manifest["bodies"]
        for org in json.loads((out / body["path"]).read_text())["dataOrgs"]["orgs"]
        for entry in org.get("humanUsers", [])
    }


def _dead(tmp_path: Path) -> list[dict]:
    path = tmp_path / "out" / "importBody.dead-letter.ndjson"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize(
    "mapping, expected",
    [
        # The typo that made 24 deactivated accounts active users.
        (
            "--map=blocked=not(fields.is_actve)",
            "mapping 'blocked': none of its 6 records has fields.is_actve",
        ),
        # The typo that dropped every password.
        (
            "--map=password_hash=fields.pasword",
            "mapping 'password_hash': none of its 6 records has fields.pasword",
        ),
        ("--map=email=fields.emial", "mapping 'email': none of its 6 records has fields.emial"),
    ],
)
def test_a_json_path_found_in_no_record_is_refused_naming_the_nearest(tmp_path, capsys, mapping, expected):
    field = mapping.split("=")[1]
    flags = [f for f in DJANGO_MAP if not f.startswith(f"--map={field}=")] + [mapping]
    err = _refused(tmp_path, capsys, f"--input={AUTHTESTDATA}", *flags)
    assert expected in err
    nearest = {"blocked": "fields.is_active", "password_hash": "fields.password", "email": "fields.email"}
    assert f"(did you mean {nearest[field]!r}?)" in err


def test_a_mapped_field_that_holds_nothing_in_any_record_is_refused(tmp_path, capsys):
    # fields.first_name exists in the one user of the fixture, and is empty.
    err = _refused(
        tmp_path,
        capsys,
        f"--input={REGULAR}",
        "--where=model=auth.user",
        "--map=id=pk",
        "--map=email=fields.email",
        "--map=password_hash=fields.first_name",
    )
    assert (
        "mapping 'password_hash': fields.first_name holds no value in any of the 1 records --where "
        "selects (of its 2 records)" in err
    )
    assert "imported without a password" in err


def test_the_right_mapping_writes_the_fixture_and_counts_what_each_path_held(tmp_path, capsys):
    code, manifest = _run(
        tmp_path, f"--input={AUTHTESTDATA}", *DJANGO_MAP, "--on-unsupported-hash=import-without-password"
    )
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"]
    users = _users(tmp_path, manifest)
    assert sorted(users) == ["1", "3", "4", "5", "6"]  # pk 2 is inactive
    assert [(d["reason"], d["record"]["id"]) for d in _dead(tmp_path)] == [(Reason.BLOCKED, "2")]
    counts = manifest["counts"]
    # Per mapped field, the records that held a value: pk 4's password is empty.
    assert counts["table.mapped.id"] == 6 and counts["table.mapped.password_hash"] == 5
    assert counts["table.mapped.blocked"] == 6
    # The nested fields no mapping read, per user written who had them (a forgotten
    # fields.first_name is named, not only the top-level keys).
    assert manifest["fields_not_carried"] == {
        "table.fields.date_joined": 5,
        "table.fields.first_name": 5,
        "table.fields.is_staff": 1,
        "table.fields.last_login": 5,
        "table.fields.last_name": 5,
    }
    summary = capsys.readouterr().out
    assert "mapped fields (records that held a value)" in summary
    assert "  blocked (not(fields.is_active))" in summary


def test_where_selects_the_users_of_a_dumpdata_file_and_counts_the_rest(tmp_path, capsys):
    code, manifest = _run(
        tmp_path,
        f"--input={REGULAR}",
        *DJANGO_MAP,
        "--where=model=auth.user",
        f"--zitadel-config={ENABLED_CONFIG}",
    )
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"]
    assert sorted(_users(tmp_path, manifest)) == ["1"]
    assert _dead(tmp_path) == []  # the group is not a dead letter
    assert manifest["counts"]["table.records_not_selected"] == 1
    summary = capsys.readouterr().out
    assert "records read 2 - not selected 1 = written 1 + dead-lettered 0" in summary
    assert "  not selected (--where)" in summary


def test_where_paths_and_values_are_checked_before_the_run(tmp_path, capsys):
    err = _refused(tmp_path, capsys, f"--input={REGULAR}", *DJANGO_MAP, "--where=modl=auth.user")
    assert "--where modl: none of its 2 records has modl (did you mean 'model'?)" in err
    err = _refused(tmp_path, capsys, f"--input={REGULAR}", *DJANGO_MAP, "--where=model=auth.usr")
    assert "--where: none of its 2 records is selected; model holds auth.group, auth.user" in err


def test_natural_keys_without_pk_are_refused_naming_a_unique_field(tmp_path, capsys):
    err = _refused(tmp_path, capsys, f"--input={DJANGO / 'authtestdata-natural-primary.json'}", *DJANGO_MAP)
    assert "mapping 'id': none of its 6 records has pk" in err
    assert "a field unique in them: --map id=fields.username" in err


def test_a_wrapper_object_is_read_as_its_records_and_named(tmp_path, capsys):
    code, manifest = _run(
        tmp_path,
        f"--input={DJANGO / 'authtestdata-data-wrapper.json'}",
        "--map=id=id",
        "--map=email=email",
        "--map=blocked=not(is_active)",
    )
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"]
    assert sorted(_users(tmp_path, manifest)) == ["1", "3", "4", "5", "6"]
    assert manifest["counts"]["table.records_read"] == 6
    assert list(manifest["wrappers"].values()) == ["data"]
    assert "records of the top-level 'data' array" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["faker-app-emulator-accounts.json", "opensourcehub-emulator-accounts.json"])
def test_a_firebase_export_given_to_migrate_table_is_refused_naming_migrate_firebase(tmp_path, capsys, name):
    err = _refused(
        tmp_path,
        capsys,
        f"--input={TABLES / 'firebase-emulator' / name}",
        "--map=id=localId",
        "--map=email=email",
    )
    assert "looks like a Firebase Auth export" in err and "migrate firebase --users reads it" in err


CSV_MAP = ["--map=id=id", "--map=email=email", "--map=first_name=first_name", "--map=blocked=not(is_active)"]


@pytest.mark.parametrize(
    "name, flags, delimiter",
    [
        ("authtestdata-excel-semicolon.csv", [], "';' (detected)"),
        ("authtestdata-tab.txt", [], "tab (detected)"),
        ("authtestdata-tab.txt", ["--delimiter=tab"], "tab"),
        ("authtestdata-tab.txt", ["--delimiter=\\t"], "tab"),
    ],
)
def test_delimiters_are_read_from_the_header_or_named(tmp_path, capsys, name, flags, delimiter):
    code, manifest = _run(tmp_path, f"--input={DJANGO / name}", *CSV_MAP, *flags)
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"]
    assert sorted(_users(tmp_path, manifest)) == ["1", "3", "4", "5", "6"]
    assert manifest["csv_delimiters"] == [delimiter]
    assert "CSV delimiter" in capsys.readouterr().out


def test_a_wrong_delimiter_names_the_one_the_header_uses(tmp_path, capsys):
    err = _refused(
        tmp_path, capsys, f"--input={DJANGO / 'authtestdata-excel-semicolon.csv'}", *CSV_MAP, "--delimiter=,"
    )
    assert "the header has no column 'id'" in err and "joined by ';': --delimiter=';'" in err


def test_a_cp1252_file_is_refused_saying_how_to_convert_it_or_read_with_encoding(tmp_path, capsys):
    path = DJANGO / "authtestdata-cp1252.csv"
    err = _refused(tmp_path, capsys, f"--input={path}", *CSV_MAP)
    assert "not UTF-8" in err and "iconv -f cp1252 -t utf-8" in err and "--encoding=cp1252" in err
    code, manifest = _run(tmp_path, f"--input={path}", *CSV_MAP, "--encoding=cp1252")
    assert code == 0 and manifest is not None
    users = _users(tmp_path, manifest)
    assert users["1"]["profile"]["firstName"] == "Zoë" and users["3"]["profile"]["firstName"] == "Renée"


@pytest.mark.parametrize("name", ["authtestdata-excel-semicolon.csv", "authtestdata-tab.txt"])
def test_a_table_with_a_header_given_to_migrate_firebase_is_refused_naming_migrate_table(
    tmp_path, capsys, name
):
    out = tmp_path / "out" / "importBody.json"
    code = main(["migrate", "firebase", "--org=1", f"--users={DJANGO / name}", f"--output={out}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert (
        "a table with a header row (id, username, first_name" in err
        and "migrate table --input reads it" in err
    )
    assert not out.exists()


LARAVEL = TABLES / "laravel" / "users-seeded.csv"
LARAVEL_MAP = [
    f"--input={LARAVEL}",
    "--map=id=id",
    "--map=email=email",
    "--map=display_name=name",
    "--map=password_hash=password",
    "--map=email_verified=present(email_verified_at)",
]


def test_a_seed_rows_plaintext_password_is_named_as_such_and_imported_only_when_allowed(tmp_path):
    code, manifest = _run(tmp_path / "default", *LARAVEL_MAP)
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"]
    dead = _dead(tmp_path / "default")
    assert [(d["reason"], d["record"]["id"]) for d in dead] == [(Reason.PLAINTEXT_PASSWORD, "2")]
    assert "--allow-plaintext-passwords" in dead[0]["detail"] and "password123" not in dead[0]["detail"]
    code, manifest = _run(tmp_path / "allowed", *LARAVEL_MAP, "--allow-plaintext-passwords")
    assert code == 0 and manifest is not None
    users = _users(tmp_path / "allowed", manifest)
    assert users["2"]["password"] == "password123" and users["2"]["passwordChangeRequired"] is True
    assert users["1"]["hashedPassword"]["value"].startswith("$2y$10$")
    assert manifest["counts"]["table.with_password.plaintext"] == 1


EMULATOR = TABLES / "firebase-emulator"


def _firebase(tmp_path: Path, name: str, *flags: str) -> tuple[int, dict]:
    out = tmp_path / "out"
    argv = [
        "migrate",
        "firebase",
        "--org=1",
        f"--users={EMULATOR / name}",
        f"--output={out / 'importBody.json'}",
    ]
    code = main([*argv, *flags])
    return code, json.loads((out / "importBody.manifest.json").read_text())


def test_an_emulator_export_is_named_as_such_and_its_passwords_imported_when_allowed(tmp_path, capsys):
    code, manifest = _firebase(tmp_path / "default", "faker-app-emulator-accounts.json")
    assert code == 0 and manifest["invariant"]["holds"]
    summary = capsys.readouterr().out
    assert "emulator clear-text password not imported (plaintext-password)" in summary
    assert "modified scrypt" not in summary.lower() and "scrypt hash" not in summary
    listed = (tmp_path / "default" / "out" / "importBody.passwordless.ndjson").read_text()
    assert json.loads(listed)["reason"] == Reason.PLAINTEXT_PASSWORD
    code, manifest = _firebase(
        tmp_path / "allowed", "faker-app-emulator-accounts.json", "--allow-plaintext-passwords"
    )
    assert code == 0
    (user,) = _users(tmp_path / "allowed", manifest).values()
    # The emulator's fakeHash:salt=...:password=test1234 holds the password as typed.
    assert user["password"] == "test1234" and user["passwordChangeRequired"] is True
    assert manifest["counts"]["firebase.plaintext_passwords_imported"] == 1
    assert manifest["cannot_sign_in_yet"] == 0
    assert "emulator passwords imported as plaintext (change required)" in capsys.readouterr().out


def test_an_emulator_export_dead_letters_its_passwords_by_name_with_dead_letter(tmp_path):
    code, manifest = _firebase(
        tmp_path, "faker-app-emulator-accounts.json", "--on-unsupported-hash=dead-letter"
    )
    assert code == 1  # the one user was dead-lettered
    (letter,) = _dead(tmp_path)
    assert (
        letter["reason"] == Reason.PLAINTEXT_PASSWORD and "Firebase Auth Emulator export" in letter["detail"]
    )
    assert "test1234" not in json.dumps(letter["detail"])


def test_the_summary_names_providers_as_idp_map_takes_them_and_reports_aliases_that_match_nothing(
    tmp_path, capsys
):
    name = "opensourcehub-emulator-accounts.json"
    # The name a summary used to print (github_com) links nobody: reported, with the names seen.
    code, manifest = _firebase(tmp_path / "typo", name, "--idp-map=github_com=1234")
    assert code == 0 and manifest["counts"]["firebase.idp_links.unmapped.github.com"] == 3
    summary = capsys.readouterr().out
    assert "no --idp-map, not linked: github.com" in summary
    line = next(
        line for line in summary.splitlines() if line.startswith("--idp-map aliases that matched no entry")
    )
    assert "(providers seen: github.com)" in line and line.endswith("github_com")
    # What the summary names is what the flag takes.
    code, manifest = _firebase(tmp_path / "right", name, "--idp-map=github.com=1234")
    assert code == 0 and manifest["counts"]["firebase.idp_links.linked.github.com"] == 3
    assert manifest["cannot_sign_in_yet"] == 0
    assert "matched no entry" not in capsys.readouterr().out


def test_framework_names_are_hash_forms_and_wordpress_68_is_explained(tmp_path):
    """--hash-form=wordpress: phpass ($P$, $H$) is written; 6.8's $wp$ is refused saying why."""
    import passwap_rules

    vectors = json.loads((DATA_DIR / "hash_forms_vectors.json").read_text())
    phpass = [v for v in vectors["rewritten"] if v["form"] == "phpass"]
    (wp68,) = [v for v in vectors["refused"] if v["form"] == "wordpress-bcrypt"]
    rows = [
        {"ID": n, "user_email": f"u{n}@example.com", "user_pass": v["value"]} for n, v in enumerate(phpass)
    ]
    rows.append({"ID": 9, "user_email": "wp68@example.com", "user_pass": wp68["value"]})
    table = tmp_path / "wp_users.ndjson"
    table.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, manifest = _run(
        tmp_path,
        f"--input={table}",
        "--map=id=ID",
        "--map=email=user_email",
        "--map=password_hash=user_pass",
        "--hash-form=wordpress",
        f"--zitadel-config={ENABLED_CONFIG}",
        "--on-unsupported-hash=import-without-password",
    )
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"]
    users = _users(tmp_path, manifest)
    for n, vector in enumerate(phpass):
        assert passwap_rules.verify(users[str(n)]["hashedPassword"]["value"], vector["password"])
    assert "hashedPassword" not in users["9"]
    listed = json.loads((tmp_path / "out" / "importBody.passwordless.ndjson").read_text())
    assert listed["id"] == "9" and listed["reason"] == Reason.UNSUPPORTED_HASH
    assert manifest["counts"]["table.password_dropped.unsupported-hash"] == 1


def test_laravel_as_hash_form_reads_its_bcrypt(tmp_path):
    code, manifest = _run(tmp_path, *LARAVEL_MAP, "--hash-form=laravel", "--allow-plaintext-passwords")
    assert code == 0 and manifest is not None
    # Declared bcrypt: the seed row's password123 is not a bcrypt value, refused as such.
    assert [d["reason"] for d in _dead(tmp_path)] == [Reason.INVALID_HASH]
    assert _users(tmp_path, manifest)["1"]["hashedPassword"]["value"].startswith("$2y$10$")


@pytest.mark.parametrize(
    "command, default",
    [("firebase", "import-without-password"), ("table", "dead-letter"), ("auth0", "dead-letter")],
)
def test_help_shows_each_commands_own_on_unsupported_hash_default(capsys, command, default):
    with pytest.raises(SystemExit) as exited:
        main(["migrate", command, "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert f"(default for this command: {default})" in text


def test_converted_by_hash_adds_up_to_the_users_converted(tmp_path, capsys):
    code, manifest = _run(
        tmp_path, f"--input={AUTHTESTDATA}", *DJANGO_MAP, "--on-unsupported-hash=import-without-password"
    )
    assert code == 0 and manifest is not None
    lines = capsys.readouterr().out.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("converted, by hash")))
    rows = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        rows.append((line.rsplit(None, 1)[0].strip(), int(line.rsplit(None, 1)[1])))
    # pk 4's empty password; pk 1 and 3's Django sha1, pk 5 and 6's "$" and "foo$bar" dropped.
    assert dict(rows) == {
        "no password in the table": 1,
        "password dropped (unsupported-hash)": 2,
        "password dropped (unsupported-hash-salted-sha)": 2,
    }
    assert sum(value for _, value in rows) == manifest["counts"]["users_written"] == 5


def test_a_hash_the_target_refuses_is_counted_by_its_form(tmp_path):
    code, manifest = _run(tmp_path, f"--input={REGULAR}", *DJANGO_MAP, "--where=model=auth.user")
    assert code == 1 and manifest is not None  # the one user: pbkdf2 is not enabled by default
    assert manifest["refused_hash_forms"] == {"django-pbkdf2-sha256": 1}
    assert [d["reason"] for d in _dead(tmp_path)] == [Reason.HASH_VERIFIER_DISABLED]


def test_firebase_valid_since_is_counted_as_a_field_not_carried(tmp_path):
    code, manifest = _firebase(tmp_path, "faker-app-emulator-accounts.json")
    assert code == 0 and manifest["fields_not_carried"]["firebase.validSince"] == 1


def test_a_dumpdata_file_of_several_models_without_where_is_refused_naming_the_users_model(tmp_path, capsys):
    # Without --where its group would be a missing-email dead letter, or with --email-fallback a
    # user whose id (pk 1) collides with the real user's.
    err = _refused(tmp_path, capsys, f"--input={REGULAR}", *DJANGO_MAP, "--email-fallback={id}@example.com")
    assert "are of 2 models (auth.group, auth.user): select the users with --where model=auth.user" in err


def test_a_keycloak_idp_map_alias_that_matches_nothing_is_reported(tmp_path, capsys):
    realm = DATA_DIR / "zitadel-tools" / "keycloak" / "realm.json"
    out = tmp_path / "out" / "importBody.json"
    argv = ["migrate", "keycloak", "--org=1", f"--realm={realm}", "--idp-map=gooogle=1", f"--output={out}"]
    code = main([*argv, f"--zitadel-config={ENABLED_CONFIG}"])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    (line,) = [line for line in lines if line.startswith("--idp-map aliases that matched no entry")]
    assert line.endswith("gooogle")


def test_an_auth0_idp_map_alias_that_matches_nothing_is_reported(tmp_path, capsys):
    sample = DATA_DIR.parent.parent / "examples" / "auth0"
    out = tmp_path / "out" / "importBody.json"
    argv = [
        "migrate",
        "auth0",
        "--org=1",
        f"--users={sample}/users.json",
        f"--passwords={sample}/passwords.json",
    ]
    assert main([*argv, "--idp-map=google-oauth=1", f"--output={out}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (line,) = [line for line in lines if line.startswith("--idp-map aliases that matched no entry")]
    assert "(providers seen: google-oauth2)" in line and line.endswith("google-oauth")
    # The provider's own name links its users, and nothing is reported.
    assert (
        main([*argv, "--idp-map=google-oauth2=1", f"--output={tmp_path / 'right' / 'importBody.json'}"]) == 0
    )
    assert "matched no entry" not in capsys.readouterr().out
