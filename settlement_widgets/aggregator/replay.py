"""Serving the recorded LI.FI responses: one dispatcher, two front ends.

:class:`RecordedAPI` answers LI.FI-shaped requests from the JSON files in ``recorded/``
(listed in ``recorded/manifest.json``). It is used by

- :class:`RecordedTransport`, an httpx transport, for ``AggregatorProvider.recorded()`` in
  notebooks (no thread, no port, no network), and
- :class:`~settlement_widgets.aggregator.testserver.LifiTestServer`, a real HTTP server on
  127.0.0.1 that tests drive and inject faults into.

It answers only what was recorded. Any other request gets an error that says so (HTTP 404,
LI.FI code 1002 for quotes and routes, 1003 otherwise); it never makes up a rate. Bodies are
exactly as stored: the "recorded" label lives in the provider, the values and the frame's
``attrs``, not inside API-shaped JSON.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

import httpx

from ..errors import ConfigurationError

__all__ = ["RECORDED_BASE_URL", "RecordedAPI", "RecordedTransport", "Reply", "recorded_tx_hashes"]

#: Base URL the recorded mode uses (``.invalid`` is reserved: nothing can resolve it).
RECORDED_BASE_URL = "http://recorded.invalid/v1"


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


def _load(name: str) -> Any:
    try:
        text = resources.files(__package__).joinpath("recorded", name).read_text("utf-8")
    except (FileNotFoundError, OSError) as exc:
        raise ConfigurationError(
            f"recorded LI.FI data file {name!r} is missing from the installed package; "
            "reinstall settlement_widgets"
        ) from exc
    return json.loads(text)


def recorded_tx_hashes() -> list[str]:
    """Transaction hashes whose ``GET /status`` progress was recorded (for ``track``)."""
    return list(_load("manifest.json")["status"])


class RecordedAPI:
    """A LI.FI look-alike answering from recorded files. Thread-safe; keeps status progress.

    Each ``GET /status`` of a recorded hash advances through its recorded sequence
    (PENDING ... DONE) and then stays on the last entry.
    """

    def __init__(self) -> None:
        self.manifest: dict[str, Any] = _load("manifest.json")
        self.note: str = self.manifest["note"]
        self._from = self.manifest["recordedFromAddress"]
        self._lock = threading.Lock()
        self._status_reads: dict[str, int] = {}
        self._tokens: dict[str, list[dict[str, Any]]] = _load(self.manifest["tokens"])["tokens"]
        self._chains: dict[str, Any] = _load(self.manifest["chains"])
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

    def _recorded_requests(self, kind: str) -> str:
        return "; ".join(
            f"{r['fromAmount']} of {r['fromToken']} on chain {r['fromChain']} -> "
            f"{r['toToken']} on chain {r['toChain']}"
            for r in (e["request"] for e in self.manifest[kind])
        )

    def _with_sender(self, name: str, sender: Any) -> bytes:
        """The stored body, with the recorded sender replaced by the requesting address."""
        text = resources.files(__package__).joinpath("recorded", name).read_text("utf-8")
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
                "No recorded quote for this request; recorded mode serves only: "
                f"{self._recorded_requests('quotes')}. Use the live API for anything else.",
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
                "No recorded routes for this request; recorded mode serves only: "
                f"{self._recorded_requests('routes')}. Use the live API for anything else.",
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
        txs = _load(self.manifest["stepTransactions"])
        tx = txs.get(step["id"])
        if tx is None:
            return Reply.error(404, f"No recorded transaction for step {step['id']!r}", 1003)
        sender = (
            step.get("action", {}).get("fromAddress")
            if isinstance(step.get("action"), dict)
            else None
        )
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
            return Reply.error(
                404,
                f"No recorded status for transaction {tx_hash}; recorded mode knows: {known}",
                1003,
            )
        with self._lock:
            index = self._status_reads.get(tx_hash.lower(), 0)
            self._status_reads[tx_hash.lower()] = index + 1
        name = sequence[min(index, len(sequence) - 1)]
        return Reply.json(200, _load(name))


class RecordedTransport(httpx.AsyncBaseTransport):
    """An httpx transport answering from :class:`RecordedAPI` (no network at all)."""

    def __init__(self, api: RecordedAPI | None = None) -> None:
        self.api = api or RecordedAPI()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        query = parse_qs(request.url.query.decode("ascii"), keep_blank_values=True)
        reply = self.api.handle(request.method, request.url.path, query, body)
        return httpx.Response(
            reply.status, headers=dict(reply.headers), content=reply.body, request=request
        )
