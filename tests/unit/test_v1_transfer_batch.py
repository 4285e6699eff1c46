"""Pipelined transfers answered together are stored in one commit, each caller answered
only once its rows are in, and a failing shared write falls back to one write each.

Drives ``TransferOps._transfer_recorded`` on a provider object holding only what the
recording needs (a real :class:`V1Store`, the listeners, the wallet address), so the test
sees exactly which rows are committed when.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from settlement_widgets.channel.v1.client.provider import ChannelProviderV1
from settlement_widgets.channel.v1.client.store import V1Store
from settlement_widgets.errors import StorageError

WALLET = "0x" + "34" * 20
RECIPIENT = "0x" + "12" * 20


def _provider(store: V1Store) -> Any:
    provider: Any = ChannelProviderV1.__new__(ChannelProviderV1)
    provider._store = store
    provider._asset = "yusd"
    provider._decimals = 6
    provider._pipeline = []
    provider._done_batch = []
    provider._listeners = {"transfer": []}
    provider.wallet = SimpleNamespace(address=WALLET)
    return provider


def _state(version: int) -> dict[str, Any]:
    return {
        "asset": "yusd",
        "epoch": "0",
        "version": str(version),
        "home_channel_id": "0x" + "ab" * 32,
        "transition": {"type": 30, "tx_id": f"0x{version:064x}", "amount": "0.5"},
        "user_sig": f"0xu{version}",
        "node_sig": f"0xn{version}",
    }


@pytest.fixture
def store(tmp_path: Path) -> V1Store:
    return V1Store(tmp_path / "v1.sqlite")


async def test_answers_of_one_turn_share_a_commit(store: V1Store) -> None:
    provider = _provider(store)
    provider._pipeline = ["a state still in flight"]
    commits: list[int] = []
    seen: list[str] = []
    provider._listeners["transfer"].append(lambda t: seen.append(t.amount))
    real = store.transaction

    def counting(**kwargs: Any) -> Any:
        if not store._depth:  # an outer transaction: a commit of its own
            commits.append(1)
        return real(**kwargs)

    store.transaction = counting  # type: ignore[method-assign]
    done = await asyncio.gather(
        *(provider._transfer_recorded(_state(v), RECIPIENT) for v in (1, 2, 3))
    )
    assert len(commits) == 1  # one transaction for the three
    assert [t.amount for t in done] == [500_000] * 3
    assert len({t.id for t in done}) == 3
    assert seen == [500_000] * 3  # each announced once, after the commit
    assert [s["node_sig"] for s in store.states("yusd")] == ["0xn1", "0xn2", "0xn3"]
    assert len(store.transfers()) == 3


async def test_nothing_in_flight_is_written_at_once(store: V1Store) -> None:
    provider = _provider(store)
    coro = provider._transfer_recorded(_state(1), RECIPIENT)
    with pytest.raises(StopIteration) as stop:  # done without waiting for the loop
        coro.send(None)
    assert stop.value.value.amount == 500_000
    assert store.latest_state("yusd")["node_sig"] == "0xn1"  # type: ignore[index]


async def test_a_failing_shared_write_falls_back_to_one_each(store: V1Store) -> None:
    provider = _provider(store)
    provider._pipeline = ["a state still in flight"]
    real = provider._record_transfer
    calls = {"n": 0}

    def flaky(state: Any, direction: str, other: str) -> Any:
        calls["n"] += 1
        if state["version"] == "2":
            raise StorageError("disk says no")
        return real(state, direction, other)

    provider._record_transfer = flaky
    results = await asyncio.gather(
        *(provider._transfer_recorded(_state(v), RECIPIENT) for v in (1, 2, 3)),
        return_exceptions=True,
    )
    assert isinstance(results[1], StorageError)
    assert [r.amount for r in (results[0], results[2])] == [500_000, 500_000]
    assert [s["version"] for s in store.states("yusd")] == ["1", "3"]  # 2 rolled back
    assert len(store.transfers()) == 2


async def test_a_cancelled_caller_still_has_its_rows_stored(store: V1Store) -> None:
    provider = _provider(store)
    provider._pipeline = ["a state still in flight"]
    waiting = asyncio.ensure_future(provider._transfer_recorded(_state(1), RECIPIENT))
    other = asyncio.ensure_future(provider._transfer_recorded(_state(2), RECIPIENT))
    await asyncio.wait((waiting,), timeout=0)  # both queued, the flush not yet run
    waiting.cancel()
    assert (await other).amount == 500_000
    assert waiting.cancelled()
    assert [s["node_sig"] for s in store.states("yusd")] == ["0xn1", "0xn2"]
    assert len(store.transfers()) == 2
