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
from dataclasses import replace
from pathlib import Path
from typing import Any

from ....keys import PrivateKey
from .config import (
    DEFAULT_ABANDONED_CHECK_INTERVAL_SECS,
    DEFAULT_ABANDONED_LOCK_SECS,
    RATE_LIMIT_ENV,
    NitronodeConfig,
    NodeAsset,
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
    p.add_argument(
        "--rpc-url",
        default=None,
        help="JSON-RPC of that chain: the node reads the hub there (without it, channels count "
        "as open once their creation is co-signed)",
    )
    p.add_argument(
        "--extra-chain",
        action="append",
        default=[],
        metavar="ID,HUB,RPC_URL,SYMBOL:0xTOKEN:DECIMALS",
        help="another chain the node serves and reads (repeatable; needs --rpc-url): its id, "
        "ChannelHub, JSON-RPC and the asset's token there",
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
        "--abandoned-lock-secs",
        type=int,
        default=DEFAULT_ABANDONED_LOCK_SECS,
        help="escrow-chain seconds a user has to finish an escrow withdrawal or a migration "
        "before the node takes its lock back (default: the hub's 3 h deposit unlock)",
    )
    p.add_argument(
        "--abandoned-check-interval-secs",
        type=float,
        default=DEFAULT_ABANDONED_CHECK_INTERVAL_SECS,
        help="seconds between the node's looks for abandoned locks (<= 0: on start only)",
    )
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


def _chains(
    args: argparse.Namespace, key: PrivateKey
) -> tuple[tuple[NodeChain, ...], tuple[NodeAsset, ...], dict[int, Any]]:
    """The chains (the first from --chain-id/--hub, then --extra-chain), the assets with
    their tokens on each, and a hub view per chain read over JSON-RPC."""
    from ....wallet import WalletClient
    from ..chain.hub import ChannelHubClient, HubChainView

    chains = [NodeChain(args.chain_id, args.hub, args.chain_name)]
    assets = {a.symbol: a for a in (parse_asset_spec(spec, args.chain_id) for spec in args.asset)}
    rpc = {args.chain_id: args.rpc_url} if args.rpc_url else {}
    for extra in args.extra_chain:
        try:
            chain_text, hub, url, spec = extra.split(",")
            chain_id = int(chain_text)
        except ValueError:
            raise SystemExit(
                f"--extra-chain {extra!r}: expected ID,HUB,RPC_URL,SYMBOL:TOKEN:DECIMALS"
            ) from None
        if not args.rpc_url:
            raise SystemExit(
                "--extra-chain needs --rpc-url (a node serving several chains reads them)"
            )
        if all(c.blockchain_id != chain_id for c in chains):
            chains.append(NodeChain(chain_id, hub, f"chain-{chain_id}"))
        rpc[chain_id] = url
        asset = parse_asset_spec(spec, chain_id)
        known = assets.get(asset.symbol)
        assets[asset.symbol] = (
            replace(known, tokens=(*known.tokens, *asset.tokens)) if known is not None else asset
        )
    views = {
        chain.blockchain_id: HubChainView(
            ChannelHubClient(
                WalletClient(key, rpc_url=rpc[chain.blockchain_id]), chain.channel_hub_address
            )
        )
        for chain in chains
        if chain.blockchain_id in rpc
    }
    return tuple(chains), tuple(assets.values()), views


async def _run(args: argparse.Namespace) -> int:
    key = _node_key(args.node_key_env)
    chains, assets, views = _chains(args, key)
    config = NitronodeConfig(
        db_path=args.db,
        node_key=key,
        chains=chains,
        assets=assets,
        port=args.port,
        durability=args.durability,
        abandoned_lock_secs=args.abandoned_lock_secs,
        abandoned_check_interval_secs=args.abandoned_check_interval_secs,
        **_limits(args),
    )
    view: Any = views if len(views) > 1 else (next(iter(views.values())) if views else None)
    node = NitronodeNode(config, chain_view=view)
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
