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

import orjson

from ....errors import InvalidFrameError
from ....keys import PrivateKey
from ..core.keccak import keccak256
from ..core.recover import _compact_signature as _compact_signature
from ..core.recover import recover_signer
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
