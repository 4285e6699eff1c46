"""The Sepolia twin: Sepolia's chain id and addresses, our contracts, a clock that passes an
hour in seconds of real blocks, and the environment a Sepolia user sets pointing at it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from settlement_widgets.chain_clock import chain_time, wait_for_chain_time
from settlement_widgets.contracts import load_artifact
from settlement_widgets.networks import SEPOLIA, get_network
from settlement_widgets.sandbox.twin import SepoliaTwin
from settlement_widgets.v4 import CREATE2_DEPLOYER, V4Provider
from settlement_widgets.wallet import WalletClient

pytestmark = pytest.mark.anvil


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def twin() -> AsyncIterator[SepoliaTwin]:
    async with SepoliaTwin() as running:
        yield running


@pytest.mark.asyncio(loop_scope="module")
async def test_our_contracts_sit_at_sepolias_addresses(twin: SepoliaTwin) -> None:
    assert twin.chain is not None and twin.contracts is not None
    w3 = twin.chain.w3
    assert await w3.eth.chain_id == SEPOLIA.chain_id == 11155111
    c = SEPOLIA.contracts
    moved = twin.contracts.moved
    assert {target for _, target in moved.values()} == {
        c.custody, c.adjudicator, c.pool_manager, c.policy_hook, c.settlement_adapter,
        SEPOLIA.token,
    }  # fmt: skip
    for deployed, target in moved.values():
        assert await w3.eth.get_code(target) and not await w3.eth.get_code(deployed)
    token = w3.eth.contract(address=SEPOLIA.token, abi=load_artifact("TestToken").abi)
    assert await token.functions.symbol().call() == "ytest.usd"
    assert await token.functions.balanceOf(twin.user_address).call() == twin.user_tokens
    assert await w3.eth.get_code(CREATE2_DEPLOYER)  # anvil's, as Sepolia has it


@pytest.mark.asyncio(loop_scope="module")
async def test_the_v4_contracts_are_the_deployed_ones_including_the_mistake(
    twin: SepoliaTwin,
) -> None:
    wallet = WalletClient(twin.env()["SETTLEMENT_PRIVATE_KEY"], rpc_url=twin.network.rpc_url)
    report = await V4Provider(wallet, network=twin.network).inspect()
    await wallet.aclose()
    assert report.hook_owner == CREATE2_DEPLOYER and report.hook_owner_kind == "create2-factory"
    assert report.adapter_owner == SEPOLIA.deployer
    assert report.flags_ok and report.adapter_policy_hook == SEPOLIA.contracts.policy_hook
    assert report.hook_pool_manager == SEPOLIA.contracts.pool_manager
    assert report.can_hold_policies is False and not report.can_settle


@pytest.mark.asyncio(loop_scope="module")
async def test_the_users_environment_points_the_sepolia_profile_at_the_twin(
    twin: SepoliaTwin, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = twin.env()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    network = get_network()
    assert network == twin.network and network.name == "sepolia"
    assert (
        network.node_url.startswith("ws://127.0.0.1:") and network.rpc_url == env["SEPOLIA_RPC_URL"]
    )
    assert network.explorer.tx_url("0xab") == "https://sepolia.etherscan.io/tx/0xab"
    wallet = WalletClient.from_env(network)
    assert wallet.address == twin.user_address
    assert await wallet.w3.eth.get_balance(wallet.address) == twin.user_eth * 10**18
    secret = env["SETTLEMENT_PRIVATE_KEY"].removeprefix("0x")
    assert secret not in repr(twin) and secret not in repr(wallet)
    await wallet.aclose()


@pytest.mark.asyncio(loop_scope="module")
async def test_an_hour_of_chain_time_passes_in_real_blocks(twin: SepoliaTwin) -> None:
    assert twin.chain is not None
    w3 = twin.chain.w3
    start_block, start = await w3.eth.block_number, await chain_time(w3)
    reached = await wait_for_chain_time(w3, start + 3600, poll_interval=0.2, timeout=120)
    assert reached >= start + 3600
    blocks = await w3.eth.block_number - start_block
    assert blocks >= 3600 // twin.seconds_per_block  # mined, not time-travelled


async def test_the_cli_writes_the_environment_and_never_prints_the_key(tmp_path: Path) -> None:
    env_file = tmp_path / "twin.env"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "settlement_widgets.sandbox", "--twin", "sepolia",
        "--env-file", str(env_file),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), 120)
        shown = json.loads(line)
        ready = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
        assert "Sepolia twin ready" in ready and str(env_file) in ready
        assert shown["SETTLEMENT_NETWORK"] == "sepolia" and shown["envFile"] == str(env_file)
        assert "SETTLEMENT_PRIVATE_KEY" not in shown
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        exported = dict(
            row.removeprefix("export ").split("=", 1) for row in env_file.read_text().splitlines()
        )
        assert set(exported) == {
            "SETTLEMENT_NETWORK", "SEPOLIA_RPC_URL", "SETTLEMENT_RELAY_URL",
            "SETTLEMENT_FAUCET_URL", "SETTLEMENT_PRIVATE_KEY",
        }  # fmt: skip
        assert exported["SEPOLIA_RPC_URL"] == shown["SEPOLIA_RPC_URL"]
        secret = exported["SETTLEMENT_PRIVATE_KEY"].removeprefix("0x")
        assert len(secret) == 64 and secret not in line.decode() + ready
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0
    assert not env_file.exists()  # removed on exit
    assert "PRIVATE_KEY=" not in (out + err).decode()


async def test_the_cli_refuses_an_env_file_without_a_twin(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "settlement_widgets.sandbox", "--env-file", str(tmp_path / "x"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=os.environ | {"SETTLEMENT_HOME": str(tmp_path)},
    )  # fmt: skip
    _, err = await process.communicate()
    assert process.returncode == 2 and b"--env-file goes with --twin" in err
