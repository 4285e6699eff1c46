"""The short Sepolia rehearsal, part of ``make test``: the notebooks whose Sepolia branch
differs from the sandbox's run top to bottom with ``SETTLEMENT_NETWORK=sepolia`` against the
twin, and a run that skipped a Sepolia step, or lacks what that branch must show, fails.
``make sepolia-rehearsal`` runs every notebook, twice (``tests/rehearsal/sepolia.py``)."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from tests.rehearsal.sepolia import NOTEBOOKS, REQUIRED, SHORT, rehearse, sepolia_problems


def _notebook(*texts: str) -> nbformat.NotebookNode:
    return new_notebook(
        cells=[
            new_code_cell(outputs=[new_output("stream", name="stdout", text=text)])
            for text in texts
        ]
    )


@pytest.mark.anvil
async def test_the_sepolia_branches_run_against_the_twin() -> None:
    results = await rehearse(SHORT)
    assert [(r.name, r.problems) for r in results] == [(name, ()) for name in SHORT]


def test_every_notebook_has_its_sepolia_evidence_listed() -> None:
    assert set(REQUIRED) == set(NOTEBOOKS) and set(SHORT) <= set(NOTEBOOKS)
    assert all(REQUIRED[name] for name in NOTEBOOKS)


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
