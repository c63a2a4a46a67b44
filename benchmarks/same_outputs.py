"""Same outputs before and after a change: run migrate with two checkouts and compare every file.

    git worktree add ../before <commit>
    python benchmarks/same_outputs.py --before ../before
    python benchmarks/same_outputs.py --before ../before --users 100000

Each scenario (the bundled Auth0 sample with MFA, IdP links and metadata; the Auth0 sample with
roles as grants; the vendored Keycloak realms, single and split; the Firebase and table samples
under examples/ and tests/data/, the vendored Auth0 bulk-import and Keycloak OTP exports, with
and without ``--on-unsupported-hash=import-without-password`` and ``--email-fallback``; a ZITADEL
export; first ``--state`` nights; and, with ``--users``, a generated Auth0 export and Keycloak
realm of that size)
runs once with this checkout's code and once with the ``--before`` checkout's code (``python -m
pipeline`` from that directory, this interpreter), each into its own folder. Then every file the
runs wrote (bodies, dead letters, manifests, change files, the state) and what they printed
(stdout, stderr, the exit code) are compared byte for byte, the output folder's own path replaced
by a placeholder. It prints one line per scenario and exits 1 on any difference, naming the first
differing files. A refactoring that changes no behaviour shows ``same`` everywhere.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "tests", "data")
SAMPLE = os.path.join(ROOT, "examples", "auth0")


def _scenarios(generated: str | None) -> dict[str, list[str]]:
    """Name → migrate arguments; ``{out}`` is the run's output folder."""
    realworld = os.path.join(DATA, "realworld")
    auth0 = [
        "migrate",
        "auth0",
        "--org=123456789",
        f"--users={SAMPLE}/users.json",
        f"--passwords={SAMPLE}/passwords.json",
        "--output={out}/importBody.json",
        "--dead-letter={out}/dead-letter.ndjson",
        "--batch-size=7",
    ]
    scenarios = {
        "auth0 sample": [
            *auth0,
            f"--mfa={SAMPLE}/mfa.json",
            "--idp-map=google-oauth2=276402541098127105",
            "--metadata",
        ],
        "auth0 roles": [*auth0, "--project-id=999", "--roles-from=app_metadata.roles"],
        "auth0 first --state night": [*auth0, "--state={out}/state"],
        "keycloak realm": [
            "migrate",
            "keycloak",
            "--org=123",
            f"--realm={DATA}/zitadel-tools/keycloak/realm.json",
            "--output={out}/importBody.json",
        ],
        "keycloak realworld argon2": [
            "migrate",
            "keycloak",
            "--org=123",
            f"--realm={realworld}/keycloak/lakekeeper-iceberg-realm-argon2.json",
            "--output={out}/importBody.json",
            "--on-unsupported-hash=import-without-password",
        ],
        "keycloak otp": [
            "migrate",
            "keycloak",
            "--org=123",
            f"--realm={DATA}/keycloak-otp/realm-otp-current.json",
            "--output={out}/importBody.json",
            "--project-id=77",
        ],
        **_more_scenarios(),
        "zitadel export": [
            "migrate",
            "zitadel",
            "--export={work}/export.json",
            "--output={out}/importBody.json",
        ],
    }
    if generated:
        scenarios["auth0 generated"] = [
            "migrate",
            "auth0",
            "--org=123456789",
            f"--users={generated}/auth0/users.json",
            f"--passwords={generated}/auth0/passwords.json",
            "--output={out}/importBody.json",
        ]
        scenarios["keycloak generated"] = [
            "migrate",
            "keycloak",
            "--org=123",
            f"--realm={generated}/keycloak/acme-realm.json",
            "--output={out}/importBody.json",
        ]
    return scenarios


