"""The Auth0 routing step (transforms/sources/auth0/route.py): records keyed by user_id find their profile."""

from __future__ import annotations

import pickle

import orjson
from apache_beam import pvalue

from transforms.files.spill import load_blob, write_spill
from transforms.sources.auth0.items import Kind
from transforms.sources.auth0.route import _RouteMfaFn


def test_records_go_to_the_first_profile_with_their_user_id(tmp_path):
    routes = [
        ("auth0|1", 5, 0, 30),
        ("auth0|1", 6, 0, 10),
    ]  # the same id twice: the first in input order wins
    mfa = [(2, 0, "auth0|1", "JBSWY3DPEHPK3PXP", b'{"user_id":"auth0|1"}')]
    roles = [(3, 0, "auth0|nobody", ("admin",), b'{"user_id":"auth0|nobody"}')]
    blobs = [
        (int(kind), write_spill(str(tmp_path), f"{kind}.pkl", pickle.dumps(items)))
        for kind, items in ((Kind.ROUTES, routes), (Kind.MFA, mfa), (Kind.ROLE_RECORDS, roles))
    ]
    out = list(_RouteMfaFn(str(tmp_path)).process((1, blobs)))
    letters = [orjson.loads(o.value[1]) for o in out if isinstance(o, pvalue.TaggedOutput)]
    assert [(letter["source"], letter["reason"]) for letter in letters] == [("auth0-roles", "unknown-user")]
    ((email_part, (kind, spilled)),) = [o for o in out if not isinstance(o, pvalue.TaggedOutput)]
    assert (email_part, kind) == (6, Kind.MFA)
    assert pickle.loads(load_blob(spilled)) == [(2, 0, 0, 10, "JBSWY3DPEHPK3PXP", b'{"user_id":"auth0|1"}')]
