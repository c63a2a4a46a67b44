"""Loading credentials: one kind at most, refused values never quoted."""

from __future__ import annotations

import pytest
from zitadel_fixtures import PAT, fast_client, hash_pool, leaked_secrets, make_user, zitadel_fixture  # noqa: F401 - pytest fixtures, used by name

from transforms.zitadel_api.credentials import CredentialError, load_credentials


def test_load_credentials_rejects_none_and_several(tmp_path, monkeypatch):
    monkeypatch.delenv("ZITADEL_TOKEN", raising=False)
    token_file = tmp_path / "pat"
    token_file.write_text(PAT + "\n")
    with pytest.raises(CredentialError, match="no credentials"):
        load_credentials()
    with pytest.raises(CredentialError, match="one credential"):
        load_credentials(token_file=str(token_file), key_file=str(token_file))
    with pytest.raises(CredentialError, match="needs --client-secret-file"):
        load_credentials(client_id="importer")
    with pytest.raises(CredentialError, match="lacks"):
        load_credentials(key_file=str(_write(tmp_path / "k.json", '{"type":"serviceaccount"}')))
    assert load_credentials(token_file=str(token_file)).token == PAT
    assert PAT not in repr(load_credentials(token_file=str(token_file)))


def _write(path, text):
    path.write_text(text)
    return path
