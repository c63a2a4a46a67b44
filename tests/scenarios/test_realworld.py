"""Every file in ``tests/data/realworld`` converts (or pushes), with numbers counted by hand.

The files were written by other projects (origins and licences in ``tests/data/README.md``). For each one the table gives what a person reading the file counts: users written,
dead letters by reason, users with a password. Where the file's passwords are known (JHipster's
admin/admin and user/user, lakekeeper's ``iceberg``, strimzi's ``<name>-password``, renku's
demo/demo; all re-derived from the hashes while writing this test), every converted hash is
verified against its password with an independent implementation (hashlib, argon2-cffi, bcrypt).

Auth0 password exports come without their profile files, so each is joined with profiles
written here from the e-mails and ids the export names (``auth0|<oid>``, as Auth0 does).
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import bcrypt
import pytest
from repo_files import DATA_DIR

from pipeline.cli import main
from transforms.mapping.ids import keycloak_user_id

REALWORLD = DATA_DIR / "realworld"


def verify_hash(stored: str, password: str) -> bool:
    """Check ``password`` against an MCF/PHC string as ZITADEL's verifiers read it."""
    if stored.startswith("$2"):
        return bcrypt.checkpw(password.encode(), stored.encode())
    if stored.startswith("$argon2"):
        from argon2 import PasswordHasher
        from argon2.exceptions import VerifyMismatchError

        try:
            return PasswordHasher().verify(stored, password)
        except VerifyMismatchError:
            return False
    if stored.startswith("$pbkdf2"):
        ident, rounds, salt, digest = stored[1:].split("$")
        algorithm = {"pbkdf2": "sha1"}.get(ident, ident.removeprefix("pbkdf2-"))
        raw = base64.b64decode(digest + "=" * (-len(digest) % 4))
        derived = hashlib.pbkdf2_hmac(
            algorithm,
            password.encode(),
            base64.b64decode(salt + "=" * (-len(salt) % 4)),
            int(rounds),
            len(raw),
        )
        return derived == raw
    raise AssertionError(f"unexpected hash format {stored[:12]}")


ENABLED_CONFIG = DATA_DIR / "zitadel-config" / "verifiers-enabled.yaml"


def _run(argv: list[str], out: Path, rc_expected: int = 0) -> tuple[dict, list[dict], list[dict]]:
    if argv[1] == "keycloak" and not any(a.startswith("--zitadel-config") for a in argv):
        # A target with pbkdf2 and argon2 enabled, Argon2.MinMemory 7168 (default runs: below).
        argv = argv + [f"--zitadel-config={ENABLED_CONFIG}"]
    rc = main(argv + ["--org=1", f"--output={out / 'importBody.json'}"])
    manifest = json.loads((out / "importBody.manifest.json").read_text())
    assert rc == rc_expected and manifest["invariant"]["holds"], manifest["invariant"]
    users = [
        u
        for body in manifest["bodies"]
        for u in json.loads((out / body["path"]).read_bytes())["dataOrgs"]["orgs"][0]["humanUsers"]
    ]
    dead_path = out / manifest["dead_letter"]["path"]
    dead = [json.loads(line) for line in dead_path.read_text().splitlines()] if dead_path.exists() else []
    return manifest, users, dead


def _profiles_for(path: Path, tmp: Path) -> Path:
    """Profiles for the users a password export names: e-mail and ``auth0|<_id>``."""
    from transforms.sources import json_units
    from transforms.sources.auth0.mapping import password_oid, record_email

    records = [
        value
        for unit in json_units.plan_units(json_units.match_inputs([str(path)])[0])
        for _, _, value, _ in json_units.read_unit(unit)
    ]
    profiles = tmp / "profiles.json"
    profiles.write_text(
        "".join(
            json.dumps(
                {"user_id": f"auth0|{password_oid(r)}", "email": record_email(r), "name": "Real World"}
            )
            + "\n"
            for r in records
        )
    )
    return profiles


