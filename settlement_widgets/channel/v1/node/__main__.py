"""Run a local Nitronode: ``python -m settlement_widgets.channel.v1.node --db FILE ...``.

Prints one JSON line (``url``, ``nodeAddress``, ``pid``) once it listens, then serves until
SIGINT/SIGTERM (exit 0), or exits 1 when its ledger cannot commit (fail-stop). The node key
comes from the environment variable named by ``--node-key-env``; without it the sandbox's
deterministic ``nitronode`` key is used (public, test use only). The key is never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from ....keys import PrivateKey
from .config import (
    RATE_LIMIT_ENV,
    NitronodeConfig,
    NodeChain,
    parse_asset_spec,
    rate_limits_from_env,
)
from .process import NODE_KEY_ENV
from .server import NitronodeNode

__all__ = ["DEFAULT_KEY_ROLE", "main"]

#: the :func:`~settlement_widgets.sandbox.local.sandbox_key` role of the default node key
DEFAULT_KEY_ROLE = "nitronode"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m settlement_widgets.channel.v1.node")
    p.add_argument("--db", required=True, type=Path, help="SQLite ledger file (created if absent)")
    p.add_argument("--port", type=int, default=0, help="loopback port (0: a free one)")
    p.add_argument("--chain-id", type=int, default=31337)
    p.add_argument("--chain-name", default="local")
    p.add_argument("--hub", required=True, help="the ChannelHub address on that chain")
    p.add_argument(
        "--asset",
        action="append",
        required=True,
        help="symbol:0xTOKEN:decimals (repeatable), e.g. usdc:0x...:6",
    )
    p.add_argument("--durability", choices=("full", "normal"), default="full")
    for flag, kind, var in (
        ("--rate-limit-per-sec", float, "NITRONODE_RATE_LIMIT_PER_SEC"),
        ("--rate-limit-burst", float, "NITRONODE_RATE_LIMIT_BURST"),
        ("--ws-max-message-size", int, "NITRONODE_WS_MAX_MESSAGE_SIZE"),
        ("--ws-bytes-per-sec", float, "NITRONODE_WS_BYTES_PER_SEC"),
        ("--ws-bytes-burst", float, "NITRONODE_WS_BYTES_BURST"),
    ):
        p.add_argument(flag, type=kind, default=None, help=f"connection limit (else ${var})")
    p.add_argument(
        "--node-key-env",
        default=NODE_KEY_ENV,
        help="environment variable holding the node key (else the sandbox's dev key)",
    )
    return p


def _node_key(env: str) -> PrivateKey:
    secret = os.environ.get(env)
    if secret:
        return PrivateKey(secret)
    from ....sandbox.local import sandbox_key

    return sandbox_key(DEFAULT_KEY_ROLE)


def _limits(args: argparse.Namespace) -> dict[str, Any]:
    """Connection limits: the real node's environment variables, overridden by flags."""
    limits = rate_limits_from_env()
    for name in RATE_LIMIT_ENV:
        value = getattr(args, name)
        if value is not None:
            limits[name] = value
    return limits


async def _run(args: argparse.Namespace) -> int:
    config = NitronodeConfig(
        db_path=args.db,
        node_key=_node_key(args.node_key_env),
        chains=(NodeChain(args.chain_id, args.hub, args.chain_name),),
        assets=tuple(parse_asset_spec(spec, args.chain_id) for spec in args.asset),
        port=args.port,
        durability=args.durability,
        **_limits(args),
    )
    node = NitronodeNode(config)
    await node.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(
        json.dumps({"url": node.url, "nodeAddress": node.node_address, "pid": os.getpid()}),
        flush=True,
    )
    stopping = asyncio.ensure_future(stop.wait())
    failing = asyncio.ensure_future(node.failed.wait())
    try:
        await asyncio.wait({stopping, failing}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        failing.cancel()
        await node.aclose()
    if node.failed.is_set():
        print("Nitronode stopped: its ledger could not commit", file=sys.stderr, flush=True)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(_run(_parser().parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
