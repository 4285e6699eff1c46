"""``wait_for_chain_time`` against real chains (in-process py-evm and anvil): it returns once
the latest block's timestamp reaches the target, which here a concurrent time travel makes
happen, and it times out with a clear error when the chain's clock does not get there."""

from __future__ import annotations

import asyncio

import pytest

from settlement_widgets.chain_clock import chain_time, wait_for_chain_time
from settlement_widgets.errors import SettlementTimeoutError, SettlementValueError
from settlement_widgets.sandbox import Chain

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_a_passed_target_returns_the_chain_time_at_once(chain: Chain) -> None:
    now = await chain_time(chain.w3)
    assert now == await chain.timestamp()
    assert await wait_for_chain_time(chain.w3, now, poll_interval=60) == now
    assert await wait_for_chain_time(chain.w3, 0, poll_interval=60) == now


async def test_waits_until_the_chain_clock_passes_the_target(chain: Chain) -> None:
    target = await chain_time(chain.w3) + 3600
    waiting = asyncio.ensure_future(wait_for_chain_time(chain.w3, target, poll_interval=0.02))
    moved = await chain.time_travel(3601)
    seen = await asyncio.wait_for(waiting, 30)
    assert target <= seen <= moved


async def test_times_out_when_the_clock_does_not_get_there(chain: Chain) -> None:
    target = await chain_time(chain.w3) + 10**6
    with pytest.raises(SettlementTimeoutError, match="short of"):
        await wait_for_chain_time(chain.w3, target, poll_interval=0.01, timeout=0.05)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"target": -1}, "target"),
        ({"target": True}, "target"),
        ({"target": 1.5}, "target"),
        ({"target": 1, "poll_interval": 0}, "poll_interval"),
        ({"target": 1, "timeout": -1}, "timeout"),
    ],
)
async def test_bad_arguments_are_refused(chain: Chain, kwargs: dict, match: str) -> None:
    with pytest.raises(SettlementValueError, match=match):
        await wait_for_chain_time(chain.w3, **kwargs)
