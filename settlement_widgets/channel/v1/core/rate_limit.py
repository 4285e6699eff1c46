"""Per-connection rate limits of a Nitronode, and the token bucket both sides use.

Why: the real node limits every WebSocket connection (Nitrolite v1.4.1
``nitronode/runtime.go``, ``nitronode/api/rate_limits.go``, ``pkg/rpc/rate_limiter.go``,
``pkg/rpc/connection.go``):

- **requests**: a token bucket of :data:`DEFAULT_RATE_LIMIT_BURST` tokens refilled at
  :data:`DEFAULT_RATE_LIMIT_PER_SEC` per second. Every request for a *known* method takes one
  token; with less than one token left the request is answered with the error frame
  ``{"error": "rate limit exceeded"}`` (:data:`RATE_LIMIT_EXCEEDED`) and the connection stays
  open. Frames that do not parse and unknown methods are answered before the limiter and
  cost nothing;
- **bytes**: every inbound frame takes its length from a second bucket
  (:data:`DEFAULT_WS_BYTES_BURST` refilled at :data:`DEFAULT_WS_BYTES_PER_SEC`); a frame that
  does not fit closes the connection (no reply);
- **frame size**: a frame above :data:`DEFAULT_WS_MAX_MESSAGE_SIZE` bytes closes the
  connection with code 1009 (message too big) before it is read.

A client that does not want to see the first of these paces itself with the same bucket
(:class:`TokenBucket`, :meth:`TokenBucket.delay`). The clock is injected, so tests drive time
by hand instead of sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from ....errors import SettlementValueError

__all__ = [
    "DEFAULT_RATE_LIMIT_BURST",
    "DEFAULT_RATE_LIMIT_PER_SEC",
    "DEFAULT_WS_BYTES_BURST",
    "DEFAULT_WS_BYTES_PER_SEC",
    "DEFAULT_WS_MAX_MESSAGE_SIZE",
    "RATE_LIMIT_EXCEEDED",
    "WS_CLOSE_MESSAGE_TOO_BIG",
    "TokenBucket",
]

#: requests per second per connection (``NITRONODE_RATE_LIMIT_PER_SEC``)
DEFAULT_RATE_LIMIT_PER_SEC: Final = 10.0
#: request burst per connection (``NITRONODE_RATE_LIMIT_BURST``)
DEFAULT_RATE_LIMIT_BURST: Final = 20.0
#: inbound frame cap in bytes (``NITRONODE_WS_MAX_MESSAGE_SIZE``); above it: close 1009
DEFAULT_WS_MAX_MESSAGE_SIZE: Final = 131072
#: inbound bytes per second per connection (``NITRONODE_WS_BYTES_PER_SEC``; <= 0 disables)
DEFAULT_WS_BYTES_PER_SEC: Final = 262144.0
#: inbound byte burst per connection (``NITRONODE_WS_BYTES_BURST``)
DEFAULT_WS_BYTES_BURST: Final = 1048576.0
#: the error text of a request refused by the request bucket (``RateLimitMiddleware``)
RATE_LIMIT_EXCEEDED: Final = "rate limit exceeded"
#: WebSocket close code for a frame above the size cap
WS_CLOSE_MESSAGE_TOO_BIG: Final = 1009


#: float slack: a refill of exactly the missing fraction must admit (0.1 s x 10/s is not 1.0)
_EPSILON: Final = 1e-9


class TokenBucket:
    """``burst`` tokens, refilled at ``rate`` per second of ``clock`` (seconds, monotonic).

    Starts full. The refill is computed from the time since the previous use, capped at
    ``burst`` (the Go buckets' rule); a refused :meth:`admit` takes nothing. Not
    thread-safe: one bucket per connection, used from one task at a time.
    """

    __slots__ = ("_clock", "_last", "_tokens", "burst", "rate")

    def __init__(
        self, rate: float, burst: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        for name, value in (("rate", rate), ("burst", burst)):
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise SettlementValueError(f"{name} must be a number >= 0, got {value!r}")
        self.rate = float(rate)
        self.burst = float(burst)
        self._clock = clock
        self._tokens = self.burst
        self._last: float | None = None

    def _refill(self) -> None:
        now = self._clock()
        if self._last is not None and now > self._last:
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now if self._last is None else max(now, self._last)

    @property
    def tokens(self) -> float:
        """Tokens available now."""
        self._refill()
        return self._tokens

    def admit(self, cost: float = 1.0) -> bool:
        """Take ``cost`` tokens if there are that many; False (nothing taken) otherwise."""
        self._refill()
        if self._tokens + _EPSILON < cost:
            return False
        self._tokens = max(0.0, self._tokens - cost)
        return True

    def delay(self, cost: float = 1.0) -> float:
        """Seconds until ``cost`` tokens are available (0 when they are now). ``inf`` when
        they never will be (``cost`` above ``burst``, or no refill)."""
        self._refill()
        missing = cost - self._tokens
        if missing <= _EPSILON:
            return 0.0
        if cost > self.burst or self.rate <= 0:
            return float("inf")
        return missing / self.rate

    def drain(self) -> None:
        """Empty the bucket (a client told by the node that it is over its limit)."""
        self._refill()
        self._tokens = 0.0

    def __repr__(self) -> str:
        return f"TokenBucket(rate={self.rate:g}/s, burst={self.burst:g})"
