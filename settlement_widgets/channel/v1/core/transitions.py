"""Nitrolite v1 transitions: types, on-chain intents, transition hashes, validator bitmaps.

Every v1 state carries exactly one transition ``{type, tx_id, account_id, amount}``
(Nitrolite v1.4.1 ``core/types.ts``). What the user and node sign covers it through two values:

- the **intent**, a ``uint8`` the ChannelHub uses to pick the on-chain effect, derived from
  the type by ``core.transitionToIntent`` (TS and Go agree; the SDK's EVM client has a
  different, wrong table for escrow transitions, which we do not copy);
- the **transition hash** (``metadata`` in the packed state)
  ``keccak256(abi.encode((uint8 type, bytes32 txId, bytes32 accountId, string amount)))``,
  where ``txId``/``accountId`` are turned into bytes32 by the SDK's lenient hex rule
  (:func:`lenient_bytes32`) and ``amount`` is hashed as the exact decimal string.

The signature-validator bitmap (``approved_sig_validators`` of a channel definition) has bit
n set when validator id n may sign; :func:`sig_validators_bitmap` builds the hex string the
SDK sends from the ids the node supports.
"""

from __future__ import annotations

import enum
import re
import string
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from ...._keccak import keccak256
from ....errors import InvalidStateError
from .ids import as_uint, parse_sig_validators_hex

__all__ = [
    "SDK_TRANSITION_NAMES",
    "VECTORS",
    "StateIntent",
    "TransitionType",
    "encode_transition",
    "lenient_bytes32",
    "sig_validators_bitmap",
    "sig_validators_from_bitmap",
    "transition_hash",
    "transition_to_intent",
]


class TransitionType(enum.IntEnum):
    """Transition type numbers as they appear on the wire and in the signed metadata."""

    VOID = 0
    ACKNOWLEDGEMENT = 1
    HOME_DEPOSIT = 10
    HOME_WITHDRAWAL = 11
    ESCROW_DEPOSIT = 20
    ESCROW_WITHDRAW = 21
    TRANSFER_SEND = 30
    TRANSFER_RECEIVE = 31
    COMMIT = 40
    RELEASE = 41
    MIGRATE = 100
    MIGRATE_FINALIZE = 101
    """Ours, not upstream's: the state that completes a ``MIGRATE`` (intent
    FINALIZE_MIGRATION). Nitrolite v1.4.1 has the hub intent but no transition producing it
    (its cores refuse ``migrate`` altogether); see :mod:`.migration`."""
    ESCROW_LOCK = 110
    MUTUAL_LOCK = 120
    FINALIZE = 200
    CHALLENGE_RESCUE = 201
    """Go-only: node-issued after a challenged channel closes; the TS SDK has no such type
    and no intent for it, so :func:`transition_to_intent` refuses it."""


class StateIntent(enum.IntEnum):
    """The ChannelHub's ``StateIntent`` enum (what the contract does with a state)."""

    OPERATE = 0
    CLOSE = 1
    DEPOSIT = 2
    WITHDRAW = 3
    INITIATE_ESCROW_DEPOSIT = 4
    FINALIZE_ESCROW_DEPOSIT = 5
    INITIATE_ESCROW_WITHDRAWAL = 6
    FINALIZE_ESCROW_WITHDRAWAL = 7
    INITIATE_MIGRATION = 8
    FINALIZE_MIGRATION = 9


SDK_TRANSITION_NAMES: dict[TransitionType, str] = {
    TransitionType.VOID: "Void",
    TransitionType.ACKNOWLEDGEMENT: "Acknowledgement",
    TransitionType.HOME_DEPOSIT: "HomeDeposit",
    TransitionType.HOME_WITHDRAWAL: "HomeWithdrawal",
    TransitionType.ESCROW_DEPOSIT: "EscrowDeposit",
    TransitionType.ESCROW_WITHDRAW: "EscrowWithdraw",
    TransitionType.TRANSFER_SEND: "TransferSend",
    TransitionType.TRANSFER_RECEIVE: "TransferReceive",
    TransitionType.COMMIT: "Commit",
    TransitionType.RELEASE: "Release",
    TransitionType.MIGRATE: "Migrate",
    TransitionType.ESCROW_LOCK: "EscrowLock",
    TransitionType.MUTUAL_LOCK: "MutualLock",
    TransitionType.FINALIZE: "Finalize",
}
"""The TS SDK's ``TransitionType`` member names (the types the SDK knows), in SDK order."""

