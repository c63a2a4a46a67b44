"""The body scheduler: order by ``after``, blocked bodies, a fatal stop leaves the rest unsent."""

from __future__ import annotations

from transforms.output.manifest import BodyRef, Manifest
from transforms.push.body_scheduler import BodyScheduler
from transforms.push.ledger import BodyResult
from transforms.push.send_body import Abort


def _manifest(*afters: tuple[int, ...]) -> Manifest:
    refs = tuple(
        BodyRef(index=i, name=f"b{i}", path=f"b{i}", users=1, sha256="s", after=after)
        for i, after in enumerate(afters)
    )
    return Manifest(path="m.manifest.json", bodies=refs, timeout="1m", raw={})


def _status(ref: BodyRef, status: str) -> BodyResult:
    return BodyResult(ref.index, ref.name, ref.sha256, ref.users, status=status)


def test_a_body_after_a_failed_body_is_blocked_and_a_skipped_one_counts_as_done():
    manifest = _manifest((), (0,), (), (2,))
    sent: list[int] = []

    def work(ref: BodyRef) -> BodyResult:
        sent.append(ref.index)
        return _status(ref, "failed" if ref.index == 0 else "done")

    def skip(ref: BodyRef) -> BodyResult | None:
        return _status(ref, "skipped") if ref.index == 2 else None

    finished: list[int] = []
    results = BodyScheduler(manifest, 2, work, skip, lambda r: finished.append(r.index)).run()
    assert {i: r.status for i, r in results.items()} == {0: "failed", 1: "blocked", 2: "skipped", 3: "done"}
    assert sorted(sent) == [0, 3] and sorted(finished) == [0, 1, 2, 3]


def test_an_abort_stops_the_push_and_the_bodies_left_are_not_sent():
    manifest = _manifest((), (), ())

    def work(ref: BodyRef) -> BodyResult:
        raise Abort("authentication failed: expired")

    scheduler = BodyScheduler(manifest, 1, work, lambda ref: None, lambda r: None)
    results = scheduler.run()
    assert scheduler.fatal == "authentication failed: expired"
    assert [results[i].status for i in range(3)] == ["not-sent"] * 3
