"""Shared set-up of the ChannelHub integration tests (test support, not a test module).

States are built and signed with the v1 core exactly as a client and the node would
(``nitrolite_v1.lifecycle`` next_state / apply_channel_creation / apply_transition, signed by
``nitrolite_v1.state.sign_state`` with the user's key and the node's key), turned into the
contract form by ``nitrolite_v1.calldata.contract_state_from_wire`` and submitted with the
SDK-identical calldata through :class:`ChannelHubClient`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from settlement_widgets.addresses import ZERO_ADDRESS
from settlement_widgets.channel.v1.chain.hub import (
    ChannelHubClient,
    HubTx,
    channel_id_of,
    contract_definition,
)
from settlement_widgets.channel.v1.core.calldata import contract_state_from_wire
from settlement_widgets.channel.v1.core.lifecycle import (
    apply_channel_creation,
    apply_transition,
    next_state,
)
from settlement_widgets.channel.v1.core.state import (
    TokenDecimals,
    channel_session_key_metadata_hash,
    decimals_from_map,
    pack_channel_session_key_auth,
    pack_state,
    session_key_state_signature,
    sign_eip191,
    sign_state,
)
from settlement_widgets.channel.v1.node.deploy import ChannelHubDeployment, deploy_channel_hub
from settlement_widgets.errors import TransactionFailedError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox import Chain

M = 10**6  # one test token (6 decimals)
ETHER = 10**18
ASSET = "ytest.usd"
CHALLENGE = 86400
NODE_FLOAT = 500 * M
MAX_UINT = 2**256 - 1
PEER = "0x00000000000000000000000000000000000000aa"
RECEIVE_TX = "0x" + "ab" * 32
DAY = 86400


@dataclass
class Env:
    """One hub deployment on one chain: user (account 1), node (account 2), another account
    (3), each with a client; the node's vault holds NODE_FLOAT."""

    chain: Chain
    deployment: ChannelHubDeployment
    user_key: PrivateKey
    node_key: PrivateKey
    other_key: PrivateKey
    user: ChannelHubClient
    node: ChannelHubClient
    other: ChannelHubClient
    decimals: TokenDecimals
    #: further tokens a test module deploys, by role
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def token(self) -> str:
        return self.deployment.token


async def make_env(
    chain: Chain,
    *,
    extra_tokens: Mapping[str, int] | None = None,
    foreign_tokens: Mapping[str, int] | None = None,
) -> Env:
    """Deploy a hub for account 2 as node, fund and approve, fill the node's vault.
    ``foreign_tokens`` adds decimals of tokens on other chains (keys ``"chainId:token"``),
    for states whose other ledger lives on a chain this test only names."""
    user_key, node_key, other_key = chain.accounts[1], chain.accounts[2], chain.accounts[3]
    deployment = await deploy_channel_hub(
        chain,
        chain.wallet(0),
        node_key.address,
        fund=[user_key.address, node_key.address],
        fund_amount=1_000 * M,
    )
    user = ChannelHubClient(chain.wallet(1), deployment.hub)
    node = ChannelHubClient(chain.wallet(2), deployment.hub)
    other = ChannelHubClient(chain.wallet(3), deployment.hub)
    await user.approve(deployment.token, MAX_UINT)
    await node.approve(deployment.token, MAX_UINT)
    await node.deposit_to_node(deployment.token, NODE_FLOAT)
    table = {f"{chain.chain_id}:{deployment.token}": 6, f"{chain.chain_id}:{ZERO_ADDRESS}": 18}
    for token, decimals in (extra_tokens or {}).items():
        table[f"{chain.chain_id}:{token}"] = decimals
    table.update(foreign_tokens or {})
    return Env(
        chain,
        deployment,
        user_key,
        node_key,
        other_key,
        user,
        node,
        other,
        decimals_from_map(table),
    )


