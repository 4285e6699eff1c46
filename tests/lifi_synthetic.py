"""A LI.FI look-alike for tests, answering from synthetic fixtures, with fault injection.

The JSON in ``tests/fixtures/lifi_synthetic/`` was written by hand in LI.FI's documented
schema; it was never fetched from the live API and its transaction hashes exist on no chain
(``manifest.json`` says so). That is why it lives here, as test fixtures, and not in the
package: nothing a user runs may present it as data.

- :class:`SyntheticAPI` answers LI.FI-shaped requests from those files (only what they hold:
  anything else is an HTTP 404 with LI.FI code 1002 for quotes and routes, 1003 otherwise).
- :class:`SyntheticTransport` serves it through httpx in-process (no port, no thread).
- :class:`LifiTestServer` serves it over real HTTP on loopback, and lets a test queue
  :class:`Fault` s per endpoint: 429 with ``Retry-After`` and ``ratelimit-*`` headers, 5xx,
  4xx with LI.FI's ``{"message", "code"}`` body, malformed JSON, slow answers, or the
  synthetic answer with fields removed. Every request is logged with its arrival time.

    with LifiTestServer() as server:
        server.inject("GET", "/quote", Fault.rate_limited(retry_after="0.05"))
        provider = AggregatorProvider(base_url=server.url)
        ...
        assert server.count("GET", "/quote") == 2

``python -m tests.lifi_synthetic [--port N]`` serves the fixtures until interrupted.
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
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

__all__ = [
    "FIXTURES",
    "Fault",
    "LifiTestServer",
    "Reply",
    "RequestRecord",
    "SyntheticAPI",
    "SyntheticTransport",
    "fixture",
    "fixture_text",
    "main",
    "synthetic_tx_hashes",
]

#: the synthetic LI.FI responses (hand-written, never fetched from the live API)
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lifi_synthetic"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def fixture_text(name: str) -> str:
    """One fixture file's text, exactly as stored."""
    return (FIXTURES / name).read_text("utf-8")


def fixture(name: str) -> Any:
    """One fixture file, decoded (a fresh object each call: tests may mutate it)."""
    return json.loads(fixture_text(name))


def synthetic_tx_hashes() -> list[str]:
    """The (synthetic) transaction hashes whose ``GET /status`` progress the fixtures hold."""
    return list(fixture("manifest.json")["status"])


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: status, headers and the exact body bytes."""

    status: int
    body: bytes
    headers: Mapping[str, str]

    @classmethod
    def json(cls, status: int, obj: Any, headers: Mapping[str, str] | None = None) -> Reply:
        return cls(
            status,
            json.dumps(obj).encode(),
            {"content-type": "application/json", **(headers or {})},
        )

    @classmethod
    def error(cls, status: int, message: str, code: int) -> Reply:
        """LI.FI's error body: ``{"message": ..., "code": ...}``."""
        return cls.json(status, {"message": message, "code": code})


