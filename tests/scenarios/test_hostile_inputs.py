"""Hostile and unlucky inputs through the real CLI: every case ends in counted dead letters with a
reason (the accounting holding, every other user written) or in exit 2 with one line, never a
traceback, and no input file is changed (sha256 before and after). docs/inputs.md describes the
rules; transforms/sources/input_stream.py and transforms/sources/json_units.py implement them.

Cases run through ``pipeline.cli.main`` in-process (an exception would fail the test; stderr is
captured at the file-descriptor level, so log lines count too); refusals must print exactly one
line. A few refusals of each kind run as a separate process instead, as a user would see them. Then a property-based test mutates the
real-world exports of tests/data and checks the accounting.
"""

from __future__ import annotations

import collections
import ctypes
import dataclasses
import gzip
import hashlib
import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from repo_files import ROOT

from pipeline.cli import main
from transforms.mapping.validate import Reason

REPO = ROOT
REALWORLD = REPO / "tests" / "data" / "realworld"
BOM8 = b"\xef\xbb\xbf"


# --------------------------------------------------------------------------- inputs


def profile(i: int, **extra) -> dict:
    return {
        "user_id": f"auth0|{i:04d}",
        "email": f"user{i}@example.com",
        "given_name": f"Given{i}",
        "family_name": f"Family{i}",
        **extra,
    }


def ndjson(records) -> bytes:
    return b"".join((r if isinstance(r, bytes) else orjson.dumps(r)) + b"\n" for r in records)


def array(records) -> bytes:
    return b"[" + b",\n".join(r if isinstance(r, bytes) else orjson.dumps(r) for r in records) + b"]"


def stream(records) -> bytes:
    return b"\n".join(orjson.dumps(r, option=orjson.OPT_INDENT_2) for r in records) + b"\n"


def deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


def auth0(users: bytes | Callable[[Path], Path], *flags: str, name: str = "users.json"):
    """A builder: writes the users file (bytes, or a function making the path) and gives argv."""

    def build(tmp: Path) -> list[str]:
        if callable(users):
            path = users(tmp)
        else:
            path = tmp / "in" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(users)
        return ["auth0", "--org=123", f"--users={path}", "--passwords=none", *flags]

    return build


def keycloak(files: dict[str, bytes], *flags: str, realm: str = "in"):
    def build(tmp: Path) -> list[str]:
        for name, data in files.items():
            path = tmp / "in" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        target = tmp / realm if realm == "in" else tmp / "in" / realm
        return ["keycloak", "--org=123", f"--realm={target}", *flags]

    return build


def kc_user(i: int) -> dict:
    return {
        "id": f"id-{i}",
        "username": f"user{i}",
        "enabled": True,
        "email": f"user{i}@example.com",
        "firstName": f"F{i}",
        "lastName": f"L{i}",
    }


def realm(users, name: str = "acme") -> dict:
    return {"realm": name, "enabled": True, "users": users}


def zitadel(data: bytes):
    def build(tmp: Path) -> list[str]:
        path = tmp / "in" / "export.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return ["zitadel", f"--export={path}"]

    return build


