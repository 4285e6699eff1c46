"""The custody contract's lifecycle through CustodyClient, on the in-process EVM and on anvil.

Every test starts from the same deployment (module fixture) and is rolled back afterwards
(snapshot/revert), so balances are exact. States are encoded and signed with eth-abi and
eth-account (custody_helpers), independently of our erc7824 core.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from custody_helpers import CHALLENGE_PERIOD, Env, make_env, ref_channel_id, resize_data
from eth_utils import keccak

from settlement_widgets.addresses import ZERO_ADDRESS
from settlement_widgets.channel.v0_5.chain.custody_events import (
    Challenged,
    Checkpointed,
    Closed,
    Created,
    Deposited,
    Joined,
    Resized,
    Withdrawn,
)
from settlement_widgets.channel.v0_5.core.types import ChannelStatus, State, StateIntent
from settlement_widgets.errors import ChannelNotFoundError, TransactionFailedError
from settlement_widgets.sandbox import Chain, ChannelDeployment

pytestmark = pytest.mark.asyncio(loop_scope="module")

M = 10**6  # one test token (6 decimals)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(chain: Chain, channel_deployment: ChannelDeployment) -> Env:
    return await make_env(chain, channel_deployment)


@pytest_asyncio.fixture(autouse=True, loop_scope="module")
async def _isolate(env: Env) -> AsyncIterator[None]:
    snapshot = await env.chain.snapshot()
    yield
    await env.chain.revert(snapshot)


async def ledger(env: Env) -> tuple[int, int]:
    rows = await env.user.get_accounts_balances(
        [env.user_key.address, env.broker_key.address], [env.token]
    )
    return rows[0][0], rows[1][0]


async def test_deposit_credits_the_ledger(env: Env) -> None:
    wallet_before = await env.user.token_balance(env.token)
    tx = await env.user.deposit(env.token, 5 * M)

    assert await env.user.balance(env.token) == 5 * M
    assert await env.user.token_balance(env.token) == wallet_before - 5 * M
    assert await env.user.token_balance(env.token, env.dep.custody) == 5 * M
    (event,) = tx.events
    assert isinstance(event, Deposited)
    assert (event.wallet, event.token, event.amount) == (env.user_key.address, env.token, 5 * M)
    assert event.tx_hash == tx.tx_hash and event.block_number == tx.block_number
    assert tx.gas_used > 21_000


async def test_deposit_for_another_account_and_native_coin(env: Env) -> None:
    await env.user.deposit(env.token, 2 * M, account=env.broker_key.address)
    await env.user.deposit(ZERO_ADDRESS, 10**18)

    assert await ledger(env) == (0, 2 * M)
    assert await env.user.balance(ZERO_ADDRESS) == 10**18


async def test_withdraw_returns_available_funds(env: Env) -> None:
    await env.user.deposit(env.token, 5 * M)
    wallet_before = await env.user.token_balance(env.token)

    tx = await env.user.withdraw(env.token, 3 * M)

    assert await env.user.balance(env.token) == 2 * M
    assert await env.user.token_balance(env.token) == wallet_before + 3 * M
    event = tx.event("Withdrawn")
    assert isinstance(event, Withdrawn)
    assert (event.wallet, event.amount) == (env.user_key.address, 3 * M)


async def test_withdraw_native_coin(env: Env) -> None:
    await env.user.deposit(ZERO_ADDRESS, 10**18)
    tx = await env.user.withdraw(ZERO_ADDRESS, 10**18)
    assert tx.event_names == ("Withdrawn",)
    assert await env.user.balance(ZERO_ADDRESS) == 0


async def test_create_with_both_signatures_is_active_in_one_transaction(env: Env) -> None:
    await env.fund(env.user, 3 * M)
    await env.fund(env.broker, 1 * M)
    channel = env.channel()
    initial = env.sign(channel, env.state(StateIntent.INITIALIZE, 0, 3 * M, 1 * M))

    tx = await env.user.create(channel, initial)

    cid = ref_channel_id(channel, env.chain_id)
    assert tx.channel_id == cid
    assert tx.event_names == ("Created", "Joined", "Opened")
    created = tx.event("Created")
    assert isinstance(created, Created)
    assert (created.wallet, created.channel, created.initial) == (
        env.user_key.address,
        channel,
        initial,
    )
    joined = tx.event("Joined")
    assert isinstance(joined, Joined) and joined.index == 1

    data = await env.user.get_channel_data(cid)
    assert data.status == ChannelStatus.ACTIVE
    assert data.channel == channel
    assert data.wallets == (env.user_key.address, env.broker_key.address)
    assert data.challenge_expiry == 0
    assert data.last_valid_state == initial
    assert await env.user.get_channel_balances(cid, [env.token]) == [4 * M]
    assert await ledger(env) == (0, 0)
    assert await env.user.get_open_channels([env.user_key.address, env.broker_key.address]) == [
        [cid],
        [cid],
    ]


async def test_create_with_one_signature_then_join(env: Env) -> None:
    await env.fund(env.user, 2 * M)
    await env.fund(env.broker, 1 * M)
    channel = env.channel()
    state = env.state(StateIntent.INITIALIZE, 0, 2 * M, 1 * M)
    full = env.sign(channel, state)

    tx = await env.user.create(channel, state.with_sigs(full.sigs[:1]))
    cid = tx.channel_id
    assert cid is not None
    assert tx.event_names == ("Created",)
    assert await env.user.channel_status(cid) == ChannelStatus.INITIAL
    assert await env.user.open_channels(env.broker_key.address) == []

    joined = await env.broker.join(cid, full.sigs[1])

    assert joined.event_names == ("Joined", "Opened")
    data = await env.user.get_channel_data(cid)
    assert data.status == ChannelStatus.ACTIVE
    assert data.last_valid_state == full
    assert await env.user.get_channel_balances(cid, [env.token]) == [3 * M]
    assert await env.user.open_channels(env.broker_key.address) == [cid]


async def test_deposit_and_create(env: Env) -> None:
    channel = env.channel()
    initial = env.sign(channel, env.state(StateIntent.INITIALIZE, 0, 2 * M, 0))

    tx = await env.user.deposit_and_create(env.token, 2 * M, channel, initial)

    assert tx.event_names == ("Deposited", "Created", "Joined", "Opened")
    assert await env.user.balance(env.token) == 0
    assert await env.user.get_channel_balances(tx.channel_id or "", [env.token]) == [2 * M]


async def test_resize_moves_funds_with_the_implicit_transfer(env: Env) -> None:
    """The ClearNode deposit flow: data [+X, -X], allocations stay [0, 0]. X leaves the user's
    ledger into the channel and comes out again on the broker's side."""
    channel, initial = await env.open()
    cid = env.channel_id(channel)
    await env.fund(env.user, 5 * M)

    deposit_state = env.sign(
        channel, env.state(StateIntent.RESIZE, 1, 0, 0, resize_data(5 * M, -5 * M))
    )
    tx = await env.user.resize(cid, deposit_state, [initial])

    resized = tx.event("Resized")
    assert isinstance(resized, Resized)
    assert resized.delta_allocations == (5 * M, -5 * M)
    assert await ledger(env) == (0, 5 * M)
    assert await env.user.get_channel_balances(cid, [env.token]) == [0]
    assert (await env.user.get_channel_data(cid)).last_valid_state == deposit_state

    # The withdraw flow back: [-X, +X] locks the broker's X and credits it to the user.
    back = env.sign(channel, env.state(StateIntent.RESIZE, 2, 0, 0, resize_data(-5 * M, 5 * M)))
    await env.user.resize(cid, back, [deposit_state])
    assert await ledger(env) == (5 * M, 0)


