"""The relay node: a WebSocket server on loopback speaking ClearNode v0.5.

:class:`RelayNode` ties the pieces together: frames come in through :mod:`.wire`, are
checked and applied by :class:`~.service.RelayService` against the in-memory
:class:`~.ledger.Ledger`, and the replies (compact ``res`` arrays signed by the broker key)
go out only after the :class:`~..node_base.committer.GroupCommitter` has made the changes durable.
Connections get ``assets`` on connect, ``channels`` and ``bu`` after auth, and ``bu``/``tr``/
``cu`` as balances and channels change. ``bu``/``tr`` are coalesced: what committed within
``notify_delay`` (5 ms by default) goes out as one ``bu`` with the latest balances and one
``tr`` listing every transaction, so a busy wallet is not sent two signed frames per
transfer. A
:class:`~.watcher.ChainWatcher` applies custody events when the node has a chain.

Transport settings: no permessage-deflate, orjson, the
broker key parsed once, request handling without awaits.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import ServerConnection

from ....errors import ConfigurationError, RelayError, RelayUnavailableError
from ....keys import PrivateKey
from ....ws_write import MessageJoiner, Outbox, at_frame_start, split_data_frames
from ...node_base.committer import GroupCommitter
from ...node_base.server import NodeServer
from . import ledger as ledger_module
from .clock import now_ms
from .config import RelayConfig
from .ledger import Ledger, connect
from .service import Note, RelayService, Session
from .signer_pool import SignerPool
from .watcher import ChainWatcher
from .wire import FrameError, Incoming, parse_incoming, signed_frame

if TYPE_CHECKING:
    from ..chain.custody import CustodyClient

__all__ = ["RelayNode"]

_log = logging.getLogger(__name__)


class _Connection(Outbox):
    """One client: its auth session and the frames waiting to be written (:class:`Outbox`:
    a transfer's reply, ``bu`` and ``tr`` go out in one socket write)."""

    __slots__ = ("session",)

    def __init__(self, ws: ServerConnection) -> None:
        super().__init__(ws)
        self.session = Session()


class _RelayConnection(ServerConnection):
    """A server connection that hands each complete message to the node straight from
    ``data_received``, instead of queueing it for a handler task to ``recv()``.

    websockets' own path puts every frame into an assembler and wakes the handler task,
    which costs a task switch and a future per request; handling the message in the
    callback that read it also lets a burst of pipelined requests be checked, committed and
    answered as one batch. Control frames (ping, pong, close) take websockets' path.
    Messages that arrive before the node has greeted the connection (``assets``) wait in
    :attr:`early`, so replies never overtake the greeting.
    """

    on_message: Callable[[bytes], None] | None = None

    #: read size per ``recv``: asyncio's default (256 KiB) is above malloc's mmap threshold,
    #: so every read of a ~400-byte frame cost an mmap, an mremap and a munmap (strace)
    READ_SIZE = 64 * 1024

    #: called with every complete message of one socket read, in order (set by the node);
    #: takes precedence over :attr:`on_message` inside ``data_received``
    on_burst: Callable[[list[bytes]], None] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.early: list[bytes] = []
        self._joiner = MessageJoiner()
        self._burst: list[bytes] | None = None

    def data_received(self, data: bytes) -> None:
        """Collect the messages of this read, then hand them over together: requests that
        arrive together are checked together (their signatures on two threads)."""
        if self.on_burst is None:
            super().data_received(data)
            return
        burst: list[bytes] = []
        self._burst = burst
        try:
            if self.request is not None and at_frame_start(self.protocol):
                # complete requests split here; anything else (and what follows) as before
                payloads, used = split_data_frames(self.protocol, data, masked=True)
                burst.extend(payloads)
                if used < len(data):
                    super().data_received(data[used:] if used else data)
            else:
                super().data_received(data)
        finally:
            self._burst = None
        if burst:
            self.on_burst(burst)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if hasattr(transport, "max_size"):  # selector transports (uvloop has its own buffer)
            transport.max_size = self.READ_SIZE

    def process_event(self, event: Any) -> None:
        if self.request is None or not self._joiner.takes(event):
            super().process_event(event)  # the handshake request, control frames
            return
        data = self._joiner.join(event)
        if data is None:
            return
        handler = self.on_message
        if handler is None:
            self.early.append(data)
        elif self._burst is not None:
            self._burst.append(data)
        else:
            handler(data)


@dataclass
class _WalletNotes:
    """Notifications for one wallet in one commit batch (``bu`` and ``tr`` coalesced)."""

    other: list[tuple[str, Any]] = field(default_factory=list)
    balances: Any = None
    txs: list[dict[str, Any]] = field(default_factory=list)


class RelayNode(NodeServer):
    """A ClearNode v0.5 wire-compatible relay. ``await start()`` / ``await aclose()``, or
    ``async with``. ``custody`` (a
    :class:`~settlement_widgets.channel.v0_5.chain.custody.CustodyClient`
    of the broker's wallet) turns on the chain watcher."""

    def __init__(
        self,
        config: RelayConfig,
        *,
        custody: CustodyClient | None = None,
        chain_id: int | None = None,
    ) -> None:
        super().__init__(config.host)
        self.config = config
        self._custody = custody
        self._chain_id = chain_id
        self.ledger: Ledger | None = None
        self.service: RelayService | None = None
        self.committer: GroupCommitter | None = None
        self.watcher: ChainWatcher | None = None
        self._read_conn: Any = None
        self._connections: set[_Connection] = set()
        self._by_wallet: dict[str, set[_Connection]] = {}
        self._notes: dict[int, dict[str, _WalletNotes]] = {}
        self._ready: dict[str, _WalletNotes] = {}
        self._notes_timer: asyncio.TimerHandle | None = None
        self._broker: PrivateKey | None = None
        self._signers: SignerPool | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    async def _start(self) -> None:
        """Open the ledger, start the writer, listen, and catch up with the chain."""
        config = self.config
        ledger = Ledger(config.db_path, synchronous=config.durability.upper())
        self.ledger = ledger
        self._broker = self._broker_key(ledger)
        secret = ledger.meta.get("jwt_secret")
        if secret is None:
            secret = secrets.token_hex(32)
            ledger.set_meta("jwt_secret", secret)
        committer = GroupCommitter(
            ledger,
            threaded=config.commit_thread,
            # the ledger's write_batch, looked up at each call so that a test can instrument it
            write=lambda conn, batch: ledger_module.write_batch(conn, batch),
        )
        committer.on_released = self._emit_notes
        committer.on_failure = self._on_commit_failure
        self.committer = committer
        committer.start(asyncio.get_running_loop())
        await committer.flush()  # the schema, the meta rows, the faucet seed
        if config.signer_threads:
            self._signers = SignerPool()
        self._read_conn = connect(ledger.path, synchronous="NORMAL")
        service = RelayService(
            config, ledger, self._broker, bytes.fromhex(secret), read_connection=self._read_conn
        )
        self.service = service
        await committer.flush()
        await self._listen(
            self._serve,
            config.port,
            create_connection=_RelayConnection,
            compression=None,
            max_size=1 << 20,
            max_queue=1024,
            write_limit=1 << 20,
        )
        if self._custody is not None:
            await self._check_chain(ledger, self._custody)
            chain_id = self._chain_id or (config.networks[0].chain_id if config.networks else 0)
            self.watcher = ChainWatcher(
                self._custody,
                chain_id,
                ledger=ledger,
                committer=committer,
                service=service,
                add_notes=self.add_notes,
                poll_interval=config.poll_interval,
                start_block=config.start_block,
            )
            await self.watcher.poll()
            self.watcher.start()

    @staticmethod
    async def _check_chain(ledger: Ledger, custody: CustodyClient) -> None:
        """A ledger follows one chain: refuse a database written against another one (an
        in-process chain is new on every start, so its ledger cannot be reused)."""
        genesis = await custody.wallet.w3.eth.get_block(0)
        digest = genesis["hash"]
        text = digest if isinstance(digest, str) else "0x" + bytes(digest).hex()
        stored = ledger.meta.get("chain_genesis")
        if stored is not None and stored != text:
            raise ConfigurationError(
                f"the relay database {ledger.path} follows another chain (genesis {stored}, "
                f"this chain's is {text}): start with a new database"
            )
        ledger.set_meta("chain_genesis", text)

    def _broker_key(self, ledger: Ledger) -> PrivateKey:
        stored_address = ledger.meta.get("broker_address")
        key = self.config.broker_key
        if key is None:
            secret = ledger.meta.get("broker_key")
            if secret is None:
                key = PrivateKey.generate()
                ledger.set_meta("broker_key", key.secret_hex())
            else:
                key = PrivateKey(secret)
        if stored_address is not None and stored_address != key.address:
            raise ConfigurationError(
                f"the relay database {ledger.path} belongs to broker {stored_address}, "
                f"not {key.address}: use that key or a new database"
            )
        ledger.set_meta("broker_address", key.address)
        return key

    async def aclose(self) -> None:
        if self._closing:
            return
        self._closing = True
        if self._notes_timer is not None:
            self._notes_timer.cancel()
            self._flush_notes()
        if self.watcher is not None:
            await self.watcher.aclose()
        await self._stop_listening()
        if self.committer is not None:
            await self.committer.aclose()
        if self._read_conn is not None:
            self._read_conn.close()
            self._read_conn = None
        if self._signers is not None:
            signers, self._signers = self._signers, None
            await asyncio.to_thread(signers.close)

    # --- identity -----------------------------------------------------------------------------

    @property
    def custody(self) -> CustodyClient | None:
        """The broker's custody client the chain watcher follows (``None``: no watcher)."""
        return self._custody

    @property
    def chain_id(self) -> int | None:
        return self._chain_id

    @property
    def broker_address(self) -> str:
        assert self._broker is not None, "start() the relay first"
        return self._broker.address

    # --- connections --------------------------------------------------------------------------

    async def _serve(self, ws: ServerConnection) -> None:
        assert isinstance(ws, _RelayConnection)
        conn = _Connection(ws)
        self._connections.add(conn)
        service = self.service
        assert service is not None
        self._push_now(conn, "assets", {"assets": [a.to_json() for a in self.config.assets]})
        try:
            for data in ws.early:  # anything sent before the greeting, in order
                self._on_frame(conn, data)
            ws.early = []
            ws.on_message = functools.partial(self._on_frame, conn)
            ws.on_burst = functools.partial(self._on_burst, conn)
            await ws.wait_closed()
        finally:
            ws.on_message = None
            ws.on_burst = None
            conn.closed = True
            self._connections.discard(conn)
            self._forget(conn)

    def _forget(self, conn: _Connection) -> None:
        wallet = conn.session.wallet
        if wallet is not None:
            peers = self._by_wallet.get(wallet)
            if peers is not None:
                peers.discard(conn)
                if not peers:
                    del self._by_wallet[wallet]

    def _frame(self, request_id: int, method: str, result: Any) -> bytes:
        assert self._broker is not None
        return signed_frame(self._broker, request_id, method, result, now_ms())

    def _push_now(self, conn: _Connection, method: str, result: Any) -> None:
        """A notification that depends on nothing pending (id 0)."""
        assert self.committer is not None
        frame = self._frame(0, method, result)
        self.committer.after(self.committer.kick(), conn.push, frame)

    def _on_burst(self, conn: _Connection, messages: list[bytes]) -> None:
        """The messages of one socket read: parsed, their signers recovered on two threads
        when there are several (:mod:`.signer_pool`), then handled in order."""
        if len(messages) < SignerPool.MIN_BURST or self._signers is None:
            for data in messages:
                self._on_frame(conn, data)
            return
        parsed: list[Incoming | FrameError] = []
        for data in messages:
            try:
                parsed.append(parse_incoming(data))
            except FrameError as exc:
                parsed.append(exc)
        self._signers.recover([p for p in parsed if isinstance(p, Incoming)])
        for item in parsed:
            self._on_frame(conn, item)

    def _on_frame(self, conn: _Connection, data: bytes | Incoming | FrameError) -> None:
        service = self.service
        committer = self.committer
        assert service is not None and committer is not None
        if committer.failure is not None:  # fail-stop: a frame already in flight is dropped
            return
        try:
            if isinstance(data, FrameError):
                raise data
            req = data if isinstance(data, Incoming) else parse_incoming(data)
        except FrameError as exc:
            frame = self._frame(exc.request_id, "error", {"error": exc.message})
            committer.after(committer.kick(), conn.push, frame)
            return
        try:
            outcome = service.handle(conn.session, req)
        except RelayError as exc:
            frame = self._frame(req.request_id, "error", {"error": exc.message})
            committer.after(committer.kick(), conn.push, frame)
            return
        except Exception:  # pragma: no cover - a bug: answer, log, keep serving
            _log.exception("relay handler failed on %s", req.method)
            frame = self._frame(req.request_id, "error", {"error": "internal error"})
            committer.after(committer.kick(), conn.push, frame)
            return
        wallet = outcome.authenticated
        if wallet is not None:
            self._forget(conn)
            conn.session.wallet = wallet
            self._by_wallet.setdefault(wallet, set()).add(conn)
        seq = committer.kick()
        committer.after(seq, conn.push, self._frame(req.request_id, outcome.method, outcome.result))
        if wallet is not None:  # ClearNode HandleAuthenticated: channels, then balances
            committer.after(
                seq, conn.push, self._frame(0, "channels", service.open_channels_json(wallet))
            )
            balances = {"balance_updates": service.balances_json(wallet)}
            committer.after(seq, conn.push, self._frame(0, "bu", balances))
        if outcome.notes:
            self.add_notes(seq, outcome.notes)

    # --- notifications ------------------------------------------------------------------------

    def add_notes(self, seq: int, notes: list[Note]) -> None:
        """Queue notifications to go out once batch ``seq`` has committed."""
        service = self.service
        assert service is not None and self.committer is not None
        pending = self._notes.get(seq)
        for note in notes:
            if note.wallet not in self._by_wallet:
                continue  # nobody to tell
            if pending is None:
                pending = self._notes[seq] = {}
            acc = pending.get(note.wallet)
            if acc is None:
                acc = pending[note.wallet] = _WalletNotes()
            if note.method == "bu":  # snapshot now (this batch's balances), format on send
                acc.balances = service.ledger.balances_of(note.wallet)
            elif note.method == "tr":
                acc.txs.extend(note.txs)
            else:
                acc.other.append((note.method, note.result))
        if pending is not None and seq <= self.committer.committed:
            self.committer.after(seq, self._emit_notes, seq)

    def _emit_notes(self, seq: int) -> None:
        """Batch ``seq`` (and all before it) committed: its notifications may go out."""
        for done in sorted(s for s in self._notes if s <= seq):
            for wallet, acc in self._notes.pop(done).items():
                ready = self._ready.get(wallet)
                if ready is None:
                    self._ready[wallet] = acc
                else:
                    ready.other.extend(acc.other)
                    ready.txs.extend(acc.txs)
                    if acc.balances is not None:
                        ready.balances = acc.balances
        if not self._ready:
            return
        delay = self.config.notify_delay
        if delay <= 0:
            self._flush_notes()
        elif self._notes_timer is None:
            self._notes_timer = asyncio.get_running_loop().call_later(delay, self._flush_notes)

    def _flush_notes(self) -> None:
        """Send what is ready: per wallet its ``cu``s, one ``bu`` (the latest balances) and one
        ``tr`` (every transaction since the last one)."""
        self._notes_timer = None
        ready, self._ready = self._ready, {}
        service = self.service
        assert service is not None
        for wallet, acc in ready.items():
            conns = self._by_wallet.get(wallet)
            if not conns:
                continue
            frames = [self._frame(0, method, result) for method, result in acc.other]
            if acc.balances is not None:
                updates = {"balance_updates": service.balances_to_json(acc.balances)}
                frames.append(self._frame(0, "bu", updates))
            if acc.txs:
                frames.append(self._frame(0, "tr", {"transactions": acc.txs}))
            for conn in conns:
                for frame in frames:
                    conn.push(frame)

    # --- node-side operations -----------------------------------------------------------------

    async def transfer_from(
        self, from_account: str, to_account: str, asset: str, units: int
    ) -> dict[str, Any]:
        """Pay from a node-held account (the faucet); returns the transaction once durable."""
        service, committer = self.service, self.committer
        if self._closing or service is None or committer is None:
            raise RelayUnavailableError("the relay node is not running")
        outcome = service.transfer_from(from_account, to_account, asset, units)
        seq = committer.kick()
        self.add_notes(seq, outcome.notes)
        await committer.wait(seq)
        tx: dict[str, Any] = outcome.result["transactions"][0]
        return tx

    async def sync_chain(self) -> int:
        """Read new custody events now (tests, the sandbox); the number applied."""
        if self.watcher is None:
            return 0
        return await self.watcher.poll()

    @property
    def connection_count(self) -> int:
        return len(self._connections)
