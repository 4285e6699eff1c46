"""A purpose-built relay client for the transfer benchmark: as little Python per frame as
the protocol allows, so the numbers show the relay and the protocol, not client overhead.

It drives websockets' sans-I/O :class:`~websockets.client.ClientProtocol` from an
:class:`asyncio.Protocol`: a reply is handled in ``data_received`` and the next request is
signed and written from the same callback (no task switch, one ``write`` per burst of
replies), the client half of pipelining. It still does the whole job
of a client: every request is signed by the session key over the exact ``req`` bytes, and
every frame from the relay (replies *and* ``bu``/``tr`` notifications) has its broker
signature recovered and compared as raw 20 bytes before it counts. Auth uses the library's
builders and parser; only the transfer loop is hand-rolled, and
``tests/integration/test_benchmarks_smoke.py`` checks its frames against the library's.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, cast

import coincurve
import orjson
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response as HttpResponse
from websockets.uri import parse_uri

from settlement_widgets._keccak import keccak256
from settlement_widgets.channel.v0_5.core import rpc
from settlement_widgets.channel.v0_5.core.auth import AuthPolicy
from settlement_widgets.keys import PrivateKey

__all__ = ["LeanRelayClient", "PhaseResult", "SansIOClient", "transfer_request"]

_RES_PREFIX = b'{"res":'
_SIG_MARK = b',"sig":'


def transfer_request(
    key: coincurve.PrivateKey, request_id: int, params: dict[str, Any], timestamp: int
) -> bytes:
    """One signed ``transfer`` frame: ``{"req":[id,"transfer",params,ts],"sig":["0x.."]}``.

    orjson writes the compact, insertion-ordered text ``JSON.stringify`` writes for this shape
    (strings and integers only), so the signature covers exactly what the SDK would send;
    the smoke test asserts equality with :func:`settlement_widgets.channel.v0_5.core.messages.
    transfer_message`.
    """
    req = orjson.dumps([request_id, "transfer", params, timestamp])
    sig = key.sign_recoverable(keccak256(req), hasher=None)
    v = b"1c" if sig[64] else b"1b"
    return b'{"req":' + req + b',"sig":["0x' + sig[:64].hex().encode() + v + b'"]}'


@dataclass
class PhaseResult:
    """What one timed phase measured (latencies in nanoseconds, in completion order)."""

    count: int
    wall_s: float
    latencies_ns: list[int]
    client_cpu_s: float
    notifications: int
    largest_burst: int = 0
    errors: list[str] = field(default_factory=list)


class SansIOClient(asyncio.Protocol):
    """A WebSocket client connection: websockets' sans-I/O protocol under an asyncio
    :class:`~asyncio.Protocol`. Subclasses get whole text messages in :meth:`on_message`
    and :meth:`after_burst` once per ``data_received``; :meth:`send` queues a frame, which
    goes out (with everything else queued in the same callback) in one ``write``."""

    def __init__(self, url: str) -> None:
        self._uri = parse_uri(url)
        self._proto = ClientProtocol(self._uri, max_size=1 << 22)
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._open: asyncio.Future[None] = self._loop.create_future()
        self._closed: asyncio.Future[None] = self._loop.create_future()
        self._fragments: list[bytes] = []

    async def _connect(self) -> None:
        await self._loop.create_connection(lambda: self, self._uri.host, self._uri.port)
        await asyncio.wait_for(self._open, 10)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        if hasattr(transport, "max_size"):  # 256 KiB reads cost mmap+mremap+munmap each
            setattr(transport, "max_size", 64 * 1024)  # noqa: B010
        proto = self._proto
        proto.send_request(proto.connect())
        self.write_pending()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._closed.done():
            self._closed.set_result(None)
        if not self._open.done():
            self._open.set_exception(ConnectionError("connection lost during the handshake"))
        self.on_lost()

    def on_lost(self) -> None:
        """The connection is gone (fail whatever waits)."""

    def write_pending(self) -> None:
        chunks = self._proto.data_to_send()
        if chunks and self._transport is not None:
            data = b"".join(chunks)
            if data:
                self._transport.write(data)

    def send(self, payload: bytes) -> None:
        self._proto.send_text(payload)

    async def close(self) -> None:
        if self._transport is None:
            return
        try:
            self._proto.send_close()
            self.write_pending()
            await asyncio.wait_for(asyncio.shield(self._closed), 2)
        except Exception:  # closing a benchmark connection is best effort
            pass
        finally:
            self._transport.close()

    def data_received(self, data: bytes) -> None:
        proto = self._proto
        proto.receive_data(data)
        for event in proto.events_received():
            if isinstance(event, HttpResponse):
                if event.status_code == 101 and not self._open.done():
                    self._open.set_result(None)
                elif not self._open.done():
                    self._open.set_exception(ConnectionError(f"handshake {event.status_code}"))
                continue
            if not isinstance(event, Frame):
                continue
            opcode = event.opcode
            if opcode is Opcode.TEXT or opcode is Opcode.CONT:
                if not event.fin:
                    self._fragments.append(bytes(event.data))
                    continue
                payload = bytes(event.data)
                if self._fragments:
                    self._fragments.append(payload)
                    payload = b"".join(self._fragments)
                    self._fragments = []
                self.on_message(payload)
        self.after_burst()
        self.write_pending()  # replies, pongs, close frames

    def on_message(self, payload: bytes) -> None:
        raise NotImplementedError

    def after_burst(self) -> None:
        """Called once per read, after its messages."""


class LeanRelayClient(SansIOClient):
    """One authenticated connection to a relay; :meth:`run_transfers` times a phase."""

    def __init__(self, url: str, broker: str) -> None:
        super().__init__(url)
        self._broker20 = bytes.fromhex(broker[2:])
        self._calls: dict[int, asyncio.Future[rpc.Response]] = {}
        self._notes: list[rpc.Response] = []
        self._note_waiters: list[tuple[str, asyncio.Future[rpc.Response]]] = []
        self._phase: _Phase | None = None
        self.bad_signatures = 0

    @classmethod
    async def connect(cls, url: str, broker: str) -> LeanRelayClient:
        client = cls(url, broker)
        await client._connect()
        return client

    def on_lost(self) -> None:
        for fut in self._calls.values():
            if not fut.done():
                fut.set_exception(ConnectionError("relay connection lost"))
        if self._phase is not None and not self._phase.done.done():
            self._phase.done.set_exception(ConnectionError("relay connection lost mid-phase"))

    def on_message(self, payload: bytes) -> None:
        phase = self._phase
        if phase is not None:
            phase.on_frame(payload)
        else:
            self._on_slow_frame(payload)

    def after_burst(self) -> None:
        if self._phase is not None:
            self._phase.flush()

    def _on_slow_frame(self, payload: bytes) -> None:
        """Outside a timed phase: the library's parser and verifier (the reference path)."""
        res = rpc.parse_response(payload)
        res.verify("0x" + self._broker20.hex())
        fut = self._calls.pop(res.request_id, None) if res.request_id else None
        if fut is not None:
            if not fut.done():
                fut.set_result(res)
            return
        self._notes.append(res)
        for method, waiter in list(self._note_waiters):
            if method == res.method and not waiter.done():
                waiter.set_result(res)
                self._note_waiters.remove((method, waiter))

    async def call(self, req: rpc.Request, timeout: float = 20.0) -> rpc.Response:
        fut: asyncio.Future[rpc.Response] = self._loop.create_future()
        self._calls[req.request_id] = fut
        self.send(req.to_frame().encode())
        self.write_pending()
        return await asyncio.wait_for(fut, timeout)

    async def notification(self, method: str, timeout: float = 20.0) -> rpc.Response:
        for note in self._notes:
            if note.method == method:
                return note
        fut: asyncio.Future[rpc.Response] = self._loop.create_future()
        self._note_waiters.append((method, fut))
        return await asyncio.wait_for(fut, timeout)

    async def authenticate(
        self, wallet: PrivateKey, session_key: PrivateKey, allowances: tuple[tuple[str, str], ...]
    ) -> None:
        """auth_request -> EIP-712 signed auth_verify (library path), then the first ``bu``."""
        policy = AuthPolicy(
            wallet.address,
            session_key.address,
            "settlement_widgets benchmark",
            allowances,  # type: ignore[arg-type]
            int(time.time()) + 3600,
            "benchmark",
        )
        challenge = await self.call(policy.request())
        challenge.raise_for_error()
        reply = await self.call(
            policy.verify_request(challenge.result["challenge_message"], wallet)
        )
        reply.raise_for_error()
        await self.notification("bu")

    # --- the timed phase ----------------------------------------------------------------------

    async def run_transfers(
        self,
        session_key: PrivateKey,
        destination: str,
        asset: str,
        amount: str,
        count: int,
        window: int,
        first_id: int,
    ) -> PhaseResult:
        """Send ``count`` transfers keeping ``window`` in flight; every reply verified."""
        phase = _Phase(self, session_key, destination, asset, amount, count, window, first_id)
        self._phase = phase
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        phase.start()
        self.write_pending()
        try:
            await phase.done
        finally:
            self._phase = None
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        return PhaseResult(
            count=phase.completed,
            wall_s=wall,
            latencies_ns=phase.latencies,
            client_cpu_s=cpu,
            notifications=phase.notifications,
            largest_burst=phase.largest_burst,
            errors=phase.errors,
        )


