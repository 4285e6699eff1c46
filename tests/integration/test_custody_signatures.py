"""Which signatures the custody accepts, on both backends.

State signatures: raw ECDSA over keccak(packedState), EIP-191 over the packed bytes, EIP-712
``AllowStateHash`` under the custody's ERC-5267 domain (both the deployed contract's encoding
and the strict-standard one eth-account produces), ERC-1271 for contract participants and
ERC-6492 for counterfactual ones. Challenger signatures: the same EOA schemes over
``packedState ++ "challenge"`` and ERC-1271. Finally, states signed by our own Python core
(settlement_widgets.channel.v0_5.core) are accepted by the contract in all three EOA schemes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from custody_helpers import Env, domain_separator, make_env, ref_packed, ref_sign
from eth_abi import encode
from eth_account import Account
from eth_utils import keccak

from settlement_widgets.channel.v0_5.core import (
    channel_id,
    custody_domain,
    sign_challenge,
    sign_state,
    verify_state_signature,
)
from settlement_widgets.channel.v0_5.core.types import Channel, ChannelStatus, State, StateIntent
from settlement_widgets.contracts import load_artifact
from settlement_widgets.errors import TransactionFailedError
from settlement_widgets.networks import SEPOLIA
from settlement_widgets.sandbox import Chain, ChannelDeployment, deploy_contract

pytestmark = pytest.mark.asyncio(loop_scope="module")

M = 10**6
EOA_SCHEMES = ["raw", "eip191", "eip712", "eip712-legacy"]
ERC6492_SUFFIX = bytes.fromhex("64926492" * 8)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(chain: Chain, channel_deployment: ChannelDeployment) -> Env:
    return await make_env(chain, channel_deployment)


@pytest_asyncio.fixture(autouse=True, loop_scope="module")
async def _isolate(env: Env) -> AsyncIterator[None]:
    snapshot = await env.chain.snapshot()
    yield
    await env.chain.revert(snapshot)


@pytest.mark.parametrize("scheme", EOA_SCHEMES)
async def test_create_accepts_state_signatures_in_every_eoa_scheme(env: Env, scheme: str) -> None:
    await env.fund(env.user, 1 * M)
    channel = env.channel()
    initial = env.sign(channel, env.state(StateIntent.INITIALIZE, 0, 1 * M, 0), scheme=scheme)

    tx = await env.user.create(channel, initial)

    assert tx.event_names == ("Created", "Joined", "Opened")
    assert (await env.user.get_channel_data(tx.channel_id or "")).last_valid_state == initial


async def test_the_clearnode_mix_user_eip191_broker_raw(env: Env) -> None:
    channel = env.channel()
    state = env.state(StateIntent.INITIALIZE, 0)
    cid = env.channel_id(channel)
    sigs = [
        ref_sign(env.user_key, cid, state, "eip191"),
        ref_sign(env.broker_key, cid, state, "raw"),
    ]
    tx = await env.user.create(channel, state.with_sigs(sigs))
    assert await env.user.channel_status(tx.channel_id or "") == ChannelStatus.ACTIVE


async def test_an_eip712_signature_for_another_custody_is_rejected(env: Env) -> None:
    channel = env.channel()
    state = env.state(StateIntent.INITIALIZE, 0)
    cid = env.channel_id(channel)
    foreign = SEPOLIA.contracts.custody
    sigs = [
        ref_sign(env.user_key, cid, state, "eip712", chain_id=env.chain_id, custody=foreign),
        ref_sign(env.broker_key, cid, state, "raw"),
    ]
    with pytest.raises(TransactionFailedError) as caught:
        await env.user.create(channel, state.with_sigs(sigs))
    assert caught.value.error_name == "InvalidStateSignatures"


@pytest.mark.parametrize("scheme", EOA_SCHEMES)
async def test_challenge_accepts_challenger_signatures_in_every_eoa_scheme(
    env: Env, scheme: str
) -> None:
    channel, initial = await env.open(1 * M, 0)
    sig = env.challenge_sig(channel, initial, env.broker_key, scheme)

    tx = await env.user.challenge(env.channel_id(channel), initial, sig)

    assert tx.event_names == ("Challenged",)


async def test_join_with_an_eip712_signature_passes_the_adjudicator(env: Env) -> None:
    """SimpleConsensus re-checks both signatures under the custody's domain, which it reads
    through ERC-5267 (eip712Domain) from its channelImpl."""
    adjudicator = env.chain.w3.eth.contract(
        address=env.dep.adjudicator, abi=load_artifact("SimpleConsensus").abi
    )
    separator = await adjudicator.functions.getChannelImplDomainSeparator().call()
    assert bytes(separator) == domain_separator(env.chain_id, env.dep.custody)
    assert await adjudicator.functions.channelImpl().call() == env.dep.custody
    assert await adjudicator.functions.owner().call() == env.dep.deployer

    channel = env.channel()
    state = env.state(StateIntent.INITIALIZE, 0)
    cid = env.channel_id(channel)
    await env.user.create(channel, state.with_sigs([ref_sign(env.user_key, cid, state)]))
    broker_sig = ref_sign(
        env.broker_key, cid, state, "eip712", chain_id=env.chain_id, custody=env.dep.custody
    )

    tx = await env.broker.join(cid, broker_sig)

    assert tx.event_names == ("Joined", "Opened")


# --- contract participants -----------------------------------------------------------------


async def _wallet_factory(env: Env) -> str:
    return (await deploy_contract(env.chain.wallet(0), "ChannelTestWalletFactory")).address


def _contract_channel(env: Env, server: str) -> Channel:
    template = env.channel()
    return Channel(
        (env.user_key.address, server), template.adjudicator, template.challenge, template.nonce
    )


async def test_erc1271_contract_participant(env: Env) -> None:
    wallet = (
        await deploy_contract(env.chain.wallet(0), "ChannelTestWallet", env.broker_key.address)
    ).address
    channel = _contract_channel(env, wallet)
    cid = env.channel_id(channel)
    state = env.state(StateIntent.INITIALIZE, 0)
    user_sig = ref_sign(env.user_key, cid, state)

    # The wallet approves hashes its owner signed (raw ECDSA over keccak(packedState)).
    owner_sig = ref_sign(env.broker_key, cid, state)
    stranger_sig = ref_sign(env.stranger_key, cid, state)
    with pytest.raises(TransactionFailedError) as caught:
        await env.user.create(channel, state.with_sigs([user_sig, stranger_sig]))
    assert caught.value.error_name == "InvalidStateSignatures"

    tx = await env.user.create(channel, state.with_sigs([user_sig, owner_sig]))
    assert tx.event_names == ("Created", "Joined", "Opened")

    # A contract participant challenges with an ERC-1271 signature of packedState++"challenge".
    stored = state.with_sigs([user_sig, owner_sig])
    challenge_sig = Account.unsafe_sign_hash(
        keccak(ref_packed(cid, state) + b"challenge"), env.broker_key.secret_hex()
    ).signature
    tx = await env.stranger.challenge(cid, stored, "0x" + bytes(challenge_sig).hex())
    assert tx.event_names == ("Challenged",)


async def test_erc6492_counterfactual_participant_is_deployed_on_create(env: Env) -> None:
    factory_address = await _wallet_factory(env)
    factory = env.chain.w3.eth.contract(
        address=factory_address, abi=load_artifact("ChannelTestWalletFactory").abi
    )
    salt = b"\x07" * 32
    predicted = await factory.functions.predict(env.broker_key.address, salt).call()
    assert await env.chain.w3.eth.get_code(predicted) == b""

    channel = _contract_channel(env, predicted)
    cid = env.channel_id(channel)
    state = env.state(StateIntent.INITIALIZE, 0)
    deploy_calldata = bytes.fromhex(
        factory.encode_abi("deploy", args=[env.broker_key.address, salt])[2:]
    )
    inner = bytes.fromhex(ref_sign(env.broker_key, cid, state)[2:])
    wrapped = (
        encode(["address", "bytes", "bytes"], [factory_address, deploy_calldata, inner])
        + ERC6492_SUFFIX
    )

    tx = await env.user.create(
        channel, state.with_sigs([ref_sign(env.user_key, cid, state), "0x" + wrapped.hex()])
    )

    assert tx.event_names == ("Created", "Joined", "Opened")
    assert len(await env.chain.w3.eth.get_code(predicted)) > 0


@pytest.mark.parametrize("failure", ["ERC6492DeploymentFailed", "ERC6492NoCode"])
async def test_erc6492_deployment_failures_are_named(env: Env, failure: str) -> None:
    factory_address = await _wallet_factory(env)
    factory = env.chain.w3.eth.contract(
        address=factory_address, abi=load_artifact("ChannelTestWalletFactory").abi
    )
    predicted = await factory.functions.predict(env.broker_key.address, b"\x01" * 32).call()
    channel = _contract_channel(env, predicted)
    cid = env.channel_id(channel)
    state = env.state(StateIntent.INITIALIZE, 0)
    if failure == "ERC6492DeploymentFailed":
        calldata = b"\xde\xad\xbe\xef"  # no such function on the factory
    else:  # deploys a wallet, but at another address (other salt)
        calldata = bytes.fromhex(
            factory.encode_abi("deploy", args=[env.broker_key.address, b"\x02" * 32])[2:]
        )
    inner = bytes.fromhex(ref_sign(env.broker_key, cid, state)[2:])
    wrapped = (
        encode(["address", "bytes", "bytes"], [factory_address, calldata, inner]) + ERC6492_SUFFIX
    )

    with pytest.raises(TransactionFailedError) as caught:
        await env.user.create(
            channel, state.with_sigs([ref_sign(env.user_key, cid, state), "0x" + wrapped.hex()])
        )

    assert caught.value.error_name == failure


# --- our own Python core against the contract ----------------------------------------------


@pytest.mark.parametrize("scheme", ["raw", "eip191", "eip712"])
async def test_states_signed_by_our_python_core_are_accepted(env: Env, scheme: str) -> None:
    await env.fund(env.user, 2 * M)
    channel = env.channel()
    cid = channel_id(channel, env.chain_id)
    assert cid == env.channel_id(channel)  # same id as eth-abi computes
    domain = custody_domain(env.chain_id, env.dep.custody)
    assert await env.user.eip712_domain() == {
        "name": domain.name,
        "version": domain.version,
        "chainId": domain.chain_id,
        "verifyingContract": domain.verifying_contract,
    }

    def signed(state: State) -> State:
        return state.with_sigs(
            [
                sign_state(cid, state, key, scheme, domain=domain)
                for key in (env.user_key, env.broker_key)
            ]
        )

    initial = signed(env.state(StateIntent.INITIALIZE, 0, 2 * M, 0))
    assert verify_state_signature(cid, initial, initial.sigs[0], env.user_key.address, domain)
    await env.user.create(channel, initial)

    operate = signed(env.state(StateIntent.OPERATE, 1, 1 * M, 1 * M))
    challenger = sign_challenge(cid, operate, env.user_key, scheme, domain=domain)
    await env.user.challenge(cid, operate, challenger)
    newer = signed(env.state(StateIntent.OPERATE, 2, 1_500_000, 500_000))
    await env.broker.checkpoint(cid, newer)

    final = signed(env.state(StateIntent.FINALIZE, 3, 1_500_000, 500_000))
    tx = await env.user.close(cid, final)

    assert tx.event_names == ("Closed",)
    rows = await env.user.get_accounts_balances(
        [env.user_key.address, env.broker_key.address], [env.token]
    )
    assert rows == [[1_500_000], [500_000]]


async def test_an_erc6492_factory_call_cannot_pay_out_the_custody(env: Env) -> None:
    """The deployed custody makes an ERC-6492 signature's factory call itself. With a token
    that calls the recipient back (ERC-1363 style), "factory = token, calldata =
    transferAndCall(thief, ...)" would pay the custody's tokens to the thief, whose callback
    deploys the named signer just in time. Ours makes that call from a fund-less helper."""
    deployer = env.chain.wallet(0)
    thief_wallet = env.stranger.wallet
    token = (await deploy_contract(deployer, "CallbackTestToken")).address
    token_abi = load_artifact("CallbackTestToken").abi
    cbt = env.chain.w3.eth.contract(address=token, abi=token_abi)
    await env.user.wallet.transact(cbt.functions.mint(env.user_key.address, 10 * M))
    await env.user.approve(token, 10 * M)
    await env.user.deposit(token, 10 * M)  # the custody now holds 10 CBT of the user's

    thief = (await deploy_contract(thief_wallet, "ERC6492Thief")).address
    factory_address = await _wallet_factory(env)
    factory = env.chain.w3.eth.contract(
        address=factory_address, abi=load_artifact("ChannelTestWalletFactory").abi
    )
    salt = b"\x66" * 32
    signer = await factory.functions.predict(env.stranger_key.address, salt).call()
    channel = Channel((env.stranger_key.address, signer), env.dep.adjudicator, 3600, 7)
    cid = env.channel_id(channel)
    state = State(StateIntent.INITIALIZE, 0, b"", env.allocations(0, 0, token=token))

    deploy_signer = bytes.fromhex(
        factory.encode_abi("deploy", args=[env.stranger_key.address, salt])[2:]
    )
    steal = bytes.fromhex(
        cbt.encode_abi(
            "transferAndCall",
            args=[thief, 10 * M, encode(["address", "bytes"], [factory_address, deploy_signer])],
        )[2:]
    )
    inner = bytes.fromhex(ref_sign(env.stranger_key, cid, state)[2:])
    wrapped = encode(["address", "bytes", "bytes"], [token, steal, inner]) + ERC6492_SUFFIX
    signed = state.with_sigs([ref_sign(env.stranger_key, cid, state), "0x" + wrapped.hex()])

    with pytest.raises(TransactionFailedError) as caught:
        await env.stranger.create(channel, signed)

    assert caught.value.error_name == "ERC6492DeploymentFailed"
    assert await cbt.functions.balanceOf(env.dep.custody).call() == 10 * M
    assert await cbt.functions.balanceOf(thief).call() == 0
    assert await env.user.balance(token) == 10 * M