def _more_scenarios() -> dict[str, list[str]]:
    """The Firebase and table samples and the other vendored exports, with the flags that change
    what is counted about users (metadata, IdP links, hashes dropped, --email-fallback)."""
    examples = os.path.join(ROOT, "examples")
    config = f"--zitadel-config={DATA}/zitadel-config/verifiers-enabled.yaml"
    out = ["--output={out}/importBody.json"]
    drop = "--on-unsupported-hash=import-without-password"
    fallback = "--email-fallback={id}@users.example"
    firebase = ["migrate", "firebase", "--org=123", "--metadata", "--idp-map=google.com=300", *out]
    table = ["migrate", "table", "--org=123", *out]
    supabase = [
        f"--input={examples}/table/supabase_auth_users.csv",
        f"--mapping={examples}/table/supabase.mapping.json",
    ]
    django = [
        f"--input={examples}/table/django_auth_user.json",
        f"--mapping={examples}/table/django.mapping.json",
    ]
    keycloak = ["migrate", "keycloak", "--org=123", config, *out]
    realworld = os.path.join(DATA, "realworld", "keycloak")
    scenarios = {
        "firebase json": [*firebase, f"--users={examples}/firebase/users.json"],
        "firebase csv": [*firebase, f"--users={examples}/firebase/users.csv", fallback],
        "firebase tools csv": [
            *firebase,
            f"--users={DATA}/firebase/firebase-tools-readme-import-example.csv",
        ],
        "firebase first --state night": [
            *firebase,
            f"--users={DATA}/firebase/users.json",
            "--state={out}/state",
        ],
        "table supabase": [*table, *supabase],
        "table supabase roles": [*table, *supabase, "--project-id=55", fallback],
        "table django": [*table, *django, config],
        "table django default config": [*table, *django, drop],
        "table first --state night": [*table, *supabase, "--state={out}/state"],
        "auth0 bulk custom hashes": [
            "migrate",
            "auth0",
            "--org=123",
            f"--users={DATA}/auth0-bulk/bulk-import-shape.json",
            "--passwords=none",
            drop,
            *out,
        ],
        "auth0 bulk mfa factors": [
            "migrate",
            "auth0",
            "--org=123",
            f"--users={DATA}/auth0-bulk/bulk-import-mfa-factors.json",
            "--passwords=none",
            fallback,
            *out,
        ],
        "auth0 zitadel-tools": [
            "migrate",
            "auth0",
            "--org=123",
            f"--users={DATA}/zitadel-tools/auth0/users.json",
            f"--passwords={DATA}/zitadel-tools/auth0/passwords.json",
            drop,
            *out,
        ],
        "keycloak otp legacy": [
            *keycloak,
            f"--realm={DATA}/keycloak-otp/realm-otp-legacy.json",
            "--metadata",
        ],
        "keycloak otp policy": [*keycloak, f"--realm={DATA}/keycloak-otp/realm-otp-policy-sha256.json"],
        "keycloak first --state night": [
            *keycloak,
            f"--realm={DATA}/keycloak-otp/realm-otp-current.json",
            "--state={out}/state",
        ],
        "keycloak pbkdf2-sha1 default config": [
            "migrate",
            "keycloak",
            "--org=123",
            f"--realm={realworld}/renku-renga-realm-legacy-pbkdf2-sha1.json",
            drop,
            fallback,
            *out,
        ],
        "keycloak strimzi": [
            *keycloak,
            f"--realm={realworld}/strimzi-kafka-authz-realm.json",
            "--idp-map=github=9",
        ],
        "keycloak jhipster legacy": [
            *keycloak,
            f"--realm={realworld}/jhipster-split-users-0-legacy-hashedSaltedValue.json",
        ],
        # A user twice (same id, two e-mails, no password): the one scenario expected to differ
        # from before the counts came from the users written, in its corrected counts only (cannot sign in yet, ...).
        "auth0 duplicated user (expected to differ)": [
            "migrate",
            "auth0",
            "--org=123",
            "--users={work}/duplicated.ndjson",
            "--passwords=none",
            *out,
        ],
    }
    return scenarios


def _write_duplicated(path: str) -> None:
    users = [
        {"user_id": "auth0|1", "email": "ann@example.com", "picture": "a.png"},
        {"user_id": "auth0|1", "email": "ann.other@example.com", "picture": "b.png"},
        {"user_id": "auth0|2", "email": "bo@example.com"},
    ]
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(user) + "\n" for user in users))


