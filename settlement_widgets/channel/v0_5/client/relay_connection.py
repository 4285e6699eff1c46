"""The relay client's connection core: one WebSocket, verified frames, replies by request id.

:class:`RelayConnection` is the part of :class:`~.relay_client.RelayClient` that owns the
socket: opening it (``get_config`` first, to learn and check the broker), verifying every
frame's broker signature before anything reads it, matching replies to requests by id,
routing notifications to callbacks and a bounded queue, and reconnecting with exponential
backoff when the socket drops. It knows nothing of logging in (:mod:`.relay_auth` adds that
through :meth:`RelayConnection._after_handshake`) nor of the relay's methods
(:mod:`.relay_client` wraps those). The guarantees are listed in :mod:`.relay_client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
from collections.abc import Callable, Mapping
from typing import Any, Self

from ....addresses import validate_address
from ....errors import (
    ConfigurationError,
    InvalidFrameError,
    InvalidSignatureError,
    RelayProtocolError,
    RelayUnavailableError,
    SettlementError,
    SettlementTimeoutError,
    SettlementValueError,
)
from ....keys import PrivateKey
from ....ws_write import send_text_frame, write_queued
from ...node_socket import open_node_socket
from ..core import messages as M
from ..core.rpc import Request, Response, make_request, now_ms, parse_response
from .relay_socket import DirectClientConnection

__all__ = ["RELAY_LOGGER", "NotificationCallback", "RelayConnection"]

#: the logger of the whole relay client (its name from before the client was split in modules)
RELAY_LOGGER: str = "settlement_widgets.channel.v0_5.client.relay_client"
_log = logging.getLogger(RELAY_LOGGER)

NotificationCallback = Callable[[Response], Any]


class RelayConnection:
    """A connection to the relay at ``url`` (``ws://`` or ``wss://``).

    ``broker_address`` pins the broker (otherwise the one ``get_config`` names is trusted on
    first use). ``request_timeout`` bounds every request; ``connect_timeout`` the opening
    handshake. ``reconnect`` turns the background reconnection on; ``backoff`` is the first
    and the longest delay between attempts, in seconds.
    """

    def __init__(
        self,
        url: str,
        *,
        broker_address: str | None = None,
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        reconnect: bool = True,
        backoff: tuple[float, float] = (0.1, 5.0),
        max_notifications: int = 1000,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
            raise ConfigurationError(f"the relay URL must be ws:// or wss://, got {url!r}")
        for name, value in (
            ("request_timeout", request_timeout),
            ("connect_timeout", connect_timeout),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise SettlementValueError(f"{name} must be a positive number, got {value!r}")
        self.url = url
        self._pinned = (
            validate_address(broker_address, field="broker_address") if broker_address else None
        )
        self.request_timeout = float(request_timeout)
        self.connect_timeout = float(connect_timeout)
        self.reconnect = reconnect
        self.backoff = backoff
        self.broker_address: str | None = None
        #: the last ``get_config`` result
        self.config: dict[str, Any] = {}
        #: the last ``assets`` list (pushed on connect)
        self.assets: list[dict[str, Any]] = []
        #: frames dropped because their broker signature did not verify or they did not parse
        self.rejected_frames = 0
        #: how many times the connection was re-established
        self.reconnects = 0
        self.notifications: asyncio.Queue[Response] = asyncio.Queue(maxsize=max_notifications)
        self._ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._reconnector: asyncio.Task[None] | None = None
        self._pending: dict[int, tuple[str, asyncio.Future[Response]]] = {}
        self._unverified: list[Response] = []
        #: set when the relay turned out to speak another protocol: no reconnecting to it
        self._protocol_error: RelayProtocolError | None = None
        self._callbacks: dict[str, list[NotificationCallback]] = {}
        self._reconnect_listeners: list[Callable[[], Any]] = []
        self._connect_lock: asyncio.Lock | None = None
        self._connected = False
        self._closed = False
        self._signer: PrivateKey | None = None
        self._last_id = 0
        #: the connection whose write is scheduled for the end of this loop turn
        self._flush_ws: Any = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- identity -----------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    @property
    def session_key(self) -> str | None:
        return self._signer.address if self._signer is not None else None

    def __repr__(self) -> str:
        state = "connected" if self._connected else "closed" if self._closed else "disconnected"
        name = type(self).__name__
        return f"{name}(url={self.url!r}, broker={self.broker_address!r}, {state})"

    # --- lifecycle ----------------------------------------------------------------------

    async def connect(self) -> Self:
        """Open the connection (idempotent). Raises :class:`RelayUnavailableError`."""
        if self._closed:
            raise RelayUnavailableError("this RelayClient is closed: create a new one")
        await self._connect_once()
        return self

    async def __aenter__(self) -> Self:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the socket and stop reconnecting; requests in flight fail."""
        if self._closed:
            return
        self._closed = True
        self._connected = False
        for task in (self._reconnector, *self._tasks):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 2.0)
        if self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        self._fail_pending(RelayUnavailableError("the relay client was closed"))

    def _lock(self) -> asyncio.Lock:
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        return self._connect_lock

    async def _connect_once(self) -> None:
        async with self._lock():
            if self._connected or self._closed:
                if self._closed:
                    raise RelayUnavailableError("this RelayClient is closed")
                return
            ws = await open_node_socket(
                self.url,
                timeout=self.connect_timeout,
                what="the relay",
                create_connection=DirectClientConnection,
            )
            self._ws = ws
            self._unverified.clear()
            self._protocol_error = None
            self._reader = asyncio.get_running_loop().create_task(self._read(ws))
            self._start_reading(ws)
            try:
                await self._handshake()
            except BaseException:
                self._ws = None
                with contextlib.suppress(Exception):
                    await ws.close()
                raise
            self._connected = True

    async def _handshake(self) -> None:
        """``get_config`` (learn and check the broker), then :meth:`_after_handshake`."""
        config = await self._send(M.get_config_message(request_id=self._next_id()), trusted=True)
        result = config.result if isinstance(config.result, Mapping) else {}
        broker = result.get("broker_address")
        try:
            broker = validate_address(broker, field="broker_address")
        except SettlementError as exc:
            raise InvalidFrameError(
                f"get_config answered without a valid broker_address: {exc}"
            ) from None
        if self._pinned is not None and broker != self._pinned:
            raise InvalidSignatureError(
                f"the relay's broker is {broker}, not the pinned {self._pinned}"
            )
        if self.broker_address is not None and broker != self.broker_address:
            raise InvalidSignatureError(
                f"the relay's broker changed from {self.broker_address} to {broker}: refusing it"
            )
        config.verify(broker)
        self.broker_address = broker
        self.config = dict(result)
        held, self._unverified = self._unverified, []
        for frame in held:  # frames that arrived before the broker was known
            self._dispatch(frame)
        await self._after_handshake()

    async def _after_handshake(self) -> None:
        """Runs on every (re)connection once the broker is known, before the connection
        counts as up; a failure closes it. :class:`~.relay_auth.RelayAuth` logs in again
        here."""

    # --- reading ------------------------------------------------------------------------

    def _start_reading(self, ws: DirectClientConnection) -> None:
        """Handle every message of ``ws`` from the callback that read it (what arrived
        during the opening handshake first, in order)."""
        stopped = False

        def on_message(message: bytes) -> None:
            nonlocal stopped
            if not stopped and not self._on_message(ws, message):
                stopped = True  # not our protocol: read nothing more from this socket
                ws.on_message = None
                if ws is self._ws:
                    self._on_disconnect()

        early, ws.early = ws.early, []
        for message in early:
            on_message(message)
        if not stopped:
            ws.on_message = on_message

    async def _read(self, ws: Any) -> None:
        """Wait for ``ws`` to close (its messages are handled as they arrive,
        :meth:`_start_reading`), then treat the close as a drop."""
        try:
            await ws.wait_closed()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # pragma: no cover - a transport bug: treat as a drop
            _log.warning("relay reader stopped: %s", exc)
        finally:
            ws.on_message = None
            if ws is self._ws:
                self._on_disconnect()

    def _on_message(self, ws: Any, message: bytes) -> bool:
        """One message of ``ws``: parsed, then held, resolved or verified and dispatched.
        False when the first frames show the relay speaks another protocol."""
        try:
            frame = parse_response(message)
        except SettlementError as exc:
            self.rejected_frames += 1
            if self.broker_address is None and ws is self._ws:
                # nothing verified yet on this socket: is it our protocol at all?
                self._wrong_protocol(message, exc)
                return False
            _log.warning("dropping a relay frame that does not parse: %s", exc)
            return True
        if self.broker_address is None and ws is self._ws:
            if self._is_config_reply(frame):
                self._resolve(frame)
            else:
                self._unverified.append(frame)
            return True
        self._dispatch(frame)
        return True

    def _wrong_protocol(self, message: str | bytes, exc: SettlementError) -> None:
        """The first frames of a connection do not parse: fail the handshake at once with
        what the relay speaks instead (rather than waiting for a reply that cannot come)."""
        from ...frames import V1, identify_frame

        seen = identify_frame(message)
        if seen.is_v05:  # our protocol, one bad frame: the usual error
            error: SettlementError = InvalidFrameError(
                f"the relay at {self.url} sent a frame that does not parse: {exc}"
            )
        else:
            hint = (
                " Yellow's network now runs Nitrolite v1: use a v1 profile, which picks the "
                "v1 client (SETTLEMENT_NETWORK=sepolia-v1, LocalSandbox(protocol='v1'), or a "
                "Network with protocol='nitrolite-v1'), or point this one at a v0.5 ClearNode "
                "(see the README's list of endpoints)."
                if seen.kind == V1
                else " Check the relay URL (SETTLEMENT_RELAY_URL or the network profile)."
            )
            message_text = (
                f"the relay at {self.url} does not speak Nitrolite v0.5 (ClearNode), which "
                f"this client implements: its first frame is {seen.found}: {seen.sample!r}."
            )
            error = RelayProtocolError(message_text + hint, found=seen.kind)
        _log.warning("%s", error)
        if isinstance(error, RelayProtocolError):
            self._protocol_error = error
        self._fail_pending(error)

    def _is_config_reply(self, frame: Response) -> bool:
        entry = self._pending.get(frame.request_id)
        return entry is not None and entry[0] == "get_config"

    def _dispatch(self, frame: Response) -> None:
        broker = self.broker_address
        if broker is None:  # pragma: no cover - only frames after the handshake get here
            self._unverified.append(frame)
            return
        try:
            frame.verify(broker)
        except InvalidSignatureError as exc:
            self.rejected_frames += 1
            entry = self._pending.pop(frame.request_id, None)
            if entry is not None and not frame.is_notification:
                if not entry[1].done():
                    entry[1].set_exception(
                        InvalidSignatureError(f"the relay's answer to {entry[0]} is forged: {exc}")
                    )
            else:
                _log.warning("dropping a relay frame with a bad broker signature: %s", exc)
            return
        if frame.is_notification:
            self._notify(frame)
            return
        self._resolve(frame)

    def _resolve(self, frame: Response) -> None:
        entry = self._pending.pop(frame.request_id, None)
        if entry is None:
            _log.debug("relay answer to unknown request id %s (%s)", frame.request_id, frame.method)
            return
        if not entry[1].done():
            entry[1].set_result(frame)

    def _notify(self, frame: Response) -> None:
        if frame.is_error:
            _log.warning("relay error without a request id: %s", frame.error)
            return
        if frame.method == "assets" and isinstance(frame.result, Mapping):
            assets = frame.result.get("assets")
            if isinstance(assets, list):
                self.assets = [a for a in assets if isinstance(a, dict)]
        if self.notifications.full():
            with contextlib.suppress(asyncio.QueueEmpty):
                self.notifications.get_nowait()  # keep the newest
        self.notifications.put_nowait(frame)
        for callback in (*self._callbacks.get(frame.method, ()), *self._callbacks.get("*", ())):
            try:
                result = callback(frame)
                if inspect.isawaitable(result):
                    task = asyncio.ensure_future(result)
                    self._tasks.add(task)
                    task.add_done_callback(self._task_done)
            except Exception:
                _log.exception("relay notification callback failed on %s", frame.method)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("relay notification callback failed: %s", task.exception())

    def _on_disconnect(self) -> None:
        self._connected = False
        self._ws = None
        self._fail_pending(
            RelayUnavailableError(
                f"the connection to the relay at {self.url} was lost before it answered "
                "(the request may or may not have been applied)"
            )
        )
        if (
            self.reconnect
            and not self._closed
            and self._protocol_error is None
            and (self._reconnector is None or self._reconnector.done())
        ):
            self._reconnector = asyncio.get_running_loop().create_task(self._reconnect_loop())

    def _fail_pending(self, error: Exception) -> None:
        pending, self._pending = self._pending, {}
        for _method, future in pending.values():
            if not future.done():
                future.set_exception(error)

    async def _reconnect_loop(self) -> None:
        delay, longest = self.backoff
        while not self._closed and not self._connected:
            await asyncio.sleep(delay * (0.5 + random.random() / 2))
            try:
                await self._connect_once()
            except asyncio.CancelledError:
                raise
            except (InvalidSignatureError, RelayProtocolError) as exc:
                _log.error("not reconnecting to %s: %s", self.url, exc)
                return
            except SettlementError as exc:
                _log.info("reconnecting to %s failed: %s", self.url, exc)
                delay = min(delay * 2, longest)
                continue
            self.reconnects += 1
            for listener in list(self._reconnect_listeners):
                try:
                    result = listener()
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    _log.exception("reconnect listener failed")

    # --- notifications API --------------------------------------------------------------

    def on(self, method: str, callback: NotificationCallback) -> Callable[[], None]:
        """Call ``callback(frame)`` for every verified notification ``method`` (``"*"``:
        all). Async callbacks are scheduled. Returns a function that unsubscribes."""
        if not callable(callback):
            raise SettlementValueError("callback must be callable")
        self._callbacks.setdefault(method, []).append(callback)

        def off() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.get(method, []).remove(callback)

        return off

    def on_reconnect(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Call ``callback()`` after every successful reconnection (and re-login)."""
        self._reconnect_listeners.append(callback)

        def off() -> None:
            with contextlib.suppress(ValueError):
                self._reconnect_listeners.remove(callback)

        return off

    async def next_notification(
        self, method: str | None = None, *, timeout: float | None = None
    ) -> Response:
        """The next queued notification (of ``method``, skipping others)."""
        limit = self.request_timeout if timeout is None else timeout
        try:
            async with asyncio.timeout(limit):
                while True:
                    frame = await self.notifications.get()
                    if method is None or frame.method == method:
                        return frame
        except TimeoutError:
            raise SettlementTimeoutError(
                f"no {method or 'notification'} from the relay within {limit:g} s"
            ) from None

    # --- requests -----------------------------------------------------------------------

    def _next_id(self) -> int:
        # unique per client, SDK-like magnitude (ms timestamp based)
        self._last_id = max(self._last_id + 1, now_ms())
        return self._last_id

    async def _send(
        self, req: Request, *, timeout: float | None = None, trusted: bool = False
    ) -> Response:
        ws = self._ws
        if ws is None:
            raise RelayUnavailableError(f"not connected to the relay at {self.url}")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Response] = loop.create_future()
        self._pending[req.request_id] = (req.method, future)
        limit = self.request_timeout if timeout is None else timeout
        # the deadline fails the future itself: one timer per request, no asyncio.timeout
        # context (which cancels the task and converts the cancellation back)
        expiry = loop.call_later(limit, _expire, future, req.method, limit)
        try:
            try:
                self._enqueue(ws, req.to_frame())
            except Exception as exc:
                raise RelayUnavailableError(
                    f"the connection to the relay at {self.url} dropped while sending "
                    f"{req.method}: {exc}"
                ) from exc
            response = await future
        finally:
            expiry.cancel()
            self._pending.pop(req.request_id, None)
        if not trusted and self.broker_address is None:  # pragma: no cover - defensive
            raise InvalidSignatureError("a relay answer arrived before the broker was known")
        return response.raise_for_error()

    def _enqueue(self, ws: Any, frame: str) -> None:
        """Frame ``frame`` now; write it with every frame queued in this loop turn.

        Requests sent by concurrent tasks in one turn of the event loop leave in one socket
        write (:func:`~settlement_widgets.ws_write.write_queued`); the only request in
        flight is written at once. Raises when the connection is not open.
        """
        from websockets.protocol import State

        if ws.protocol.state is not State.OPEN:
            raise ConnectionError(f"the WebSocket is {ws.protocol.state.name.lower()}")
        send_text_frame(ws.protocol, frame.encode())
        if self._flush_ws is ws:
            return  # joins the write scheduled for this turn
        if len(self._pending) <= 1:  # the only request in flight: nothing to wait for
            self._flush(ws)
            return
        self._flush_ws = ws
        asyncio.get_running_loop().call_soon(self._flush, ws)

    def _flush(self, ws: Any) -> None:
        if self._flush_ws is ws:
            self._flush_ws = None
        try:
            write_queued(ws)
        except Exception as exc:  # the socket is gone: the reader fails what is pending
            _log.debug("could not write to the relay: %s", exc)

    async def request(self, req: Request, *, timeout: float | None = None) -> Response:
        """Send a prepared request frame and return the verified reply.

        Raises :class:`RelayError` (the relay's message) for an ``error`` reply,
        :class:`SettlementTimeoutError`, :class:`RelayUnavailableError`, or
        :class:`InvalidSignatureError` when the reply is not the broker's.
        """
        if self._closed:
            raise RelayUnavailableError("this RelayClient is closed")
        if not self._connected:
            await self._connect_once()
        return await self._send(req, timeout=timeout)

    async def call(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        signed: bool = True,
        timeout: float | None = None,
    ) -> Any:
        """Send ``method`` with ``params`` (signed by the session key when ``signed`` and
        logged in; a fresh id and timestamp) and return the reply's ``result``."""
        if self._closed:
            raise RelayUnavailableError("this RelayClient is closed")
        if not self._connected:
            await self._connect_once()
        key = self._signer if signed else None
        req = make_request(method, params or {}, request_id=self._next_id(), key=key)
        return (await self._send(req, timeout=timeout)).result

    async def _private(self, build: Callable[[PrivateKey, int], Request]) -> Any:
        """A private request built (and signed) at send time, so its timestamp is fresh."""
        if self._closed:
            raise RelayUnavailableError("this RelayClient is closed")
        if not self._connected:
            await self._connect_once()
        if self._signer is None:
            raise ConfigurationError("log in first: await relay.authenticate(...)")
        return (await self._send(build(self._signer, self._next_id()))).result


def _expire(future: asyncio.Future[Response], method: str, limit: float) -> None:
    """A request's deadline passed: its caller gets :class:`SettlementTimeoutError`."""
    if not future.done():
        future.set_exception(
            SettlementTimeoutError(f"the relay did not answer {method} within {limit:g} s")
        )
