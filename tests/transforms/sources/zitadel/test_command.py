"""``zitadel-beam migrate zitadel``: an export document → dataOrgsv1 bodies, order, nothing lost."""

from __future__ import annotations

import collections
import functools
import gzip
import json
from pathlib import Path

import orjson
import pytest
from repo_files import ROOT
from zitadel_fixtures import PAT, leaked_secrets, make_export, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name
from zitadel_server import ZitadelServer

from pipeline.cli import main
from pipeline.document_run import LAUNCHER
from transforms.output.manifest import load_manifest
from transforms.push import engine as push_engine
from transforms.sources.zitadel import command
from transforms.zitadel_api.credentials import Credentials

TOKEN = Credentials("token", token=PAT)
# The split as `migrate zitadel` runs it: with the shared run's parts.
split_export = functools.partial(command.split_export, launcher=LAUNCHER)


def _write(path: Path, doc) -> Path:
    path.write_bytes(orjson.dumps(doc))
    return path


def _canon(value) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _inventory(doc: dict) -> dict[tuple[str, str], collections.Counter]:
    """(org id, field) → multiset of items (array fields) or of the one value (singular fields)."""
    out: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    for org in doc["orgs"]:
        for field, value in org.items():
            if field in ("orgId", "org"):
                continue
            for item in value if isinstance(value, list) else [value]:
                out[(org["orgId"], field)][_canon(item)] += 1
    return out


def _reassemble(manifest_path: Path) -> tuple[dict, dict, list[dict]]:
    """Bodies + dead letters of a manifest → (inventory, org objects by org id, bodies with meta)."""
    manifest = json.loads(manifest_path.read_text())
    out: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    orgs: dict[str, list] = collections.defaultdict(list)
    bodies = []
    for entry in manifest["bodies"]:
        body = json.loads((manifest_path.parent / entry["path"]).read_text())
        assert set(body) == {"dataOrgsv1", "timeout"}
        [data_org] = body["dataOrgsv1"]["orgs"]
        orgs[data_org["orgId"]].append(data_org.get("org"))
        for field, value in data_org.items():
            if field in ("orgId", "org"):
                continue
            assert entry["kind"] == "head" or isinstance(value, list), (entry, field)
            for item in value if isinstance(value, list) else [value]:
                out[(data_org["orgId"], field)][_canon(item)] += 1
        bodies.append({**entry, "data_org": data_org})
    dead_path = manifest_path.parent / manifest["dead_letter"]["path"]
    dead = [json.loads(line) for line in dead_path.read_text().splitlines()]
    for letter in dead:
        record = letter["record"]
        out[(record["orgId"], record["field"])][_canon(record["item"])] += 1
    return out, orgs, bodies, dead


