"""Who signs for a v1 client: wallets, channel signers and session-key proofs.

Why a module of its own: the SDK separates the *message* signer (EIP-191 over raw bytes,
i.e. a wallet: :class:`~settlement_widgets.signer.Signer`, a browser wallet, or a key held in
the process) from the *state* signer that prefixes the validator byte the ChannelHub
dispatches on (Nitrolite v1.4.1 ``sdk/ts/src/signers.ts``, ``core/channel_signer.ts``).
Every signed call of :class:`~.client_calls.V1ClientCore` goes through a
:class:`StateSigner`; nothing here does I/O beyond awaiting the wallet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ....addresses import validate_address
from ....errors import InvalidSignatureError, SettlementValueError
from ....keys import PrivateKey
from .abi import abi_encode
from .app_sessions import app_session_key_state_hash
from .state import (
    SIG_VALIDATOR_DEFAULT,
    SIG_VALIDATOR_SESSION_KEY,
    channel_session_key_metadata_hash,
    eip191_digest,
    pack_channel_session_key_auth,
)

__all__ = [
    "ChannelDefaultSigner",
    "ChannelSessionKeySigner",
    "KeyMessageSigner",
    "MessageSigner",
    "StateSigner",
    "channel_key_payload",
    "sign_app_session_key_ownership",
    "sign_channel_session_key_ownership",
    "signature_bytes",
    "vector_state_signer",
]


class MessageSigner(Protocol):
    """What signs for a wallet: :class:`~settlement_widgets.signer.Signer` fits, as does
    :class:`KeyMessageSigner`. ``sign_message`` is EIP-191 ``personal_sign`` over raw bytes,
    returning the 65-byte ``r‖s‖v`` signature as 0x-hex."""

    @property
    def address(self) -> str: ...

    async def sign_message(self, message: bytes) -> str: ...


class KeyMessageSigner:
    """A :class:`MessageSigner` over a private key held in the process (tests, scripts,
    session keys). Its repr shows the address only."""

    __slots__ = ("_key",)

    def __init__(self, key: PrivateKey) -> None:
        if not isinstance(key, PrivateKey):
            raise SettlementValueError("KeyMessageSigner needs a PrivateKey")
        self._key = key

    @property
    def address(self) -> str:
        return self._key.address

    async def sign_message(self, message: bytes) -> str:
        return "0x" + self._key.sign_hash(eip191_digest(bytes(message))).hex()

    def __repr__(self) -> str:
        return f"KeyMessageSigner({self._key.address})"


def signature_bytes(value: object, who: str) -> bytes:
    """A signer's answer as 65 bytes (a wallet that returns something else is refused)."""
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
    elif isinstance(value, str) and value.startswith(("0x", "0X")):
        try:
            raw = bytes.fromhex(value[2:])
        except ValueError:
            raise InvalidSignatureError(f"{who} returned a signature that is not hex") from None
    else:
        raise InvalidSignatureError(f"{who} returned {type(value).__name__}, not a signature")
    if len(raw) != 65:
        raise InvalidSignatureError(f"{who} returned a {len(raw)}-byte signature, expected 65")
    return raw


class StateSigner(Protocol):
    """Signs channel states for one wallet (the SDK's ``StateSigner``).

    ``address`` is the wallet the states belong to; ``sign_state`` returns the channel
    signature with its validator prefix byte; ``sign_wallet_message`` is the wallet's plain
    EIP-191 signature, needed for session-key registrations (refused by session-key signers,
    as in the SDK).
    """

    @property
    def address(self) -> str: ...

    async def sign_state(self, packed_state: bytes) -> str: ...

    async def sign_wallet_message(self, message: bytes) -> str: ...


@dataclass(frozen=True)
class ChannelDefaultSigner:
    """The wallet signs its states itself: ``0x00 ‖ EIP-191 signature`` (validator 0)."""

    wallet: MessageSigner

    @property
    def address(self) -> str:
        return validate_address(self.wallet.address, field="signer address")

    async def sign_state(self, packed_state: bytes) -> str:
        raw = signature_bytes(await self.wallet.sign_message(packed_state), "the wallet")
        return "0x" + bytes((SIG_VALIDATOR_DEFAULT,)).hex() + raw.hex()

    async def sign_wallet_message(self, message: bytes) -> str:
        return "0x" + signature_bytes(await self.wallet.sign_message(message), "the wallet").hex()


@dataclass(frozen=True)
class ChannelSessionKeySigner:
    """States signed by a registered channel session key (validator 1).

    ``user_sig = 0x01 ‖ abi.encode((sessionKey, metadataHash, authSig), skSig)``: the wallet's
    registration signature travels with every state, so the contract needs no registry.
    """

    session_key: MessageSigner
    wallet_address: str
    metadata_hash: str
    auth_signature: str

    @property
    def address(self) -> str:
        return validate_address(self.wallet_address, field="wallet")

    async def sign_state(self, packed_state: bytes) -> str:
        inner = signature_bytes(await self.session_key.sign_message(packed_state), "session key")
        body = abi_encode(
            ["(address,bytes32,bytes)", "bytes"],
            [
                (
                    validate_address(self.session_key.address, field="session key"),
                    _hex32(self.metadata_hash, "metadata_hash"),
                    signature_bytes(self.auth_signature, "auth_signature"),
                ),
                inner,
            ],
        )
        return "0x" + bytes((SIG_VALIDATOR_SESSION_KEY,)).hex() + body.hex()

    async def sign_wallet_message(self, message: bytes) -> str:
        raise InvalidSignatureError(
            "session key signing requires the default wallet signer, not a session key signer"
        )


def _hex32(value: object, field: str) -> bytes:
    if isinstance(value, str) and value.startswith("0x") and len(value) == 66:
        try:
            return bytes.fromhex(value[2:])
        except ValueError:
            pass
    raise SettlementValueError(f"{field} must be 32 bytes of 0x-hex, got {value!r}")


def channel_key_payload(state: Mapping[str, Any]) -> bytes:
    metadata = channel_session_key_metadata_hash(
        state["user_address"], state["version"], state["assets"], state["expires_at"]
    )
    return pack_channel_session_key_auth(state["session_key"], metadata)


async def sign_channel_session_key_ownership(
    state: Mapping[str, Any], session_key: MessageSigner
) -> str:
    """The session key's proof of possession (``session_key_sig``) for a channel key state."""
    raw = await session_key.sign_message(channel_key_payload(state))
    return "0x" + signature_bytes(raw, "session key").hex()


async def sign_app_session_key_ownership(
    state: Mapping[str, Any], session_key: MessageSigner
) -> str:
    """The session key's proof of possession for an app-session key state."""
    raw = await session_key.sign_message(app_session_key_state_hash(state))
    return "0x" + signature_bytes(raw, "session key").hex()


def vector_state_signer(spec: Mapping[str, Any], meta: Mapping[str, Any]) -> StateSigner:
    """The state signer a vector's ``client.state_signer`` names, from ``meta.keys``."""
    keys = {k["address"].lower(): PrivateKey(k["private_key"]) for k in meta["keys"].values()}
    if spec["type"].startswith("ChannelDefaultSigner"):
        return ChannelDefaultSigner(KeyMessageSigner(keys[spec["address"].lower()]))
    if spec["type"] == "ChannelSessionKeyStateSigner":
        return ChannelSessionKeySigner(
            KeyMessageSigner(keys[spec["session_key"].lower()]),
            spec["wallet"],
            spec["metadata_hash"],
            spec["auth_signature"],
        )
    raise SettlementValueError(f"unknown state signer type {spec['type']!r}")
