"""A per-key sliding-window rate limiter (pure: the clock is passed in).

The v0 faucet has no rate limit of its own (``erc7824/faucet-app``), so the endpoint keeps
one per address: at most ``limit`` requests in any ``window`` seconds. Memory is bounded:
idle keys are pruned and at most ``max_keys`` are tracked (the least recently used go first).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from ..errors import SettlementValueError

__all__ = ["RateLimiter"]


class RateLimiter:
    """``check(key)`` returns None when allowed (and counts it) or the seconds to wait."""

    def __init__(
        self,
        limit: int,
        window: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 10_000,
    ) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise SettlementValueError(f"limit must be a positive integer, got {limit!r}")
        if not isinstance(window, int | float) or not window > 0:
            raise SettlementValueError(
                f"window must be a positive number of seconds, got {window!r}"
            )
        if max_keys < 1:
            raise SettlementValueError(f"max_keys must be positive, got {max_keys!r}")
        self.limit = limit
        self.window = float(window)
        self.max_keys = max_keys
        self._clock = clock
        self._hits: OrderedDict[str, deque[float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._hits)

    def _prune(self, now: float) -> None:
        horizon = now - self.window
        for key in [k for k, hits in self._hits.items() if hits[-1] <= horizon]:
            del self._hits[key]

    def check(self, key: str) -> float | None:
        """Count a request for ``key``; None if allowed, else seconds until one is allowed."""
        now = self._clock()
        hits = self._hits.get(key)
        if hits is not None:
            while hits and hits[0] <= now - self.window:
                hits.popleft()
            if len(hits) >= self.limit:
                return max(hits[0] + self.window - now, 0.0)
        else:
            if len(self._hits) >= self.max_keys:
                self._prune(now)
                while len(self._hits) >= self.max_keys:
                    self._hits.popitem(last=False)
            hits = self._hits[key] = deque()
        hits.append(now)
        self._hits.move_to_end(key)
        return None

    @staticmethod
    def retry_after_header(seconds: float) -> str:
        """``Retry-After`` wants whole seconds; round up so a client that obeys succeeds."""
        return str(max(1, math.ceil(seconds)))
