"""Helpers for the channel provider tests: a sandbox per module and backend, fresh funded
wallets, and small chain reads.

Each test takes its own wallets (a fresh key, gas and test tokens minted by the deployer), so
tests sharing a module's sandbox never see each other's channels. Stores and proof logs live
under the test's own ``SETTLEMENT_HOME`` (tests/conftest.py).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from settlement_widgets.channel import ChannelConfig, ChannelProvider
from settlement_widgets.contracts import load_artifact
from settlement_widgets.keys import PrivateKey
from settlement_widgets.providers import create_local_channel_config
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.wallet import WalletClient

U = 10**6  # one ytest.usd in smallest units
ASSET = "ytest.usd"
BACKENDS = [
    pytest.param("inprocess", id="inprocess"),
    pytest.param("anvil", id="anvil", marks=pytest.mark.anvil),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def sandbox(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalSandbox]:
    data = tmp_path_factory.mktemp("sandbox")
    async with LocalSandbox(chain=request.param, v4=False, wallets=1, data_dir=data) as sb:
        yield sb


async def fresh_wallet(sb: LocalSandbox, tokens: int = 100 * U, eth: int = 10**18) -> WalletClient:
    """A new key with ``eth`` wei for gas and ``tokens`` test-token units in the wallet."""
    assert sb.chain is not None
    wallet = sb.chain.wallet_for(PrivateKey.generate())
    deployer = sb.chain.wallet(0)
    await deployer.transact(to=wallet.address, value=eth)
    if tokens:
        abi = load_artifact("TestToken").abi
        token = deployer.w3.eth.contract(address=sb.token, abi=abi)  # type: ignore[call-overload]
        await deployer.transact(token.functions.mint(wallet.address, tokens), abis=[abi])
    return wallet


def config_for(sb: LocalSandbox, **overrides: Any) -> ChannelConfig:
    config = create_local_channel_config(sb)
    if overrides:
        from dataclasses import replace

        config = replace(config, **overrides)
    return config


def provider(sb: LocalSandbox, wallet: WalletClient, **kwargs: Any) -> ChannelProvider:
    store_path: Path | None = kwargs.pop("store_path", None)
    config = config_for(sb, store_path=store_path) if store_path else config_for(sb)
    return ChannelProvider(config, wallet, **kwargs)


async def token_balance(sb: LocalSandbox, address: str) -> int:
    return await sb.custody(sb.chain.wallet(0)).token_balance(sb.token, address)  # type: ignore[union-attr]


def dead_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
