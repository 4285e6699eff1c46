"""Independent reference encoding and signing for the custody tests (eth-abi + eth-account).

Nothing here uses settlement_widgets.channel.v0_5.core's hashing or signing: the contract is checked
against the libraries of the field, and our own core is checked against the contract
separately (test_custody_signatures.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

from eth_abi import encode
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
from eth_utils import keccak

from settlement_widgets.channel.v0_5.chain.custody import CustodyClient
from settlement_widgets.channel.v0_5.core.types import Allocation, Channel, State, StateIntent
from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox import Chain, ChannelDeployment

ALLOC_T = "(address,address,uint256)[]"
CHALLENGE_PERIOD = 3600
MAX_UINT = 2**256 - 1
ALLOCATION_TYPE = [
    {"name": "destination", "type": "address"},
    {"name": "token", "type": "address"},
    {"name": "amount", "type": "uint256"},
]
STATE_FIELDS = [
    {"name": "channelId", "type": "bytes32"},
    {"name": "intent", "type": "uint8"},
    {"name": "version", "type": "uint256"},
    {"name": "data", "type": "bytes"},
    {"name": "allocations", "type": "Allocation[]"},
]
_nonces = itertools.count(1_700_000_000_000)


def ref_channel_id(channel: Channel, chain_id: int) -> str:
    preimage = encode(
        ["address[]", "address", "uint64", "uint64", "uint256"],
        [
            list(channel.participants),
            channel.adjudicator,
            channel.challenge,
            channel.nonce,
            chain_id,
        ],
    )
    return "0x" + keccak(preimage).hex()


def ref_packed(channel_id: str, state: State) -> bytes:
    return encode(
        ["bytes32", "uint8", "uint256", "bytes", ALLOC_T],
        [
            bytes.fromhex(channel_id[2:]),
            int(state.intent),
            state.version,
            state.data,
            [(a.destination, a.token, a.amount) for a in state.allocations],
        ],
    )


def domain_separator(chain_id: int, custody: str) -> bytes:
    return keccak(
        encode(
            ["bytes32", "bytes32", "bytes32", "uint256", "address"],
            [
                keccak(
                    b"EIP712Domain(string name,string version,uint256 chainId,"
                    b"address verifyingContract)"
                ),
                keccak(b"Nitrolite:Custody"),
                keccak(b"0.3.0"),
                chain_id,
                custody,
            ],
        )
    )


def _typed_data(
    channel_id: str, state: State, chain_id: int, custody: str, challenge: bool
) -> dict[str, Any]:
    primary = "AllowChallengeStateHash" if challenge else "AllowStateHash"
    return {
        "types": {
            "EIP712Domain": [
                {"name": "name", "type": "string"},
                {"name": "version", "type": "string"},
                {"name": "chainId", "type": "uint256"},
                {"name": "verifyingContract", "type": "address"},
            ],
            primary: STATE_FIELDS,
            "Allocation": ALLOCATION_TYPE,
        },
        "primaryType": primary,
        "domain": {
            "name": "Nitrolite:Custody",
            "version": "0.3.0",
            "chainId": chain_id,
            "verifyingContract": custody,
        },
        "message": {
            "channelId": bytes.fromhex(channel_id[2:]),
            "intent": int(state.intent),
            "version": state.version,
            "data": state.data,
            "allocations": [
                {"destination": a.destination, "token": a.token, "amount": a.amount}
                for a in state.allocations
            ],
        },
    }


def _legacy_712_digest(
    channel_id: str, state: State, chain_id: int, custody: str, challenge: bool
) -> bytes:
    """The deployed custody's EIP-712 digest: allocations hashed as keccak(abi.encode(array))."""
    name = "AllowChallengeStateHash" if challenge else "AllowStateHash"
    typehash = keccak(
        (
            f"{name}(bytes32 channelId,uint8 intent,uint256 version,bytes data,"
            "Allocation[] allocations)"
            "Allocation(address destination,address token,uint256 amount)"
        ).encode()
    )
    allocs = encode([ALLOC_T], [[(a.destination, a.token, a.amount) for a in state.allocations]])
    struct = keccak(
        encode(
            ["bytes32", "bytes32", "uint8", "uint256", "bytes32", "bytes32"],
            [
                typehash,
                bytes.fromhex(channel_id[2:]),
                int(state.intent),
                state.version,
                keccak(state.data),
                keccak(allocs),
            ],
        )
    )
    return keccak(b"\x19\x01" + domain_separator(chain_id, custody) + struct)


