"""The first records of a table and the checks made on them (transforms/sources/table/sample.py)."""

from __future__ import annotations

import gzip
import json

import pytest

from transforms.common.errors import ConfigError
from transforms.sources.table.sample import (
    NestedFields,
    SampleFile,
    check_sample,
    lookup,
    read_sample,
    selected,
    unique_path,
    wrapper_key,
)
from transforms.sources.table.spec import load_spec

RECORDS = [
    {
        "model": "auth.user",
        "pk": 1,
        "fields": {"username": "ann", "email": "ann@example.com", "is_active": True},
    },
    {"model": "auth.group", "pk": 1, "fields": {"name": "staff"}},
    {"model": "auth.user", "pk": 2, "fields": {"username": "bo", "email": "", "is_active": False}},
]


def _spec(*flags: str, where: tuple[str, ...] = ()):
    return load_spec(None, ["id=pk", "email=fields.email", *flags], where)


def _write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize(
    "name, data, items",
    [
        ("a.json", json.dumps(RECORDS).encode(), None),
        ("a.ndjson", b"\n".join(json.dumps(r).encode() for r in RECORDS), None),
        ("a.json.gz", gzip.compress(json.dumps(RECORDS, indent=2).encode()), None),
        ("w.json", json.dumps({"count": 3, "data": RECORDS}).encode(), "data.item"),
    ],
    # Named by the file: the data would make the id, and a gzip header holds the time it was made,
    # so -n workers collecting a second apart would disagree on the tests' names.
    ids=["json", "ndjson", "json.gz", "wrapped"],
)
def test_json_layouts_give_the_same_records(tmp_path, name, data, items):
    sample = read_sample([SampleFile(_write(tmp_path, name, data), False, items=items)], _spec())
    assert sample.records == RECORDS and sample.complete


def test_where_selects_and_the_limit_marks_the_sample_incomplete(tmp_path):
    path = _write(tmp_path, "a.json", json.dumps(RECORDS).encode())
    spec = _spec(where=("model=auth.user",))
    sample = read_sample([SampleFile(path, False)], spec)
    assert [r["pk"] for r in sample.selected] == [1, 2]
    assert not read_sample([SampleFile(path, False)], spec, limit=2).complete


def test_csv_rows_and_a_json_column(tmp_path):
    path = _write(tmp_path, "a.csv", b'id;email;meta\n1;a@example.com;"{""plan"": ""gold""}"\n')
    spec = load_spec(None, ["id=id", "email=email", "metadata=meta.plan"])
    sample = read_sample([SampleFile(path, True, ";")], spec)
    assert lookup(sample.records[0], ("meta", "plan")) == "gold"
    check_sample(sample, spec)  # every path is found


@pytest.mark.parametrize(
    "flags, where, message",
    [
        (
            ["blocked=not(fields.is_actve)"],
            ("model=auth.user",),
            "(of its 3 records) has fields.is_actve (did you mean 'fields.is_active'?)",
        ),
        ([], (), "are of 2 models (auth.group, auth.user): select the users with --where model=auth.user"),
        ([], ("modl=auth.user",), "--where modl: none of its 3 records has modl (did you mean 'model'?)"),
        ([], ("model=user",), "model holds auth.group, auth.user"),
        (
            [],
            ("model=auth.group",),
            "records --where selects (of its 3 records) has fields.email (only records",
        ),
    ],
)
def test_paths_no_record_bears_out_are_refused(tmp_path, flags, where, message):
    path = _write(tmp_path, "a.json", json.dumps(RECORDS).encode())
    spec = _spec(*flags, where=where)
    with pytest.raises(ConfigError) as caught:
        check_sample(read_sample([SampleFile(path, False)], spec), spec)
    assert message in str(caught.value)


def test_an_email_empty_in_every_record_is_refused_but_one_empty_is_not(tmp_path):
    spec = _spec(where=("model=auth.user",))
    path = _write(tmp_path, "a.json", json.dumps(RECORDS).encode())
    check_sample(read_sample([SampleFile(path, False)], spec), spec)  # ann has one
    only_bo = _write(tmp_path, "b.json", json.dumps(RECORDS[2:]).encode())
    with pytest.raises(ConfigError, match="holds no value in any of the 1 records --where selects"):
        check_sample(read_sample([SampleFile(only_bo, False)], spec), spec)


def test_unique_path_prefers_an_id_like_name():
    records = [
        {"fields": {"first": "A", "username": "ann", "n": 1}},
        {"fields": {"first": "B", "username": "bo", "n": 2}},
    ]
    assert unique_path(records) == "fields.username"
    assert unique_path([{"a": "x"}, {"a": "x"}]) is None


def test_selected_compares_as_text():
    spec = load_spec(None, ["id=id", "email=email"], ["active=true", "n=3"])
    assert selected({"active": True, "n": 3}, spec.where)
    assert selected({"active": "true", "n": "3"}, spec.where)
    assert not selected({"active": False, "n": 3}, spec.where)
    assert not selected({"n": 3}, spec.where)


def test_wrapper_key_only_for_an_object_that_is_not_itself_a_record():
    assert wrapper_key(b'{"kind": "x", "users": [{"localId": "1"}]}', "localId") == "users"
    assert wrapper_key(b'{"id": 1, "roles": [{"name": "a"}]}', "id") is None  # a record with a list
    assert wrapper_key(b'{"a": [{"x": 1}], "b": [{"y": 2}]}', "id") is None  # two arrays
    assert wrapper_key(b'[{"id": 1}]', "id") is None


def test_nested_fields_no_mapping_reads_are_named():
    nested = NestedFields(_spec("username=fields.username"))
    record = {"pk": 1, "fields": {"username": "ann", "email": "a@x", "first_name": "Ann", "last_name": ""}}
    assert nested.names(record) == ("fields.first_name",)  # an empty value is not had
    assert NestedFields(load_spec(None, ["id=id", "email=email"])).names({"id": 1, "x": {"y": 1}}) == ()
