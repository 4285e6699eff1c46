"""Cross-chain escrow on our ChannelHub, against the real hub's rules (Nitrolite v1.4.1
``ChannelHub.sol``, ``EscrowDepositEngine.sol``, ``EscrowWithdrawalEngine.sol`` and the escrow
intents of ``ChannelEngine.sol``), on the in-process EVM and on anvil.

Both sides of an escrow run on the one sandbox chain: the hub picks the side from the state
and its own records, not from a second chain. A channel whose home ledger names this chain
and is open on this hub takes the HOME side (the home channel advances); a channel whose home
ledger names another chain (``FOREIGN``, a chain id this test only names, with a token there)
takes the NON-HOME side (an escrow record here, with this chain's token in the state's escrow
ledger). That is exactly the comparison the real hub makes (``block.chainid`` against the
ledgers' chain ids), and the home chain is only a number in the signed state. Every state is
built with the v1 core transitions (120 mutual lock, 20 escrow deposit, 110 escrow lock, 21
escrow withdraw) and co-signed by the user and the node; balances are asserted exactly after
each step, reverts by the real error names, and time moves with the chain's own clock.

One rule the reader may not expect (and the real hub has): an escrow deposit nobody
challenges goes to the NODE's vault once ``ESCROW_DEPOSIT_UNLOCK_DELAY`` has passed (the node
locked as much for the user in the home channel); the user's way back is a challenge before
that time, after whose expiry the deposit is returned to the user.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from channelhub_helpers import (
    DAY,
    ELSEWHERE,
    FOREIGN,
    FOREIGN_TOKEN,
    NODE_FLOAT,
    Channel,
    Env,
    M,
    block_time,
    make_env,
    next_block_at,
    node_vault,
    open_here,
    remote_channel,
    reverts,
    wallet_tokens,
)

from settlement_widgets.addresses import ZERO_ADDRESS
from settlement_widgets.channel.v1.core.ids import escrow_channel_id
from settlement_widgets.channel.v1.core.state import sign_challenge
from settlement_widgets.sandbox import Chain

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: a FOREIGN token with 18 decimals (amounts are compared across ledgers in 18-decimal units)
FOREIGN_TOKEN_18 = "0x00000000000000000000000000000000000000f1"
UNLOCK = 3 * 3600
FUNDED = 1_000 * M  # what the user's wallet holds after make_env


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(chain: Chain) -> Env:
    return await make_env(
        chain,
        foreign_tokens={
            f"{FOREIGN}:{FOREIGN_TOKEN}": 6,
            f"{FOREIGN}:{FOREIGN_TOKEN_18}": 18,
            f"{ELSEWHERE}:{FOREIGN_TOKEN}": 6,
        },
    )


@pytest_asyncio.fixture(autouse=True, loop_scope="module")
async def _isolate(env: Env) -> AsyncIterator[None]:
    snapshot = await env.chain.snapshot()
    yield
    await env.chain.revert(snapshot)


def _here(env: Env) -> dict[str, Any]:
    """The escrow ledger's chain and token when the escrow is on this chain."""
    return {"blockchain_id": str(env.chain.chain_id), "token_address": env.token}


def _foreign() -> dict[str, Any]:
    return {"blockchain_id": str(FOREIGN), "token_address": FOREIGN_TOKEN}


async def _escrow_deposit(env: Env, amount: str = "30") -> tuple[Channel, dict[str, Any], str, int]:
    """A non-home escrow deposit of ``amount`` initiated by the user: the channel, its lock
    state (wire), the escrow id and the record's unlock time."""
    ch = remote_channel(env)
    lock = ch.advance(120, amount, **_here(env))
    tx = await env.user.initiate_escrow_deposit(ch.definition, ch.contract(lock))
    escrow_id = lock["escrow_channel_id"]
    return ch, lock, escrow_id, await block_time(env, tx) + UNLOCK


