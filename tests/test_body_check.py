"""transforms/output/body_check.py: which hash families push accepts in bodies written by other tools."""

from __future__ import annotations

import pytest

from transforms.mapping.validate import ValidationOptions, hash_problem
from transforms.output.body_check import PUSH_VALIDATION


@pytest.mark.parametrize(
    "value, push_ok",
    [
        ("$6$rounds=5000$salt$" + "a" * 86, True),  # sha512 crypt
        ("$5$salt$" + "a" * 43, True),  # sha256 crypt
        ("$1$salt$" + "a" * 22, True),  # md5crypt
        ("$P$" + "B" * 31, True),  # phpass
        ("$scrypt$ln=16,r=8,p=1$c2FsdA$aGFzaA", True),
        ("$2b$04$" + "a" * 53, True),  # bcrypt cost 4: push checks the format only by default
        ("plain-text", False),
        ("$sha1$1$x$y", False),
    ],
)
def test_push_accepts_every_family_the_server_verifies(value, push_ok):
    assert (hash_problem(value, PUSH_VALIDATION) is None) is push_ok
    if value.startswith(("$6$", "$1$", "$P$")):
        assert hash_problem(value, ValidationOptions()) is not None  # never from an Auth0 export
