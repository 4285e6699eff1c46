"""Nitrolite v1 channel states: packing, signing and channel session keys.

Why this module exists: a v1 channel state is authorised only by the signatures embedded in
it (Nitrolite v1.4.1), and both the node and the ChannelHub contract recompute the exact
bytes that were signed. So the packing below must be byte-identical to the SDK's
``packState`` / ``packChallengeState`` and to the session-key packing; the
vector groups ``state_packing_kat`` and ``session_key_state_signature`` pin it down.

Everything here is pure (no I/O, no clock). States are taken in their **wire form**
(``StateV1``: snake_case keys, decimal strings in display units), because that is what the
node sends, what the SDK signs from, and what the vectors record; amounts are scaled to token
base units with the token decimals given by a :data:`TokenDecimals` lookup.

Building the next state and applying transitions live in :mod:`.lifecycle`; ids, the
transition intent and hash, and the SDK's amount text come from :mod:`.ids`,
:mod:`.transitions` and :mod:`.decimals`, so there is one implementation of each.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from ...._keccak import keccak256
from ....addresses import validate_address
from ....errors import (
    InvalidAddressError,
    InvalidAmountError,
    InvalidSignatureError,
    InvalidStateError,
    SettlementValueError,
)
from ....keys import PrivateKey
from .abi import abi_encode, address_word, int_word
from .decimals import sdk_decimal_string, to_units
from .transitions import encode_transition, transition_to_intent
from .vector_case import VectorCase, known_answer_fields

__all__ = [
    "CHALLENGE_SUFFIX",
    "LEDGER_TYPE",
    "SESSION_KEY_AUTH_TYPEHASH",
    "SIG_VALIDATOR_DEFAULT",
    "SIG_VALIDATOR_SESSION_KEY",
    "VECTORS",
    "TokenDecimals",
    "channel_session_key_metadata_hash",
    "decimals_from_asset_table",
    "decimals_from_map",
    "eip191_digest",
    "ledger_tuple",
    "pack_challenge_state",
    "pack_channel_session_key_auth",
    "pack_state",
    "scale_amount",
    "session_key_state_signature",
    "sign_challenge",
    "sign_channel_session_key_state",
    "sign_eip191",
    "sign_packed_state",
    "sign_state",
    "state_signing_data",
    "transition_metadata_hash",
]

#: validator-id prefix byte of a channel signature: built-in ECDSA
SIG_VALIDATOR_DEFAULT: Final = 0x00
#: validator-id prefix byte of a session-key wrapped channel signature
SIG_VALIDATOR_SESSION_KEY: Final = 0x01
#: appended to the *inner* signing data before wrapping, for ``challengeChannel``
CHALLENGE_SUFFIX: Final = b"challenge"
SESSION_KEY_AUTH_TYPEHASH: Final = keccak256(
    b"Nitrolite.SessionKey(address sessionKey,bytes32 metadataHash)"
)
"""Typehash in front of every channel session-key authorisation (changed in v1.3.0)."""

TokenDecimals = Callable[[int, str], int]
"""``(chain_id, token_address) -> token decimals`` (the token's, not the asset's)."""

LEDGER_TYPE: Final = "(uint64,address,uint8,uint256,int256,uint256,int256)"
"""ABI type of the on-chain ``Ledger`` struct (chain, token, decimals, 4 amounts)."""
_ZERO_ADDRESS: Final = "0x" + "00" * 20
_ZERO_LEDGER: Final = (0, _ZERO_ADDRESS, 0, 0, 0, 0, 0)
_UINT64_MAX: Final = 2**64 - 1


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


def scale_amount(display: object, decimals: int, *, field: str = "amount") -> int:
    """``display × 10^decimals`` as an exact integer (ledger amounts are base units).

    Integer arithmetic on the decimal's digits (the SDK's ``decimalToBigInt``, through
    :func:`.decimals.to_units`), never a context-limited ``Decimal`` operation: ``scaleb``
    under Python's default 28-digit context would round a 29-digit balance. Raises
    :class:`InvalidAmountError` with the SDK's message when the amount has more fractional
    digits than the token supports, and names ``field`` for any other bad amount.
    """
    if isinstance(display, bool) or not isinstance(display, str | int | Decimal):
        raise InvalidAmountError(f"{field} must be a decimal string, got {display!r}")
    try:
        return to_units(display, decimals)
    except InvalidAmountError as exc:
        if "exceeds maximum decimal precision" in str(exc):
            raise
        raise InvalidAmountError(f"{field}: {exc}") from None


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
# state packing
# ---------------------------------------------------------------------------------------------


def transition_metadata_hash(transition: Mapping[str, Any]) -> bytes:
    """The packed state's ``metadata`` word for a wire transition.

    ``keccak256(abi.encode((uint8 type, bytes32 txId, bytes32 accountId, string amount)))``
    with the amount re-rendered as decimal.js ``toString``, which is
    the text the SDK hashes when it signs.
    """
    fields = (
        transition.get("type", -1),
        transition.get("tx_id", ""),
        transition.get("account_id", ""),
        sdk_decimal_string(transition.get("amount", "0")),
    )
    if type(fields[0]) is int and all(type(f) is str or f is None for f in fields[1:3]):
        return _cached_metadata_hash(*fields)  # a state is packed by both sides, and more
    return keccak256(encode_transition(*fields))


@functools.lru_cache(maxsize=1024)
def _cached_metadata_hash(
    kind: int, tx_id: str | None, account_id: str | None, amount: str
) -> bytes:
    return keccak256(encode_transition(kind, tx_id, account_id, amount))


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
        # abi.encode of static types only: the words one after another (the same bytes as
        # abi_encode over [uint64, uint8, bytes32, LEDGER_TYPE, LEDGER_TYPE], which the
        # tests hold it to); every state is packed by the wallet and again by the node
        return b"".join(
            (
                int_word(_uint(state.get("version"), field="state.version"), False, 64),
                int_word(int(transition_to_intent(transition.get("type", -1))), False, 8),
                transition_metadata_hash(transition),
                _ledger_words(ledger_tuple(home, decimals)),
                _ledger_words(ledger_tuple(state.get("escrow_ledger"), decimals)),
            )
        )
    except (InvalidStateError, InvalidAmountError):
        raise
    except SettlementValueError as exc:
        raise InvalidStateError(f"state cannot be packed: {exc}") from None


def _ledger_words(ledger: tuple[Any, ...]) -> bytes:
    """``abi.encode`` of one :data:`LEDGER_TYPE` tuple (seven static words)."""
    chain_id, token, token_decimals, user_balance, user_flow, node_balance, node_flow = ledger
    return b"".join(
        (
            int_word(chain_id, False, 64),
            address_word(token),
            int_word(token_decimals, False, 8),
            int_word(user_balance, False, 256),
            int_word(user_flow, True, 256),
            int_word(node_balance, False, 256),
            int_word(node_flow, True, 256),
        )
    )


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
    channel_id, data = _channel_id(state), state_signing_data(state, decimals)
    # the id word, the offset of the bytes (two words in), their length, then the data
    # (17 words: already a multiple of 32, so no padding)
    return channel_id + (64).to_bytes(32, "big") + len(data).to_bytes(32, "big") + data


def pack_challenge_state(state: Mapping[str, Any], decimals: TokenDecimals) -> bytes:
    """As :func:`pack_state` but with ``"challenge"`` appended to the inner signing data."""
    inner = state_signing_data(state, decimals) + CHALLENGE_SUFFIX
    return abi_encode(["bytes32", "bytes"], [_channel_id(state), inner])


def eip191_digest(message: bytes) -> bytes:
    """``keccak256("\\x19Ethereum Signed Message:\\n" + len + message)``."""
    return keccak256(b"\x19Ethereum Signed Message:\n" + str(len(message)).encode() + message)


def sign_eip191(key: PrivateKey, message: bytes) -> bytes:
    """A plain 65-byte EIP-191 personal-message signature (RFC 6979, so deterministic)."""
    return key.sign_hash(eip191_digest(message))


def sign_state(state: Mapping[str, Any], key: PrivateKey, decimals: TokenDecimals) -> bytes:
    """``0x00 ‖ ECDSA(EIP-191(pack_state))``: a user or node signature for the default validator."""
    return sign_packed_state(pack_state(state, decimals), key)


def sign_packed_state(packed: bytes, key: PrivateKey) -> bytes:
    """:func:`sign_state` over a state already packed (:func:`pack_state`)."""
    return bytes((SIG_VALIDATOR_DEFAULT,)) + sign_eip191(key, packed)


def sign_challenge(state: Mapping[str, Any], key: PrivateKey, decimals: TokenDecimals) -> bytes:
    """The ``challengerSig`` of ``challengeChannel`` (never a session key)."""
    return bytes((SIG_VALIDATOR_DEFAULT,)) + sign_eip191(key, pack_challenge_state(state, decimals))


# ---------------------------------------------------------------------------------------------
# channel session keys
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


def _word(number: int) -> bytes:
    return number.to_bytes(32, "big")


def _packed_by_hand(channel_id: bytes, signing_data: bytes) -> bytes:
    """``abi.encode(bytes32, bytes)`` laid out word by word, without the ABI encoder: the
    independent route by which a known-answer vector's expected packing is recomputed."""
    padding = b"\x00" * (-len(signing_data) % 32)
    return channel_id + _word(64) + _word(len(signing_data)) + signing_data + padding


