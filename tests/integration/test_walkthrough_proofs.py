"""Notebook 03's proofs, checked from outside the notebook.

nbclient runs ``notebooks/03_channel_lifecycle.ipynb`` in a fresh kernel, exactly as committed
(its own asserts run too), up to its clean-up cell. While that kernel idles with its sandbox
still serving, this test starts its *own* endpoint process over the session's
``SETTLEMENT_HOME`` (the sandbox profile and the proof log the notebook wrote) and checks
``GET /api/settlement/proofs/channel``: both channels' on-chain steps in order, each with the
explorer URL of its transaction; each transaction mined with status 1 according to the chain's
JSON-RPC; each explorer page served and showing that transaction; and no proofs without the
token. Then the clean-up cell runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from nbclient import NotebookClient

from settlement_widgets.networks import Network
from settlement_widgets.notebook import start_api_server

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "03_channel_lifecycle.ipynb"
CLEANUP = "await session.aclose()"
PROBE = """
import json
print(json.dumps({
    "home": str(session.home),
    "network": net.name,
    "cooperative": channel.id,
    "disputed": disputed.id,
    "closing": closing.hash,
    "withdrawal": closing.withdrawal.hash,
    "settled": settled.hash,
}))
"""
COOPERATIVE_STEPS = [
    "create_channel",
    "approve",
    "deposit",
    "resize_channel",  # fund
    "resize_channel",  # settle the off-chain balance into the channel
    "close_channel",
    "withdraw",
]
DISPUTE_STEPS = [
    "create_channel",
    "approve",
    "deposit",
    "resize_channel",
    "challenge",
    "close_channel",
]


def _stdout(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


async def test_notebook_03_proofs_are_served_with_explorer_links() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cleanup = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and CLEANUP in c.source]
    assert cleanup == [len(nb.cells) - 1], "the last cell of notebook 03 closes the session"
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    probe = nbformat.v4.new_code_cell(PROBE)
    nb.cells.insert(len(nb.cells) - 1, probe)  # just before the clean-up cell
    async with client.async_setup_kernel():
        for index, cell in enumerate(nb.cells[:-1]):
            await client.async_execute_cell(cell, index)  # raises on the first failing cell
        facts = json.loads(_stdout(probe))
        home = Path(facts["home"])
        profile = json.loads((home / "sandbox" / "profile.json").read_text())
        try:
            await _check_proofs(facts, home, Network.from_json(profile))
        finally:
            await client.async_execute_cell(nb.cells[-1], len(nb.cells) - 1)
    assert not home.exists(), "the clean-up cell removes the session's directory"


async def _check_proofs(facts: dict[str, str], home: Path, network: Network) -> None:
    assert network.name == facts["network"]
    api = await start_api_server("local", env={"SETTLEMENT_HOME": str(home)})
    try:
        response = await api.get("proofs/channel")
        assert response.status_code == 200
        body = response.json()
        assert (body["method"], body["network"], body["chainId"]) == (
            "channel",
            network.name,
            network.chain_id,
        )
        on_chain = [p for p in body["proofs"] if p["type"] == "on-chain"]
        by_channel = {
            name: [p for p in on_chain if p["data"].get("channelId") == facts[name]]
            for name in ("cooperative", "disputed")
        }
        assert [p["step"] for p in by_channel["cooperative"]] == COOPERATIVE_STEPS
        assert [p["step"] for p in by_channel["disputed"]] == DISPUTE_STEPS
        hashes = {p["step"]: p["txHash"] for p in by_channel["cooperative"]}
        assert (hashes["close_channel"], hashes["withdraw"]) == (
            facts["closing"],
            facts["withdrawal"],
        )
        assert by_channel["disputed"][-1]["txHash"] == facts["settled"]

        async with httpx.AsyncClient(timeout=30) as http:
            for proof in by_channel["cooperative"] + by_channel["disputed"]:
                tx = proof["txHash"]
                assert proof["explorerUrl"] == f"{network.explorer_base}/tx/{tx}"
                receipt = await http.post(
                    network.rpc_url or "",
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "eth_getTransactionReceipt",
                        "params": [tx],
                    },
                )
                result = receipt.json()["result"]
                assert int(result["status"], 16) == 1, proof
                assert int(result["blockNumber"], 16) == proof["data"]["block"]
                page = await http.get(proof["explorerUrl"])
                assert page.status_code == 200
                assert tx in page.text and "success" in page.text

            # the proof log is not public: the endpoint wants its token
            anonymous = await http.get(api.endpoint("proofs/channel"))
            assert anonymous.status_code in (401, 403)
    finally:
        await api.stop()
