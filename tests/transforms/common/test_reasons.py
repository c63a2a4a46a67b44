"""transforms/common/reasons.py: the dead-letter reason codes are stable, distinct and documented."""

from __future__ import annotations

import re

from repo_files import ROOT

from transforms.common.reasons import Reason

README = ROOT / "README.md"


def _codes() -> dict[str, str]:
    return {name: value for name, value in vars(Reason).items() if name.isupper()}


def test_codes_are_distinct_machine_readable_strings():
    codes = _codes()
    assert len(codes) > 40
    assert len(set(codes.values())) == len(codes), "two constants share one code"
    for name, value in codes.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", value), (name, value)


def test_some_codes_keep_their_published_spelling():
    # Codes are read by people's scripts over dead-letter files: these never change.
    assert Reason.MALFORMED_JSON == "malformed-json"
    assert Reason.INVALID_EMAIL == "invalid-email"
    assert Reason.BCRYPT_COST == "bcrypt-cost-out-of-range"
    assert Reason.UNREADABLE_INPUT == "unreadable-input"
    assert Reason.HASH_OUT_OF_LIMITS == "hash-parameter-out-of-limits"


def _documented(value: str, section: str) -> bool:
    # The table lists a family once: `unsupported-hash-salted-sha`, `-hmac`, `-md4`, ...
    family = "unsupported-hash-"
    short = value.removeprefix(family)
    return f"`{value}`" in section or (value.startswith(family) and f"`-{short}`" in section)


def test_the_readme_documents_every_code():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Dead-letter reasons") :]
    section = section[: section.index("\n## ", 1)]
    missing = sorted(value for value in _codes().values() if not _documented(value, section))
    assert not missing, f"README lacks {missing}"
