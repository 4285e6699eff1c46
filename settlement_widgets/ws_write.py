"""One socket write for every WebSocket frame queued on a connection.

Both ends of our relay link frame messages through websockets' sans-I/O protocol object and
write what it queued in one ``transport.write``: the relay for a reply and its
notifications, the client for the requests of one event-loop turn. A loopback write costs a
wake-up of the peer (performance-floor.md §3), so one write per turn instead of one per
frame is most of what pipelining saves. The connection's own ``send()`` writes each message
on its own and takes a lock and a drain per call.
"""

from __future__ import annotations

from typing import Any

__all__ = ["write_queued"]


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