def test_split_of_a_12000_user_export_imports_in_order_and_loses_nothing(tmp_path):
    doc = make_export((3, 12_000, 5))
    export = _write(tmp_path / "export.json", doc)
    result = split_export(str(export), str(tmp_path / "out/importBody.json"), batch_size=5000)
    assert result.holds, result.invariant
    manifest_path = Path(result.manifest)

    # Nothing lost or duplicated: bodies + dead letters re-assemble into the input.
    got, orgs, bodies, dead = _reassemble(manifest_path)
    assert got == _inventory(doc)
    assert {o["orgId"]: [o["org"]] for o in doc["orgs"]} == {k: v[:1] for k, v in orgs.items()}
    assert all(all(x == v[0] for x in v) for v in orgs.values())  # every body names its org the same
    assert sorted(d["reason"] for d in dead) == ["user-not-in-export"] * 6  # the ghost grants

    # Shape: at most 5000 users per body; a user's records travel with it; heads come first.
    head_of = {b["org_id"]: b for b in bodies if b["kind"] == "head"}
    user_body: dict[str, int] = {}
    for i, body in enumerate(bodies):
        org = body["data_org"]
        users = org.get("humanUsers", []) + org.get("machineUsers", [])
        assert len(users) <= 5000
        assert body["users"] == len(org.get("humanUsers", []))
        for user in users:
            user_body[user["userId"]] = i
        if body["kind"] == "head":
            assert not users and body["after"] == []
            assert {"labelPolicy", "loginPolicy", "projects", "oidcApps", "loginTexts", "domains"} <= set(org)
        else:
            assert head_of[body["org_id"]]["path"] != body["path"]
            assert bodies.index(head_of[body["org_id"]]) in body["after"]
    assert [b["users"] for b in bodies if b["kind"] == "users"] == [3, 5000, 5000, 2000, 5]
    for i, body in enumerate(bodies):
        org = body["data_org"]
        for field in ("userMetadata", "userGrants", "orgMembers", "projectMembers"):
            for item in org.get(field, []):
                owner = user_body[item.get("id") or item["userId"]]
                if body["kind"] == "users":
                    assert owner == i, (field, item)  # in the same body as its user
                else:
                    assert body["kind"] == "cross" and owner in body["after"]
    grants = next(b for b in bodies if b["kind"] == "grants")
    assert bodies.index(head_of[doc["orgs"][0]["orgId"]]) in grants["after"]  # the granted org first
    first_users = next(b for b in bodies if b["kind"] == "users")
    assert bodies.index(grants) in first_users["after"]  # its user has a grant through it

    # Every body is valid against the test server, imported in the order the manifest allows.
    with ZitadelServer(tokens={PAT}) as server:
        report = push_engine.push_manifest(
            load_manifest(str(manifest_path)), server.url, TOKEN, concurrency=3, progress=False, verify=True
        )
        assert report.ok, report.table()
        assert report.created == 12_008 and report.verify.ok
        assert all(not b.failed for b in report.bodies)
        starts = {log[3]: log for log in server.state.import_log}
        assert len(server.user_ids()) == 12_008
        stored = sum(len(server.user_records(o["orgId"])) for o in doc["orgs"])
        expected = (
            sum(
                len(o.get(f, [])) for o in doc["orgs"] for f in ("userGrants", "orgMembers", "projectMembers")
            )
            - 6
        )
        assert stored == expected
        del starts


def test_split_is_deterministic_and_cli_reports(tmp_path, capsys):
    doc = make_export((4, 30, 2))
    export = _write(tmp_path / "export.json", doc)
    runs = []
    for name in ("a", "b"):
        rc = main(
            [
                "migrate",
                "zitadel",
                f"--export={export}",
                f"--output={tmp_path}/{name}/importBody.json",
                "--batch-size=7",
            ]
        )
        out, err = capsys.readouterr()
        assert rc == 0, err
        assert "accounting:" in out and "[ok]" in out
        assert leaked_secrets(out + err) == []
        manifest = json.loads((tmp_path / name / "importBody.manifest.json").read_text())
        runs.append([(b["sha256"], b["after"], b["kind"]) for b in manifest["bodies"]])
        assert (tmp_path / name / "importBody-00001-of-00012.json").stat().st_mode & 0o777 == 0o600
    assert runs[0] == runs[1]


def _person(user_name: str) -> dict:
    """A human user as an export holds one (the API requires profile names and an e-mail)."""
    return {
        "userName": user_name,
        "profile": {"firstName": "F", "lastName": "L"},
        "email": {"email": user_name},
    }


def test_records_before_their_users_and_gzip_input(tmp_path):
    """A document not in proto order (grants before users), gzip-compressed, snake_case."""
    doc = {
        "orgs": [
            {
                "user_grants": [{"userId": "u2", "projectId": "p"}],
                "user_metadata": [{"id": "u1", "key": "k", "value": "dg=="}],
                "human_users": [{"userId": f"u{i}", "user": _person(f"u{i}@a.io")} for i in range(3)],
                "org_id": "9",
                "org": {"name": "Nine"},
                "projects": [{"projectId": "p", "project": {"name": "P"}}],
            }
        ]
    }
    path = tmp_path / "export.json.gz"
    path.write_bytes(gzip.compress(orjson.dumps(doc)))
    result = split_export(str(path), str(tmp_path / "out/body.json"), batch_size=2)
    assert result.holds and result.dead_count == 0
    _, _, bodies, _ = _reassemble(Path(result.manifest))
    assert [b["kind"] for b in bodies] == ["head", "users", "users"]
    assert bodies[1]["data_org"]["userMetadata"] == [{"id": "u1", "key": "k", "value": "dg=="}]
    assert bodies[2]["data_org"]["userGrants"] == [{"userId": "u2", "projectId": "p"}]