class _Phase:
    """The hot loop: sign, send, verify; kept in one object so the callbacks stay small."""

    def __init__(
        self,
        client: LeanRelayClient,
        session_key: PrivateKey,
        destination: str,
        asset: str,
        amount: str,
        count: int,
        window: int,
        first_id: int,
    ) -> None:
        self.client = client
        self.key: coincurve.PrivateKey = session_key._key  # parsed once, reused
        self.params = {
            "destination": destination,
            "allocations": [{"asset": asset, "amount": amount}],
        }
        self.count = count
        self.window = max(1, window)
        self.next_id = first_id
        self.last_id = first_id + count - 1
        self.sent_at: dict[int, int] = {}
        self.order: deque[int] = deque()
        self.latencies: list[int] = []
        self.completed = 0
        self.notifications = 0
        self.largest_burst = 0
        self.burst = 0
        self.errors: list[str] = []
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.broker20 = client._broker20

    def start(self) -> None:
        for _ in range(min(self.window, self.count)):
            self._send_one()

    def _send_one(self) -> None:
        rid = self.next_id
        self.next_id += 1
        self.sent_at[rid] = time.perf_counter_ns()  # the latency includes signing
        frame = transfer_request(self.key, rid, self.params, time.time_ns() // 1_000_000)
        self.client.send(frame)

    def on_frame(self, payload: bytes) -> None:
        """Verify one relay frame (exact ``res`` bytes, broker signature) and account for it."""
        if not payload.startswith(_RES_PREFIX) or not payload.endswith(b"}"):
            self._fail(f"unexpected frame {payload[:80]!r}")
            return
        cut = payload.rfind(_SIG_MARK)
        raw = payload[7:cut]
        try:
            res = orjson.loads(raw)  # parse exactly the bytes the signature covers
            sigs = orjson.loads(payload[cut + 7 : -1])
            sig = bytes.fromhex(sigs[0][2:])
            compact = sig[:64] + bytes((sig[64] - 27,))
            public = coincurve.PublicKey.from_signature_and_message(
                compact, keccak256(raw), hasher=None
            )
        except Exception as exc:  # any malformed frame fails the run
            self._fail(f"bad frame: {exc}")
            return
        if keccak256(public.format(compressed=False)[1:])[-20:] != self.broker20:
            self.client.bad_signatures += 1
            self._fail("frame not signed by the broker")
            return
        rid = res[0]
        if rid == 0:
            self.notifications += 1
            return
        sent = self.sent_at.pop(rid, None)
        if sent is None:
            self._fail(f"reply to an unknown request {rid}")
            return
        if res[1] != "transfer":
            self._fail(f"transfer {rid} refused: {res[2]}")
            return
        self.latencies.append(time.perf_counter_ns() - sent)
        self.completed += 1
        self.burst += 1
        if self.next_id <= self.last_id:
            self._send_one()
        elif self.completed == self.count and not self.done.done():
            self.done.set_result(None)

    def flush(self) -> None:
        if self.burst > self.largest_burst:
            self.largest_burst = self.burst
        self.burst = 0

    def _fail(self, message: str) -> None:
        self.errors.append(message)
        if not self.done.done():
            self.done.set_exception(RuntimeError(message))
