"""The local Nitronode: a WebSocket server on loopback speaking Nitrolite v1.

:class:`NitronodeNode` decodes each text message as a v1 frame
(:func:`~settlement_widgets.channel.v1.core.wire.decode_frame`), runs the method's handler
(:class:`~.handlers.NitronodeService`) and answers with a type-2 frame carrying the same id
and method, or a type-4 frame ``{"error": text}``. A frame that does not parse is answered
``[4,0,"",{"error":"invalid message format"},ts]`` as the Go node does, which is also what a
v0.5 client gets. Like the Go node it sends nothing on connect and emits no events.

Connection limits are the Go node's (Nitrolite v1.4.1 ``nitronode/runtime.go``,
``nitronode/api/rate_limits.go``, ``pkg/rpc/connection.go``; defaults in
:class:`~.config.NitronodeConfig`): a frame above ``ws_max_message_size`` closes the
connection with 1009 (websockets' ``max_size``); every inbound frame is charged to a
per-connection byte bucket, and one that does not fit drops the connection; every request
for a known method takes a token from a per-connection request bucket (10/s, burst 20), and
without one it is answered ``{"error": "rate limit exceeded"}`` with the connection kept.

Durability follows the v0.5 relay: handlers change the in-memory
:class:`~.ledger.NitronodeLedger`, and the reply is released by the relay's
:class:`~settlement_widgets.channel.node_base.committer.GroupCommitter` only after the COMMIT of
the batch holding those changes, so an acknowledged state survives a SIGKILL. Replies to one
connection leave in request order (the committer releases in sequence order), and handlers
run one at a time (an :class:`asyncio.Lock`), so a check and the mutation it guards are never
split by another request while a chain-view lookup awaits.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from ....errors import ConfigurationError, InvalidFrameError, RelayError, RelayUnavailableError
from ....ws_write import Outbox
from ...node_base.commit_hold import CommitHold, Link
from ...node_base.committer import GroupCommitter
from ...node_base.server import NodeServer
from ..core.rate_limit import DEFAULT_WS_MAX_MESSAGE_SIZE, RATE_LIMIT_EXCEEDED, TokenBucket
from ..core.wire import (
    INVALID_MESSAGE_FORMAT,
    Frame,
    MessageType,
    decode_frame,
    encode_frame,
    error_frame,
    unknown_method_error,
)
from .chain_view import ChainView, one_head_per_request
from .config import NitronodeConfig
from .handlers import INTERNAL_ERROR, NitronodeService
from .ledger import NitronodeLedger, write_batch

__all__ = ["MAX_FRAME_BYTES", "NitronodeNode"]

_log = logging.getLogger(__name__)

#: the Go node's default inbound frame limit (``nitronode/runtime.go``); above it: close 1009
MAX_FRAME_BYTES: Final = DEFAULT_WS_MAX_MESSAGE_SIZE


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _received(ws: ServerConnection) -> Callable[[], bool] | None:
    """Whether ``ws`` read a frame its reader has not taken yet (websockets' assembler
    queue; None where a websockets version keeps it elsewhere: the socket check remains)."""
    queue = getattr(getattr(ws, "recv_messages", None), "frames", None)
    if queue is None or not hasattr(queue, "__len__"):
        return None
    return lambda: len(queue) > 0


class NitronodeNode(NodeServer):
    """A Nitrolite v1 node for tests and the sandbox: ``await start()`` / ``await aclose()``
    or ``async with``. ``chain_view`` (see :class:`~.chain_view.ChainView`) supplies the
    on-chain channel status, or one view per blockchain id for a node serving several
    chains (:class:`~.chain_view.ChainViews`); without one, channels count as open once
    their creation is co-signed."""

    def __init__(
        self,
        config: NitronodeConfig,
        *,
        chain_view: ChainView | Mapping[int, ChainView] | None = None,
    ) -> None:
        super().__init__(config.host)
        self.config = config
        self.chain_view = chain_view
        self.ledger: NitronodeLedger | None = None
        self.service: NitronodeService | None = None
        self.committer: GroupCommitter | None = None
        self._lock = asyncio.Lock()
        #: holds a COMMIT while a pipelining client is still sending (see .commit_hold)
        self._hold = CommitHold(enabled=config.commit_hold)
        self._settling: asyncio.Task[None] | None = None
        self._watching: asyncio.Task[None] | None = None  # the look for abandoned locks
        self._settle_again = False  # work arrived while ``_settling`` ran: it goes round again

    # --- lifecycle ----------------------------------------------------------------------------

    async def _start(self) -> None:
        """Open (or reload) the ledger, start the committer, listen."""
        config = self.config
        ledger = NitronodeLedger(config.db_path, synchronous=config.durability.upper())
        self.ledger = ledger
        address = config.node_key.address
        stored = ledger.meta.get("node_address")
        if stored is not None and stored != address:
            raise ConfigurationError(
                f"the Nitronode database {ledger.path} belongs to node {stored}, not "
                f"{address}: use that key or a new database"
            )
        ledger.set_meta("node_address", address)
        committer = GroupCommitter(ledger, threaded=False, write=write_batch)
        committer.on_failure = self._on_commit_failure
        if config.commit_hold:
            committer.hold = self._hold
            committer.on_released = self._hold.committed
        self.committer = committer
        committer.start(asyncio.get_running_loop())
        await committer.flush()
        self.service = NitronodeService(config, ledger, chain_view=self.chain_view)
        self._kick_settlement()  # what a previous run credited and did not settle
        if config.abandoned_check_interval_secs > 0:
            self._watching = asyncio.get_running_loop().create_task(self._watch_abandoned())
        await self._listen(
            self._serve,
            config.port,
            compression=None,
            max_size=config.ws_max_message_size,
            max_queue=1024,
        )

    async def aclose(self) -> None:
        """Stop listening, commit what is pending, close the ledger's connections."""
        if self._closing:
            return
        self._closing = True
        if self._watching is not None:
            self._watching.cancel()
            await asyncio.gather(self._watching, return_exceptions=True)
        await self._stop_listening()
        if self._settling is not None:
            await asyncio.gather(self._settling, return_exceptions=True)
        if self.committer is not None:
            await self.committer.aclose()

    # --- identity -----------------------------------------------------------------------------

    @property
    def node_address(self) -> str:
        return self.config.node_key.address

    # --- connections --------------------------------------------------------------------------

    async def _serve(self, ws: ServerConnection) -> None:
        config = self.config
        outbox = Outbox(ws)
        requests = TokenBucket(
            config.rate_limit_per_sec, config.rate_limit_burst, clock=config.clock
        )
        frame_bytes = (
            TokenBucket(config.ws_bytes_per_sec, config.ws_bytes_burst, clock=config.clock)
            if config.ws_bytes_per_sec > 0
            else None
        )
        sock = ws.transport.get_extra_info("socket")
        link = self._hold.link(
            outbox.push, sock.fileno() if sock is not None else -1, _received(ws)
        )
        try:
            async for message in ws:
                size = len(message.encode("utf-8") if isinstance(message, str) else message)
                if frame_bytes is not None and not frame_bytes.admit(size):
                    # the Go node closes the socket without a close frame (connection.go)
                    _log.warning("frame rate limit exceeded; closing connection (%d bytes)", size)
                    outbox.closed = True
                    ws.transport.abort()
                    return
                await self._on_message(link, message, requests)
        except ConnectionClosed:
            pass
        finally:
            outbox.closed = True
            self._hold.drop(link)

    async def _on_message(self, link: Link, message: str | bytes, requests: TokenBucket) -> None:
        committer, service = self.committer, self.service
        assert committer is not None and service is not None
        if committer.failure is not None:  # fail-stop
            return
        try:
            request = decode_frame(message)
            if request.type is not MessageType.REQUEST:
                raise InvalidFrameError("only requests are accepted")
        except InvalidFrameError:
            reply = error_frame(0, "", INVALID_MESSAGE_FORMAT, _now_ms())
        else:
            reply = await self._answer(service, request, requests)
        link.arrived()
        committer.after(committer.kick(), link.release, encode_frame(reply).encode())
        if service.escrow_work:
            service.escrow_work = False
            self._kick_settlement()

    async def _answer(
        self, service: NitronodeService, request: Frame, requests: TokenBucket
    ) -> Frame:
        handler = service.methods.get(request.method)
        if handler is None:  # answered before the limiter, as the Go router does
            text = unknown_method_error(request.method)
            return error_frame(request.request_id, request.method, text, _now_ms())
        if not requests.admit():
            return error_frame(request.request_id, request.method, RATE_LIMIT_EXCEEDED, _now_ms())
        try:
            async with self._lock:
                with one_head_per_request():
                    result: dict[str, Any] = await handler(request.payload)
        except RelayError as exc:
            return error_frame(request.request_id, request.method, exc.message, _now_ms())
        except Exception:  # a bug: answer, log, keep serving
            _log.exception("Nitronode handler failed on %s", request.method)
            return error_frame(request.request_id, request.method, INTERNAL_ERROR, _now_ms())
        return Frame(MessageType.RESPONSE, request.request_id, request.method, result, _now_ms())

    # --- escrow settlement (see .escrows) -----------------------------------------------------

    def _kick_settlement(self) -> None:
        """Settle credited escrow deposits on their chains, one task at a time: work that
        arrives while the task runs is taken by the same task (so :meth:`settled`, waiting
        on that one task, sees it; a second task started from a done-callback could begin
        after ``settled`` returned)."""
        if self._settling is not None and not self._settling.done():
            self._settle_again = True
            return
        service = self.service
        if service is None or self._closing:
            return
        if not service.escrows_to_settle() and not service.locks_to_reclaim():
            return
        self._settling = asyncio.get_running_loop().create_task(self._settle())

    async def _settle(self) -> None:
        """Finalize every credited escrow deposit on its chain, after the states that
        credited them are committed (never a deposit taken for a credit that a crash could
        undo), then commit the records; then take what is due of abandoned locks
        (:meth:`.escrows.EscrowDeposits.reclaim_lock`). A failure is logged and retried on
        the next credit, look or restart."""
        committer, service = self.committer, self.service
        assert committer is not None and service is not None
        while True:
            self._settle_again = False
            await committer.flush()
            for escrow in service.escrows_to_settle():
                try:
                    await service.settle_escrow(escrow)
                except Exception:
                    _log.exception("the on-chain steps of escrow %s failed", escrow["escrow_id"])
            await committer.flush()
            for escrow in service.locks_to_reclaim():
                try:
                    # each record committed before the step it leads to (write-ahead)
                    while await service.reclaim_lock(escrow) and not self._closing:
                        await committer.flush()
                except Exception:
                    _log.exception("taking back escrow lock %s failed", escrow["escrow_id"])
                await committer.flush()
            if not self._settle_again or self._closing:
                return

    @property
    def settling(self) -> bool:
        """Whether the node is taking escrow steps on chain right now (see :meth:`settled`)."""
        return self._settling is not None and not self._settling.done()

    async def settled(self) -> None:
        """Return once the node's running on-chain steps are done: every credited escrow
        deposit settled, and the steps due now for abandoned locks (:meth:`check_abandoned`)
        taken (tests: an operation's effects are visible when it returns)."""
        while self._settling is not None and not self._settling.done():
            await asyncio.shield(self._settling)

    async def check_abandoned(self) -> None:
        """Look now for abandoned escrow locks (see :mod:`.escrows`) and return once what is
        due as of the chains' time is done and committed. The node looks by itself every
        ``abandoned_check_interval_secs``, on start and after each escrow state: an abandoned
        lock sends no request and the hub emits nothing the node waits for, so only a
        periodic read of the chain notices a deadline passing. Tests call this after moving
        a chain's clock instead of waiting for that period."""
        await self.settled()
        self._kick_settlement()
        await self.settled()

    async def _watch_abandoned(self) -> None:
        """The periodic look (:meth:`check_abandoned`) while the node runs."""
        while not self._closing:
            await asyncio.sleep(self.config.abandoned_check_interval_secs)
            self._kick_settlement()

    # --- node-side helpers --------------------------------------------------------------------

    async def flush(self) -> None:
        """Wait until everything handled so far is committed (tests, shutdown)."""
        if self.committer is None:
            raise RelayUnavailableError("the Nitronode is not running")
        await self.committer.flush()