# --- escrow deposit, non-home side --------------------------------------------------------------


async def test_an_escrow_deposit_pulls_the_users_funds_and_locks_them(env: Env) -> None:
    assert await env.user.escrow_deposit_unlock_delay() == UNLOCK
    ch = remote_channel(env)
    lock = ch.advance(120, "30", **_here(env))
    escrow_id = lock["escrow_channel_id"]
    # the escrow id is keccak256(abi.encode(homeChannelId, uint64 version of the lock))
    assert escrow_id == escrow_channel_id(ch.id, 2)

    tx = await env.user.initiate_escrow_deposit(ch.definition, ch.contract(lock))
    assert tx.event_names == ("EscrowDepositInitiated",)
    event = tx.event("EscrowDepositInitiated").args
    assert (event["escrowId"], event["channelId"]) == (escrow_id, ch.id)
    assert await wallet_tokens(env) == FUNDED - 30 * M
    assert await node_vault(env) == NODE_FLOAT

    data = await env.user.get_escrow_deposit_data(escrow_id)
    assert (data.channel_id, data.status, data.locked_amount) == (ch.id, "INITIALIZED", 30 * M)
    assert data.unlock_at == await block_time(env, tx) + UNLOCK
    assert data.challenge_expiry == 0
    assert (int(data.init_state["version"]), data.init_state["intent"]) == (2, 4)
    assert await env.user.get_escrow_deposit_ids() == [escrow_id]
    assert await env.user.escrow_head() == 0
    # the channel itself is not on this hub: only the escrow record is
    assert (await env.user.get_channel_data(ch.id)).status == "VOID"


async def test_finalizing_an_escrow_deposit_releases_it_to_the_node_vault(env: Env) -> None:
    ch, _lock, escrow_id, _unlock = await _escrow_deposit(env)
    finalize = ch.contract(ch.advance(20, "30"))
    tx = await env.other.finalize_escrow_deposit(ch.id, escrow_id, finalize)
    assert tx.event_names == ("NodeBalanceUpdated", "EscrowDepositFinalized")
    assert tx.events[0].args["amount"] == NODE_FLOAT + 30 * M
    assert await node_vault(env) == NODE_FLOAT + 30 * M
    assert await wallet_tokens(env) == FUNDED - 30 * M
    data = await env.user.get_escrow_deposit_data(escrow_id)
    assert (data.status, data.locked_amount, data.challenge_expiry) == ("FINALIZED", 0, 0)
    # the purge every accepted state runs walked past the finalized entry
    assert await env.user.escrow_head() == 1

    await reverts(
        "EscrowAlreadyFinalized", env.other.finalize_escrow_deposit(ch.id, escrow_id, finalize)
    )


async def test_an_unchallenged_escrow_deposit_is_purged_only_after_the_unlock_delay(
    env: Env,
) -> None:
    _ch, _lock, escrow_id, unlock_at = await _escrow_deposit(env)
    assert await env.user.get_unlockable_escrow_deposit_stats() == (0, 0)

    # one second before the unlock time: nothing to purge, and the head stays
    await next_block_at(env.chain, unlock_at - 1)
    tx = await env.other.purge_escrow_deposits(64)
    assert tx.event_names == ()
    assert (await env.user.get_escrow_deposit_data(escrow_id)).status == "INITIALIZED"
    assert await env.user.escrow_head() == 0
    assert await node_vault(env) == NODE_FLOAT

    # at the unlock time it goes to the node's vault (not back to the user)
    await next_block_at(env.chain, unlock_at)
    tx = await env.other.purge_escrow_deposits(64)
    assert await block_time(env, tx) == unlock_at
    assert tx.event_names == ("NodeBalanceUpdated", "EscrowDepositsPurged")
    purged = tx.event("EscrowDepositsPurged").args
    assert (purged["escrowIds"], purged["purgedCount"]) == ([escrow_id], 1)
    assert await node_vault(env) == NODE_FLOAT + 30 * M
    assert await wallet_tokens(env) == FUNDED - 30 * M
    data = await env.user.get_escrow_deposit_data(escrow_id)
    assert (data.status, data.locked_amount) == ("FINALIZED", 0)
    assert await env.user.escrow_head() == 1
    assert await env.user.get_unlockable_escrow_deposit_stats() == (0, 0)


