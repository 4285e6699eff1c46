"""The relay client's WebSocket: each complete message handed over from ``data_received``.

websockets' own client connection puts every frame into an assembler and wakes the task
reading ``async for message in ws``, which then parses it and resolves the request's
future: per reply one more task switch, a queue and a future, ~30 µs of a transfer. Here a
complete text message goes to :attr:`DirectClientConnection.on_message` from the callback
that read it (the relay node reads its requests the same way,
:class:`~settlement_widgets.channel.v0_5.node.server._RelayConnection`). Control frames
(ping, pong, close) take websockets' path, so keepalive and the closing handshake are
unchanged. Messages that arrive before a handler is set wait in :attr:`early`, in order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection

from ....ws_write import MessageJoiner, at_frame_start, split_data_frames

__all__ = ["DirectClientConnection"]

_log = logging.getLogger(__name__)


class DirectClientConnection(ClientConnection):
    """A client connection whose text and binary messages bypass the receive queue."""

    #: read size per ``recv``: asyncio's default (256 KiB) is above malloc's mmap threshold,
    #: so each read of a small frame cost an mmap, an mremap and a munmap
    READ_SIZE = 64 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: called with every complete message, in order (set by the owner)
        self.on_message: Callable[[bytes], None] | None = None
        #: messages received before :attr:`on_message` was set
        self.early: list[bytes] = []
        self._joiner = MessageJoiner()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if hasattr(transport, "max_size"):  # selector transports (uvloop has its own buffer)
            transport.max_size = self.READ_SIZE

    def data_received(self, data: bytes) -> None:
        """Complete text frames at a frame boundary are split here (websockets' parser
        stays where it was, waiting for a frame); anything else, and whatever follows it in
        this read, goes through websockets."""
        if self.response is None or not at_frame_start(self.protocol):
            super().data_received(data)
            return
        payloads, used = split_data_frames(self.protocol, data, masked=False)
        for payload in payloads:
            self._deliver(payload)
        if used < len(data):
            super().data_received(data[used:] if used else data)

    def process_event(self, event: Any) -> None:
        if self.response is None or not self._joiner.takes(event):
            super().process_event(event)  # the handshake response, control frames
            return
        data = self._joiner.join(event)
        if data is not None:
            self._deliver(data)

    def _deliver(self, data: bytes) -> None:
        handler = self.on_message
        if handler is None:
            self.early.append(data)
            return
        try:
            handler(data)
        except Exception:  # pragma: no cover - a handler bug must not break the socket
            _log.exception("relay message handler failed")
