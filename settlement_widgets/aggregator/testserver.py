"""A loopback LI.FI for tests and demos: real HTTP on 127.0.0.1, recorded answers, faults.

LI.FI itself cannot be reached from CI, so the client is tested against this server. It
answers from :class:`~settlement_widgets.aggregator.replay.RecordedAPI` (the same recorded
responses as the recorded mode) and lets a test queue faults per endpoint: 429 with
``Retry-After``, 5xx, 4xx with LI.FI's ``{"message", "code"}`` body, malformed JSON, slow
answers, or a recorded answer with fields removed. Every request is logged with its arrival
time, so tests count requests and measure waits on the server side.

    with LifiTestServer() as server:
        server.inject("GET", "/quote", Fault.rate_limited(retry_after="0.05"))
        provider = AggregatorProvider(base_url=server.url)
        ...
        assert server.count("GET", "/quote") == 2

``python -m settlement_widgets.aggregator.testserver [--port N]`` serves the recorded data.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..errors import SettlementValueError
from .replay import RecordedAPI, Reply

__all__ = ["Fault", "LifiTestServer", "RequestRecord", "main"]


@dataclass(frozen=True)
class Fault:
    """One scripted answer. ``body=None`` means "the recorded answer", optionally with
    ``drop`` paths (``"routes.0.toAmount"``) removed; ``delay`` seconds pass first."""

    status: int = 200
    body: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: tuple[str, ...] = ()

    @classmethod
    def rate_limited(
        cls, retry_after: str | None = "1", message: str = "Too many requests"
    ) -> Fault:
        headers = {"retry-after": retry_after} if retry_after is not None else {}
        return cls(429, _error(message, 1005), headers)

    @classmethod
    def server_error(
        cls, status: int = 500, message: str = "Internal server error", code: int = 1006
    ) -> Fault:
        return cls(status, _error(message, code))

    @classmethod
    def error(cls, status: int, message: str, code: int) -> Fault:
        """Any LI.FI error body, e.g. ``Fault.error(400, "Invalid fromAddress", 1011)``."""
        return cls(status, _error(message, code))

    @classmethod
    def malformed(cls, body: bytes = b'{"routes": [{"id": "truncated', status: int = 200) -> Fault:
        return cls(status, body, {"content-type": "application/json"})

    @classmethod
    def slow(cls, delay: float) -> Fault:
        """The recorded answer, after ``delay`` seconds."""
        return cls(delay=delay)

    @classmethod
    def missing(cls, *paths: str) -> Fault:
        """The recorded answer without the fields at ``paths`` (dotted, list indexes ok)."""
        return cls(drop=paths)


def _error(message: str, code: int) -> bytes:
    return json.dumps({"message": message, "code": code}).encode()


def _drop(obj: Any, path: str) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    last = parts[-1]
    if isinstance(obj, list):
        del obj[int(last)]
    else:
        del obj[last]


@dataclass(frozen=True)
class RequestRecord:
    """A request as the server saw it; ``at`` is ``time.monotonic()`` on arrival."""

    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]
    body: bytes
    at: float

    def json(self) -> Any:
        return json.loads(self.body)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _serve(self) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        owner = self.server.owner
        record = RequestRecord(
            method=self.command,
            path=url.path,
            query=parse_qs(url.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            at=time.monotonic(),
        )
        fault = owner._record_and_pop(record)
        if fault is not None and fault.delay and owner._stopping.wait(fault.delay):
            return  # the server is stopping
        if fault is not None and fault.body is not None:  # scripted: the API is not consulted
            reply = Reply(
                fault.status, fault.body, {"content-type": "application/json", **fault.headers}
            )
        else:
            reply = owner.api.handle(self.command, url.path, record.query, body)
            if fault is not None:
                reply = _apply(fault, reply)
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

    do_GET = _serve
    do_POST = _serve


def _apply(fault: Fault, reply: Reply) -> Reply:
    """A recorded reply altered by ``fault`` (fields dropped, status or headers replaced)."""
    body = reply.body
    if fault.drop:
        data = json.loads(body)
        for path in fault.drop:
            _drop(data, path)
        body = json.dumps(data).encode()
    return Reply(
        fault.status if fault.status != 200 else reply.status,
        body,
        {**reply.headers, **fault.headers},
    )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: LifiTestServer


class LifiTestServer:
    """LI.FI on 127.0.0.1 (random port), in a background thread. Use as a context manager."""

    def __init__(self, api: RecordedAPI | None = None, *, host: str = "127.0.0.1", port: int = 0):
        if host not in {"127.0.0.1", "localhost", "::1"}:
            raise SettlementValueError("the LI.FI test server only binds to loopback")
        self.api = api or RecordedAPI()
        self._host, self._port = host, port
        self._faults: dict[tuple[str, str], deque[Fault]] = defaultdict(deque)
        self._requests: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> LifiTestServer:
        if self._server is None:
            self._stopping.clear()
            self._server = _Server((self._host, self._port), _Handler)
            self._server.owner = self
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="lifi-test-server",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            self._stopping.set()
            server.shutdown()
            server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)

    def __enter__(self) -> LifiTestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise SettlementValueError("the test server is not running; call start()")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The API base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://{self._host}:{self.port}/v1"

    # -- scripting and inspection ------------------------------------------------------------

    def inject(self, method: str, path: str, *faults: Fault) -> None:
        """Queue ``faults`` for the next requests to ``method path`` (``"/quote"``), in order."""
        with self._lock:
            self._faults[(method.upper(), _route(path))].extend(faults)

    def _record_and_pop(self, record: RequestRecord) -> Fault | None:
        with self._lock:
            self._requests.append(record)
            queue = self._faults.get((record.method, _route(record.path)))
            return queue.popleft() if queue else None

    @property
    def requests(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._requests)

    def count(self, method: str | None = None, path: str | None = None) -> int:
        """How many requests arrived (optionally only ``method`` and/or ``path``)."""
        return len(
            [
                r
                for r in self.requests
                if (method is None or r.method == method.upper())
                and (path is None or _route(r.path) == _route(path))
            ]
        )


def _route(path: str) -> str:
    route = "/" + path.strip("/")
    return route[3:] if route.startswith("/v1/") else route


def main(argv: list[str] | None = None) -> None:
    """Serve the recorded LI.FI responses on 127.0.0.1 until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = LifiTestServer(port=args.port).start()
    print(f"LI.FI test server (recorded data) at {server.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
