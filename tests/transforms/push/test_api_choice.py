"""``--api`` (transforms/push/api_choice.py): which way users go in, and one line on why."""

from __future__ import annotations

import pytest
import zitadel_user_v2_create as creation
from zitadel_fixtures import PAT, zitadel_fixture  # noqa: F401 - pytest fixture, used by name

from transforms.common.errors import ConfigError
from transforms.push.api_choice import ADMIN_IMPORT, USER_V2, open_client
from transforms.zitadel_api.credentials import Credentials

TOKEN = Credentials("token", token=PAT)


def test_auto_takes_the_admin_import_where_it_answers(zitadel):
    client, api, line = open_client(zitadel.url, TOKEN, "auto")
    assert api == ADMIN_IMPORT and line is None  # the output of earlier releases, unchanged
    assert open_client(zitadel.url, TOKEN, ADMIN_IMPORT)[1:] == (ADMIN_IMPORT, None)
    assert open_client(zitadel.url, TOKEN, USER_V2)[1:] == (USER_V2, None)
    assert [p for p, _ in zitadel.requests].count("/admin/v1/events/_search") == 2


def test_auto_takes_the_user_service_without_the_admin_api(zitadel):
    zitadel.admin_api = False
    _, api, line = open_client(zitadel.url, TOKEN, "auto")
    assert api == USER_V2 and line is not None and "the server has no admin API (POST" in line
    with pytest.raises(ConfigError, match="does not answer like a ZITADEL admin API"):
        open_client(zitadel.url, TOKEN, ADMIN_IMPORT)


def test_a_bad_credential_is_one_line_either_way(zitadel):
    bad = Credentials("token", token="not-a-valid-token-0123456789")
    for api in ("auto", USER_V2, ADMIN_IMPORT):
        with pytest.raises(ConfigError, match="authentication failed") as err:
            open_client(zitadel.url, bad, api)
        assert "not-a-valid" not in str(err.value)
    creation.add_org_token(zitadel, "org-token-0123456789abcdefXYZ", "123")
    scoped = Credentials("token", token="org-token-0123456789abcdefXYZ")
    assert open_client(zitadel.url, scoped, "auto")[1] == USER_V2
    with pytest.raises(ConfigError, match="--api='v3'"):
        open_client(zitadel.url, TOKEN, "v3")


def test_an_unreachable_server_is_not_reachable():
    with pytest.raises(ConfigError, match="not reachable"):
        open_client("http://127.0.0.1:9", TOKEN, "auto", max_attempts=1)
