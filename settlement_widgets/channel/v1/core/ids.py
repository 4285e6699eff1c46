"""Nitrolite v1 identifiers: home/escrow channel ids, channel metadata, state ids, tx ids.

Every id the v1 node and the ChannelHub contract compare is a keccak256 over an exact
``abi.encode`` layout (Nitrolite v1.4.1 ``Utils.sol``). A one-byte difference gives
a different id and the node rejects the state, so each layout is spelled out below, encoded
with the package's one ABI encoder (:mod:`.abi`), and checked byte for byte against the SDK's
vectors (tests/unit/test_nitrolite_v1_ids.py):

- ``channel_metadata = keccak256(utf8(asset))[:8] ‖ 24 zero bytes`` (asset case-sensitive)
- ``home_channel_id = 0x01 ‖ keccak256(abi.encode((uint32 challengeDuration, address user,
  address node, uint64 nonce, uint256 approvedSignatureValidators, bytes32 metadata))))[1:]``
- ``escrow_channel_id = keccak256(abi.encode(bytes32 homeChannelId, uint64 version))``
- ``state_id = keccak256(abi.encode(address wallet, string asset, uint256 epoch,
  uint256 version))``
- ``transaction_id = keccak256(abi.encode(string account, bytes32 stateId))``; the account
  is hashed as *text*, so ``0xAbC…`` and ``0xabc…`` give different ids.

Hex strings out are ``0x`` + lowercase hex, as the SDK prints them. Bad input raises
:class:`~settlement_widgets.errors.InvalidAddressError` (addresses) or
:class:`~settlement_widgets.errors.InvalidStateError` (numbers, hex, ids), never a bare error.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from ...._keccak import keccak256
from ....addresses import validate_address
from ....errors import InvalidStateError
from .abi import abi_encode
from .vector_case import VectorCase, known_answer_fields

__all__ = [
    "CHANNEL_HUB_VERSION",
    "DEFAULT_CHALLENGE_DURATION",
    "VECTORS",
    "as_bytes32",
    "as_uint",
    "channel_metadata",
    "encode_channel_definition",
    "escrow_channel_id",
    "home_channel_id",
    "parse_sig_validators_hex",
    "receiver_transaction_id",
    "sender_transaction_id",
    "state_id",
    "transaction_id",
]

CHANNEL_HUB_VERSION = 0x01
"""``ChannelHub.VERSION``: written over byte 0 of every home channel id (since SDK v1.1.0)."""

DEFAULT_CHALLENGE_DURATION = 86400
"""The SDK's default challenge period in seconds (Nitrolite v1.4.1)."""

_DECIMAL = re.compile(r"^[0-9]+$")
_HEX = re.compile(r"^0[xX][0-9a-fA-F]+$")
_BYTES32 = re.compile(r"^0[xX][0-9a-fA-F]{64}$")


def _hex(raw: bytes) -> str:
    return "0x" + raw.hex()