def zitadel_export(n: int) -> dict:
    person = [
        {
            "userId": f"u{i}",
            "user": {
                "userName": f"u{i}@a.io",
                "profile": {"firstName": "F", "lastName": "L"},
                "email": {"email": f"u{i}@a.io"},
            },
        }
        for i in range(n)
    ]
    return {"orgs": [{"orgId": "9", "org": {"name": "Nine"}, "humanUsers": person}]}


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def cut_gz(data: bytes) -> bytes:
    packed = gz(data)
    return packed[: len(packed) // 2]


def bad_crc(data: bytes) -> bytes:
    packed = bytearray(gz(data))
    packed[-6] ^= 0xFF  # the CRC32 in the trailer
    return bytes(packed)


def bad_header(data: bytes) -> bytes:
    packed = bytearray(gz(data))
    packed[2] = 9  # compression method: only 8 (deflate) exists
    return bytes(packed)


def gz_file(data: bytes, name: str = "users.json.gz"):
    def make(tmp: Path) -> Path:
        path = tmp / "in" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    return make


def symlink_to_users(tmp: Path) -> Path:
    target = tmp / "in" / "real.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(ndjson(profile(i) for i in range(3)))
    link = tmp / "in" / "link.json"
    link.symlink_to(target)
    return link


def dangling_symlink(tmp: Path) -> Path:
    (tmp / "in").mkdir(parents=True, exist_ok=True)
    link = tmp / "in" / "gone.json"
    link.symlink_to(tmp / "in" / "nowhere.json")
    return link


def directory(tmp: Path) -> Path:
    path = tmp / "in" / "users.json"
    path.mkdir(parents=True)
    return path


def unreadable(tmp: Path) -> Path:
    path = tmp / "in" / "users.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(ndjson(profile(i) for i in range(3)))
    path.chmod(0)
    return path


def eio_file(tmp: Path) -> Path:
    """A file no one can read, root included: /proc/self/mem answers EIO at offset 0."""
    (tmp / "in").mkdir(parents=True, exist_ok=True)
    link = tmp / "in" / "users.json"
    link.symlink_to("/proc/self/mem")
    return link


def odd_path(tmp: Path) -> Path:
    path = tmp / "in" / "Export mit Leerzeichen" / "utilisateurs été 東京.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(array(profile(i) for i in range(4)))
    return path


def custom_hash_profile(i: int, cost: int) -> dict:
    salt_and_hash = "N9qo8uLOickgx2ZMRZoMye" + "IjZAgcfl7p92ldGxad68LJZdL17lhWy"
    return {
        "email": f"bulk{i}@example.com",
        "given_name": "Bulk",
        "family_name": f"User{i}",
        "custom_password_hash": {
            "algorithm": "bcrypt",
            "hash": {"value": f"$2b${cost:02d}${salt_and_hash}"},
        },
    }


# --------------------------------------------------------------------------- the table


@dataclasses.dataclass
class Case:
    name: str
    build: Callable[[Path], list[str]]
    refused: str = ""  # exit 2 with one line holding this text
    rc: int = 0
    written: int | None = None
    dead: dict[str, int] = dataclasses.field(default_factory=dict)  # reason → lines
    counters: dict[str, int] = dataclasses.field(default_factory=dict)
    stderr: str = ""  # a line stderr must hold (in-process runs: checked with capfd)
    lines_per_record: bool = False  # dead-letter lines name distinct records
    subprocess: bool = False  # refusals: also run as a separate process (the stderr a user sees)


USERS = [profile(i) for i in range(10)]
SURROGATE = b'{"user_id": "auth0|bad", "email": "bad@example.com", "name": "\\ud800"}'
TWO_HUNDRED = [profile(i) for i in range(200)]
CUT_LINE_101 = [SURROGATE] + [orjson.dumps(p) for p in TWO_HUNDRED[1:100]]
CUT_LINE_101 += [orjson.dumps(TWO_HUNDRED[100])[:25]] + [orjson.dumps(p) for p in TWO_HUNDRED[101:]]

CASES = [
    # 0-byte and blank files (docs/inputs.md: an empty users export is refused, passwords not)
    Case("zero-byte users", auth0(b""), refused="the file is empty (0 bytes)", subprocess=True),
    Case("white space only", auth0(b" \n\n\t\n"), refused="holds only white space"),
    Case(
        "zero-byte passwords file is read as none",
        lambda tmp: auth0(ndjson(USERS))(tmp)[:-1] + [f"--passwords={_write(tmp / 'in/pw.json', b'')}"],
        written=10,
    ),
    # what is not an export at all
    Case("random bytes", auth0(bytes(range(256)) * 40), refused="looks like binary data", subprocess=True),
    Case(
        "HTML error page", auth0(b"<!DOCTYPE html><html><head><title>502</title>"), refused="looks like HTML"
    ),
    Case("a ZIP archive", auth0(b"PK\x03\x04" + bytes(60)), refused="ZIP archive"),
    Case("gzip data without .gz", auth0(gz(ndjson(USERS))), refused="rename it to .gz"),
    Case("only NUL bytes", auth0(b"\x00" * 4096), refused="UTF-16 or UTF-32"),
    Case(
        "an array whose first element is garbage",
        auth0(b"[nope, " + orjson.dumps(USERS[0]) + b"]"),
        refused="not one JSON record",
    ),
    Case(
        "NUL bytes in one line",
        auth0(ndjson(USERS[:5] + [b"\x00\x00\x00\x00"] + USERS[5:])),
        written=10,
        dead={Reason.MALFORMED_JSON: 1},
    ),
    # byte-order marks and UTF-16/32
    Case("UTF-8 BOM, NDJSON", auth0(BOM8 + ndjson(USERS)), written=10),
    Case("UTF-8 BOM, array", auth0(BOM8 + array(USERS)), written=10),
    Case("UTF-8 BOM, multi-line stream", auth0(BOM8 + stream(USERS)), written=10),
    Case("UTF-8 BOM, gzip", auth0(gz_file(gz(BOM8 + ndjson(USERS)))), written=10),
    Case(
        "UTF-16 LE with BOM, array",
        auth0(array(USERS).decode().encode("utf-16")),  # Python writes LE with its BOM
        written=10,
        counters={"inputs.decoded.utf-16-le": 1},
    ),
    Case(
        "UTF-16 BE with BOM, NDJSON",
        auth0(b"\xfe\xff" + ndjson(USERS).decode().encode("utf-16-be")),
        written=10,
        counters={"inputs.decoded.utf-16-be": 1},
    ),
    Case(
        "UTF-32 LE with BOM",
        auth0(b"\xff\xfe\x00\x00" + ndjson(USERS).decode().encode("utf-32-le")),
        written=10,
        counters={"inputs.decoded.utf-32-le": 1},
    ),
    Case("UTF-16 without BOM", auth0(ndjson(USERS).decode().encode("utf-16-le")), refused="byte-order mark"),
    # damaged gzip
    Case(
        "gzip cut at half its bytes",
        auth0(gz_file(cut_gz(ndjson(profile(i) for i in range(2000))))),
        rc=1,
        dead={Reason.UNREADABLE_INPUT: 1},
        stderr="users.json.gz was cut short or is damaged",
    ),
    Case(
        "gzip cut, --allow-partial",
        auth0(gz_file(cut_gz(ndjson(profile(i) for i in range(2000)))), "--allow-partial"),
        rc=0,
        dead={Reason.UNREADABLE_INPUT: 1},
    ),
    Case(
        # Beam's decompressor returned only the first 16 MiB to a read() without a size: the
        # rest of a larger .gz was lost without a word. Read in blocks now.
        "gzip larger than 16 MiB decompressed is read to its end",
        auth0(gz_file(gz(ndjson(profile(i, pad="p" * 900) for i in range(20_000))))),
        written=20_000,
    ),
    Case(
        "gzip with a bad CRC",
        auth0(gz_file(bad_crc(ndjson(USERS)))),
        rc=1,
        written=10,  # the CRC is checked at the end: every record was read, then the error
        dead={Reason.UNREADABLE_INPUT: 1},
        stderr="was cut short or is damaged",
    ),
    Case(
        "gzip with a broken header",
        auth0(gz_file(bad_header(ndjson(USERS)))),
        refused="damaged gzip data",
        subprocess=True,
    ),
    # characters and nesting cost one record
    Case(
        "lone surrogate first, line 101 cut",
        auth0(ndjson(CUT_LINE_101)),
        written=198,
        dead={Reason.MALFORMED_JSON: 2},
    ),
    Case(
        "invalid UTF-8 in one line",
        auth0(ndjson(USERS[:3] + [b'{"user_id": "auth0|x", "email": "\xff\xfe@example.com"}'] + USERS[3:])),
        written=10,
        dead={Reason.MALFORMED_JSON: 1},
    ),
    Case(
        # ijson's C reader turns a lone surrogate escape into "?" (docs/inputs.md): the record
        # is read, its name holds "?", and nothing after it is lost.
        "lone surrogate in an array element",
        auth0(array(USERS[:4] + [SURROGATE] + USERS[4:])),
        written=11,
    ),
    Case(
        "invalid UTF-8 in an array element ends the file there, counted",
        auth0(array(USERS[:4] + [b'{"user_id": "auth0|x", "email": "\xff@example.com"}'] + USERS[4:])),
        written=4,
        dead={Reason.UNREADABLE_INPUT: 1},
    ),
    Case(
        "50,000 deep as the first NDJSON line",
        auth0(ndjson([deep(50_000)] + USERS)),
        written=10,
        dead={Reason.TOO_DEEP: 1},
    ),
    Case(
        "50,000 deep as the 11th array element",
        auth0(array(USERS + [deep(50_000)] + [profile(10)])),
        written=11,
        dead={Reason.TOO_DEEP: 1},
    ),
    Case(
        "600 deep inside a profile (orjson accepts it, the limit does not)",
        auth0(ndjson(USERS + [orjson.dumps(profile(10))[:-1] + b', "x": ' + deep(600) + b"}"])),
        written=10,
        dead={Reason.TOO_DEEP: 1},
    ),
    Case(
        "an integer of 70,000 digits in an array (ijson would crash the process)",
        auth0(
            array(
                USERS[:3]
                + [b'{"user_id": "auth0|n", "email": "n@example.com", "n": ' + b"7" * 70_000 + b"}"]
                + USERS[3:]
            )
        ),
        written=10,
        dead={Reason.MALFORMED_JSON: 1},
    ),
    Case(
        "an integer of 70,000 digits in an NDJSON line",
        auth0(
            ndjson(
                USERS[:3]
                + [b'{"user_id": "auth0|n", "email": "n@example.com", "n": ' + b"7" * 70_000 + b"}"]
                + USERS[3:]
            )
        ),
        written=10,
        dead={Reason.MALFORMED_JSON: 1},
    ),
    Case(
        "a 20 MB line",
        auth0(ndjson(USERS + [profile(10, blob="x" * 20_000_000)])),
        written=11,
    ),
    Case(
        "duplicate keys: the last one wins, as in every JSON parser",
        auth0(
            ndjson(
                USERS + [b'{"user_id": "auth0|d", "email": "first@example.com", "email": "last@example.com"}']
            )
        ),
        written=11,
    ),
    # paths
    Case("a symlink to an export", auth0(symlink_to_users), written=3),
    Case("a dangling symlink", auth0(dangling_symlink), refused="no such file"),
    Case("a directory given as the file", auth0(directory), refused="is a directory"),
    Case("a file of mode 000", auth0(unreadable), refused="cannot be read"),
    # The same refusal where mode 000 cannot show it (tests running as root read such files).
    Case(
        "a file that fails every read (EIO)",
        auth0(eio_file),
        refused="cannot be read (Input/output error)",
        subprocess=True,
    ),
    Case("spaces and non-ASCII in the path", auth0(odd_path), written=4),
    Case(
        "a plain array cut part-way", auth0(array(USERS)[:-40]), written=9, dead={Reason.UNREADABLE_INPUT: 1}
    ),
    # one dead-letter line per rejected input record (the hash travels inside the profile)
    Case(
        "bulk-import profiles whose embedded hash is refused",
        auth0(ndjson([custom_hash_profile(i, 4) for i in range(3)] + [custom_hash_profile(9, 10)])),
        written=1,
        dead={Reason.BCRYPT_COST: 3},
        counters={"auth0.custom_hash_unused.profile-rejected": 3},
        lines_per_record=True,
    ),
    Case(
        "refused embedded hash, --on-unsupported-hash=import-without-password keeps it in a file",
        auth0(
            ndjson([custom_hash_profile(i, 4) for i in range(2)]),
            "--on-unsupported-hash=import-without-password",
        ),
        written=2,
        dead={Reason.BCRYPT_COST: 2},
    ),
    # Keycloak
    Case(
        "Keycloak realm with a UTF-8 BOM",
        keycloak(
            {"realm.json": BOM8 + orjson.dumps(realm([kc_user(i) for i in range(5)]))}, realm="realm.json"
        ),
        written=5,
    ),
    Case(
        "Keycloak split files with UTF-8 BOMs",
        keycloak(
            {
                "acme-realm.json": BOM8 + orjson.dumps({"realm": "acme", "enabled": True}),
                "acme-users-0.json": BOM8 + orjson.dumps(realm([kc_user(i) for i in range(3)])),
                "acme-users-1.json": BOM8 + orjson.dumps(realm([kc_user(i) for i in range(3, 6)])),
            }
        ),
        written=6,
    ),
    Case(
        "Keycloak split export with a gap",
        keycloak(
            {
                "acme-realm.json": orjson.dumps({"realm": "acme", "enabled": True}),
                "acme-users-0.json": orjson.dumps(realm([kc_user(0)])),
                "acme-users-2.json": orjson.dumps(realm([kc_user(2)])),
            }
        ),
        refused="acme-users-1.json is missing",
        subprocess=True,
    ),
    Case(
        "Keycloak split export with a gap, --allow-missing-parts",
        keycloak(
            {
                "acme-realm.json": orjson.dumps({"realm": "acme", "enabled": True}),
                "acme-users-0.json": orjson.dumps(realm([kc_user(0)])),
                "acme-users-2.json": orjson.dumps(realm([kc_user(2)])),
            },
            "--allow-missing-parts",
        ),
        written=2,
    ),
    Case(
        "Keycloak realm in UTF-16 LE with BOM",
        keycloak(
            {"realm.json": orjson.dumps(realm([kc_user(i) for i in range(4)])).decode().encode("utf-16")},
            realm="realm.json",
        ),
        written=4,
        counters={"inputs.decoded.utf-16-le": 1},
    ),
    Case(
        "Keycloak realm .gz cut short",
        keycloak(
            {"realm.json.gz": cut_gz(orjson.dumps(realm([kc_user(i) for i in range(3000)])))},
            realm="realm.json.gz",
        ),
        rc=1,
        dead={Reason.UNREADABLE_INPUT: 1},
        stderr="realm.json.gz was cut short or is damaged",
    ),
    Case(
        "Keycloak user nested 50,000 deep",
        keycloak(
            {
                "realm.json": b'{"realm": "acme", "users": ['
                + b",".join([orjson.dumps(kc_user(i)) for i in range(10)] + [deep(50_000)])
                + b"]}"
            },
            realm="realm.json",
        ),
        written=10,
        dead={Reason.TOO_DEEP: 1},
    ),
    Case(
        "Keycloak user with an integer of 70,000 digits",
        keycloak(
            {
                "realm.json": b'{"realm": "acme", "users": ['
                + b",".join(
                    [orjson.dumps(kc_user(i)) for i in range(5)]
                    + [b'{"id": "x", "notBefore": ' + b"9" * 70_000 + b"}"]
                )
                + b"]}"
            },
            realm="realm.json",
        ),
        written=5,
        dead={Reason.MALFORMED_JSON: 1},
    ),
    Case(
        "Keycloak realm of random bytes",
        keycloak({"realm.json": bytes(range(256)) * 4}, realm="realm.json"),
        refused="looks like binary data",
    ),
    # ZITADEL export
    Case("ZITADEL export with a UTF-8 BOM", zitadel(BOM8 + orjson.dumps(zitadel_export(3))), written=3),
    Case(
        "ZITADEL export of random bytes",
        zitadel(bytes(range(256)) * 4),
        refused="not a JSON document: looks like binary data",
        subprocess=True,
    ),
]


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _sha256_tree(root: Path) -> dict[str, str]:
    sums = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and os.access(path, os.R_OK):
            sums[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_symlink():
            sums[str(path)] = "link:" + os.readlink(path)
    return sums


def _invariant_holds(manifest: dict) -> bool:
    return (
        bool(manifest["invariant"]["holds"]) if "invariant" in manifest else bool(manifest.get("holds", True))
    )


# Linux capabilities that let root read any file (linux/capability.h), and prctl's request that
# removes one from the bounding set: an exec'd root process then lacks it.
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH, _PR_CAPBSET_DROP = 1, 2, 24


def _without_root_file_access() -> None:
    """``preexec_fn`` for a child run as root that must obey file modes like any other user.

    Switching the child to ``nobody`` would not do: the interpreter and the virtual environment
    may sit in a home folder only root may enter. Dropping the two capabilities keeps root's id
    and takes away only its reading of files whose mode forbids it, in the child alone.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input(case: Case, tmp_path, capfd):
    # Root reads a mode-000 file; there the command runs in a child without root's file access.
    drop_root = case.name == "a file of mode 000" and os.geteuid() == 0
    argv = case.build(tmp_path)
    output = tmp_path / "out" / "importBody.json"
    argv = ["migrate", *argv, f"--output={output}"]
    before = _sha256_tree(tmp_path / "in")
    manifest_path = output.with_name("importBody.manifest.json")
    if case.refused:
        if case.subprocess or drop_root:
            proc = subprocess.run(
                [sys.executable, "-m", "pipeline", *argv],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=300,
                preexec_fn=_without_root_file_access if drop_root else None,
            )
            rc, err = proc.returncode, proc.stderr
        else:
            rc = main(argv)
            err = capfd.readouterr().err
        lines = err.strip().splitlines()
        assert rc == 2, err
        assert "Traceback" not in err
        assert len(lines) == 1, err
        assert lines[0].startswith("zitadel-beam: error: ") and case.refused in lines[0], lines[0]
        assert not manifest_path.exists()
    else:
        rc = main(argv)
        err = capfd.readouterr().err
        assert "Traceback" not in err
        assert rc == case.rc, err
        if case.stderr:
            assert case.stderr in err
        manifest = json.loads(manifest_path.read_text())
        counts = manifest["counts"]
        assert manifest["invariant"]["holds"], manifest["invariant"]
        if case.written is not None:
            written = counts["human_users"] if argv[1] == "zitadel" else counts.get("users_written", 0)
            assert written == case.written
        dead_path = output.parent / manifest["dead_letter"]["path"]
        letters = (
            [json.loads(line) for line in dead_path.read_text().splitlines()] if dead_path.exists() else []
        )
        reasons = collections.Counter(d["reason"] for d in letters)
        if case.name.startswith("refused embedded hash"):
            # The profiles are written without password; their hashes are kept in the dead
            # letters (that is where they are kept) and listed as passwordless users.
            assert {d["source"] for d in letters} == {"auth0-custom-hash"}
        assert dict(reasons) == case.dead, letters
        for d in letters:
            assert d["detail"], d
        if case.lines_per_record:
            records = [json.dumps(d["record"], sort_keys=True) for d in letters]
            assert len(records) == len(set(records))
        for name, value in case.counters.items():
            assert counts.get(name) == value, (name, counts)
    assert _sha256_tree(tmp_path / "in") == before


def test_200000_deep_records_keep_memory_bounded(tmp_path):
    """A record nested 200,000 deep as the first NDJSON line and as the 11th array element: a
    too-deep dead letter each, and the run's peak RSS stays far below 2 GiB (it was > 20 GB)."""
    nd = _write(tmp_path / "in" / "deep.ndjson", ndjson([deep(200_000)] + USERS))
    arr = _write(tmp_path / "in" / "deep-array.json", array(USERS + [deep(200_000)] + [profile(10)]))
    code = (
        "import resource, sys\n"
        "from pipeline.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "print('MAXRSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
        "sys.exit(rc)\n"
    )
    for users, written in ((nd, 10), (arr, 11)):
        output = tmp_path / users.stem / "importBody.json"
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                code,
                "migrate",
                "auth0",
                "--org=1",
                f"--users={users}",
                "--passwords=none",
                f"--output={output}",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
        peak_kb = int(proc.stdout.rsplit("MAXRSS_KB", 1)[1].split()[0])
        assert peak_kb < 2 * 1024 * 1024, peak_kb
        manifest = json.loads(output.with_name("importBody.manifest.json").read_text())
        assert manifest["counts"]["users_written"] == written
        assert manifest["counts"]["dead_letter.auth0-profile.too-deep"] == 1
        print(f"{users.name}: peak RSS {peak_kb / 1024:.0f} MiB")
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 2 * 1024 * 1024


# --------------------------------------------------------------------------- property-based

SAMPLES = [
    (REALWORLD / "auth0" / "clerk-auth0-users-api-shape.json", "users"),
    (REALWORLD / "auth0" / "workos-tool-auth0-bulk-import-custom_password_hash.json", "users"),
    (REALWORLD / "auth0" / "clerk-auth0-password-export-v1.1-array.json", "passwords"),
    (REALWORLD / "auth0" / "zitadel-tools-auth0-passwords-multiline-2023.json", "passwords"),
]


@st.composite
def mutated(draw):
    """A real-world export with a few byte flips, a cut, an insertion or a duplicated line."""
    path, role = draw(st.sampled_from(SAMPLES))
    data = bytearray(path.read_bytes())
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "duplicate-line", "delete"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        else:
            lines = bytes(data).split(b"\n")
            i = at % len(lines)
            lines.insert(i, lines[i])
            data = bytearray(b"\n".join(lines))
    return role, path.name, bytes(data), draw(st.booleans())


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(mutated())
def test_mutated_real_world_exports_stay_accounted(tmp_path_factory, sample):
    role, name, data, compress = sample
    tmp = tmp_path_factory.mktemp("mutated")
    path = _write(tmp / "in" / (name + (".gz" if compress else "")), gz(data) if compress else data)
    users = path if role == "users" else _write(tmp / "in" / "users.json", ndjson(USERS))
    passwords = path if role == "passwords" else "none"
    output = tmp / "out" / "importBody.json"
    before = _sha256_tree(tmp / "in")
    try:
        rc = main(
            [
                "migrate",
                "auth0",
                "--org=1",
                f"--users={users}",
                f"--passwords={passwords}",
                f"--output={output}",
            ]
        )
    except SystemExit as exit_:  # argparse; never expected here
        pytest.fail(f"exit {exit_.code}")
    assert rc in (0, 1, 2)
    manifest_path = output.with_name("importBody.manifest.json")
    if rc == 2:
        assert not manifest_path.exists()
    else:
        manifest = json.loads(manifest_path.read_text())
        assert manifest["invariant"]["holds"], manifest["invariant"]
        if rc == 1:  # only when every user read was dead-lettered
            assert manifest["counts"].get("users_written", 0) == 0 and manifest["dead_letter"]["count"]
    assert _sha256_tree(tmp / "in") == before
