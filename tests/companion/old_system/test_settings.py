"""companion/old_system/settings.py: each kind's required settings, refused in one line without a secret."""

from __future__ import annotations

import pytest

from companion.old_system.settings import KINDS, Settings, build


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (Settings(kind="ldap", url="https://x"), "one of auth0"),
        (Settings(kind="auth0"), "needs --old-system-url"),
        (Settings(kind="auth0", url="https://t.auth0.com"), "needs --old-system-client-id"),
        (Settings(kind="keycloak", url="http://sso.example.com/realms/a", client_id="c"), "unencrypted"),
        (Settings(kind="http", url="https://app.example.com/check"), "signing key"),
        (Settings(kind="firebase"), "Web API key"),
        (Settings(kind="keycloak", url="https://s/realms/a", client_id="c", realm="x"), "Auth0's connection"),
    ],
)
def test_incomplete_or_unsafe_settings_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        build(settings)


def test_every_kind_builds_and_no_secret_shows_in_a_repr():
    for kind in KINDS:
        settings = Settings(
            kind=kind, url="http://127.0.0.1:1", client_id="c", secret="the-secret", timeout=2.0
        )
        system = build(settings)
        assert system.kind == kind and system.poster.timeout == 2.0
        assert "the-secret" not in repr(settings)
    assert build(Settings(kind="firebase", secret="k")).url.startswith(
        "https://identitytoolkit.googleapis.com/"
    )
