"""Each visitor of a shared sandbox acts with wallets of its own (``sandbox.visitors``).

A sandbox with the aggregator (what the Jupyter server starts) writes its profile; two
"kernels" connect to it the way ``open_session()`` does under a Jupyter server
(:func:`connect_shared`). Each gets fresh wallets funded by the operator with everything the
notebooks and the dashboard spend (gas and tokens on both chains); none is a dev wallet, the
two share none, and no key shows in what a notebook prints. A channel the first visitor leaves
open does not stop the second from opening, transferring and closing one. The funding endpoint
refuses a malformed request and funds nothing then.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from settlement_widgets.channel import ChannelConfig, ChannelProvider
from settlement_widgets.contracts import load_artifact
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.sandbox.profile import write_profile
from settlement_widgets.sandbox.shared import SharedSandbox, connect_shared
from settlement_widgets.sandbox.visitors import FUND_PATH, VISITOR_GAS_WEI, VISITOR_V4_TOKENS

pytestmark = pytest.mark.asyncio(loop_scope="module")
U = 10**6


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(
        wallets=4, aggregator=True, data_dir=tmp_path_factory.mktemp("sb")
    ) as sb:
        yield sb


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def profile(sandbox: LocalSandbox, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("home") / "sandbox" / "profile.json"
    write_profile(sandbox.network, path)
    return path


async def _balance(w3: object, token: str, holder: str) -> int:
    abi = load_artifact("TestToken").abi
    contract = w3.eth.contract(address=token, abi=abi)  # type: ignore[attr-defined]
    return int(await contract.functions.balanceOf(holder).call())


async def test_each_visitor_gets_funded_wallets_of_its_own(
    sandbox: LocalSandbox, profile: Path
) -> None:
    assert sandbox.deployment is not None and sandbox.v4 is not None
    assert sandbox.crosschain is not None
    first = await connect_shared(profile, "/settlement/explorer", wallets=2)
    second = await connect_shared(profile, "/settlement/explorer", wallets=2)
    try:
        dev = {w.address for w in sandbox.wallets}
        mine = [w.address for w in first.wallets]
        theirs = [w.address for w in second.wallets]
        assert len(set(mine) | set(theirs)) == 4, "no wallet is shared"
        assert not (set(mine) | set(theirs)) & dev, "no visitor acts with a dev wallet"
        for visitor in (first, second):
            for chain_id in visitor.chain_ids:
                wallets = visitor.wallets_on(chain_id)
                assert [w.address for w in wallets] == [w.address for w in visitor.wallets]
                entry = sandbox.crosschain.chains[chain_id]
                for wallet in wallets:
                    assert await wallet.w3.eth.get_balance(wallet.address) == VISITOR_GAS_WEI
                    assert await _balance(wallet.w3, entry.usdc, wallet.address) == (
                        sandbox.token_funding
                    )
                    assert entry.weth is not None
                    assert await _balance(wallet.w3, entry.weth, wallet.address) > 0
            user = visitor.wallets[0]
            assert await _balance(user.w3, sandbox.deployment.token, user.address) == (
                sandbox.token_funding
            )
            for token in (sandbox.v4.token0, sandbox.v4.token1):
                assert await _balance(user.w3, token, user.address) == VISITOR_V4_TOKENS
            # what a notebook prints of its session shows addresses, never a key
            shown = repr(visitor) + repr(visitor.wallets) + str(visitor.wallets[0])
            for key in visitor._keys:
                assert key.secret_hex().removeprefix("0x").lower() not in shown.lower()
    finally:
        await first.aclose()
        await second.aclose()


async def _visitor_channel(visitor: SharedSandbox) -> ChannelProvider:
    return await ChannelProvider(
        ChannelConfig.from_network(visitor.network), visitor.wallets[0]
    ).connect()


async def test_a_channel_one_visitor_left_open_blocks_no_other(
    sandbox: LocalSandbox, profile: Path
) -> None:
    first = await connect_shared(profile, "/settlement/explorer", wallets=2)
    second = await connect_shared(profile, "/settlement/explorer", wallets=2)
    try:
        left = await _visitor_channel(first)
        assert left.broker_address is not None
        await left.create_channel(left.broker_address, left.config.token, 0)
        await left.close()  # the first visitor's tab is gone, its channel still open

        channels = await _visitor_channel(second)
        try:
            assert channels.broker_address is not None
            opened = await channels.create_channel(
                channels.broker_address, channels.config.token, 2 * U
            )
            sent = await channels.transfer(opened.id, U, second.wallets[1].address)
            assert sent.amount == U
            await channels.close_channel(opened.id)
            assert channels.get_channel(opened.id).status == "final"
        finally:
            await channels.close()
    finally:
        await first.aclose()
        await second.aclose()


async def test_the_funding_endpoint_refuses_a_malformed_request(sandbox: LocalSandbox) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        url = sandbox.http_url + FUND_PATH
        for body in ({"addresses": []}, {"addresses": ["0x12"]}, {"wallets": 1}):
            response = await http.post(url, json=body)
            assert response.status_code == 400, body
        assert (await http.get(url)).status_code == 405