# file → (extra flags, users written, dead letters by reason, users with password, known passwords
#         {userName: password} or None when the file's passwords are not known)
CASES = {
    # 2 users (admin, user), both enabled, pbkdf2-sha256 27500 with a 64-byte hash; `user` has an
    # empty firstName (falls back to the user name).
    "keycloak/jhipster-split-users-0.json": ([], 2, {}, 2, {"admin": "admin", "user": "user"}),
    # The same 2 users in the pre-Keycloak-11 layout (hashedSaltedValue/salt/hashIterations/algorithm).
    "keycloak/jhipster-split-users-0-legacy-hashedSaltedValue.json": (
        [],
        2,
        {},
        2,
        {"admin": "admin", "user": "user"},
    ),
    # 7 users: anna and peter (argon2id, m=7168 t=5 p=1, password "iceberg") and 5 service
    # accounts (serviceAccountClientId duckdb, openfga, spark, starrocks, trino).
    "keycloak/lakekeeper-iceberg-realm-argon2.json": (
        [],
        2,
        {"service-account": 5},
        2,
        {"anna": "iceberg", "peter": "iceberg"},
    ),
    # 25 users, none with an id: alice and bob (pbkdf2-sha256, "<name>-password"), zero (a
    # plaintext `value` credential), 22 service accounts (2 team clients, 10 producers, 10 consumers).
    "keycloak/strimzi-kafka-authz-realm.json": (
        [],
        2,
        {"service-account": 22, "plaintext-password": 1},
        2,
        {"alice": "alice-password", "bob": "bob-password"},
    ),
    # The same file with --allow-plaintext-passwords: zero is written with `password`.
    "keycloak/strimzi-kafka-authz-realm.json --allow-plaintext-passwords": (
        ["--allow-plaintext-passwords"],
        3,
        {"service-account": 22},
        3,
        {"alice": "alice-password", "bob": "bob-password"},
    ),
    # 3 users: demo (legacy pbkdf2 = SHA-1, 20000 iterations, 64-byte hash, password "demo") and 2
    # service accounts with @placeholder.org e-mails.
    "keycloak/renku-renga-realm-legacy-pbkdf2-sha1.json": (
        [],
        1,
        {"service-account": 2},
        1,
        {"demo": "demo"},
    ),
    # 2 password records (the first pretty-printed over 9 lines, keyed `_ID`), distinct e-mails,
    # bcrypt cost 10; joined with a profile each.
    "auth0/zitadel-tools-auth0-passwords-multiline-2023.json": (["passwords"], 2, {}, 2, None),
    # A JSON array of 6 "version 1.1" records ($oid ids, identifiers[], last_password_reset on 2),
    # 6 distinct e-mails, bcrypt cost 10; joined with a profile each.
    "auth0/clerk-auth0-password-export-v1.1-array.json": (["passwords"], 6, {}, 6, None),
    # 30 Management API profiles, no password file: ava.garcia and sophia.davis are blocked.
    "auth0/clerk-auth0-users-api-shape.json": (["--passwords=none"], 28, {"blocked": 2}, 0, None),
    # 15 bulk-import profiles, each with custom_password_hash {algorithm: bcrypt} cost 10.
    "auth0/workos-tool-auth0-bulk-import-custom_password_hash.json": (["--passwords=none"], 15, {}, 15, None),
    # Pushed, not converted: see test_zitadel_tools_body_is_validated_and_pushed.
    "zitadel/zitadel-tools-import-data_orgs-2023.json": (None, 3, {}, 2, None),
}


def test_every_realworld_file_is_in_the_table():
    files = {str(p.relative_to(REALWORLD)) for p in REALWORLD.rglob("*.json")}
    assert files == {name.split(" ")[0] for name in CASES}


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[0] is not None])
def test_realworld_file_converts(name, tmp_path):
    flags, written, dead_by_reason, with_password, known = CASES[name]
    path = REALWORLD / name.split(" ")[0]
    flags = [f for f in flags if f != "passwords"]
    if name.startswith("keycloak/"):
        argv = ["migrate", "keycloak", f"--realm={path}", *flags]
    elif "passwords" in CASES[name][0]:
        argv = ["migrate", "auth0", f"--users={_profiles_for(path, tmp_path)}", f"--passwords={path}", *flags]
    else:
        argv = ["migrate", "auth0", f"--users={path}", *flags]
    manifest, users, dead = _run(argv, tmp_path / "out")

    assert len(users) == written
    reasons: dict[str, int] = {}
    for letter in dead:
        reasons[letter["reason"]] = reasons.get(letter["reason"], 0) + 1
    assert reasons == dead_by_reason
    passwords = [u for u in users if "hashedPassword" in u["user"] or "password" in u["user"]]
    assert len(passwords) == with_password == manifest["counts"]["users_with_password"]
    for entry in users:
        user = entry["user"]
        if known and user["userName"] in known:
            assert verify_hash(user["hashedPassword"]["value"], known[user["userName"]]), user["userName"]
        elif "password" in user:  # strimzi's zero, imported in clear text: must be changed
            assert (user["userName"], user["password"], user["passwordChangeRequired"]) == (
                "zero",
                "zero-password",
                True,
            )
        elif "hashedPassword" in user:
            assert user["hashedPassword"]["value"].startswith("$2b$10$")  # Auth0 bcrypt, password unknown
    if known:
        assert {u["user"]["userName"] for u in users if "hashedPassword" in u["user"]} == set(known)


