"""Node validator registration and session-key signatures on our ChannelHub, on both chains.

As in Nitrolite v1.4.1 `ChannelHub.sol`: the node authorises ``registerNodeValidator`` by its
signature alone (anyone relays it), a registration is never replaced, and a validator other
than id 0 verifies a state only if the channel's bitmap approves it, it is registered, and
``VALIDATOR_ACTIVATION_DELAY`` (one day) has passed. Validator id 1 is our
``SessionKeyValidator`` (rules of the reference `sigValidators/SessionKeyValidator.sol`): the
user's delegation plus the session key's signature of the state; never a challenge.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from channelhub_helpers import (
    ASSET,
    DAY,
    PEER,
    Channel,
    Env,
    M,
    block_time,
    make_env,
    next_block_at,
    reverts,
)

from settlement_widgets.channel.v1.core.state import (
    channel_session_key_metadata_hash,
    pack_challenge_state,
    pack_channel_session_key_auth,
    session_key_state_signature,
    sign_eip191,
)
from settlement_widgets.channel.v1.node.deploy import register_session_key_validator
from settlement_widgets.channel.v1.node.validators import (
    SESSION_KEY_VALIDATOR_ID,
    register_node_validators,
    sign_validator_registration,
)
from settlement_widgets.errors import InvalidStateError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox import Chain

pytestmark = pytest.mark.asyncio(loop_scope="module")

SESSION_KEY = PrivateKey("0x" + "03" * 32)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(chain: Chain) -> Env:
    return await make_env(chain)


@pytest_asyncio.fixture(autouse=True, loop_scope="module")
async def _isolate(env: Env) -> AsyncIterator[None]:
    snapshot = await env.chain.snapshot()
    yield
    await env.chain.revert(snapshot)


def _registration(env: Env, *, key: PrivateKey | None = None, **overrides: object) -> bytes:
    fields: dict[str, object] = {
        "chain_id": env.chain.chain_id,
        "hub": env.deployment.hub,
        "validator_id": SESSION_KEY_VALIDATOR_ID,
        "validator": env.deployment.session_key_validator,
        **overrides,
    }
    return sign_validator_registration(key or env.node_key, **fields)  # type: ignore[arg-type]


async def _register(env: Env) -> int:
    """Register validator 1 (relayed by another account); returns its activation time."""
    await register_node_validators(
        env.other,
        env.node_key,
        {SESSION_KEY_VALIDATOR_ID: env.deployment.session_key_validator},
        chain_id=env.chain.chain_id,
    )
    _address, registered_at = await env.user.get_node_validator(SESSION_KEY_VALIDATOR_ID)
    return registered_at + DAY


def _session_deposit(env: Env, amount: str = "100") -> tuple[Channel, dict[str, object]]:
    ch = Channel(env, approved="0x03")
    wire = ch.unsigned(10, amount)
    ch.sign_with_session_key(wire, SESSION_KEY)
    ch.state = wire
    return ch, ch.contract(wire)


# --- registration -------------------------------------------------------------------------------


async def test_a_node_signed_registration_is_relayed_by_anyone(env: Env) -> None:
    validator = env.deployment.session_key_validator
    assert await env.user.get_node_validator(1) == (
        "0x0000000000000000000000000000000000000000",
        0,
    )
    tx = await env.other.register_node_validator(1, validator, _registration(env))
    assert tx.event_names == ("ValidatorRegistered",)
    assert tx.events[0].args == {"validatorId": 1, "validator": validator}
    assert await env.user.get_node_validator(1) == (validator, await block_time(env, tx))
    assert await env.user.validator_activation_delay() == DAY

    # a registration is never replaced
    failure = await reverts(
        "ValidatorAlreadyRegistered",
        env.other.register_node_validator(1, validator, _registration(env)),
    )
    assert failure.error_args == (1,)


async def test_registrations_the_hub_refuses(env: Env) -> None:
    validator = env.deployment.session_key_validator
    await reverts(
        "InvalidValidatorId",
        env.other.register_node_validator(0, validator, _registration(env)),
    )
    # signed by someone else, or for another chain, hub or id: not the node's authorisation
    for signature in (
        _registration(env, key=env.user_key),
        _registration(env, chain_id=env.chain.chain_id + 1),
        _registration(env, hub=env.deployment.token),
        _registration(env, validator_id=2),
    ):
        await reverts(
            "IncorrectSignature", env.other.register_node_validator(1, validator, signature)
        )
    assert (await env.user.get_node_validator(1))[1] == 0


async def test_registering_is_idempotent_for_a_restarted_node(env: Env) -> None:
    wanted = {SESSION_KEY_VALIDATOR_ID: env.deployment.session_key_validator}
    first = await register_node_validators(
        env.other, env.node_key, wanted, chain_id=env.chain.chain_id
    )
    assert [tx.event_names for tx in first] == [("ValidatorRegistered",)]
    assert (
        await register_node_validators(env.other, env.node_key, wanted, chain_id=env.chain.chain_id)
        == []
    )
    with pytest.raises(InvalidStateError, match="never replaces"):
        await register_node_validators(
            env.other, env.node_key, {1: env.deployment.validator}, chain_id=env.chain.chain_id
        )
    with pytest.raises(InvalidStateError, match="belongs to node"):
        await register_node_validators(env.other, env.user_key, wanted, chain_id=env.chain.chain_id)


# --- session-key states ---------------------------------------------------------------------------


async def test_a_session_key_state_needs_registration_then_the_activation_delay(env: Env) -> None:
    ch, state = _session_deposit(env)
    failure = await reverts("ValidatorNotRegistered", env.user.create_channel(ch.definition, state))
    assert failure.error_args == (1,)

    active_from = await _register(env)
    failure = await reverts("ValidatorNotActive", env.user.create_channel(ch.definition, state))
    assert failure.error_args == (1, active_from)

    # usable from the activation second on
    await next_block_at(env.chain, active_from)
    tx = await env.user.create_channel(ch.definition, state)
    assert await block_time(env, tx) == active_from
    data = await env.user.get_channel_data(ch.id)
    assert (data.status, data.locked_funds) == ("OPERATING", 100 * M)
    assert data.last_state["userSig"].startswith("0x01")

    # later states signed through the session key are checkpointed as well
    wire = ch.unsigned(30, "25", account_id=PEER)
    ch.sign_with_session_key(wire, SESSION_KEY)
    ch.state = wire
    tx = await env.node.checkpoint_channel(ch.id, ch.contract(wire))
    assert tx.event_names == ("NodeBalanceUpdated", "ChannelCheckpointed")
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 75 * M


async def test_session_key_signatures_the_hub_refuses(env: Env) -> None:
    await next_block_at(env.chain, await _register(env))

    # the channel's bitmap must approve validator 1
    ch = Channel(env, approved="0x01")
    wire = ch.unsigned(10, "10")
    ch.sign_with_session_key(wire, SESSION_KEY)
    await reverts("ValidatorNotApproved", env.user.create_channel(ch.definition, ch.contract(wire)))

    # a delegation the user never signed
    ch = Channel(env, approved="0x03")
    wire = ch.unsigned(10, "10")
    ch.sign_with_session_key(wire, SESSION_KEY, authorizer=env.other_key)
    await reverts("IncorrectSignature", env.user.create_channel(ch.definition, ch.contract(wire)))

    # a challenge must be signed by the participant's own key
    ch, state = _session_deposit(env)
    await env.user.create_channel(ch.definition, state)
    metadata = channel_session_key_metadata_hash(env.user_key.address, 1, [ASSET], 2**40)
    auth = sign_eip191(env.user_key, pack_channel_session_key_auth(SESSION_KEY.address, metadata))
    challenge = session_key_state_signature(
        pack_challenge_state(ch.state, env.decimals), SESSION_KEY, metadata, auth
    )
    await reverts(
        "ChallengeWithSessionKeyNotSupported",
        env.user.challenge_channel(ch.id, state, challenge, 0),
    )


async def test_the_sandbox_deployment_step_registers_and_activates(env: Env) -> None:
    active_from = await register_session_key_validator(
        env.chain, env.deployment, env.node_key, env.chain.wallet(3)
    )
    assert await env.chain.timestamp() >= active_from
    ch, state = _session_deposit(env, "5")
    await env.user.create_channel(ch.definition, state)
    assert (await env.user.get_channel_data(ch.id)).locked_funds == 5 * M
    # a second call (a restarted sandbox) changes nothing
    assert (
        await register_session_key_validator(
            env.chain, env.deployment, env.node_key, env.chain.wallet(3)
        )
        == active_from
    )
