"""Channel ids, packed states and the hashes signatures cover (Nitrolite v0.5 ``Utils.sol``).

- ``channelId = keccak256(abi.encode(participants, adjudicator, challenge, nonce, chainId))``
- ``packedState = abi.encode(channelId, intent, version, data, allocations)`` (no sigs)
- ``stateHash = keccak256(packedState)`` (what raw-ECDSA state signatures sign)
- ``packedChallenge = packedState || "challenge"`` and ``challengeHash = keccak256(...)``

Hex strings out (``0x`` + 64 lowercase hex, like the SDK); ``*_bytes`` variants for hot paths.
"""

from __future__ import annotations

from ....errors import InvalidStateError
from .abi import encode_channel_id_preimage, encode_packed_state
from .keccak import keccak256
from .types import UINT256_MAX, Channel, State

__all__ = [
    "CHALLENGE_SUFFIX",
    "as_channel_id_bytes",
    "challenge_hash",
    "channel_id",
    "channel_id_bytes",
    "eip191_digest",
    "packed_challenge",
    "packed_state",
    "state_hash",
    "state_hash_bytes",
]

CHALLENGE_SUFFIX = b"challenge"
"""``abi.encodePacked(packedState, "challenge")``: the 9 ASCII bytes a challenger signs after."""


def as_channel_id_bytes(value: str | bytes) -> bytes:
    """A channel id as 32 bytes, from ``0x``-hex or bytes, with a clear error."""
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
    elif isinstance(value, str) and value.startswith(("0x", "0X")) and len(value) == 66:
        try:
            raw = bytes.fromhex(value[2:])
        except ValueError:
            raise InvalidStateError(f"channel id {value!r} is not hex") from None
    else:
        raise InvalidStateError(f"channel id must be 0x followed by 64 hex digits, got {value!r}")
    if len(raw) != 32:
        raise InvalidStateError(f"channel id must be 32 bytes, got {len(raw)}")
    return raw


def _chain_id(chain_id: int) -> int:
    if (
        isinstance(chain_id, bool)
        or not isinstance(chain_id, int)
        or not 0 < chain_id <= UINT256_MAX
    ):
        raise InvalidStateError(f"chain id must be a positive integer, got {chain_id!r}")
    return chain_id


def channel_id_bytes(channel: Channel, chain_id: int) -> bytes:
    """``Utils.getChannelId`` for a channel on ``chain_id`` (32 bytes)."""
    return keccak256(
        encode_channel_id_preimage(
            channel.participants,
            channel.adjudicator,
            channel.challenge,
            channel.nonce,
            _chain_id(chain_id),
        )
    )


def channel_id(channel: Channel, chain_id: int) -> str:
    """``Utils.getChannelId`` / SDK ``getChannelId(channel, chainId)`` as 0x-hex."""
    return "0x" + channel_id_bytes(channel, chain_id).hex()


def packed_state(channel_id: str | bytes, state: State) -> bytes:
    """``Utils.getPackedState`` / SDK ``getPackedState``: the bytes every state signature covers."""
    return encode_packed_state(
        as_channel_id_bytes(channel_id),
        state.intent,
        state.version,
        state.data,
        [(a.destination, a.token, a.amount) for a in state.allocations],
    )


def state_hash_bytes(channel_id: str | bytes, state: State) -> bytes:
    return keccak256(packed_state(channel_id, state))


def state_hash(channel_id: str | bytes, state: State) -> str:
    """``keccak256(packedState)`` / SDK ``getStateHash`` as 0x-hex."""
    return "0x" + state_hash_bytes(channel_id, state).hex()


def packed_challenge(channel_id: str | bytes, state: State) -> bytes:
    """SDK ``getPackedChallengeState``: ``packedState || "challenge"``."""
    return packed_state(channel_id, state) + CHALLENGE_SUFFIX


def challenge_hash(channel_id: str | bytes, state: State) -> str:
    """SDK ``getChallengeHash``: what a raw-ECDSA challenger signature signs."""
    return "0x" + keccak256(packed_challenge(channel_id, state)).hex()


def eip191_digest(message: bytes) -> bytes:
    """EIP-191 ``personal_sign`` digest of raw bytes (``"\\x19Ethereum Signed Message:\\n" +
    decimal length + message``), as viem ``hashMessage({raw})`` and OZ
    ``toEthSignedMessageHash(bytes)`` compute it."""
    return keccak256(b"\x19Ethereum Signed Message:\n" + str(len(message)).encode() + message)
