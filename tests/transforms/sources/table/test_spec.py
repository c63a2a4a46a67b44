"""The mapping of migrate table: file and flags, misspellings, header spelling (transforms/sources/table/spec.py)."""

from __future__ import annotations

import pytest

from transforms.sources.table.spec import FieldPath, SpecError, for_columns, load_spec


def test_file_and_flags_merge_and_the_flag_wins():
    spec = load_spec(
        b'{"id": "pk", "email": "fields.email", "metadata": ["plan", "a.b"], "hash_form": "django"}',
        ["email=mail", "blocked=not(fields.is_active)"],
    )
    assert spec.fields["id"] == FieldPath("pk", ("pk",))
    assert spec.fields["email"].parts == ("mail",)
    assert spec.fields["blocked"] == FieldPath("fields.is_active", ("fields", "is_active"), negate=True)
    assert [p.text for p in spec.metadata] == ["plan", "a.b"]
    assert spec.hash_form == "django"
    assert spec.first_parts() == ["pk", "mail", "fields", "plan", "a"]


def test_metadata_as_a_flag_is_a_comma_list():
    spec = load_spec(None, ["id=id", "email=email", "metadata=plan, tier"])
    assert [p.text for p in spec.metadata] == ["plan", "tier"]


@pytest.mark.parametrize(
    "text, flags, message",
    [
        (None, ["id=id", "emial=email"], "unknown field 'emial' (did you mean 'email'?)"),
        (b'{"id": "id", "email": "e", "pasword_hash": "h"}', [], "(did you mean 'password_hash'?)"),
        (None, ["email=email"], "names no 'id'"),
        (None, ["id=id"], "names no 'email'"),
        (None, ["id=id", "email=email", "phone=present(tel)"], "present(...) is for the yes/no fields"),
        (None, ["id=id", "email=a..b"], "is not a column name or a dotted path"),
        (None, ["id=id", "email"], "expected FIELD=PATH"),
        (None, ["id=id", "id=pk", "email=e"], "'id' is given twice"),
        (b"[1]", [], "not a JSON object"),
        (b"{oops", [], "not a JSON object"),
        (b'{"id": 3, "email": "e"}', [], "give a column name"),
        (None, ["id=id", "email=e", "metadata=a,a"], "named twice"),
    ],
)
def test_problems_are_one_line_naming_the_key(text, flags, message):
    with pytest.raises(SpecError) as err:
        load_spec(text, flags)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_paths_take_the_header_spelling_and_dotted_column_names():
    spec = load_spec(None, ["id=ID", "email=user.email", "display_name=meta.full_name", "phone=tel"])
    spelled, missing = for_columns(spec, [" id ", "User.Email", "meta"])
    assert spelled.fields["id"].parts == (" id ",)
    assert spelled.fields["email"].parts == ("User.Email",)  # a column whose name holds a dot
    assert spelled.fields["display_name"].parts == ("meta", "full_name")  # a JSON column
    assert missing == ["tel"]
