"""pipeline/report.py: counters → the summary table and the manifest's counts sections."""

from __future__ import annotations

from pipeline.report import (
    MAX_UNKNOWN_FIELD_NAMES,
    dead_letter_totals,
    not_carried_fields,
    shared_summary_lines,
    summary_table,
)
from transforms.common.counters import count_prefix


def test_summary_table_aligns_values_and_keeps_blank_rows():
    text = summary_table("title", [("users", 1234), ("  detail", "x"), ("", ""), ("seconds", "1.5")])
    lines = text.splitlines()
    assert lines[0] == "title" and set(lines[1]) == {"-"}
    assert lines[2].startswith("users") and lines[2].endswith("1,234")
    assert lines[3].startswith("  detail") and lines[3].endswith("x")
    assert lines[4] == "" and len(lines[2]) == len(lines[5])


def test_dead_letter_totals_group_by_source_and_reason():
    counts = {"dead_letter.auth0.duplicate": 2, "dead_letter.auth0.bad.email": 1, "users_written": 9}
    assert dead_letter_totals(counts) == {"auth0": {"duplicate": 2, "bad.email": 1}}
    assert count_prefix(counts, "dead_letter.") == 3


def test_not_carried_fields_rename_and_cap_the_unknown_names():
    counts = {f"unknown_field.auth0.f{i:03d}": 1 for i in range(MAX_UNKNOWN_FIELD_NAMES + 3)}
    counts |= {
        "not_carried.keycloak.totp": 4,
        "cannot_sign_in.no_password": 2,
        "cannot_sign_in.other": 1,
        "keycloak.otp_not_carried.hotp.unsupported": 5,
        "keycloak.required_actions_not_carried.VERIFY_EMAIL": 6,
    }
    fields = not_carried_fields(counts)
    assert fields["fields_not_carried"] == {"keycloak.totp": 4}
    assert (
        len(fields["unknown_fields"]) == MAX_UNKNOWN_FIELD_NAMES + 1
        and fields["unknown_fields"]["auth0.other"] == 3
    )
    assert fields["cannot_sign_in_yet"] == 3
    assert fields["second_factors_not_carried"] == {"keycloak.otp.hotp.unsupported": 5}
    assert fields["required_actions_not_carried"] == {"keycloak.VERIFY_EMAIL": 6}


def test_shared_summary_lines_list_decoded_inputs_and_dead_letters_by_reason():
    lines = dict(
        shared_summary_lines({"inputs.decoded.utf-16-le": 1, "dead_letter.auth0.duplicate": 2}, "auth0")
    )
    assert lines["input files decoded from utf-16-le"] == 1
    assert lines["dead-lettered"] == 2 and lines["  duplicate (auth0)"] == 2
