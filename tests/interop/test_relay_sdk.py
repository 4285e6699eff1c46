"""Our relay node against the official SDK (``@erc7824/nitrolite`` 0.5.3, viem 2.39.3).

``relay_sdk.js`` authenticates with EIP-712 (``createEIP712AuthMessageSigner``), calls
get_config, get_assets, get_ledger_balances, create_channel (and submits ``Custody.create``
through the SDK's ``NitroliteClient`` over the sandbox's ``/rpc``), get_channels, transfer,
get_ledger_transactions, ping, a refused transfer and a JWT re-login. Every response and
notification must pass ``parseAnyRPCResponse`` and its per-method parser and carry the
broker's signature over its exact bytes; any failure makes the script exit non-zero, which
fails this test (``make test`` installs the SDK in tests/interop; without it this fails).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox import LocalSandbox

pytestmark = [pytest.mark.interop, pytest.mark.asyncio(loop_scope="module")]

HERE = Path(__file__).parent
SCRIPT = HERE / "relay_sdk.js"


def node_command() -> list[str]:
    node = shutil.which("node")
    assert node is not None, "node is not installed (the interop tests need Node 20+)"
    assert (HERE / "node_modules" / "@erc7824" / "nitrolite").is_dir(), (
        "the SDK is not installed: run `npm install` in tests/interop (make interop-deps)"
    )
    return [node, "--experimental-websocket", str(SCRIPT)]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox() -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(v4=False, wallets=2) as sb:
        yield sb


async def test_the_official_sdk_parses_everything_our_relay_sends(sandbox: LocalSandbox) -> None:
    user = sandbox.wallets[0]
    destination = PrivateKey.generate().address
    async with httpx.AsyncClient() as http:
        funded = await http.post(sandbox.faucet_url, json={"userAddress": user.address})
    assert funded.status_code == 200, funded.text
    config = {
        "relayUrl": sandbox.relay_url,
        "rpcUrl": sandbox.rpc_url,
        "chainId": sandbox.network.chain_id,
        "custody": sandbox.network.contracts.custody,
        "adjudicator": sandbox.network.contracts.adjudicator,
        "token": sandbox.token,
        "asset": sandbox.network.asset_symbol,
        "userKey": user.key.secret_hex(),
        "destination": destination,
    }
    proc = await asyncio.create_subprocess_exec(
        *node_command(),
        cwd=HERE,
        env={**os.environ, "RELAY_SDK_CONFIG": json.dumps(config)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 240)
    assert proc.returncode == 0, stderr.decode()[-4000:]
    report = json.loads(stdout.decode().strip().splitlines()[-1])
    assert report["broker"] == sandbox.broker_address
    # every method the SDK was asked about really went through its parsers
    for method in (
        "assets", "get_config", "get_assets", "auth_challenge", "auth_verify", "channels",
        "bu", "get_ledger_balances", "create_channel", "cu", "get_channels", "transfer", "tr",
        "get_ledger_transactions", "error", "pong",
    ):  # fmt: skip
        assert report["methods"].get(method, 0) >= 1, (method, report["methods"])
    assert report["refused"] == "cannot transfer to self"
    # the channel the SDK opened is indexed, and the transfer landed
    relay = sandbox.relay
    assert relay is not None and relay.ledger is not None
    channel = relay.ledger.channels[report["channelId"]]
    assert (channel.wallet, channel.status, channel.amount) == (user.address, "open", 0)
    assert relay.ledger.balance(destination, "ytest.usd") == 1_500_000
    assert relay.ledger.balance(user.address, "ytest.usd") == 10_000_000 - 1_500_000
