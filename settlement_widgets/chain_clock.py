"""The chain's clock: what a dispute waits for after a challenge.

A challenged channel can be closed only once the chain's time (the latest block's timestamp)
has passed the challenge expiry. The sandbox moves its clock on request
(:meth:`~settlement_widgets.sandbox.chain.Chain.time_travel`); a public chain only moves with
new blocks, so :func:`wait_for_chain_time` polls block timestamps until the target is
passed. Chain time, not the local wall clock: a node's clock and ours may differ, and only
the node's decides whether ``Custody.close`` succeeds.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .errors import SettlementTimeoutError, SettlementValueError

if TYPE_CHECKING:
    from web3 import AsyncWeb3

__all__ = ["chain_time", "wait_for_chain_time"]


async def chain_time(w3: AsyncWeb3[Any]) -> int:
    """The latest block's timestamp (unix seconds)."""
    block = await w3.eth.get_block("latest")
    return int(block["timestamp"])


async def wait_for_chain_time(
    w3: AsyncWeb3[Any],
    target: int,
    *,
    poll_interval: float = 6.0,
    timeout: float | None = None,
) -> int:
    """Return the first latest-block timestamp seen that is at least ``target``.

    Polls every ``poll_interval`` seconds (Sepolia makes a block about every 12 s). Raises
    :class:`SettlementTimeoutError` if ``timeout`` seconds pass first.
    """
    if isinstance(target, bool) or not isinstance(target, int) or target < 0:
        raise SettlementValueError(f"target must be a unix time in seconds, got {target!r}")
    if (
        isinstance(poll_interval, bool)
        or not isinstance(poll_interval, int | float)
        or not (poll_interval > 0)
    ):
        raise SettlementValueError(
            f"poll_interval must be a positive number of seconds, got {poll_interval!r}"
        )
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
    ):
        raise SettlementValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while True:
        now = await chain_time(w3)
        if now >= target:
            return now
        if deadline is not None and loop.time() + poll_interval > deadline:
            raise SettlementTimeoutError(
                f"the chain's time is {now}, still {target - now} s short of {target}, after "
                f"waiting {timeout:g} s"
            )
        await asyncio.sleep(poll_interval)
