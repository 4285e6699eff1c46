"""Migration of a home channel on our ChannelHub, against the real hub's rules (Nitrolite
v1.4.1 ``ChannelHub.initiateMigration`` / ``finalizeMigration`` and the migration intents of
``ChannelEngine.sol``), on the in-process EVM and on anvil.

As in the escrow tests, one sandbox chain plays either side: the hub picks it from the state
(``block.chainid`` against the ledgers), so a channel whose home is ``FOREIGN`` (a chain id
this test only names) migrates IN here, and a channel opened here migrates OUT to
``FOREIGN``. The states come from our migration protocol (``core/migration.py``: ``migrate``
then ``migrate_finalize``), co-signed by the user and the node; balances are asserted exactly,
reverts by the real error names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from channelhub_helpers import (
    ELSEWHERE,
    FOREIGN,
    FOREIGN_TOKEN,
    NODE_FLOAT,
    Channel,
    Env,
    M,
    make_env,
    node_vault,
    open_here,
    remote_channel,
    reverts,
    wallet_tokens,
)

from settlement_widgets.channel.v1.core.migration import (
    finalize_migration_state,
    migrate_state,
)
from settlement_widgets.channel.v1.core.state import sign_challenge
from settlement_widgets.sandbox import Chain

pytestmark = pytest.mark.asyncio(loop_scope="module")

FUNDED = 1_000 * M  # the user's wallet after make_env


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(chain: Chain) -> Env:
    return await make_env(
        chain,
        foreign_tokens={f"{FOREIGN}:{FOREIGN_TOKEN}": 6, f"{ELSEWHERE}:{FOREIGN_TOKEN}": 6},
    )


@pytest_asyncio.fixture(autouse=True, loop_scope="module")
async def _isolate(env: Env) -> AsyncIterator[None]:
    snapshot = await env.chain.snapshot()
    yield
    await env.chain.revert(snapshot)


def _migrate(ch: Channel, chain_id: int, token: str) -> dict[str, Any]:
    """The channel's co-signed migrate state to ``chain_id`` (contract form)."""
    state = migrate_state(ch.state, blockchain_id=chain_id, token=token)
    ch.sign(state)
    ch.state = state
    return ch.contract(state)


def _finalize(ch: Channel) -> dict[str, Any]:
    state = finalize_migration_state(ch.state)
    ch.sign(state)
    ch.state = state
    return ch.contract(state)


# --- migration IN (this chain is the new home) ---------------------------------------------------


async def test_initiating_a_migration_in_opens_the_channel_with_the_nodes_lock(env: Env) -> None:
    ch = remote_channel(env, "40")
    migrate = _migrate(ch, env.chain.chain_id, env.token)
    # home ledger: the old home (FOREIGN); non-home: this chain, the node's lock of 40
    assert (migrate["intent"], migrate["homeLedger"]["chainId"]) == (8, str(FOREIGN))
    assert migrate["nonHomeLedger"]["nodeAllocation"] == str(40 * M)

    tx = await env.other.initiate_migration(ch.definition, migrate)
    assert tx.event_names == ("NodeBalanceUpdated", "MigrationInInitiated")
    assert tx.event("MigrationInInitiated").args["channelId"] == ch.id
    assert await node_vault(env) == NODE_FLOAT - 40 * M
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.locked_funds) == ("MIGRATING_IN", 40 * M)
    # stored swapped: the home ledger is this chain's, and the signatures are dropped
    home, non_home = data.last_state["homeLedger"], data.last_state["nonHomeLedger"]
    assert int(home["chainId"]) == env.chain.chain_id
    assert (int(home["nodeAllocation"]), int(home["userAllocation"])) == (40 * M, 0)
    assert int(non_home["chainId"]) == FOREIGN
    assert data.last_state["userSig"] in ("0x", b"", "")
    assert await env.user.get_open_channels() == [ch.id]


async def test_finalizing_a_migration_in_makes_the_funds_the_users_here(env: Env) -> None:
    ch = remote_channel(env, "40")
    await env.other.initiate_migration(ch.definition, _migrate(ch, env.chain.chain_id, env.token))
    finalize = _finalize(ch)
    assert (finalize["intent"], finalize["homeLedger"]["chainId"]) == (9, str(env.chain.chain_id))

    tx = await env.other.finalize_migration(ch.id, finalize)
    assert tx.event_names == ("MigrationInFinalized",)
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.locked_funds) == ("OPERATING", 40 * M)
    assert int(data.last_state["homeLedger"]["userAllocation"]) == 40 * M
    assert await node_vault(env) == NODE_FLOAT - 40 * M

    # the channel now lives here: a withdrawal pays the user from what migrated
    await env.user.withdraw_from_channel(ch.id, ch.withdraw("15"))
    assert await wallet_tokens(env) == FUNDED + 15 * M
    # and a close pays out the rest
    await env.user.close_channel(ch.id, ch.finalize())
    assert await wallet_tokens(env) == FUNDED + 40 * M
    assert (await env.user.get_channel_data(ch.id)).status == "CLOSED"
    assert await node_vault(env) == NODE_FLOAT - 40 * M


