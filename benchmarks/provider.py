"""What users run: a channel provider's ``transfer()`` against the sandbox in its own process.

Both protocols: ``ChannelProvider`` (Nitrolite v0.5, the sandbox's relay) and
``ChannelProviderV1`` (Nitrolite v1, the sandbox's Nitronode, what Yellow's network runs
today). The v1 node's per-connection limits (10 requests/s and a byte rate, as the real
node's) would measure the limiter, not the work: the sandbox process gets the real node's
variables (``NITRONODE_RATE_LIMIT_PER_SEC``/``_BURST``, ``NITRONODE_WS_BYTES_PER_SEC``/
``_BURST``) set far above what a run sends, and the client sends unpaced.

The sandbox runs as ``python -m settlement_widgets.sandbox`` (chain, relay, faucet, HTTP), as
it does beside a notebook or under the Jupyter server; this process is the user's kernel: a
:class:`~settlement_widgets.channel.ChannelProvider` for a dev wallet, which opens a channel
on chain and then sends 1-unit transfers to a second wallet. Each transfer is the whole user
path: the provider's checks, its store writes (the ``pending`` row before the request, the
``done`` row and the history line before it returns), the signed request, the relay's
checks, ledger update and COMMIT (``full``: fsynced), the countersigned reply verified, and
the relay's ``bu``/``tr`` notifications verified as they arrive.

Two regimes: sequential (one ``await provider.transfer(...)`` after another) and ``window``
in flight (``asyncio.gather`` of that many at a time).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .procs import server_process

__all__ = ["ProviderPhase", "ProviderRun", "provider_benchmark", "unlimited_node_env"]


@dataclass
class ProviderPhase:
    """One timed phase: throughput, latency percentiles and CPU per transfer."""

    count: int
    wall_s: float
    client_cpu_us: float
    server_cpu_us: float
    p50_ms: float | None = None
    p99_ms: float | None = None

    @property
    def tps(self) -> float:
        return self.count / self.wall_s

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "tps": self.tps}


@dataclass
class ProviderRun:
    """Every sample of one sandbox process (one durability mode)."""

    durability: str
    window: int
    protocol: str = "v0.5"
    sequential: list[ProviderPhase] = field(default_factory=list)
    concurrent: list[ProviderPhase] = field(default_factory=list)
    #: transfers the store recorded ``done`` (must equal what was sent)
    stored_done: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "durability": self.durability,
            "window": self.window,
            "protocol": self.protocol,
            "sequential": [p.to_json() for p in self.sequential],
            "concurrent": [p.to_json() for p in self.concurrent],
            "stored_done": self.stored_done,
        }


def _percentile(ordered: list[int], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] / 1e6


async def _timed(
    phase: Callable[[], Awaitable[None]], count: int, server_cpu: Callable[[], float]
) -> ProviderPhase:
    """Run ``phase`` (``count`` transfers): wall time and CPU per transfer on both sides."""
    cpu0, scpu0, t0 = time.process_time(), server_cpu(), time.perf_counter()
    await phase()
    wall = time.perf_counter() - t0
    return ProviderPhase(
        count,
        wall,
        (time.process_time() - cpu0) / count * 1e6,
        (server_cpu() - scpu0) / count * 1e6,
    )


async def provider_benchmark(
    durability: str,
    *,
    sequential: int,
    concurrent: int,
    window: int,
    samples: int,
    pin: int | None = None,
    protocol: str = "v0.5",
) -> ProviderRun:
    """Start a sandbox process, open a channel with a provider here, and time ``samples``
    rounds of a sequential and a concurrent phase (after a warm-up)."""
    from settlement_widgets.networks import Network
    from settlement_widgets.sandbox.chain import dev_keys
    from settlement_widgets.wallet import WalletClient

    if protocol not in ("v0.5", "v1"):
        raise ValueError(f"protocol must be 'v0.5' or 'v1', got {protocol!r}")
    run = ProviderRun(durability, window, protocol)
    with tempfile.TemporaryDirectory(prefix="sw-bench-provider-") as tmp:
        home = Path(tmp) / "home"
        env = {"SETTLEMENT_HOME": str(home)}
        args = [
            "-m", "settlement_widgets.sandbox",
            "--no-v4", "--wallets", "2",
            "--durability", durability,
            "--data-dir", str(Path(tmp) / "sandbox"),
            "--protocol", protocol,
        ]  # fmt: skip
        if protocol == "v1":
            env |= unlimited_node_env()
        async with server_process(args, env=env, pin=pin) as sandbox:
            network = Network.from_json(sandbox.ready)
            previous = os.environ.get("SETTLEMENT_HOME")
            os.environ["SETTLEMENT_HOME"] = str(home)  # the provider's store lives there
            wallet = WalletClient(dev_keys(3)[1], rpc_url=network.rpc_url)
            recipient = dev_keys(3)[2].address
            provider, counterparty = _provider(network, wallet)
            try:
                channel = await provider.create_channel(counterparty, str(network.token), 10**12)
                for _ in range(min(300, sequential)):  # warm-up: caches, the WAL files
                    await provider.transfer(channel.id, 1, recipient)
                sent = min(300, sequential)
                gate = asyncio.Semaphore(window)

                async def one() -> None:
                    async with gate:
                        await provider.transfer(channel.id, 1, recipient)

                async def timed_one() -> None:
                    start = time.perf_counter_ns()
                    await provider.transfer(channel.id, 1, recipient)
                    latencies.append(time.perf_counter_ns() - start)

                async def one_after_another() -> None:
                    for _ in range(sequential):
                        await timed_one()

                async def all_at_once() -> None:
                    await asyncio.gather(*(one() for _ in range(concurrent)))

                for _ in range(samples):
                    latencies: list[int] = []
                    phase = await _timed(one_after_another, sequential, sandbox.cpu)
                    latencies.sort()
                    phase.p50_ms = _percentile(latencies, 0.5)
                    phase.p99_ms = _percentile(latencies, 0.99)
                    run.sequential.append(phase)
                    run.concurrent.append(await _timed(all_at_once, concurrent, sandbox.cpu))
                    sent += sequential + concurrent
                run.stored_done = _stored_done(provider, channel.id)
                if run.stored_done != sent:
                    raise RuntimeError(
                        f"sent {sent} transfers but the store has {run.stored_done} done"
                    )
            finally:
                await provider.close()
                await wallet.aclose()
                if previous is None:
                    os.environ.pop("SETTLEMENT_HOME", None)
                else:
                    os.environ["SETTLEMENT_HOME"] = previous
    return run


def unlimited_node_env() -> dict[str, str]:
    """The Nitronode's rate variables (requests and bytes per connection) far above what a
    run sends; a frame's size limit stays as it is."""
    from settlement_widgets.channel.v1.node.config import RATE_LIMIT_ENV

    return {
        var: "1e9"
        for name, var in RATE_LIMIT_ENV.items()
        if name != "ws_max_message_size"  # a frame's size, not a rate
    }


def _provider(network: Any, wallet: Any) -> tuple[Any, str]:
    """The provider a user gets for ``network``'s protocol, and its channel counterparty."""
    from settlement_widgets.networks import PROTOCOL_V1

    if network.protocol == PROTOCOL_V1:
        from settlement_widgets.channel.v1.client.provider import ChannelProviderV1
        from settlement_widgets.channel.v1.client.rpc_client import V1RpcClient

        client = V1RpcClient(network.node_url, requests_per_sec=None)
        return ChannelProviderV1(network, wallet, client=client), str(network.extra["nodeAddress"])
    from settlement_widgets.channel import ChannelConfig, ChannelProvider

    provider = ChannelProvider(ChannelConfig.from_network(network), wallet)
    return provider, str(network.extra["brokerAddress"])


def _stored_done(provider: Any, channel_id: str) -> int:
    """Transfers the provider's store holds as sent and acknowledged."""
    from settlement_widgets.channel.v1.client.provider import ChannelProviderV1

    if isinstance(provider, ChannelProviderV1):
        return sum(1 for t in provider.transfers() if t.direction == "out")
    return len(provider.store.transfers(channel_id, status="done"))
