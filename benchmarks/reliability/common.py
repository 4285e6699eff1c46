"""What every reliability check shares: its result value, percentiles, free ports, and the
registry of secrets that must never show up in logs, reprs, notebooks or widget HTML.

A check returns a :class:`CheckResult`: the figures it measured (``metrics``) and every
property it saw broken (``violations``, human-readable). The table, the JSON file and the
pytest tests all read the same value, so a test fails exactly when the published figure says
something went wrong.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "REPO",
    "CheckResult",
    "SecretRegistry",
    "capture_logs",
    "free_port",
    "percentile",
    "secrets",
]

REPO = Path(__file__).resolve().parents[2]


@dataclass
class CheckResult:
    """One check's outcome: ``metrics`` (JSON-able figures) and ``violations`` (broken
    properties; empty when everything held)."""

    name: str
    metrics: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations

    def fail(self, message: str) -> None:
        self.violations.append(message)

    def expect(self, condition: bool, message: str) -> None:
        if not condition:
            self.violations.append(message)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "seconds": round(self.seconds, 2),
            "metrics": self.metrics,
            "violations": self.violations,
        }


def percentile(values: Iterable[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100, nearest rank) or None for no values."""
    data = sorted(values)
    if not data:
        return None
    rank = max(0, min(len(data) - 1, round(q / 100 * len(data) + 0.5) - 1))
    return data[rank]


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


def free_port() -> int:
    """A loopback TCP port nobody listens on right now (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_HEX64 = re.compile(r"(?i)(?<![0-9a-f])(?:0x)?([0-9a-f]{64})(?![0-9a-f])")


class SecretRegistry:
    """Private keys seen during a run (dev keys, broker and faucet keys, session keys, the
    soak's wallets), kept as bare lowercase hex so a scan finds them in any spelling."""

    def __init__(self) -> None:
        self._secrets: dict[str, str] = {}

    def add(self, secret: str | bytes, label: str) -> None:
        text = secret.hex() if isinstance(secret, bytes) else secret
        text = text.lower().removeprefix("0x")
        if len(text) == 64:
            self._secrets.setdefault(text, label)

    def add_key(self, key: Any, label: str) -> None:
        """A :class:`~settlement_widgets.keys.PrivateKey` (or anything with ``secret_hex``)."""
        self.add(key.secret_hex(), label)

    def __len__(self) -> int:
        return len(self._secrets)

    def labels(self) -> list[str]:
        return sorted(set(self._secrets.values()))

    def find(self, text: str) -> list[str]:
        """Labels of the secrets that occur in ``text`` (case-insensitive, with or without
        0x); empty when none does."""
        found = []
        for match in _HEX64.finditer(text):
            label = self._secrets.get(match.group(1).lower())
            if label is not None:
                found.append(label)
        return found


#: the run's registry: the checks add what they create, the security check scans with it
secrets = SecretRegistry()


@contextlib.contextmanager
def capture_logs(level: int = logging.DEBUG) -> Iterator[io.StringIO]:
    """Everything the package logs (any logger) while the block runs, as text, so the
    security check can scan it for secrets. Levels are lowered only for the block."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(level)
    # third-party chatter (hpack frames, asyncio debug) would only slow the run down
    quiet = [logging.getLogger(n) for n in ("websockets", "urllib3", "httpcore", "hpack")]
    saved = [(q, q.level) for q in quiet]
    for q in quiet:
        q.setLevel(logging.INFO)
    try:
        yield buffer
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
        for q, lvl in saved:
            q.setLevel(lvl)


class Stopwatch:
    """``with Stopwatch() as sw: ...; sw.seconds``."""

    def __init__(self) -> None:
        self.start = 0.0
        self.seconds = 0.0

    def __enter__(self) -> Stopwatch:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start