def _key(meta: Mapping[str, Any], role: str) -> PrivateKey:
    return PrivateKey(meta["keys"][role]["private_key"])


def _vector_state_packing_kat(
    inputs: Mapping[str, Any], meta: Mapping[str, Any], case: VectorCase
) -> dict[str, Any]:
    """``packState`` and friends; a known-answer vector also gets the packing recomputed
    by hand from the signing data (``expected_packed_state``) and whether they agree."""
    state = inputs["state"]
    lookup = decimals_from_map(inputs["token_decimals"])
    signing_data = state_signing_data(state, lookup)
    packed = _hex(pack_state(state, lookup))
    challenge = pack_challenge_state(state, lookup)
    by_hand = _hex(_packed_by_hand(_channel_id(state), signing_data))
    return {
        "intent": int(transition_to_intent(state["transition"]["type"])),
        "metadata_transition_hash": _hex(transition_metadata_hash(state["transition"])),
        "signing_data": _hex(signing_data),
        "packed_state": packed,
        "eip191_digest": _hex(eip191_digest(pack_state(state, lookup))),
        "challenge_packed_state": _hex(challenge),
        "challenge_eip191_digest": _hex(eip191_digest(challenge)),
        **known_answer_fields(case, packed, by_hand, name="expected_packed_state"),
    }


def _vector_channel_session_key(
    inputs: Mapping[str, Any], meta: Mapping[str, Any], case: VectorCase
) -> dict[str, Any]:
    """A vector of ``packChannelKeyStateV1`` alone packs ``{session_key, metadata_hash}``;
    one that also signs builds the registration from ``state`` and the two keys."""
    if case.only("packChannelKeyStateV1"):
        metadata = _hex_bytes(inputs["metadata_hash"], field="metadata_hash", size=32)
        session_key = validate_address(inputs["session_key"], field="session_key")
        packed = _hex(pack_channel_session_key_auth(session_key, metadata))
        by_hand = _hex(
            SESSION_KEY_AUTH_TYPEHASH + bytes(12) + bytes.fromhex(session_key[2:]) + metadata
        )
        return {"packed": packed, **known_answer_fields(case, packed, by_hand)}
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


VECTORS: dict[str, Callable[..., dict[str, Any]]] = {
    "state_packing_kat": _vector_state_packing_kat,
    "channel_session_key": _vector_channel_session_key,
    "session_key_state_signature": _vector_session_key_state_signature,
}
"""Vector group -> ``(inputs, meta) -> outputs`` (see :mod:`.vectors`)."""
