"""A local node in its own process, as a real deployment runs one, for either version.

:class:`NodeProcess` starts ``python -m <module>`` on a database and port, reads its ready
line, SIGKILLs it (the crash tests: a node killed mid-stream, as after a power cut or an
OOM kill) and restarts it on the same database and port. The v0.5 relay's
:class:`~..v0_5.node.process.RelayProcess` and the v1
:class:`~..v1.node.process.NitronodeProcess` extend it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections import deque
from typing import Any, Self

from ...errors import RelayUnavailableError
from ...keys import PrivateKey

__all__ = ["NodeProcess", "drain_pipe"]


class NodeProcess:
    """A node served by ``python -m <module>`` in a child process: start, SIGKILL, restart.

    The shared half of :class:`RelayProcess` (v0.5) and the v1 Nitronode's process class:
    a subclass says which module to run (:meth:`_argv`), which environment variable carries
    its key (never the command line: ``/proc/PID/cmdline`` is world-readable) and which key
    of the JSON ready line holds the URL. :meth:`start` returns once the node listens;
    :meth:`kill` is a SIGKILL; :meth:`restart` starts a new process on the same database and
    port, so clients reconnect to the same URL.
    """

    #: the key of the ready line that holds the ``ws://`` URL
    URL_KEY = "relayUrl"
    #: what the node is called in error messages
    NAME = "relay"

    def __init__(self, *, key: PrivateKey, key_env: str, port: int = 0) -> None:
        self._key = key
        self._key_env = key_env
        self._port = port
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr: deque[bytes] = deque(maxlen=100)
        self._drains: list[asyncio.Task[None]] = []
        self.ready: dict[str, Any] = {}

    def _argv(self) -> list[str]:
        """The child's command line (the port is :attr:`_port`, sticky across restarts)."""
        raise NotImplementedError

    # --- identity -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The node's ``ws://127.0.0.1:<port>/...`` (the same across restarts)."""
        if not self.ready:
            raise RelayUnavailableError(f"the {self.NAME} process is not started")
        return str(self.ready[self.URL_KEY])

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RelayUnavailableError(f"the {self.NAME} process is not started")
        return int(self._proc.pid)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self, timeout: float = 60.0) -> Self:
        """Spawn the node and wait for its ready line (it listens once it printed it)."""
        if self.running:
            return self
        env = {**os.environ, "PYTHONUNBUFFERED": "1", self._key_env: self._key.secret_hex()}
        proc = await asyncio.create_subprocess_exec(
            *self._argv(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        self._proc = proc
        assert proc.stdout is not None and proc.stderr is not None
        self._stderr.clear()
        self._drains = [asyncio.create_task(drain_pipe(proc.stderr, self._stderr))]
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout)
            if not line:
                await proc.wait()
                for task in self._drains:
                    await task
                raise RelayUnavailableError(
                    f"the {self.NAME} process exited ({proc.returncode}) before it listened: "
                    f"{self.stderr_tail()}"
                )
            self.ready = json.loads(line)
        except BaseException:
            await self._reap(signal.SIGKILL)
            raise
        self._drains.append(asyncio.create_task(drain_pipe(proc.stdout, deque(maxlen=10))))
        self._port = int(self.url.rsplit(":", 1)[1].split("/", 1)[0])
        return self

    def stderr_tail(self) -> str:
        """What the node last wrote to stderr (its log), for error messages."""
        return b"".join(self._stderr).decode(errors="replace")[-4000:]

    async def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a power cut or an OOM kill."""
        await self._reap(signal.SIGKILL)

    async def restart(self) -> Self:
        """Stop the node (SIGTERM) if it runs, then start a new one on the same port."""
        await self._reap(signal.SIGTERM)
        return await self.start()

    async def aclose(self) -> None:
        """SIGTERM (the node commits and closes), SIGKILL after 10 s."""
        await self._reap(signal.SIGTERM)

    async def _reap(self, sig: int) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(sig)
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        for task in self._drains:
            with contextlib.suppress(Exception):
                await task
        self._drains = []

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.returncode

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def drain_pipe(stream: asyncio.StreamReader, keep: deque[bytes]) -> None:
    """Keep reading a child's pipe so that it never blocks on a full pipe; ``keep`` (a
    bounded deque) holds its last lines for error messages."""
    while True:
        line = await stream.readline()
        if not line:
            return
        keep.append(line)