class Channel:
    """One user's state chain on one home channel, advanced with the v1 core functions."""

    _nonces = iter(range(1, 1_000_000))

    def __init__(
        self,
        env: Env,
        token: str | None = None,
        *,
        approved: str = "0x01",
        user_key: PrivateKey | None = None,
        home_chain: int | None = None,
    ) -> None:
        self.env = env
        self.token = token or env.token
        #: the chain the channel's home ledger names: this chain unless the test's channel
        #: lives elsewhere (its states only reach this hub as an escrow's non-home side)
        self.home_chain = home_chain or env.chain.chain_id
        self.user_key = user_key or env.user_key
        self.nonce = next(self._nonces)
        self.approved = approved
        self.definition = contract_definition(
            user=self.user_key.address,
            node=env.node_key.address,
            asset=ASSET,
            nonce=self.nonce,
            challenge_duration=CHALLENGE,
            approved_sig_validators=approved,
        )
        self.id = channel_id_of(self.definition)
        self.state: dict[str, Any] = {
            "id": "",
            "transition": {"type": 0, "tx_id": "", "account_id": "", "amount": "0"},
            "asset": ASSET,
            "user_wallet": self.user_key.address,
            "epoch": "0",
            "version": "0",
            "home_ledger": {
                "token_address": "0x0",
                "blockchain_id": "0",
                "user_balance": "0",
                "user_net_flow": "0",
                "node_balance": "0",
                "node_net_flow": "0",
            },
        }

    def advance(self, kind: int, amount: str = "0", **spec: Any) -> dict[str, Any]:
        """The next state with one transition, signed by the user and the node."""
        state = self.unsigned(kind, amount, **spec)
        self.sign(state)
        self.state = state
        return state

    def unsigned(self, kind: int, amount: str = "0", **spec: Any) -> dict[str, Any]:
        """The next state with one transition, not signed and not recorded."""
        state = next_state(self.state)
        if not state.get("home_channel_id"):
            apply_channel_creation(
                state,
                {
                    "nonce": str(self.nonce),
                    "challenge": CHALLENGE,
                    "approvedSigValidators": self.approved,
                },
                str(self.home_chain),
                self.token,
                self.env.node_key.address,
            )
            assert state["home_channel_id"] == self.id
        apply_transition(state, {"type": kind, "amount": amount, **spec})
        return state

    def sign(self, state: dict[str, Any], user_key: PrivateKey | None = None) -> None:
        key = user_key or self.user_key
        state["user_sig"] = "0x" + sign_state(state, key, self.env.decimals).hex()
        state["node_sig"] = "0x" + sign_state(state, self.env.node_key, self.env.decimals).hex()

    def sign_with_session_key(
        self,
        state: dict[str, Any],
        session_key: PrivateKey,
        *,
        authorizer: PrivateKey | None = None,
    ) -> None:
        """User signature through a channel session key (validator 1), authorised by
        ``authorizer`` (default: the user), as the SDK's session-key signer builds it."""
        metadata = channel_session_key_metadata_hash(self.user_key.address, 1, [ASSET], 2**40)
        auth = sign_eip191(
            authorizer or self.user_key,
            pack_channel_session_key_auth(session_key.address, metadata),
        )
        packed = pack_state(state, self.env.decimals)
        user_sig = session_key_state_signature(packed, session_key, metadata, auth)
        state["user_sig"] = "0x" + user_sig.hex()
        state["node_sig"] = "0x" + sign_state(state, self.env.node_key, self.env.decimals).hex()

    def tampered(self, kind: int, amount: str = "0", **ledger: str) -> dict[str, Any]:
        """The next state with one transition (its intent comes from the transition), home
        ledger fields overridden (display units), co-signed anyway: a state the user and the
        node signed but the hub must judge. Recorded as the channel's latest state."""
        spec: dict[str, Any] = {"account_id": PEER} if kind in (30, 31) else {}
        if kind == 31:
            spec["tx_id"] = RECEIVE_TX
        state = self.unsigned(kind, amount, **spec)
        state["home_ledger"].update(ledger)
        self.sign(state)
        self.state = state
        return self.contract(state)

    def contract(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return contract_state_from_wire(state, self.env.decimals)

    # the transitions used by the tests
    def deposit(self, amount: str) -> dict[str, Any]:
        return self.contract(self.advance(10, amount))

    def withdraw(self, amount: str) -> dict[str, Any]:
        return self.contract(self.advance(11, amount))

    def send(self, amount: str) -> dict[str, Any]:
        return self.contract(self.advance(30, amount, account_id=PEER))

    def receive(self, amount: str) -> dict[str, Any]:
        return self.contract(self.advance(31, amount, account_id=PEER, tx_id=RECEIVE_TX))

    def acknowledge(self) -> dict[str, Any]:
        return self.contract(self.advance(1))

    def finalize(self) -> dict[str, Any]:
        return self.contract(self.advance(200))


async def reverts(name: str, call: Any) -> TransactionFailedError:
    """Await ``call`` and check it reverts with the custom error ``name``."""
    with pytest.raises(TransactionFailedError) as info:
        await call
    assert info.value.error_name == name, info.value
    return info.value


async def next_block_at(chain: Chain, timestamp: int) -> None:
    """Make the next transaction both estimate and execute at ``timestamp``.

    The in-process chain estimates and mines each transaction one second after the latest
    block, so the latest block moves to ``timestamp - 1``. Anvil estimates gas at the latest
    block's timestamp, so a block is mined at ``timestamp`` and the next one pinned to it too
    (anvil allows equal timestamps).
    """
    if chain.rpc_url is not None:
        request = chain.request  # type: ignore[attr-defined]
        await request("evm_setNextBlockTimestamp", timestamp)
        await request("evm_mine")
        await request("evm_setNextBlockTimestamp", timestamp)
        return
    latest = await chain.timestamp()
    assert timestamp - 1 >= latest, "cannot move the in-process clock backwards"
    if timestamp - 1 > latest:
        await chain.time_travel(timestamp - 1 - latest)
    assert await chain.timestamp() == timestamp - 1


async def block_time(env: Env, tx: HubTx) -> int:
    """The timestamp of the block a transaction was mined in."""
    block = await env.chain.w3.eth.get_block(tx.block_number)
    return int(block["timestamp"])


# --- channels whose home is another chain (escrow and migration tests) -------------------------

#: a chain id the hub tests only name: the home chain of channels whose escrow (or migration
#: target) is this chain
FOREIGN = 990_001
#: that chain's token (6 decimals, as the sandbox token here)
FOREIGN_TOKEN = "0x00000000000000000000000000000000000000f0"
#: another chain that is neither this one nor FOREIGN
ELSEWHERE = 990_002


def remote_channel(env: Env, funded: str = "100") -> Channel:
    """A channel whose home is FOREIGN, funded there by a (co-signed, off-chain here) deposit."""
    ch = Channel(env, token=FOREIGN_TOKEN, home_chain=FOREIGN)
    ch.advance(10, funded)
    return ch


async def open_here(env: Env, amount: str = "100") -> Channel:
    """A channel created on this chain's hub with ``amount`` deposited."""
    ch = Channel(env)
    await env.user.create_channel(ch.definition, ch.deposit(amount))
    return ch


async def wallet_tokens(env: Env) -> int:
    """The user's token balance on this chain."""
    return await env.user.token_balance(env.token)


async def node_vault(env: Env) -> int:
    """The node's vault on this chain's hub."""
    return await env.user.get_node_balance(env.token)
