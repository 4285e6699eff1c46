"""Holding a COMMIT while a pipelining client is still sending: one fsync for its states.

Why: a synced COMMIT is the largest single cost of a state on the node (about 90 us of
process CPU here, the same for one state as for fifty). The inline
:class:`~.committer.GroupCommitter` commits as soon as the event loop is idle, which groups
what arrived together; but a client that pipelines (sends its next state before the reply
to the last one, as :meth:`~..v1.client.transfers.TransferOps.transfer` does for concurrent
transfers) sends one state at a time, each a little after the node finished the one before,
so the node, keeping up, committed every state alone. :class:`CommitHold` is the
committer's :attr:`~.committer.GroupCommitter.hold`: while such a client has replies
waiting, it holds the COMMIT until the client pauses (:attr:`CommitHold.GAP` without a new
request), the batch is old (:attr:`CommitHold.MAX_HOLD`) or large
(:attr:`CommitHold.MAX_BATCH`). Replies still leave only after their COMMIT, so nothing is
acknowledged earlier; they only wait a few milliseconds longer, which a pipelining client
does not notice (it has other states in flight meanwhile).

A client that waits for each reply is never held: it cannot send before the reply leaves,
so holding would only add latency. A connection counts as pipelining when a request of it
arrived, or is readable on its socket, while an earlier reply of it was still waiting for
its COMMIT (the client sent it without waiting), looked at when the COMMIT is due and as the
last waiting reply leaves; it stops counting once a reply leaves with neither.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable
from typing import Any, Final

__all__ = ["CommitHold", "Link"]


def _readable(fd: int) -> bool:
    """Whether the socket has data waiting (a zero-timeout ``select``; False if closed)."""
    if fd < 0:
        return False
    try:
        return bool(select.select((fd,), (), (), 0)[0])
    except (OSError, ValueError):
        return False


class Link:
    """One connection's replies waiting for their COMMIT, and whether its client pipelines.

    The node calls :meth:`arrived` for each request it has handled and hands
    :meth:`release` to the committer as the reply's callback."""

    __slots__ = ("_fd", "_hold", "_received", "overlapped", "parked", "pipelined", "push")

    def __init__(
        self,
        hold: CommitHold,
        push: Callable[[bytes], Any],
        fd: int,
        received: Callable[[], bool] | None = None,
    ) -> None:
        self._hold = hold
        self.push = push
        self._fd = fd
        #: whether the connection holds a message it read and the node has not handled yet
        self._received = received
        #: replies handed to the committer and not released yet
        self.parked = 0
        #: a request arrived while an earlier reply was parked (since the last release)
        self.overlapped = False
        #: the client sends without waiting for replies (the hold applies to it)
        self.pipelined = False

    def arrived(self) -> None:
        """A request of this connection was handled; its reply is about to be parked."""
        self.parked += 1
        if self.parked > 1:
            self.overlapped = True
        self._hold.arrived()

    def waiting(self) -> bool:
        """Whether the client's next request is already here (read and not handled yet, or
        on the socket) while a reply of it waits for its COMMIT: it sent without waiting."""
        if (self._received is not None and self._received()) or _readable(self._fd):
            self.overlapped = True
            return True
        return False

    def release(self, frame: bytes) -> None:
        """The reply's COMMIT is done: send it; with the last parked one, decide whether
        the client pipelines."""
        self.push(frame)
        self.parked -= 1
        if self.parked == 0 and self._hold.enabled:
            self.pipelined = self.overlapped or _readable(self._fd)
            self.overlapped = False


class CommitHold:
    """The v1 node's :attr:`~.committer.GroupCommitter.hold` (see the module docstring):
    call it for the seconds to wait before the next COMMIT."""

    #: the longest a change waits for others to join its COMMIT (seconds). 64 transfers in
    #: flight here: 5 ms left about 5 states per COMMIT, 20 ms cut the node's CPU per transfer
    #: by a further ~10% (and the client's, which reads replies in bursts), 50 ms no more;
    #: a client with 64 in flight at ~1,000/s has ~60 ms of replies to wait for anyway
    MAX_HOLD: Final = 0.02
    #: the client is taken to have paused once no request arrived for this long (seconds):
    #: a few times the interval at which a pipelining client sends here, even on a busy host
    GAP: Final = 0.005
    #: requests after which the COMMIT is not held any longer
    MAX_BATCH: Final = 64

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, *, enabled: bool = True
    ) -> None:
        self._clock = clock
        #: off: the links only pass replies on (no socket looks); the committer never asks
        self.enabled = enabled
        self.links: set[Link] = set()
        self._first: float | None = None
        self._last = 0.0
        self._count = 0

    def link(
        self, push: Callable[[bytes], Any], fd: int, received: Callable[[], bool] | None = None
    ) -> Link:
        """A new connection (``push`` sends a reply, ``fd`` is its socket, ``received`` says
        whether it holds a message read and not handled yet)."""
        link = Link(self, push, fd, received)
        self.links.add(link)
        return link

    def drop(self, link: Link) -> None:
        """The connection closed."""
        self.links.discard(link)

    def arrived(self) -> None:
        now = self._clock()
        if self._first is None:
            self._first = now
        self._last = now
        self._count += 1

    def committed(self, seq: int = 0) -> None:
        """A batch committed (the committer's ``on_released``): the next one starts."""
        self._first = None
        self._count = 0

    def __call__(self) -> float:
        if self._first is None or self._count >= self.MAX_BATCH:
            return 0.0
        if not any(
            link.parked and (link.pipelined or link.overlapped or link.waiting())
            for link in self.links
        ):
            return 0.0
        return min(self._first + self.MAX_HOLD, self._last + self.GAP) - self._clock()
