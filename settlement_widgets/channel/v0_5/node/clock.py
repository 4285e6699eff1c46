"""The relay's one wall clock in Unix milliseconds (frame timestamps, ``created_at``, nonces).

One function so every module stamps time the same way. The service passes its own clock
(``RelayService(clock=...)``) so tests can move time for the protocol rules (message expiry,
session keys); the ledger and the server read the system clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["now_ms"]


def now_ms(clock: Callable[[], float] | None = None) -> int:
    """Unix time in whole milliseconds, from ``clock`` (seconds, like :func:`time.time`) or,
    without one, from the system clock in integer nanoseconds (no float rounding)."""
    if clock is None:
        return time.time_ns() // 1_000_000
    return int(clock() * 1000)
