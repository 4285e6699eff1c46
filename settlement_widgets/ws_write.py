"""One socket write for every WebSocket frame queued on a connection.

Both ends of our relay link frame messages through websockets' sans-I/O protocol object and
write what it queued in one ``transport.write``: the relay for a reply and its
notifications, the client for the requests of one event-loop turn. A loopback write costs a
wake-up of the peer, so one write per turn instead of one per
frame is most of what pipelining saves. The connection's own ``send()`` writes each message
on its own and takes a lock and a drain per call.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

__all__ = ["Outbox", "write_queued"]

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
                protocol.send_text(frame)
            write_queued(ws)
        except Exception as exc:  # the socket is gone: websockets tears the connection down
            _log.debug("dropping frames for a closed connection: %s", exc)
            self.closed = True
            return
        if ws.transport.get_write_buffer_size() > self.MAX_BUFFER:
            _log.warning("closing a connection that stopped reading")
            self.closed = True
            ws.transport.abort()