def ref_sign(
    key: PrivateKey,
    channel_id: str,
    state: State,
    scheme: str = "raw",
    *,
    chain_id: int | None = None,
    custody: str | None = None,
    challenge: bool = False,
) -> str:
    """A state (or challenger, with ``challenge``) signature made with eth-account."""
    secret = key.secret_hex()
    message = ref_packed(channel_id, state) + (b"challenge" if challenge else b"")
    if scheme == "raw":
        signed = Account.unsafe_sign_hash(keccak(message), secret)
    elif scheme == "eip191":
        signed = Account.sign_message(encode_defunct(primitive=message), secret)
    elif scheme == "eip712":
        assert chain_id is not None and custody is not None
        signable = encode_typed_data(
            full_message=_typed_data(channel_id, state, chain_id, custody, challenge)
        )
        signed = Account.sign_message(signable, secret)
    elif scheme == "eip712-legacy":
        assert chain_id is not None and custody is not None
        signed = Account.unsafe_sign_hash(
            _legacy_712_digest(channel_id, state, chain_id, custody, challenge), secret
        )
    else:  # pragma: no cover - test bug
        raise AssertionError(scheme)
    return "0x" + bytes(signed.signature).hex()


def resize_data(client_delta: int, server_delta: int) -> bytes:
    return encode(["int256[]"], [[client_delta, server_delta]])


@dataclass
class Env:
    """One deployment with a user (participant 0) and a broker (participant 1)."""

    chain: Chain
    dep: ChannelDeployment
    user_key: PrivateKey
    broker_key: PrivateKey
    stranger_key: PrivateKey
    user: CustodyClient
    broker: CustodyClient
    stranger: CustodyClient

    @property
    def token(self) -> str:
        return self.dep.token

    @property
    def chain_id(self) -> int:
        return self.chain.chain_id

    def channel(self, *, challenge: int = CHALLENGE_PERIOD, nonce: int | None = None) -> Channel:
        return Channel(
            (self.user_key.address, self.broker_key.address),
            self.dep.adjudicator,
            challenge,
            next(_nonces) if nonce is None else nonce,
        )

    def channel_id(self, channel: Channel) -> str:
        return ref_channel_id(channel, self.chain_id)

    def allocations(
        self, user_amount: int, broker_amount: int, *, token: str | None = None
    ) -> tuple[Allocation, ...]:
        t = token or self.token
        return (
            Allocation(self.user_key.address, t, user_amount),
            Allocation(self.broker_key.address, t, broker_amount),
        )

    def state(
        self,
        intent: StateIntent,
        version: int,
        user_amount: int = 0,
        broker_amount: int = 0,
        data: bytes = b"",
    ) -> State:
        return State(intent, version, data, self.allocations(user_amount, broker_amount))

    def sign(
        self,
        channel: Channel,
        state: State,
        signers: tuple[PrivateKey, ...] | None = None,
        scheme: str = "raw",
    ) -> State:
        """``state`` with a signature of each of ``signers`` (default: user then broker)."""
        cid = self.channel_id(channel)
        keys = (self.user_key, self.broker_key) if signers is None else signers
        sigs = [
            ref_sign(k, cid, state, scheme, chain_id=self.chain_id, custody=self.dep.custody)
            for k in keys
        ]
        return state.with_sigs(sigs)

    def challenge_sig(
        self, channel: Channel, state: State, key: PrivateKey | None = None, scheme: str = "raw"
    ) -> str:
        return ref_sign(
            key or self.user_key,
            self.channel_id(channel),
            state.unsigned(),
            scheme,
            chain_id=self.chain_id,
            custody=self.dep.custody,
            challenge=True,
        )

    async def fund(self, who: CustodyClient, amount: int) -> None:
        """Deposit ``amount`` test tokens into ``who``'s custody ledger."""
        await who.deposit(self.token, amount)

    async def open(
        self, user_amount: int = 0, broker_amount: int = 0, *, scheme: str = "raw"
    ) -> tuple[Channel, State]:
        """An ACTIVE channel (create with both signatures), deposits made as needed."""
        if user_amount:
            await self.fund(self.user, user_amount)
        if broker_amount:
            await self.fund(self.broker, broker_amount)
        channel = self.channel()
        initial = self.sign(
            channel,
            self.state(StateIntent.INITIALIZE, 0, user_amount, broker_amount),
            scheme=scheme,
        )
        await self.user.create(channel, initial)
        return channel, initial

    def bump(self, state: State, **changes: Any) -> State:
        return replace(state, **changes)


async def make_env(chain: Chain, dep: ChannelDeployment) -> Env:
    user_key, broker_key, stranger_key = chain.accounts[1], chain.accounts[2], chain.accounts[3]
    user = CustodyClient(chain.wallet(1), dep.custody)
    broker = CustodyClient(chain.wallet(2), dep.custody)
    stranger = CustodyClient(chain.wallet(3), dep.custody)
    for client in (user, broker, stranger):
        await client.approve(dep.token, MAX_UINT)
    return Env(chain, dep, user_key, broker_key, stranger_key, user, broker, stranger)
