"""Start a server process and wait for the line of its log that says where it listens.

Jupyter servers print their URL on stderr once they listen; the tests that run a real one
(the shared sandbox under ``jupyter server``, the browser tests under ``jupyter lab``) start it
in its own process group, read its log on a thread (the pipe must not fill up), wait for the
banner, and on exit stop the whole group (kernels included): politely, then for good.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["LOOPBACK_SERVER_FLAGS", "Started", "process_until_banner"]

#: a Jupyter server (or JupyterLab) on a free loopback port, no browser, root allowed (CI)
LOOPBACK_SERVER_FLAGS = (
    "--no-browser",
    "--allow-root",
    "--ServerApp.ip=127.0.0.1",
    "--ServerApp.port=0",
    "--ServerApp.port_retries=0",
)


@dataclass
class Started:
    proc: subprocess.Popen[str]
    #: every line the process wrote on stderr so far (kept growing by the reader thread)
    log: list[str]
    #: the banner line's match
    match: re.Match[str]


@contextlib.contextmanager
def process_until_banner(
    args: Sequence[str],
    env: Mapping[str, str],
    banner: re.Pattern[str],
    *,
    what: str,
    timeout: float = 90,
    cwd: str | os.PathLike[str] | None = None,
) -> Iterator[Started]:
    """Run ``args`` until ``banner`` matches a line of its stderr; a process that exits or
    stays silent for ``timeout`` seconds fails the test with its log."""
    proc = subprocess.Popen(
        list(args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        text=True,
        start_new_session=True,
    )
    log: list[str] = []
    ready = threading.Event()
    found: dict[str, re.Match[str]] = {}

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line)
            match = banner.search(line)
            if match and not ready.is_set():
                found["match"] = match
                ready.set()
        ready.set()  # the process ended: stop waiting

    threading.Thread(target=read, daemon=True).start()
    try:
        assert ready.wait(timeout) and "match" in found, f"{what} did not start:\n" + "".join(log)
        yield Started(proc, log, found["match"])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
