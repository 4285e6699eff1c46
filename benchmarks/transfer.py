"""Off-chain transfers through the local relay, in its own process, as in production.

Each transfer is the whole path: the client signs a ``transfer`` request (session key, exact
``req`` bytes) -> WebSocket -> the relay parses it, recovers the signer, checks and applies
it to the ledger, makes it durable in SQLite (group commit; the reply leaves only after
COMMIT returned) and countersigns the reply -> the client recovers the broker's signature
over the exact ``res`` bytes and checks the transfer came back. ``bu``/``tr`` notifications
the relay pushes are verified too and their cost counts.

Two regimes: sequential (one transfer in flight) and pipelined (``window`` in flight).
Per sample: transfers/s, latency percentiles, and CPU µs per transfer in each process
(client: ``process_time``; relay: ``/proc/PID/task/*/schedstat``).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import SEPOLIA

from .lean_client import LeanRelayClient, PhaseResult
from .procs import server_process

__all__ = ["DURABILITY_NOTES", "PhaseSample", "TransferRun", "transfer_benchmark"]

# chain facts the relay only echoes (no chain is needed for off-chain transfers)
assert SEPOLIA.token is not None  # the Sepolia profile always names its channel asset
_TOKEN: str = SEPOLIA.token
_CUSTODY = SEPOLIA.contracts.custody
_ADJUDICATOR = SEPOLIA.contracts.adjudicator
_ASSET = "ytest.usd"
_AMOUNT = "0.000001"  # 1 smallest unit

DURABILITY_NOTES = {
    "normal": "SQLite WAL, synchronous=NORMAL: the reply leaves after COMMIT returned; a "
    "committed transfer survives a killed relay process (not a power cut)",
    "full": "SQLite WAL, synchronous=FULL: the reply leaves after COMMIT and its fsync; "
    "survives a power cut",
}


@dataclass
class PhaseSample:
    """One timed phase and the relay's CPU during it."""

    phase: PhaseResult
    relay_cpu_s: float

    @property
    def tps(self) -> float:
        return self.phase.count / self.phase.wall_s

    @property
    def client_cpu_us(self) -> float:
        return self.phase.client_cpu_s / self.phase.count * 1e6

    @property
    def relay_cpu_us(self) -> float:
        return self.relay_cpu_s / self.phase.count * 1e6


@dataclass
class TransferRun:
    """Every sample of one relay process (one durability mode)."""

    durability: str
    window: int
    sequential: list[PhaseSample] = field(default_factory=list)
    pipelined: list[PhaseSample] = field(default_factory=list)
    relay_loop: str = "asyncio"
    client_loop: str = "asyncio"
    #: the same transfers through the library's RelayClient (``None``: not measured)
    library: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        def sample(s: PhaseSample) -> dict[str, Any]:
            return {
                "count": s.phase.count,
                "wall_s": s.phase.wall_s,
                "tps": s.tps,
                "client_cpu_us": s.client_cpu_us,
                "relay_cpu_us": s.relay_cpu_us,
                "notifications": s.phase.notifications,
            }

        return {
            "durability": self.durability,
            "durability_note": DURABILITY_NOTES[self.durability],
            "window": self.window,
            "relay_loop": self.relay_loop,
            "client_loop": self.client_loop,
            "sequential": [sample(s) for s in self.sequential],
            "pipelined": [sample(s) for s in self.pipelined],
            "library": self.library,
        }


async def _timed(
    client: LeanRelayClient,
    relay: Any,
    session_key: PrivateKey,
    destination: str,
    count: int,
    window: int,
    first_id: int,
) -> PhaseSample:
    cpu0 = relay.cpu()
    phase = await client.run_transfers(
        session_key, destination, _ASSET, _AMOUNT, count, window, first_id
    )
    return PhaseSample(phase, relay.cpu() - cpu0)


