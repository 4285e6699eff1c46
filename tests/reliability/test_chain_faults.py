"""Chain faults (shortened): anvil unreachable or restarted around channel operations; the
provider fails with ChainUnavailableError or goes through, never records a transaction that
did not happen, and finishes once the chain is back."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.reliability.chain_faults import SCENARIOS, run_chain_faults

pytestmark = [pytest.mark.slow, pytest.mark.anvil]

CHOSEN = (
    "unreachable before create",
    "unreachable as create tx is sent",
    "unreachable right after deposit sent",
    "anvil restarted right after close sent",
)


async def test_chain_outages_and_restarts_are_survived(tmp_path: Path) -> None:
    assert set(CHOSEN) <= set(SCENARIOS)
    result = await run_chain_faults(tmp_path, CHOSEN)
    assert result.violations == []
    m = result.metrics
    assert m["chain_fault_scenarios_ok"] == m["chain_fault_scenarios"] == len(CHOSEN)
    assert m["phantom_txs"] == 0
    by_name = {s["scenario"]: s for s in m["scenarios"]}
    for name in CHOSEN[:3]:  # the node was away while the operation ran: a clear error
        assert by_name[name]["error"] == "ChainUnavailableError", by_name[name]
    assert all(s["completed_after_return"] for s in m["scenarios"])
