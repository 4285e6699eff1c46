"""The floor, measured in the same run as the transfers.

- Crypto: a raw coincurve ``sign_recoverable`` with a parsed key plus a raw
  ``PublicKey.from_signature_and_message`` and the keccak of the public key (the address),
  i.e. the least any signer/verifier pair does per signed message. A transfer needs two of
  each (client signs, relay recovers; relay countersigns, client recovers).
- Network: a bare websockets echo server in its own process (:mod:`.echo_server`), driven by
  the same sans-I/O client loop as the transfer benchmark, with messages the size of a
  transfer request: sequential round trips and a pipelined window.

- Disk: a loop of small ``pwrite`` + ``fsync`` on a file in the directory the relay's ledger
  uses (:func:`fsync_floor`): the least a ``synchronous=FULL`` COMMIT waits for. A durable
  relay answering one transfer at a time cannot beat one of these per transfer.

``floor per transfer`` = echo round trip + 2 x (sign + recover), in wall time (sequential)
and in CPU (both processes, pipelined).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from dataclasses import dataclass

import coincurve

from settlement_widgets._keccak import keccak256

from .lean_client import SansIOClient
from .procs import server_process

__all__ = [
    "CryptoFloor",
    "EchoResult",
    "FsyncFloor",
    "crypto_floor",
    "echo_floor",
    "filesystem_of",
    "fsync_floor",
]


@dataclass
class CryptoFloor:
    """Per-operation medians (µs): CPU (``thread_time``) and wall."""

    sign_us: float
    recover_us: float
    sign_wall_us: float
    recover_wall_us: float

    @property
    def pair_us(self) -> float:
        return self.sign_us + self.recover_us

    @property
    def pair_wall_us(self) -> float:
        return self.sign_wall_us + self.recover_wall_us


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


@dataclass
class FsyncFloor:
    """``pwrite`` of 4 KiB + ``fsync``, wall time per pair (µs): median and p99."""

    median_us: float
    p99_us: float
    count: int
    directory: str


def fsync_floor(seconds: float = 1.0, directory: str | None = None) -> FsyncFloor:
    """Write and fsync 4 KiB pages of a scratch file in ``directory`` (the temporary
    directory, where the benchmark's relay keeps its ledger) for about ``seconds``."""
    import tempfile

    folder = directory or tempfile.gettempdir()
    fd, path = tempfile.mkstemp(prefix="sw-fsync-", dir=folder)
    samples: list[float] = []
    page = os.urandom(4096)
    try:
        end = time.perf_counter() + seconds
        i = 0
        while time.perf_counter() < end or len(samples) < 50:
            t0 = time.perf_counter_ns()
            os.pwrite(fd, page, (i % 16) * 4096)
            os.fsync(fd)
            samples.append((time.perf_counter_ns() - t0) / 1e3)
            i += 1
    finally:
        os.close(fd)
        os.unlink(path)
    ordered = sorted(samples)
    return FsyncFloor(
        median_us=ordered[len(ordered) // 2],
        p99_us=ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        count=len(ordered),
        directory=folder,
    )


def crypto_floor(seconds: float = 1.0, repeats: int = 5) -> CryptoFloor:
    """Median over ``repeats`` runs of about ``seconds / repeats / 2`` each per operation."""
    key = coincurve.PrivateKey(os.urandom(32))
    digest = keccak256(os.urandom(300))
    signature = key.sign_recoverable(digest, hasher=None)

    def sign() -> None:
        key.sign_recoverable(digest, hasher=None)

    def recover() -> None:
        public = coincurve.PublicKey.from_signature_and_message(signature, digest, hasher=None)
        keccak256(public.format(compressed=False)[1:])

    results: dict[str, tuple[float, float]] = {}
    for name, op in (("sign", sign), ("recover", recover)):
        # calibrate a batch size of about 20 ms
        n = 50
        while True:
            t0 = time.perf_counter()
            for _ in range(n):
                op()
            if time.perf_counter() - t0 > 0.02 or n > 1_000_000:
                break
            n *= 2
        per_repeat = max(1, int(n * (seconds / repeats / 2) / 0.02))
        cpu: list[float] = []
        wall: list[float] = []
        for _ in range(repeats):
            c0, w0 = time.thread_time(), time.perf_counter()
            for _ in range(per_repeat):
                op()
            cpu.append((time.thread_time() - c0) / per_repeat * 1e6)
            wall.append((time.perf_counter() - w0) / per_repeat * 1e6)
        results[name] = (_median(cpu), _median(wall))
    return CryptoFloor(
        sign_us=results["sign"][0],
        recover_us=results["recover"][0],
        sign_wall_us=results["sign"][1],
        recover_wall_us=results["recover"][1],
    )


@dataclass
class EchoResult:
    """Echo round trips: sequential latencies and pipelined throughput, CPU per message."""

    sequential_rtt_ns: list[int]
    sequential_wall_s: float
    sequential_client_cpu_s: float
    sequential_server_cpu_s: float
    pipelined_count: int
    pipelined_wall_s: float
    pipelined_client_cpu_s: float
    pipelined_server_cpu_s: float


class _EchoClient(SansIOClient):
    def __init__(self, url: str, payload: bytes) -> None:
        super().__init__(url)
        self.payload = payload
        self.remaining = 0
        self.inflight = 0
        self.sent_at: deque[int] = deque()
        self.rtts: list[int] = []
        self.done: asyncio.Future[None] | None = None

    def run(self, count: int, window: int) -> asyncio.Future[None]:
        self.remaining = count
        self.rtts = []
        self.done = self._loop.create_future()
        for _ in range(min(window, count)):
            self._send_one()
        self.write_pending()
        return self.done

    def _send_one(self) -> None:
        self.remaining -= 1
        self.inflight += 1
        self.sent_at.append(time.perf_counter_ns())
        self.send(self.payload)

    def on_message(self, payload: bytes) -> None:
        self.rtts.append(time.perf_counter_ns() - self.sent_at.popleft())
        self.inflight -= 1
        if self.remaining > 0:
            self._send_one()
        elif self.inflight == 0 and self.done is not None and not self.done.done():
            self.done.set_result(None)

    def on_lost(self) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(ConnectionError("echo connection lost"))


async def echo_floor(
    payload: bytes,
    sequential: int,
    pipelined: int,
    window: int,
    *,
    use_uvloop: bool = False,
    pin: int | None = None,
) -> EchoResult:
    """Run the echo server process and time both regimes (after a warm-up)."""
    args = ["-m", "benchmarks.echo_server"] + (["--uvloop"] if use_uvloop else [])
    async with server_process(args, pin=pin) as server:
        client = _EchoClient(server.ready["url"], payload)
        await client._connect()
        try:
            await client.run(min(500, sequential), 1)  # warm-up
            s_cpu0, c_cpu0, t0 = server.cpu(), time.process_time(), time.perf_counter()
            await client.run(sequential, 1)
            seq_wall = time.perf_counter() - t0
            seq_client = time.process_time() - c_cpu0
            seq_server = server.cpu() - s_cpu0
            seq_rtts = client.rtts
            s_cpu0, c_cpu0, t0 = server.cpu(), time.process_time(), time.perf_counter()
            await client.run(pipelined, window)
            pipe_wall = time.perf_counter() - t0
            pipe_client = time.process_time() - c_cpu0
            pipe_server = server.cpu() - s_cpu0
        finally:
            await client.close()
    return EchoResult(
        sequential_rtt_ns=seq_rtts,
        sequential_wall_s=seq_wall,
        sequential_client_cpu_s=seq_client,
        sequential_server_cpu_s=seq_server,
        pipelined_count=pipelined,
        pipelined_wall_s=pipe_wall,
        pipelined_client_cpu_s=pipe_client,
        pipelined_server_cpu_s=pipe_server,
    )


def filesystem_of(path: str | None = None) -> dict[str, str]:
    """The filesystem holding ``path`` (default: the temporary directory, where the
    benchmark's ledgers and the fsync floor's scratch file live): its mount point, type and
    device, from ``/proc/mounts`` (the longest mount point that contains it). A ``full``
    ledger on ``tmpfs`` fsyncs to memory, so the report names the filesystem."""
    import tempfile

    target = os.path.realpath(path or tempfile.gettempdir())
    best = {"path": target, "mount": "", "type": "unknown", "device": "unknown"}
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            lines = mounts.read().splitlines()
    except OSError:
        return best
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        device, mount, kind = fields[0], fields[1].replace("\\040", " "), fields[2]
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best["mount"]):
            best = {"path": target, "mount": mount, "type": kind, "device": device}
    return best
