"""Our ChannelHub follows the real hub's rules (Nitrolite v1.4.1 `ChannelHub.sol` and
`ChannelEngine.sol`), on the in-process EVM and on anvil.

Each test pins one rule where our hub used to differ from the reference: the engine's
net-flow rules for each home intent, which error a call reverts with when several checks
fail (the reference's order), the order of events, the expiry boundaries of a dispute, and
``getChannelIds`` dropping closed channels. Every state here is co-signed by the user and the
node: the hub, not the signatures, must refuse it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from channelhub_helpers import (
    CHALLENGE,
    NODE_FLOAT,
    Channel,
    Env,
    M,
    block_time,
    make_env,
    next_block_at,
    reverts,
)

from settlement_widgets.addresses import ZERO_ADDRESS
from settlement_widgets.channel.v1.core.calldata import contract_state_from_wire
from settlement_widgets.channel.v1.core.state import decimals_from_map, sign_challenge, sign_state
from settlement_widgets.sandbox import Chain

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(chain: Chain) -> Env:
    return await make_env(chain)


@pytest_asyncio.fixture(autouse=True, loop_scope="module")
async def _isolate(env: Env) -> AsyncIterator[None]:
    snapshot = await env.chain.snapshot()
    yield
    await env.chain.revert(snapshot)


async def _open(env: Env, amount: str = "100") -> Channel:
    ch = Channel(env)
    await env.user.create_channel(ch.definition, ch.deposit(amount))
    return ch


# --- the engine's net-flow rules ------------------------------------------------------------


async def test_a_withdrawal_of_nothing_reverts(env: Env) -> None:
    ch = await _open(env)
    await reverts(
        "IncorrectUserNetFlowDelta", env.user.withdraw_from_channel(ch.id, ch.withdraw("0"))
    )


async def test_a_deposit_of_nothing_reverts(env: Env) -> None:
    ch = await _open(env)
    await reverts("IncorrectUserNetFlowDelta", env.user.deposit_to_channel(ch.id, ch.deposit("0")))


async def test_a_checkpoint_carrying_an_unbacked_deposit_reverts_and_pulls_nothing(
    env: Env,
) -> None:
    # the node co-signed a deposit (v2) that never reached the chain, then a transfer out of
    # it (v3): checkpointing v3 must not pull the missing deposit from the user's wallet
    ch = await _open(env)
    ch.deposit("50")
    transfer = ch.send("20")
    wallet = await env.user.token_balance(env.token)
    await reverts("IncorrectUserNetFlowDelta", env.node.checkpoint_channel(ch.id, transfer))
    assert await env.user.token_balance(env.token) == wallet
    data = await env.user.get_channel_data(ch.id)
    assert (data.last_state["version"], data.locked_funds) == (1, 100 * M)


async def test_an_operate_state_cannot_allocate_to_the_node(env: Env) -> None:
    ch = await _open(env)
    # the user receives 10 and the node also keeps 10 allocated: balanced, but OPERATE
    # states allocate nothing to the node
    state = ch.tampered(31, "10", node_balance="10", node_net_flow="20")
    await reverts("IncorrectNodeAllocation", env.user.checkpoint_channel(ch.id, state))


async def test_a_close_that_still_allocates_to_the_user_reverts(env: Env) -> None:
    ch = await _open(env)
    wallet = await env.user.token_balance(env.token)
    # a "final" state that leaves the user's 100 allocated instead of paying it out
    state = ch.tampered(200, user_balance="100", user_net_flow="100")
    await reverts("IncorrectUserAllocation", env.user.close_channel(ch.id, state))
    assert (await env.user.get_channel_data(ch.id)).status == "OPERATING"
    assert await env.user.token_balance(env.token) == wallet


async def test_a_close_that_still_allocates_to_the_node_reverts(env: Env) -> None:
    ch = await _open(env)
    state = ch.tampered(200, node_balance="5", node_net_flow="5")
    await reverts("IncorrectNodeAllocation", env.user.close_channel(ch.id, state))


async def test_decimals_beyond_the_max_precision_revert(env: Env) -> None:
    # 19 decimals declared for the 6-decimal token: the precision cap is checked first
    ch = Channel(env)
    state = ch.unsigned(10, "1")
    table = decimals_from_map({f"{env.chain.chain_id}:{env.token}": 19})
    state["user_sig"] = "0x" + sign_state(state, env.user_key, table).hex()
    state["node_sig"] = "0x" + sign_state(state, env.node_key, table).hex()
    await reverts(
        "DecimalsExceedMaxPrecision",
        env.user.create_channel(ch.definition, contract_state_from_wire(state, table)),
    )


# --- the same call, the same revert ---------------------------------------------------------


async def test_closing_a_closed_channel_reverts_with_a_stale_version(env: Env) -> None:
    ch = await _open(env)
    final = ch.finalize()
    await env.user.close_channel(ch.id, final)
    await reverts("IncorrectStateVersion", env.user.close_channel(ch.id, final))
    # the closed channel's id is not reusable either: a fresh start with the same definition
    again = Channel(env)
    again.nonce, again.definition, again.id = ch.nonce, ch.definition, ch.id
    await reverts(
        "IncorrectChannelStatus", env.user.create_channel(ch.definition, again.deposit("1"))
    )


async def test_an_unknown_or_foreign_channel_id_fails_on_its_zero_user(env: Env) -> None:
    ch = await _open(env)
    state = ch.withdraw("10")
    for unknown in ("0x02" + ch.id[4:], "0x01" + "00" * 31):
        await reverts("InvalidSignerAddress", env.user.withdraw_from_channel(unknown, state))
        await reverts("InvalidSignerAddress", env.user.checkpoint_channel(unknown, ch.send("1")))
    # a challenge reads the channel's status first
    sig = sign_challenge(ch.state, env.user_key, env.decimals)
    await reverts(
        "IncorrectChannelStatus",
        env.user.challenge_channel("0x01" + "00" * 31, ch.contract(ch.state), sig, 0),
    )


async def test_the_user_cannot_be_the_node(env: Env) -> None:
    ch = Channel(env, user_key=env.node_key)
    state = ch.deposit("1")
    failure = await reverts("AddressCollision", env.node.create_channel(ch.definition, state))
    assert [a.lower() for a in failure.error_args] == [env.node_key.address.lower()]


async def test_value_on_a_non_deposit_creation_is_refused_before_signatures(env: Env) -> None:
    ch = Channel(env)
    wire = ch.unsigned(1)
    ch.sign(wire, user_key=env.other_key)  # someone else signs as the user
    forged = ch.contract(wire)
    await reverts("IncorrectValue", env.user.create_channel(ch.definition, forged, value=1))
    await reverts("IncorrectSignature", env.user.create_channel(ch.definition, forged))


async def test_a_stale_answer_to_an_expired_dispute_names_the_version(env: Env) -> None:
    ch = await _open(env)
    stale = ch.send("5")  # v2, off chain
    await env.user.checkpoint_channel(ch.id, ch.send("5"))  # v3 on chain
    sig = sign_challenge(ch.state, env.user_key, env.decimals)
    await env.user.challenge_channel(ch.id, ch.contract(ch.state), sig, 0)
    await env.chain.time_travel(CHALLENGE + 1)
    # the version is checked before the dispute's expiry
    await reverts("IncorrectStateVersion", env.node.checkpoint_channel(ch.id, stale))
    await reverts("ChallengeExpired", env.node.checkpoint_channel(ch.id, ch.send("1")))


async def test_the_challenge_duration_is_bounded_both_ways(env: Env) -> None:
    ch = Channel(env)
    state = ch.deposit("1")
    for duration in (CHALLENGE - 1, 7 * CHALLENGE + 1):
        await reverts(
            "IncorrectChallengeDuration",
            env.user.create_channel({**ch.definition, "challengeDuration": duration}, state),
        )


# --- events, in the reference's order --------------------------------------------------------


async def test_creation_emits_the_intent_event_before_channel_created(env: Env) -> None:
    deposit = Channel(env)
    tx = await env.user.create_channel(deposit.definition, deposit.deposit("10"))
    assert tx.event_names == ("ChannelDeposited", "ChannelCreated")

    operate = Channel(env)
    tx = await env.user.create_channel(operate.definition, operate.acknowledge())
    assert tx.event_names == ("ChannelCheckpointed", "ChannelCreated")

    # a channel opened by withdrawing what the user received off chain before it existed:
    # the node's vault pays it
    withdraw = Channel(env)
    state = withdraw.tampered(11, "10", user_balance="0", node_net_flow="10")
    wallet = await env.user.token_balance(env.token)
    tx = await env.user.create_channel(withdraw.definition, state)
    assert tx.event_names == ("NodeBalanceUpdated", "ChannelWithdrawn", "ChannelCreated")
    assert await env.user.token_balance(env.token) == wallet + 10 * M
    assert await env.user.get_node_balance(env.token) == NODE_FLOAT - 10 * M


async def test_vault_events_come_before_the_balance_update(env: Env) -> None:
    tx = await env.node.deposit_to_node(env.token, 5 * M)
    assert tx.event_names == ("Deposited", "NodeBalanceUpdated")
    assert tx.events[1].args["amount"] == NODE_FLOAT + 5 * M
    tx = await env.node.withdraw_from_node(env.node_key.address, env.token, 5 * M)
    assert tx.event_names == ("Withdrawn", "NodeBalanceUpdated")
    assert tx.events[1].args["amount"] == NODE_FLOAT


async def test_fund_movements_come_before_the_state_event(env: Env) -> None:
    ch = await _open(env)
    tx = await env.user.checkpoint_channel(ch.id, ch.receive("10"))
    assert tx.event_names == ("NodeBalanceUpdated", "ChannelCheckpointed")
    tx = await env.user.close_channel(ch.id, ch.finalize())
    assert tx.event_names == ("ChannelClosed",)  # the node's net flow did not change
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 0


# --- dispute expiry: answered while now <= expiry, closed once expiry < now ----------------------


async def _disputed(env: Env) -> tuple[Channel, int]:
    ch = await _open(env)
    sig = sign_challenge(ch.state, env.user_key, env.decimals)
    tx = await env.user.challenge_channel(ch.id, ch.contract(ch.state), sig, 0)
    return ch, int(tx.event("ChannelChallenged").args["challengeExpireAt"])


async def test_a_dispute_can_be_answered_at_its_expiry_second(env: Env) -> None:
    ch, expiry = await _disputed(env)
    await next_block_at(env.chain, expiry)
    tx = await env.node.checkpoint_channel(ch.id, ch.send("5"))
    assert await block_time(env, tx) == expiry
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.challenge_expiry) == ("OPERATING", 0)


async def test_a_dispute_cannot_be_answered_after_its_expiry(env: Env) -> None:
    ch, expiry = await _disputed(env)
    await next_block_at(env.chain, expiry + 1)
    await reverts("ChallengeExpired", env.node.checkpoint_channel(ch.id, ch.send("5")))


async def test_a_dispute_closes_only_after_its_expiry_second(env: Env) -> None:
    ch, expiry = await _disputed(env)
    disputed = ch.contract(ch.state)
    await next_block_at(env.chain, expiry)
    # not expired yet at the expiry second: only a co-signed CLOSE state closes
    await reverts("IncorrectStateIntent", env.node.close_channel(ch.id, disputed))
    await next_block_at(env.chain, expiry + 1)
    tx = await env.node.close_channel(ch.id, disputed)
    assert await block_time(env, tx) == expiry + 1
    assert (await env.user.get_channel_data(ch.id)).status == "CLOSED"


# --- getChannelIds ------------------------------------------------------------------------------


async def test_closed_channels_leave_get_channel_ids(env: Env) -> None:
    first, second, third = await _open(env), await _open(env), await _open(env)
    assert await env.user.get_channel_ids() == [first.id, second.id, third.id]

    await env.user.close_channel(first.id, first.finalize())
    # the set moves its last id into the freed slot, as OpenZeppelin's EnumerableSet does
    assert await env.user.get_channel_ids() == [third.id, second.id]
    assert await env.user.get_open_channels() == [third.id, second.id]

    # a disputed channel is still listed; once its dispute closes it, it leaves
    sig = sign_challenge(second.state, env.user_key, env.decimals)
    await env.user.challenge_channel(second.id, second.contract(second.state), sig, 0)
    assert await env.user.get_channel_ids() == [third.id, second.id]
    await env.chain.time_travel(CHALLENGE + 1)
    await env.user.close_channel(second.id, second.contract(second.state))
    assert await env.user.get_channel_ids() == [third.id]
    assert (await env.user.get_channel_data(second.id)).status == "CLOSED"


async def test_native_token_deposits_take_exactly_their_value(env: Env) -> None:
    ch = Channel(env, token=ZERO_ADDRESS)
    await env.user.create_channel(ch.definition, ch.deposit("1"))
    # a withdrawal takes no value at all
    wire = ch.advance(11, "0.5")
    sig = sign_challenge(wire, env.user_key, env.decimals)
    await reverts(
        "IncorrectValue", env.user.challenge_channel(ch.id, ch.contract(wire), sig, 0, value=1)
    )