_INTENTS: dict[TransitionType, StateIntent] = {
    TransitionType.VOID: StateIntent.OPERATE,
    TransitionType.ACKNOWLEDGEMENT: StateIntent.OPERATE,
    TransitionType.HOME_DEPOSIT: StateIntent.DEPOSIT,
    TransitionType.HOME_WITHDRAWAL: StateIntent.WITHDRAW,
    TransitionType.ESCROW_DEPOSIT: StateIntent.FINALIZE_ESCROW_DEPOSIT,
    TransitionType.ESCROW_WITHDRAW: StateIntent.FINALIZE_ESCROW_WITHDRAWAL,
    TransitionType.TRANSFER_SEND: StateIntent.OPERATE,
    TransitionType.TRANSFER_RECEIVE: StateIntent.OPERATE,
    TransitionType.COMMIT: StateIntent.OPERATE,
    TransitionType.RELEASE: StateIntent.OPERATE,
    TransitionType.MIGRATE: StateIntent.INITIATE_MIGRATION,
    TransitionType.MIGRATE_FINALIZE: StateIntent.FINALIZE_MIGRATION,
    TransitionType.ESCROW_LOCK: StateIntent.INITIATE_ESCROW_WITHDRAWAL,
    TransitionType.MUTUAL_LOCK: StateIntent.INITIATE_ESCROW_DEPOSIT,
    TransitionType.FINALIZE: StateIntent.CLOSE,
}

_HEX_DIGITS = frozenset(string.hexdigits)


def _transition_type(value: object) -> TransitionType:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidStateError(f"transition type must be an integer, got {value!r}")
    try:
        return TransitionType(value)
    except ValueError:
        known = ", ".join(str(int(t)) for t in TransitionType)
        raise InvalidStateError(
            f"unknown transition type {value!r}; known types: {known}"
        ) from None


def transition_to_intent(transition_type: int) -> StateIntent:
    """The on-chain intent of a transition type (``core.transitionToIntent``).

    Signing uses this table; it is what the contract checks the signature against.
    """
    kind = _transition_type(transition_type)
    intent = _INTENTS.get(kind)
    if intent is None:
        raise InvalidStateError(
            f"transition type {int(kind)} ({kind.name}) has no signing intent: "
            "it is issued by the node only"
        )
    return intent


_ALL_HEX: Final = re.compile(r"[0-9a-fA-F]*")


def lenient_bytes32(value: str | None, field: str = "value") -> bytes:
    """A transition's ``tx_id``/``account_id`` text as the bytes32 the SDK hashes.

    The SDK does not validate these fields: it strips ``0x``, left-pads an odd-length string
    with one ``0``, decodes hex pairs up to the first pair that is not hex (Go
    ``common.FromHex``-like; the rest is dropped), and right-aligns the result in 32 bytes.
    ``None`` or ``""`` give 32 zero bytes. We reproduce that exactly, because the node
    recomputes the hash from the same text; only a value that decodes to more than 32 bytes is
    refused, since no real id is that long.
    """
    if value is None:
        return bytes(32)
    if not isinstance(value, str):
        raise InvalidStateError(f"{field} must be a string, got {type(value).__name__}")
    text = value[2:] if value.startswith(("0x", "0X")) else value
    if len(text) % 2:
        text = "0" + text
    if len(text) <= 64 and _ALL_HEX.fullmatch(text):  # the usual case: a whole hex id
        return bytes.fromhex(text).rjust(32, b"\0")
    decoded = bytearray()
    for i in range(0, len(text), 2):
        pair = text[i : i + 2]
        if not (pair[0] in _HEX_DIGITS and pair[1] in _HEX_DIGITS):
            break
        decoded.append(int(pair, 16))
    if len(decoded) > 32:
        raise InvalidStateError(
            f"{field} {value!r} decodes to {len(decoded)} bytes; at most 32 fit in a bytes32"
        )
    return bytes(32 - len(decoded)) + bytes(decoded)


