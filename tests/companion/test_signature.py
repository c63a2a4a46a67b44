"""companion/signature.py: the ZITADEL-Signature check (pkg/actions/signing.go's format)."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from companion.signature import BadSignature, SignatureCheck, sign

BODY = b'{"fullMethod":"/zitadel.session.v2.SessionService/CreateSession","request":{}}'
NOW = 1_800_000_000


def _check(*keys: bytes, now: float = NOW) -> SignatureCheck:
    return SignatureCheck(*keys, clock=lambda: now)


def test_the_header_is_hmac_sha256_over_timestamp_dot_body():
    # As ZITADEL computes it: mac.Write(strconv.FormatInt(t.Unix(), 10)); mac.Write("."); mac.Write(payload).
    want = hmac.new(b"key", f"{NOW}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert sign(BODY, b"key", NOW) == f"t={NOW},v1={want}"
    _check(b"key").verify(BODY, sign(BODY, b"key", NOW))


def test_a_header_with_one_signature_per_key_passes_for_either_key():
    header = sign(BODY, b"old", NOW) + "," + sign(BODY, b"new", NOW).split(",")[1]
    _check(b"new").verify(BODY, header)
    _check(b"old").verify(BODY, header)


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (None, "unsigned"),
        ("", "unsigned"),
        ("v1=00", "malformed"),
        (f"t={NOW}", "malformed"),
        (f"t={NOW},v1=zz", "malformed"),
        ("t=abc,v1=00", "malformed"),
        (f"t={NOW},v1=00", "does not match"),
        ("t=1,v1=00," + "x" * 2000, "too long"),
    ],
)
def test_bad_headers_are_refused_with_a_reason_that_names_no_value(header, reason):
    with pytest.raises(BadSignature, match=reason) as caught:
        _check(b"key").verify(BODY, header)
    assert "key" not in str(caught.value).replace("signature", "")


def test_a_changed_body_or_another_key_is_refused():
    header = sign(BODY, b"key", NOW)
    with pytest.raises(BadSignature, match="does not match"):
        _check(b"key").verify(BODY + b" ", header)
    with pytest.raises(BadSignature, match="does not match"):
        _check(b"other").verify(BODY, header)


def test_stale_and_future_calls_are_refused_at_the_window_edges():
    check = _check(b"key", now=NOW)
    check.verify(BODY, sign(BODY, b"key", NOW - 300))  # exactly at ZITADEL's 5-minute tolerance
    with pytest.raises(BadSignature, match="stale"):
        check.verify(BODY, sign(BODY, b"key", NOW - 301))
    check.verify(BODY, sign(BODY, b"key", NOW + 60))
    with pytest.raises(BadSignature, match="future"):
        check.verify(BODY, sign(BODY, b"key", NOW + 61))


def test_a_replay_is_refused_and_forgotten_once_stale():
    clock = [float(NOW)]
    check = SignatureCheck(b"key", clock=lambda: clock[0])
    header = sign(BODY, b"key", NOW)
    check.verify(BODY, header)
    with pytest.raises(BadSignature, match="replayed"):
        check.verify(BODY, header)
    check.verify(BODY, sign(BODY, b"key", NOW + 1))  # the same body a second later is a new call
    clock[0] = NOW + 400
    with pytest.raises(BadSignature, match="stale"):
        check.verify(BODY, header)
    check.verify(BODY, sign(BODY, b"key", NOW + 400))
    assert len(check._seen) == 1  # what went stale was dropped: the cache stays as small as the window


def test_a_key_is_required():
    with pytest.raises(ValueError):
        SignatureCheck()
    with pytest.raises(ValueError):
        SignatureCheck(b"")