def test_realworld_keycloak_details(tmp_path):
    """What the table does not show: ids derived for users without one, 64-byte hashes passed through, and
    the legacy and current JHipster files giving the same users."""
    _, legacy, _ = _run(
        [
            "migrate",
            "keycloak",
            f"--realm={REALWORLD / 'keycloak/jhipster-split-users-0-legacy-hashedSaltedValue.json'}",
        ],
        tmp_path / "legacy",
    )
    _, current, _ = _run(
        ["migrate", "keycloak", f"--realm={REALWORLD / 'keycloak/jhipster-split-users-0.json'}"],
        tmp_path / "current",
    )
    assert legacy == current
    assert [u["user"]["profile"]["firstName"] for u in current] == ["Admin", "user"]  # empty firstName
    digest = current[0]["user"]["hashedPassword"]["value"].split("$")[-1]
    assert len(base64.b64decode(digest)) == 64

    _, strimzi, _ = _run(
        ["migrate", "keycloak", f"--realm={REALWORLD / 'keycloak/strimzi-kafka-authz-realm.json'}"],
        tmp_path / "strimzi",
    )
    # No `id` in the file: ids derived from the realm and the username (README "User ids").
    assert [(u["userId"], u["user"]["userName"]) for u in strimzi] == [
        (keycloak_user_id("kafka-authz", "alice"), "alice"),
        (keycloak_user_id("kafka-authz", "bob"), "bob"),
    ]

    _, renku, _ = _run(
        [
            "migrate",
            "keycloak",
            f"--realm={REALWORLD / 'keycloak/renku-renga-realm-legacy-pbkdf2-sha1.json'}",
        ],
        tmp_path / "renku",
    )
    assert renku[0]["user"]["hashedPassword"]["value"].startswith("$pbkdf2$20000$")


def test_realworld_auth0_identities_are_counted_per_provider(tmp_path):
    # Counted by hand: 28 unblocked profiles hold 13 auth0 identities (the password), 14
    # google-oauth2 and 6 github ones (the 2 blocked profiles hold one auth0 identity each).
    path = REALWORLD / "auth0/clerk-auth0-users-api-shape.json"
    manifest, users, _ = _run(["migrate", "auth0", f"--users={path}", "--passwords=none"], tmp_path / "plain")
    counts = manifest["counts"]
    assert {k: v for k, v in counts.items() if k.startswith("auth0.identities.")} == {
        "auth0.identities.database": 13,
        "auth0.identities.unmapped.google-oauth2": 14,
        "auth0.identities.unmapped.github": 6,
    }
    assert not any("idps" in u["user"] for u in users)

    manifest, users, _ = _run(
        [
            "migrate",
            "auth0",
            f"--users={path}",
            "--passwords=none",
            "--idp-map=google-oauth2=900",
            "--idp-map=github=901",
        ],
        tmp_path / "mapped",
    )
    links = {u["userId"]: u["user"].get("idps") for u in users}
    assert sum(len(v or []) for v in links.values()) == 20
    assert links["github|22182844"] == [
        {"configId": "901", "externalUserId": "22182844", "displayName": "liam.williams@outlook.com"}
    ]
    assert links["auth0|bqj8uvj5lfu21luxommlom"] == [
        {
            "configId": "900",
            "externalUserId": "998725698151649400000",
            "displayName": "olivia.brown@hotmail.com",
        }
    ]
    assert links["auth0|o7p6ycr4a2slqavaxaxrjm"] is None  # database only: the password, no link


