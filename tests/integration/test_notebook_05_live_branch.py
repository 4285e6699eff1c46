"""Notebook 05's live branch runs top to bottom: with ``SETTLEMENT_AGGREGATOR=live`` its cells
use ``AggregatorProvider()`` (the client of the live LI.FI API, at ``LIFI_API_URL``), rank and
plan, and send nothing without ``SETTLEMENT_LIFI_SEND=1``.

The live API cannot be reached from here, so ``LIFI_API_URL`` points at the loopback server
answering from the synthetic fixtures (LI.FI's schema, hand-written, hashes on no chain); the
test checks the code path, not rates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from tests.lifi_synthetic import LifiTestServer

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "05_aggregator_routes.ipynb"


def _stdout(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


async def test_the_live_branch_ranks_and_plans_and_sends_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    with LifiTestServer() as server:
        monkeypatch.setenv("SETTLEMENT_AGGREGATOR", "live")
        monkeypatch.setenv("LIFI_API_URL", server.url)
        monkeypatch.delenv("SETTLEMENT_LIFI_SEND", raising=False)
        client = NotebookClient(
            nb,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(NOTEBOOK.parent)}},
        )
        await client.async_execute()  # raises on the first failing cell
        text = "\n".join(_stdout(c) for c in nb.cells if c.cell_type == "code")
        assert f"NOT LIVE: a LI.FI-schema server on this machine ({server.url})" in text
        assert "live: nothing was sent" in text
        assert server.count("POST", "/advanced/routes") == 2  # routes and routes_frame
        assert server.count("POST", "/advanced/stepTransaction") >= 1  # the plan, populated
        assert server.count("GET", "/status") == 0  # nothing sent, nothing followed
