"""``--hash-config``: Firebase's hash_config block recorded without its keys
(transforms/sources/firebase/hash_config.py)."""

from __future__ import annotations

import pytest

from transforms.sources.firebase.hash_config import (
    HashConfigError,
    parse_hash_config,
    read_hash_config,
)

KEY = "c2lnbmVyLWtleS1zZWNyZXQ="
SEPARATOR = "Bw=="
BLOCK = (
    "hash_config {\n  algorithm: SCRYPT,\n"
    f"  base64_signer_key: {KEY},\n  base64_salt_separator: {SEPARATOR},\n  rounds: 8,\n  mem_cost: 14,\n}}\n"
)
RECORDED = {
    "algorithm": "SCRYPT",
    "rounds": 8,
    "mem_cost": 14,
    "signer_key_given": True,
    "salt_separator_given": True,
}


def test_the_console_block_is_recorded_without_key_values():
    recorded = parse_hash_config(BLOCK)
    assert recorded == RECORDED
    assert KEY not in repr(recorded) and SEPARATOR not in repr(recorded)


def test_the_same_keys_as_json_and_a_missing_separator():
    text = f'{{"hash_config": {{"algorithm": "SCRYPT", "base64_signer_key": "{KEY}", "rounds": 8, "mem_cost": 14}}}}'
    assert parse_hash_config(text) == {**RECORDED, "salt_separator_given": False}


@pytest.mark.parametrize(
    "text,message",
    [
        ("rounds: 8\n", 'no "algorithm"'),
        (f"algorithm: {KEY}\n", "not a Firebase algorithm name"),
        (f"algorithm: SCRYPT\nrounds: {KEY}\n", '"rounds" is not a small whole number'),
        ("{not json", "not valid JSON"),
        ("[1]", "not a JSON object"),
    ],
)
def test_unusable_blocks_are_refused_without_echoing_values(text, message):
    with pytest.raises(HashConfigError) as caught:
        parse_hash_config(text)
    assert message in str(caught.value) and KEY not in str(caught.value)


def test_read_from_a_file_and_a_missing_file(tmp_path):
    path = tmp_path / "hash_config.txt"
    path.write_text("\ufeff" + BLOCK)
    assert read_hash_config(str(path)) == RECORDED
    with pytest.raises(HashConfigError, match="cannot be read"):
        read_hash_config(str(tmp_path / "missing.txt"))
