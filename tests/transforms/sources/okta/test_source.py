"""Okta's record kind and the first look at its export (transforms/sources/okta/source.py)."""

from __future__ import annotations

from transforms.sources.okta.source import KIND, column, okta_csv


def test_blocked_reads_the_status_of_a_record():
    blocked = KIND.records["okta-user"].blocked
    assert blocked(b'{"id":"00u1","status":"SUSPENDED"}') and blocked(b'{"status":"deprovisioned"}')
    assert not blocked(b'{"id":"00u1","status":"PASSWORD_EXPIRED"}') and not blocked(b"{}")
    assert KIND.records["okta-user"].ids({"id": "00u1"}, None) == ["00u1"]
    assert KIND.records["okta-user"].ids({"id": " "}, None) is None


def test_an_okta_header_is_told_by_its_login_and_email_columns():
    assert okta_csv(b"id,status,login,email,firstName\n00u1,...")
    assert okta_csv(b"\xef\xbb\xbfOkta username,Primary email,User fullname\r\n")
    assert not okta_csv(b"user_id,email,name\n")
    assert not okta_csv(b'[{"login": "a", "email": "b"}]')


def test_columns_are_read_by_name_without_regard_to_case():
    assert column(" Okta User Status ") == "status" and column("githubHandle") == "githubHandle"
