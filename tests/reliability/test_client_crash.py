"""Client crash at each lifecycle step (shortened to the steps the issue names, plus the
approval whose recorded transaction recovery used to leave pending): a provider in a child
process is SIGKILLed there and a new provider over the same store reaches a clean end state
(channel closed on chain, every token back in the wallet, every transaction sent once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.reliability.client_crash import CORE_POINTS, CRASH_POINTS, run_client_crash

pytestmark = [pytest.mark.slow, pytest.mark.anvil]

POINTS = (*CORE_POINTS, "after approve tx sent", "after deposit resize RPC")


def test_the_points_cover_both_operations_and_every_kind_of_crash() -> None:
    assert set(CORE_POINTS) <= set(CRASH_POINTS)
    kinds = {(op, kind) for op, kind, _ in CRASH_POINTS.values()}
    assert kinds >= {("create", k) for k in ("rpc", "step", "signed", "sent")}
    assert kinds >= {("close", k) for k in ("rpc", "step", "signed", "sent")}


async def test_a_provider_killed_at_each_step_is_finished_by_the_next_one(
    tmp_path: Path,
) -> None:
    result = await run_client_crash(tmp_path, POINTS)
    assert result.violations == []
    m = result.metrics
    assert m["client_steps_tried"] == m["client_steps_survived"] == len(POINTS)
    by_point = {p["point"]: p for p in m["points"]}
    assert all(p["reached"] for p in by_point.values())
    # the five the issue names and the approval: recover() + close_channel() alone
    for point in (*CORE_POINTS, "after approve tx sent"):
        assert by_point[point]["automatic"], by_point[point]
    # the relay holds a RESIZE the dead process never stored and will not issue another:
    # recovery says so, and closing + withdrawing still returns every unit
    remedies = by_point["after deposit resize RPC"]["remedies"]
    assert any("resize already ongoing" in r for r in remedies), remedies
