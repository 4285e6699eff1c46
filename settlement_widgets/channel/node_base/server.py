"""The lifecycle both versions' local nodes share: start, listen, fail-stop, close.

:class:`NodeServer` is the base of the v0.5 :class:`~..v0_5.node.server.RelayNode` and the
v1 :class:`~..v1.node.server.NitronodeNode`. ``await start()`` runs the node's
:meth:`~NodeServer._start` and, if it fails part way, closes what it opened;
``async with`` does both ends. A failed COMMIT is fail-stop: :attr:`failed` is set and the
listener closes, so nothing is acknowledged without durability. Each node opens its own
ledger and committer in ``_start`` and closes them, in its own order, in ``aclose``.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Self

from websockets.asyncio.server import Server, ServerConnection, serve

__all__ = ["NodeServer"]


class NodeServer(abc.ABC):
    """A node listening on ``host`` (``port`` 0: a free one, known once started)."""

    def __init__(self, host: str) -> None:
        self._host = host
        self._server: Server | None = None
        self._port = 0
        self._closing = False
        #: set when a COMMIT failed: the node has stopped acknowledging (``__main__`` exits)
        self.failed = asyncio.Event()

    @abc.abstractmethod
    async def _start(self) -> None:
        """Open the ledger, start the committer, listen (with :meth:`_listen`)."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Stop listening (:meth:`_stop_listening`) and close what :meth:`_start` opened."""

    async def start(self) -> Self:
        try:
            await self._start()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _listen(
        self,
        handler: Callable[[ServerConnection], Awaitable[None]],
        port: int,
        **options: Any,
    ) -> None:
        self._server = await serve(handler, self._host, port, **options)
        sock = next(iter(self._server.sockets))
        self._port = int(sock.getsockname()[1])

    async def _stop_listening(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    def _on_commit_failure(self, error: BaseException) -> None:
        self.failed.set()
        if self._server is not None:
            self._server.close()  # fail-stop: no acknowledgement without durability

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        """``ws://<host>:<port>/ws`` (the path the public and the Go nodes use)."""
        return f"ws://{self._host}:{self._port}/ws"
