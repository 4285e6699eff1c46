"""Nitrolite v1 channel states: packing, signing and channel session keys.

Why this module exists: a v1 channel state is authorised only by the signatures embedded in
it (nitrolite-v1.md §3), and both the node and the ChannelHub contract recompute the exact
bytes that were signed. So the packing below must be byte-identical to the SDK's
``packState`` / ``packChallengeState`` (§7.1) and to the session-key packing (§7.2); the
vector groups ``state_packing_kat`` and ``session_key_state_signature`` pin it down.

Everything here is pure (no I/O, no clock). States are taken in their **wire form**
(``StateV1``: snake_case keys, decimal strings in display units), because that is what the
node sends, what the SDK signs from, and what the vectors record; amounts are scaled to token
base units with the token decimals given by a :data:`TokenDecimals` lookup.

The small ABI encoder here (:func:`abi_encode`) is generic on purpose: v1 hashes nested
tuples, dynamic arrays and strings (app sessions, calldata), unlike the fixed v0.5 shapes in
:mod:`settlement_widgets.erc7824.abi`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from .._keccak import keccak256
from ..addresses import validate_address
from ..errors import (
    InvalidAddressError,
    InvalidAmountError,
    InvalidSignatureError,
    InvalidStateError,
    SettlementValueError,
)
from ..keys import PrivateKey

__all__ = [
    "CHALLENGE_SUFFIX",
    "SESSION_KEY_AUTH_TYPEHASH",
    "SIG_VALIDATOR_DEFAULT",
    "SIG_VALIDATOR_SESSION_KEY",
    "TRANSITION_INTENT",
    "VECTORS",
    "TokenDecimals",
    "abi_encode",
    "apply_channel_creation",
    "apply_transition",
    "channel_session_key_metadata_hash",
    "decimals_from_asset_table",
    "decimals_from_map",
    "eip191_digest",
    "escrow_channel_id",
    "home_channel_id",
    "ledger_tuple",
    "loose_bytes32",
    "next_state",
    "pack_challenge_state",
    "pack_channel_session_key_auth",
    "pack_state",
    "scale_amount",
    "session_key_state_signature",
    "sign_challenge",
    "sign_channel_session_key_state",
    "sign_eip191",
    "sign_state",
    "state_id",
    "state_signing_data",
    "transaction_id",
    "transition_intent",
    "transition_metadata_hash",
    "validate_advancement",
]

#: validator-id prefix byte of a channel signature: built-in ECDSA (§7.1)
SIG_VALIDATOR_DEFAULT: Final = 0x00
#: validator-id prefix byte of a session-key wrapped channel signature (§7.2)
SIG_VALIDATOR_SESSION_KEY: Final = 0x01
#: appended to the *inner* signing data before wrapping, for ``challengeChannel`` (§7.1)
CHALLENGE_SUFFIX: Final = b"challenge"
SESSION_KEY_AUTH_TYPEHASH: Final = keccak256(
    b"Nitrolite.SessionKey(address sessionKey,bytes32 metadataHash)"
)
"""Typehash in front of every channel session-key authorisation (changed in v1.3.0)."""

#: transition type -> on-chain intent used when SIGNING (core/Go table, nitrolite-v1.md §6.2)
TRANSITION_INTENT: Final[Mapping[int, int]] = {
    0: 0,  # void
    1: 0,  # acknowledgement
    10: 2,  # home_deposit -> DEPOSIT
    11: 3,  # home_withdrawal -> WITHDRAW
    20: 5,  # escrow_deposit -> FINALIZE_ESCROW_DEPOSIT
    21: 7,  # escrow_withdraw -> FINALIZE_ESCROW_WITHDRAWAL
    30: 0,  # transfer_send
    31: 0,  # transfer_receive
    40: 0,  # commit
    41: 0,  # release
    100: 8,  # migrate -> INITIATE_MIGRATION
    110: 6,  # escrow_lock -> INITIATE_ESCROW_WITHDRAWAL
    120: 4,  # mutual_lock -> INITIATE_ESCROW_DEPOSIT
    200: 1,  # finalize -> CLOSE
}

TokenDecimals = Callable[[int, str], int]
"""``(chain_id, token_address) -> token decimals`` (the token's, not the asset's)."""

_LEDGER_TYPE: Final = "(uint64,address,uint8,uint256,int256,uint256,int256)"
_ZERO_ADDRESS: Final = "0x" + "00" * 20
_ZERO_LEDGER: Final = (0, _ZERO_ADDRESS, 0, 0, 0, 0, 0)
_UINT64_MAX: Final = 2**64 - 1


# ---------------------------------------------------------------------------------------------
# a small generic abi.encode
# ---------------------------------------------------------------------------------------------

_ARRAY_SUFFIX = re.compile(r"^(.*)\[(\d*)\]$")


def _split_tuple(text: str) -> list[str]:
    """The component type strings of ``"(a,b,(c,d)[])"``."""
    inner, depth, start, parts = text[1:-1], 0, 0, []
    for index, char in enumerate(inner):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(inner[start:index])
            start = index + 1
    if inner:
        parts.append(inner[start:])
    return parts


def _is_dynamic(abi_type: str) -> bool:
    match = _ARRAY_SUFFIX.match(abi_type)
    if match:
        return match.group(2) == "" or _is_dynamic(match.group(1))
    if abi_type.startswith("("):
        return any(_is_dynamic(part) for part in _split_tuple(abi_type))
    return abi_type in ("bytes", "string")


def _encode_sequence(types: Sequence[str], values: Sequence[Any]) -> bytes:
    if len(types) != len(values):
        raise SettlementValueError(f"abi: {len(types)} types but {len(values)} values")
    heads: list[bytes] = []
    tails: list[bytes] = []
    head_size = sum(32 if _is_dynamic(t) else _static_size(t) for t in types)
    offset = head_size
    for abi_type, value in zip(types, values, strict=True):
        encoded = _encode_one(abi_type, value)
        if _is_dynamic(abi_type):
            heads.append(offset.to_bytes(32, "big"))
            tails.append(encoded)
            offset += len(encoded)
        else:
            heads.append(encoded)
    return b"".join(heads) + b"".join(tails)


def _static_size(abi_type: str) -> int:
    match = _ARRAY_SUFFIX.match(abi_type)
    if match:
        return int(match.group(2)) * _static_size(match.group(1))
    if abi_type.startswith("("):
        return sum(_static_size(part) for part in _split_tuple(abi_type))
    return 32


def _int_word(value: int, signed: bool, bits: int) -> bytes:
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise SettlementValueError(
            f"abi: {value!r} does not fit {'int' if signed else 'uint'}{bits}"
        )
    return (value % 2**256).to_bytes(32, "big")


def _encode_one(abi_type: str, value: Any) -> bytes:
    match = _ARRAY_SUFFIX.match(abi_type)
    if match:
        element, length = match.group(1), match.group(2)
        items = list(value)
        if length and int(length) != len(items):
            raise SettlementValueError(f"abi: {abi_type} needs {length} items, got {len(items)}")
        body = _encode_sequence([element] * len(items), items)
        return body if length else len(items).to_bytes(32, "big") + body
    if abi_type.startswith("("):
        return _encode_sequence(_split_tuple(abi_type), list(value))
    if abi_type == "address":
        return bytes(12) + bytes.fromhex(validate_address(value)[2:])
    if abi_type == "bool":
        return _int_word(int(bool(value)), False, 8)
    if abi_type in ("bytes", "string"):
        raw = value.encode() if isinstance(value, str) else bytes(value)
        padded = raw + bytes(-len(raw) % 32)
        return len(raw).to_bytes(32, "big") + padded
    if abi_type.startswith("bytes"):
        size = int(abi_type[5:])
        raw = bytes(value)
        if len(raw) != size:
            raise SettlementValueError(f"abi: {abi_type} needs {size} bytes, got {len(raw)}")
        return raw + bytes(32 - size)
    if abi_type.startswith(("uint", "int")):
        signed = abi_type.startswith("int")
        bits = int(abi_type[3 if signed else 4 :] or 256)
        return _int_word(value, signed, bits)
    raise SettlementValueError(f"abi: unsupported type {abi_type!r}")


def abi_encode(types: Sequence[str], values: Sequence[Any]) -> bytes:
    """Solidity ``abi.encode(values...)`` for the given canonical types.

    Addresses are hex strings, ``bytesN``/``bytes`` are :class:`bytes`, strings are text,
    integers are ints, tuples are sequences. Out-of-range values raise a
    :class:`SettlementValueError` rather than being silently truncated, because a wrapped
    value would be a different signed message.
    """
    return _encode_sequence(list(types), list(values))


# ---------------------------------------------------------------------------------------------
# field conversions
# ---------------------------------------------------------------------------------------------


def _hex_bytes(value: object, *, field: str, size: int | None = None) -> bytes:
    if not isinstance(value, str) or not value.startswith(("0x", "0X")):
        raise SettlementValueError(f"{field} must be 0x-prefixed hex, got {value!r}")
    try:
        raw = bytes.fromhex(value[2:])
    except ValueError:
        raise SettlementValueError(f"{field} is not valid hex: {value!r}") from None
    if size is not None and len(raw) != size:
        raise SettlementValueError(f"{field} must be {size} bytes, got {len(raw)}")
    return raw


def _uint(value: object, *, field: str, maximum: int = _UINT64_MAX) -> int:
    """A wire uint (decimal string or int) as an int, range-checked."""
    if isinstance(value, bool):
        raise SettlementValueError(f"{field} must be an unsigned integer, got {value!r}")
    if isinstance(value, str) and value.isdigit():
        number = int(value)
    elif isinstance(value, int):
        number = value
    else:
        raise SettlementValueError(f"{field} must be a decimal unsigned integer, got {value!r}")
    if not 0 <= number <= maximum:
        raise SettlementValueError(f"{field} {number} is out of range (0..{maximum})")
    return number


def loose_bytes32(text: str) -> bytes:
    """``txId``/``accountId`` text to bytes32, exactly as the SDK and Go node do it.

    Strip ``0x``, left-pad odd length with one ``0``, decode hex pairs up to the first
    invalid character and right-align the result in 32 bytes (nitrolite-v1.md §7.1). The
    lenient rule is reproduced as is — a stricter parser would hash a different metadata word
    for ids such as ``"account2"`` and so break signature checks with the node.
    """
    if not isinstance(text, str):
        raise InvalidStateError(f"transition id must be a string, got {type(text).__name__}")
    body = text[2:] if text.startswith(("0x", "0X")) else text
    if len(body) % 2:
        body = "0" + body
    raw = bytearray()
    for index in range(0, len(body), 2):
        pair = body[index : index + 2]
        if not all(c in "0123456789abcdefABCDEF" for c in pair):
            break
        raw.append(int(pair, 16))
    if len(raw) > 32:
        raise InvalidStateError(f"transition id {text!r} is longer than 32 bytes")
    return bytes(32 - len(raw)) + bytes(raw)


def _decimal(value: object, *, field: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        raise InvalidAmountError(f"{field} must be a decimal string, got {value!r}")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise InvalidAmountError(f"{field} is not a decimal number: {value!r}") from None
    if not number.is_finite():
        raise InvalidAmountError(f"{field} must be finite, got {value!r}")
    return number


def scale_amount(display: object, decimals: int, *, field: str = "amount") -> int:
    """``display × 10^decimals`` as an exact integer (ledger amounts are base units).

    Raises :class:`InvalidAmountError` when the amount has more fractional digits than the
    token supports: the SDK refuses to pack such a state, and rounding would sign a
    different balance than the one shown.
    """
    scaled = _decimal(display, field=field).scaleb(decimals)
    if scaled != scaled.to_integral_value():
        raise InvalidAmountError(
            f"{field} {display!r} has more fractional digits than the token's {decimals} decimals"
        )
    return int(scaled)


def _canonical_amount_text(value: object) -> str:
    """The amount text hashed into the transition metadata (decimal.js ``toString``).

    The SDK stringifies the transition amount with decimal.js, which trims trailing zeros and
    switches to exponent notation when the exponent is ≤ -7 or ≥ 21 (nitrolite-v1.md §7.6).
    Reproducing that text is what makes our hash equal the SDK's.
    """
    number = _decimal(value, field="transition.amount")
    if number.is_zero():
        return "0"
    sign, digits, exponent = number.normalize().as_tuple()
    assert isinstance(exponent, int)
    coefficient = "".join(map(str, digits))
    adjusted = exponent + len(coefficient) - 1
    if adjusted <= -7 or adjusted >= 21:
        mantissa = coefficient[0] + ("." + coefficient[1:] if len(coefficient) > 1 else "")
        text = f"{mantissa}e{'+' if adjusted >= 0 else '-'}{abs(adjusted)}"
    elif exponent >= 0:
        text = coefficient + "0" * exponent
    elif adjusted >= 0:
        text = coefficient[: adjusted + 1] + "." + coefficient[adjusted + 1 :]
    else:
        text = "0." + "0" * (-adjusted - 1) + coefficient
    return ("-" if sign else "") + text


# ---------------------------------------------------------------------------------------------
# token decimals lookups
# ---------------------------------------------------------------------------------------------


def decimals_from_map(table: Mapping[str, int]) -> TokenDecimals:
    """A lookup over ``{"<chain>:<token>": decimals}`` (address case-insensitive)."""
    normalised = {key.lower(): value for key, value in table.items()}

    def lookup(chain_id: int, token: str) -> int:
        try:
            return int(normalised[f"{chain_id}:{token}".lower()])
        except KeyError:
            raise InvalidStateError(
                f"no token decimals known for token {token} on chain {chain_id}"
            ) from None

    return lookup


def decimals_from_asset_table(assets: Sequence[Mapping[str, Any]]) -> TokenDecimals:
    """A lookup over an asset table (``meta.asset_table`` / ``get_assets`` shape).

    Accepts tokens as ``{chain, address, decimals}`` or the wire form
    ``{blockchain_id, address, decimals}``.
    """
    table: dict[str, int] = {}
    for asset in assets:
        for token in asset.get("tokens", ()):
            chain = token.get("chain", token.get("blockchain_id"))
            table[f"{chain}:{token['address']}"] = int(token["decimals"])
    return decimals_from_map(table)


# ---------------------------------------------------------------------------------------------
# state packing (§7.1)
# ---------------------------------------------------------------------------------------------


def transition_intent(transition_type: int) -> int:
    """The intent signed for a transition type (core/Go table; see ``contract_calldata-006``)."""
    try:
        return TRANSITION_INTENT[int(transition_type)]
    except (KeyError, TypeError, ValueError):
        raise InvalidStateError(f"unknown transition type {transition_type!r}") from None


def transition_metadata_hash(transition: Mapping[str, Any]) -> bytes:
    """``keccak256(abi.encode((uint8 type, bytes32 txId, bytes32 accountId, string amount)))``."""
    transition_type = _uint(transition.get("type"), field="transition.type", maximum=255)
    encoded = abi_encode(
        ["(uint8,bytes32,bytes32,string)"],
        [
            (
                transition_type,
                loose_bytes32(transition.get("tx_id", "")),
                loose_bytes32(transition.get("account_id", "")),
                _canonical_amount_text(transition.get("amount", "0")),
            )
        ],
    )
    return keccak256(encoded)


def ledger_tuple(ledger: Mapping[str, Any] | None, decimals: TokenDecimals) -> tuple[Any, ...]:
    """The on-chain ``Ledger`` tuple of a wire ledger; all zeros when there is none."""
    if ledger is None:
        return _ZERO_LEDGER
    chain_id = _uint(ledger.get("blockchain_id"), field="ledger.blockchain_id")
    try:
        token = validate_address(ledger.get("token_address"), field="ledger.token_address")
    except InvalidAddressError as exc:
        raise InvalidStateError(str(exc)) from None
    token_decimals = decimals(chain_id, token)
    return (
        chain_id,
        token,
        token_decimals,
        scale_amount(ledger.get("user_balance"), token_decimals, field="ledger.user_balance"),
        scale_amount(ledger.get("user_net_flow"), token_decimals, field="ledger.user_net_flow"),
        scale_amount(ledger.get("node_balance"), token_decimals, field="ledger.node_balance"),
        scale_amount(ledger.get("node_net_flow"), token_decimals, field="ledger.node_net_flow"),
    )


def state_signing_data(state: Mapping[str, Any], decimals: TokenDecimals) -> bytes:
    """The inner signed bytes of a state.

    ``abi.encode(uint64 version, uint8 intent, bytes32 metadata, Ledger home, Ledger nonHome)``;
    without an escrow ledger ``nonHome`` is all zeros.
    """
    transition = state.get("transition")
    if not isinstance(transition, Mapping):
        raise InvalidStateError("state.transition is missing")
    home = state.get("home_ledger")
    if not isinstance(home, Mapping):
        raise InvalidStateError("state.home_ledger is missing")
    try:
        return abi_encode(
            ["uint64", "uint8", "bytes32", _LEDGER_TYPE, _LEDGER_TYPE],
            [
                _uint(state.get("version"), field="state.version"),
                transition_intent(transition.get("type", -1)),
                transition_metadata_hash(transition),
                ledger_tuple(home, decimals),
                ledger_tuple(state.get("escrow_ledger"), decimals),
            ],
        )
    except (InvalidStateError, InvalidAmountError):
        raise
    except SettlementValueError as exc:
        raise InvalidStateError(f"state cannot be packed: {exc}") from None


def _channel_id(state: Mapping[str, Any]) -> bytes:
    value = state.get("home_channel_id")
    if not value:
        raise InvalidStateError("state has no home_channel_id; it cannot be packed or signed")
    try:
        return _hex_bytes(value, field="state.home_channel_id", size=32)
    except SettlementValueError as exc:
        raise InvalidStateError(str(exc)) from None


def pack_state(state: Mapping[str, Any], decimals: TokenDecimals) -> bytes:
    """The message every channel signature covers: ``abi.encode(bytes32 id, bytes signingData)``."""
    return abi_encode(
        ["bytes32", "bytes"], [_channel_id(state), state_signing_data(state, decimals)]
    )


def pack_challenge_state(state: Mapping[str, Any], decimals: TokenDecimals) -> bytes:
    """As :func:`pack_state` but with ``"challenge"`` appended to the inner signing data."""
    inner = state_signing_data(state, decimals) + CHALLENGE_SUFFIX
    return abi_encode(["bytes32", "bytes"], [_channel_id(state), inner])


def eip191_digest(message: bytes) -> bytes:
    """``keccak256("\\x19Ethereum Signed Message:\\n" + len + message)`` (§3)."""
    return keccak256(b"\x19Ethereum Signed Message:\n" + str(len(message)).encode() + message)


def sign_eip191(key: PrivateKey, message: bytes) -> bytes:
    """A plain 65-byte EIP-191 personal-message signature (RFC 6979, so deterministic)."""
    return key.sign_hash(eip191_digest(message))


def sign_state(state: Mapping[str, Any], key: PrivateKey, decimals: TokenDecimals) -> bytes:
    """``0x00 ‖ ECDSA(EIP-191(pack_state))``: a user or node signature for the default validator."""
    return bytes((SIG_VALIDATOR_DEFAULT,)) + sign_eip191(key, pack_state(state, decimals))


def sign_challenge(state: Mapping[str, Any], key: PrivateKey, decimals: TokenDecimals) -> bytes:
    """The ``challengerSig`` of ``challengeChannel`` (never a session key, §7.2)."""
    return bytes((SIG_VALIDATOR_DEFAULT,)) + sign_eip191(key, pack_challenge_state(state, decimals))


# ---------------------------------------------------------------------------------------------
# channel session keys (§7.2)
# ---------------------------------------------------------------------------------------------


def channel_session_key_metadata_hash(
    user: str, version: int | str, assets: Sequence[str], expires_at: int | str
) -> bytes:
    """The metadata hash binding a channel session key to a scope and an expiry.

    ``keccak256(abi.encode(address user, uint64 version, string[] assets, uint64 expires_at))``.
    """
    if isinstance(assets, str):
        raise SettlementValueError("assets must be a list of asset symbols, not one string")
    return keccak256(
        abi_encode(
            ["address", "uint64", "string[]", "uint64"],
            [
                user,
                _uint(version, field="version"),
                list(assets),
                _uint(expires_at, field="expires_at"),
            ],
        )
    )


def pack_channel_session_key_auth(session_key: str, metadata_hash: bytes) -> bytes:
    """The 96-byte payload both the wallet and the session key sign (not hashed first)."""
    return abi_encode(
        ["bytes32", "address", "bytes32"],
        [SESSION_KEY_AUTH_TYPEHASH, session_key, bytes(metadata_hash)],
    )


def sign_channel_session_key_state(
    state: Mapping[str, Any], user_key: PrivateKey, session_key: PrivateKey | None
) -> tuple[bytes, bytes | None]:
    """``(user_sig, session_key_sig)`` for ``channels.v1.submit_session_key_state``.

    Both are plain 65-byte EIP-191 signatures (no validator prefix) over the auth payload.
    The session-key signature proves possession and is required when activating; pass
    ``None`` for a revocation, which needs only the wallet's signature.
    """
    if validate_address(state["user_address"]) != user_key.address:
        raise InvalidSignatureError("user_key is not the key of state.user_address")
    metadata = channel_session_key_metadata_hash(
        state["user_address"], state["version"], state["assets"], state["expires_at"]
    )
    payload = pack_channel_session_key_auth(state["session_key"], metadata)
    if session_key is not None and validate_address(state["session_key"]) != session_key.address:
        raise InvalidSignatureError("session_key is not the key of state.session_key")
    return sign_eip191(user_key, payload), (
        None if session_key is None else sign_eip191(session_key, payload)
    )


def session_key_state_signature(
    packed_state: bytes,
    session_key: PrivateKey,
    metadata_hash: bytes,
    auth_signature: bytes,
) -> bytes:
    """A channel state signature through a session key (validator id 1).

    ``0x01 ‖ abi.encode((address sessionKey, bytes32 metadataHash, bytes authSig), bytes skSig)``
    where ``skSig`` signs the normal packed state and ``authSig`` is the wallet's registration
    signature, so the contract can check the delegation without any stored registry.
    """
    if len(auth_signature) != 65:
        raise InvalidSignatureError(
            f"auth_signature must be the 65-byte registration user_sig, got {len(auth_signature)}"
        )
    inner = sign_eip191(session_key, packed_state)
    body = abi_encode(
        ["(address,bytes32,bytes)", "bytes"],
        [(session_key.address, bytes(metadata_hash), bytes(auth_signature)), inner],
    )
    return bytes((SIG_VALIDATOR_SESSION_KEY,)) + body


# ---------------------------------------------------------------------------------------------
# vectors
# ---------------------------------------------------------------------------------------------


def _hex(raw: bytes) -> str:
    return "0x" + raw.hex()


#: packState known answers asserted by the upstream Go and TS unit tests, by transition tx_id
_PACK_STATE_KAT: Final[Mapping[str, str]] = {
    "tx2": "0x3e9dd25a843e3a234c278c6f3fab3983949e2404b276cacb3c47ada06e00f74b"
    "0000000000000000000000000000000000000000000000000000000000000040"
    "0000000000000000000000000000000000000000000000000000000000000220"
    "0000000000000000000000000000000000000000000000000000000000000018"
    "0000000000000000000000000000000000000000000000000000000000000007"
    "13d86a5d0df614471807009f2507fd08007c21de21cf2c8c1d3a12582e065c6a"
    "000000000000000000000000000000000000000000000000000000000000002a"
    "00000000000000000000000090b7e285ab6cf4e3a2487669dba3e339db8a3320"
    "0000000000000000000000000000000000000000000000000000000000000008"
    "0000000000000000000000000000000000000000000000000000000011e1a300"
    "000000000000000000000000000000000000000000000000000000000bebc201"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffa0a1f01"
    "0000000000000000000000000000000000000000000000000000000000001092"
    "000000000000000000000000c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2"
    "000000000000000000000000000000000000000000000000000000000000000e"
    "000000000000000000000000000000000000000000000000000110d9316ec000"
    "0000000000000000000000000000000000000000000000000000b5e62103c240"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffa50cef950240",
    "tx123": "0x3e9dd25a843e3a234c278c6f3fab3983949e2404b276cacb3c47ada06e00f74b"
    "0000000000000000000000000000000000000000000000000000000000000040"
    "0000000000000000000000000000000000000000000000000000000000000220"
    "0000000000000000000000000000000000000000000000000000000000000018"
    "0000000000000000000000000000000000000000000000000000000000000002"
    "756774c79382894c7bdc8e9fe73285e1650c10c820b05a8bba7d0aace4adb92a"
    "000000000000000000000000000000000000000000000000000000000000002a"
    "00000000000000000000000090b7e285ab6cf4e3a2487669dba3e339db8a3320"
    "0000000000000000000000000000000000000000000000000000000000000008"
    "0000000000000000000000000000000000000000000000000000000011e1a300"
    "000000000000000000000000000000000000000000000000000000000bebc201"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffa0a1f01" + "00" * 32 * 7,
}

#: packChannelKeyStateV1 known answer from Go pkg/core/session_key_test.go
_CHANNEL_KEY_KAT: Final = (
    "0x251773da8b8949935ef07284d20cc8605ad7d6f4cf6b5e040ce07dae857f0b6c"
    "000000000000000000000000deadbeefdeadbeefdeadbeefdeadbeefdeadbeef"
    "abcdef1234567890abcdef1234567890abcdef1234567890abcdef1234567890"
)


def _key(meta: Mapping[str, Any], role: str) -> PrivateKey:
    return PrivateKey(meta["keys"][role]["private_key"])


def _vector_state_packing_kat(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    state = inputs["state"]
    lookup = decimals_from_map(inputs["token_decimals"])
    packed = _hex(pack_state(state, lookup))
    challenge = pack_challenge_state(state, lookup)
    expected = _PACK_STATE_KAT.get(state["transition"]["tx_id"])
    return {
        "intent": transition_intent(state["transition"]["type"]),
        "metadata_transition_hash": _hex(transition_metadata_hash(state["transition"])),
        "signing_data": _hex(state_signing_data(state, lookup)),
        "packed_state": packed,
        "eip191_digest": _hex(eip191_digest(pack_state(state, lookup))),
        "challenge_packed_state": _hex(challenge),
        "challenge_eip191_digest": _hex(eip191_digest(challenge)),
        "expected_packed_state": expected,
        "kat_match": packed == expected,
    }


def _vector_channel_session_key(
    inputs: Mapping[str, Any], meta: Mapping[str, Any]
) -> dict[str, Any]:
    if "state" not in inputs:  # the Go known-answer case: pack only
        packed = _hex(
            pack_channel_session_key_auth(
                inputs["session_key"],
                _hex_bytes(inputs["metadata_hash"], field="metadata_hash", size=32),
            )
        )
        return {
            "packed": packed,
            "expected_kat": _CHANNEL_KEY_KAT,
            "kat_match": packed == _CHANNEL_KEY_KAT,
        }
    state = inputs["state"]
    metadata = channel_session_key_metadata_hash(
        state["user_address"], state["version"], state["assets"], state["expires_at"]
    )
    payload = pack_channel_session_key_auth(state["session_key"], metadata)
    user_sig, session_sig = sign_channel_session_key_state(
        state,
        PrivateKey(inputs["user_private_key"]),
        PrivateKey(inputs["session_key_private_key"]),
    )
    assert session_sig is not None
    return {
        "session_key_auth_typehash": _hex(SESSION_KEY_AUTH_TYPEHASH),
        "metadata_hash": _hex(metadata),
        "signed_payload": _hex(payload),
        "eip191_digest": _hex(eip191_digest(payload)),
        "user_sig": _hex(user_sig),
        "session_key_sig": _hex(session_sig),
    }


def _vector_session_key_state_signature(
    inputs: Mapping[str, Any], meta: Mapping[str, Any]
) -> dict[str, Any]:
    lookup = decimals_from_asset_table(meta["asset_table"])
    packed = pack_state(inputs["state"], lookup)
    session_key = PrivateKey(inputs["session_key_private_key"])
    signature = session_key_state_signature(
        packed,
        session_key,
        _hex_bytes(inputs["metadata_hash"], field="metadata_hash", size=32),
        _hex_bytes(inputs["auth_signature"], field="auth_signature", size=65),
    )
    return {
        "packed_state": _hex(packed),
        "eip191_digest": _hex(eip191_digest(packed)),
        "session_key_inner_sig": _hex(sign_eip191(session_key, packed)),
        "protocol_signature": _hex(signature),
    }


# ---------------------------------------------------------------------------------------------
# state lifecycle: nextState, channel creation, transitions (§6.2-§6.4, §7.4, §7.5)
# ---------------------------------------------------------------------------------------------

_ZERO32_HEX: Final = "0x" + "00" * 32
_EMPTY_LEDGER: Final[Mapping[str, str]] = {
    "token_address": "0x0",
    "blockchain_id": "0",
    "user_balance": "0",
    "user_net_flow": "0",
    "node_balance": "0",
    "node_net_flow": "0",
}
#: transitions the SDK's StateAdvancerV1 accepts from a user (31, 41 are node-issued only)
_ADVANCEABLE: Final = frozenset({1, 10, 11, 20, 21, 30, 40, 110, 120, 200})


def state_id(user_wallet: str, asset: str, epoch: int | str, version: int | str) -> bytes:
    """``keccak256(abi.encode(address user_wallet, string asset, uint256 epoch, uint256 version))``.

    Local copy (the ids module owns the canonical one); kept here so packing stays self-contained.
    """
    return keccak256(
        abi_encode(
            ["address", "string", "uint256", "uint256"],
            [
                user_wallet,
                asset,
                _uint(epoch, field="epoch", maximum=2**256 - 1),
                _uint(version, field="version", maximum=2**256 - 1),
            ],
        )
    )


def transaction_id(account_id: str, new_state_id: bytes) -> bytes:
    """Sender/receiver tx id: ``keccak256(abi.encode(string account_id, bytes32 state_id))``."""
    return keccak256(abi_encode(["string", "bytes32"], [account_id, new_state_id]))


def home_channel_id(
    asset: str, user: str, node: str, nonce: int | str, challenge: int, validators: str | int
) -> bytes:
    """The v1 home channel id: the definition hash with byte 0 set to ChannelHub.VERSION (1)."""
    bitmap = int(validators, 16) if isinstance(validators, str) else int(validators)
    metadata = keccak256(asset.encode())[:8] + bytes(24)
    base = keccak256(
        abi_encode(
            ["(uint32,address,address,uint64,uint256,bytes32)"],
            [(challenge, user, node, _uint(nonce, field="nonce"), bitmap, metadata)],
        )
    )
    return b"\x01" + base[1:]


def escrow_channel_id(home_id: str, version: int | str) -> bytes:
    """``keccak256(abi.encode(bytes32 home_channel_id, uint64 version_of_the_lock_state))``."""
    return keccak256(
        abi_encode(
            ["bytes32", "uint64"],
            [
                _hex_bytes(home_id, field="home_channel_id", size=32),
                _uint(version, field="version"),
            ],
        )
    )


def next_state(current: Mapping[str, Any]) -> dict[str, Any]:
    """The unsigned skeleton following ``current`` (SDK ``nextState``), void transition."""
    transition = current["transition"]
    if int(transition["type"]) == 200:  # finalize: a new epoch starts from scratch
        state: dict[str, Any] = {
            "transition": {"type": 0, "tx_id": "", "account_id": "", "amount": "0"},
            "asset": current["asset"],
            "user_wallet": current["user_wallet"],
            "epoch": str(int(current["epoch"]) + 1),
            "version": "1",
            "home_ledger": dict(_EMPTY_LEDGER),
        }
    else:
        state = {
            "transition": {"type": 0, "tx_id": "", "account_id": "", "amount": "0"},
            "asset": current["asset"],
            "user_wallet": current["user_wallet"],
            "epoch": str(current["epoch"]),
            "version": str(int(current["version"]) + 1),
            "home_ledger": dict(current["home_ledger"]),
        }
        if current.get("home_channel_id"):
            state["home_channel_id"] = current["home_channel_id"]
        escrow = current.get("escrow_ledger")
        signed = bool(current.get("user_sig"))
        if escrow and not (signed and int(transition["type"]) in (20, 21)):
            state["escrow_ledger"] = dict(escrow)
            if current.get("escrow_channel_id"):
                state["escrow_channel_id"] = current["escrow_channel_id"]
            if not signed:
                state["transition"] = dict(transition)
    state["id"] = _hex(
        state_id(state["user_wallet"], state["asset"], state["epoch"], state["version"])
    )
    return state


def apply_channel_creation(
    state: dict[str, Any], definition: Mapping[str, Any], blockchain_id: str, token: str, node: str
) -> None:
    """Bind a fresh state to a new home channel (SDK ``applyChannelCreation``)."""
    state["home_ledger"] = {
        **state["home_ledger"],
        "blockchain_id": str(blockchain_id),
        "token_address": token,
    }
    state["home_channel_id"] = _hex(
        home_channel_id(
            state["asset"],
            state["user_wallet"],
            node,
            definition["nonce"],
            int(definition["challenge"]),
            definition["approvedSigValidators"],
        )
    )


def _fmt(value: Decimal) -> str:
    return _canonical_amount_text(value)


def _add(ledger: dict[str, Any], field: str, delta: Decimal) -> None:
    ledger[field] = _fmt(_decimal(ledger[field], field=field) + delta)


def apply_transition(state: dict[str, Any], spec: Mapping[str, Any]) -> None:
    """Apply one transition (SDK ``apply*Transition``) to an unsigned next-state skeleton."""
    kind = int(spec["type"])
    new_id = _hex_bytes(state["id"], field="state.id", size=32)
    home = state["home_ledger"]
    amount = _decimal(spec.get("amount", "0"), field="transition.amount")
    account: str
    tx: str
    if kind == 100:
        raise InvalidStateError("migrate transition not implemented yet")
    if kind == 1:
        state["transition"] = {
            "type": 1,
            "tx_id": _ZERO32_HEX,
            "account_id": _ZERO32_HEX,
            "amount": "0",
        }
        return
    if kind == 200:
        amount = _decimal(home["user_balance"], field="user_balance")
    if kind in (10, 11, 200):
        account = state.get("home_channel_id") or ""
        if not account:
            raise InvalidStateError("this transition needs a home channel")
    elif kind in (120, 110):
        account = _hex(escrow_channel_id(state["home_channel_id"], state["version"]))
        state["escrow_channel_id"] = account
    elif kind in (20, 21):
        account = state.get("escrow_channel_id") or ""
        if not account or not state.get("escrow_ledger"):
            raise InvalidStateError("escrow transition without an escrow ledger")
    elif kind in (30, 31, 40, 41):
        account = spec["account_id"]
    else:
        raise InvalidStateError(f"unsupported transition type {kind}")
    tx = spec["tx_id"] if kind == 31 else _hex(transaction_id(account, new_id))
    escrow = state.get("escrow_ledger")
    if kind == 10:
        _add(home, "user_balance", amount)
        _add(home, "user_net_flow", amount)
    elif kind == 11:
        _add(home, "user_balance", -amount)
        _add(home, "user_net_flow", -amount)
    elif kind in (30, 40):
        _add(home, "user_balance", -amount)
        _add(home, "node_net_flow", -amount)
    elif kind in (31, 41):
        _add(home, "user_balance", amount)
        _add(home, "node_net_flow", amount)
    elif kind == 200:
        _add(home, "user_net_flow", -amount)
        home["user_balance"] = "0"
    elif kind == 120:
        _add(home, "node_balance", amount)
        _add(home, "node_net_flow", amount)
        state["escrow_ledger"] = {
            "token_address": spec["token_address"],
            "blockchain_id": str(spec["blockchain_id"]),
            "user_balance": _fmt(amount),
            "user_net_flow": _fmt(amount),
            "node_balance": "0",
            "node_net_flow": "0",
        }
    elif kind == 110:
        state["escrow_ledger"] = {
            "token_address": spec["token_address"],
            "blockchain_id": str(spec["blockchain_id"]),
            "user_balance": "0",
            "user_net_flow": "0",
            "node_balance": _fmt(amount),
            "node_net_flow": _fmt(amount),
        }
    elif kind == 20:
        assert escrow is not None
        _add(home, "user_balance", amount)
        home["node_balance"] = "0"
        _add(escrow, "user_balance", -amount)
        _add(escrow, "node_net_flow", -amount)
    elif kind == 21:
        assert escrow is not None
        _add(home, "user_balance", -amount)
        _add(home, "node_net_flow", -amount)
        _add(escrow, "user_net_flow", -amount)
        _add(escrow, "node_balance", -amount)
    state["transition"] = {"type": kind, "tx_id": tx, "account_id": account, "amount": _fmt(amount)}


def validate_advancement(previous: Mapping[str, Any], proposed: Mapping[str, Any]) -> str:
    """``"ok"`` or ``"rejected: <reason>"`` (SDK ``StateAdvancerV1.validateAdvancement``).

    Recomputes the expected state from ``previous`` plus the proposed transition and compares;
    receiver transitions (31, 41) are node-issued only and always rejected.
    """
    kind = int(proposed["transition"]["type"])
    if kind not in _ADVANCEABLE:
        return f"rejected: unsupported type for new transition: {kind}"
    expected = next_state(previous)
    if not expected.get("home_channel_id") and proposed.get("home_channel_id"):
        # a (re-)opened channel: adopt the proposed channel id and its home token/chain
        expected["home_channel_id"] = proposed["home_channel_id"]
        for field in ("token_address", "blockchain_id"):
            expected["home_ledger"][field] = proposed["home_ledger"][field]
    for field in ("home_channel_id", "version", "asset", "epoch", "id"):
        if str(expected.get(field)) != str(proposed.get(field)):
            return f"rejected: {field} mismatch"
    if str(expected["user_wallet"]).lower() != str(proposed["user_wallet"]).lower():
        return "rejected: user wallet mismatch"
    spec = dict(proposed["transition"])
    if kind in (110, 120):  # the new escrow ledger's chain and token come from the proposal
        escrow = proposed.get("escrow_ledger") or {}
        spec["blockchain_id"] = escrow.get("blockchain_id")
        spec["token_address"] = escrow.get("token_address")
    try:
        apply_transition(expected, spec)
    except SettlementValueError as exc:
        return f"rejected: {exc}"
    for field in ("transition", "home_ledger", "escrow_ledger"):
        if expected.get(field) != proposed.get(field):
            return f"rejected: {field} mismatch"
    return "ok"


_NO_ADVANCER: Final = (
    "n/a (first state of channel; node-side validation happens in request_creation)"
)


def _vector_state_lifecycle(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    keys = {k["address"].lower(): PrivateKey(k["private_key"]) for k in meta["keys"].values()}
    previous = inputs["previous_state"]
    spec = inputs["transition"]
    current = next_state(previous)
    creation = inputs.get("channel_creation")
    if creation:
        apply_channel_creation(
            current,
            creation["channel_definition"],
            creation["blockchain_id"],
            creation["token_address"],
            creation["node_address"],
        )
    try:
        apply_transition(current, spec)
    except InvalidStateError as exc:
        return {"error": str(exc)}
    lookup = decimals_from_map(inputs["asset_store"]["token_decimals"])
    signers = inputs["signers"]

    def sign_with(role: str, challenge: bool = False) -> str | None:
        address = signers.get(role)
        if address is None:
            return None
        key = keys[address.lower()]
        signer = sign_challenge if challenge else sign_state
        return _hex(signer(current, key, lookup))

    user_sig, node_sig = sign_with("user_sig"), sign_with("node_sig")
    if inputs["state_advancer"]["validate_advancement"]:
        verdict = validate_advancement(previous, current)
    else:
        verdict = _NO_ADVANCER
    packed = pack_state(current, lookup)
    challenge = pack_challenge_state(current, lookup)
    signed = dict(current)
    if user_sig is not None:
        signed["user_sig"] = user_sig
    if node_sig is not None:
        signed["node_sig"] = node_sig
    return {
        "state": signed,
        "state_id": current["id"],
        "tx_id": current["transition"]["tx_id"],
        "intent": transition_intent(current["transition"]["type"]),
        "metadata_transition_hash": _hex(transition_metadata_hash(current["transition"])),
        "signing_data": _hex(state_signing_data(current, lookup)),
        "packed_state": _hex(packed),
        "eip191_digest": _hex(eip191_digest(packed)),
        "challenge_packed_state": _hex(challenge),
        "challenge_eip191_digest": _hex(eip191_digest(challenge)),
        "user_sig": user_sig,
        "node_sig": node_sig,
        "user_challenge_sig": sign_with("user_challenge_sig", challenge=True),
        "sdk_state_advancer": verdict,
    }


VECTORS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]] = {
    "state_packing_kat": _vector_state_packing_kat,
    "state_lifecycle": _vector_state_lifecycle,
    "channel_session_key": _vector_channel_session_key,
    "session_key_state_signature": _vector_session_key_state_signature,
}
"""Vector group -> ``(inputs, meta) -> outputs`` (see :mod:`.vectors`)."""
