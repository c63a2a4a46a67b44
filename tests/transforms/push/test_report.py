"""The push report: the exit-0 condition, the one-line reason and the final table."""

from __future__ import annotations

from transforms.push.ledger import BodyResult
from transforms.push.report import PushReport
from transforms.zitadel_api.transport import CallStats


def _report(*bodies: BodyResult, fatal: str | None = None) -> PushReport:
    return PushReport(list(bodies), 1.5, "out/results", None, CallStats(requests=4, retries=1), fatal)


def test_every_body_done_without_failures_is_ok():
    report = _report(BodyResult(0, "b1", "s", 2, status="done", created=["u1"], present=["u2"]))
    assert report.ok and (report.created, report.present, report.failed) == (1, 1, 0)
    table = report.table()
    assert table.splitlines()[0].startswith("body") and "ok" in table.splitlines()[-2]
    assert "retries 1, throttled 0; ledger out/results" in table


def test_failures_and_unsent_bodies_make_one_line():
    failed = BodyResult(0, "b1", "s", 2, status="failed", failed=[{"reason": "rejected", "message": "bad"}])
    report = _report(failed, BodyResult(1, "b2", "s", 2, status="blocked"))
    assert not report.ok
    assert report.failure_line() == (
        "1 user(s) not created in 2 body(ies) (rejected 1; first: bad); 1 body(ies) not sent; "
        "a re-run retries what failed"
    )
    assert "FAILED" in report.table()


def test_a_stopped_push_says_why_first():
    report = _report(BodyResult(0, "b1", "s", 2, status="not-sent"), fatal="authentication failed: x")
    assert not report.ok and report.failure_line() == "stopped: authentication failed: x"
