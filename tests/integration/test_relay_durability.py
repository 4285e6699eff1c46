"""The relay's durability promise, observed inside the node (in-process :class:`RelayNode`).

- ``durability="full"`` commits through a WAL connection with ``synchronous=FULL``,
  ``"normal"`` with ``synchronous=NORMAL``; both inline on the loop by default, or on the
  writer thread with ``commit_thread=True`` (``"full+thread"`` here). The PRAGMAs are read on
  the very connection the committer hands to ``write_batch``.
- A reply goes out only after the COMMIT of the batch holding its change returned. An ordered
  log records every ``write_batch`` the committer runs (after the real call returned) and
  every frame the node hands to a connection; for sequential and pipelined transfers each
  reply must come after the COMMIT of its transaction. A COMMIT held in place (the writer
  blocked on an event) shows the client has no reply meanwhile: a probe frame the node writes
  once the COMMIT has begun reaches the client with no reply ahead of it.
- A failing COMMIT (SQLite's own ``SQLITE_FULL`` from a capped ``max_page_count``, or a
  write refused by ``query_only``, on the writer connection) is fail-stop: nothing of the
  failed batch nor after it is acknowledged, the node closes its server, and a node restarted
  on the same file holds exactly what was acknowledged, takes the unanswered requests anew
  and serves again.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import websockets
from relay_helpers import ASSET, RelayTestClient, relay_config

from settlement_widgets.channel.node_base import committer as committer_module
from settlement_widgets.channel.v0_5.core import messages as M
from settlement_widgets.channel.v0_5.core.amounts import parse_decimal_amount, to_decimal_string
from settlement_widgets.channel.v0_5.core.rpc import Request, Response, now_ms
from settlement_widgets.channel.v0_5.node import RelayConfig, RelayNode
from settlement_widgets.channel.v0_5.node import ledger as ledger_module
from settlement_widgets.channel.v0_5.node import server as server_module
from settlement_widgets.channel.v0_5.node.ledger import Batch
from settlement_widgets.errors import UnavailableError
from settlement_widgets.keys import PrivateKey

ALICE = PrivateKey("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
BOB = PrivateKey("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")
CAROL = PrivateKey("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a")
TIMEOUT = 20.0
SEED = 1_000_000_000 * 10**6  # what a fresh ledger gives the faucet account (ALICE here)
#: durability, and "+thread" for the writer-thread COMMIT (``RelayConfig.commit_thread``)
DURABILITY = ["full", "full+thread", "normal"]
#: the error SQLite raises for each way the disk can fail under the writer
FAULTS = {
    "disk_full": "database or disk is full",
    "read_only": "attempt to write a readonly database",
}


# --- the node's ordered log ----------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """``commit`` (``write_batch`` returned), ``failed`` (it raised), ``stopped`` (the node
    learnt of the failure) or ``sent`` (a frame handed to an open connection)."""

    kind: str
    seq: int = 0
    #: ids of the batch's ``transfer`` transactions / of the transactions a reply names
    tx_ids: tuple[int, ...] = ()
    request_id: int = 0
    method: str = ""
    error: str = ""


@dataclass
class Hold:
    """Blocks the first ``write_batch`` whose batch ``match``es before it writes anything."""

    match: Callable[[Batch], bool]
    #: runs in the committing thread once the batch is held (before ``entered`` is set)
    on_enter: Callable[[], None] | None = None
    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    seq: int = 0


@dataclass(frozen=True)
class Write:
    """What one ``write_batch`` saw on the connection it was given."""

    conn: sqlite3.Connection
    synchronous: int
    journal_mode: str
    thread: str


class NodeLog:
    """The committer's writes and the node's outgoing frames, in the order they happened
    (both threads append under one lock)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.writes: list[Write] = []
        self.writer_conns: list[sqlite3.Connection] = []
        self.hold: Hold | None = None
        #: ``disk_full`` / ``read_only``: break the writer connection before its next write
        self.fault: str | None = None
        self._faulted = False
        self._lock = threading.Lock()
        self._handled: set[int] = set()
        self._handled_changed = threading.Condition(self._lock)

    def add(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def sent(self, frame: bytes) -> None:
        request_id, method, result, _ = orjson.loads(frame)["res"]
        tx_ids: tuple[int, ...] = ()
        if method == "transfer":
            tx_ids = tuple(int(tx["id"]) for tx in result["transactions"])
        self.add(Event("sent", request_id=request_id, method=method, tx_ids=tx_ids))

    def handled(self, data: bytes) -> None:
        with contextlib.suppress(Exception):
            request_id = int(orjson.loads(data)["req"][0])
            with self._handled_changed:
                self._handled.add(request_id)
                self._handled_changed.notify_all()

    def wait_handled(self, request_ids: set[int]) -> bool:
        """Block until the node has handled every request of ``request_ids`` (thread side)."""
        with self._handled_changed:
            return self._handled_changed.wait_for(
                lambda: request_ids <= self._handled, timeout=TIMEOUT
            )

    def before_write(self, conn: sqlite3.Connection, batch: Batch) -> None:
        """Runs in the committing thread on the committer's own connection."""
        self.writes.append(
            Write(
                conn,
                int(conn.execute("PRAGMA synchronous").fetchone()[0]),
                str(conn.execute("PRAGMA journal_mode").fetchone()[0]),
                threading.current_thread().name,
            )
        )
        hold = self.hold
        if hold is not None and hold.match(batch):
            self.hold = None
            hold.seq = batch.seq
            if hold.on_enter is not None:
                hold.on_enter()
            hold.entered.set()
            if not hold.release.wait(TIMEOUT):
                raise RuntimeError("the test never released the held COMMIT")
        if self.fault is not None and not self._faulted:
            self._faulted = True
            if self.fault == "read_only":
                conn.execute("PRAGMA query_only = ON")
            else:  # no page beyond those the file has: the next page it needs is SQLITE_FULL
                pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
                conn.execute(f"PRAGMA max_page_count = {pages}")

    def index(self, kind: str) -> int:
        return next(i for i, e in enumerate(self.events) if e.kind == kind)

    def committed(self) -> set[int]:
        return {t for e in self.events if e.kind == "commit" for t in e.tx_ids}


@pytest.fixture
def node_log(monkeypatch: pytest.MonkeyPatch) -> NodeLog:
    """Instrument the relay ledger's ``write_batch`` (as the committer calls it), its writer
    connection, the node's frame pushes, request handling and failure hook."""
    log = NodeLog()
    real_write = ledger_module.write_batch

    def write_batch(conn: sqlite3.Connection, batch: Batch) -> None:
        tx_ids = tuple(tx.id for tx in batch.txs if tx.tx_type == "transfer")
        log.before_write(conn, batch)
        try:
            real_write(conn, batch)
        except BaseException as exc:
            log.add(Event("failed", batch.seq, tx_ids, error=str(exc)))
            raise
        log.add(Event("commit", batch.seq, tx_ids))

    real_connection = committer_module._writer_connection

    def writer_connection(ledger: Any) -> Any:
        conn = real_connection(ledger)
        log.writer_conns.append(conn)
        return conn

    real_push = server_module._Connection.push

    def push(self: Any, frame: bytes) -> None:
        if not self.closed:
            log.sent(frame)
        real_push(self, frame)

    real_on_frame = RelayNode._on_frame

    def on_frame(self: RelayNode, conn: Any, data: bytes) -> None:
        try:
            real_on_frame(self, conn, data)
        finally:
            log.handled(data)

    real_on_failure = RelayNode._on_commit_failure

    def on_failure(self: RelayNode, error: BaseException) -> None:
        log.add(Event("stopped", error=str(error)))
        real_on_failure(self, error)

    monkeypatch.setattr(ledger_module, "write_batch", write_batch)
    monkeypatch.setattr(committer_module, "_writer_connection", writer_connection)
    monkeypatch.setattr(server_module._Connection, "push", push)
    monkeypatch.setattr(RelayNode, "_on_frame", on_frame)
    monkeypatch.setattr(RelayNode, "_on_commit_failure", on_failure)
    return log


def assert_replies_follow_commits(log: NodeLog, request_ids: set[int]) -> dict[int, int]:
    """Every transfer reply was handed to its connection after the COMMIT holding its
    transaction returned; each request in ``request_ids`` was answered. Returns request id ->
    transaction id."""
    committed: set[int] = set()
    answered: dict[int, int] = {}
    for event in list(log.events):
        if event.kind == "commit":
            committed.update(event.tx_ids)
        elif event.kind == "sent" and event.method == "transfer":
            (tx_id,) = event.tx_ids
            assert tx_id in committed, (
                f"the reply to request {event.request_id} (tx {tx_id}) went out before the "
                "COMMIT of its batch returned"
            )
            answered[event.request_id] = tx_id
    assert request_ids <= set(answered), f"unanswered: {request_ids - set(answered)}"
    return answered


# --- nodes and clients ---------------------------------------------------------------------


def config(db: Path, durability: str) -> RelayConfig:
    mode, _, thread = durability.partition("+")
    return relay_config(
        db, durability=mode, faucet_account=ALICE.address, commit_thread=bool(thread)
    )


@contextlib.asynccontextmanager
async def running(cfg: RelayConfig) -> AsyncIterator[RelayNode]:
    node = RelayNode(cfg)
    await node.start()
    try:
        yield node
    finally:
        await asyncio.wait_for(node.aclose(), TIMEOUT)


class RelayThread:
    """A :class:`RelayNode` on an event loop of its own thread: a COMMIT held on the node's
    loop (the inline committer of ``"normal"``) does not stop the test's client."""

    def __init__(self, cfg: RelayConfig) -> None:
        self.config = cfg
        self.node: RelayNode | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=self._run, name="relay-node-loop", daemon=True)
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported by start()/stop()
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        node = RelayNode(self.config)
        await node.start()
        self.node = node
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await node.aclose()

    async def start(self) -> RelayNode:
        self.thread.start()
        assert await asyncio.to_thread(self._ready.wait, TIMEOUT), "the relay did not start"
        if self._error is not None:
            raise self._error
        assert self.node is not None
        return self.node

    async def stop(self) -> None:
        if self.loop is not None and self._stop is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self._stop.set)
        await asyncio.to_thread(self.thread.join, TIMEOUT)
        assert not self.thread.is_alive(), "the relay thread did not stop"
        if self._error is not None:
            raise self._error


