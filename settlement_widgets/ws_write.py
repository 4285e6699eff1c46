"""One socket write for every WebSocket frame queued on a connection.

Both ends of our relay link frame messages through websockets' sans-I/O protocol object and
write what it queued in one ``transport.write``: the relay for a reply and its
notifications, the client for the requests of one event-loop turn. A loopback write costs a
wake-up of the peer, so one write per turn instead of one per
frame is most of what pipelining saves. The connection's own ``send()`` writes each message
on its own and takes a lock and a drain per call.

Also here, for the same two ends: text frames serialised without websockets' ``Frame``
objects (:func:`send_text_frame`, the same bytes) and complete data frames read without its
generator parser when that parser waits between frames (:func:`at_frame_start`,
:func:`split_data_frames`); everything else keeps websockets' own path.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
import threading
from typing import Any

from websockets.frames import Frame, Opcode
from websockets.protocol import Side, State
from websockets.streams import StreamReader

try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - websockets without its C extension
    from websockets.utils import apply_mask  # type: ignore[assignment]

__all__ = [
    "MaskPool",
    "Outbox",
    "at_frame_start",
    "send_text_frame",
    "split_data_frames",
    "write_queued",
]

#: the code of the reader step websockets' frame parser waits in between two frames
_AT_EOF = StreamReader.at_eof.__code__

_log = logging.getLogger(__name__)


def write_queued(ws: Any) -> None:
    """Write everything ``ws.protocol`` has queued in one ``transport.write``; an
    end-of-stream marker among it half-closes the TCP connection, as websockets does.
    Raises what the transport raises (the caller decides what a dead socket means)."""
    chunks = ws.protocol.data_to_send()
    data = b"".join(chunks)
    if data:
        ws.transport.write(data)
    if not all(chunks):
        if ws.transport.can_write_eof():
            ws.transport.write_eof()
        else:
            ws.transport.close()


class Outbox:
    """The frames waiting for one server-side connection: everything pushed during one turn
    of the event loop goes out in one socket write (a reply and its notifications cost one
    syscall), through the connection's sans-I/O protocol object as ``websockets.broadcast``
    does. A client that stops reading is dropped once :attr:`MAX_BUFFER` bytes wait for it.
    Used by both of our nodes (the v0.5 relay and the v1 Nitronode)."""

    __slots__ = ("_out", "_scheduled", "closed", "ws")

    #: a client that stops reading is dropped once this much is waiting for it
    MAX_BUFFER = 64 << 20

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self._out: list[bytes] = []
        self._scheduled = False
        self.closed = False

    def push(self, frame: bytes) -> None:
        if self.closed:
            return
        self._out.append(frame)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        from websockets.protocol import State

        self._scheduled = False
        frames, self._out = self._out, []
        ws = self.ws
        if self.closed or ws.protocol.state is not State.OPEN:
            self.closed = True
            return
        protocol = ws.protocol
        try:
            for frame in frames:
                send_text_frame(protocol, frame)
            write_queued(ws)
        except Exception as exc:  # the socket is gone: websockets tears the connection down
            _log.debug("dropping frames for a closed connection: %s", exc)
            self.closed = True
            return
        if ws.transport.get_write_buffer_size() > self.MAX_BUFFER:
            _log.warning("closing a connection that stopped reading")
            self.closed = True
            ws.transport.abort()


def at_frame_start(protocol: Any) -> bool:
    """Whether websockets' sans-I/O ``protocol`` (open, no extensions, no fragmented
    message in progress) has nothing buffered and its parser waits for the first byte of
    the next frame: then the frames of the next read may be taken by
    :func:`split_data_frames` and the rest handed to ``protocol.receive_data``, which
    starts exactly where it stopped. The parser's position is read from its generator
    chain (``gi_yieldfrom``); a websockets whose parser looks different is never "at a
    frame start", so it simply keeps parsing everything itself."""
    if (
        protocol.state is not State.OPEN
        or protocol.current_size is not None
        or protocol.extensions
        or protocol.reader.buffer
    ):
        return False
    gen = protocol.parser
    inner = getattr(gen, "gi_yieldfrom", None)
    while inner is not None:
        gen = inner
        inner = getattr(gen, "gi_yieldfrom", None)
    return getattr(gen, "gi_code", None) is _AT_EOF