@pytest.mark.parametrize(
    "config, reason",
    [
        (None, "hash-verifier-disabled"),  # ZITADEL's defaults: bcrypt only
        ("verifiers: [argon2]", "hash-parameter-out-of-limits"),  # argon2 on, Argon2.MinMemory 8192 > 7168
    ],
)
def test_realworld_keycloak_argon2_under_a_default_target(tmp_path, config, reason):
    """Keycloak 24+'s argon2id (m=7168) needs the argon2 verifier and a lower MinMemory."""
    path = REALWORLD / "keycloak/lakekeeper-iceberg-realm-argon2.json"
    flags = []
    if config is not None:
        cfg = tmp_path / "zitadel.yaml"
        cfg.write_text("SystemDefaults:\n  PasswordHasher:\n    Verifiers: [argon2]\n")
        flags.append(f"--zitadel-config={cfg}")
    else:
        flags.append("--zitadel-config=")
    # Both users refused, the 5 service accounts skipped: nobody written, exit 1.
    manifest, users, dead = _run(["migrate", "keycloak", f"--realm={path}", *flags], tmp_path / "out", 1)
    hashes = [d for d in dead if d["reason"] == reason]
    assert len(hashes) == 2 and not users
    if reason == "hash-parameter-out-of-limits":
        assert "memory 7168 outside 8192..524288" in hashes[0]["detail"]
        assert "Limits.Argon2.MinMemory" in hashes[0]["detail"]
    manifest2, imported, _ = _run(
        ["migrate", "keycloak", f"--realm={path}", "--on-unsupported-hash=import-without-password", *flags],
        tmp_path / "out2",
    )
    assert {u["user"]["userName"] for u in imported} == {"anna", "peter"}
    assert not any("hashedPassword" in u["user"] for u in imported)
    assert manifest2["users_without_password_by_reason"] == {reason: 2}
    rows = [
        json.loads(line)
        for line in (tmp_path / "out2" / manifest2["passwordless"]["path"]).read_text().splitlines()
    ]
    assert sorted((r["id"], r["reason"]) for r in rows) == sorted((u["userId"], reason) for u in imported)
    assert all(r["email"] for r in rows)


def _records_in(path: Path) -> int:
    """Users in a file, counted independently of the tool: a realm's ``users``, else top-level records."""
    text = path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:  # NDJSON or a multi-line stream of objects
        decoder, position, count = json.JSONDecoder(), 0, 0
        while text[position:].strip():
            position += len(text[position:]) - len(text[position:].lstrip())
            _, position = decoder.raw_decode(text, position)
            count += 1
        return count
    if isinstance(data, dict):
        return len(data.get("users", [])) if "users" in data else 1
    return sum(
        len(item.get("users", [])) if isinstance(item, dict) and "realm" in item else 1 for item in data
    )


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[0] is not None])
def test_realworld_every_user_is_accounted_for(name, tmp_path):
    """Each user of the file ends in exactly one place: a body or a dead-letter line."""
    flags = [f for f in CASES[name][0] if f != "passwords"]
    path = REALWORLD / name.split(" ")[0]
    if name.startswith("keycloak/"):
        argv, read_key = ["migrate", "keycloak", f"--realm={path}", *flags], "keycloak.users_read"
    elif "passwords" in CASES[name][0]:
        argv = ["migrate", "auth0", f"--users={_profiles_for(path, tmp_path)}", f"--passwords={path}", *flags]
        read_key = "auth0.passwords_read"
    else:
        argv, read_key = ["migrate", "auth0", f"--users={path}", *flags], "auth0.profiles_read"
    manifest, users, dead = _run(argv, tmp_path / "out")
    counts = manifest["counts"]
    if read_key == "auth0.passwords_read":
        # Password records: each is used by exactly one written user or is a dead letter.
        records = [d for d in dead if d["source"] == "auth0-password"]
        assert counts[read_key] == _records_in(path) == counts["users_with_password"] + len(records)
    else:
        user_dead = [d for d in dead if d["source"] in ("keycloak-user", "auth0-profile")]
        assert counts[read_key] == _records_in(path) == len(users) + len(user_dead)
    assert counts["users_written"] == len(users)
    assert sum(
        manifest["dead_letters_by_reason"].get(s, {}).get(r, 0)
        for s, reasons in manifest["dead_letters_by_reason"].items()
        for r in reasons
    ) == len(dead)
