"""Child process of the client-crash check: run one channel operation and die at a point.

Usage: ``python -m benchmarks.reliability.crash_child <profile> <store> <point> [<channel id>]``
with the wallet's private key on stdin (never on the command line). ``point`` is a name from
:data:`benchmarks.reliability.client_crash.CRASH_POINTS`; the process SIGKILLs itself there:
no cleanup, no flush, exactly like a crash. Nothing in the provider is changed for this: the
points are reached through the provider's public seams (its ``step`` events, and the wallet
and relay client it is given, wrapped so a call returns and then the process dies).

Each step is printed as it starts; ``CRASH <point>`` is printed just before dying, so the
parent can tell that the intended point was reached.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from settlement_widgets.channel import ChannelConfig, ChannelProvider, RelayClient
from settlement_widgets.channel.v0_5.client.provider import StepEvent
from settlement_widgets.networks import Network
from settlement_widgets.wallet import WalletClient

from .client_crash import CRASH_POINTS, INITIAL_AMOUNT

__all__ = ["main"]


def die(point: str) -> None:
    print(f"CRASH {point}", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


class CrashWallet(WalletClient):
    """A wallet that dies right after signing (before broadcasting) or after sending a
    transaction of one step."""

    point: str = ""
    kind: str = ""
    step: str = ""
    current_step: str | None = None

    async def send(self, call: Any = None, **kwargs: Any) -> str:
        step = self.current_step
        on_signed = kwargs.pop("on_signed", None)

        def signed(tx_hash: str) -> None:
            if on_signed is not None:
                on_signed(tx_hash)  # the provider persists the hash first (write-ahead)
            if self.kind == "signed" and step == self.step:
                die(self.point)

        tx_hash = await super().send(call, on_signed=signed, **kwargs)
        if self.kind == "sent" and step == self.step:
            die(self.point)
        return tx_hash


class CrashRelay(RelayClient):
    """A relay client that dies as soon as one RPC's answer is in, before the provider
    verifies, signs or persists anything of it."""

    point: str = ""
    method: str = ""

    async def create_channel(self, chain_id: int, token: str) -> dict[str, Any]:
        reply = await super().create_channel(chain_id, token)
        if self.method == "create_channel":
            die(self.point)
        return reply

    async def resize_channel(self, channel_id: str, funds_destination: str, **kw: Any) -> Any:
        reply = await super().resize_channel(channel_id, funds_destination, **kw)
        if self.method == "resize_channel":
            die(self.point)
        return reply

    async def close_channel(self, channel_id: str, funds_destination: str) -> dict[str, Any]:
        reply = await super().close_channel(channel_id, funds_destination)
        if self.method == "close_channel":
            die(self.point)
        return reply


async def main() -> int:
    profile, store, point = sys.argv[1:4]
    channel_id = sys.argv[4] if len(sys.argv) > 4 else None
    phase, kind, target = CRASH_POINTS[point]
    secret = sys.stdin.readline().strip()
    network = Network.from_json(json.loads(Path(profile).read_text()))
    config = ChannelConfig.from_network(network, store_path=Path(store))
    wallet = CrashWallet(secret, rpc_url=network.rpc_url)
    relay = CrashRelay(config.node_url, request_timeout=config.request_timeout)
    wallet.point, wallet.kind, wallet.step = point, kind, target
    relay.point, relay.method = point, target if kind == "rpc" else ""
    provider = ChannelProvider(config, wallet, relay=relay, watch_interval=None)

    def on_step(event: StepEvent) -> None:
        if event.phase == "start":
            wallet.current_step = event.step
            print(f"{event.kind} {event.step} start", flush=True)
            if kind == "step" and event.step == target:
                die(point)

    provider.on("step", on_step)
    await provider.connect()
    if phase == "create":
        broker = provider.broker_address
        assert broker is not None and config.token is not None
        await provider.create_channel(broker, config.token, INITIAL_AMOUNT)
    else:
        assert channel_id is not None
        await provider.close_channel(channel_id)
    print("FINISHED without reaching the crash point", flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
