"""The short Sepolia rehearsal, part of ``make test``: the notebooks whose Sepolia branch
differs from the sandbox's run top to bottom on their public profile against the twins
(``SETTLEMENT_NETWORK=sepolia`` on the v0.5 twin; notebook 06, the dashboard's v1 path and
the payment across the node's two chains with ``SETTLEMENT_NETWORK=sepolia-v1`` on the v1
twin), and a run that skipped a Sepolia
step, or lacks what that branch must show, fails. ``make sepolia-rehearsal`` runs every
rehearsal, twice (``tests/rehearsal/sepolia.py``)."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from tests.rehearsal.sepolia import (
    DASHBOARD_V1,
    NOTEBOOKS,
    ON_V1,
    REHEARSALS,
    REQUIRED,
    SHORT,
    TWO_CHAINS_V1,
    rehearse,
    sepolia_problems,
)


def _notebook(*texts: str) -> nbformat.NotebookNode:
    return new_notebook(
        cells=[
            new_code_cell(outputs=[new_output("stream", name="stdout", text=text)])
            for text in texts
        ]
    )


@pytest.mark.anvil
async def test_the_sepolia_branches_run_against_the_twins() -> None:
    results = await rehearse([*SHORT, DASHBOARD_V1, TWO_CHAINS_V1])
    assert [(r.name, r.problems) for r in results] == [
        (name, ()) for name in (*SHORT, DASHBOARD_V1, TWO_CHAINS_V1)
    ]


def test_every_notebook_has_its_sepolia_evidence_listed() -> None:
    assert set(REHEARSALS) == {*NOTEBOOKS, DASHBOARD_V1, TWO_CHAINS_V1}
    assert set(REQUIRED) == set(REHEARSALS) and set(SHORT) | set(ON_V1) <= set(REHEARSALS)
    assert all(REQUIRED[name] for name in REHEARSALS)
    # Nitrolite v1 is rehearsed on its public profile, in make test too
    assert set(ON_V1) == {"06_nitrolite_v1", DASHBOARD_V1, TWO_CHAINS_V1}
    assert "06_nitrolite_v1" in SHORT


def test_notebook_06_on_a_local_v1_sandbox_is_not_a_sepolia_v1_rehearsal() -> None:
    local = _notebook(
        "SETTLEMENT_NETWORK=sepolia: nitrolite-v1 runs locally, on a private v1 sandbox",
        "network    local (chain 31337), protocol nitrolite-v1",
    )
    problems = sepolia_problems("06_nitrolite_v1", local)
    assert (
        "the Sepolia run never showed "
        "'network    sepolia-v1 (chain 11155111), protocol nitrolite-v1'"
    ) in problems
    assert "the Sepolia run never showed 'Waiting out the challenge period'" in problems
    assert sepolia_problems("06_nitrolite_v1", _notebook(*REQUIRED["06_nitrolite_v1"])) == []


def test_a_dashboard_v1_run_without_its_clicks_fails_the_rehearsal() -> None:
    shown_only = sepolia_problems(DASHBOARD_V1, _notebook("network='sepolia-v1'"))
    assert "the Sepolia run never showed 'faucet: [ok] faucet: +10 yusd off-chain'" in shown_only
    assert "the Sepolia run never showed 'close_channel: [ok] channel closed on chain'" in (
        shown_only
    )
    assert sepolia_problems(DASHBOARD_V1, _notebook(*REQUIRED[DASHBOARD_V1])) == []


def test_a_skipped_sepolia_step_fails_the_rehearsal() -> None:
    shown = "\n".join(REQUIRED["04_v4_contracts"])
    assert sepolia_problems("04_v4_contracts", _notebook(shown)) == []
    skipped = _notebook(shown, "pool ...\nskipped: settling an intent; this deployment cannot")
    assert sepolia_problems("04_v4_contracts", skipped) == [
        "cell 1 skipped a step on Sepolia: skipped: settling an intent; this deployment cannot"
    ]


async def test_a_sepolia_run_without_its_sepolia_steps_fails_the_rehearsal() -> None:
    # e.g. a dispute that time-travelled instead of waiting for blocks
    problems = sepolia_problems("03_channel_lifecycle", _notebook("network='sepolia'"))
    assert "the Sepolia run never showed 'Waiting out the challenge period'" in problems
    with pytest.raises(ValueError, match="no such notebook"):
        await rehearse(["06_missing"])
