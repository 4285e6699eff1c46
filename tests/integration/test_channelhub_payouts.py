"""Where our ChannelHub's payouts go, and what happens when one fails, on both chains.

As in Nitrolite v1.4.1 `ChannelHub.sol`: once a dispute has expired, the challenged state's
node allocation is paid to the NODE's address (a cooperative close returns it to the
node's vault instead); a channel payout never reverts: if the recipient cannot receive, the
amount becomes its reclaim balance (``TransferFailed``), which it takes later with
``claimFunds`` to a destination of its choice (``FundsClaimed``). A token that blacklists
recipients (``FreezableTestToken``) makes a payout fail on purpose.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from channelhub_helpers import (
    CHALLENGE,
    MAX_UINT,
    NODE_FLOAT,
    Channel,
    Env,
    M,
    make_env,
    reverts,
)

from settlement_widgets.addresses import ZERO_ADDRESS
from settlement_widgets.channel.v1.core.state import decimals_from_map, sign_challenge
from settlement_widgets.contracts import load_artifact
from settlement_widgets.sandbox import Chain
from settlement_widgets.sandbox.deploy import deploy_contract

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(chain: Chain) -> Env:
    env = await make_env(chain)
    frozen = await deploy_contract(chain.wallet(0), "FreezableTestToken")
    token = _token(env, frozen.address)
    for key in (env.user_key, env.node_key):
        await chain.wallet(0).transact(token.functions.mint(key.address, 1_000 * M))
    await env.user.approve(frozen.address, MAX_UINT)
    await env.node.approve(frozen.address, MAX_UINT)
    await env.node.deposit_to_node(frozen.address, NODE_FLOAT)
    env.decimals = decimals_from_map(
        {
            f"{chain.chain_id}:{env.token}": 6,
            f"{chain.chain_id}:{frozen.address}": 6,
            f"{chain.chain_id}:{ZERO_ADDRESS}": 18,
        }
    )
    env.tokens["frozen"] = frozen.address
    return env


@pytest_asyncio.fixture(autouse=True, loop_scope="module")
async def _isolate(env: Env) -> AsyncIterator[None]:
    snapshot = await env.chain.snapshot()
    yield
    await env.chain.revert(snapshot)


def _token(env: Env, address: str) -> Any:
    abi = load_artifact("FreezableTestToken").abi
    return env.chain.w3.eth.contract(address=address, abi=abi)  # type: ignore[call-overload]


async def _freeze(env: Env, account: str, frozen: bool = True) -> None:
    token = _token(env, env.tokens["frozen"])
    await env.chain.wallet(0).transact(token.functions.setFrozen(account, frozen))


async def _expire_dispute(env: Env, ch: Channel) -> dict[str, object]:
    state = ch.contract(ch.state)
    sig = sign_challenge(ch.state, env.user_key, env.decimals)
    await env.user.challenge_channel(ch.id, state, sig, 0)
    await env.chain.time_travel(CHALLENGE + 1)
    return state


async def test_after_an_expired_dispute_the_node_share_goes_to_the_node_address(
    env: Env,
) -> None:
    ch = Channel(env)
    # a deposit state may allocate to the node: it locks 20 from its vault beside the user's 100
    state = ch.tampered(10, "100", node_balance="20", node_net_flow="20")
    await env.user.create_channel(ch.definition, state)
    assert await env.user.get_node_balance(env.token) == NODE_FLOAT - 20 * M
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 120 * M
    user_wallet = await env.user.token_balance(env.token)
    node_wallet = await env.user.token_balance(env.token, env.node_key.address)

    await _expire_dispute(env, ch)
    tx = await env.other.close_channel(ch.id, state)  # anyone may close an expired dispute
    assert tx.event_names == ("ChannelClosed",)
    assert await env.user.token_balance(env.token) == user_wallet + 100 * M
    assert await env.user.token_balance(env.token, env.node_key.address) == node_wallet + 20 * M
    # the vault is not credited: the node took its share as a payout
    assert await env.user.get_node_balance(env.token) == NODE_FLOAT - 20 * M
    hub_holds = await env.user.token_balance(env.token, env.deployment.hub)
    assert hub_holds == NODE_FLOAT - 20 * M


async def test_a_failed_withdrawal_payout_becomes_a_reclaim_balance(env: Env) -> None:
    token = env.tokens["frozen"]
    ch = Channel(env, token=token)
    await env.user.create_channel(ch.definition, ch.deposit("100"))
    wallet = await env.user.token_balance(token)
    await _freeze(env, env.user_key.address)

    tx = await env.user.withdraw_from_channel(ch.id, ch.withdraw("40"))
    assert tx.event_names == ("TransferFailed", "ChannelWithdrawn")
    assert tx.events[0].args == {
        "recipient": env.user_key.address,
        "token": token,
        "amount": 40 * M,
    }
    assert await env.user.token_balance(token) == wallet
    assert await env.user.get_reclaim_balance(token) == 40 * M
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 60 * M

    await reverts("InvalidAddress", env.user.claim_funds(token, ZERO_ADDRESS))
    await reverts("IncorrectAmount", env.other.claim_funds(token))
    # a blacklisted user claims to another address of theirs
    destination = env.other_key.address
    before = await env.user.token_balance(token, destination)
    tx = await env.user.claim_funds(token, destination)
    assert tx.event_names == ("FundsClaimed",)
    assert tx.events[0].args == {
        "account": env.user_key.address,
        "token": token,
        "destination": destination,
        "amount": 40 * M,
    }
    assert await env.user.token_balance(token, destination) == before + 40 * M
    assert await env.user.get_reclaim_balance(token) == 0
    await reverts("IncorrectAmount", env.user.claim_funds(token, destination))


async def test_a_failed_payout_does_not_block_closing_an_expired_dispute(env: Env) -> None:
    token = env.tokens["frozen"]
    ch = Channel(env, token=token)
    await env.user.create_channel(ch.definition, ch.deposit("100"))
    state = await _expire_dispute(env, ch)
    await _freeze(env, env.user_key.address)

    tx = await env.node.close_channel(ch.id, state)
    assert tx.event_names == ("TransferFailed", "ChannelClosed")
    assert (await env.user.get_channel_data(ch.id)).status == "CLOSED"
    assert await env.user.get_reclaim_balance(token) == 100 * M

    # unfrozen later, the user claims to itself
    await _freeze(env, env.user_key.address, False)
    wallet = await env.user.token_balance(token)
    await env.user.claim_funds(token)
    assert await env.user.token_balance(token) == wallet + 100 * M
    assert await env.user.token_balance(token, env.deployment.hub) == NODE_FLOAT
