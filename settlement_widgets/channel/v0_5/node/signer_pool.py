"""The relay's second core: signature recovery of a burst of requests on a helper thread.

Recovering a request's signer is the largest single cost of a relay request (~40 µs of
secp256k1, see ``benchmarks/floor.py``), and coincurve releases the GIL inside it. When one
read from a socket brings several requests (a pipelining client, or many clients at once),
:meth:`SignerPool.recover` splits them: a helper thread recovers the first half while the
event-loop thread recovers the second, and the loop thread then handles the requests in
order exactly as before, finding each signer already known. Group commit is untouched: the
requests still join the batch being built and their replies still wait for its COMMIT.

A lone request (one client sending one at a time) is recovered on the loop thread, as
before: handing one signature to a thread costs more in wake-ups than it saves.

A signature that does not recover is left unknown (``None``): the request handler recovers
it again and raises its own, precise error.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from typing import Any

from ....errors import SettlementError
from .wire import Incoming, recover_signer

__all__ = ["SignerPool"]

_STOP: Any = object()


def _recover_into(requests: Sequence[Incoming]) -> None:
    for req in requests:
        signers: list[bytes | None] = []
        for signature in req.sigs:
            try:
                signers.append(recover_signer(req.digest, signature))
            except SettlementError:
                signers.append(None)
        req.signers = signers


class SignerPool:
    """One helper thread recovering signers beside the event-loop thread."""

    #: fewer requests than this in one read are recovered on the loop thread alone
    MIN_BURST = 4

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name="relay-signers", daemon=True)
        self._thread.start()
        #: bursts split between the two threads (for tests and the benchmark)
        self.bursts = 0

    def recover(self, requests: Sequence[Incoming]) -> None:
        """Recover the signers of every request (each ``req.signers``), on two threads when
        there are enough of them; returns when all are done."""
        if len(requests) < self.MIN_BURST or not self._thread.is_alive():
            return  # the handler recovers them one by one, as it always did
        half = len(requests) // 2
        done = threading.Event()
        self._jobs.put((requests[:half], done))
        _recover_into(requests[half:])
        done.wait()
        self.bursts += 1

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            requests, done = job
            try:
                _recover_into(requests)
            finally:
                done.set()

    def close(self) -> None:
        self._jobs.put(_STOP)
        self._thread.join(5)
