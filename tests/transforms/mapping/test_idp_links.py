"""transforms/mapping/idp_links.py: a source's identity-provider entries → ZITADEL idps links."""

from __future__ import annotations

from transforms.mapping.idp_links import LinkFields, idp_links

FIELDS = LinkFields(
    "ids",
    "via",
    "sub",
    lambda user, entry, external: str(entry.get("name") or user.get("email") or external),
    own={"local": "own-sign-in"},
    numbers=(int,),
)


def test_each_entry_has_one_outcome_and_only_mapped_providers_link():
    user = {
        "email": "ann@example.com",
        "ids": [
            {"via": "google", "sub": " g-1 ", "name": "Ann G"},
            {"via": "local", "sub": "x"},
            {"via": "github", "sub": 42},
            {"via": "apple", "sub": "a-1"},
            {"via": "google", "sub": "   "},
            "not an object",
            {"via": 7, "sub": "no provider name"},
        ],
    }
    links, outcomes = idp_links(user, {"google": "idp-g", "github": "idp-h"}, FIELDS)
    assert links == [
        {"configId": "idp-g", "externalUserId": "g-1", "displayName": "Ann G"},
        {"configId": "idp-h", "externalUserId": "42", "displayName": "ann@example.com"},
    ]
    assert outcomes == [
        ("linked", "google"),
        ("own-sign-in", "local"),
        ("linked", "github"),
        ("unmapped", "apple"),
        ("invalid", "google"),
        ("invalid", "unknown"),
        ("unmapped", "unknown"),
    ]


def test_ids_that_zitadel_would_refuse_are_invalid_not_links():
    too_long = {"ids": [{"via": "google", "sub": "x" * 201}]}
    assert idp_links(too_long, {"google": "g"}, FIELDS) == ([], [("invalid", "google")])
    a_bool = {"ids": [{"via": "google", "sub": True}]}  # not a number, though Python says so
    assert idp_links(a_bool, {"google": "g"}, FIELDS) == ([], [("invalid", "google")])
    a_float = {"ids": [{"via": "google", "sub": 4.0}]}  # only the numbers the source declares
    assert idp_links(a_float, {"google": "g"}, FIELDS) == ([], [("invalid", "google")])


def test_a_display_name_is_cut_to_zitadels_limit_and_no_list_means_no_links():
    user = {"ids": [{"via": "google", "sub": "g", "name": "n" * 300}]}
    (link,), _ = idp_links(user, {"google": "g"}, FIELDS)
    assert link["displayName"] == "n" * 200
    assert idp_links({"ids": "not a list"}, {"google": "g"}, FIELDS) == ([], [])
    assert idp_links({}, {"google": "g"}, FIELDS) == ([], [])