def encode_transition(
    transition_type: int, tx_id: str | None, account_id: str | None, amount: str
) -> bytes:
    """``abi.encode((uint8 type, bytes32 txId, bytes32 accountId, string amount))``.

    One dynamic tuple argument: an offset word (0x20), then the tuple's head (type, txId,
    accountId, offset 0x80 of the string inside the tuple) and the string's tail.
    """
    kind = _transition_type(transition_type)
    if not isinstance(amount, str):
        raise InvalidStateError(
            f"amount must be the decimal string that is signed, got {type(amount).__name__}"
        )
    tx = lenient_bytes32(tx_id, "tx_id")
    account = lenient_bytes32(account_id, "account_id")
    # the layout written out (the same bytes as abi_encode over the tuple type, which the
    # tests hold it to): both sides hash the transition of every state they sign or check
    raw = amount.encode()
    return b"".join(
        (
            _TUPLE_OFFSET,
            int(kind).to_bytes(32, "big"),  # a TransitionType: 0..201, fits a uint8
            tx,
            account,
            _STRING_OFFSET,
            len(raw).to_bytes(32, "big"),
            raw,
            bytes(-len(raw) % 32),
        )
    )


#: ``abi.encode`` of the one dynamic tuple: its offset (one word in), and inside the tuple
#: the string's offset (after the four head words)
_TUPLE_OFFSET: Final = (32).to_bytes(32, "big")
_STRING_OFFSET: Final = (128).to_bytes(32, "big")


def transition_hash(
    transition_type: int, tx_id: str | None, account_id: str | None, amount: str
) -> str:
    """The packed state's ``metadata`` (SDK ``getStateTransitionHash``), ``0x`` + hex.

    ``amount`` is hashed as given: pass the exact string that goes on the wire (the SDK's
    decimal.js rendering, e.g. ``"1e-8"``, hashes differently from ``"0.00000001"``).
    """
    return "0x" + keccak256(encode_transition(transition_type, tx_id, account_id, amount)).hex()


def sig_validators_bitmap(validator_ids: Iterable[int]) -> str:
    """The ``approved_sig_validators`` hex string for these validator ids (bit n = id n).

    Same result as the SDK's ``Client.buildSigValidatorsBitmap`` / Go
    ``core.BuildSigValidatorsBitmap``: big-endian bytes with leading zero bytes trimmed,
    ``"0x00"`` when empty. The node's ``supported_sig_validators`` go in; the string goes into
    the channel definition, and so into the channel id.
    """
    bitmap = 0
    for vid in validator_ids:
        bitmap |= 1 << as_uint(vid, 8, "signature validator id")
    if bitmap == 0:
        return "0x00"
    return "0x" + bitmap.to_bytes((bitmap.bit_length() + 7) // 8, "big").hex()


def sig_validators_from_bitmap(bitmap: str | int) -> frozenset[int]:
    """The validator ids a bitmap approves (inverse of :func:`sig_validators_bitmap`)."""
    value = parse_sig_validators_hex(bitmap)
    return frozenset(i for i in range(value.bit_length()) if value >> i & 1)


# --- vector groups ---------------------------------------------------------------------


def _vector_transition_hash(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    amount = inputs["amount"]
    return {
        "amount_string_hashed": amount,
        "transition_hash": transition_hash(
            inputs["type"], inputs["tx_id"], inputs["account_id"], amount
        ),
        "intent": int(transition_to_intent(inputs["type"])),
    }


def _vector_transition_intent(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    return {
        name: {"transition_type": int(kind), "intent": int(transition_to_intent(kind))}
        for kind, name in SDK_TRANSITION_NAMES.items()
    }


def _vector_sig_validator_bitmap(
    inputs: Mapping[str, Any], meta: Mapping[str, Any]
) -> dict[str, Any]:
    bitmap = sig_validators_bitmap(inputs["signer_types"])
    return {"bitmap_hex": bitmap, "as_uint256": str(int(bitmap, 16))}


VECTORS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]] = {
    "transition_hash": _vector_transition_hash,
    "transition_intent": _vector_transition_intent,
    "sig_validator_bitmap": _vector_sig_validator_bitmap,
}
"""Vector group -> ``(inputs, meta) -> outputs``, gathered by :mod:`.vectors`."""
