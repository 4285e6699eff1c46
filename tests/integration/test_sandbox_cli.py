"""``settlement-sandbox`` (the console script of ``settlement_widgets.sandbox.__main__``):
starts, prints a profile whose ``rpcUrl`` answers ``eth_chainId``, serves the relay and the
faucet, writes the profile where ``get_network("local")`` finds it, and exits 0 on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import httpx
import pytest
from relay_helpers import RelayTestClient

from settlement_widgets.channel.v0_5.core import get_config_message
from settlement_widgets.networks import Network

pytestmark = pytest.mark.slow

SCRIPT = Path(sys.executable).parent / "settlement-sandbox"


async def test_cli_prints_a_working_profile_and_stops_cleanly_on_sigterm(
    tmp_path: Path, _isolated_settlement_home: Path
) -> None:
    assert SCRIPT.is_file(), "the console script is not installed (pip install -e .)"
    out = tmp_path / "profile.json"
    proc = await asyncio.create_subprocess_exec(
        str(SCRIPT),
        "--no-v4",
        "--deterministic",
        "--wallets", "2",
        "--profile-out", str(out),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "SETTLEMENT_HOME": str(_isolated_settlement_home)},
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 180)
        assert line, (await proc.stderr.read()).decode()[-3000:]
        profile = json.loads(line)
        network = Network.from_json(profile)
        assert json.loads(out.read_text()) == profile
        home_profile = _isolated_settlement_home / "sandbox" / "profile.json"
        assert json.loads(home_profile.read_text()) == profile
        assert network.rpc_url is not None and network.rpc_url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient() as http:
            chain_id = await http.post(
                network.rpc_url,
                json={"jsonrpc": "2.0", "id": 7, "method": "eth_chainId", "params": []},
            )
            assert chain_id.json() == {"jsonrpc": "2.0", "id": 7, "result": hex(network.chain_id)}
            wallet = profile["extra"]["wallets"][0]
            paid = await http.post(network.faucet_url, json={"userAddress": wallet})
            assert paid.status_code == 200 and paid.json()["destination"] == wallet
        broker = profile["extra"]["brokerAddress"]
        async with RelayTestClient(network.node_url, broker) as client:
            config = await client.call(get_config_message())
            assert config.result["broker_address"] == broker
            assert config.result["networks"][0]["custody_address"] == network.contracts.custody
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
        assert not home_profile.exists()  # a stopped sandbox leaves no stale profile behind
        assert out.exists()  # the file asked for is the caller's to keep
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
