"""The network floor: a bare websockets echo server on loopback, run as its own process.

``python -m benchmarks.echo_server [--uvloop]`` prints ``{"url": ..., "pid": ...}`` once it
listens and echoes every message back until SIGTERM. Same transport settings as the relay
(no permessage-deflate, the same frame size limit), nothing else: no parsing, no crypto, no
storage. The relay's round trip minus this one is what our protocol work costs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal

from websockets.asyncio.server import ServerConnection, serve

__all__ = ["main"]


async def _echo(ws: ServerConnection) -> None:
    async for message in ws:
        await ws.send(message)


async def _run() -> None:
    async with serve(_echo, "127.0.0.1", 0, compression=None, max_size=1 << 20) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        print(json.dumps({"url": f"ws://127.0.0.1:{port}/", "pid": os.getpid()}), flush=True)
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.echo_server")
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop if installed")
    args = parser.parse_args()
    if args.uvloop:
        try:
            import uvloop

            uvloop.run(_run())
            return
        except ImportError:
            pass
    asyncio.run(_run())


if __name__ == "__main__":
    main()
