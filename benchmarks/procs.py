"""Child processes for the benchmark: start a server module, read its JSON ready line, read
its CPU time from ``/proc``, stop it.

Servers run in their own process, as in production, so the client's and the server's CPU are
measured apart: the client with :func:`time.process_time`, the server from
``/proc/PID/stat`` (utime + stime of every thread, in clock ticks), which is how to
measure per-process cost on this shared, noisy machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from settlement_widgets.channel.v0_5.node.process import drain_pipe

__all__ = ["ServerProcess", "cpu_seconds", "json_line", "pin_prefix", "server_process"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
REPO = Path(__file__).resolve().parent.parent


def cpu_seconds(pid: int) -> float:
    """CPU seconds process ``pid`` (all its live threads) has run so far.

    From ``/proc/PID/task/*/schedstat`` (the scheduler's exact ``sum_exec_runtime``, ns),
    not ``utime + stime`` of ``/proc/PID/stat``: on this kernel those are sampled at each
    250 Hz tick (``CONFIG_TICK_CPU_ACCOUNTING``), and a process that wakes an idle core for
    a short burst is charged whole ticks, which overstated the relay's sequential CPU ~3x.
    Falls back to ``/proc/PID/stat`` where schedstat is missing.
    """
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as fh:
                total += int(fh.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    with open(f"/proc/{pid}/stat", "rb") as fh:
        stat = fh.read()
    # the command name is in parentheses and may contain spaces: split after the last ')'
    fields = stat[stat.rindex(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def pin_prefix(core: int | None) -> list[str]:
    """``taskset -c N`` when pinning was asked for and taskset exists."""
    if core is None:
        return []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if os.access(os.path.join(folder, "taskset"), os.X_OK):
            return ["taskset", "-c", str(core)]
    return []


@dataclass
class ServerProcess:
    """A running server child: its ready line (parsed JSON) and its pid."""

    proc: asyncio.subprocess.Process
    ready: dict[str, Any]

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    def cpu(self) -> float:
        return cpu_seconds(self.pid)


def json_line(text: str) -> dict[str, Any] | None:
    """The default ready test: a line that is a JSON object."""
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None


@contextlib.asynccontextmanager
async def server_process(
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    pin: int | None = None,
    ready: Callable[[str], dict[str, Any] | None] = json_line,
    ready_timeout: float = 60.0,
) -> AsyncIterator[ServerProcess]:
    """Run ``python <args>`` (a full command unless ``args[0]`` is an option or a ``.py``)
    until ``ready`` accepts a line of its stdout (default: a JSON object line); stop it with
    SIGTERM (SIGKILL after 10 s). Both pipes are drained while it runs."""
    argv = list(args)
    if argv and (argv[0].startswith("-") or argv[0].endswith(".py")):
        argv = [sys.executable, *argv]
    proc = await asyncio.create_subprocess_exec(
        *pin_prefix(pin),
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        cwd=str(REPO),
    )
    tail: deque[bytes] = deque(maxlen=50)
    drains: list[asyncio.Task[None]] = []
    try:
        assert proc.stdout is not None and proc.stderr is not None
        drains.append(asyncio.create_task(drain_pipe(proc.stderr, tail)))
        info: dict[str, Any] | None = None
        while info is None:
            line = await asyncio.wait_for(proc.stdout.readline(), ready_timeout)
            if not line:
                await asyncio.sleep(0)  # let the stderr drain catch up before reporting
                err = b"".join(tail).decode(errors="replace")
                raise RuntimeError(f"{' '.join(argv)} exited before it was ready:\n{err[-2000:]}")
            info = ready(line.decode(errors="replace").strip())
        drains.append(asyncio.create_task(drain_pipe(proc.stdout, deque(maxlen=50))))
        yield ServerProcess(proc, info)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        for task in drains:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
