"""Every revert path of the custody (Nitrolite v0.5 ``Custody.sol``) raises TransactionFailedError
named after the contract's custom error, on both backends, and nothing is mined.

A module fixture builds one channel in each status once (ACTIVE, INITIAL, DISPUTE, and ACTIVE
over a RESIZE state); the tests only simulate transactions against them, so they share it.
Calls that our Python types would refuse (duplicate participants, zero adjudicator) are made
through the raw web3 contract function, to reach the contract's own checks.

Not reachable through the custody with the SimpleConsensus adjudicator, and so not tested
here: ``DepositAlreadyFulfilled`` (a server deposit exists only once the channel is ACTIVE,
where ``join`` stops earlier with ``InvalidStatus``; the same holds for the deployed code),
``join``'s ``InvalidState`` (SimpleConsensus accepts any INITIALIZE both signed) and the
declared-but-unused ``ChannelNotFinal``, ``ChallengeNotExpired``, ``DepositsNotFulfilled``.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from custody_helpers import Env, make_env, ref_sign, resize_data

from settlement_widgets.addresses import ZERO_ADDRESS
from settlement_widgets.channel.v0_5.chain.custody import CustodyClient
from settlement_widgets.channel.v0_5.core.types import Allocation, Channel, State, StateIntent
from settlement_widgets.errors import TransactionFailedError
from settlement_widgets.keys import SECP256K1_N
from settlement_widgets.sandbox import Chain, ChannelDeployment

pytestmark = pytest.mark.asyncio(loop_scope="module")

M = 10**6
UNKNOWN = "0x" + "ab" * 32


@dataclass
class World:
    env: Env
    active: Channel  # ACTIVE, INITIALIZE [2M, 2M] stored
    active_state: State
    initial: Channel  # INITIAL, one signature, [1M, 0]
    initial_state: State
    dispute: Channel  # DISPUTE over its INITIALIZE state
    dispute_state: State
    resized: Channel  # ACTIVE, RESIZE v1 stored
    resized_state: State
    newcomer: CustodyClient  # holds tokens, never approved the custody

    def cid(self, channel: Channel) -> str:
        return self.env.channel_id(channel)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(chain: Chain, channel_deployment: ChannelDeployment) -> World:
    env = await make_env(chain, channel_deployment)
    active, active_state = await env.open(2 * M, 2 * M)
    dispute, dispute_state = await env.open(1 * M, 0)
    await env.user.challenge(
        env.channel_id(dispute), dispute_state, env.challenge_sig(dispute, dispute_state)
    )
    resized, resized_initial = await env.open()
    resized_state = env.sign(resized, env.state(StateIntent.RESIZE, 1, 0, 0, resize_data(0, 0)))
    await env.user.resize(env.channel_id(resized), resized_state, [resized_initial])

    await env.fund(env.user, 1 * M)
    initial = env.channel()
    state = env.state(StateIntent.INITIALIZE, 0, 1 * M, 0)
    initial_state = state.with_sigs(env.sign(initial, state).sigs[:1])
    await env.user.create(initial, initial_state)

    newcomer = CustodyClient(chain.wallet(4), channel_deployment.custody)
    return World(
        env, active, active_state, initial, initial_state, dispute, dispute_state,
        resized, resized_state, newcomer,
    )  # fmt: skip


async def reverts(world: World, action: Awaitable[Any], name: str) -> TransactionFailedError:
    """``action`` raises ``name`` and mines nothing."""
    before = await world.env.chain.block_number()
    with pytest.raises(TransactionFailedError) as caught:
        await action
    assert caught.value.error_name == name, str(caught.value)
    assert await world.env.chain.block_number() == before
    return caught.value


def raw_state(state: State) -> Any:
    return state.to_abi()


async def raw(world: World, call: Any, *, value: int = 0) -> Any:
    client = world.env.user
    return await client.wallet.transact(call, value=value, abis=client.error_abis)


def high_s(signature: str) -> str:
    raw_sig = bytes.fromhex(signature[2:])
    s = int.from_bytes(raw_sig[32:64], "big")
    v = raw_sig[64]
    return "0x" + (raw_sig[:32] + (SECP256K1_N - s).to_bytes(32, "big") + bytes([55 - v])).hex()


# --- deposit / withdraw --------------------------------------------------------------------


async def test_deposit_zero_is_invalid_amount(world: World) -> None:
    await reverts(world, world.env.user.deposit(world.env.token, 0), "InvalidAmount")


async def test_deposit_native_with_a_different_value_is_invalid_value(world: World) -> None:
    call = world.env.user.contract.functions.deposit(world.env.user_key.address, ZERO_ADDRESS, 5)
    await reverts(world, raw(world, call, value=4), "InvalidValue")


async def test_deposit_token_with_value_attached_is_invalid_value(world: World) -> None:
    call = world.env.user.contract.functions.deposit(world.env.user_key.address, world.env.token, 5)
    await reverts(world, raw(world, call, value=1), "InvalidValue")


async def test_deposit_without_allowance_fails_in_the_token(world: World) -> None:
    await reverts(world, world.newcomer.deposit(world.env.token, 1), "ERC20InsufficientAllowance")


async def test_withdraw_more_than_available_is_insufficient_balance(world: World) -> None:
    error = await reverts(
        world, world.env.user.withdraw(world.env.token, 7 * M), "InsufficientBalance"
    )
    assert error.error_args == (0, 7 * M)


# --- create --------------------------------------------------------------------------------


def raw_channel(world: World, participants: list[str], adjudicator: str | None = None) -> Any:
    return (participants, adjudicator or world.env.dep.adjudicator, 3600, 42)


@pytest.mark.parametrize("shape", ["same", "one", "zero"])
async def test_create_with_bad_participants_is_invalid_participant(
    world: World, shape: str
) -> None:
    u, b = world.env.user_key.address, world.env.broker_key.address
    participants = {"same": [u, u], "one": [u], "zero": [u, ZERO_ADDRESS]}[shape]
    call = world.env.user.contract.functions.create(
        raw_channel(world, participants), raw_state(world.active_state)
    )
    await reverts(world, raw(world, call), "InvalidParticipant")
    assert b  # both addresses are real accounts


async def test_create_with_zero_adjudicator_is_invalid_adjudicator(world: World) -> None:
    u, b = world.env.user_key.address, world.env.broker_key.address
    call = world.env.user.contract.functions.create(
        (
            [u, b],
            ZERO_ADDRESS,
            3600,
            1,
        ),
        raw_state(world.active_state),
    )
    await reverts(world, raw(world, call), "InvalidAdjudicator")


async def test_create_with_a_short_challenge_is_invalid_challenge_period(world: World) -> None:
    env = world.env
    channel = env.channel(challenge=3599)
    initial = env.sign(channel, env.state(StateIntent.INITIALIZE, 0))
    await reverts(world, env.user.create(channel, initial), "InvalidChallengePeriod")


@pytest.mark.parametrize(
    ("intent", "version"), [(StateIntent.OPERATE, 0), (StateIntent.INITIALIZE, 1)]
)
async def test_create_needs_an_initialize_state_at_version_0(
    world: World, intent: StateIntent, version: int
) -> None:
    env = world.env
    channel = env.channel()
    state = env.sign(channel, env.state(intent, version))
    await reverts(world, env.user.create(channel, state), "InvalidState")


async def test_create_an_existing_channel_is_invalid_status(world: World) -> None:
    await reverts(world, world.env.user.create(world.active, world.active_state), "InvalidStatus")


@pytest.mark.parametrize("case", ["none", "three", "wrong-first", "wrong-second"])
async def test_create_with_bad_signatures_is_invalid_state_signatures(
    world: World, case: str
) -> None:
    env = world.env
    channel = env.channel()
    state = env.state(StateIntent.INITIALIZE, 0)
    u, b, s = env.user_key, env.broker_key, env.stranger_key
    signers = {"none": (), "three": (u, b, b), "wrong-first": (b, b), "wrong-second": (u, s)}[case]
    await reverts(
        world, env.user.create(channel, env.sign(channel, state, signers)), "InvalidStateSignatures"
    )


async def test_create_with_one_allocation_is_invalid_allocations(world: World) -> None:
    env = world.env
    channel = env.channel()
    state = State(StateIntent.INITIALIZE, 0, b"", (Allocation(env.user_key.address, env.token, 0),))
    await reverts(world, env.user.create(channel, env.sign(channel, state)), "InvalidAllocations")


@pytest.mark.parametrize("side", ["creator", "server"])
async def test_create_without_deposits_is_insufficient_balance(world: World, side: str) -> None:
    env = world.env
    channel = env.channel()
    amounts = (9 * M, 0) if side == "creator" else (0, 9 * M)
    state = env.sign(channel, env.state(StateIntent.INITIALIZE, 0, *amounts))
    error = await reverts(world, env.user.create(channel, state), "InsufficientBalance")
    assert error.error_args[1] == 9 * M


async def test_create_with_a_short_signature_is_ecdsa_invalid_signature_length(
    world: World,
) -> None:
    env = world.env
    channel = env.channel()
    signed = env.sign(channel, env.state(StateIntent.INITIALIZE, 0))
    short = signed.with_sigs([signed.sigs[0][:-2], signed.sigs[1]])
    error = await reverts(world, env.user.create(channel, short), "ECDSAInvalidSignatureLength")
    assert error.error_args == (64,)


async def test_create_with_a_high_s_signature_is_ecdsa_invalid_signature_s(world: World) -> None:
    env = world.env
    channel = env.channel()
    signed = env.sign(channel, env.state(StateIntent.INITIALIZE, 0))
    malleable = signed.with_sigs([high_s(signed.sigs[0]), signed.sigs[1]])
    await reverts(world, env.user.create(channel, malleable), "ECDSAInvalidSignatureS")


# --- join ----------------------------------------------------------------------------------


async def test_join_unknown_channel_is_channel_not_found(world: World) -> None:
    error = await reverts(
        world, world.env.broker.join(UNKNOWN, "0x" + "11" * 65), "ChannelNotFound"
    )
    assert error.error_args == (bytes.fromhex(UNKNOWN[2:]),)


async def test_join_an_active_channel_is_invalid_status(world: World) -> None:
    sig = world.active_state.sigs[1]
    await reverts(world, world.env.broker.join(world.cid(world.active), sig), "InvalidStatus")


async def test_join_at_index_0_is_invalid_participant(world: World) -> None:
    env = world.env
    sig = env.sign(world.initial, world.initial_state.unsigned(), (env.broker_key,)).sigs[0]
    await reverts(
        world, env.broker.join(world.cid(world.initial), sig, index=0), "InvalidParticipant"
    )


async def test_join_with_a_stranger_signature_is_invalid_state_signatures(world: World) -> None:
    env = world.env
    sig = env.sign(world.initial, world.initial_state.unsigned(), (env.stranger_key,)).sigs[0]
    await reverts(world, env.broker.join(world.cid(world.initial), sig), "InvalidStateSignatures")


# --- close ---------------------------------------------------------------------------------


async def test_close_unknown_channel_is_channel_not_found(world: World) -> None:
    await reverts(world, world.env.user.close(UNKNOWN, world.active_state), "ChannelNotFound")


async def test_close_an_initial_channel_is_invalid_status(world: World) -> None:
    env = world.env
    final = env.sign(world.initial, env.state(StateIntent.FINALIZE, 1, 1 * M, 0))
    await reverts(world, env.user.close(world.cid(world.initial), final), "InvalidStatus")


@pytest.mark.parametrize(
    ("intent", "version"), [(StateIntent.OPERATE, 1), (StateIntent.FINALIZE, 0)]
)
async def test_close_active_needs_a_finalize_state_after_version_0(
    world: World, intent: StateIntent, version: int
) -> None:
    env = world.env
    state = env.sign(world.active, env.state(intent, version, 2 * M, 2 * M))
    await reverts(world, env.user.close(world.cid(world.active), state), "InvalidState")


@pytest.mark.parametrize("case", ["one-signature", "stranger"])
async def test_close_active_needs_both_signatures(world: World, case: str) -> None:
    env = world.env
    signers = (env.user_key,) if case == "one-signature" else (env.user_key, env.stranger_key)
    final = env.sign(world.active, env.state(StateIntent.FINALIZE, 1, 2 * M, 2 * M), signers)
    await reverts(world, env.user.close(world.cid(world.active), final), "InvalidStateSignatures")


async def test_close_in_dispute_before_expiry_needs_finalize(world: World) -> None:
    env = world.env
    operate = env.sign(world.dispute, env.state(StateIntent.OPERATE, 1, 1 * M, 0))
    await reverts(world, env.user.close(world.cid(world.dispute), operate), "InvalidState")


async def test_close_in_dispute_before_expiry_needs_both_signatures(world: World) -> None:
    env = world.env
    final = env.sign(
        world.dispute,
        env.state(StateIntent.FINALIZE, 1, 1 * M, 0),
        (env.user_key, env.stranger_key),
    )
    await reverts(world, env.user.close(world.cid(world.dispute), final), "InvalidStateSignatures")


# --- challenge -----------------------------------------------------------------------------


async def test_challenge_unknown_channel_is_channel_not_found(world: World) -> None:
    env = world.env
    await reverts(
        world, env.user.challenge(UNKNOWN, world.active_state, "0x" + "11" * 65), "ChannelNotFound"
    )


async def test_challenge_twice_is_invalid_status(world: World) -> None:
    env = world.env
    sig = env.challenge_sig(world.dispute, world.dispute_state)
    await reverts(
        world,
        env.user.challenge(world.cid(world.dispute), world.dispute_state, sig),
        "InvalidStatus",
    )


async def test_challenge_with_finalize_is_invalid_state(world: World) -> None:
    env = world.env
    final = env.sign(world.active, env.state(StateIntent.FINALIZE, 1, 2 * M, 2 * M))
    sig = env.challenge_sig(world.active, final)
    await reverts(world, env.user.challenge(world.cid(world.active), final, sig), "InvalidState")


@pytest.mark.parametrize("scheme", ["raw", "eip191"])
async def test_challenge_signed_by_a_stranger_is_invalid_challenger_signature(
    world: World, scheme: str
) -> None:
    env = world.env
    sig = env.challenge_sig(world.active, world.active_state, env.stranger_key, scheme)
    await reverts(
        world,
        env.stranger.challenge(world.cid(world.active), world.active_state, sig),
        "InvalidChallengerSignature",
    )


async def test_challenge_signature_over_the_state_hash_is_not_a_challenger_signature(
    world: World,
) -> None:
    """The old (0.0.x) scheme, and a plain state signature, do not authorise a challenge."""
    env = world.env
    state_sig = world.active_state.sigs[0]  # the user's signature of the state itself
    await reverts(
        world,
        env.user.challenge(world.cid(world.active), world.active_state, state_sig),
        "InvalidChallengerSignature",
    )


async def test_challenge_initial_with_another_state_is_invalid_state(world: World) -> None:
    env = world.env
    other = env.sign(
        world.initial,
        env.state(StateIntent.INITIALIZE, 0, 1 * M, 0),
        (env.user_key,),
        scheme="eip191",
    )
    sig = env.challenge_sig(world.initial, other)
    await reverts(world, env.user.challenge(world.cid(world.initial), other, sig), "InvalidState")


async def test_challenge_active_with_a_different_initialize_is_invalid_state(world: World) -> None:
    """Same fields, different signature bytes: not the stored state."""
    env = world.env
    other = env.sign(world.active, world.active_state.unsigned(), scheme="eip191")
    sig = env.challenge_sig(world.active, other)
    await reverts(world, env.user.challenge(world.cid(world.active), other, sig), "InvalidState")


async def test_challenge_over_resize_with_initialize_is_invalid_state(world: World) -> None:
    env = world.env
    older = env.sign(world.resized, env.state(StateIntent.INITIALIZE, 0))
    sig = env.challenge_sig(world.resized, older)
    await reverts(world, env.user.challenge(world.cid(world.resized), older, sig), "InvalidState")


async def test_challenge_over_resize_with_an_older_operate_is_invalid_state(world: World) -> None:
    env = world.env
    older = env.sign(world.resized, env.state(StateIntent.OPERATE, 1))
    sig = env.challenge_sig(world.resized, older)
    await reverts(world, env.user.challenge(world.cid(world.resized), older, sig), "InvalidState")


async def test_challenge_with_an_unadjudicated_state_is_invalid_state(world: World) -> None:
    env = world.env
    newer = env.sign(world.active, env.state(StateIntent.OPERATE, 1, 2 * M, 2 * M), (env.user_key,))
    sig = env.challenge_sig(world.active, newer)
    await reverts(world, env.user.challenge(world.cid(world.active), newer, sig), "InvalidState")


# --- checkpoint ----------------------------------------------------------------------------


async def test_checkpoint_unknown_channel_is_channel_not_found(world: World) -> None:
    await reverts(world, world.env.user.checkpoint(UNKNOWN, world.active_state), "ChannelNotFound")


@pytest.mark.parametrize(
    "intent", [StateIntent.INITIALIZE, StateIntent.RESIZE, StateIntent.FINALIZE]
)
async def test_checkpoint_only_takes_operate(world: World, intent: StateIntent) -> None:
    env = world.env
    state = env.sign(world.active, env.state(intent, 1, 2 * M, 2 * M))
    await reverts(world, env.user.checkpoint(world.cid(world.active), state), "InvalidState")


async def test_checkpoint_initial_is_invalid_status(world: World) -> None:
    env = world.env
    state = env.sign(world.initial, env.state(StateIntent.OPERATE, 1, 1 * M, 0))
    await reverts(world, env.user.checkpoint(world.cid(world.initial), state), "InvalidStatus")


@pytest.mark.parametrize("which", ["active", "resized", "dispute"])
async def test_checkpoint_with_a_state_no_newer_is_invalid_state(world: World, which: str) -> None:
    env = world.env
    channel = getattr(world, which)
    version = 1 if which == "resized" else 0
    stale = env.sign(channel, env.state(StateIntent.OPERATE, version))
    await reverts(world, env.user.checkpoint(world.cid(channel), stale), "InvalidState")


async def test_checkpoint_with_one_signature_is_invalid_state(world: World) -> None:
    env = world.env
    state = env.sign(world.dispute, env.state(StateIntent.OPERATE, 1, 1 * M, 0), (env.user_key,))
    await reverts(world, env.user.checkpoint(world.cid(world.dispute), state), "InvalidState")


# --- resize --------------------------------------------------------------------------------


def resize_state(
    world: World,
    channel: Channel,
    version: int,
    deltas: tuple[int, int],
    amounts: tuple[int, int] = (0, 0),
) -> State:
    env = world.env
    return env.sign(channel, env.state(StateIntent.RESIZE, version, *amounts, resize_data(*deltas)))


async def test_resize_unknown_channel_is_channel_not_found(world: World) -> None:
    state = resize_state(world, world.active, 1, (0, 0))
    await reverts(
        world, world.env.user.resize(UNKNOWN, state, [world.active_state]), "ChannelNotFound"
    )


@pytest.mark.parametrize("which", ["initial", "dispute"])
async def test_resize_outside_active_is_invalid_status(world: World, which: str) -> None:
    channel = getattr(world, which)
    preceding = getattr(world, f"{which}_state")
    state = resize_state(world, channel, 1, (0, 0), (1 * M, 0))
    await reverts(
        world, world.env.user.resize(world.cid(channel), state, [preceding]), "InvalidStatus"
    )


async def test_resize_invalid_state_cases(world: World) -> None:
    env = world.env
    cid = world.cid(world.active)
    good = resize_state(world, world.active, 1, (0, 0), (2 * M, 2 * M))
    operate = env.sign(
        world.active, env.state(StateIntent.OPERATE, 1, 2 * M, 2 * M, resize_data(0, 0))
    )
    gap = resize_state(world, world.active, 2, (0, 0), (2 * M, 2 * M))
    two_tokens = (
        Allocation(env.user_key.address, env.token, 2 * M),
        Allocation(env.broker_key.address, ZERO_ADDRESS, 2 * M),
    )
    mixed = env.sign(world.active, State(StateIntent.RESIZE, 1, resize_data(0, 0), two_tokens))
    three = env.sign(
        world.active,
        State(StateIntent.RESIZE, 1, _int_array([0, 0, 0]), env.allocations(2 * M, 2 * M)),
    )
    cases: list[tuple[State, list[State]]] = [
        (good, []),  # no proofs
        (operate, [world.active_state]),  # not a RESIZE
        (gap, [world.active_state]),  # version != proofs[0].version + 1
        (mixed, [world.active_state]),  # two tokens
        (three, [world.active_state]),  # deltas not of length 2
        (good, [world.active_state.unsigned()]),  # preceding state not adjudicated
        (good, [world.active_state, world.active_state]),  # SimpleConsensus takes no extra proofs
    ]
    for candidate, proofs in cases:
        await reverts(world, env.user.resize(cid, candidate, proofs), "InvalidState")


def _int_array(values: list[int]) -> bytes:
    from eth_abi import encode

    return encode(["int256[]"], [values])


async def test_resize_with_one_signature_is_invalid_state_signatures(world: World) -> None:
    env = world.env
    state = env.state(StateIntent.RESIZE, 1, 2 * M, 2 * M, resize_data(0, 0))
    one = state.with_sigs([ref_sign(env.user_key, world.cid(world.active), state)])
    await reverts(
        world,
        env.user.resize(world.cid(world.active), one, [world.active_state]),
        "InvalidStateSignatures",
    )


async def test_resize_with_wrong_sums_is_invalid_allocations(world: World) -> None:
    state = resize_state(world, world.active, 1, (1 * M, 0), (2 * M, 2 * M))
    await reverts(
        world,
        world.env.user.resize(world.cid(world.active), state, [world.active_state]),
        "InvalidAllocations",
    )


async def test_resize_without_the_funds_is_insufficient_balance(world: World) -> None:
    state = resize_state(world, world.active, 1, (50 * M, 0), (52 * M, 2 * M))
    error = await reverts(
        world,
        world.env.user.resize(world.cid(world.active), state, [world.active_state]),
        "InsufficientBalance",
    )
    assert error.error_args[1] == 50 * M