def _run(tree: str, argv: list[str], out: str, work: str) -> tuple[int, bytes, bytes]:
    os.makedirs(out, exist_ok=True)
    cmd = [sys.executable, "-m", "pipeline"]
    cmd += [arg.replace("{out}", out).replace("{work}", work) for arg in argv]
    env = {**os.environ, "PYTHONPATH": tree}
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def _masked(data: bytes, folder: str) -> bytes:
    """The run's own folder and its wall time (the one thing that differs between two runs)."""
    data = data.replace(folder.encode(), b"{out}")
    data = re.sub(rb'"(plan_)?seconds": [0-9.]+', rb'"\1seconds": 0', data)
    return re.sub(rb"(?m)^seconds +[0-9.]+$", b"seconds 0", data)


def _files(folder: str) -> dict[str, str]:
    found = {}
    for here, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(here, name)
            with open(path, "rb") as handle:
                data = _masked(handle.read(), folder)
            found[os.path.relpath(path, folder)] = hashlib.sha256(data).hexdigest()
    return found


def _generate(users: int, folder: str) -> None:
    subprocess.run(
        [sys.executable, os.path.join(HERE, "gen_auth0.py"), f"--users={users}", f"--out={folder}/auth0"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        [
            sys.executable,
            os.path.join(HERE, "gen_keycloak.py"),
            f"--users={users}",
            f"--out={folder}/keycloak",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _write_export(path: str) -> None:
    """A ZITADEL export document (two orgs, users with hashes, grants), as the suite builds one."""
    sys.path[:0] = [os.path.join(ROOT, "tests", "helpers"), os.path.join(ROOT, "tests", "standins")]
    from zitadel_fixtures import make_export

    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"orgs": make_export((3, 40, 5), ghost_grants=2)["orgs"]}, handle)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="another checkout of this project")
    parser.add_argument("--users", type=int, default=0, help="also a generated export of this size")
    parser.add_argument(
        "--keep", action="store_true", help="keep the runs' folders (to diff them) and say where"
    )
    parser.add_argument("--only", default="", help="only the scenarios whose name contains this")
    args = parser.parse_args()
    before = os.path.abspath(args.before)
    work = tempfile.mkdtemp(prefix="same-outputs-")
    different = 0
    try:
        _write_export(os.path.join(work, "export.json"))
        _write_duplicated(os.path.join(work, "duplicated.ndjson"))
        generated = None
        if args.users:
            generated = os.path.join(work, "generated")
            _generate(args.users, generated)
        for name, argv in _scenarios(generated).items():
            if args.only not in name:
                continue
            results = []
            for label, tree in (("after", ROOT), ("before", before)):
                out = os.path.join(work, "runs", name.replace(" ", "_"), label)
                code, stdout, stderr = _run(tree, argv, out, work)
                files = _files(out)
                printed = _masked(stdout + b"\0" + stderr, out)
                if args.keep:  # beside the run's folder, to diff what it printed
                    with open(out + ".printed.txt", "wb") as handle:
                        handle.write(printed)
                results.append((code, hashlib.sha256(printed).hexdigest(), files))
            (code_a, printed_a, files_a), (code_b, printed_b, files_b) = results
            problems = []
            if code_a != code_b:
                problems.append(f"exit {code_b} -> {code_a}")
            if printed_a != printed_b:
                problems.append("printed output differs")
            changed = sorted(p for p in files_a.keys() | files_b.keys() if files_a.get(p) != files_b.get(p))
            if changed:
                problems.append(f"{len(changed)} files differ: {', '.join(changed[:4])}")
            verdict = "same" if not problems else "DIFFERENT: " + "; ".join(problems)
            print(f"{name}: {len(files_a)} files, exit {code_a}: {verdict}")
            different += bool(problems)
    finally:
        if args.keep:
            print(f"runs kept in {work}/runs/<scenario>/{{after,before}}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
