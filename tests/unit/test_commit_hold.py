"""The COMMIT hold for pipelining clients (``node_base.commit_hold``) and the committer's
``hold`` hook: which connections count as pipelining, how long a COMMIT waits, and that a
held COMMIT still releases nothing before it ran (and that ``flush`` cuts it short)."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from settlement_widgets.channel.node_base.commit_hold import CommitHold
from settlement_widgets.channel.node_base.committer import GroupCommitter


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_client_that_waits_for_each_reply_is_never_held() -> None:
    clock = _Clock()
    hold = CommitHold(clock)
    a, b = socket.socketpair()
    with a, b:
        sent: list[bytes] = []
        link = hold.link(sent.append, a.fileno())
        link.arrived()
        assert hold() == 0.0  # not (yet) known to pipeline
        link.release(b"reply")
        assert sent == [b"reply"] and link.parked == 0
        assert not link.pipelined  # nothing was waiting on the socket as the reply left


def test_a_request_readable_as_the_reply_leaves_marks_the_client_pipelining() -> None:
    clock = _Clock()
    hold = CommitHold(clock)
    a, b = socket.socketpair()
    with a, b:
        link = hold.link(lambda frame: None, a.fileno())
        link.arrived()
        b.sendall(b"next request, sent before the reply")
        link.release(b"reply")
        assert link.pipelined
        a.recv(100)
        link.arrived()
        link.release(b"reply")  # neither overlapped nor readable: no longer pipelining
        assert not link.pipelined


def test_a_request_arriving_while_a_reply_waits_marks_the_client_pipelining() -> None:
    hold = CommitHold(_Clock())
    link = hold.link(lambda frame: None, -1)  # no socket to look at: only the overlap counts
    link.arrived()
    link.arrived()
    assert link.overlapped and link.parked == 2
    link.release(b"1")
    assert not link.pipelined  # decided once the last parked reply leaves
    link.release(b"2")
    assert link.pipelined and not link.overlapped


def test_the_hold_ends_at_a_pause_at_the_latest_after_max_hold_or_max_batch() -> None:
    clock = _Clock()
    hold = CommitHold(clock)
    link = hold.link(lambda frame: None, -1)
    link.pipelined = True
    link.arrived()  # first change of the batch at t=100
    assert abs(hold() - CommitHold.GAP) < 1e-9  # a pause of GAP ends it
    clock.now += 0.0015
    link.arrived()
    clock.now += 0.0005
    assert abs(hold() - (CommitHold.GAP - 0.0005)) < 1e-9
    end = 100.0 + CommitHold.MAX_HOLD  # at most MAX_HOLD after the batch's first change
    step = CommitHold.GAP / 2
    while end - clock.now > 2 * CommitHold.GAP:  # a steady stream: held a GAP past each
        clock.now += step
        link.arrived()
        assert abs(hold() - CommitHold.GAP) < 1e-9
    clock.now = end - CommitHold.GAP / 4
    link.arrived()
    assert abs(hold() - CommitHold.GAP / 4) < 1e-9  # the batch's age bounds the hold
    clock.now = end + step
    link.arrived()
    assert hold() < 0  # past MAX_HOLD: commit now
    hold.committed()
    assert hold() == 0.0  # nothing pending
    link.arrived()
    assert hold() > 0
    for _ in range(CommitHold.MAX_BATCH):
        link.arrived()
    assert hold() == 0.0  # large enough: commit now
    hold.drop(link)
    hold.committed()
    link.arrived()
    assert hold() == 0.0  # a closed connection holds nothing


# --- the committer's hook -----------------------------------------------------------------


@dataclass
class _Batch:
    seq: int
    txs: list[int]


@dataclass
class _Source:
    path: Path
    synchronous: str = "FULL"
    pending: list[int] = field(default_factory=list)
    seq: int = 0

    @property
    def dirty(self) -> bool:
        return bool(self.pending)

    def take_batch(self) -> Any:
        if not self.pending:
            return None
        self.seq += 1
        batch, self.pending = _Batch(self.seq, self.pending), []
        return batch


def _committer(tmp_path: Path, written: list[list[int]]) -> tuple[GroupCommitter, _Source]:
    source = _Source(tmp_path / "hold.sqlite")
    sqlite3.connect(source.path).close()

    def write(conn: sqlite3.Connection, batch: _Batch) -> None:
        written.append(list(batch.txs))

    return GroupCommitter(source, threaded=False, write=write), source


def test_a_held_commit_takes_what_arrives_meanwhile_and_releases_only_after_it(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        written: list[list[int]] = []
        committer, source = _committer(tmp_path, written)
        holds = [0.01, 0.01, 0.0]
        asked: list[int] = []

        def hold() -> float:
            asked.append(len(written))
            return holds.pop(0)

        committer.hold = hold
        committer.start(asyncio.get_running_loop())
        released: list[int] = []
        source.pending.append(1)
        committer.after(committer.kick(), released.append, 1)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        source.pending.append(2)  # a second request during the hold joins the batch
        committer.after(committer.kick(), released.append, 2)
        assert released == [] and written == []
        await committer.wait(1)
        assert written == [[1, 2]] and released == [1, 2]
        assert asked == [0, 0, 0]  # asked again each time a hold ended
        await committer.aclose()

    asyncio.run(run())


def test_flush_cuts_a_hold_short_and_close_commits_what_is_held(tmp_path: Path) -> None:
    async def run() -> None:
        written: list[list[int]] = []
        committer, source = _committer(tmp_path, written)
        committer.hold = lambda: 3600.0  # an hour: only flush and close end it
        committer.start(asyncio.get_running_loop())
        source.pending.append(1)
        committer.kick()
        await asyncio.sleep(0.01)
        assert written == []
        await asyncio.wait_for(committer.flush(), 5)
        assert written == [[1]]
        source.pending.append(2)
        committer.kick()
        await asyncio.sleep(0.01)
        await asyncio.wait_for(committer.aclose(), 5)
        assert written == [[1], [2]]

    asyncio.run(run())


def test_a_request_already_here_while_a_reply_waits_starts_the_hold() -> None:
    """The COMMIT is due, the client's reply still waits, and its next request is already
    read (not handled yet) or on the socket: hold (it pipelines); with neither: commit."""
    clock = _Clock()
    hold = CommitHold(clock)
    received = [False]
    a, b = socket.socketpair()
    with a, b:
        link = hold.link(lambda frame: None, a.fileno(), lambda: received[0])
        link.arrived()
        assert hold() == 0.0
        received[0] = True  # read by the connection, not handled yet
        assert hold() > 0 and link.overlapped
        link.release(b"reply")
        assert link.pipelined
        received[0] = False
        link.arrived()
        link.release(b"reply")
        assert not link.pipelined
        hold.committed()
        link.arrived()
        assert hold() == 0.0
        b.sendall(b"next")  # on the socket
        assert hold() > 0
