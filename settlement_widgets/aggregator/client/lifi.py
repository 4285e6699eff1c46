"""An async httpx client of the LI.FI REST API, with the retry rules LI.FI documents.

- Retried: HTTP 429, HTTP 5xx, timeouts and connection failures, with exponential backoff
  and jitter. A 429 waits at least what the server asks: ``Retry-After`` when sent, else
  ``ratelimit-reset`` (seconds until LI.FI's window resets), else the backoff alone.
- Rate limits are read, never assumed: LI.FI's ``ratelimit-limit``, ``ratelimit-remaining``
  and ``ratelimit-reset`` headers (on any answer that carries them) become
  :attr:`LifiClient.rate_limit`, a :class:`RateLimit`, and the message of a
  :class:`~settlement_widgets.errors.RateLimitedError`. The limits differ per plan and API
  key and may change, so no number is hard-coded here.
- Not retried: every other 4xx (the same request would fail the same way), and 2xx bodies
  that are not JSON or not LI.FI's schema.
- Errors carry the API's ``message`` and ``code`` (``{"message": ..., "code": 1011}``):
  :class:`~settlement_widgets.errors.AggregatorError` for 4xx,
  :class:`~settlement_widgets.errors.NoRouteError` for code 1002,
  :class:`~settlement_widgets.errors.RateLimitedError` for 429,
  :class:`~settlement_widgets.errors.AggregatorServerError` for 5xx after every retry,
  :class:`~settlement_widgets.errors.AggregatorUnavailableError` when LI.FI cannot be
  reached at all. Rates are never invented: no answer means an error, never a fallback.

The client turns bytes into the frozen values of :mod:`..core.models`; ranking and frames live
elsewhere. Backoff is a pure function of the attempt number (tests make it milliseconds).
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import logging
import math
import random
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Self

import httpx
import orjson

from ...errors import (
    AggregatorError,
    AggregatorResponseError,
    AggregatorServerError,
    AggregatorUnavailableError,
    NoRouteError,
    RateLimitedError,
    SettlementValueError,
)
from ..core.models import (
    Chain,
    Quote,
    Route,
    Status,
    Step,
    Token,
)
from ..core.params import TransferRequest
from ..core.parse import (
    parse_chains,
    parse_quote,
    parse_routes,
    parse_status,
    parse_step,
    parse_tokens,
)

__all__ = [
    "API_KEY_HEADER",
    "DEFAULT_BASE_URL",
    "LifiClient",
    "RateLimit",
    "RetryEvent",
    "RetryPolicy",
    "backoff_delay",
    "parse_rate_limit",
    "parse_retry_after",
]

DEFAULT_BASE_URL = "https://li.quest/v1"
API_KEY_HEADER = "x-lifi-api-key"
_USER_AGENT = "settlement-widgets/0.1 (+httpx)"
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. ``max_retries`` retries after the first attempt.

    The n-th retry waits ``min(backoff_max, backoff_base * 2**n)`` scaled by a random
    factor in ``[1 - jitter, 1]`` (jitter spreads clients that failed together), or at
    least ``Retry-After`` on a 429. A 429 whose ``Retry-After`` exceeds ``max_retry_after``
    is not waited out: the error is raised at once with the wait LI.FI asked for. Without
    ``Retry-After``, ``ratelimit-reset`` is the wait LI.FI asked for.
    """

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    jitter: float = 0.5
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int):
            raise SettlementValueError("max_retries must be an int")
        if self.max_retries < 0:
            raise SettlementValueError("max_retries must be >= 0")
        for name in ("backoff_base", "backoff_max", "max_retry_after"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or value < 0 or not math.isfinite(value):
                raise SettlementValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not 0 <= self.jitter <= 1:
            raise SettlementValueError(f"jitter must be between 0 and 1, got {self.jitter!r}")


@dataclass(frozen=True)
class RateLimit:
    """LI.FI's rate-limit headers of one answer, as sent (None where a header was absent).

    ``limit`` requests per window, ``remaining`` of them left, ``reset_seconds`` until the
    window resets (as of ``seen_at``, the UTC time the answer arrived).
    """

    limit: int | None
    remaining: int | None
    reset_seconds: float | None
    seen_at: datetime

    def describe(self) -> str:
        """``"0 of 100 requests left, window resets in 42 s (seen 12:00:01 UTC)"``."""
        parts = []
        if self.remaining is not None or self.limit is not None:
            left = "?" if self.remaining is None else str(self.remaining)
            of = f" of {self.limit}" if self.limit is not None else ""
            parts.append(f"{left}{of} requests left")
        if self.reset_seconds is not None:
            parts.append(f"window resets in {self.reset_seconds:g} s")
        return f"{', '.join(parts)} (seen {self.seen_at:%H:%M:%S} UTC)"


@dataclass(frozen=True)
class RetryEvent:
    """Reported to ``on_retry`` before each wait: why, and for how long.

    ``retry_after`` is the wait the server asked for (``Retry-After``, else
    ``ratelimit-reset``); ``rate_limit`` the rate-limit headers of that answer, if any.
    """

    attempt: int
    delay: float
    reason: str
    status: int | None = None
    retry_after: float | None = None
    rate_limit: RateLimit | None = None


def backoff_delay(attempt: int, policy: RetryPolicy, rng: random.Random) -> float:
    """Seconds to wait before retry number ``attempt`` (0-based), jitter included."""
    ceiling = min(policy.backoff_max, policy.backoff_base * (2**attempt))
    return ceiling * (1 - policy.jitter * rng.random())


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """``Retry-After`` in seconds: delay-seconds (decimals tolerated) or an HTTP-date."""
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is not None:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _header_number(value: str | None) -> float | None:
    """The number at the start of a ``ratelimit-*`` header: ``"100"``, ``"42.5"``, or the
    structured form ``"100, 100;w=60"`` (first item, parameters dropped)."""
    if value is None:
        return None
    text = value.split(",", 1)[0].split(";", 1)[0].strip()
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def parse_rate_limit(
    headers: Mapping[str, str], *, now: datetime | None = None
) -> RateLimit | None:
    """The ``ratelimit-limit``/``-remaining``/``-reset`` headers, or None if none is sent
    (or none can be read). ``headers`` is case-insensitive when it is httpx's."""
    lowered = {k.lower(): v for k, v in headers.items()}
    limit = _header_number(lowered.get("ratelimit-limit"))
    remaining = _header_number(lowered.get("ratelimit-remaining"))
    reset = _header_number(lowered.get("ratelimit-reset"))
    if limit is None and remaining is None and reset is None:
        return None
    return RateLimit(
        limit=None if limit is None else int(limit),
        remaining=None if remaining is None else int(remaining),
        reset_seconds=reset,
        seen_at=now or datetime.now(UTC),
    )


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One certificate store for every client: building it costs ~0.3 s each time."""
    return httpx.create_ssl_context()


def _error_body(response: httpx.Response) -> tuple[str, Any]:
    """The API's ``message`` and ``code`` (or a snippet of a non-JSON body)."""
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, Mapping):
        message = body.get("message")
        code = body.get("code")
        if isinstance(message, str) and message:
            return message, code
        return orjson.dumps(body).decode()[:300], code
    text = response.text.strip()
    return (text[:300] or response.reason_phrase or "no body"), None


