"""Our v1 ChannelHub through ChannelHubClient, on the in-process EVM and on anvil.

States are built and signed with the v1 core exactly as a client and the node would
(``nitrolite_v1.lifecycle`` next_state / apply_channel_creation / apply_transition, signed by
``nitrolite_v1.state.sign_state`` with the user's key and the node's key), turned into the
contract form by ``nitrolite_v1.calldata.contract_state_from_wire`` and submitted with the
SDK-identical calldata. Every test starts from the same deployment and is rolled back
afterwards, so balances are exact.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from channelhub_helpers import (
    CHALLENGE,
    ETHER,
    NODE_FLOAT,
    PEER,
    Channel,
    Env,
    M,
    make_env,
)
from channelhub_helpers import reverts as _reverts

from settlement_widgets._keccak import keccak256
from settlement_widgets.addresses import ZERO_ADDRESS
from settlement_widgets.channel.v1.core.state import pack_state, sign_challenge
from settlement_widgets.errors import InvalidSignatureError
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


# --- the happy paths ----------------------------------------------------------------------------


async def test_create_deposit_checkpoint_withdraw_close(env: Env) -> None:
    ch = Channel(env)
    wallet_before = await env.user.token_balance(env.token)

    tx = await env.user.create_channel(ch.definition, ch.deposit("100"))
    assert tx.channel_id == ch.id
    assert tx.event_names == ("ChannelDeposited", "ChannelCreated")
    created = tx.event("ChannelCreated")
    assert created.args["channelId"] == ch.id
    assert created.args["user"] == env.user_key.address
    assert created.args["definition"]["nonce"] == ch.nonce
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.locked_funds, data.challenge_expiry) == ("OPERATING", 100 * M, 0)
    assert data.last_state["version"] == 1
    assert data.definition["node"] == env.node_key.address
    assert await env.user.get_open_channels() == [ch.id]
    assert await env.user.get_channel_ids() == [ch.id]

    tx = await env.user.deposit_to_channel(ch.id, ch.deposit("50"))
    assert "ChannelDeposited" in tx.event_names
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 150 * M

    # two off-chain states (a send, then a receive); only the latest goes on chain, and the
    # node's vault settles the difference in its net flow: +30 - 10
    ch.send("30")
    tx = await env.node.checkpoint_channel(ch.id, ch.receive("10"))
    assert tx.event("ChannelCheckpointed").args["candidate"]["version"] == 4
    assert await env.user.get_node_balance(env.token) == NODE_FLOAT + 20 * M
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 130 * M

    tx = await env.user.withdraw_from_channel(ch.id, ch.withdraw("40"))
    assert "ChannelWithdrawn" in tx.event_names
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 90 * M

    final = ch.finalize()
    tx = await env.user.close_channel(ch.id, final)
    assert tx.event("ChannelClosed").args["finalState"]["intent"] == 1
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.locked_funds) == ("CLOSED", 0)
    assert await env.user.get_open_channels() == []
    assert await env.user.get_channel_ids() == []  # a closed channel leaves the list
    # the user paid 150, got 40 + 90 back: the 20 net sent off chain went to the node
    assert await env.user.token_balance(env.token) == wallet_before - 20 * M
    assert await env.user.token_balance(env.token, env.deployment.hub) == NODE_FLOAT + 20 * M

    # a closed channel takes nothing more: its final state is not newer than itself
    await _reverts("IncorrectStateVersion", env.user.close_channel(ch.id, final))


async def test_create_with_zero_then_close(env: Env) -> None:
    ch = Channel(env)
    wallet_before = await env.user.token_balance(env.token)

    tx = await env.user.create_channel(ch.definition, ch.acknowledge())
    assert tx.event("ChannelCreated").args["initialState"]["intent"] == 0  # OPERATE
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.locked_funds) == ("OPERATING", 0)

    await env.user.close_channel(ch.id, ch.finalize())
    assert (await env.user.get_channel_data(ch.id)).status == "CLOSED"
    assert await env.user.token_balance(env.token) == wallet_before
    assert await env.user.get_node_balance(env.token) == NODE_FLOAT


async def test_native_token_channel(env: Env) -> None:
    ch = Channel(env, token=ZERO_ADDRESS)
    await env.user.create_channel(ch.definition, ch.deposit("1.5"))
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 3 * ETHER // 2
    assert await env.user.token_balance(ZERO_ADDRESS, env.deployment.hub) == 3 * ETHER // 2

    # ether must come exactly as msg.value
    await _reverts("IncorrectValue", env.user.deposit_to_channel(ch.id, ch.deposit("1"), value=1))
    tx = await env.user.close_channel(ch.id, ch.finalize())
    assert "ChannelClosed" in tx.event_names
    assert await env.user.token_balance(ZERO_ADDRESS, env.deployment.hub) == 0


# --- disputes ---------------------------------------------------------------------------------


async def test_challenge_then_close_after_expiry(env: Env) -> None:
    ch = Channel(env)
    wallet_before = await env.user.token_balance(env.token)
    await env.user.create_channel(ch.definition, ch.deposit("100"))
    candidate_wire = ch.advance(30, "30", account_id=PEER)  # off chain only
    candidate = ch.contract(candidate_wire)

    challenger_sig = sign_challenge(candidate_wire, env.user_key, env.decimals)
    tx = await env.user.challenge_channel(ch.id, candidate, challenger_sig, 0)
    expiry = tx.event("ChannelChallenged").args["challengeExpireAt"]
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.challenge_expiry) == ("DISPUTED", expiry)
    assert expiry == await env.chain.timestamp() + CHALLENGE
    assert data.last_state["version"] == 2  # the newer co-signed state was applied
    assert await env.user.get_node_balance(env.token) == NODE_FLOAT + 30 * M

    # before expiry only a newer state (here: none) can end it; closing needs a CLOSE state
    await _reverts("IncorrectStateIntent", env.user.close_channel(ch.id, candidate))
    await _reverts(
        "IncorrectChannelStatus",
        env.node.challenge_channel(
            ch.id, candidate, sign_challenge(candidate_wire, env.node_key, env.decimals), 1
        ),
    )

    await env.chain.time_travel(CHALLENGE + 1)
    tx = await env.node.close_channel(ch.id, candidate)
    assert tx.event("ChannelClosed").args["finalState"]["version"] == 2
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.locked_funds) == ("CLOSED", 0)
    assert await env.user.token_balance(env.token) == wallet_before - 30 * M


async def test_newer_state_resolves_a_challenge(env: Env) -> None:
    ch = Channel(env)
    on_chain = ch.advance(10, "100")
    await env.user.create_channel(ch.definition, ch.contract(on_chain))

    # the node challenges with the state already on chain
    node_sig = sign_challenge(on_chain, env.node_key, env.decimals)
    await env.node.challenge_channel(ch.id, ch.contract(on_chain), node_sig, 1)
    assert (await env.user.get_channel_data(ch.id)).status == "DISPUTED"

    tx = await env.user.checkpoint_channel(ch.id, ch.send("25"))
    assert "ChannelCheckpointed" in tx.event_names
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.challenge_expiry, data.last_state["version"]) == ("OPERATING", 0, 2)
    assert data.locked_funds == 75 * M


async def test_an_expired_challenge_cannot_be_answered(env: Env) -> None:
    ch = Channel(env)
    on_chain = ch.advance(10, "100")
    await env.user.create_channel(ch.definition, ch.contract(on_chain))
    user_sig = sign_challenge(on_chain, env.user_key, env.decimals)
    await env.user.challenge_channel(ch.id, ch.contract(on_chain), user_sig, 0)
    await env.chain.time_travel(CHALLENGE + 1)
    await _reverts("ChallengeExpired", env.node.checkpoint_channel(ch.id, ch.send("25")))


# --- reverts ------------------------------------------------------------------------------------


async def test_bad_signatures_revert(env: Env) -> None:
    ch = Channel(env)
    first = ch.advance(10, "100")
    ch.sign(first, user_key=env.other_key)  # someone else signs as the user
    await _reverts("IncorrectSignature", env.user.create_channel(ch.definition, ch.contract(first)))

    ch.sign(first)
    state = ch.contract(first)
    await _reverts(
        "ValidatorNotApproved",  # validator 1 is not in this channel's bitmap (0x01)
        env.user.create_channel(ch.definition, {**state, "userSig": "0x01" + state["userSig"][4:]}),
    )
    # a validator byte and nothing else: the validator's error bubbles up, decoded
    await _reverts(
        "ECDSAInvalidSignatureLength",
        env.user.create_channel(ch.definition, {**state, "nodeSig": "0x00"}),
    )
    with pytest.raises(InvalidSignatureError):  # refused before sending (the hub: EmptySignature)
        await env.user.create_channel(ch.definition, {**state, "nodeSig": "0x"})
    await env.user.create_channel(ch.definition, state)

    # a plain state signature is not a challenge signature
    plain = bytes.fromhex(first["user_sig"][2:])
    await _reverts("IncorrectSignature", env.user.challenge_channel(ch.id, state, plain, 0))


async def test_stale_version_reverts(env: Env) -> None:
    ch = Channel(env)
    await env.user.create_channel(ch.definition, ch.deposit("100"))
    stale = ch.send("10")  # v2, kept off chain
    await env.user.deposit_to_channel(ch.id, ch.deposit("5"))  # v3 on chain
    await _reverts("IncorrectStateVersion", env.user.checkpoint_channel(ch.id, stale))
    await _reverts(
        "ChallengerVersionTooLow",
        env.user.challenge_channel(
            ch.id, stale, sign_challenge(ch.state, env.user_key, env.decimals), 0
        ),
    )


async def test_wrong_channel_id_reverts(env: Env) -> None:
    first, second = Channel(env), Channel(env)
    await env.user.create_channel(first.definition, first.deposit("10"))
    await env.user.create_channel(second.definition, second.deposit("10"))
    state_of_first = first.deposit("5")

    # signed for the first channel: its signatures do not cover the second one's id
    await _reverts(
        "IncorrectSignature", env.user.deposit_to_channel(second.id, state_of_first, value=0)
    )
    # not an id of this hub's version, and an id of this version that was never created:
    # both are unknown channels, whose (zero) user the signature validator refuses first
    await _reverts(
        "InvalidSignerAddress",
        env.user.deposit_to_channel("0x02" + first.id[4:], state_of_first, value=0),
    )
    await _reverts(
        "InvalidSignerAddress",
        env.user.deposit_to_channel("0x01" + "00" * 31, state_of_first, value=0),
    )
    # creating the same definition twice
    await _reverts(
        "IncorrectChannelStatus", env.user.create_channel(first.definition, first.deposit("1"))
    )


async def test_broken_invariant_reverts(env: Env) -> None:
    ch = Channel(env)
    await env.user.create_channel(ch.definition, ch.deposit("100"))
    wire = ch.advance(30, "10", account_id=PEER)
    wire["home_ledger"]["user_balance"] = "95"  # 95 + 0 != 100 - 10: funds out of thin air
    ch.sign(wire)
    await _reverts("IncorrectAllocationSum", env.user.checkpoint_channel(ch.id, ch.contract(wire)))


async def test_wrong_intent_and_node_vault_limits(env: Env) -> None:
    ch = Channel(env)
    await env.user.create_channel(ch.definition, ch.deposit("100"))
    deposit = ch.unsigned(10, "1")  # a deposit state, kept out of the channel's history
    ch.sign(deposit)
    await _reverts(
        "IncorrectStateIntent", env.user.withdraw_from_channel(ch.id, ch.contract(deposit))
    )

    # the node cannot pay a receive it has not funded
    await env.node.withdraw_from_node(env.node_key.address, env.token, NODE_FLOAT)
    assert await env.user.get_node_balance(env.token) == 0
    await _reverts("InsufficientNodeBalance", env.user.checkpoint_channel(ch.id, ch.receive("1")))
    await _reverts(
        "IncorrectMsgSender", env.user.withdraw_from_node(env.user_key.address, env.token, 1)
    )


async def test_definition_checks(env: Env) -> None:
    ch = Channel(env)
    state = ch.deposit("1")
    await _reverts(
        "IncorrectChallengeDuration",
        env.user.create_channel({**ch.definition, "challengeDuration": 60}, state),
    )
    await _reverts(
        "IncorrectNode",
        env.user.create_channel({**ch.definition, "node": env.other_key.address}, state),
    )
    assert await env.user.version() == 1
    assert await env.user.node() == env.node_key.address


async def test_raw_keccak_signatures_are_accepted(env: Env) -> None:
    # validator 0 takes the EIP-191 digest (what the SDK signs) or the raw keccak of the message
    ch = Channel(env)
    wire = ch.advance(10, "10")
    digest = keccak256(pack_state(wire, env.decimals))
    wire["user_sig"] = "0x00" + env.user_key.sign_hash(digest).hex()
    await env.user.create_channel(ch.definition, ch.contract(wire))
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 10 * M