class SyntheticAPI:
    """Answers LI.FI requests from the fixtures. Thread-safe; keeps status progress.

    Each ``GET /status`` of a known hash advances through its sequence in the manifest
    (PENDING ... DONE) and then stays on the last entry. The sender written in the bodies
    is replaced by the requesting address, so routes carry the caller's ``fromAddress``.
    """

    def __init__(self) -> None:
        self.manifest: dict[str, Any] = fixture("manifest.json")
        self.note: str = self.manifest["note"]
        self._from = self.manifest["senderInBodies"]
        self._lock = threading.Lock()
        self._status_reads: dict[str, int] = {}
        self._tokens: dict[str, list[dict[str, Any]]] = fixture(self.manifest["tokens"])["tokens"]
        self._chains: dict[str, Any] = fixture(self.manifest["chains"])
        self._keys = {c["key"]: c["id"] for c in self._chains["chains"]}

    # -- request normalisation ---------------------------------------------------------------

    def _chain(self, value: Any) -> int | None:
        text = str(value).strip().lower()
        if text.isdigit():
            return int(text)
        return self._keys.get(text)

    def _token(self, chain: int | None, value: Any) -> str | None:
        text = str(value).strip()
        if text.lower().startswith("0x"):
            return text.lower()
        for token in self._tokens.get(str(chain), []):
            if token["symbol"].upper() == text.upper():
                return str(token["address"]).lower()
        return None

    def _key(self, fields: Mapping[str, Any]) -> tuple[Any, ...]:
        fc, tc = self._chain(fields["fromChain"]), self._chain(fields["toChain"])
        return (
            fc,
            tc,
            self._token(fc, fields["fromToken"]),
            self._token(tc, fields["toToken"]),
            str(fields["fromAmount"]).strip(),
        )

    def _find(self, kind: str, fields: Mapping[str, Any]) -> str | None:
        key = self._key(fields)
        for entry in self.manifest[kind]:
            if self._key(entry["request"]) == key:
                return str(entry["file"])
        return None

    def _known_requests(self, kind: str) -> str:
        return "; ".join(
            f"{r['fromAmount']} of {r['fromToken']} on chain {r['fromChain']} -> "
            f"{r['toToken']} on chain {r['toChain']}"
            for r in (e["request"] for e in self.manifest[kind])
        )

    def _with_sender(self, name: str, sender: Any) -> bytes:
        """The stored body, with the fixtures' sender replaced by the requesting address."""
        text = fixture_text(name)
        if isinstance(sender, str) and sender.startswith("0x") and len(sender) == 42:
            text = text.replace(self._from, sender).replace(self._from.lower(), sender.lower())
        return text.encode()

    # -- endpoints ---------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: Mapping[str, list[str]], body: bytes) -> Reply:
        """Answer one request. ``path`` may carry the ``/v1`` prefix."""
        route = path.rstrip("/")
        if route.startswith("/v1"):
            route = route[3:]
        q = {k: v[-1] for k, v in query.items() if v}
        if method == "GET" and route == "/quote":
            return self._quote(q)
        if method == "POST" and route == "/advanced/routes":
            return self._routes(body)
        if method == "POST" and route == "/advanced/stepTransaction":
            return self._step_transaction(body)
        if method == "GET" and route == "/status":
            return self._status(q)
        if method == "GET" and route == "/chains":
            return Reply.json(200, self._chains)
        if method == "GET" and route == "/tokens":
            wanted = {str(self._chain(c)) for c in q.get("chains", "").split(",") if c.strip()}
            tokens = {k: v for k, v in self._tokens.items() if not wanted or k in wanted}
            return Reply.json(200, {"tokens": tokens})
        return Reply.error(404, f"Not found: {method} {path}", 1003)

    def _quote(self, q: Mapping[str, str]) -> Reply:
        required = ("fromChain", "toChain", "fromToken", "toToken", "fromAmount", "fromAddress")
        missing = [k for k in required if not q.get(k)]
        if missing:
            return Reply.error(
                400, f"Missing required query parameter(s): {', '.join(missing)}", 1011
            )
        name = self._find("quotes", q)
        if name is None:
            return Reply.error(
                404,
                "No synthetic quote for this request; the fixtures hold only: "
                f"{self._known_requests('quotes')}.",
                1002,
            )
        return Reply(
            200, self._with_sender(name, q["fromAddress"]), {"content-type": "application/json"}
        )

    def _routes(self, body: bytes) -> Reply:
        try:
            req = json.loads(body or b"null")
        except json.JSONDecodeError:
            return Reply.error(400, "Request body is not valid JSON", 1011)
        if not isinstance(req, dict):
            return Reply.error(400, "Request body must be a JSON object", 1011)
        required = ("fromChainId", "toChainId", "fromTokenAddress", "toTokenAddress", "fromAmount")
        missing = [k for k in required if req.get(k) in (None, "")]
        if missing:
            return Reply.error(400, f"Missing required field(s): {', '.join(missing)}", 1011)
        fields = {
            "fromChain": req["fromChainId"],
            "toChain": req["toChainId"],
            "fromToken": req["fromTokenAddress"],
            "toToken": req["toTokenAddress"],
            "fromAmount": req["fromAmount"],
        }
        name = self._find("routes", fields)
        if name is None:
            return Reply.error(
                404,
                "No synthetic routes for this request; the fixtures hold only: "
                f"{self._known_requests('routes')}.",
                1002,
            )
        return Reply(
            200,
            self._with_sender(name, req.get("fromAddress")),
            {"content-type": "application/json"},
        )

    def _step_transaction(self, body: bytes) -> Reply:
        try:
            step = json.loads(body or b"null")
        except json.JSONDecodeError:
            return Reply.error(400, "Request body is not valid JSON", 1011)
        if not isinstance(step, dict) or not isinstance(step.get("id"), str):
            return Reply.error(400, "Request body must be a step object with an id", 1011)
        tx = fixture(self.manifest["stepTransactions"]).get(step["id"])
        if tx is None:
            return Reply.error(404, f"No synthetic transaction for step {step['id']!r}", 1003)
        action = step.get("action")
        sender = action.get("fromAddress") if isinstance(action, dict) else None
        if isinstance(sender, str) and len(sender) == 42:
            tx = {**tx, "from": sender}
        return Reply.json(200, {**step, "transactionRequest": tx})

    def _status(self, q: Mapping[str, str]) -> Reply:
        tx_hash = q.get("txHash") or q.get("taskId")
        if not tx_hash:
            return Reply.error(400, "Missing required query parameter: txHash", 1011)
        sequence = self.manifest["status"].get(tx_hash.lower())
        if sequence is None:
            known = ", ".join(self.manifest["status"])
            message = f"No synthetic status for transaction {tx_hash}; the fixtures know: {known}"
            return Reply.error(404, message, 1003)
        with self._lock:
            index = self._status_reads.get(tx_hash.lower(), 0)
            self._status_reads[tx_hash.lower()] = index + 1
        return Reply.json(200, fixture(sequence[min(index, len(sequence) - 1)]))


