"""One command-line sandbox per ``SETTLEMENT_HOME``.

Two ``python -m settlement_widgets.sandbox`` on one home used to share
``$SETTLEMENT_HOME/sandbox/profile.json``: the second overwrote the profile the first still
served, and stopping the second deleted it. Now a sandbox holds an exclusive ``flock`` on
``$SETTLEMENT_HOME/sandbox/sandbox.lock`` from before it starts until after it has removed
its profile, and writes its pid (then its URL, once it serves) into that file. A second one
on the same home is refused with the running one's pid and URL.

The kernel drops a ``flock`` when its holder dies, however it dies (SIGKILL, a crash, the
machine's OOM killer), so a crashed sandbox leaves a profile but no lock: the next one takes
the home over. A profile nobody holds the lock for is taken over too when its sandbox does
not answer; one that does answer (a sandbox started in a kernel with
``LocalSandbox(write_profile=True)``, or by an older version) is refused, since overwriting
it would cut its users off.

The lock file is never deleted (deleting it would let two sandboxes lock two different files
of the same name); a released one is emptied.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError

__all__ = ["LOCK_NAME", "Holder", "SandboxLock", "refusal_message"]

LOCK_NAME = "sandbox.lock"


@dataclass(frozen=True)
class Holder:
    """Who serves a home: the pid (None when only its profile is known) and its URL (None
    while it is still starting)."""

    pid: int | None
    url: str | None


def refusal_message(home: Path, holder: Holder) -> str:
    """Why a second sandbox does not start, and what to do instead."""
    who = f"pid {holder.pid}" if holder.pid is not None else "pid not known"
    where = f"serving {holder.url}" if holder.url else "still starting"
    stop = f"stop it (kill {holder.pid}) " if holder.pid is not None else "stop it "
    return (
        f"a sandbox is already running on SETTLEMENT_HOME={home} ({who}, {where}); "
        f"{stop}or start this one with another SETTLEMENT_HOME"
    )


class SandboxLock:
    """The exclusive lock of one ``SETTLEMENT_HOME``'s command-line sandbox."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / "sandbox" / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`ConfigurationError` naming the holder's pid and
        URL. Non-blocking: a second sandbox is told at once."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._read(fd)
            os.close(fd)
            raise ConfigurationError(refusal_message(self.home, holder)) from None
        self._fd = fd
        self._write(Holder(os.getpid(), None))

    def publish(self, url: str) -> None:
        """Say where this sandbox serves, for the message a second one prints."""
        self._write(Holder(os.getpid(), url))

    def release(self) -> None:
        """Empty the file and drop the lock (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the last descriptor drops the flock

    def _write(self, holder: Holder) -> None:
        assert self._fd is not None
        data = json.dumps({"pid": holder.pid, "url": holder.url}).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    @staticmethod
    def _read(fd: int) -> Holder:
        try:
            data: Any = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
        pid, url = data.get("pid"), data.get("url")
        return Holder(pid if isinstance(pid, int) else None, url if isinstance(url, str) else None)