async def test_resize_allocates_into_the_channel_then_cooperative_close(env: Env) -> None:
    channel, initial = await env.open()
    cid = env.channel_id(channel)
    await env.fund(env.broker, 4 * M)

    grow = env.sign(channel, env.state(StateIntent.RESIZE, 1, 4 * M, 0, resize_data(0, 4 * M)))
    await env.broker.resize(cid, grow, [initial])
    assert await env.user.get_channel_balances(cid, [env.token]) == [4 * M]
    assert await ledger(env) == (0, 0)

    final = env.sign(channel, env.state(StateIntent.FINALIZE, 2, 3 * M, 1 * M))
    tx = await env.user.close(cid, final)

    closed = tx.event("Closed")
    assert isinstance(closed, Closed) and closed.final_state == final
    assert await ledger(env) == (3 * M, 1 * M)


async def test_cooperative_close_credits_custody_balances_then_withdraw(env: Env) -> None:
    channel, _ = await env.open(3 * M, 1 * M)
    cid = env.channel_id(channel)
    final = env.sign(channel, env.state(StateIntent.FINALIZE, 1, 2_500_000, 1_500_000))

    tx = await env.user.close(cid, final)

    assert tx.event_names == ("Closed",)
    assert await ledger(env) == (2_500_000, 1_500_000)
    assert await env.user.channel_status(cid) == ChannelStatus.VOID
    with pytest.raises(ChannelNotFoundError):
        await env.user.get_channel_data(cid)
    assert await env.user.open_channels() == []
    assert await env.user.get_channel_balances(cid, [env.token]) == [0]

    wallet_before = await env.user.token_balance(env.token)
    await env.user.withdraw(env.token, 2_500_000)
    assert await env.user.token_balance(env.token) == wallet_before + 2_500_000


