"""The Auth0 reader's item kinds (transforms/sources/auth0/items.py): stable values, full tables."""

from __future__ import annotations

import pickle

from transforms.sources.auth0.items import READ_COUNTERS, SOURCES, Kind


def test_kinds_keep_their_wire_values():
    # Spill names and the shuffle carry kinds as these ints; a renumbering would mix blobs up.
    assert [(k.name, int(k)) for k in Kind] == [
        ("PROFILES", 0),
        ("PASSWORDS", 1),
        ("CUSTOM_HASHES", 2),
        ("MFA", 3),
        ("ROUTES", 4),
        ("ROLE_RECORDS", 5),
    ]
    assert f"{Kind.MFA}" == "3" and Kind(3) is Kind.MFA


def test_every_record_kind_has_a_source_and_a_read_counter():
    records = set(Kind) - {Kind.ROUTES}  # routes are made by the reader, not read from a file
    assert set(SOURCES) == records == set(READ_COUNTERS)
    assert SOURCES[Kind.CUSTOM_HASHES] == "auth0-custom-hash"
    assert all(name.startswith("auth0.") and name.endswith("_read") for name in READ_COUNTERS.values())


def test_a_kind_survives_pickling_as_itself():
    assert pickle.loads(pickle.dumps([Kind.CUSTOM_HASHES] * 3)) == [Kind.CUSTOM_HASHES] * 3
