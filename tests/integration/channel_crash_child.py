"""Child process of test_channel_recovery.py: close a channel and die at a chosen step.

Usage: ``python channel_crash_child.py <profile.json> <store.sqlite> <channel id> <step>``
with the wallet's private key on stdin (never on the command line). The provider runs
``close_channel``; when step ``<step>`` is about to start (everything before it is persisted)
the process SIGKILLs itself: no cleanup, no flush, exactly like a crash. Each step is printed
to stdout as it starts so the parent can tell how far it got.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from settlement_widgets.channel import ChannelConfig, ChannelProvider
from settlement_widgets.channel.v0_5.client.provider import StepEvent
from settlement_widgets.networks import Network
from settlement_widgets.wallet import WalletClient


async def main() -> int:
    profile, store, channel_id, kill_at = sys.argv[1:5]
    secret = sys.stdin.readline().strip()
    network = Network.from_json(json.loads(Path(profile).read_text()))
    config = ChannelConfig.from_network(network, store_path=Path(store))
    wallet = WalletClient(secret, rpc_url=network.rpc_url)
    provider = ChannelProvider(config, wallet, watch_interval=None)

    def on_step(event: StepEvent) -> None:
        print(f"{event.step} {event.phase}", flush=True)
        if event.step == kill_at and event.phase == "start":
            os.kill(os.getpid(), signal.SIGKILL)

    provider.on("step", on_step)
    await provider.close_channel(channel_id)
    print("finished without being killed", flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
