"""Frames on the relay's hot path: parse a request keeping its exact ``req`` bytes, and emit
compact ``res`` arrays signed over exactly the bytes sent (the v0.5 RPC envelope).

The SDK and our client send ``{"req":<req>,"sig":[...]}`` with the compact ``req`` text, so
the fast path parses with orjson and takes ``<req>`` as a slice, accepted only when it equals
orjson's compact re-serialisation of the parsed value (so the slice provably *is* the value).
Any other layout (whitespace, key order, ``sid``, numbers written differently) falls back to
the exact member scanner of :mod:`settlement_widgets.channel.v0_5.core.wire_json`; the signature is
then
checked over the bytes as received, never a re-serialisation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import coincurve
import orjson

from ....errors import InvalidFrameError, InvalidSignatureError
from ....keys import SECP256K1_N, PrivateKey, split_signature
from ..core.keccak import keccak256
from ..core.wire_json import loads_members

__all__ = [
    "INVALID_FORMAT",
    "VALIDATION_FAILED",
    "FrameError",
    "Incoming",
    "parse_incoming",
    "recover_signer",
    "signed_frame",
]

INVALID_FORMAT: Final = "invalid message format"
VALIDATION_FAILED: Final = "message validation failed"
_UINT64_MAX: Final = 2**64 - 1
_REQ_PREFIX: Final = b'{"req":'
_SIG_MARK: Final = b',"sig":'
_ZERO32: Final = bytes(32)
_N_BYTES: Final = SECP256K1_N.to_bytes(32, "big")
_HALF_N_BYTES: Final = (SECP256K1_N // 2).to_bytes(32, "big")
_RECID: Final = (b"\x00", b"\x01")


class FrameError(InvalidFrameError):
    """A frame the node answers with an ``error`` (``request_id`` 0 when it is unknown)."""

    def __init__(self, message: str, request_id: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id


@dataclass(slots=True)
class Incoming:
    """One parsed request; ``raw`` is the exact ``req`` bytes the signatures cover."""

    request_id: int
    method: str
    params: dict[str, Any]
    timestamp: int
    sigs: list[str]
    raw: bytes
    _digest: bytes | None = None
    #: each signature's 20-byte signer when recovered ahead (:mod:`.signer_pool`); ``None``
    #: entries (or no list) are recovered by the handler, which raises the precise error
    signers: list[bytes | None] | None = None

    @property
    def digest(self) -> bytes:
        """``keccak256(raw)``: what every signature signs, and the replay-guard key."""
        if self._digest is None:
            self._digest = keccak256(self.raw)
        return self._digest


def _uint64(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _UINT64_MAX


def _slow_raw(data: bytes) -> tuple[dict[str, Any], bytes]:
    """Exact parse (stdlib scanner): the members and the raw ``req`` bytes."""
    try:
        text = data.decode("utf-8")
        members = loads_members(text)
    except (UnicodeDecodeError, RecursionError, InvalidFrameError):
        raise FrameError(INVALID_FORMAT) from None
    frame: dict[str, Any] = {}
    raw = b""
    for key, value, start, end in members:
        frame[key] = value
        if key == "req":
            raw = text[start:end].encode("utf-8")
    return frame, raw


def _fast(data: bytes) -> tuple[Any, bytes] | None:
    """orjson parse plus the raw ``req`` slice, or ``None`` when the slice is not provably
    the value (then orjson's numbers may differ from the text, e.g. beyond 64 bits)."""
    try:
        frame = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if type(frame) is not dict or not data.startswith(_REQ_PREFIX) or not data.endswith(b"}"):
        return None
    req = frame.get("req")
    cut = data.rfind(_SIG_MARK)
    if req is None or cut <= 7:
        return None
    candidate = data[7:cut]
    try:
        if candidate != orjson.dumps(req):
            return None
    except TypeError:
        return None
    return frame, candidate


def parse_incoming(data: bytes | str) -> Incoming:
    """Parse and validate a request frame, or raise :class:`FrameError` with the node's text."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    fast = _fast(data)
    frame: Any
    if fast is not None:
        frame, raw = fast
    else:
        frame, raw = _slow_raw(data)
    if type(frame) is not dict:
        raise FrameError(INVALID_FORMAT)
    req = frame.get("req")
    if req is None:
        raise FrameError(VALIDATION_FAILED if "res" in frame else INVALID_FORMAT)
    if type(req) is not list or len(req) != 4:
        raise FrameError(INVALID_FORMAT)
    request_id, method, params, timestamp = req
    if not _uint64(request_id):
        raise FrameError(INVALID_FORMAT)
    if type(method) is not str or not method or type(params) is not dict or not _uint64(timestamp):
        raise FrameError(INVALID_FORMAT, request_id)
    sigs = frame.get("sig", [])
    if type(sigs) is not list or any(type(s) is not str for s in sigs):
        raise FrameError(INVALID_FORMAT, request_id)
    return Incoming(request_id, method, params, timestamp, sigs, raw)


def signed_frame(
    key: PrivateKey, request_id: int, method: str, result: Any, timestamp: int
) -> bytes:
    """``{"res":[id, method, result, ts],"sig":[brokerSig]}``, the signature over the exact
    compact ``res`` bytes emitted (raw ECDSA, v 27/28)."""
    res = orjson.dumps([request_id, method, result, timestamp])
    sig = key.sign_hash(keccak256(res))
    return b'{"res":' + res + b',"sig":["0x' + sig.hex().encode("ascii") + b'"]}'


def _compact_signature(signature: str) -> bytes:
    """The 65-byte ``r || s || recid`` coincurve wants, checked like
    :func:`~settlement_widgets.keys.split_signature` (length, v, 0 < r < n, 0 < s <= n/2)
    but on the bytes: big-endian 32-byte strings compare like the integers they encode.
    Anything unusual goes through ``split_signature`` for its exact error."""
    text = signature[2:] if signature[:2] in ("0x", "0X") else signature
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raw = b""
    if len(raw) == 65:
        v = raw[64]
        recid = v - 27 if v >= 27 else v
        r = raw[:32]
        s = raw[32:64]
        if recid in (0, 1) and _ZERO32 < r < _N_BYTES and _ZERO32 < s <= _HALF_N_BYTES:
            return r + s + _RECID[recid]
    r_int, s_int, v_int = split_signature(signature)  # raises the precise error
    return r_int.to_bytes(32, "big") + s_int.to_bytes(32, "big") + bytes((v_int - 27,))


def recover_signer(digest: bytes, signature: str) -> bytes:
    """The 20-byte signer of ``digest`` (raises InvalidSignatureError if malformed).

    ``keys.recover_address_bytes`` with the address hashed by :func:`keccak256` (safe-pysha3
    when installed) rather than eth-hash's pycryptodome binding, and the signature checked on
    its bytes rather than as integers: about 25 µs less on each request the relay verifies.
    """
    compact = _compact_signature(signature)
    try:
        public = coincurve.PublicKey.from_signature_and_message(compact, digest, hasher=None)
    except Exception as exc:  # coincurve raises plain Exception/ValueError
        raise InvalidSignatureError(f"signature does not recover a public key: {exc}") from None
    return keccak256(public.format(compressed=False)[1:])[-20:]