async def _library_phase(
    url: str,
    broker: str,
    wallet: PrivateKey,
    destination: str,
    relay: Any,
    sequential: int,
    pipelined: int,
    window: int,
) -> dict[str, Any]:
    """The same transfers through :class:`settlement_widgets.channel.RelayClient` (the
    library client the channel provider uses): websockets' asyncio API, the library's frame
    builder and parser, every reply verified. Sequential, then ``window`` in flight."""
    from settlement_widgets.channel.v0_5.client.relay_client import RelayClient

    client = RelayClient(url, broker_address=broker, reconnect=False)
    await client.connect()
    try:
        await client.authenticate(
            wallet,
            PrivateKey.generate(),
            application="settlement_widgets benchmark (library)",
            allowances=[(_ASSET, "1000000000")],
            expires_at=int(time.time()) + 3600,
        )
        allocation = [(_ASSET, _AMOUNT)]
        for _ in range(min(100, sequential)):  # warm-up
            await client.transfer(destination, allocation)
        latencies: list[int] = []
        cpu0, rcpu0, t0 = time.process_time(), relay.cpu(), time.perf_counter()
        for _ in range(sequential):
            start = time.perf_counter_ns()
            await client.transfer(destination, allocation)
            latencies.append(time.perf_counter_ns() - start)
        seq_wall = time.perf_counter() - t0
        seq_cpu, seq_rcpu = time.process_time() - cpu0, relay.cpu() - rcpu0
        gate = asyncio.Semaphore(window)

        async def one() -> None:
            async with gate:
                await client.transfer(destination, allocation)

        cpu0, rcpu0, t0 = time.process_time(), relay.cpu(), time.perf_counter()
        await asyncio.gather(*(one() for _ in range(pipelined)))
        pipe_wall = time.perf_counter() - t0
        pipe_cpu, pipe_rcpu = time.process_time() - cpu0, relay.cpu() - rcpu0
    finally:
        await client.close()
    ordered = sorted(latencies)
    return {
        "sequential_tps": sequential / seq_wall,
        "sequential_p50_ms": ordered[len(ordered) // 2] / 1e6,
        "sequential_p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / 1e6,
        "sequential_client_cpu_us": seq_cpu / sequential * 1e6,
        "sequential_relay_cpu_us": seq_rcpu / sequential * 1e6,
        "pipelined_tps": pipelined / pipe_wall,
        "pipelined_client_cpu_us": pipe_cpu / pipelined * 1e6,
        "pipelined_relay_cpu_us": pipe_rcpu / pipelined * 1e6,
        "rejected_frames": client.rejected_frames,
    }


async def transfer_benchmark(
    durability: str,
    *,
    sequential: int,
    pipelined: int,
    window: int,
    samples: int,
    relay_uvloop: bool = False,
    client_loop: str = "asyncio",
    pin: int | None = None,
    library: tuple[int, int] | None = None,
    signer_threads: bool = True,
) -> TransferRun:
    """Start a relay process with a fresh ledger and time ``samples`` rounds of a
    sequential and a pipelined phase (after a warm-up), alternating so that a burst of
    load on this shared machine hits both regimes alike. ``library=(seq, pipelined)`` also
    times that many transfers through the library's RelayClient."""
    wallet = PrivateKey.generate()  # the relay's faucet account: seeded with 10^15 units
    session_key = PrivateKey.generate()
    destination = PrivateKey.generate().address
    run = TransferRun(durability, window, client_loop=client_loop)
    with tempfile.TemporaryDirectory(prefix="sw-bench-") as tmp:
        args = [
            "-m", "settlement_widgets.channel.v0_5.node",
            "--db", str(Path(tmp) / "relay.sqlite"),
            "--custody", _CUSTODY,
            "--adjudicator", _ADJUDICATOR,
            "--token", _TOKEN,
            "--faucet-account", wallet.address,
            "--durability", durability,
        ]  # fmt: skip
        if relay_uvloop:
            args.append("--uvloop")
        if not signer_threads:
            args.append("--no-signer-threads")
        async with server_process(args, pin=pin) as relay:
            run.relay_loop = "uvloop" if relay_uvloop else "asyncio"
            client = await LeanRelayClient.connect(
                relay.ready["relayUrl"], relay.ready["brokerAddress"]
            )
            try:
                await client.authenticate(wallet, session_key, ((_ASSET, "1000000000"),))
                next_id = time.time_ns() // 1000
                # warm-up: caches, the WAL file, the branch predictors of both processes
                await client.run_transfers(
                    session_key, destination, _ASSET, _AMOUNT, min(300, sequential), 1, next_id
                )
                next_id += 1_000
                await client.run_transfers(
                    session_key, destination, _ASSET, _AMOUNT, min(2000, pipelined), window,
                    next_id,
                )  # fmt: skip
                next_id += 10_000
                for _ in range(samples):
                    run.sequential.append(
                        await _timed(
                            client, relay, session_key, destination, sequential, 1, next_id
                        )
                    )
                    next_id += sequential + 10
                    run.pipelined.append(
                        await _timed(
                            client, relay, session_key, destination, pipelined, window, next_id
                        )
                    )
                    next_id += pipelined + 10
                if client.bad_signatures:
                    raise RuntimeError(f"{client.bad_signatures} frames failed verification")
            finally:
                await client.close()
            if library is not None:
                try:
                    run.library = await _library_phase(
                        relay.ready["relayUrl"], relay.ready["brokerAddress"], wallet,
                        destination, relay, library[0], library[1], window,
                    )  # fmt: skip
                except ImportError as exc:  # the library client is optional here
                    run.library = {"error": f"RelayClient not available: {exc}"}
    return run