class StreamClient(RelayTestClient):
    """A test client that knows when the node closed its connection."""

    closed = False

    async def _read(self) -> None:
        try:
            await super()._read()
        except websockets.ConnectionClosed:
            pass
        finally:
            async with self._changed:
                self.closed = True
                self._changed.notify_all()

    async def settle(self, request_id: int) -> Response | None:
        """The reply to ``request_id``, or None once the connection closed without one."""

        async def scan() -> Response | None:
            async with self._changed:
                while True:
                    for frame in self.frames:
                        if frame.request_id == request_id:
                            return frame
                    if self.closed:
                        return None
                    await self._changed.wait()

        return await asyncio.wait_for(scan(), TIMEOUT)

    async def wait_closed(self) -> None:
        async def closed() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: self.closed)

        await asyncio.wait_for(closed(), TIMEOUT)


def transfer(client: RelayTestClient, units: int = 1, to: PrivateKey = BOB) -> Request:
    """ALICE pays ``units`` smallest units to ``to`` (future-dated: still fresh when it is
    sent again to a restarted node)."""
    return M.transfer_message(
        ALICE,
        [(ASSET, to_decimal_string(units, 6))],
        destination=to.address,
        request_id=client.next_id(),
        timestamp=now_ms() + 30_000,
    )