def split_data_frames(protocol: Any, data: bytes, *, masked: bool) -> tuple[list[bytes], int]:
    """The payloads of the complete, unfragmented text and binary frames at the start of
    ``data`` (masked: frames from a client), and how many bytes they took.

    For a protocol :func:`at_frame_start`: what websockets' ``Frame.parse`` and
    ``recv_frame`` would accept and deliver as one message each (FIN set, no reserved bits,
    the masking bit as the side requires, within the size limit websockets applies), parsed
    without its generator chain (~15 µs per frame less). It stops at the first frame that
    is anything else (a control frame, a fragment, a protocol error, one over the limit)
    or incomplete: the caller gives websockets everything from there, so those keep
    websockets' own handling and errors."""
    limit = protocol.max_message_size
    fragment = protocol.max_fragment_size
    if fragment is not None:
        limit = fragment if limit is None else min(limit, fragment)
    want = 0x80 if masked else 0
    payloads: list[bytes] = []
    pos = 0
    end_of_data = len(data)
    while end_of_data - pos >= 2:
        head1 = data[pos]
        head2 = data[pos + 1]
        if (head1 != 0x81 and head1 != 0x82) or head2 & 0x80 != want:
            break
        length = head2 & 0x7F
        start = pos + 2
        if length == 126:
            start += 2
            if start > end_of_data:
                break
            length = int.from_bytes(data[pos + 2 : start], "big")
        elif length == 127:
            start += 8
            if start > end_of_data:
                break
            length = int.from_bytes(data[pos + 2 : start], "big")
        if limit is not None and length > limit:
            break
        if masked:
            start += 4
        end = start + length
        if end > end_of_data:
            break
        if masked:
            payloads.append(apply_mask(data[start:end], data[start - 4 : start]))
        else:
            payloads.append(data[start:end])
        pos = end
    return payloads, pos


class MessageJoiner:
    """The data frames websockets hands one by one to ``process_event`` (both ends of the
    relay link take them there, not from its message queue), joined into whole messages:
    a fragmented message's parts are kept until its FIN frame."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    @staticmethod
    def takes(event: object) -> bool:
        """Whether ``event`` is a data frame (TEXT, BINARY or CONT) for :meth:`join`."""
        return isinstance(event, Frame) and event.opcode in _DATA_OPCODES

    def join(self, event: Frame) -> bytes | None:
        """The whole message once ``event`` completes one, else None (a part is kept)."""
        if event.opcode is not Opcode.CONT:
            if event.fin:
                return bytes(event.data)
            self._parts = [bytes(event.data)]
            return None
        self._parts.append(bytes(event.data))
        if not event.fin:
            return None
        data = b"".join(self._parts)
        self._parts = []
        return data


_DATA_OPCODES = frozenset((Opcode.TEXT, Opcode.BINARY, Opcode.CONT))


class MaskPool:
    """Frame masking keys (RFC 6455 5.3: from a strong source of entropy) cut from one
    ``os.urandom`` read of 4 KiB, instead of one ``getrandom`` syscall per frame as
    websockets' ``secrets.token_bytes(4)`` makes: the same source, 1024 keys per call."""

    __slots__ = ("_buffer", "_offset")

    SIZE = 4096

    def __init__(self) -> None:
        self._buffer = b""
        self._offset = self.SIZE

    def take(self) -> bytes:
        offset = self._offset
        if offset >= len(self._buffer):
            self._buffer = os.urandom(self.SIZE)
            offset = 0
        self._offset = offset + 4
        return self._buffer[offset : offset + 4]


class _ThreadMasks(threading.local):
    """One :class:`MaskPool` per thread (event loops may run in several threads)."""

    def __init__(self) -> None:
        self.pool = MaskPool()


_MASKS = _ThreadMasks()


def send_text_frame(protocol: Any, payload: bytes) -> None:
    """``protocol.send_text(payload)`` for a connection without extensions, serialised
    here: the same checks (open, no fragmented message in progress) and the same bytes as
    ``Frame.serialize`` (a client's masked with a key from :class:`MaskPool`, so the same
    bytes given the same key), without a ``Frame`` and a ``BytesIO`` per frame, nor a
    ``getrandom`` syscall per client frame. Anything else goes through ``send_text``."""
    usual = protocol.state is State.OPEN and not protocol.expect_continuation_frame
    if not usual or protocol.extensions:
        protocol.send_text(payload)  # raises what websockets raises, or handles extensions
        return
    length = len(payload)
    masked = protocol.side is Side.CLIENT
    bit = 0x80 if masked else 0
    if length < 126:
        head = struct.pack("!BB", 0x81, bit | length)
    elif length < 65536:
        head = struct.pack("!BBH", 0x81, bit | 126, length)
    else:
        head = struct.pack("!BBQ", 0x81, bit | 127, length)
    if masked:
        mask = _MASKS.pool.take()
        protocol.writes.append(head + mask + apply_mask(payload, mask))
    else:
        protocol.writes.append(head + payload)