async def test_challenge_then_close_after_the_period(env: Env) -> None:
    channel, initial = await env.open(3 * M, 1 * M)
    cid = env.channel_id(channel)

    tx = await env.user.challenge(cid, initial, env.challenge_sig(channel, initial))

    challenged = tx.event("Challenged")
    assert isinstance(challenged, Challenged)
    block = await env.chain.w3.eth.get_block(tx.block_number)
    assert challenged.expiration == int(block["timestamp"]) + CHALLENGE_PERIOD
    assert challenged.state == initial
    data = await env.user.get_channel_data(cid)
    assert (data.status, data.challenge_expiry) == (ChannelStatus.DISPUTE, challenged.expiration)

    # Before expiry only a FINALIZE both signed may close.
    with pytest.raises(TransactionFailedError) as early:
        await env.broker.close(cid, initial)
    assert early.value.error_name == "InvalidState"

    await env.chain.time_travel(CHALLENGE_PERIOD + 1)
    anything = State(StateIntent.OPERATE, 99, b"", ())
    tx = await env.stranger.close(cid, anything)

    assert tx.event("Closed").final_state == anything  # type: ignore[attr-defined]
    assert await ledger(env) == (3 * M, 1 * M)
    assert await env.user.channel_status(cid) == ChannelStatus.VOID


async def test_challenge_with_a_newer_state_decides_the_payout(env: Env) -> None:
    channel, _ = await env.open(3 * M, 1 * M)
    cid = env.channel_id(channel)
    newer = env.sign(channel, env.state(StateIntent.OPERATE, 1, 1 * M, 3 * M))

    await env.broker.challenge(cid, newer, env.challenge_sig(channel, newer, env.broker_key))
    await env.chain.time_travel(CHALLENGE_PERIOD + 1)
    await env.user.close(cid, newer)

    assert await ledger(env) == (1 * M, 3 * M)


async def test_cooperative_close_overrides_a_pending_challenge(env: Env) -> None:
    channel, initial = await env.open(3 * M, 1 * M)
    cid = env.channel_id(channel)
    await env.user.challenge(cid, initial, env.challenge_sig(channel, initial))

    final = env.sign(channel, env.state(StateIntent.FINALIZE, 1, 2 * M, 2 * M))
    await env.broker.close(cid, final)

    assert await ledger(env) == (2 * M, 2 * M)


async def test_challenge_in_initial_closes_at_once(env: Env) -> None:
    await env.fund(env.user, 2 * M)
    channel = env.channel()
    state = env.state(StateIntent.INITIALIZE, 0, 2 * M, 0)
    one_sig = state.with_sigs(env.sign(channel, state).sigs[:1])
    cid = (await env.user.create(channel, one_sig)).channel_id or ""

    tx = await env.user.challenge(cid, one_sig, env.challenge_sig(channel, one_sig))

    assert tx.event_names == ("Challenged", "Closed")
    assert await env.user.balance(env.token) == 2 * M
    assert await env.user.channel_status(cid) == ChannelStatus.VOID


async def test_checkpoint_clears_a_dispute(env: Env) -> None:
    channel, initial = await env.open(2 * M, 2 * M)
    cid = env.channel_id(channel)
    resized = env.sign(channel, env.state(StateIntent.RESIZE, 1, 2 * M, 2 * M, resize_data(0, 0)))
    await env.user.resize(cid, resized, [initial])
    await env.broker.challenge(cid, resized, env.challenge_sig(channel, resized, env.broker_key))
    assert await env.user.channel_status(cid) == ChannelStatus.DISPUTE

    operate = env.sign(channel, env.state(StateIntent.OPERATE, 2, 3 * M, 1 * M))
    tx = await env.user.checkpoint(cid, operate)

    checkpointed = tx.event("Checkpointed")
    assert isinstance(checkpointed, Checkpointed) and checkpointed.state == operate
    data = await env.user.get_channel_data(cid)
    assert (data.status, data.challenge_expiry, data.last_valid_state) == (
        ChannelStatus.ACTIVE,
        0,
        operate,
    )
    # The channel is usable again: a cooperative close pays the checkpointed split.
    final = env.sign(channel, env.state(StateIntent.FINALIZE, 3, 3 * M, 1 * M))
    await env.user.close(cid, final)
    assert await ledger(env) == (3 * M, 1 * M)


