"""``WriteGroup``: the store writes of one loop turn share one COMMIT, each caller resumes
only after its own write committed, and one failing write does not fail the others."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from settlement_widgets.channel import ChannelStore
from settlement_widgets.channel.v0_5.client.write_group import WriteGroup
from settlement_widgets.errors import StorageError

WALLET = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


def _add(store: ChannelStore, request_id: int) -> int | None:
    return store.add_transfer(
        channel_id=None,
        direction="out",
        from_account=WALLET,
        to_account="0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
        asset="ytest.usd",
        amount=1,
        request_id=request_id,
    )


def _committed_rows(path: Path) -> int:
    """Rows another connection sees: what is committed, not what is pending in ours."""
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM transfers").fetchone()[0])


async def test_writes_of_one_turn_share_one_commit(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with ChannelStore(path, wallet=WALLET) as store:
        group = WriteGroup(store)
        futures = [group.write(lambda i=i: _add(store, i)) for i in range(20)]
        assert _committed_rows(path) == 0  # queued, not written: the turn is not over
        rows = await asyncio.gather(*futures)
        assert group.commits == 1 and group.writes == 20
        assert len(set(rows)) == 20 and _committed_rows(path) == 20

        async def one(i: int) -> None:
            row = await group.write(lambda: _add(store, 100 + i))
            assert row is not None
            # resumed only after the COMMIT: another connection sees the row already
            assert _committed_rows(path) >= 21

        await asyncio.gather(*(one(i) for i in range(10)))
        assert group.commits == 2 and group.writes == 30


async def test_a_write_alone_commits_at_once(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with ChannelStore(path, wallet=WALLET) as store:
        group = WriteGroup(store)
        future = group.write(lambda: _add(store, 1), alone=True)
        assert future.done() and _committed_rows(path) == 1  # no turn of the loop needed
        queued = group.write(lambda: _add(store, 2))
        joined = group.write(lambda: _add(store, 3), alone=True)  # something is queued: joins
        assert not joined.done()
        await asyncio.gather(queued, joined)
        assert group.commits == 2 and _committed_rows(path) == 3


async def test_one_failing_write_does_not_fail_the_others(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with ChannelStore(path, wallet=WALLET) as store:
        group = WriteGroup(store)

        def broken() -> None:
            store.finish_transfer(1, status="done")
            raise ValueError("a bug in one caller")

        good = [group.write(lambda i=i: _add(store, i)) for i in range(3)]
        bad = group.write(broken)
        results = await asyncio.gather(*good, bad, return_exceptions=True)
        assert all(isinstance(r, int) for r in results[:3])
        assert isinstance(results[3], ValueError)
        assert _committed_rows(path) == 3
        store.close()
        closed = group.write(lambda: _add(store, 9))
        with pytest.raises(StorageError, match="closed"):
            await closed
