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


# --------------------------------------------------------------------------- expressions


def _field(flag: str, key: str) -> FieldPath:
    return load_spec(None, ["id=id", "email=email", flag]).fields[key]


def test_a_list_element_by_key_is_a_part_of_its_own():
    path = _field("phone=Attributes[Name=email].Value", "phone")
    assert path.parts == ("Attributes", "[Name=email]", "Value")
    # a key's value may hold dots and colons (Cognito's custom:app.role)
    assert _field("phone=Attributes[Name=custom:app.role].Value", "phone").parts == (
        "Attributes",
        "[Name=custom:app.role]",
        "Value",
    )


def test_tests_parse_into_expressions_that_name_every_path_they_read():
    spec = load_spec(
        None,
        [
            "id=id",
            "email=first(email_addresses)",
            "blocked=all(LockoutEnabled, after_now(LockoutEnd))",
            "password_change_required=in(UserStatus,FORCE_CHANGE_PASSWORD,RESET_REQUIRED)",
            "phone_verified=among(primary_phone_number,verified_phone_numbers)",
            "email_verified=not(in(status,pending))",
        ],
    )
    blocked = spec.fields["blocked"]
    assert blocked.expr is not None and blocked.expr.op == "all"
    assert [p.text for p in blocked.paths()] == ["LockoutEnabled", "LockoutEnd"]
    change = spec.fields["password_change_required"].expr
    assert change is not None and change.args[1:] == ("FORCE_CHANGE_PASSWORD", "RESET_REQUIRED")
    assert spec.fields["email"].parts == ("email_addresses",)
    assert spec.first_parts() == [
        "id",
        "email_addresses",
        "LockoutEnabled",
        "LockoutEnd",
        "UserStatus",
        "primary_phone_number",
        "verified_phone_numbers",
        "status",
    ]


def test_present_and_not_of_a_path_keep_their_flags():
    assert _field("blocked=present(banned_until)", "blocked") == FieldPath(
        "banned_until", ("banned_until",), present=True
    )
    assert _field("blocked=not(is_active)", "blocked").negate


def test_a_column_named_like_a_call_is_still_a_column():
    assert _field("display_name=max(name)", "display_name").parts == ("max(name)",)


def test_expressions_take_the_header_spelling():
    spec = load_spec(None, ["id=id", "email=email", "blocked=all(lockoutenabled,after_now(lockoutend))"])
    spelled, missing = for_columns(spec, ["Id", "Email", "LockoutEnabled", "LockoutEnd"])
    assert missing == []
    assert [p.parts for p in spelled.fields["blocked"].paths()] == [("LockoutEnabled",), ("LockoutEnd",)]


@pytest.mark.parametrize(
    "flag, message",
    [
        ("blocked=in(status)", "mapping 'blocked': 'in(status)': give in(PATH,VALUE,...)"),
        ("blocked=afternow(x)", "afternow(...) is not a yes/no form (did you mean 'after_now'?)"),
        ("blocked=all(a,)", "mapping 'blocked': 'all(a,)': an argument of all(...) is empty"),
        ("blocked=present(a,b)", "give present(PATH)"),
        ("blocked=among(a)", "give among(PATH,LIST_PATH)"),
        ("blocked=first(a)", "first(...) is not a yes/no form"),
        ("phone=in(a,b)", "in(...) is for the yes/no fields"),
        ("phone=Attributes[0].Value", "a list element is chosen by a key of its objects, NAME[KEY=VALUE]"),
        ("phone=Attributes[Name=x]Value", "a '.' must follow ']'"),
        ("phone=[Name=x].Value", "is not a column name or a dotted path"),
        (
            "metadata=plan,first(tags)",
            "mapping 'metadata': 'first(tags)': give a path here, not an expression",
        ),
        ("roles=first(groups)", "mapping 'roles': 'first(groups)': give a path here, not an expression"),
    ],
)
def test_expression_problems_are_one_line_naming_the_expression(flag, message):
    with pytest.raises(SpecError) as err:
        load_spec(None, ["id=id", "email=email", flag])
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_options_null_and_password_hasher():
    spec = load_spec('{"id": "Id", "email": "Email", "null": "NULL", "password_hasher": "hasher"}')
    assert spec.null_text == "NULL" and spec.fields["password_hasher"].parts == ("hasher",)
    with pytest.raises(SpecError, match="not both"):
        load_spec('{"id": "i", "email": "e", "hash_form": "bcrypt", "password_hasher": "h"}')
    with pytest.raises(SpecError, match="'null'"):
        load_spec('{"id": "i", "email": "e", "null": ""}')
