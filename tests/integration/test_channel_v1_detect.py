"""Which client for which node: the wire probe, the provider
factory that refuses a profile whose node speaks the other protocol, ``settlement-sandbox
--protocol v1``, and the v1 script run twice with one ``SETTLEMENT_HOME``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import pytest_asyncio
from websockets.asyncio.server import ServerConnection, serve

from settlement_widgets.channel import ChannelProvider
from settlement_widgets.channel.detect import detect_node_protocol
from settlement_widgets.channel.factory import open_channel_provider
from settlement_widgets.channel.v1 import ChannelProviderV1
from settlement_widgets.errors import (
    RelayProtocolError,
    RelayUnavailableError,
    SettlementTimeoutError,
)
from settlement_widgets.networks import Network, settlement_home
from settlement_widgets.sandbox import LocalSandbox

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

SCRIPT = Path(sys.executable).parent / "settlement-sandbox"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sb(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalSandbox]:
    data = tmp_path_factory.mktemp("sandbox-v1-detect")
    async with LocalSandbox(protocol="v1", v4=False, wallets=2, data_dir=data) as sandbox:
        yield sandbox


def _v05(sb: LocalSandbox) -> Network:
    """The same sandbox through its v0.5 relay (which a v1 sandbox runs for the faucet)."""
    net = sb.network
    return replace(net, node_url=net.extra["relayV05Url"], protocol="nitrolite-v0.5")


async def test_the_probe_tells_the_two_nodes_apart(sb: LocalSandbox) -> None:
    v1 = await detect_node_protocol(sb.network.node_url)
    assert v1.kind == "nitrolite-v1" and "response frame" in v1.found
    v05 = await detect_node_protocol(_v05(sb).node_url)
    assert v05.kind == "nitrolite-v0.5"


async def test_the_factory_builds_the_provider_the_profile_names(sb: LocalSandbox) -> None:
    user = sb.wallets[0]
    v1 = await open_channel_provider(sb.network, user)
    try:
        assert isinstance(v1, ChannelProviderV1) and v1.node_address == sb.broker_address
    finally:
        await v1.close()
    v05 = await open_channel_provider(_v05(sb), user)
    try:
        assert isinstance(v05, ChannelProvider) and v05.broker_address == sb.broker_address
    finally:
        await v05.close()


async def test_a_profile_whose_node_speaks_the_other_protocol_is_named(sb: LocalSandbox) -> None:
    user = sb.wallets[0]
    says_v05 = replace(_v05(sb), node_url=sb.network.node_url)  # a v0.5 profile, a v1 node
    with pytest.raises(RelayProtocolError, match="sepolia-v1") as caught:
        await open_channel_provider(says_v05, user)
    assert caught.value.found == "nitrolite-v1"
    assert "says nitrolite-v0.5" in str(caught.value)
    says_v1 = replace(sb.network, node_url=_v05(sb).node_url)  # a v1 profile, a v0.5 node
    with pytest.raises(RelayProtocolError, match="SETTLEMENT_NETWORK=sepolia,") as caught:
        await open_channel_provider(says_v1, user)
    assert caught.value.found == "nitrolite-v0.5"
    # without the probe, each client still refuses the other's first frame
    with pytest.raises(RelayProtocolError):
        await ChannelProviderV1(says_v1, user).connect()


async def test_silence_nothing_listening_and_other_json() -> None:
    async def silent(ws: ServerConnection) -> None:
        await ws.wait_closed()  # reads (and ignores) the ping, answers nothing

    async def other(ws: ServerConnection) -> None:
        await ws.send('{"hello": "world"}')
        await ws.wait_closed()

    async with serve(silent, "127.0.0.1", 0) as quiet, serve(other, "127.0.0.1", 0) as chatty:
        quiet_port = next(iter(quiet.sockets)).getsockname()[1]
        chatty_port = next(iter(chatty.sockets)).getsockname()[1]
        with pytest.raises(SettlementTimeoutError, match="did not answer a v1 ping"):
            await detect_node_protocol(
                f"ws://127.0.0.1:{quiet_port}", greeting_wait=0.05, timeout=0.2
            )
        seen = await detect_node_protocol(f"ws://127.0.0.1:{chatty_port}")
        assert seen.kind == "json"
    with pytest.raises(RelayUnavailableError):
        await detect_node_protocol(f"ws://127.0.0.1:{quiet_port}", timeout=2)


async def _one_v1_run() -> tuple[str, list[str]]:
    async with LocalSandbox(protocol="v1", v4=False, wallets=2) as sandbox:  # defaults
        alice, bob = sandbox.wallets
        async with ChannelProviderV1(sandbox.network, alice) as provider:
            first = await provider.create_channel(provider.node_address, provider.asset, 0)
            await provider.close_channel(first.id)
            second = await provider.create_channel(provider.node_address, provider.asset, 10**6)
            await provider.transfer(second.id, 1000, bob.address)
            await provider.close_channel(second.id)
            assert await provider.balances() == {provider.asset: 0}
        return second.id, sorted(p.name for p in (settlement_home() / "channel").iterdir())


async def test_the_same_v1_script_twice_in_one_settlement_home() -> None:
    first_id, first_files = await _one_v1_run()
    second_id, second_files = await _one_v1_run()
    assert first_id == second_id  # a deterministic sandbox: the same channel, on a new chain
    stores = [n for n in second_files if n.endswith(".sqlite")]
    assert len(stores) == 2 and set(first_files) < set(second_files)


async def test_the_cli_starts_a_v1_sandbox(tmp_path: Path, _isolated_settlement_home: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        str(SCRIPT), "--no-v4", "--deterministic", "--wallets", "1", "--protocol", "v1",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "SETTLEMENT_HOME": str(_isolated_settlement_home)},
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 180)
        assert line, (await proc.stderr.read()).decode()[-3000:]
        network = Network.from_json(json.loads(line))
        assert network.protocol == "nitrolite-v1" and network.contracts.channel_hub
        assert (await detect_node_protocol(network.node_url)).kind == "nitrolite-v1"
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