class SyntheticTransport(httpx.AsyncBaseTransport):
    """An httpx transport answering from :class:`SyntheticAPI` (no network at all):
    ``AggregatorProvider(base_url="http://lifi.invalid/v1", transport=SyntheticTransport())``."""

    def __init__(self, api: SyntheticAPI | None = None) -> None:
        self.api = api or SyntheticAPI()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        query = parse_qs(request.url.query.decode("ascii"), keep_blank_values=True)
        reply = self.api.handle(request.method, request.url.path, query, body)
        return httpx.Response(
            reply.status, headers=dict(reply.headers), content=reply.body, request=request
        )


# --- the loopback server -------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One scripted answer. ``body=None`` means "the synthetic answer", optionally with
    ``drop`` paths (``"routes.0.toAmount"``) removed and ``headers`` added; ``delay``
    seconds pass first."""

    status: int = 200
    body: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: tuple[str, ...] = ()

    @classmethod
    def rate_limited(
        cls,
        retry_after: str | None = "1",
        message: str = "Too many requests",
        *,
        ratelimit: Mapping[str, str] | None = None,
    ) -> Fault:
        """A 429; ``ratelimit`` adds LI.FI's ``ratelimit-{limit,remaining,reset}`` headers
        (``{"limit": "100", "remaining": "0", "reset": "0.05"}``)."""
        headers = {"retry-after": retry_after} if retry_after is not None else {}
        headers.update({f"ratelimit-{k}": v for k, v in (ratelimit or {}).items()})
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
        """The synthetic answer, after ``delay`` seconds."""
        return cls(delay=delay)

    @classmethod
    def missing(cls, *paths: str) -> Fault:
        """The synthetic answer without the fields at ``paths`` (dotted, list indexes ok)."""
        return cls(drop=paths)

    @classmethod
    def json(
        cls, obj: Any, *, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> Fault:
        """This JSON body instead of the synthetic answer."""
        return cls(status, json.dumps(obj).encode(), dict(headers or {}))


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
    """A synthetic reply altered by ``fault`` (fields dropped, status or headers replaced)."""
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
    """LI.FI on loopback (random port), in a background thread. Use as a context manager."""

    def __init__(
        self, api: SyntheticAPI | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        if host not in _LOOPBACK:
            raise ValueError("the LI.FI test server only binds to loopback")
        self.api = api or SyntheticAPI()
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
            raise RuntimeError("the test server is not running; call start()")
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
    """Serve the synthetic LI.FI fixtures on loopback until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = LifiTestServer(port=args.port).start()
    print(f"LI.FI test server (synthetic fixtures, not live rates) at {server.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