def test_duplicates_and_org_without_id_are_dead_lettered(tmp_path):
    doc = {
        "orgs": [
            {
                "orgId": "1",
                "humanUsers": [
                    {"userId": "a", "user": _person("a@a.io")},
                    {"userId": "a", "user": _person("a2@a.io")},
                    {"userId": "b"},
                ],
                "orgMembers": [{"roles": ["X"]}],
            },
            {
                "org": {"name": "nameless"},
                "humanUsers": [{"userId": "z", "user": _person("z@a.io")}],
                "labelPolicy": {},
            },
        ]
    }
    result = split_export(str(_write(tmp_path / "e.json", doc)), str(tmp_path / "o/b.json"))
    assert result.holds
    assert result.dead_by_reason == {
        "duplicate-user-id": 1,
        "malformed-user": 1,
        "org-without-id": 2,
        "record-without-user": 1,
    }
    assert [b["kind"] for b in result.bodies] == ["head", "users"]


@pytest.mark.parametrize(
    "raw, message",
    [
        (
            b'{"orgs": [{"orgId": "1", "humanUsers": [{"userId": "a", "user": {"userName": "x',
            "truncated or invalid JSON",
        ),
        (b'{"realm": "acme", "users": []}', "not a ZITADEL export"),
    ],
)
def test_cli_gives_one_line_for_a_bad_document(tmp_path, capsys, raw, message):
    export = tmp_path / "export.json"
    export.write_bytes(raw)
    rc = main(["migrate", "zitadel", f"--export={export}", f"--output={tmp_path}/out/importBody.json"])
    out, err = capsys.readouterr()
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("zitadel-beam: error: --export")
    assert "Traceback" not in err
    assert not list((tmp_path / "out").glob(".*tmp*/*"))  # no spill files with hashes left behind


def test_cli_missing_export(tmp_path, capsys):
    rc = main(["migrate", "zitadel", f"--export={tmp_path}/nope.json", f"--output={tmp_path}/o.json"])
    assert rc == 2 and "no such file" in capsys.readouterr().err


def test_server_timeout_on_a_v1_body_splits_it_and_records_follow_their_users(tmp_path):
    doc = make_export((1, 40), ghost_grants=0)
    result = split_export(str(_write(tmp_path / "e.json", doc)), str(tmp_path / "o/b.json"), batch_size=100)
    with ZitadelServer(tokens={PAT}) as server:
        original = server.import_data

        def import_data(request, stop_after=None):
            # The server's timeout elapses half-way through the 40-user body (once: halves are 20).
            users = sum(len(o.get("humanUsers") or []) for o in request.get("dataOrgsv1", {}).get("orgs", []))
            return original(request, users // 2 if users == 40 else stop_after)

        server.import_data = import_data
        report = push_engine.push_manifest(
            load_manifest(result.manifest), server.url, TOKEN, progress=False, verify=True
        )
        assert report.ok, report.table()
        assert any(p["outcome"] == "deadline-exceeded" for b in report.bodies for p in b.parts)
        assert len(server.user_ids()) == 41
        stored = sum(len(server.user_records(o["orgId"])) for o in doc["orgs"])
        assert stored == sum(
            len(o.get(f, [])) for o in doc["orgs"] for f in ("userGrants", "orgMembers", "projectMembers")
        )


def test_multi_processing_matches_in_process(tmp_path):
    """Rendering runs in worker processes: same bodies, byte for byte (see test_portability.py)."""
    import subprocess
    import sys

    export = _write(tmp_path / "export.json", make_export((5, 50, 3)))
    runs = {}
    for name, extra in (
        ("single", []),
        ("multi", ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]),
    ):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pipeline",
                "migrate",
                "zitadel",
                f"--export={export}",
                f"--output={tmp_path}/{name}/importBody.json",
                "--batch-size=20",
                *extra,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        manifest = json.loads((tmp_path / name / "importBody.manifest.json").read_text())
        runs[name] = [(b["sha256"], b["after"]) for b in manifest["bodies"]]
    assert len(runs["single"]) == 10 and runs["multi"] == runs["single"]


