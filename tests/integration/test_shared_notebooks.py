"""Notebooks 04 and 05 run top to bottom in a kernel of a Jupyter server that shares its
sandbox, where the kernel acts with wallets of its own (funded by the sandbox's operator) and
the operator (the v4 owner, the test tokens' owner) is the sandbox's: every code cell runs in
that kernel over its websocket, and none fails."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import nbformat
import pytest
from test_shared_sandbox import jupyter_server, run_in_kernel

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "protocol"),
    [
        ("04_v4_contracts.ipynb", "v0.5"),
        ("05_aggregator_routes.ipynb", "v0.5"),
    ],
)
def test_notebook_runs_in_a_kernel_of_a_shared_server(
    tmp_path: Path, name: str, protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SETTLEMENT_PROTOCOL", protocol)
    notebook = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    cells = [c.source for c in notebook.cells if c.cell_type == "code"]
    with jupyter_server(tmp_path, tmp_path / "home") as server:
        kernel = httpx.post(
            server.url + "api/kernels",
            headers={"Authorization": f"token {server.token}"},
            json={"name": "python3"},
            timeout=60,
        )
        assert kernel.status_code == 201, kernel.text
        kernel_id = kernel.json()["id"]

        async def run_all() -> str:
            out = [await run_in_kernel(server, kernel_id, cell) for cell in cells[:-1]]
            # the session's wallets are the kernel's own, the operator the sandbox's
            out.append(
                await run_in_kernel(
                    server,
                    kernel_id,
                    "dev = set(session.sandbox.network.extra['wallets'])\n"
                    "print('OWN', not dev & {w.address for w in session.wallets})\n"
                    "print('OPERATOR', session.operator.address == "
                    "session.sandbox.network.deployer)",
                )
            )
            out.append(await run_in_kernel(server, kernel_id, cells[-1]))
            return "".join(out)

        output = asyncio.run(run_all())
        assert "OWN True" in output and "OPERATOR True" in output, output[-2000:]
