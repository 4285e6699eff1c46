"""The per-address sliding-window limiter, driven by an explicit clock."""

from __future__ import annotations

import pytest

from settlement_widgets.api.ratelimit import RateLimiter
from settlement_widgets.errors import SettlementValueError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_allows_limit_per_window_then_says_how_long_to_wait() -> None:
    clock = Clock()
    limiter = RateLimiter(2, 60, clock=clock)
    assert limiter.check("a") is None
    clock.now += 10
    assert limiter.check("a") is None
    clock.now += 5
    assert limiter.check("a") == pytest.approx(45.0)  # the first hit leaves the window at +60
    assert limiter.check("b") is None  # per key
    clock.now += 45
    assert limiter.check("a") is None
    assert limiter.check("a") == pytest.approx(10.0)


def test_refused_requests_do_not_extend_the_wait() -> None:
    clock = Clock()
    limiter = RateLimiter(1, 30, clock=clock)
    assert limiter.check("a") is None
    for _ in range(5):
        clock.now += 1
        limiter.check("a")
    clock.now = 1030.0
    assert limiter.check("a") is None


def test_memory_is_bounded() -> None:
    clock = Clock()
    limiter = RateLimiter(1, 60, clock=clock, max_keys=3)
    for key in "abcd":
        assert limiter.check(key) is None
    assert len(limiter) == 3
    assert limiter.check("a") is None  # the oldest key was evicted
    clock.now += 61
    limiter.check("z")
    assert len(limiter) == 1  # idle keys pruned when full


def test_retry_after_header_rounds_up() -> None:
    assert RateLimiter.retry_after_header(0.2) == "1"
    assert RateLimiter.retry_after_header(44.01) == "45"
    assert RateLimiter.retry_after_header(0.0) == "1"


@pytest.mark.parametrize(("limit", "window"), [(0, 1), (True, 1), (1, 0), (1, -5), (1.5, 1)])
def test_bad_settings_are_refused(limit: object, window: object) -> None:
    with pytest.raises(SettlementValueError):
        RateLimiter(limit, window)  # type: ignore[arg-type]