async def test_purges_walk_the_queue_in_order_within_the_step_limit(env: Env) -> None:
    first = await _escrow_deposit(env, "10")
    second = await _escrow_deposit(env, "20")
    await env.chain.time_travel(UNLOCK + 60)
    assert await env.user.get_unlockable_escrow_deposit_stats() == (2, 30 * M)
    assert await env.user.get_escrow_deposit_ids(0, 1) == [first[2]]
    assert await env.user.get_escrow_deposit_ids(1, 1) == [second[2]]
    assert await env.user.get_escrow_deposit_ids(2, 1) == []

    tx = await env.other.purge_escrow_deposits(1)
    assert tx.event("EscrowDepositsPurged").args["escrowIds"] == [first[2]]
    assert await env.user.escrow_head() == 1
    assert await env.user.get_unlockable_escrow_deposit_stats() == (1, 20 * M)
    assert await node_vault(env) == NODE_FLOAT + 10 * M


async def test_any_accepted_state_purges_unlocked_escrow_deposits_first(env: Env) -> None:
    _ch, _lock, escrow_id, _unlock = await _escrow_deposit(env)
    home = await open_here(env)
    await env.chain.time_travel(UNLOCK)
    # a home-channel deposit: the purge runs after its funds move, before its event
    tx = await env.user.deposit_to_channel(home.id, home.deposit("5"))
    assert tx.event_names == ("NodeBalanceUpdated", "EscrowDepositsPurged", "ChannelDeposited")
    assert tx.events[0].args["amount"] == NODE_FLOAT + 30 * M
    assert (await env.user.get_escrow_deposit_data(escrow_id)).status == "FINALIZED"


async def test_a_challenge_before_the_unlock_disputes_the_deposit_for_a_day(env: Env) -> None:
    ch, lock, escrow_id, unlock_at = await _escrow_deposit(env)
    await next_block_at(env.chain, unlock_at - 1)
    sig = sign_challenge(lock, env.user_key, env.decimals)
    tx = await env.user.challenge_escrow_deposit(escrow_id, sig, 0)
    assert tx.event_names == ("EscrowDepositChallenged",)
    expiry = int(tx.event("EscrowDepositChallenged").args["challengeExpireAt"])
    assert expiry == unlock_at - 1 + DAY  # the challenge's block time + 1 day
    data = await env.user.get_escrow_deposit_data(escrow_id)
    assert (data.status, data.challenge_expiry, data.locked_amount) == ("DISPUTED", expiry, 30 * M)

    # a disputed deposit is not purged (the walk passes over it)
    await next_block_at(env.chain, unlock_at + 10)
    tx = await env.other.purge_escrow_deposits(64)
    assert tx.event_names == ()
    assert await env.user.escrow_head() == 1
    assert await node_vault(env) == NODE_FLOAT

    # once the dispute has expired the deposit goes back to the user, whatever the state given
    await next_block_at(env.chain, expiry + 1)
    tx = await env.other.finalize_escrow_deposit(ch.id, escrow_id, ch.contract(lock))
    assert tx.event_names == ("EscrowDepositFinalized",)
    assert tx.event("EscrowDepositFinalized").args["state"]["intent"] == 4  # the record's
    assert await wallet_tokens(env) == FUNDED
    assert await node_vault(env) == NODE_FLOAT
    data = await env.user.get_escrow_deposit_data(escrow_id)
    assert (data.status, data.locked_amount, data.challenge_expiry) == ("FINALIZED", 0, 0)


