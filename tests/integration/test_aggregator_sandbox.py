"""The aggregator method executed for real on the sandbox: two chains, our bridges and their
relayer, a v4 pool, and the LI.FI-schema route server, driven by the same
``AggregatorProvider`` code as the live API.

Each test states what a user checks after a transfer: what left the source chain, what
arrived on the destination chain, and that the receiving hash is a transaction mined there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from settlement_widgets.aggregator import AggregatorProvider, Route
from settlement_widgets.aggregator.node.routes import GAS_LIMITS
from settlement_widgets.contracts import load_artifact
from settlement_widgets.errors import AggregatorError, NoRouteError, SettlementTimeoutError
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.wallet import WalletClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

BACKENDS = [
    pytest.param("inprocess", id="inprocess"),
    pytest.param("anvil", id="anvil", marks=pytest.mark.anvil),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def sandbox(request: pytest.FixtureRequest) -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(chain=request.param, aggregator=True, v4=False, wallets=3) as sb:
        yield sb


@pytest_asyncio.fixture(loop_scope="module")
async def provider(sandbox: LocalSandbox) -> AsyncIterator[AggregatorProvider]:
    async with AggregatorProvider(base_url=sandbox.lifi_url, poll_interval=0.05) as p:
        yield p


def chains(sb: LocalSandbox) -> tuple[int, int]:
    a, b = sb.chain_ids
    return a, b


def token(sb: LocalSandbox, chain_id: int, name: str = "usdc") -> str:
    assert sb.crosschain is not None
    address = getattr(sb.crosschain.chains[chain_id], name)
    assert address is not None
    return str(address)


async def balance(wallet: WalletClient, token_address: str, who: str | None = None) -> int:
    contract = wallet.w3.eth.contract(address=token_address, abi=load_artifact("TestToken").abi)  # type: ignore[call-overload]
    return int(await contract.functions.balanceOf(who or wallet.address).call())


async def mined_on(wallet: WalletClient, tx_hash: str) -> Any:
    """The receipt, waiting for it: ``send`` returns when the node has the transaction, and
    anvil's automine may commit the block a moment later (a reverted one included, which
    ``wallet.wait`` would raise on)."""
    return await wallet.w3.eth.wait_for_transaction_receipt(
        tx_hash,  # type: ignore[arg-type]
        timeout=60,
        poll_latency=0.05,
    )


async def test_best_usdc_route_is_executed_and_tracked_to_done(
    sandbox: LocalSandbox, provider: AggregatorProvider
) -> None:
    a, b = chains(sandbox)
    user = sandbox.wallets_on(a)[0]
    user_b = sandbox.wallets_on(b)[0]
    assert user_b.address == user.address and await user_b.chain_id() == b
    amount = 100 * 10**6
    route = await provider.best_route(
        a, b, token(sandbox, a), token(sandbox, b), amount, user.address
    )
    sent_before = await balance(user, token(sandbox, a))
    got_before = await balance(user_b, token(sandbox, b))

    plan = await provider.execute_plan(route, wallet=user, send=True)
    approve, step = plan.transactions
    assert approve.kind == "approve" and approve.tx_hash and step.tx_hash
    seen: list[tuple[str, str | None]] = []
    final = await provider.track(
        step.tx_hash, on_progress=lambda s: seen.append((s.status, s.substatus))
    )

    assert final.done and final.substatus == "COMPLETED", final
    assert seen[0][0] == "PENDING" and seen[-1] == ("DONE", "COMPLETED")
    assert sent_before - await balance(user, token(sandbox, a)) == amount
    delta = await balance(user_b, token(sandbox, b)) - got_before
    assert delta >= route.to_amount_min and delta == final.receiving.amount  # type: ignore[union-attr]
    # the receiving hash is a transaction mined on the destination chain, not on the source
    assert final.receiving is not None and final.receiving.chain_id == b
    receipt = await mined_on(user_b, final.receiving.tx_hash or "")
    assert receipt["status"] == 1
    assert final.receiving.tx_link == sandbox.explorer_tx(b, final.receiving.tx_hash or "")
    assert final.sending is not None and final.sending.tx_link == sandbox.explorer_tx(
        a, step.tx_hash
    )
    # the gas limit the route server sent covers what the transaction used
    used = (await mined_on(user, step.tx_hash))["gasUsed"]
    assert used <= GAS_LIMITS["cross"]


async def test_a_route_with_a_swap_step_is_executed(
    sandbox: LocalSandbox, provider: AggregatorProvider
) -> None:
    a, b = chains(sandbox)
    user = sandbox.wallets_on(a)[1]
    user_b = sandbox.wallets_on(b)[1]
    weth = token(sandbox, a, "weth")
    amount = 10**17  # 0.1 WETH
    route = await provider.best_route(a, b, weth, token(sandbox, b), amount, user.address)
    (step,) = route.steps
    assert [s.type for s in step.included_steps] == ["swap", "cross"]
    assert step.included_steps[0].tool == "sandbox-v4"
    assert route.to_amount_min < route.to_amount  # the swap carries slippage
    weth_before = await balance(user, weth)
    got_before = await balance(user_b, token(sandbox, b))

    plan = await provider.execute_plan(route, wallet=user, send=True)
    final = await provider.track(plan.tx_hashes[-1])

    assert final.done and final.substatus == "COMPLETED"
    assert weth_before - await balance(user, weth) == amount
    delta = await balance(user_b, token(sandbox, b)) - got_before
    assert delta >= route.to_amount_min
    assert (await mined_on(user_b, final.receiving.tx_hash or ""))["status"] == 1  # type: ignore[union-attr]
    assert (await mined_on(user, plan.tx_hashes[-1]))["gasUsed"] <= GAS_LIMITS["swap+cross"]


async def test_a_destination_swap_delivers_weth_on_the_other_chain(
    sandbox: LocalSandbox, provider: AggregatorProvider
) -> None:
    a, b = chains(sandbox)
    user = sandbox.wallets_on(a)[1]
    user_b = sandbox.wallets_on(b)[1]
    weth_b = token(sandbox, b, "weth")
    route = await provider.best_route(a, b, token(sandbox, a), weth_b, 50 * 10**6, user.address)
    (step,) = route.steps
    assert [s.type for s in step.included_steps] == ["cross", "swap"]
    assert step.included_steps[1].action.from_chain_id == b
    got_before = await balance(user_b, weth_b)
    plan = await provider.execute_plan(route, wallet=user, send=True)
    final = await provider.track(plan.tx_hashes[-1])
    assert (final.status, final.substatus) == ("DONE", "COMPLETED"), final
    assert final.receiving is not None and final.receiving.token is not None
    assert final.receiving.token.address == weth_b
    delta = await balance(user_b, weth_b) - got_before
    assert delta == final.receiving.amount and delta >= route.to_amount_min


async def test_a_destination_swap_the_price_moved_under_is_partial(
    sandbox: LocalSandbox, provider: AggregatorProvider
) -> None:
    """The price moves while the transfer bridges: the destination swap would pay less than
    the route's minimum, so the receiver gets the bridged USDC instead (LI.FI's PARTIAL)."""
    a, b = chains(sandbox)
    assert sandbox.crosschain is not None
    user = sandbox.wallets_on(a)[0]
    user_b = sandbox.wallets_on(b)[0]
    usdc_b, weth_b = token(sandbox, b), token(sandbox, b, "weth")
    route = await provider.best_route(a, b, token(sandbox, a), weth_b, 20 * 10**6, user.address)
    # someone buys a lot of WETH on chain B before our transfer lands
    whale = sandbox.chain_on(b).wallet(0)
    dest = sandbox.crosschain.chains[b]
    assert dest.router is not None and dest.pool_key is not None
    usdc = whale.w3.eth.contract(address=usdc_b, abi=load_artifact("TestToken").abi)  # type: ignore[call-overload]
    router = whale.w3.eth.contract(address=dest.router, abi=load_artifact("SandboxRouter").abi)  # type: ignore[call-overload]
    big = 1_000_000 * 10**6
    await whale.transact(usdc.functions.approve(dest.router, big))
    sells_usdc = dest.pool_key.currency0 == usdc_b
    await whale.transact(
        router.functions.swapExactInput(dest.pool_key.as_abi(), sells_usdc, big, 0, whale.address)
    )
    weth_before, usdc_before = await balance(user_b, weth_b), await balance(user_b, usdc_b)

    plan = await provider.execute_plan(route, wallet=user, send=True)
    final = await provider.track(plan.tx_hashes[-1])

    assert (final.status, final.substatus) == ("DONE", "PARTIAL"), final
    assert final.receiving is not None and final.receiving.token is not None
    assert final.receiving.token.address == usdc_b  # not the WETH asked for
    assert await balance(user_b, weth_b) == weth_before
    got = await balance(user_b, usdc_b) - usdc_before
    assert got == final.receiving.amount == route.steps[0].included_steps[0].estimate.to_amount
    assert (await mined_on(user_b, final.receiving.tx_hash or ""))["status"] == 1


async def test_a_reverted_release_is_refunded_on_the_source_chain(
    sandbox: LocalSandbox, provider: AggregatorProvider
) -> None:
    a, b = chains(sandbox)
    assert sandbox.crosschain is not None
    user = sandbox.wallets_on(a)[2]
    amount = 40 * 10**6
    route = await provider.best_route(
        a, b, token(sandbox, a), token(sandbox, b), amount, user.address
    )
    # the destination bridge of that route stops releasing: its release reverts
    owner_b = sandbox.chain_on(b).wallet(0)
    bridge_b = owner_b.w3.eth.contract(  # type: ignore[call-overload]
        address=sandbox.crosschain.chains[b].bridges[route.steps[0].tool],
        abi=load_artifact("SandboxBridge").abi,
    )
    await owner_b.transact(bridge_b.functions.setPaused(True))
    try:
        before = await balance(user, token(sandbox, a))
        plan = await provider.execute_plan(route, wallet=user, send=True)
        assert await balance(user, token(sandbox, a)) == before - amount
        final = await provider.track(plan.tx_hashes[-1])
    finally:
        await owner_b.transact(bridge_b.functions.setPaused(False))

    assert (final.status, final.substatus) == ("DONE", "REFUNDED"), final
    assert "BridgePaused" in (final.substatus_message or "")
    assert await balance(user, token(sandbox, a)) == before  # every locked unit is back
    assert final.receiving is not None and final.receiving.chain_id == a
    assert (await mined_on(user, final.receiving.tx_hash or ""))["status"] == 1


async def test_a_stopped_relayer_leaves_the_transfer_pending_until_it_restarts(
    sandbox: LocalSandbox, provider: AggregatorProvider
) -> None:
    a, b = chains(sandbox)
    relayer = sandbox.relayer
    assert relayer is not None
    user = sandbox.wallets_on(a)[0]
    user_b = sandbox.wallets_on(b)[0]
    route = await provider.best_route(
        a, b, token(sandbox, a), token(sandbox, b), 5 * 10**6, user.address
    )
    await relayer.stop()
    try:
        plan = await provider.execute_plan(route, wallet=user, send=True)
        pending = await provider.status(plan.tx_hashes[-1])
        assert pending.status == "PENDING"
        assert pending.substatus in ("WAIT_SOURCE_CONFIRMATIONS", "WAIT_DESTINATION_TRANSACTION")
        with pytest.raises(SettlementTimeoutError, match="call track\\(\\) again"):
            await provider.track(plan.tx_hashes[-1], timeout=0.3, poll_interval=0.1)
    finally:
        relayer.start()
    before = await balance(user_b, token(sandbox, b))
    final = await provider.track(plan.tx_hashes[-1])
    assert final.done and final.substatus == "COMPLETED"
    assert await balance(user_b, token(sandbox, b)) - before == final.receiving.amount  # type: ignore[union-attr]
    # the restarted relayer rescanned every block: still exactly one release per transfer
    assert sandbox.crosschain is not None
    ids: list[bytes] = []
    for address in sandbox.crosschain.chains[b].bridges.values():
        bridge = user_b.w3.eth.contract(address=address, abi=load_artifact("SandboxBridge").abi)  # type: ignore[call-overload]
        ids += [
            log["args"]["transferId"]
            for log in await bridge.events.TransferReleased().get_logs(from_block=0)
        ]
    assert ids and len(ids) == len(set(ids))


async def test_a_reverted_source_transaction_is_failed(
    sandbox: LocalSandbox, provider: AggregatorProvider
) -> None:
    """A bridge transaction that reverts on the source chain (here: no approval, and the
    gas given so the wallet does not refuse it first) is FAILED, and track returns it."""
    a, b = chains(sandbox)
    user = sandbox.wallets_on(a)[2]
    route = await provider.best_route(
        a, b, token(sandbox, a), token(sandbox, b), 3 * 10**6, user.address
    )
    plan = await provider.execute_plan(route)
    step = plan.transactions[-1]
    tx_hash = await user.send(to=step.to, data=step.data, value=step.value, gas=step.gas_limit)
    assert (await mined_on(user, tx_hash))["status"] == 0
    final = await provider.track(tx_hash)
    assert final.failed and final.is_final
    assert final.sending is not None and final.sending.tx_hash == tx_hash
    assert final.receiving is None


async def test_the_highest_to_amount_loses_on_net_to_a_cheaper_route(
    sandbox: LocalSandbox, provider: AggregatorProvider
) -> None:
    a, b = chains(sandbox)
    user = sandbox.wallets_on(a)[0]
    routes = await provider.routes(
        a, b, token(sandbox, a), token(sandbox, b), 100 * 10**6, user.address
    )
    assert {r.steps[0].tool for r in routes} == {"fastlane", "slowboat", "tollgate"}
    highest = max(routes, key=lambda r: r.to_amount)
    assert highest.steps[0].tool == "tollgate" and highest.rank != 1
    on_top = [f for f in highest.steps[0].estimate.fee_costs if not f.included]
    assert on_top and on_top[0].token.is_native and on_top[0].amount > 0
    # what the route charges on top is the transaction's value, for real
    populated = await provider.execute_plan(highest)
    assert populated.transactions[-1].value == on_top[0].amount
    best: Route = routes[0]
    assert best.rank == 1 and best.to_amount < highest.to_amount


async def test_quote_carries_a_transaction_that_executes(
    sandbox: LocalSandbox, provider: AggregatorProvider
) -> None:
    a, b = chains(sandbox)
    user = sandbox.wallets_on(a)[1]
    quote = await provider.quote(
        a, b, token(sandbox, a), token(sandbox, b), 7 * 10**6, user.address
    )
    assert quote.transaction_request is not None
    assert quote.transaction_request.chain_id == a
    plan = await provider.execute_plan(quote, wallet=user, send=True)
    final = await provider.track(plan.tx_hashes[-1])
    assert final.done and final.receiving is not None
    assert final.receiving.amount == quote.to_amount


async def test_the_route_server_answers_bad_requests_in_lifis_shape(
    sandbox: LocalSandbox, provider: AggregatorProvider
) -> None:
    a, b = chains(sandbox)
    user = sandbox.wallets_on(a)[0].address
    # same chain: no route (LI.FI's 1002 on /quote, an empty list on /advanced/routes)
    with pytest.raises(NoRouteError):
        await provider.quote(a, a, token(sandbox, a), token(sandbox, a), 10**6, user)
    assert await provider.routes(a, a, token(sandbox, a), token(sandbox, a), 10**6, user) == []
    # a chain the server does not serve: 400 with LI.FI's validation code
    with pytest.raises(AggregatorError, match="not served here"):
        await provider.routes(a, 424242, token(sandbox, a), token(sandbox, b), 10**6, user)
    # an unknown transaction is NOT_FOUND, answered 200 as LI.FI does
    unknown = await provider.status("0x" + "ab" * 32)
    assert unknown.status == "NOT_FOUND"
    async with httpx.AsyncClient(base_url=sandbox.lifi_url) as client:
        bad = await client.post("/advanced/routes", content=b"{not json")
        assert bad.status_code == 400 and bad.json()["code"] == 1011
        bad = await client.get("/status", params={"txHash": "0x12"})
        assert bad.status_code == 400 and "64 hex" in bad.json()["message"]
        chains_body = (await client.get("/chains")).json()["chains"]
        assert [c["id"] for c in chains_body] == [a, b]
        assert all(not c["mainnet"] for c in chains_body)
        tokens = (await client.get("/tokens", params={"chains": str(b)})).json()["tokens"]
        assert set(tokens) == {str(b)}
        assert {t["symbol"] for t in tokens[str(b)]} == {"ETH", "USDC", "WETH"}
