"""transforms/sources/input_shape.py: each reader refuses, from the first records, the exports of
the others, with files written by other projects (tests/data/README.md).

The ZITADEL export document is the one ``zitadel-beam export`` writes from the test server after
zitadel-tools' reference body was imported into it (no export written by ZITADEL is vendored).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from repo_files import REALWORLD, ROOT, ZITADEL_TOOLS
from zitadel_fixtures import PAT
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.sources.input_shape import identify, read_head, shape_problem, shapes, wrong_shape

EXAMPLES = ROOT / "examples" / "auth0"

# Vendored files written by other projects (and the bundled sample), by the shape they are.
FILES = {
    "keycloak-realm": [
        ZITADEL_TOOLS / "keycloak/realm.json",
        REALWORLD / "keycloak/strimzi-kafka-authz-realm.json",
        REALWORLD / "keycloak/lakekeeper-iceberg-realm-argon2.json",
        REALWORLD / "keycloak/jhipster-split-users-0.json",
    ],
    "auth0-users": [
        ZITADEL_TOOLS / "auth0/users.json",
        REALWORLD / "auth0/clerk-auth0-users-api-shape.json",
        REALWORLD / "auth0/workos-tool-auth0-bulk-import-custom_password_hash.json",
    ],
    "auth0-passwords": [
        ZITADEL_TOOLS / "auth0/passwords.json",
        REALWORLD / "auth0/clerk-auth0-password-export-v1.1-array.json",
        REALWORLD / "auth0/zitadel-tools-auth0-passwords-multiline-2023.json",
    ],
    "auth0-mfa": [EXAMPLES / "mfa.json"],
    "import-body": [
        REALWORLD / "zitadel/zitadel-tools-import-data_orgs-2023.json",
        ZITADEL_TOOLS / "auth0/referenceOutput.json",
    ],
    "firebase-users": [ROOT / "examples" / "firebase" / "users.json"],
}


@pytest.fixture(scope="module")
def zitadel_export(tmp_path_factory) -> Path:
    """An export document as `zitadel-beam export` writes it (over HTTP, from the test server)."""
    folder = tmp_path_factory.mktemp("export")
    (folder / "pat").write_text(PAT)
    with ZitadelServer(tokens={PAT}) as server:
        server.import_data(json.loads((ZITADEL_TOOLS / "auth0/referenceOutput.json").read_text()))
        rc = main(
            [
                "export",
                f"--url={server.url}",
                f"--token-file={folder / 'pat'}",
                "--with-passwords",
                f"--output={folder / 'export.json'}",
            ]
        )
    assert rc == 0
    assert json.loads((folder / "export.json").read_text())["orgs"][0]["humanUsers"]
    return folder / "export.json"


def _all_files(zitadel_export: Path) -> dict[str, list[Path]]:
    return {**FILES, "zitadel-export": [zitadel_export]}


def test_every_vendored_file_is_identified_as_what_it_is(zitadel_export):
    found = {
        str(path): identify(read_head(str(path))[0])[0]
        for shape, paths in _all_files(zitadel_export).items()
        for path in paths
    }
    expected = {str(path): shape for shape, paths in _all_files(zitadel_export).items() for path in paths}
    assert found == expected


@pytest.mark.parametrize(
    "head, expected",
    [
        # A Keycloak user list without its realm, a record of no known shape, no JSON: left to the reader.
        (b'{"users": [{"username": "a", "credentials": []}]}', "keycloak-realm"),
        (b'{"username": "a", "createdTimestamp": 1}\n', "auth0-users"),
        (b"not json", "auth0-users"),
        (b"", "auth0-passwords"),
        # One record of the expected shape among the first few is enough to go on.
        (b'{"_id": "x"}\n{"user_id": "auth0|1", "email": "a@example.com"}\n', "auth0-users"),
        # The head may end inside the first record: the keys seen so far decide.
        (b'{"realm": "a", "users": [{"username": "x", "attributes": {"k": ["v', "keycloak-realm"),
        # migrate zitadel also cuts a dataOrgsv1 body.
        (b'{"dataOrgsv1": {"orgs": []}}', "zitadel-export"),
    ],
)
def test_heads_that_are_not_refused(head, expected):
    assert wrong_shape(head, expected) is None


def test_a_cut_realm_is_named_from_its_first_bytes():
    problem = wrong_shape(b'{"id": "1", "realm": "acme", "users": [{"username": "a"', "auth0-users")
    assert problem == (
        'looks like a Keycloak realm export (a "realm" key), not an Auth0 user export; '
        "migrate keycloak --realm reads it"
    )


def test_only_the_head_is_read(tmp_path):
    """A realm whose users go on for megabytes and then break is named from its first 64 KiB."""
    users = ",".join(json.dumps({"username": f"u{i}", "email": f"u{i}@example.com"}) for i in range(40000))
    path = tmp_path / "realm.json.gz"
    path.write_bytes(gzip.compress(f'{{"realm": "big", "users": [{users}, BROKEN'.encode()))
    head, complete = read_head(str(path))
    assert len(head) == 1 << 16 and not complete
    assert shape_problem(str(path), "zitadel-export").startswith("looks like a Keycloak realm export")
    assert shape_problem(str(tmp_path / "missing.json"), "zitadel-export") is None  # the reader says why


# (command line without the file, flag, shapes that command refuses)
READERS = {
    "auth0-users": (["migrate", "auth0", "--passwords=none"], "--users"),
    "auth0-passwords": (["migrate", "auth0", f"--users={ZITADEL_TOOLS / 'auth0/users.json'}"], "--passwords"),
    "auth0-mfa": (
        ["migrate", "auth0", f"--users={ZITADEL_TOOLS / 'auth0/users.json'}", "--passwords=none"],
        "--mfa",
    ),
    "keycloak-realm": (["migrate", "keycloak"], "--realm"),
    "zitadel-export": (["migrate", "zitadel"], "--export"),
    "firebase-users": (["migrate", "firebase"], "--users"),
}
CASES = [
    (reader, shape, index)
    for reader in READERS
    for shape in [*FILES, "zitadel-export"]
    if shape != reader
    for index in range(len(FILES.get(shape, [None])))
]


@pytest.mark.parametrize("reader, shape, index", CASES)
def test_each_reader_refuses_the_other_exports(reader, shape, index, zitadel_export, tmp_path, capsys):
    path = _all_files(zitadel_export)[shape][index]
    command, flag = READERS[reader]
    org = [] if reader == "zitadel-export" else ["--org=123"]
    out = tmp_path / "out"
    rc = main([*command, *org, f"{flag}={path}", f"--output={out}/importBody.json"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith(f"zitadel-beam: error: {flag}"), err
    assert f"looks like {shapes()[shape].what} (" in lines[0]
    assert f"not {shapes()[reader].what};" in lines[0] and lines[0].endswith(shapes()[shape].takes)
    assert not out.exists() or not any(out.rglob("*.json"))  # stopped before anything was written


def test_a_glob_of_users_files_is_refused_for_the_one_that_is_not(tmp_path, capsys):
    (tmp_path / "users-1.json").write_bytes((ZITADEL_TOOLS / "auth0/users.json").read_bytes())
    (tmp_path / "users-2.json").write_bytes((ZITADEL_TOOLS / "auth0/passwords.json").read_bytes())
    rc = main(
        [
            "migrate",
            "auth0",
            "--org=123",
            f"--users={tmp_path}/users-*.json",
            "--passwords=none",
            f"--output={tmp_path}/out/importBody.json",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "users-2.json: looks like an Auth0 password export" in err
    assert "migrate auth0 --passwords reads it" in err


def test_the_right_files_still_convert(tmp_path, capsys):
    rc = main(
        [
            "migrate",
            "auth0",
            "--org=123",
            f"--users={EXAMPLES / 'users.json'}",
            f"--passwords={EXAMPLES / 'passwords.json'}",
            f"--mfa={EXAMPLES / 'mfa.json'}",
            f"--output={tmp_path}/out/importBody.json",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    assert (tmp_path / "out/importBody.manifest.json").exists()