def test_mutual_project_grants_and_cross_org_members_import_in_order(tmp_path):
    """Org A grants its project to B and B to A; users of each hold grants through the other's."""

    def user(uid):
        return {
            "userId": uid,
            "user": {
                "userName": f"{uid}@x.io",
                "profile": {"firstName": "F", "lastName": "L"},
                "email": {"email": f"{uid}@x.io"},
            },
        }

    doc = {
        "orgs": [
            {
                "orgId": "1",
                "org": {"name": "A"},
                "projects": [{"projectId": "pa", "project": {"name": "PA"}}],
                "projectGrants": [
                    {"grantId": "ga", "projectGrant": {"projectId": "pa", "grantedOrgId": "2"}}
                ],
                "humanUsers": [user("a1"), user("a2")],
                "userGrants": [{"userId": "a1", "projectId": "pb", "projectGrantId": "gb"}],
                "orgMembers": [{"userId": "b2", "roles": ["ORG_OWNER"]}],
            },
            {
                "orgId": "2",
                "org": {"name": "B"},
                "projects": [{"projectId": "pb", "project": {"name": "PB"}}],
                "projectGrants": [
                    {"grantId": "gb", "projectGrant": {"projectId": "pb", "grantedOrgId": "1"}}
                ],
                "humanUsers": [user("b1"), user("b2")],
                "userGrants": [{"userId": "b1", "projectId": "pa", "projectGrantId": "ga"}],
                "projectGrantMembers": [{"projectId": "pb", "grantId": "gb", "userId": "a2", "roles": ["X"]}],
            },
        ]
    }
    result = split_export(str(_write(tmp_path / "e.json", doc)), str(tmp_path / "o/b.json"), batch_size=1)
    assert result.holds and result.dead_count == 0
    kinds = [(b["kind"], b["org_id"], b["after"]) for b in result.bodies]
    # 0 head A, 1 grants A (needs B), 2 users a1 (grant through B's gb), 3 users a2, 4 cross A (member b2),
    # 5 head B, 6 grants B (needs A), 7 users b1 (grant through ga), 8 users b2, 9 cross B (a2 on gb)
    assert kinds == [
        ("head", "1", []),
        ("grants", "1", [0, 5]),
        ("users", "1", [0, 5, 6]),
        ("users", "1", [0]),
        ("cross", "1", [0, 8]),
        ("head", "2", []),
        ("grants", "2", [0, 5]),
        ("users", "2", [0, 1, 5]),
        ("users", "2", [5]),
        ("cross", "2", [3, 5, 6]),
    ]
    with ZitadelServer(tokens={PAT}) as server:
        report = push_engine.push_manifest(
            load_manifest(result.manifest), server.url, TOKEN, concurrency=4, progress=False
        )
        assert report.ok, report.table()
        assert len(server.user_records("1")) == 2 and len(server.user_records("2")) == 2


