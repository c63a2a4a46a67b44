"""transforms/common/durations.py: Go duration strings as the import API's ``timeout`` field wants them."""

from __future__ import annotations

import pytest

from transforms.common.durations import (
    flag_duration,
    flag_seconds,
    format_duration,
    normalise_duration,
    parse_duration,
)
from transforms.common.errors import ConfigError


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("0", 0.0),
        ("300s", 300.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        (" 30m ", 1800.0),
        ("250ms", 0.25),
        ("1h0m0s", 3600.0),
        (".5s", 0.5),
        ("10us", 1e-5),
        ("10µs", 1e-5),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "  ", "5", "5 m", "m", "1d", "-5m", "5m garbage"])
def test_parse_duration_refuses_what_go_refuses(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0, "0s"),
        (1800, "30m0s"),
        (5400, "1h30m0s"),
        (3600, "1h0m0s"),
        (45, "45s"),
        (90.5, "1m30.5s"),
        (0.25, "250ms"),
        (0.0005, "500µs"),
    ],
)
def test_format_duration_is_gos_duration_string(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("text, normal", [("30m", "30m0s"), ("300s", "5m0s"), ("1h", "1h0m0s"), ("0", "0s")])
def test_normalise_duration_writes_what_zitadel_tools_writes(text, normal):
    assert normalise_duration(text) == normal
    assert normalise_duration(normal) == normal


def test_flag_helpers_name_the_flag_in_one_config_error():
    assert flag_duration("--timeout", "30m") == "30m0s"
    assert flag_seconds("--timeout", "1m30s") == 90.0
    for helper in (flag_duration, flag_seconds):
        with pytest.raises(ConfigError) as err:
            helper("--timeout", "soon")
        assert str(err.value).startswith("--timeout: invalid duration 'soon'")
        assert "\n" not in str(err.value)
