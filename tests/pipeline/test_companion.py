"""pipeline/companion.py: the command's flag checks (one line, exit 2, no value shown).

What a running service does is tests/scenarios/test_companion.py's."""

from __future__ import annotations

import os

import pytest
from zitadel_fixtures import PAT

from pipeline.cli import main


@pytest.fixture(name="files")
def files_fixture(tmp_path, monkeypatch):
    monkeypatch.delenv("ZITADEL_COMPANION_SIGNING_KEY", raising=False)
    monkeypatch.setenv("ZITADEL_TOKEN", PAT)
    store = tmp_path / "store.ndjson"
    store.write_text('{"id": "1", "form": "firebase-scrypt"}\n')
    os.chmod(store, 0o600)
    key = tmp_path / "key"
    key.write_text("the-signing-key\n")
    os.chmod(key, 0o600)
    return store, key


def _serve(*args: str) -> list[str]:
    return ["companion", "serve", "--url=http://127.0.0.1:9", *args]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (lambda s, k: _serve(f"--signing-key-file={k}"), "companion serve needs --store"),
        (
            lambda s, k: _serve(f"--store={s}"),
            "needs --signing-key-file (or env ZITADEL_COMPANION_SIGNING_KEY)",
        ),
        (lambda s, k: _serve(f"--store={s}.none", f"--signing-key-file={k}"), "no such file"),
        (
            lambda s, k: _serve(f"--store={s}", f"--signing-key-file={k}", "--listen=nowhere"),
            "expected HOST:PORT",
        ),
        (lambda s, k: ["companion", "setup", "--url=http://127.0.0.1:9"], "companion setup needs --endpoint"),
        (lambda s, k: ["companion", "status"], "companion status needs --store"),
    ],
)
def test_missing_or_bad_flags(files, capsys, argv, message):
    store, key = files
    assert main(argv(store, key)) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("which", ["store", "key"])
def test_files_others_may_read_are_refused(files, capsys, which):
    store, key = files
    os.chmod(store if which == "store" else key, 0o644)
    assert main(_serve(f"--store={store}", f"--signing-key-file={key}", "--listen=127.0.0.1:0")) == 2
    err = capsys.readouterr().err
    assert "chmod 600" in err and "the-signing-key" not in err


def test_a_key_file_of_two_lines_is_refused_without_showing_it(files, capsys):
    store, key = files
    key.write_text("line-one\nline-two\n")
    assert main(_serve(f"--store={store}", f"--signing-key-file={key}")) == 2
    err = capsys.readouterr().err
    assert "not one signing key (not shown)" in err and "line-one" not in err


@pytest.fixture(name="waiting")
def waiting_fixture(files, monkeypatch):
    monkeypatch.delenv("ZITADEL_COMPANION_OLD_SYSTEM_SECRET", raising=False)
    store, key = files
    store.write_text('{"id": "1", "form": "old-system", "login_names": ["a@example.com"]}\n')
    return store, key


_KEYCLOAK = ["--old-system=keycloak", "--old-system-client-id=c"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([], "1 users wait for a check against the old system (form old-system): give --old-system"),
        ([*_KEYCLOAK], "--old-system keycloak needs --old-system-url"),
        ([*_KEYCLOAK, "--old-system-url=http://sso.example.com/realms/a"], "http://sso.example.com: the password would travel unencrypted"),
        (["--old-system=firebase"], "needs --old-system-secret-file (or env ZITADEL_COMPANION_OLD_SYSTEM_SECRET): the project's Web API key"),
        ([*_KEYCLOAK, "--old-system-url=https://s/realms/a", "--old-system-timeout=6s"], "at most half of --timeout (10s)"),
        ([*_KEYCLOAK, "--old-system-url=https://s/realms/a", "--old-system-timeout=soon"], "invalid duration"),
        (["--old-system=auth0", "--old-system-url=https://t.auth0.com"], "needs --old-system-client-id"),
    ],
)  # fmt: skip
def test_an_unsafe_or_incomplete_old_system_is_refused_in_one_line(waiting, capsys, flags, message):
    store, key = waiting
    assert main(_serve(f"--store={store}", f"--signing-key-file={key}", "--listen=127.0.0.1:0", *flags)) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_an_old_system_secret_others_may_read_is_refused_without_showing_it(waiting, capsys, tmp_path):
    store, key = waiting
    secret = tmp_path / "secret"
    secret.write_text("open-secret-value\n")
    os.chmod(secret, 0o644)
    flags = ["--old-system=firebase", f"--old-system-secret-file={secret}"]
    assert main(_serve(f"--store={store}", f"--signing-key-file={key}", *flags)) == 2
    err = capsys.readouterr().err
    assert "--old-system-secret-file" in err and "chmod 600" in err and "open-secret-value" not in err


def test_the_old_systems_secret_may_come_from_the_environment(waiting, capsys, monkeypatch):
    """With the key in env (as Cloud Run's --set-secrets gives it), serve gets past the old system's
    settings and stops only at the listen address given here."""
    store, key = waiting
    monkeypatch.setenv("ZITADEL_COMPANION_OLD_SYSTEM_SECRET", "AIzaFromTheEnvironment")
    flags = ["--old-system=firebase", "--listen=nowhere"]
    assert main(_serve(f"--store={store}", f"--signing-key-file={key}", *flags)) == 2
    err = capsys.readouterr().err
    assert "expected HOST:PORT" in err and "AIza" not in err


def test_import_joins_files_into_the_store_and_says_what_it_added(tmp_path, capsys):
    waiting = tmp_path / "waiting.ndjson"
    waiting.write_text('{"id": "1", "form": "old-system", "login_names": ["ann"]}\n')
    os.chmod(waiting, 0o600)
    store = tmp_path / "store.ndjson"
    assert main(["companion", "import", f"--store={store}", f"--file={waiting}"]) == 0
    out = capsys.readouterr().out
    assert f"{waiting}: 1 users added, 0 already in the store" in out
    assert "waiting for their first sign-in: 1" in out
    assert main(["companion", "status", f"--store={store}"]) == 0
    assert "of which checked against the old system: 1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["companion", "import", "--store=s.ndjson"], "companion import needs --file"),
        (["companion", "import", "--file=w.ndjson"], "companion import needs --store"),
        (["companion", "status", "--store=s.ndjson", "--file=w.ndjson"], "companion status takes no --file"),
        (
            ["companion", "import", "--store=s.ndjson", "--file=missing.ndjson"],
            "missing.ndjson: no such file",
        ),
    ],
)
def test_import_flag_problems(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s.ndjson").exists()