def stored_transfers(db: Path) -> dict[int, tuple[str, str, int]]:
    """``transfer`` rows of the file itself: id -> (from, to, units)."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT id, from_account, to_account, amount FROM transactions "
            "WHERE tx_type = 'transfer'"
        ).fetchall()
    return {int(i): (a, b, int(v)) for i, a, b, v in rows}


def stored_balances(db: Path) -> dict[str, int]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT account, amount FROM balances WHERE asset = ?", (ASSET,))
        return {a: int(v) for a, v in rows.fetchall()}


def parked_replies(node: RelayNode) -> dict[int, int]:
    """Request id -> batch seq of every reply the committer holds back."""
    assert node.committer is not None
    out: dict[int, int] = {}
    for seq, callback, args in list(node.committer._parked):
        if isinstance(getattr(callback, "__self__", None), server_module._Connection):
            request_id = orjson.loads(args[0])["res"][0]
            if request_id:
                out[request_id] = seq
    return out


# --- 1. the synchronous level -------------------------------------------------------------


@pytest.mark.parametrize(
    ("durability", "levels", "thread_prefix"),
    [
        ("full", {2, 3}, "MainThread"),
        ("full+thread", {2, 3}, "relay-writer-"),
        ("normal", {1}, "MainThread"),
    ],
)
async def test_the_writer_connection_runs_the_configured_synchronous_level(
    tmp_path: Path, node_log: NodeLog, durability: str, levels: set[int], thread_prefix: str
) -> None:
    async with running(config(tmp_path / "relay.sqlite", durability)) as node:
        tx = await node.transfer_from(ALICE.address, BOB.address, ASSET, 5)
    assert node_log.writes, "the committer wrote nothing"
    (writer,) = node_log.writer_conns  # one connection commits everything
    for write in node_log.writes:
        assert write.conn is writer
        # FULL = 2 (EXTRA = 3): a COMMIT fsyncs the WAL; NORMAL = 1: it does not
        assert write.synchronous in levels, (durability, write.synchronous)
        assert write.journal_mode == "wal"
        assert write.thread.startswith(thread_prefix)  # the writer thread, or inline
    assert int(tx["id"]) in node_log.committed()


# --- 2. replies only after their COMMIT --------------------------------------------------


@pytest.mark.parametrize("durability", DURABILITY)
@pytest.mark.parametrize("pattern", ["sequential", "pipelined"])
async def test_every_transfer_reply_follows_the_commit_of_its_batch(
    tmp_path: Path, node_log: NodeLog, durability: str, pattern: str
) -> None:
    async with (
        running(config(tmp_path / "relay.sqlite", durability)) as node,
        RelayTestClient(node.url, node.broker_address) as client,
    ):
        await client.authenticate(ALICE, ALICE, application="clearnode", allowances=())
        reqs = [transfer(client) for _ in range(40)]
        if pattern == "sequential":
            for req in reqs:
                assert (await client.call(req)).method == "transfer"
        else:
            for req in reqs:
                await client.send_raw(req.to_frame())
            for req in reqs:
                assert (await client.reply(req.request_id)).method == "transfer"
        answered = assert_replies_follow_commits(node_log, {r.request_id for r in reqs})
        # the client got what the log says went out
        for req in reqs:
            reply = await client.reply(req.request_id)
            assert reply.result["transactions"][0]["id"] == answered[req.request_id]
    assert set(stored_transfers(tmp_path / "relay.sqlite")) == set(answered.values())


@pytest.mark.parametrize("durability", DURABILITY)
async def test_a_held_commit_holds_the_reply_until_it_returns(
    tmp_path: Path, node_log: NodeLog, durability: str
) -> None:
    relay = RelayThread(config(tmp_path / "relay.sqlite", durability))
    node = await relay.start()
    hold = Hold(lambda batch: any(tx.tx_type == "transfer" for tx in batch.txs))
    probes = 0

    def probe() -> None:
        """A broker-signed notification written to the client's socket at once, bypassing
        the committer: whatever the node wrote before it reaches the client first."""
        nonlocal probes
        probes += 1
        (conn,) = node._connections
        conn.push(node._frame(0, "probe", {"n": probes}))
        conn._flush()

    def probe_from_any_thread() -> None:
        assert relay.loop is not None
        if threading.current_thread() is relay.thread:
            probe()  # inline: the COMMIT runs on the node's loop, which is blocked now
        else:
            relay.loop.call_soon_threadsafe(probe)  # "+thread": the writer thread

    hold.on_enter = probe_from_any_thread
    try:
        async with RelayTestClient(node.url, node.broker_address) as client:
            await client.authenticate(ALICE, ALICE, application="clearnode", allowances=())
            node_log.hold = hold
            first = transfer(client)
            await client.send_raw(first.to_frame())
            assert await asyncio.to_thread(hold.entered.wait, TIMEOUT), "no COMMIT was held"
            await client.wait_for(lambda f: f.method == "probe")
            assert [f for f in client.frames if f.request_id == first.request_id] == []
            # the reply exists, signed, parked behind the held batch
            assert parked_replies(node) == {first.request_id: hold.seq}
            assert first.request_id not in {e.request_id for e in node_log.events}

            ping = M.ping_message(request_id=client.next_id())
            second = transfer(client)
            await client.send_raw(ping.to_frame())
            await client.send_raw(second.to_frame())
            if durability.endswith("+thread"):
                # the loop is free: it handles both, and answers neither while batch n is held;
                # the pong waits for the write it may have observed, the transfer for batch n+1
                assert await asyncio.to_thread(
                    node_log.wait_handled, {ping.request_id, second.request_id}
                )
                probe_from_any_thread()
                await client.wait_for(lambda f: f.method == "probe" and f.result["n"] == 2)
                answered = {f.request_id for f in client.frames}
                assert answered.isdisjoint({first.request_id, ping.request_id, second.request_id})
                assert parked_replies(node) == {
                    first.request_id: hold.seq,
                    ping.request_id: hold.seq,
                    second.request_id: hold.seq + 1,
                }
            hold.release.set()
            replies = [
                await client.reply(r.request_id) for r in (first, ping, second)
            ]  # in the order sent
            positions = [client.frames.index(r) for r in replies]
            assert positions == sorted(positions)
            assert [r.method for r in replies] == ["transfer", "pong", "transfer"]
            assert_replies_follow_commits(node_log, {first.request_id, second.request_id})
    finally:
        hold.release.set()
        await relay.stop()


# --- 4. a failing COMMIT ------------------------------------------------------------------

WINDOW = 16
ARM_AT = 24  # the fault is armed once this many stream transfers were sent
STREAM = 300


async def _stream(client: StreamClient, reqs: list[Request], arm: Callable[[], None]) -> None:
    """Pipeline ``reqs`` (at most WINDOW unanswered) until the node closes the connection."""
    for i, req in enumerate(reqs):
        if i >= WINDOW and await client.settle(reqs[i - WINDOW].request_id) is None:
            return
        if i == ARM_AT:
            arm()
        try:
            await client.send_raw(req.to_frame())
        except websockets.ConnectionClosed:
            return


@pytest.mark.parametrize("durability", DURABILITY)
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_failing_commit_acknowledges_nothing_more_and_stops_the_node(
    tmp_path: Path, node_log: NodeLog, durability: str, fault: str
) -> None:
    db = tmp_path / "relay.sqlite"
    cfg = config(db, durability)
    node = RelayNode(cfg)
    await node.start()
    try:
        client = StreamClient(node.url, node.broker_address)
        bystander = StreamClient(node.url, node.broker_address)
        async with client, bystander:
            await client.authenticate(ALICE, ALICE, application="clearnode", allowances=())
            for _ in range(5):  # sequential, acknowledged before anything fails
                assert (await client.call(transfer(client))).method == "transfer"
            reqs = [transfer(client) for _ in range(STREAM)]

            def arm() -> None:
                node_log.fault = fault

            await _stream(client, reqs, arm)
            await client.wait_closed()
            await bystander.wait_closed()  # every connection is closed, not just the writer's

            committer = node.committer
            assert committer is not None
            failure = committer.failure
            assert isinstance(failure, sqlite3.OperationalError), failure
            assert FAULTS[fault] in str(failure)  # SQLite's own reason, not a follow-up error
            (failed,) = [e for e in node_log.events if e.kind == "failed"]
            assert FAULTS[fault] in failed.error

            # stopped: no new connection, no node-side payout
            with pytest.raises(OSError):
                async with websockets.connect(node.url, open_timeout=TIMEOUT):
                    pass
            with pytest.raises(UnavailableError):
                await node.transfer_from(ALICE.address, CAROL.address, ASSET, 1)
    finally:
        await asyncio.wait_for(node.aclose(), TIMEOUT)

    # --- what the clients saw, against what the node committed
    stream_ids = {r.request_id for r in reqs}
    acked = {
        f.request_id: int(f.result["transactions"][0]["id"])
        for f in client.frames
        if f.method == "transfer"
    }
    assert not [f for f in client.frames if f.request_id in stream_ids and f.is_error]
    committed = node_log.committed()
    failed_ids = set(failed.tx_ids)
    assert failed_ids, "the failed batch held no transfer"
    assert failed_ids.isdisjoint(acked.values())  # nothing of the failed batch acknowledged
    assert set(acked.values()) == committed  # and everything committed was acknowledged
    assert len(failed_ids) <= len(stream_ids - set(acked))
    events = node_log.events
    at_failure, at_stop = node_log.index("failed"), node_log.index("stopped")
    assert at_failure < at_stop
    assert not [e for e in events[at_failure:] if e.kind == "commit"]  # the writer stopped
    late = [e for e in events[at_stop:] if e.kind == "sent" and e.request_id != 0]
    assert late == []  # fail-stop: no reply of any kind once the node knew
    assert_replies_follow_commits(node_log, set(acked))
    notified = {
        int(tx["id"]) for f in client.frames if f.method == "tr" for tx in f.result["transactions"]
    }
    assert notified.isdisjoint(failed_ids)

    # --- the file holds exactly what was acknowledged: the failed batch was rolled back whole
    stored = stored_transfers(db)
    assert set(stored) == set(acked.values())
    assert all(row == (ALICE.address, BOB.address, 1) for row in stored.values())
    balances = stored_balances(db)
    assert balances[BOB.address] == len(acked)
    assert balances[ALICE.address] == SEED - len(acked)

    # --- restarted on the same file (the disk fixed): serves, and the unanswered transfers
    # were never durable, so they are taken anew; an acknowledged one is a replay
    unanswered = [r for r in reqs if r.request_id not in acked][:20]
    async with running(cfg) as node, RelayTestClient(node.url, node.broker_address) as again:
        await again.authenticate(ALICE, ALICE, application="clearnode", allowances=())
        for req in unanswered:
            assert (await again.call(req)).method == "transfer"
        replayed = next(r for r in reqs if r.request_id in acked)
        refused = await again.call(replayed)
        assert refused.error == "operation denied: the request has already been processed"
        fresh = await again.call(transfer(again))
        assert fresh.method == "transfer"
        bob = await again.call(M.get_ledger_balances_message(ALICE, account_id=BOB.address))
        total = len(acked) + len(unanswered) + 1
        (entry,) = bob.result["ledger_balances"]
        assert entry["asset"] == ASSET and parse_decimal_amount(entry["amount"], 6) == total
    assert len(stored_transfers(db)) == total


# --- a waiter cancelled before the failure does not stall the fail-stop -------------------


@pytest.mark.parametrize("durability", DURABILITY)
async def test_a_cancelled_waiter_does_not_stall_the_fail_stop(
    tmp_path: Path, node_log: NodeLog, durability: str
) -> None:
    """A payout whose caller gave up (cancelled while its batch commits) must not keep the
    failure from reaching the waiters behind it and the node's failure hook."""
    async with running(config(tmp_path / "relay.sqlite", durability)) as node:
        node_log.fault = "read_only"  # the next COMMIT fails
        loop = asyncio.get_running_loop()
        if durability.endswith("+thread"):
            hold = Hold(lambda batch: bool(batch.txs))
            node_log.hold = hold
            first = asyncio.create_task(node.transfer_from(ALICE.address, BOB.address, ASSET, 1))
            assert await asyncio.to_thread(hold.entered.wait, TIMEOUT)  # batch n is held
            # the loop runs these in order: the second payout parks on batch n + 1, the
            # first (parked on batch n) is cancelled, then the writer goes on and fails
            second = asyncio.create_task(node.transfer_from(ALICE.address, CAROL.address, ASSET, 2))
            loop.call_soon(first.cancel)
            loop.call_soon(hold.release.set)
        else:
            # the loop runs these in order before the inline COMMIT the first one schedules:
            # both park, the first is cancelled, then the COMMIT runs and fails
            first = asyncio.create_task(node.transfer_from(ALICE.address, BOB.address, ASSET, 1))
            second = asyncio.create_task(node.transfer_from(ALICE.address, CAROL.address, ASSET, 2))
            loop.call_soon(first.cancel)
        with pytest.raises(UnavailableError, match="ledger commit failed"):
            await asyncio.wait_for(second, TIMEOUT)
        with pytest.raises(asyncio.CancelledError):
            await first
        assert node.committer is not None and node.committer.failure is not None
        assert [e.kind for e in node_log.events].count("stopped") == 1  # the server closed
        with pytest.raises(OSError):
            async with websockets.connect(node.url, open_timeout=TIMEOUT):
                pass
