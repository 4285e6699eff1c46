"""The user's own v4 deployment next to Sepolia's PoolManager (on the Sepolia twin): hook
through the CREATE2 deployer with the user as owner, adapter, pool; recorded step by step,
reused by the next session, resumed after an interruption, and settling intents."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from settlement_widgets.errors import ConfigurationError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox.chain import start_chain
from settlement_widgets.sandbox.twin import SepoliaTwin
from settlement_widgets.v4 import (
    BEFORE_SWAP_FLAG,
    CREATE2_DEPLOYER,
    Intent,
    V4Provider,
    deploy_own_v4,
    flags_of,
    intent_id,
    recorded_own_v4,
)
from settlement_widgets.v4.deploy import own as own_deployment
from settlement_widgets.wallet import WalletClient

pytestmark = [pytest.mark.anvil, pytest.mark.asyncio(loop_scope="module")]
UNIT = 10**18


_WALLETS: list[WalletClient] = []


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def twin() -> AsyncIterator[SepoliaTwin]:
    async with SepoliaTwin() as running:
        yield running
        for wallet in _WALLETS:
            await wallet.aclose()


async def funded(twin: SepoliaTwin) -> WalletClient:
    """A new key with 10 ETH on the twin (as a Sepolia faucet would give)."""
    assert twin.chain is not None
    wallet = WalletClient(PrivateKey.generate(), rpc_url=twin.network.rpc_url)
    _WALLETS.append(wallet)
    await twin.chain.request("anvil_setBalance", wallet.address, hex(10 * UNIT))
    return wallet


async def test_deploys_once_then_the_next_session_reuses_it(
    twin: SepoliaTwin, tmp_path: Path
) -> None:
    wallet = await funded(twin)
    first = await deploy_own_v4(wallet, twin.network)
    d = first.deployment
    assert first.sent == ("token_a", "token_b", "hook", "adapter", "modify_router", "pool")
    assert d.owner == d.hook_owner == wallet.address and d.hook_deployer == CREATE2_DEPLOYER
    assert (
        flags_of(d.hook) == BEFORE_SWAP_FLAG
        and d.pool_manager == twin.network.contracts.pool_manager
    )
    stored = json.loads(first.store.read_text())
    assert [r["hook"] for r in stored.values()] == [d.hook]

    nonce = await wallet.w3.eth.get_transaction_count(wallet.address)
    again = await deploy_own_v4(wallet, twin.network)  # the next session
    assert again.sent == () and again.deployment.contracts() == d.contracts()
    assert again.deployment.pool_key == d.pool_key
    assert await wallet.w3.eth.get_transaction_count(wallet.address) == nonce  # nothing sent

    report = await V4Provider(wallet, network=first.apply_to(twin.network)).inspect()
    assert report.hook_owner == wallet.address and report.can_settle


async def test_an_interrupted_deployment_resumes_where_it_stopped(
    twin: SepoliaTwin, monkeypatch: pytest.MonkeyPatch
) -> None:
    wallet = await funded(twin)

    async def lost_connection(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("the RPC went away")

    seed_pool = own_deployment.seed_pool
    monkeypatch.setattr(own_deployment, "seed_pool", lost_connection)
    with pytest.raises(ConnectionError):
        await deploy_own_v4(wallet, twin.network)
    monkeypatch.setattr(own_deployment, "seed_pool", seed_pool)
    resumed = await deploy_own_v4(wallet, twin.network)
    assert resumed.sent == ("pool",)
    assert resumed.reused == ("token_a", "token_b", "hook", "adapter", "modify_router")


async def test_a_recorded_contract_that_is_gone_is_deployed_again(twin: SepoliaTwin) -> None:
    wallet = await funded(twin)
    first = await deploy_own_v4(wallet, twin.network)
    assert twin.chain is not None
    await twin.chain.request("anvil_setCode", first.deployment.adapter, "0x")
    again = await deploy_own_v4(wallet, twin.network)
    assert again.sent == ("adapter",) and again.deployment.adapter != first.deployment.adapter


async def test_an_intent_settles_through_the_own_deployment(twin: SepoliaTwin) -> None:
    wallet = await funded(twin)
    own = await deploy_own_v4(wallet, twin.network)
    net = own.apply_to(twin.network)
    key = own.deployment.pool_key
    v4 = V4Provider(wallet, network=net)
    await v4.set_authorized_solver(wallet.address)
    intent = Intent(
        id=intent_id(f"own deployment {wallet.address}"),
        user=wallet.address,
        token_in=key.currency0,
        token_out=key.currency1,
        amount_in=UNIT,
        min_amount_out=95 * UNIT // 100,
        deadline=2**40,
    )
    await v4.register_policy(intent.id, intent.min_amount_out, intent.deadline)
    await v4.approve_adapter(key.currency0, UNIT)
    before = await v4.balance_of(key.currency1)
    tx = await v4.settle_intent(await v4.sign_intent(intent), key, 99 * UNIT // 100)
    assert tx.event("IntentSettled") is not None and await v4.is_settled(intent.id)
    assert await v4.balance_of(key.currency1) - before >= intent.min_amount_out


async def test_refuses_a_chain_without_the_create2_deployer(twin: SepoliaTwin) -> None:
    wallet = await funded(twin)
    assert twin.chain is not None
    code = await twin.chain.w3.eth.get_code(CREATE2_DEPLOYER)
    await twin.chain.request("anvil_setCode", CREATE2_DEPLOYER, "0x")
    try:
        with pytest.raises(ConfigurationError, match="no deterministic CREATE2 deployer"):
            await deploy_own_v4(wallet, twin.network)
    finally:
        await twin.chain.request("anvil_setCode", CREATE2_DEPLOYER, "0x" + bytes(code).hex())


async def test_refuses_a_wallet_on_another_chain(twin: SepoliaTwin) -> None:
    chain = await start_chain("inprocess")
    try:
        with pytest.raises(ConfigurationError, match=r"is on chain 31337.*'sepolia' is 11155111"):
            await deploy_own_v4(chain.wallet(1), twin.network)
    finally:
        await chain.aclose()


async def test_the_dashboard_settles_through_the_recorded_own_deployment(twin: SepoliaTwin) -> None:
    """On Sepolia the dashboard's "Settle intent" cannot use the deployed hook; once the
    operator's own deployment is recorded (notebook 04), the next dashboard uses it."""
    from settlement_widgets.dashboard import SettlementDashboard

    wallet = await funded(twin)
    dashboard = SettlementDashboard(twin.network, wallet, selected="v4")
    await dashboard.settle_intent()
    refused = dashboard.activity[-1]
    assert refused.level == "error" and "cannot settle on sepolia" in refused.text
    assert "deploy_own_v4" in refused.text and await recorded_own_v4(wallet, twin.network) is None

    own = await deploy_own_v4(wallet, twin.network)
    nonce = await wallet.w3.eth.get_transaction_count(wallet.address)
    later = SettlementDashboard(twin.network, wallet, selected="v4")  # the next session
    await later.settle_intent()
    texts = [line.text for line in later.activity]
    assert any(
        "settles through your own deployment" in t and own.deployment.hook in t for t in texts
    )
    assert later.activity[-1].level == "ok" and "settled" in later.activity[-1].text
    assert await wallet.w3.eth.get_transaction_count(wallet.address) > nonce
