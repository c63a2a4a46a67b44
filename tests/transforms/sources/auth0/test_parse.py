"""The Auth0 parse step (transforms/sources/auth0/parse.py): one unit → items and dead letters."""

from __future__ import annotations

import json
import pickle

import orjson
from apache_beam import pvalue

from transforms.files.spill import load_blob
from transforms.sources import json_units
from transforms.sources.auth0.items import Kind
from transforms.sources.auth0.options import Auth0Options
from transforms.sources.auth0.parse import DEAD, ROUTES, _ParseUnitFn


def _parse(tmp_path, kind, records, options=None, route_mfa=False):
    path = tmp_path / "in.json"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    (file,) = json_units.match_inputs([str(path)], 0)
    (unit,) = json_units.plan_units(file)
    fn = _ParseUnitFn(2, options or Auth0Options(), str(tmp_path), route_mfa)
    fn.setup()
    out = list(fn.process((kind, unit)))
    letters = [o.value for o in out if isinstance(o, pvalue.TaggedOutput) and o.tag == DEAD]
    routes = [o.value for o in out if isinstance(o, pvalue.TaggedOutput) and o.tag == ROUTES]
    parts = [o for o in out if not isinstance(o, pvalue.TaggedOutput)]
    return parts, letters, routes


def _items(parts):
    """{kind: [items]} over every partition's spill file."""
    out: dict = {}
    for _, (kind, spilled) in parts:
        out.setdefault(kind, []).extend(pickle.loads(load_blob(spilled)))
    return out


def test_profiles_become_items_and_rejected_ones_dead_letters(tmp_path):
    records = [
        {"user_id": "auth0|1", "email": "Ann@Example.com "},
        {"user_id": "auth0|2", "email": "bob@example.com", "blocked": True},
        "not json",
        [1, 2],
    ]
    parts, letters, routes = _parse(tmp_path, Kind.PROFILES, records, route_mfa=True)
    assert [orjson.loads(line)["reason"] for _, line in letters] == [
        "blocked",
        "malformed-json",
        "not-an-object",
    ]
    items = _items(parts)
    assert set(items) == {int(Kind.PROFILES)}  # kinds travel as plain ints
    (ann, bob) = sorted(items[Kind.PROFILES])
    (_, _, email_key, user_id, name_key, problem, entry_json, _, _, _, roles) = ann
    assert (email_key, user_id, name_key, problem, roles) == (
        "ann@example.com",
        "auth0|1",
        "ann@example.com",
        None,
        (),
    )
    assert orjson.loads(entry_json)["userId"] == "auth0|1"
    (_, _, _, _, _, bob_problem, bob_entry, _, _, _, _) = bob
    assert bob_problem[0] == "blocked" and bob_entry == b""  # still sent: its passwords are accounted for
    assert sorted(item[0] for _, (_, s) in routes for item in pickle.loads(load_blob(s))) == [
        "auth0|1",
        "auth0|2",
    ]


def test_password_records_become_items_keyed_by_email(tmp_path):
    records = [
        {"_id": {"$oid": "1"}, "email": "ANN@example.com", "passwordHash": "$2b$10$" + "a" * 53},
        {"_id": {"$oid": "2"}, "email": "bob@example.com"},
    ]
    parts, letters, _ = _parse(tmp_path, Kind.PASSWORDS, records)
    assert [orjson.loads(line)["reason"] for _, line in letters] == ["missing-password-hash"]
    ((_, _, email_key, oid, _, password_hash, _, kind, target),) = _items(parts)[Kind.PASSWORDS]
    assert (email_key, oid, kind, target) == ("ann@example.com", "1", Kind.PASSWORDS, None)
    assert password_hash.startswith("$2b$10$")
