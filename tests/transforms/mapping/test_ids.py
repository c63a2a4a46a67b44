"""transforms/mapping/ids.py: stable derived user ids and the ``--email-fallback`` address."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from transforms.common.reasons import Reason
from transforms.mapping.ids import (
    NAMESPACE,
    EmailChoice,
    auth0_user_id,
    check_template,
    email_or_fallback,
    fallback_email,
    keycloak_user_id,
)


def test_auth0_id_is_the_uuid5_of_the_folded_email():
    derived = auth0_user_id(" Ann@Example.com ")
    assert derived == auth0_user_id("ann@example.com")
    assert derived == "auth0-import|" + str(uuid.uuid5(NAMESPACE, "auth0\nann@example.com"))
    assert auth0_user_id("bob@example.com") != derived


def test_keycloak_id_is_per_realm_and_case_insensitive_in_the_username():
    assert keycloak_user_id("acme", "Bob") == keycloak_user_id("acme", " bob ")
    assert keycloak_user_id("acme", "bob") != keycloak_user_id("other", "bob")
    assert keycloak_user_id("acme", "bob").startswith("keycloak-import|")


def test_ids_do_not_look_like_real_ones_and_fit_zitadel():
    long_name = "x" * 500
    for derived in (auth0_user_id(long_name + "@example.com"), keycloak_user_id("r" * 300, long_name)):
        assert len(derived) <= 52
        provider, _, rest = derived.partition("|")
        assert provider.endswith("-import")
        uuid.UUID(rest)  # a UUID after the bar


def test_ids_are_the_same_in_another_process():
    # No hash() and no randomness: a worker or a later run derives the same id.
    code = "from transforms.mapping.ids import auth0_user_id as f; print(f('Ann@Example.com'))"
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert other.stdout.strip() == auth0_user_id("ann@example.com")


@pytest.mark.parametrize(
    "template, problem",
    [
        ("{username}@users.example.com", None),
        ("user-{id}@example.com", None),
        ("{username}.{id}@example.com", None),
        ("nobody@example.com", "needs {username} or {id} so that addresses differ"),
        ("{name}@example.com", "unknown placeholder {name} (use {username}, {id})"),
        ("{username@example.com", "--email-fallback '{username@example.com': "),
    ],
)
def test_check_template(template, problem):
    found = check_template(template)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found and found.startswith("--email-fallback ")


def test_fallback_email_fills_the_template_or_gives_none():
    template = "{username}@users.example.com"
    assert fallback_email(template, " ann ", "id-1") == "ann@users.example.com"
    assert fallback_email("u-{id}@example.com", None, "id-1") == "u-id-1@example.com"
    assert fallback_email(template, "with space", "id-1") is None  # not a valid address
    assert fallback_email(template, None, "id-1") is None  # an empty local part
    assert fallback_email(template, "ann\x07", "id-1") is None  # a control character


def test_email_or_fallback_is_one_rule_for_every_source():
    # The user's own address wins; the template's only where there is none (then from_fallback).
    assert email_or_fallback("ann@example.com", "{id}@x.example", "ann", "u1") == EmailChoice(
        "ann@example.com", False
    )
    assert email_or_fallback("", "{username}@x.example", "ann", "u1") == EmailChoice("ann@x.example", True)
    # No template: the dead letter says which flag gives one, and where the table looked.
    reason, text = email_or_fallback("", None, "ann", "u1", " in fields.email")
    assert reason == Reason.MISSING_EMAIL
    assert text == "no e-mail address in fields.email (--email-fallback TEMPLATE gives one)"
    # A template that gives no valid address for this user (no user name to fill in).
    reason, text = email_or_fallback("", "{username}@x.example", None, "u1")
    assert reason == Reason.INVALID_EMAIL_FALLBACK and "'{username}@x.example'" in text