async def test_checkpoint_over_a_disputed_resize_requires_a_newer_state(env: Env) -> None:
    """Issue #455: the deployed custody lets an *older* OPERATE state clear a dispute over a
    RESIZE state. Ours refuses it and still accepts a newer one."""
    channel, _ = await env.open(2 * M, 2 * M)
    cid = env.channel_id(channel)
    old_operate = env.sign(channel, env.state(StateIntent.OPERATE, 1, 1 * M, 3 * M))
    resized = env.sign(channel, env.state(StateIntent.RESIZE, 2, 1 * M, 3 * M, resize_data(0, 0)))
    await env.user.resize(cid, resized, [old_operate])
    await env.user.challenge(cid, resized, env.challenge_sig(channel, resized))

    with pytest.raises(TransactionFailedError) as stale:
        await env.broker.checkpoint(cid, old_operate)
    assert stale.value.error_name == "InvalidState"
    assert await env.user.channel_status(cid) == ChannelStatus.DISPUTE

    newer = env.sign(channel, env.state(StateIntent.OPERATE, 3, 2 * M, 2 * M))
    await env.broker.checkpoint(cid, newer)
    assert await env.user.channel_status(cid) == ChannelStatus.ACTIVE


async def test_a_resize_cannot_be_replayed(env: Env) -> None:
    channel, initial = await env.open()
    cid = env.channel_id(channel)
    await env.fund(env.user, 10 * M)
    resize = env.sign(channel, env.state(StateIntent.RESIZE, 1, 0, 0, resize_data(5 * M, -5 * M)))
    await env.user.resize(cid, resize, [initial])

    with pytest.raises(TransactionFailedError) as replay:
        await env.broker.resize(cid, resize, [initial])

    assert replay.value.error_name == "InvalidState"
    assert await ledger(env) == (5 * M, 5 * M)


async def test_events_from_a_block_range(env: Env) -> None:
    start = await env.chain.block_number()
    channel, _ = await env.open(1 * M, 0)
    cid = env.channel_id(channel)
    final = env.sign(channel, env.state(StateIntent.FINALIZE, 1, 1 * M, 0))
    await env.user.close(cid, final)
    await env.user.withdraw(env.token, 1 * M)

    of_channel = await env.user.get_events(start, channel_id=cid)
    assert [e.name for e in of_channel] == ["Created", "Joined", "Opened", "Closed"]
    assert [e.cursor for e in of_channel] == sorted(e.cursor for e in of_channel)
    assert all(e.channel_id == cid for e in of_channel)  # type: ignore[attr-defined]

    ledger_events = await env.user.get_events(start, names=["Deposited", "Withdrawn"])
    assert [e.name for e in ledger_events] == ["Deposited", "Withdrawn"]
    assert await env.user.get_events(start, names=["Challenged"]) == ()


async def test_views_constants_and_domain(env: Env) -> None:
    assert await env.user.min_challenge_period() == 3600
    assert await env.user.eip712_domain() == {
        "name": "Nitrolite:Custody",
        "version": "0.3.0",
        "chainId": env.chain_id,
        "verifyingContract": env.dep.custody,
    }
    typehash = await env.user.contract.functions.CHALLENGE_STATE_TYPEHASH().call()
    assert bytes(typehash) == keccak(
        b"AllowChallengeStateHash(bytes32 channelId,uint8 intent,uint256 version,bytes data,"
        b"Allocation[] allocations)Allocation(address destination,address token,uint256 amount)"
    )
    assert env.chain_id == 31337


async def test_a_mined_revert_is_named_too(env: Env) -> None:
    """With an explicit gas limit nothing is simulated first: the transaction is mined,
    reverts, and the client replays it to name the error."""
    call = env.user.contract.functions.withdraw(env.token, 5)
    receipt_error = None
    try:
        await env.user.wallet.transact(call, gas=300_000, abis=env.user.error_abis)
    except TransactionFailedError as exc:
        receipt_error = exc
    assert receipt_error is not None and receipt_error.tx_hash  # mined, status 0
    explained = await env.user.explain_failure(receipt_error)
    assert explained.error_name == "InsufficientBalance"
    assert explained.error_args == (0, 5)
    assert explained.tx_hash == receipt_error.tx_hash