def test_spilling_paths_keep_everything(tmp_path, monkeypatch):
    """Tiny buffers: segments flushed often, waiting records spilled to files; same result."""
    from transforms.sources.zitadel import plan as zitadel_export

    doc = make_export((30, 200, 11))
    for org in doc["orgs"]:  # records first, users last: every record waits for its user
        users = org.pop("humanUsers")
        org["humanUsers"] = users
    monkeypatch.setattr(zitadel_export, "_FLUSH_LINES", 3)
    monkeypatch.setattr(zitadel_export, "_MAX_BUFFERED", 10)
    monkeypatch.setattr(zitadel_export, "_MAX_PENDING", 5)
    result = split_export(str(_write(tmp_path / "e.json", doc)), str(tmp_path / "o/b.json"), batch_size=50)
    assert result.holds
    got, _, bodies, dead = _reassemble(Path(result.manifest))
    assert got == _inventory(doc)
    # humans come last here, so each org's machine user opens its first users body
    assert len(dead) == 6 and [b["users"] for b in bodies if b["kind"] == "users"] == [
        30,
        49,
        50,
        50,
        50,
        1,
        11,
    ]
    monkeypatch.undo()
    again = split_export(str(tmp_path / "e.json"), str(tmp_path / "p/b.json"), batch_size=50)
    assert [b["sha256"] for b in again.bodies] == [b["sha256"] for b in result.bodies]


def test_hashes_of_the_export_are_counted_and_checked_against_the_target_config(tmp_path, capsys):
    """migrate zitadel passes hashes through; the manifest and summary say what the target needs."""
    doc = make_export((3, 4), ghost_grants=0)
    users = doc["orgs"][0]["humanUsers"]
    users[0]["user"]["hashedPassword"] = {
        "value": "$argon2id$v=19$m=7168,t=5,p=1$cmFuZG9tc2FsdGlzaGFyZA$"
        "DYojYpnUWSMmTtrkVXyaNWVGxLmGe1n8VJBPDdFkbjU"
    }
    export = _write(tmp_path / "export.json", doc)
    config = tmp_path / "zitadel.yaml"
    config.write_text("SystemDefaults:\n  PasswordHasher:\n    Verifiers: [argon2]\n")
    rc = main(
        [
            "migrate",
            "zitadel",
            f"--export={export}",
            f"--output={tmp_path}/out/importBody.json",
            f"--zitadel-config={config}",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    manifest = json.loads((tmp_path / "out" / "importBody.manifest.json").read_text())
    with_hash = sum(
        1 for org in doc["orgs"] for u in org.get("humanUsers", []) if u["user"].get("hashedPassword")
    )
    assert sum(manifest["password_hashes"].values()) == with_hash
    assert manifest["password_hashes"]["argon2"] == 1
    assert manifest["password_hash_params"]["argon2"]["memory"] == [7168, 7168]
    assert "MinMemory: 7168" in manifest["zitadel_config"]
    assert (
        "warning: the target's config does not cover this export: argon2 memory 7168 < "
        "SystemDefaults.PasswordHasher.Limits.Argon2.MinMemory = 8192" in out
    )


def test_hashed_password_algorithm_of_older_exports_is_dropped(tmp_path):
    """Current servers refuse ``hashedPassword.algorithm`` (it fails the whole request); the
    algorithm is read from the hash string, so the field is dropped and counted."""
    user = {
        "userId": "u1",
        "user": {
            **_person("u1@a.io"),
            "hashedPassword": {"value": "$2b$10$" + "a" * 53, "algorithm": "bcrypt"},
        },
    }
    path = tmp_path / "export.json"
    path.write_bytes(orjson.dumps({"orgs": [{"orgId": "9", "org": {"name": "Nine"}, "humanUsers": [user]}]}))
    result = split_export(str(path), str(tmp_path / "out/body.json"), batch_size=10)
    assert result.holds and result.dead_count == 0
    _, _, bodies, _ = _reassemble(Path(result.manifest))
    written = [u for b in bodies for u in b["data_org"].get("humanUsers", [])]
    assert written == [
        {"userId": "u1", "user": {**_person("u1@a.io"), "hashedPassword": {"value": "$2b$10$" + "a" * 53}}}
    ]
    manifest = orjson.loads(Path(result.manifest).read_bytes())
    assert manifest["counts"].get("hash_algorithm_dropped") == 1, manifest["counts"]