async def test_escrow_amounts_compare_across_decimals(env: Env) -> None:
    # home token with 18 decimals, escrow token here with 6: 30 units on both ledgers
    ch = Channel(env, token=FOREIGN_TOKEN_18, home_chain=FOREIGN)
    ch.advance(10, "100")
    lock = ch.contract(ch.advance(120, "30", **_here(env)))
    assert (lock["homeLedger"]["nodeAllocation"], lock["nonHomeLedger"]["userAllocation"]) == (
        str(30 * 10**18),
        str(30 * M),
    )
    await env.user.initiate_escrow_deposit(ch.definition, lock)
    escrow_id = ch.state["escrow_channel_id"]
    await env.node.finalize_escrow_deposit(ch.id, escrow_id, ch.contract(ch.advance(20, "30")))
    assert await node_vault(env) == NODE_FLOAT + 30 * M
    assert await wallet_tokens(env) == FUNDED - 30 * M


async def test_a_native_escrow_deposit_takes_exactly_its_value(env: Env) -> None:
    ch = remote_channel(env)
    lock = ch.contract(
        ch.advance(120, "0.5", blockchain_id=str(env.chain.chain_id), token_address=ZERO_ADDRESS)
    )
    for wrong in (0, 10**18):
        await reverts(
            "IncorrectValue", env.user.initiate_escrow_deposit(ch.definition, lock, value=wrong)
        )
    w3 = env.chain.w3
    before = await w3.eth.get_balance(env.deployment.hub)
    await env.user.initiate_escrow_deposit(ch.definition, lock, value=10**18 // 2)
    assert await w3.eth.get_balance(env.deployment.hub) == before + 10**18 // 2
    data = await env.user.get_escrow_deposit_data(ch.state["escrow_channel_id"])
    assert (data.status, data.locked_amount) == ("INITIALIZED", 10**18 // 2)


async def test_a_disputed_deposit_can_still_be_finalized_until_its_expiry_second(
    env: Env,
) -> None:
    ch, lock, escrow_id, _unlock = await _escrow_deposit(env)
    sig = sign_challenge(lock, env.node_key, env.decimals)
    tx = await env.node.challenge_escrow_deposit(escrow_id, sig, 1)
    expiry = int(tx.event("EscrowDepositChallenged").args["challengeExpireAt"])
    await next_block_at(env.chain, expiry)
    tx = await env.node.finalize_escrow_deposit(ch.id, escrow_id, ch.contract(ch.advance(20, "30")))
    assert await block_time(env, tx) == expiry
    assert tx.event_names == ("NodeBalanceUpdated", "EscrowDepositFinalized")
    assert await node_vault(env) == NODE_FLOAT + 30 * M


async def test_escrow_deposit_challenges_that_the_real_hub_refuses(env: Env) -> None:
    _ch, lock, escrow_id, unlock_at = await _escrow_deposit(env)
    user_sig = sign_challenge(lock, env.user_key, env.decimals)
    await reverts(
        "NoChannelIdFoundForEscrow",
        env.user.challenge_escrow_deposit("0x" + "11" * 32, user_sig, 0),
    )
    # the user's challenge signature claimed as the node's
    await reverts("IncorrectSignature", env.user.challenge_escrow_deposit(escrow_id, user_sig, 1))
    await next_block_at(env.chain, unlock_at)
    await reverts("UnlockPeriodPassed", env.user.challenge_escrow_deposit(escrow_id, user_sig, 0))


async def test_a_second_challenge_is_judged_by_its_signature_first(env: Env) -> None:
    _ch, lock, escrow_id, _unlock = await _escrow_deposit(env)
    user_sig = sign_challenge(lock, env.user_key, env.decimals)
    await env.user.challenge_escrow_deposit(escrow_id, user_sig, 0)
    # the reference checks the challenger's signature before the record's status
    await reverts("IncorrectSignature", env.user.challenge_escrow_deposit(escrow_id, user_sig, 1))
    await reverts(
        "IncorrectEscrowStatus", env.user.challenge_escrow_deposit(escrow_id, user_sig, 0)
    )


async def test_escrow_deposits_that_the_real_hub_refuses(env: Env) -> None:
    ch = remote_channel(env)
    lock_wire = ch.advance(120, "30", **_here(env))
    lock = ch.contract(lock_wire)

    # wrong intent: a home deposit state is not a lock
    await reverts(
        "IncorrectStateIntent",
        env.user.initiate_escrow_deposit(ch.definition, ch.contract(remote_channel(env).state)),
    )
    # bad signature: the lock signed by another key in the user's place
    forged = dict(lock_wire)
    ch.sign(forged, user_key=env.other_key)
    await reverts(
        "IncorrectSignature", env.user.initiate_escrow_deposit(ch.definition, ch.contract(forged))
    )
    # wrong chain: an escrow ledger on a chain that is not this one
    elsewhere = remote_channel(env)
    wrong = elsewhere.advance(120, "30", blockchain_id=str(ELSEWHERE), token_address=FOREIGN_TOKEN)
    await reverts(
        "IncorrectNonHomeChain",
        env.user.initiate_escrow_deposit(elsewhere.definition, elsewhere.contract(wrong)),
    )
    # wrong chain: a channel whose home is this chain but which this hub does not hold
    unopened = Channel(env)
    unopened.advance(10, "100")
    homeless = unopened.contract(unopened.advance(120, "30", **_foreign()))
    await reverts(
        "IncorrectHomeChain", env.user.initiate_escrow_deposit(unopened.definition, homeless)
    )

    await env.user.initiate_escrow_deposit(ch.definition, lock)
    escrow_id = lock_wire["escrow_channel_id"]
    await reverts("EscrowAlreadyExists", env.user.initiate_escrow_deposit(ch.definition, lock))
    # finalize: the lock state again (wrong intent), another channel id, a skipped version
    await reverts("IncorrectStateIntent", env.other.finalize_escrow_deposit(ch.id, escrow_id, lock))
    await reverts(
        "IncorrectChannelId", env.other.finalize_escrow_deposit(elsewhere.id, escrow_id, lock)
    )
    skipped = ch.unsigned(20, "30")
    skipped["version"] = "4"
    ch.sign(skipped)
    await reverts(
        "IncorrectStateVersion",
        env.other.finalize_escrow_deposit(ch.id, escrow_id, ch.contract(skipped)),
    )
    assert await wallet_tokens(env) == FUNDED - 30 * M
    assert await node_vault(env) == NODE_FLOAT


# --- escrow deposit, home side -------------------------------------------------------------------


async def test_an_escrow_deposit_on_the_home_chain_moves_the_nodes_lock_to_the_user(
    env: Env,
) -> None:
    ch = await open_here(env)
    lock_wire = ch.advance(120, "30", **_foreign())
    lock = ch.contract(lock_wire)
    escrow_id = lock_wire["escrow_channel_id"]

    # on the home chain only the node submits the lock, and it carries no value
    await reverts("IncorrectMsgSender", env.user.initiate_escrow_deposit(ch.definition, lock))
    await reverts("IncorrectValue", env.node.initiate_escrow_deposit(ch.definition, lock, value=1))
    tx = await env.node.initiate_escrow_deposit(ch.definition, lock)
    assert tx.event_names == ("NodeBalanceUpdated", "EscrowDepositInitiatedOnHome")
    assert tx.event("EscrowDepositInitiatedOnHome").args["escrowId"] == escrow_id
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, int(data.last_state["version"]), data.last_state["intent"]) == (
        "OPERATING",
        2,
        4,
    )
    assert data.locked_funds == 130 * M
    assert await node_vault(env) == NODE_FLOAT - 30 * M
    # the home side keeps no escrow record
    assert (await env.user.get_escrow_deposit_data(escrow_id)).status == "VOID"

    # anyone may finalize: the node's lock becomes the user's allocation, no funds move
    finalize = ch.contract(ch.advance(20, "30"))
    tx = await env.other.finalize_escrow_deposit(ch.id, escrow_id, finalize)
    assert tx.event_names == ("EscrowDepositFinalizedOnHome",)
    data = await env.user.get_channel_data(ch.id)
    assert data.locked_funds == 130 * M
    assert (int(data.last_state["homeLedger"]["userAllocation"]), data.last_state["intent"]) == (
        130 * M,
        5,
    )
    assert await node_vault(env) == NODE_FLOAT - 30 * M

    # the user can now take out what it deposited plus the escrowed amount
    await env.user.withdraw_from_channel(ch.id, ch.withdraw("130"))
    assert await wallet_tokens(env) == FUNDED - 100 * M + 130 * M
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 0


async def test_a_home_escrow_finalization_must_follow_the_lock(env: Env) -> None:
    ch = await open_here(env)
    lock_wire = ch.advance(120, "30", **_foreign())  # co-signed, never submitted
    finalize = ch.contract(ch.advance(20, "30"))
    await reverts(
        "IncorrectPreviousStateIntent",
        env.other.finalize_escrow_deposit(ch.id, lock_wire["escrow_channel_id"], finalize),
    )
    await reverts(
        "IncorrectStateIntent",
        env.other.finalize_escrow_deposit(
            ch.id, lock_wire["escrow_channel_id"], ch.contract(lock_wire)
        ),
    )


# --- escrow withdrawal ---------------------------------------------------------------------------


async def test_an_escrow_withdrawal_pays_the_user_from_the_node_vault(env: Env) -> None:
    ch = remote_channel(env)
    lock_wire = ch.advance(110, "40", **_here(env))
    escrow_id = lock_wire["escrow_channel_id"]
    assert escrow_id == escrow_channel_id(ch.id, 2)
    tx = await env.user.initiate_escrow_withdrawal(ch.definition, ch.contract(lock_wire))
    assert tx.event_names == ("NodeBalanceUpdated", "EscrowWithdrawalInitiated")
    assert await node_vault(env) == NODE_FLOAT - 40 * M
    assert await wallet_tokens(env) == FUNDED
    data = await env.user.get_escrow_withdrawal_data(escrow_id)
    assert (data.channel_id, data.status, data.locked_amount) == (ch.id, "INITIALIZED", 40 * M)
    assert (data.unlock_at, data.challenge_expiry) == (0, 0)

    finalize = ch.contract(ch.advance(21, "40"))
    tx = await env.other.finalize_escrow_withdrawal(ch.id, escrow_id, finalize)
    assert tx.event_names == ("EscrowWithdrawalFinalized",)
    assert await wallet_tokens(env) == FUNDED + 40 * M
    assert await node_vault(env) == NODE_FLOAT - 40 * M
    data = await env.user.get_escrow_withdrawal_data(escrow_id)
    assert (data.status, data.locked_amount) == ("FINALIZED", 0)
    await reverts(
        "EscrowAlreadyFinalized", env.other.finalize_escrow_withdrawal(ch.id, escrow_id, finalize)
    )


async def test_a_disputed_escrow_withdrawal_returns_to_the_vault_after_its_expiry(
    env: Env,
) -> None:
    ch = remote_channel(env)
    lock_wire = ch.advance(110, "40", **_here(env))
    escrow_id = lock_wire["escrow_channel_id"]
    await env.user.initiate_escrow_withdrawal(ch.definition, ch.contract(lock_wire))
    sig = sign_challenge(lock_wire, env.user_key, env.decimals)
    tx = await env.user.challenge_escrow_withdrawal(escrow_id, sig, 0)
    assert tx.event_names == ("EscrowWithdrawalChallenged",)
    expiry = int(tx.event("EscrowWithdrawalChallenged").args["challengeExpireAt"])
    assert expiry == await block_time(env, tx) + DAY
    # the record's status is checked before the signature (the reference's order)
    await reverts("IncorrectEscrowStatus", env.user.challenge_escrow_withdrawal(escrow_id, sig, 1))

    await next_block_at(env.chain, expiry + 1)
    tx = await env.other.finalize_escrow_withdrawal(ch.id, escrow_id, ch.contract(lock_wire))
    assert tx.event_names == ("NodeBalanceUpdated", "EscrowWithdrawalFinalized")
    assert await node_vault(env) == NODE_FLOAT
    assert await wallet_tokens(env) == FUNDED
    assert (await env.user.get_escrow_withdrawal_data(escrow_id)).status == "FINALIZED"


async def test_escrow_withdrawals_that_the_real_hub_refuses(env: Env) -> None:
    # more than the node's vault holds
    rich = remote_channel(env, funded="1000")
    big = rich.advance(110, "600", **_here(env))
    await reverts(
        "InsufficientNodeBalance",
        env.user.initiate_escrow_withdrawal(rich.definition, rich.contract(big)),
    )
    ch = remote_channel(env)
    lock_wire = ch.advance(110, "40", **_here(env))
    lock = ch.contract(lock_wire)
    escrow_id = lock_wire["escrow_channel_id"]
    await reverts(
        "IncorrectStateIntent",
        env.user.initiate_escrow_withdrawal(ch.definition, ch.contract(remote_channel(env).state)),
    )
    await reverts(
        "NoChannelIdFoundForEscrow",
        env.user.challenge_escrow_withdrawal(
            escrow_id, sign_challenge(lock_wire, env.user_key, env.decimals), 0
        ),
    )
    await env.user.initiate_escrow_withdrawal(ch.definition, lock)
    await reverts("EscrowAlreadyExists", env.user.initiate_escrow_withdrawal(ch.definition, lock))
    await reverts(
        "IncorrectStateIntent", env.other.finalize_escrow_withdrawal(ch.id, escrow_id, lock)
    )
    forged = ch.unsigned(21, "40")
    ch.sign(forged, user_key=env.other_key)
    await reverts(
        "IncorrectSignature",
        env.other.finalize_escrow_withdrawal(ch.id, escrow_id, ch.contract(forged)),
    )
    assert await node_vault(env) == NODE_FLOAT - 40 * M
    assert await wallet_tokens(env) == FUNDED


async def test_an_escrow_withdrawal_on_the_home_chain_debits_the_user_to_the_vault(
    env: Env,
) -> None:
    ch = await open_here(env)
    lock_wire = ch.advance(110, "40", **_foreign())
    escrow_id = lock_wire["escrow_channel_id"]
    tx = await env.user.initiate_escrow_withdrawal(ch.definition, ch.contract(lock_wire))
    assert tx.event_names == ("EscrowWithdrawalInitiatedOnHome",)
    assert tx.event("EscrowWithdrawalInitiatedOnHome").args["escrowId"] == escrow_id
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 100 * M
    assert await node_vault(env) == NODE_FLOAT
    assert (await env.user.get_escrow_withdrawal_data(escrow_id)).status == "VOID"

    # the user paid on the other chain by the node: its home allocation goes to the vault
    tx = await env.other.finalize_escrow_withdrawal(
        ch.id, escrow_id, ch.contract(ch.advance(21, "40"))
    )
    assert tx.event_names == ("NodeBalanceUpdated", "EscrowWithdrawalFinalizedOnHome")
    assert await node_vault(env) == NODE_FLOAT + 40 * M
    data = await env.user.get_channel_data(ch.id)
    assert (data.locked_funds, data.status) == (60 * M, "OPERATING")
    assert int(data.last_state["homeLedger"]["userAllocation"]) == 60 * M
    assert await wallet_tokens(env) == FUNDED - 100 * M