async def test_a_migration_in_needs_the_node_to_have_the_funds(env: Env) -> None:
    ch = remote_channel(env, str(NODE_FLOAT // M + 1))
    await reverts(
        "InsufficientNodeBalance",
        env.other.initiate_migration(ch.definition, _migrate(ch, env.chain.chain_id, env.token)),
    )


async def test_a_migration_in_cannot_be_initiated_twice(env: Env) -> None:
    ch = remote_channel(env, "40")
    migrate = _migrate(ch, env.chain.chain_id, env.token)
    await env.other.initiate_migration(ch.definition, migrate)
    # now this hub holds the channel with its home here: the state's home ledger is not it
    await reverts("IncorrectHomeChainId", env.other.initiate_migration(ch.definition, migrate))
    assert await node_vault(env) == NODE_FLOAT - 40 * M


async def test_finalizing_in_needs_the_initiating_state_first(env: Env) -> None:
    ch = remote_channel(env, "40")
    _migrate(ch, env.chain.chain_id, env.token)
    finalize = _finalize(ch)
    # no channel here yet: the validator refuses to check a signature for the zero user
    await reverts("InvalidSignerAddress", env.other.finalize_migration(ch.id, finalize))


async def test_a_migration_to_a_third_chain_is_refused_here(env: Env) -> None:
    ch = remote_channel(env, "40")
    migrate = _migrate(ch, ELSEWHERE, FOREIGN_TOKEN)
    # neither ledger is this chain: after the swap the home ledger names ELSEWHERE
    await reverts("IncorrectHomeChainId", env.other.initiate_migration(ch.definition, migrate))


# --- migration OUT (this chain is the old home) --------------------------------------------------


async def test_a_migration_out_checkpoints_then_releases_the_channel_to_the_vault(env: Env) -> None:
    ch = await open_here(env, "100")
    ch.advance(31, "5", account_id="0x" + "11" * 20, tx_id="0x" + "22" * 32)  # off chain
    assert await node_vault(env) == NODE_FLOAT

    migrate = _migrate(ch, FOREIGN, FOREIGN_TOKEN)
    tx = await env.other.initiate_migration(ch.definition, migrate)
    # the 5 the user received off chain is locked from the vault, as by a checkpoint
    assert tx.event_names == ("NodeBalanceUpdated", "MigrationOutInitiated")
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.locked_funds) == ("OPERATING", 105 * M)
    assert await node_vault(env) == NODE_FLOAT - 5 * M

    tx = await env.other.finalize_migration(ch.id, _finalize(ch))
    assert tx.event_names == ("NodeBalanceUpdated", "MigrationOutFinalized")
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.locked_funds) == ("MIGRATED_OUT", 0)
    # the node holds the user's funds now on the new home: here everything is the vault's
    assert await node_vault(env) == NODE_FLOAT + 100 * M
    assert await wallet_tokens(env) == FUNDED - 100 * M
    assert int(data.last_state["homeLedger"]["chainId"]) == env.chain.chain_id
    assert await env.user.get_open_channels() == []
    assert await env.user.get_channel_ids() == []


async def test_a_migration_out_can_be_finalized_without_its_initiation(env: Env) -> None:
    ch = await open_here(env, "100")
    _migrate(ch, FOREIGN, FOREIGN_TOKEN)
    tx = await env.other.finalize_migration(ch.id, _finalize(ch))
    assert tx.event_names == ("NodeBalanceUpdated", "MigrationOutFinalized")
    assert (await env.user.get_channel_data(ch.id)).status == "MIGRATED_OUT"
    assert await node_vault(env) == NODE_FLOAT + 100 * M


async def test_a_migrated_out_channel_takes_no_more_states(env: Env) -> None:
    ch = await open_here(env, "100")
    migrate = _migrate(ch, FOREIGN, FOREIGN_TOKEN)
    await env.other.initiate_migration(ch.definition, migrate)
    finalize = _finalize(ch)
    await env.other.finalize_migration(ch.id, finalize)
    # replays
    await reverts("IncorrectStateVersion", env.other.finalize_migration(ch.id, finalize))
    await reverts("IncorrectHomeChainId", env.other.initiate_migration(ch.definition, migrate))
    # the channel's states now name FOREIGN as home: this hub takes none of them
    await reverts("IncorrectHomeChainId", env.user.deposit_to_channel(ch.id, ch.deposit("1")))
    assert await node_vault(env) == NODE_FLOAT + 100 * M


async def test_initiating_out_twice_is_a_stale_version(env: Env) -> None:
    ch = await open_here(env, "100")
    migrate = _migrate(ch, FOREIGN, FOREIGN_TOKEN)
    await env.other.initiate_migration(ch.definition, migrate)
    await reverts("IncorrectStateVersion", env.other.initiate_migration(ch.definition, migrate))


