"""The token bucket both sides of a v1 connection use, and the node's limit settings.

Rules of the Go buckets (Nitrolite v1.4.1 ``pkg/rpc/rate_limiter.go``,
``nitronode/api/rate_limits.go``): full at start, refilled by elapsed time x rate, capped at
the burst, and a refused request takes nothing. Settings are checked as the real node checks
them at start (``nitronode/runtime.go``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from settlement_widgets.channel.v1.core.rate_limit import TokenBucket
from settlement_widgets.channel.v1.node.config import (
    NitronodeConfig,
    NodeAsset,
    NodeChain,
    NodeToken,
    rate_limits_from_env,
)
from settlement_widgets.errors import ConfigurationError, SettlementValueError
from settlement_widgets.keys import PrivateKey

TOKEN = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_starts_full_refills_with_time_and_caps_at_the_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(10, 20, clock=clock)
    assert [bucket.admit() for _ in range(21)] == [True] * 20 + [False]
    assert bucket.delay() == pytest.approx(0.1)
    clock.now += 0.05
    assert not bucket.admit()  # half a token: refused, and nothing taken
    clock.now += 0.05
    assert bucket.admit() and not bucket.admit()
    clock.now += 3600
    assert bucket.tokens == 20  # never more than the burst
    assert bucket.admit(20) and bucket.delay(20) == pytest.approx(2.0)


def test_a_clock_going_back_takes_nothing_and_gives_nothing() -> None:
    clock = Clock()
    bucket = TokenBucket(10, 2, clock=clock)
    assert bucket.admit() and bucket.admit()
    clock.now -= 5
    assert not bucket.admit()
    clock.now += 5.1  # only the time after the latest reading counts
    assert bucket.admit() and not bucket.admit()


def test_a_bucket_that_can_never_fill_says_so() -> None:
    clock = Clock()
    assert TokenBucket(0, 1, clock=clock).delay(2) == float("inf")
    empty = TokenBucket(0, 1, clock=clock)
    empty.drain()
    assert empty.delay() == float("inf") and not empty.admit()
    with pytest.raises(SettlementValueError):
        TokenBucket(-1, 20)
    with pytest.raises(SettlementValueError):
        TokenBucket(True, 20)


def _config(**limits: float) -> NitronodeConfig:
    return NitronodeConfig(
        db_path=Path("unused.sqlite"),
        node_key=PrivateKey("0x" + "02" * 32),
        chains=(NodeChain(31337, TOKEN),),
        assets=(NodeAsset("usdc", 6, (NodeToken(31337, TOKEN, 6),)),),
        **limits,  # type: ignore[arg-type]
    )


def test_the_node_defaults_are_the_real_nodes() -> None:
    config = _config()
    assert (config.rate_limit_per_sec, config.rate_limit_burst) == (10, 20)
    assert config.ws_max_message_size == 131072
    assert (config.ws_bytes_per_sec, config.ws_bytes_burst) == (262144, 1048576)


@pytest.mark.parametrize(
    ("limits", "text"),
    [
        ({"ws_max_message_size": 0}, "the WebSocket frame cap cannot be disabled"),
        ({"ws_bytes_burst": 0}, "NITRONODE_WS_BYTES_BURST must be > 0"),
        ({"ws_bytes_burst": 1000}, "must be >= NITRONODE_WS_MAX_MESSAGE_SIZE"),
        ({"rate_limit_burst": -1}, "must be >= 0"),
    ],
)
def test_limits_the_real_node_refuses_to_start_with(limits: dict, text: str) -> None:
    with pytest.raises(ConfigurationError, match=text):
        _config(**limits)


def test_a_disabled_byte_budget_needs_no_burst() -> None:
    assert _config(ws_bytes_per_sec=-1, ws_bytes_burst=0).ws_bytes_burst == 0


def test_limits_come_from_the_real_nodes_environment_variables() -> None:
    env = {
        "NITRONODE_RATE_LIMIT_PER_SEC": "2.5",
        "NITRONODE_RATE_LIMIT_BURST": "5",
        "NITRONODE_WS_MAX_MESSAGE_SIZE": "65536",
        "NITRONODE_WS_BYTES_PER_SEC": " ",
        "OTHER": "1",
    }
    assert rate_limits_from_env(env) == {
        "rate_limit_per_sec": 2.5,
        "rate_limit_burst": 5.0,
        "ws_max_message_size": 65536,
    }
    with pytest.raises(ConfigurationError, match="NITRONODE_RATE_LIMIT_BURST"):
        rate_limits_from_env({"NITRONODE_RATE_LIMIT_BURST": "lots"})