def as_uint(value: object, bits: int, field: str) -> int:
    """An unsigned integer of ``bits`` bits from an int or a decimal string.

    The SDK takes bigints and the vectors carry them as decimal strings; both are accepted so
    wire values can be passed through unchanged. ``bool`` is refused (``True`` is not a nonce).
    """
    if isinstance(value, bool):
        raise InvalidStateError(f"{field} must be an integer, got {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and _DECIMAL.match(value):
        number = int(value)
    else:
        raise InvalidStateError(
            f"{field} must be a non-negative integer or decimal string, got {value!r}"
        )
    if not 0 <= number < 1 << bits:
        raise InvalidStateError(f"{field} {number} does not fit in uint{bits}")
    return number


def as_bytes32(value: object, field: str) -> bytes:
    """Exactly 32 bytes from ``0x`` + 64 hex digits (or raw bytes): channel and state ids.

    Strict on purpose: an id that is not 32 bytes is a caller's bug, and silently padding it
    would hash to an id nobody else computes.
    """
    if isinstance(value, bytes | bytearray):
        if len(value) != 32:
            raise InvalidStateError(f"{field} must be 32 bytes, got {len(value)}")
        return bytes(value)
    if not isinstance(value, str) or not _BYTES32.match(value):
        raise InvalidStateError(f"{field} must be 0x followed by 64 hex digits, got {value!r}")
    return bytes.fromhex(value[2:])


def parse_sig_validators_hex(value: object) -> int:
    """``approved_sig_validators`` (a hex bitmap string such as ``"0x03"``, or an int) as the
    uint256 the channel definition hashes. ``"0x0"`` and ``"0x00"`` are both zero."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _HEX.match(value):
        number = int(value[2:], 16)
    else:
        raise InvalidStateError(
            f"approved_sig_validators must be a 0x-hex bitmap such as '0x03', got {value!r}"
        )
    if not 0 <= number < 1 << 256:
        raise InvalidStateError(f"approved_sig_validators {value!r} does not fit in uint256")
    return number


def channel_metadata(asset: str) -> bytes:
    """First 8 bytes of ``keccak256(utf8(asset))`` then 24 zero bytes.

    Binds a home channel to one asset symbol; the symbol is hashed as given, so ``"USDC"`` and
    ``"usdc"`` are different channels.
    """
    if not isinstance(asset, str):
        raise InvalidStateError(f"asset must be a string, got {type(asset).__name__}")
    return keccak256(asset.encode("utf-8"))[:8] + bytes(24)


def encode_channel_definition(
    *,
    challenge_duration: int | str,
    user: str,
    node: str,
    nonce: int | str,
    approved_sig_validators: int | str,
    metadata: bytes,
) -> bytes:
    """``abi.encode(ChannelDefinition)``: six static words, the tuple encoded in place.

    The struct has no dynamic member, so its encoding is just its fields' words in order
    (no offset word), which is what ``Utils.getChannelId`` hashes.
    """
    if not isinstance(metadata, bytes | bytearray) or len(metadata) != 32:
        raise InvalidStateError("channel metadata must be 32 bytes")
    definition = (
        as_uint(challenge_duration, 32, "challenge_duration"),
        validate_address(user, field="user"),
        validate_address(node, field="node"),
        as_uint(nonce, 64, "nonce"),
        parse_sig_validators_hex(approved_sig_validators),
        bytes(metadata),
    )
    return abi_encode(["(uint32,address,address,uint64,uint256,bytes32)"], [definition])


def home_channel_id(
    *,
    node: str,
    user: str,
    asset: str,
    nonce: int | str,
    challenge_duration: int | str = DEFAULT_CHALLENGE_DURATION,
    approved_sig_validators: int | str = 0,
) -> str:
    """The home channel id: keccak256 of the definition with byte 0 set to the hub VERSION.

    The version byte lets a later ChannelHub tell its channels from an older hub's.
    """
    encoded = encode_channel_definition(
        challenge_duration=challenge_duration,
        user=user,
        node=node,
        nonce=nonce,
        approved_sig_validators=approved_sig_validators,
        metadata=channel_metadata(asset),
    )
    digest = keccak256(encoded)
    return _hex(bytes([CHANNEL_HUB_VERSION]) + digest[1:])


def escrow_channel_id(home_channel_id: str | bytes, version: int | str) -> str:
    """``keccak256(abi.encode(bytes32 homeChannelId, uint64 version))``.

    ``version`` is the version of the state that opens the escrow (mutual_lock/escrow_lock),
    so each escrow operation of a channel gets its own id.
    """
    raw = as_bytes32(home_channel_id, "home_channel_id")
    encoded = abi_encode(["bytes32", "uint64"], [raw, as_uint(version, 64, "state version")])
    return _hex(keccak256(encoded))


def state_id(user_wallet: str, asset: str, epoch: int | str, version: int | str) -> str:
    """``keccak256(abi.encode(address wallet, string asset, uint256 epoch, uint256 version))``.

    The wallet is encoded as 20 bytes, so its letter case does not matter; the asset symbol is
    hashed as text, so it does.
    """
    if all(type(v) in (str, int) for v in (user_wallet, asset, epoch, version)):
        # every state is identified several times on both sides (next state, checks, wire)
        return _cached_state_id(user_wallet, asset, epoch, version)
    return _state_id(user_wallet, asset, epoch, version)


@functools.lru_cache(maxsize=1024)
def _cached_state_id(user_wallet: str, asset: str, epoch: int | str, version: int | str) -> str:
    return _state_id(user_wallet, asset, epoch, version)


def _state_id(user_wallet: str, asset: str, epoch: int | str, version: int | str) -> str:
    wallet = validate_address(user_wallet, field="user_wallet")
    if not isinstance(asset, str):
        raise InvalidStateError(f"asset must be a string, got {type(asset).__name__}")
    epoch_number, version_number = as_uint(epoch, 256, "epoch"), as_uint(version, 256, "version")
    # abi.encode(address, string, uint256, uint256) written out (the same bytes as
    # abi_encode over those types, which the tests hold it to): the address word, the
    # string's offset (after the four head words), the two numbers, then the string
    raw = asset.encode()
    encoded = b"".join(
        (
            bytes(12),
            bytes.fromhex(wallet[2:]),
            _FOUR_WORDS,
            epoch_number.to_bytes(32, "big"),
            version_number.to_bytes(32, "big"),
            len(raw).to_bytes(32, "big"),
            raw,
            bytes(-len(raw) % 32),
        )
    )
    return _hex(keccak256(encoded))


_TWO_WORDS: Final = (64).to_bytes(32, "big")
_FOUR_WORDS: Final = (128).to_bytes(32, "big")


def transaction_id(account: str, new_state_id: str | bytes) -> str:
    """``keccak256(abi.encode(string account, bytes32 stateId))``.

    ``account`` is hashed as the exact text the node received (checksummed and lowercase
    addresses differ), so pass it through unchanged, never normalised.
    """
    if not isinstance(account, str):
        raise InvalidStateError(f"account must be a string, got {type(account).__name__}")
    state = as_bytes32(new_state_id, "state_id")
    # abi.encode(string, bytes32) written out (the same bytes as abi_encode over those
    # types, which the tests hold it to): the string's offset, the id, then the string
    raw = account.encode()
    padding = bytes(-len(raw) % 32)
    return _hex(keccak256(_TWO_WORDS + state + len(raw).to_bytes(32, "big") + raw + padding))


def sender_transaction_id(account: str, new_state_id: str | bytes) -> str:
    """The SDK's ``getSenderTransactionId``: :func:`transaction_id`."""
    return transaction_id(account, new_state_id)


def receiver_transaction_id(account: str, new_state_id: str | bytes) -> str:
    """The SDK's ``getReceiverTransactionId``: the same formula as the sender's."""
    return transaction_id(account, new_state_id)


# --- vector groups ---------------------------------------------------------------------


def _word(number: int) -> bytes:
    return number.to_bytes(32, "big")


def _address_word(address: str) -> bytes:
    return bytes(12) + bytes.fromhex(validate_address(address)[2:])


def _vector_channel_id(
    inputs: Mapping[str, Any], meta: Mapping[str, Any], case: VectorCase
) -> dict[str, Any]:
    """``getHomeChannelId``; a known-answer vector also gets the id recomputed from the
    definition's six words laid out by hand (``expected_kat``) and whether they agree."""
    metadata = channel_metadata(inputs["asset"])
    encoded = encode_channel_definition(
        challenge_duration=inputs["challenge_duration"],
        user=inputs["user"],
        node=inputs["node"],
        nonce=inputs["nonce"],
        approved_sig_validators=inputs["approved_sig_validators"],
        metadata=metadata,
    )
    digest = keccak256(encoded)
    channel = home_channel_id(
        node=inputs["node"],
        user=inputs["user"],
        asset=inputs["asset"],
        nonce=inputs["nonce"],
        challenge_duration=inputs["challenge_duration"],
        approved_sig_validators=inputs["approved_sig_validators"],
    )
    words = (
        _word(as_uint(inputs["challenge_duration"], 32, "challenge_duration"))
        + _address_word(inputs["user"])
        + _address_word(inputs["node"])
        + _word(as_uint(inputs["nonce"], 64, "nonce"))
        + _word(parse_sig_validators_hex(inputs["approved_sig_validators"]))
        + metadata
    )
    by_hand = _hex(bytes([CHANNEL_HUB_VERSION]) + keccak256(words)[1:])
    return {
        "channel_metadata": _hex(metadata),
        "abi_encoded_definition": _hex(encoded),
        "keccak256": _hex(digest),
        "home_channel_id": channel,
        **known_answer_fields(case, channel, by_hand),
    }


def _vector_escrow_channel_id(
    inputs: Mapping[str, Any], meta: Mapping[str, Any], case: VectorCase
) -> dict[str, Any]:
    """``getEscrowChannelId``; a known-answer vector also gets it recomputed by hand."""
    escrow = escrow_channel_id(inputs["home_channel_id"], inputs["state_version"])
    by_hand = _hex(
        keccak256(
            as_bytes32(inputs["home_channel_id"], "home_channel_id")
            + _word(as_uint(inputs["state_version"], 64, "state version"))
        )
    )
    return {"escrow_channel_id": escrow, **known_answer_fields(case, escrow, by_hand)}


def _vector_channel_metadata(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    asset = inputs["asset"]
    if not isinstance(asset, str):
        raise InvalidStateError(f"asset must be a string, got {type(asset).__name__}")
    return {
        "keccak256_asset": _hex(keccak256(asset.encode("utf-8"))),
        "metadata": _hex(channel_metadata(asset)),
    }


def _vector_state_id(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "state_id": state_id(
            inputs["user_wallet"], inputs["asset"], inputs["epoch"], inputs["version"]
        )
    }


def _vector_transaction_id(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "sender_tx_id": sender_transaction_id(inputs["account"], inputs["state_id"]),
        "receiver_tx_id": receiver_transaction_id(inputs["account"], inputs["state_id"]),
    }


VECTORS: dict[str, Callable[..., dict[str, Any]]] = {
    "channel_id": _vector_channel_id,
    "escrow_channel_id": _vector_escrow_channel_id,
    "channel_metadata": _vector_channel_metadata,
    "state_id": _vector_state_id,
    "transaction_id": _vector_transaction_id,
}
"""Vector group -> ``(inputs, meta) -> outputs``, gathered by :mod:`.vectors`."""