# --- what every migration call checks -------------------------------------------------------


async def test_the_entry_points_take_only_their_intent(env: Env) -> None:
    ch = await open_here(env, "100")
    deposit = ch.deposit("1")
    await reverts("IncorrectStateIntent", env.other.initiate_migration(ch.definition, deposit))
    await reverts("IncorrectStateIntent", env.other.finalize_migration(ch.id, deposit))
    migrate = _migrate(ch, FOREIGN, FOREIGN_TOKEN)
    await reverts("IncorrectStateIntent", env.other.finalize_migration(ch.id, migrate))
    finalize = _finalize(ch)
    await reverts("IncorrectStateIntent", env.other.initiate_migration(ch.definition, finalize))
    # nor do the ordinary entry points take a migration state
    await reverts("IncorrectStateIntent", env.other.checkpoint_channel(ch.id, migrate))


async def test_both_signatures_are_checked(env: Env) -> None:
    ch = remote_channel(env, "40")
    migrate = _migrate(ch, env.chain.chain_id, env.token)
    forged = dict(migrate, userSig=migrate["nodeSig"])
    await reverts("IncorrectSignature", env.other.initiate_migration(ch.definition, forged))
    forged = dict(migrate, nodeSig=migrate["userSig"])
    await reverts("IncorrectSignature", env.other.initiate_migration(ch.definition, forged))
    # a tampered amount no longer matches what was signed
    tampered = {**migrate, "nonHomeLedger": {**migrate["nonHomeLedger"], "nodeAllocation": "1"}}
    await reverts("IncorrectSignature", env.other.initiate_migration(ch.definition, tampered))
    assert (await env.user.get_channel_data(ch.id)).status == "VOID"
    assert await node_vault(env) == NODE_FLOAT


async def test_the_node_lock_must_match_the_users_allocation(env: Env) -> None:
    ch = await open_here(env, "100")
    state = migrate_state(ch.state, blockchain_id=FOREIGN, token=FOREIGN_TOKEN)
    state["escrow_ledger"]["node_balance"] = "90"
    state["escrow_ledger"]["node_net_flow"] = "90"
    ch.sign(state)
    await reverts(
        "UserNodeAllocationsMismatch",
        env.other.initiate_migration(ch.definition, ch.contract(state)),
    )


async def test_a_channel_that_migrated_out_can_migrate_back_in(env: Env) -> None:
    ch = await open_here(env, "100")
    _migrate(ch, FOREIGN, FOREIGN_TOKEN)
    await env.other.finalize_migration(ch.id, _finalize(ch))
    assert await node_vault(env) == NODE_FLOAT + 100 * M
    # off chain on FOREIGN the user receives 5, then the channel comes home again
    ch.advance(31, "5", account_id="0x" + "11" * 20, tx_id="0x" + "22" * 32)
    tx = await env.other.initiate_migration(
        ch.definition, _migrate(ch, env.chain.chain_id, env.token)
    )
    assert tx.event_names == ("NodeBalanceUpdated", "MigrationInInitiated")
    assert (await env.user.get_channel_data(ch.id)).status == "MIGRATING_IN"
    assert await node_vault(env) == NODE_FLOAT - 5 * M
    await env.other.finalize_migration(ch.id, _finalize(ch))
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.locked_funds) == ("OPERATING", 105 * M)
    assert await env.user.get_open_channels() == [ch.id]


async def test_a_challenge_on_the_old_chain_is_answered_by_finalizing_the_migration(
    env: Env,
) -> None:
    """The user disputes the old home with the state on chain after the migration was agreed;
    the node answers with the co-signed finalizing state before the dispute expires: the
    channel is MIGRATED_OUT and its funds the vault's (the user's balance is on the new chain).
    The migrate state itself never went on chain here, so the finalizing one skips a version."""
    ch = await open_here(env, "100")
    on_chain = ch.state
    _migrate(ch, FOREIGN, FOREIGN_TOKEN)
    finalize = _finalize(ch)
    challenger = sign_challenge(on_chain, env.user_key, env.decimals)
    await env.user.challenge_channel(ch.id, ch.contract(on_chain), challenger, 0)
    assert (await env.user.get_channel_data(ch.id)).status == "DISPUTED"
    # a challenge cannot carry a finalizing state on the old home (finalizeMigration does)
    await reverts(
        "IncorrectChannelStatus",
        env.node.challenge_channel(
            ch.id, finalize, sign_challenge(ch.state, env.node_key, env.decimals), 1
        ),
    )
    tx = await env.node.finalize_migration(ch.id, finalize)
    assert tx.event_names == ("NodeBalanceUpdated", "MigrationOutFinalized")
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.locked_funds, data.challenge_expiry) == ("MIGRATED_OUT", 0, 0)
    assert await node_vault(env) == NODE_FLOAT + 100 * M
