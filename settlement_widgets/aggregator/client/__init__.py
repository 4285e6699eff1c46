"""The aggregator method's client side: the LI.FI HTTP client and the provider on top of it.

- :mod:`.lifi`: async httpx, retries, rate-limit headers, error mapping (:class:`LifiClient`);
- :mod:`.provider`: :class:`AggregatorProvider`, what notebooks and the dashboard call.

Until the package was laid out by layer this path was the HTTP client's module, so its public
names stay importable from here (no warning: this package is public).
"""

from __future__ import annotations

from .lifi import (
    API_KEY_HEADER,
    DEFAULT_BASE_URL,
    LifiClient,
    RateLimit,
    RetryEvent,
    RetryPolicy,
    backoff_delay,
    parse_rate_limit,
    parse_retry_after,
)
from .provider import DEFAULT_INTEGRATOR, AggregatorProvider, ProgressCallback

__all__ = [
    "API_KEY_HEADER",
    "DEFAULT_BASE_URL",
    "DEFAULT_INTEGRATOR",
    "AggregatorProvider",
    "LifiClient",
    "ProgressCallback",
    "RateLimit",
    "RetryEvent",
    "RetryPolicy",
    "backoff_delay",
    "parse_rate_limit",
    "parse_retry_after",
]
