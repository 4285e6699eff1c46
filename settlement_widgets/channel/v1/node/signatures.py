"""Checking the signatures a v1 node receives (the core signs; the node must verify).

The core (:mod:`settlement_widgets.channel.v1.core`) builds and signs states, session-key
registrations and quorum signatures but has no verifier, so the node's side lives here:
recover the EIP-191 signer of each signed object and compare it with who must have signed
(as the Nitrolite v1.4.1 SDK signs). Written in this package because the core is edited elsewhere;
every digest comes from the core's packing functions, so there is one definition of what is
signed.
"""

from __future__ import annotations

from ....addresses import checksum_from_bytes
from ....errors import InvalidSignatureError
from ....keys import recover_address
from ..core.state import (
    SIG_VALIDATOR_DEFAULT,
    SIG_VALIDATOR_SESSION_KEY,
    eip191_digest,
    pack_channel_session_key_auth,
)

__all__ = ["SessionKeyAuth", "decode_hex", "recover_eip191", "split_channel_signature"]


def decode_hex(value: object, *, field: str) -> bytes:
    """``0x``-hex text as bytes, or :class:`InvalidSignatureError` naming ``field``."""
    if not isinstance(value, str) or not value.startswith(("0x", "0X")):
        raise InvalidSignatureError(f"{field} must be 0x-prefixed hex")
    try:
        return bytes.fromhex(value[2:])
    except ValueError:
        raise InvalidSignatureError(f"{field} is not valid hex") from None


def recover_eip191(message: bytes, signature: bytes) -> str:
    """The EIP-55 address that signed ``message`` as an EIP-191 personal message."""
    if len(signature) != 65:
        raise InvalidSignatureError(f"expected a 65-byte signature, got {len(signature)} bytes")
    return recover_address(eip191_digest(message), signature)


class SessionKeyAuth:
    """The parts of a ``0x01`` session-key channel signature (validator id 1).

    ``0x01 ‖ abi.encode((address sessionKey, bytes32 metadataHash, bytes authSig), bytes skSig)``
    """

    __slots__ = ("auth_sig", "metadata_hash", "session_key", "session_sig")

    def __init__(
        self, session_key: str, metadata_hash: bytes, auth_sig: bytes, session_sig: bytes
    ) -> None:
        self.session_key = session_key
        self.metadata_hash = metadata_hash
        self.auth_sig = auth_sig
        self.session_sig = session_sig

    @classmethod
    def decode(cls, body: bytes) -> SessionKeyAuth:
        """Decode the ABI body after the ``0x01`` byte (strict bounds, no trailing surprises)."""

        def word(offset: int) -> int:
            if offset < 0 or offset + 32 > len(body):
                raise InvalidSignatureError("session-key signature is truncated")
            return int.from_bytes(body[offset : offset + 32], "big")

        def dynamic_bytes(offset: int) -> bytes:
            length = word(offset)
            start = offset + 32
            if length > len(body) - start:
                raise InvalidSignatureError("session-key signature is truncated")
            return body[start : start + length]

        tuple_at = word(0)
        session_sig = dynamic_bytes(word(32))
        key_word = word(tuple_at)
        if key_word >> 160:
            raise InvalidSignatureError("session-key signature has a malformed address")
        metadata = body[tuple_at + 32 : tuple_at + 64]
        if len(metadata) != 32:
            raise InvalidSignatureError("session-key signature is truncated")
        auth_sig = dynamic_bytes(tuple_at + word(tuple_at + 64))
        return cls(
            checksum_from_bytes(key_word.to_bytes(20, "big")), metadata, auth_sig, session_sig
        )

    def check(self, user: str, packed_state: bytes) -> None:
        """The wallet authorised the key (``authSig``) and the key signed the state."""
        auth_payload = pack_channel_session_key_auth(self.session_key, self.metadata_hash)
        if recover_eip191(auth_payload, self.auth_sig).lower() != user.lower():
            raise InvalidSignatureError("session key authorization is not signed by the user")
        if recover_eip191(packed_state, self.session_sig).lower() != self.session_key.lower():
            raise InvalidSignatureError("state is not signed by the session key")


def split_channel_signature(signature: bytes) -> tuple[int, bytes]:
    """``(validator id, body)`` of a channel signature; only ids 0 and 1 are known."""
    if not signature:
        raise InvalidSignatureError("empty signature")
    kind = signature[0]
    if kind not in (SIG_VALIDATOR_DEFAULT, SIG_VALIDATOR_SESSION_KEY):
        raise InvalidSignatureError(f"unsupported signature validator id {kind}")
    return kind, signature[1:]
