"""Nitrolite v1 app sessions: ids, request/update hashes, quorum signatures, session keys.

Why: in v1 an app session is authorised only by ``quorum_sigs`` embedded in each request
(Nitrolite v1.4.1 ``app/packing.ts``); the node recomputes the hash from the JSON it receives and
attributes each signature to a participant. So the hashes here must be byte-identical to the
SDK's ``generateAppSessionIDV1`` / ``packCreateAppSessionRequestV1`` / ``packAppStateUpdateV1``
/ ``packAppSessionKeyStateV1``. Participant and allocation order is significant, amounts are
hashed as the exact decimal **text** given, and session-key scope ids are hashed as UTF-8 text
even when they look like hex.

Definitions and updates are accepted both in the SDK's camelCase form (``applicationId``,
``walletAddress``, ``appSessionId`` …) and in the RPC wire form (snake_case), because callers
hold one or the other and the hash does not depend on the spelling of the keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from ...._keccak import keccak256
from ....addresses import validate_address
from ....errors import InvalidAmountError, InvalidSignatureError, SettlementValueError
from ....keys import PrivateKey
from .abi import abi_encode
from .state import eip191_digest, sign_eip191
from .vector_case import VectorCase, known_answer_fields

__all__ = [
    "QUORUM_SIG_SESSION_KEY",
    "QUORUM_SIG_WALLET",
    "VECTORS",
    "app_session_id",
    "app_session_key_state_hash",
    "create_app_session_hash",
    "quorum_signature",
    "sign_app_session_key_state",
    "update_hash",
]

#: prefix of a quorum signature made by the participant's wallet key
QUORUM_SIG_WALLET: Final = 0xA1
#: prefix of a quorum signature made by an app session key registered by the participant
QUORUM_SIG_SESSION_KEY: Final = 0xA2

_DEFINITION_TYPES: Final = ("string", "(address,uint8)[]", "uint8", "uint64")
_UPDATE_TYPES: Final = ("bytes32", "uint8", "uint64", "(address,string,string)[]", "string")
_KEY_STATE_TYPES: Final = ("address", "address", "uint64", "bytes32[]", "bytes32[]", "uint64")
_DECIMAL_CHARS: Final = frozenset("0123456789.-+eE")


def _pick(mapping: Mapping[str, Any], *names: str) -> Any:
    """The first present key of ``names`` (camelCase or snake_case spelling)."""
    for name in names:
        if name in mapping:
            return mapping[name]
    raise SettlementValueError(f"missing field {names[0]!r} (or {' / '.join(names[1:])})")


def _uint(value: object, field: str, bits: int) -> int:
    if isinstance(value, bool):
        raise SettlementValueError(f"{field} must be an unsigned integer, got {value!r}")
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or not 0 <= value < 2**bits:
        raise SettlementValueError(f"{field} must be a uint{bits}, got {value!r}")
    return value


def _definition_values(definition: Mapping[str, Any]) -> list[Any]:
    application = _pick(definition, "applicationId", "application_id")
    if not isinstance(application, str):
        raise SettlementValueError(f"application id must be a string, got {application!r}")
    participants = [
        (
            validate_address(
                _pick(p, "walletAddress", "wallet_address"), field="participant wallet"
            ),
            _uint(_pick(p, "signatureWeight", "signature_weight"), "signature weight", 8),
        )
        for p in _pick(definition, "participants")
    ]
    return [
        application,
        participants,
        _uint(_pick(definition, "quorum"), "quorum", 8),
        _uint(_pick(definition, "nonce"), "nonce", 64),
    ]


def app_session_id(definition: Mapping[str, Any]) -> bytes:
    """The app session id the node derives from a definition.

    ``keccak256(abi.encode(string app_id, (address,uint8)[] participants, uint8 quorum,
    uint64 nonce))``.
    """
    return keccak256(abi_encode(_DEFINITION_TYPES, _definition_values(definition)))


def create_app_session_hash(definition: Mapping[str, Any], session_data: str) -> bytes:
    """The hash every participant signs for ``create_app_session`` (definition + session data)."""
    if not isinstance(session_data, str):
        raise SettlementValueError("session_data must be a string (JSON text or empty)")
    values = [*_definition_values(definition), session_data]
    return keccak256(abi_encode((*_DEFINITION_TYPES, "string"), values))


def _amount_text(value: object) -> str:
    """The amount exactly as given: the hash covers the text, so never re-format it here."""
    if not isinstance(value, str) or not value or not set(value) <= _DECIMAL_CHARS:
        raise InvalidAmountError(f"allocation amount must be a decimal string, got {value!r}")
    return value


def update_hash(update: Mapping[str, Any]) -> bytes:
    """The hash every quorum signature of an app state update covers.

    ``keccak256(abi.encode(bytes32 id, uint8 intent, uint64 version,
    (address,string,string)[] allocations, string session_data))``.

    Intent: 0 operate, 1 deposit, 2 withdraw, 3 close.
    """
    raw_id = _pick(update, "appSessionId", "app_session_id")
    try:
        session_id = bytes.fromhex(raw_id[2:]) if raw_id.startswith("0x") else b""
    except (AttributeError, ValueError):
        session_id = b""
    if len(session_id) != 32:
        raise SettlementValueError(f"app session id must be 32 bytes of 0x-hex, got {raw_id!r}")
    allocations = [
        (
            validate_address(a["participant"], field="allocation participant"),
            str(a["asset"]),
            _amount_text(a["amount"]),
        )
        for a in _pick(update, "allocations")
    ]
    session_data = _pick(update, "sessionData", "session_data")
    values = [
        session_id,
        _uint(_pick(update, "intent"), "intent", 8),
        _uint(_pick(update, "version"), "version", 64),
        allocations,
        session_data,
    ]
    return keccak256(abi_encode(_UPDATE_TYPES, values))


def quorum_signature(digest_source: bytes, key: PrivateKey, *, session_key: bool = False) -> bytes:
    """``0xA1 ‖ sig`` (wallet) or ``0xA2 ‖ sig`` (app session key) over EIP-191 of the hash.

    ``digest_source`` is the 32-byte app-session hash itself (it is signed as a 32-byte
    personal message, not re-hashed raw). A 0xA2 signature counts for the wallet that
    registered the session key.
    """
    if len(digest_source) != 32:
        raise InvalidSignatureError("an app-session quorum signature covers a 32-byte hash")
    prefix = QUORUM_SIG_SESSION_KEY if session_key else QUORUM_SIG_WALLET
    return bytes((prefix,)) + sign_eip191(key, digest_source)


def app_session_key_state_hash(state: Mapping[str, Any]) -> bytes:
    """The hash of an ``app_sessions.v1.submit_session_key_state`` registration.

    Scope ids are hashed as UTF-8 **text** (``keccak256(utf8(id))``), even hex-looking ones.
    """

    def text_hashes(ids: Sequence[Any], field: str) -> list[bytes]:
        if isinstance(ids, str):
            raise SettlementValueError(f"{field} must be a list of ids, not one string")
        return [keccak256(str(item).encode()) for item in ids]

    values = [
        validate_address(state["user_address"], field="user_address"),
        validate_address(state["session_key"], field="session_key"),
        _uint(state["version"], "version", 64),
        text_hashes(state.get("application_ids", []), "application_ids"),
        text_hashes(state.get("app_session_ids", []), "app_session_ids"),
        _uint(state["expires_at"], "expires_at", 64),
    ]
    return keccak256(abi_encode(_KEY_STATE_TYPES, values))


def sign_app_session_key_state(
    state: Mapping[str, Any], user_key: PrivateKey, session_key: PrivateKey | None
) -> tuple[bytes, bytes | None]:
    """``(user_sig, session_key_sig)``: plain 65-byte EIP-191 signatures of the hash."""
    if validate_address(state["user_address"]) != user_key.address:
        raise InvalidSignatureError("user_key is not the key of state.user_address")
    if session_key is not None and validate_address(state["session_key"]) != session_key.address:
        raise InvalidSignatureError("session_key is not the key of state.session_key")
    digest = app_session_key_state_hash(state)
    return sign_eip191(user_key, digest), (
        None if session_key is None else sign_eip191(session_key, digest)
    )


# ---------------------------------------------------------------------------------------------
# vectors
# ---------------------------------------------------------------------------------------------


def _hex(raw: bytes) -> str:
    return "0x" + raw.hex()


def _meta_key(meta: Mapping[str, Any], role: str) -> PrivateKey:
    return PrivateKey(meta["keys"][role]["private_key"])


def _vector_app_session(
    inputs: Mapping[str, Any], meta: Mapping[str, Any], case: VectorCase
) -> dict[str, Any]:
    """The shape follows the SDK functions the vector exercises: one bare pack/id function
    gives ``{result}`` (plus the known-answer fields when the file lists the vector as a
    known-answer check); a vector that also signs gives the signed request or update."""
    if case.only("packCreateAppSessionRequestV1"):
        result = _hex(create_app_session_hash(inputs["definition"], inputs["session_data"]))
    elif case.only("generateAppSessionIDV1"):
        result = _hex(app_session_id(inputs["definition"]))
    elif case.only("packAppStateUpdateV1"):
        result = _hex(update_hash(inputs["update"]))
    else:
        return _signed_app_session(inputs, meta)
    return {"result": result, **known_answer_fields(case, result, result)}


def _signed_app_session(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """A create request or a state update with its hash, digest and quorum signatures."""
    user, peer = _meta_key(meta, "user"), _meta_key(meta, "peer")
    if "update" in inputs:
        digest = update_hash(inputs["update"])
        if "wire_form" in inputs and update_hash(inputs["wire_form"]) != digest:
            raise SettlementValueError("update and its wire form hash differently")
        return {
            "update_hash": _hex(digest),
            "eip191_digest": _hex(eip191_digest(digest)),
            "quorum_sig_user": _hex(quorum_signature(digest, user)),
            "quorum_sig_peer": _hex(quorum_signature(digest, peer)),
        }
    definition = inputs["definition"]
    if "session_data" not in inputs:
        return {"app_session_id": _hex(app_session_id(definition))}
    create = create_app_session_hash(definition, inputs["session_data"])
    session_key = _meta_key(meta, "session_key")
    return {
        "app_session_id": _hex(app_session_id(definition)),
        "create_request_hash": _hex(create),
        "eip191_digest": _hex(eip191_digest(create)),
        "quorum_sig_user": _hex(quorum_signature(create, user)),
        "quorum_sig_peer": _hex(quorum_signature(create, peer)),
        "quorum_sig_user_via_session_key_0xa2": _hex(
            quorum_signature(create, session_key, session_key=True)
        ),
    }


def _vector_app_session_key(
    inputs: Mapping[str, Any], meta: Mapping[str, Any], case: VectorCase
) -> dict[str, Any]:
    """``packAppSessionKeyStateV1`` alone gives ``{hash}``; with a signer, the signatures of
    the wallet and the session key (keys found in ``meta.keys`` by address)."""
    state = inputs["state"]
    digest = _hex(app_session_key_state_hash(state))
    if case.only("packAppSessionKeyStateV1"):
        return {"hash": digest, **known_answer_fields(case, digest, digest)}
    keys = {k["address"].lower(): k["private_key"] for k in meta["keys"].values()}
    try:
        user_key = PrivateKey(keys[state["user_address"].lower()])
        session_key = PrivateKey(keys[state["session_key"].lower()])
    except KeyError:
        raise InvalidSignatureError("no meta key for the user or the session key") from None
    user_sig, session_sig = sign_app_session_key_state(state, user_key, session_key)
    assert session_sig is not None
    return {
        "hash": digest,
        "eip191_digest": _hex(eip191_digest(bytes.fromhex(digest[2:]))),
        "user_sig": _hex(user_sig),
        "session_key_sig": _hex(session_sig),
    }


VECTORS: dict[str, Callable[..., dict[str, Any]]] = {
    "app_session": _vector_app_session,
    "app_session_key": _vector_app_session_key,
}
"""Vector group -> ``(inputs, meta) -> outputs`` (see :mod:`.vectors`)."""