def _hint(status: int, code: Any) -> str:
    if code == 1011 or status in {400, 422}:
        return " Check the request parameters; the same request will fail again."
    if code == 1010 or status in {401, 403}:
        return " Check api_key (sent as the x-lifi-api-key header)."
    if code == 1002 or status == 404:
        return " Try another amount, token or chain pair."
    return ""


class LifiClient:
    """Async LI.FI REST client. One per event loop is ideal; it reconnects if the loop changes.

    ``transport`` replaces the network (an httpx transport, for tests). ``on_retry`` is
    called with a :class:`RetryEvent` before each backoff wait. :attr:`rate_limit` is the
    last rate-limit state LI.FI sent (None until an answer carries the headers).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        integrator: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        on_retry: Callable[[RetryEvent], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise SettlementValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
            raise SettlementValueError(
                f"timeout must be a positive number of seconds, got {timeout!r}"
            )
        self.base_url = url
        self.integrator = integrator
        self.timeout = float(timeout)
        self.retry = retry or RetryPolicy()
        self.on_retry = on_retry
        self.rate_limit: RateLimit | None = None
        self._api_key = api_key
        self._transport = transport
        self._rng = rng or random.Random()
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        key = ", api_key=<set>" if self._api_key else ""
        return f"LifiClient({self.base_url!r}{key})"

    # -- transport --------------------------------------------------------------------------

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop or self._http.is_closed:
            headers = {"accept": "application/json", "user-agent": _USER_AGENT}
            if self._api_key:
                headers[API_KEY_HEADER] = self._api_key
            self._http = httpx.AsyncClient(
                base_url=self.base_url + "/",
                headers=headers,
                timeout=httpx.Timeout(self.timeout),
                transport=self._transport,
                verify=_ssl_context() if self._transport is None else True,
                follow_redirects=False,
            )
            self._loop = loop
        return self._http

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool (safe to call twice, or from another loop)."""
        http, self._http = self._http, None
        if http is not None and not http.is_closed:
            try:
                await http.aclose()
            except RuntimeError:  # the loop it was opened on is gone: nothing to close
                pass

    async def request_json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
    ) -> Any:
        """One API call with retries; the decoded JSON body of a 2xx answer."""
        label = f"{method} /{path.lstrip('/')}"
        policy = self.retry
        attempts = policy.max_retries + 1
        last_error: Exception | None = None
        for attempt in range(attempts):
            retry_after: float | None = None
            status: int | None = None
            seen: RateLimit | None = None
            try:
                response = await self._client().request(
                    method,
                    path.lstrip("/"),
                    params=params,
                    content=None if json is None else orjson.dumps(json),
                    headers=None if json is None else {"content-type": "application/json"},
                )
            except httpx.TimeoutException as exc:
                reason = f"timed out after {self.timeout:g} s ({type(exc).__name__})"
                last_error = AggregatorUnavailableError(
                    f"LI.FI API at {self.base_url} {reason} on {label} "
                    f"({attempt + 1} attempt{'s' if attempt else ''}). No rates are "
                    "invented: try again later or raise timeout=."
                )
            except httpx.TransportError as exc:
                reason = f"cannot be reached ({type(exc).__name__}: {exc})"
                last_error = AggregatorUnavailableError(
                    f"LI.FI API at {self.base_url} {reason} on {label} "
                    f"({attempt + 1} attempt{'s' if attempt else ''}). No rates are "
                    "invented: check the network or base_url."
                )
            else:
                status = response.status_code
                seen = parse_rate_limit(response.headers)
                if seen is not None:
                    self.rate_limit = seen
                if 200 <= status < 300:
                    return self._decode(response, label)
                message, code = _error_body(response)
                head = f"LI.FI API answered HTTP {status}" + (
                    f" (code {code})" if code is not None else ""
                )
                if status == 429:
                    retry_after = parse_retry_after(response.headers.get("retry-after"))
                    if retry_after is None and seen is not None:
                        retry_after = seen.reset_seconds
                    reason = "rate limited (429)"
                    state = self.rate_limit  # this answer's headers, else the last ones seen
                    error: AggregatorError = RateLimitedError(
                        f"{head} to {label}: {message}. Rate limited after {attempt + 1} "
                        f"attempt{'s' if attempt else ''}"
                        + (f"; LI.FI asks to wait {retry_after:g} s" if retry_after else "")
                        + (f"; LI.FI rate limit: {state.describe()}" if state else "")
                        + ". Pass api_key= for higher limits, or retry later.",
                        status=status,
                        code=code,
                        retry_after=retry_after,
                        rate_limit=state,
                    )
                    if retry_after is not None and retry_after > policy.max_retry_after:
                        raise error
                    last_error = error
                elif status >= 500:
                    reason = f"server error ({status})"
                    last_error = AggregatorServerError(
                        f"{head} to {label}: {message}. Gave up after {attempt + 1} "
                        f"attempt{'s' if attempt else ''}; LI.FI is failing, try again later.",
                        status=status,
                        code=code,
                    )
                else:
                    cls = NoRouteError if code == 1002 else AggregatorError
                    raise cls(
                        f"{head} to {label}: {message}.{_hint(status, code)}",
                        status=status,
                        code=code,
                    )
            if attempt + 1 >= attempts:
                break
            delay = backoff_delay(attempt, policy, self._rng)
            if retry_after is not None:
                delay = max(delay, retry_after)
            event = RetryEvent(attempt + 1, delay, reason, status, retry_after, seen)
            _log.debug("LI.FI %s: %s; retry %d in %.3f s", label, reason, attempt + 1, delay)
            if self.on_retry is not None:
                self.on_retry(event)
            await asyncio.sleep(delay)
        assert last_error is not None
        raise last_error

    @staticmethod
    def _decode(response: httpx.Response, label: str) -> Any:
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            snippet = response.content[:80].decode("utf-8", "replace")
            raise AggregatorResponseError(
                f"LI.FI API answered {label} with HTTP {response.status_code} but the body is "
                f"not JSON ({exc}; body starts {snippet!r}). Nothing was ranked or sent.",
                status=response.status_code,
            ) from None

    # -- endpoints --------------------------------------------------------------------------

    async def quote(self, request: TransferRequest) -> Quote:
        """``GET /quote``: the best single-step quote, with its transaction request."""
        data = await self.request_json("GET", "quote", params=request.quote_params(self.integrator))
        return parse_quote(data, source="GET /quote")

    async def routes(self, request: TransferRequest) -> list[Route]:
        """``POST /advanced/routes``: every route LI.FI found, in LI.FI's order (unranked)."""
        data = await self.request_json(
            "POST", "advanced/routes", json=request.routes_body(self.integrator)
        )
        return parse_routes(data, source="POST /advanced/routes")

    async def step_transaction(self, step: Step) -> Step:
        """``POST /advanced/stepTransaction``: the step with its ``transactionRequest``."""
        data = await self.request_json("POST", "advanced/stepTransaction", json=dict(step.raw))
        return parse_step(data, source="POST /advanced/stepTransaction")

    async def status(
        self,
        tx_hash: str,
        *,
        bridge: str | None = None,
        from_chain: int | None = None,
        to_chain: int | None = None,
    ) -> Status:
        """``GET /status``: where the transfer started by ``tx_hash`` is."""
        params = {"txHash": tx_hash}
        if bridge:
            params["bridge"] = bridge
        if from_chain is not None:
            params["fromChain"] = str(from_chain)
        if to_chain is not None:
            params["toChain"] = str(to_chain)
        data = await self.request_json("GET", "status", params=params)
        return parse_status(data, source="GET /status")

    async def chains(self) -> list[Chain]:
        """``GET /chains``."""
        return parse_chains(await self.request_json("GET", "chains"), source="GET /chains")

    async def tokens(self, chains: Sequence[int] | None = None) -> dict[int, list[Token]]:
        """``GET /tokens`` (optionally only ``chains``)."""
        params = {"chains": ",".join(str(c) for c in chains)} if chains else None
        data = await self.request_json("GET", "tokens", params=params)
        return parse_tokens(data, source="GET /tokens")
