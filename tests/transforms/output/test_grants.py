"""Grants in import bodies (transforms/output/grants.py): collisions, filtering, the catalogue file."""

from __future__ import annotations

import orjson

from transforms.output.grants import CATALOGUE_NAME, filter_grants, read_catalogue, resolve


def test_resolve_keeps_the_first_key_of_a_case_collision():
    kept, losers = resolve(
        [("p", "admin", "Admin", ""), ("p", "Admin", "Admin", ""), ("q", "admin", "a", "")]
    )
    assert [(project, key) for project, key, _, _ in kept] == [("p", "Admin"), ("q", "admin")]
    assert losers == frozenset({("p", "admin")})


def test_filter_grants_drops_losing_keys_and_empty_projects():
    grants = (("p", ("Admin", "admin")), ("q", ("admin",)))
    assert filter_grants(grants, frozenset({("p", "admin"), ("q", "admin")})) == ((("p", ("Admin",)),), 2)
    assert filter_grants(grants, frozenset()) == (grants, 0)


def test_read_catalogue(tmp_path):
    assert read_catalogue(str(tmp_path)) == []
    (tmp_path / CATALOGUE_NAME).write_bytes(orjson.dumps({"roles": [["p", "k", "K", "g"]], "losers": []}))
    assert read_catalogue(str(tmp_path)) == [("p", "k", "K", "g")]
