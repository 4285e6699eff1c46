"""``V1RpcClient``: the Nitrolite v1 (Nitronode) client over one WebSocket.

Why it is shaped like this: everything a v1 call sends and how it reads the answer is
protocol logic, and lives in the pure client core
(:class:`~settlement_widgets.channel.v1.core.client_calls.V1ClientCore`), which reproduces the
SDK's frames byte for byte (the ``rpc_client_frames`` vectors). This module only adds the I/O
the core asks for through its one transport method, :meth:`V1RpcClient.exchange`:

- one connection, opened on first use (or :meth:`connect`) and reopened on the next request
  after a drop. v1 has no login, so nothing has to be replayed on a new connection;
- replies matched to requests by id; a frame whose id is not pending is an event (the SDK
  routes it the same way), delivered to :attr:`V1RpcClient.events` and to
  :meth:`V1RpcClient.on_event` callbacks. Nitronode v1.4.1 sends none, but a type-4
  ``invalid message format`` reply (id 0) lands there too;
- a type-4 reply raises :class:`~settlement_widgets.errors.RelayError` with the node's text;
- no answer within ``request_timeout`` raises
  :class:`~settlement_widgets.errors.SettlementTimeoutError`; a lost connection fails every
  pending request with :class:`~settlement_widgets.errors.RelayUnavailableError` (the request
  may or may not have been applied: read the latest state before retrying a signed one);
- requests are paced by a client-side token bucket matching the node's per-connection limit
  (10 requests/s, burst 20, Nitrolite v1.4.1 ``nitronode/runtime.go``), so a burst of
  provider calls waits instead of tripping it; a request the node still refuses with
  ``rate limit exceeded`` is retried after a back-off (logged as a warning), at most
  ``rate_limit_retries`` times, then :class:`RateLimitedError`;
- a first frame shaped like v0.5 (a JSON object, ``{…}``: a ClearNode pushes ``assets`` on
  connect and answers a v1 frame with an object) raises
  :class:`~settlement_widgets.errors.RelayProtocolError`, and the
  client does not reconnect to it.

All typed methods (``node_v1_*``, ``user_v1_*``, ``channels_v1_*``, ``app_sessions_v1_*``),
the SDK ``Client``'s reads (``get_config``, ``get_blockchains``, ``get_assets``,
``get_balances``, ``get_transactions``, ``get_channels``, ``get_home_channel``,
``get_escrow_channel``, ``get_latest_state``, ``get_app_sessions``, ``get_app_definition``,
``get_last_channel_key_states``, ``get_last_key_states``) and the high-level calls
(``deposit``, ``transfer``, ``withdraw``, ``close_home_channel``, ``acknowledge``,
``create_app_session``, ``submit_app_session_deposit``,
``submit_app_state`` ...) are the core's. States are signed through a
:class:`~settlement_widgets.channel.v1.core.client_calls.StateSigner`;
:meth:`V1RpcClient.for_signer`
wraps a :class:`~settlement_widgets.signer.Signer` (a local key or a browser wallet).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Self

from ....errors import (
    ConfigurationError,
    InvalidFrameError,
    RelayError,
    RelayProtocolError,
    RelayUnavailableError,
    SettlementError,
    SettlementTimeoutError,
    SettlementValueError,
)
from ....networks import PROTOCOL_V05
from ....ws_write import write_queued
from ...node_socket import open_node_socket
from ..core.client_calls import (
    ChannelDefaultSigner,
    MessageSigner,
    StateSigner,
    V1ClientCore,
    now_ms,
    random_request_id,
)
from ..core.rate_limit import (
    DEFAULT_RATE_LIMIT_BURST,
    DEFAULT_RATE_LIMIT_PER_SEC,
    RATE_LIMIT_EXCEEDED,
    TokenBucket,
)
from ..core.wire import Frame, MessageType, decode_frame

__all__ = ["REQUEST_SENT", "EventCallback", "RateLimitedError", "V1RpcClient"]

_log = logging.getLogger(__name__)

EventCallback = Callable[[Frame], Any]
SentCallback = Callable[["V1RpcClient", Frame], None]

#: the node refuses inbound frames above this (close code 1009)
MAX_OUTBOUND_FRAME = 131072

#: called with the client and each request frame it hands to the socket, in the task that
#: sends it (the task may drive other clients too, hence the client): a provider that
#: pipelines states lets the next one be built as soon as the previous one has left, in
#: order, without waiting for its answer (the node answers one connection's requests in the
#: order they arrive). A context variable, not an argument, because the request passes
#: through the SDK's call layers, which know nothing of it.
REQUEST_SENT: contextvars.ContextVar[SentCallback | None] = contextvars.ContextVar(
    "REQUEST_SENT", default=None
)


class RateLimitedError(RelayError):
    """The node kept answering a request ``rate limit exceeded`` after every retry.

    ``message`` is the node's text verbatim (as for any :class:`RelayError`), ``code`` the
    method; ``str()`` says how often it was tried and what to do. Nothing was applied: the
    node refuses before it runs the method.
    """

    def __init__(self, method: str, attempts: int, url: str) -> None:
        super().__init__(RATE_LIMIT_EXCEEDED, code=method)
        self.attempts = attempts
        self.detail = (
            f"the v1 node at {url} refused {method} with '{RATE_LIMIT_EXCEEDED}' {attempts} "
            "times in a row, backing off between tries: another client on this connection "
            "(or the node's configured limit) leaves no room; send fewer requests per "
            "second or raise the node's limit (NITRONODE_RATE_LIMIT_PER_SEC / _BURST)"
        )

    def __str__(self) -> str:
        return self.detail


class V1RpcClient(V1ClientCore):
    """A v1 node at ``url`` (``ws://`` or ``wss://``, e.g. ``wss://…/v1/ws``).

    ``state_signer`` signs channel states (reads need none); ``asset_cache`` and
    ``home_blockchains`` are the core's. ``request_timeout`` bounds each request,
    ``connect_timeout`` the opening handshake. ``request_ids``, ``clock_ms`` and ``nonces``
    default to random ids, the wall clock and the SDK's nonce rule (tests inject them).

    ``requests_per_sec`` / ``request_burst`` are the node's limits (its defaults; ``None``
    sends unpaced): requests are paced at that rate with a burst one request smaller, and a
    ``rate limit exceeded`` answer is retried up to ``rate_limit_retries`` times after an
    exponential back-off starting at one refill
    interval. ``monotonic`` and ``sleep`` are the pacing's clock and wait (tests drive them).
    """

    def __init__(
        self,
        url: str,
        *,
        state_signer: StateSigner | None = None,
        asset_cache: Sequence[Mapping[str, Any]] = (),
        home_blockchains: Mapping[str, int] | None = None,
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        max_events: int = 1000,
        request_ids: Callable[[], int] = random_request_id,
        clock_ms: Callable[[], int] = now_ms,
        nonces: Callable[[], int] | None = None,
        requests_per_sec: float | None = DEFAULT_RATE_LIMIT_PER_SEC,
        request_burst: float = DEFAULT_RATE_LIMIT_BURST,
        rate_limit_retries: int = 5,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
            raise ConfigurationError(f"the v1 node URL must be ws:// or wss://, got {url!r}")
        for name, value in (
            ("request_timeout", request_timeout),
            ("connect_timeout", connect_timeout),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise SettlementValueError(f"{name} must be a positive number, got {value!r}")
        super().__init__(
            self,
            state_signer=state_signer,
            asset_cache=asset_cache,
            home_blockchains=home_blockchains,
            request_ids=request_ids,
            clock_ms=clock_ms,
            nonces=nonces,
        )
        self.url = url
        self.request_timeout = float(request_timeout)
        self.connect_timeout = float(connect_timeout)
        #: unsolicited frames (type 3, or replies to no pending request), oldest first
        self.events: asyncio.Queue[Frame] = asyncio.Queue(maxsize=max_events)
        #: frames that did not parse (after the first one) and were dropped
        self.rejected_frames = 0
        #: how many times a dropped connection was opened again
        self.reconnects = 0
        self._ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[int, tuple[str, asyncio.Future[Frame]]] = {}
        self._callbacks: list[EventCallback] = []
        self._protocol_error: RelayProtocolError | None = None
        self._lock: asyncio.Lock | None = None
        self._opened_before = False
        self._closed = False
        if isinstance(rate_limit_retries, bool) or not isinstance(rate_limit_retries, int):
            raise SettlementValueError(
                f"rate_limit_retries must be an int, got {rate_limit_retries!r}"
            )
        if rate_limit_retries < 0:
            raise SettlementValueError("rate_limit_retries must be >= 0")
        self.rate_limit_retries = rate_limit_retries
        self._sleep = sleep
        #: the client-side request bucket (None: unpaced)
        self.pacer: TokenBucket | None = None
        if requests_per_sec is not None:
            if requests_per_sec <= 0 or request_burst < 1:
                raise SettlementValueError(
                    "requests_per_sec must be > 0 and request_burst >= 1 (or pass "
                    "requests_per_sec=None for no pacing)"
                )
            # one token short of the node's burst: the node counts a request when it arrives,
            # and frames sent at the pace's edge can arrive closer together than they left
            # (a slow first frame, then a quick one); the spare token absorbs up to one refill
            # interval of that jitter (notebook 06 once met a refusal without it)
            self.pacer = TokenBucket(requests_per_sec, max(1.0, request_burst - 1), clock=monotonic)
        self._pace_lock: asyncio.Lock | None = None
        #: how many requests the node refused with ``rate limit exceeded`` (each retried)
        self.rate_limited = 0

    @classmethod
    def for_signer(cls, url: str, wallet: MessageSigner, **kwargs: Any) -> V1RpcClient:
        """A client whose states ``wallet`` signs (validator 0): a
        :class:`~settlement_widgets.signer.Signer`, so browser wallets work too."""
        return cls(url, state_signer=ChannelDefaultSigner(wallet), **kwargs)

    @property
    def connected(self) -> bool:
        return self._ws is not None

    def __repr__(self) -> str:
        state = "connected" if self.connected else "closed" if self._closed else "disconnected"
        return f"V1RpcClient(url={self.url!r}, {state})"

    # --- lifecycle ----------------------------------------------------------------------

    async def connect(self) -> Self:
        """Open the connection (idempotent). Raises :class:`RelayUnavailableError`, or the
        :class:`RelayProtocolError` already seen on this URL."""
        await self._ensure_open()
        return self

    async def __aenter__(self) -> Self:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection for good; pending requests fail with
        :class:`RelayUnavailableError`."""
        self._closed = True
        ws, self._ws = self._ws, None
        reader, self._reader = self._reader, None
        self._fail_pending(RelayUnavailableError(f"the client for {self.url} was closed"))
        if ws is not None:
            with contextlib.suppress(Exception):
                await ws.close()
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader

    async def _ensure_open(self) -> Any:
        if self._closed:
            raise RelayUnavailableError("this V1RpcClient is closed: create a new one")
        if self._protocol_error is not None:
            raise self._protocol_error
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._ws is not None:
                return self._ws
            ws = await open_node_socket(self.url, timeout=self.connect_timeout, what="the v1 node")
            if self._opened_before:
                self.reconnects += 1
            self._opened_before = True
            self._ws = ws
            self._reader = asyncio.get_running_loop().create_task(self._read(ws))
            return ws

    # --- the transport the core drives -----------------------------------------------------

    async def exchange(self, request: Frame) -> Frame:
        """Send ``request`` and return the frame carrying its id (checked by the core),
        paced, and sent again after a back-off while the node answers it
        ``rate limit exceeded``."""
        return await self.exchange_encoded(request, request.encode())

    async def exchange_encoded(self, request: Frame, text: str) -> Frame:
        """:meth:`exchange` of ``request`` whose text the caller encoded already
        (``text == request.encode()``; the core's :meth:`RpcClient.call` checks every
        request by encoding it, and passes the text on rather than have it encoded twice)."""
        if len(text.encode("utf-8")) > MAX_OUTBOUND_FRAME:
            raise SettlementValueError(
                f"{request.method} request is {len(text)} bytes; the node refuses frames "
                f"above {MAX_OUTBOUND_FRAME}"
            )
        attempt = 0
        while True:
            await self._pace()
            reply = await self._send_and_wait(request, text)
            if not _is_rate_limited(reply, request):
                return reply
            self.rate_limited += 1
            if attempt >= self.rate_limit_retries:
                error = RateLimitedError(request.method, attempt + 1, self.url)
                _log.warning("%s", error)
                raise error
            delay = self._backoff(attempt)
            attempt += 1
            _log.warning(
                "the v1 node at %s refused %s: %s; retrying in %.2f s (retry %d of %d)",
                self.url,
                request.method,
                RATE_LIMIT_EXCEEDED,
                delay,
                attempt,
                self.rate_limit_retries,
            )
            await self._sleep(delay)

    async def _pace(self) -> None:
        """Wait for a token of the client-side bucket (requests leave in call order)."""
        pacer = self.pacer
        if pacer is None:
            return
        if self._pace_lock is None:
            self._pace_lock = asyncio.Lock()
        async with self._pace_lock:
            while not pacer.admit():
                await self._sleep(pacer.delay())

    def _backoff(self, attempt: int) -> float:
        """Seconds to wait before retry ``attempt + 1``: the node's bucket is empty, so
        ours is emptied too, and the wait doubles from one refill interval."""
        pacer = self.pacer
        if pacer is None:
            return 0.1 * 2**attempt
        pacer.drain()
        return max(pacer.delay(), 2**attempt / pacer.rate)

    async def _send_and_wait(self, request: Frame, text: str) -> Frame:
        ws = await self._ensure_open()
        if request.request_id in self._pending:
            raise SettlementValueError(f"request id {request.request_id} is already pending")
        future: asyncio.Future[Frame] = asyncio.get_running_loop().create_future()
        self._pending[request.request_id] = (request.method, future)
        try:
            try:
                ws.protocol.send_text(text.encode("utf-8"))
                write_queued(ws)
            except Exception as exc:
                raise RelayUnavailableError(
                    f"cannot send {request.method} to the v1 node at {self.url}: {exc}"
                ) from exc
            sent = REQUEST_SENT.get()
            if sent is not None:
                sent(self, request)
            try:
                return await asyncio.wait_for(asyncio.shield(future), self.request_timeout)
            except TimeoutError:
                raise SettlementTimeoutError(
                    f"the v1 node at {self.url} did not answer {request.method} "
                    f"within {self.request_timeout:g} s"
                ) from None
        finally:
            self._pending.pop(request.request_id, None)
            if not future.done():
                future.cancel()

    # --- reading ------------------------------------------------------------------------

    async def _read(self, ws: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        first = True
        try:
            async for message in ws:
                if first:
                    first = False
                    if self._is_v05(message):
                        await self._wrong_protocol(ws, message)
                        return
                try:
                    frame = decode_frame(message)
                except InvalidFrameError as exc:
                    self.rejected_frames += 1
                    _log.warning("dropping a v1 frame that does not parse: %s", exc)
                    continue
                self._dispatch(frame)
        except ConnectionClosed:
            pass
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # pragma: no cover - a transport bug: treat as a drop
            _log.warning("v1 reader stopped: %s", exc)
        finally:
            if ws is self._ws:
                self._ws = None
                self._fail_pending(
                    self._protocol_error
                    or RelayUnavailableError(
                        f"the connection to the v1 node at {self.url} was lost before it "
                        "answered (the request may or may not have been applied)"
                    )
                )

    @staticmethod
    def _is_v05(message: str | bytes) -> bool:
        head = message.lstrip()[:1]
        return head in ("{", b"{")

    async def _wrong_protocol(self, ws: Any, message: str | bytes) -> None:
        text = message if isinstance(message, str) else message.decode("utf-8", "replace")
        sample = " ".join(text.split())[:120]
        self._protocol_error = RelayProtocolError(
            f"the node at {self.url} speaks Nitrolite v0.5 (ClearNode), not v1: its first "
            f"frame is a JSON object: {sample!r}. Use the v0.5 relay client for it, or a v1 "
            "URL (e.g. wss://nitronode-sandbox.yellow.org/v1/ws).",
            found=PROTOCOL_V05,
        )
        _log.warning("%s", self._protocol_error)
        self._fail_pending(self._protocol_error)
        with contextlib.suppress(Exception):
            await ws.close()

    def _dispatch(self, frame: Frame) -> None:
        entry = self._pending.get(frame.request_id)
        if entry is not None and frame.type != 1 and frame.type != 3:
            future = entry[1]
            if not future.done():
                future.set_result(frame)
            return
        self._deliver_event(frame)

    def _deliver_event(self, frame: Frame) -> None:
        if self.events.full():
            with contextlib.suppress(asyncio.QueueEmpty):
                self.events.get_nowait()  # keep the newest
        self.events.put_nowait(frame)
        for callback in list(self._callbacks):
            try:
                result = callback(frame)
                if inspect.isawaitable(result):
                    task = asyncio.ensure_future(result)
                    task.add_done_callback(_log_callback_failure)
            except Exception:
                _log.exception("v1 event callback failed on %s", frame.method)

    def on_event(self, callback: EventCallback) -> Callable[[], None]:
        """Call ``callback(frame)`` (sync or async) for every event; returns the unsubscriber."""
        self._callbacks.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return unsubscribe

    def _fail_pending(self, error: SettlementError) -> None:
        pending, self._pending = self._pending, {}
        for _method, future in pending.values():
            if not future.done():
                future.set_exception(error)


def _is_rate_limited(reply: Frame, request: Frame) -> bool:
    """Whether ``reply`` is the node's rate-limit refusal of ``request``."""
    return (
        isinstance(reply, Frame)
        and reply.type == MessageType.ERROR
        and reply.request_id == request.request_id
        and reply.error == RATE_LIMIT_EXCEEDED
    )


def _log_callback_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _log.error("v1 event callback failed: %s", task.exception())
